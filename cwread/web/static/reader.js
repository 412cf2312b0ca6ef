// The reading room's own script (the page allows no other): the reader's limit kept in the
// browser, a book at a time, and sent with every question, search and cast; the keys.
"use strict";
(function () {
  const book = document.body.dataset.book;
  const key = book ? "cwread-upto-" + book : "cwread-upto";
  const stored = () => localStorage.getItem(key) || "";
  const field = document.getElementById("upto-field");
  const params = new URLSearchParams(location.search);

  // what the URL says wins (a kept or shared question); else the limit kept for this book
  if (book && params.has("upto") && params.get("upto") !== stored()) {
    if (params.get("upto")) localStorage.setItem(key, params.get("upto"));
  }
  const limit = book ? stored() : "";
  if (field) field.value = limit;
  for (const hidden of document.querySelectorAll("input.upto")) {
    if (!hidden.value) hidden.value = limit;
  }
  for (const link of document.querySelectorAll("a.limited")) {
    if (limit) link.search = "?upto=" + encodeURIComponent(limit);
  }
  // a question or cast asked without the kept limit is asked again with it
  const bounded = /\/(ask|cast)$/.test(location.pathname);
  if (bounded && limit && !params.get("upto")) {
    params.set("upto", limit);
    location.replace(location.pathname + "?" + params.toString() + location.hash);
  }
  const form = document.getElementById("limit");
  if (form) {
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const value = field.value.trim();
      if (value) localStorage.setItem(key, value); else localStorage.removeItem(key);
      if (bounded || location.pathname === "/search") {
        value ? params.set("upto", value) : params.delete("upto");
        location.search = params.toString();
      } else {
        location.reload();
      }
    });
    document.getElementById("forget").addEventListener("click", () => {
      localStorage.removeItem(key);
      field.value = "";
      if (bounded) { params.delete("upto"); location.search = params.toString(); } else { location.reload(); }
    });
  }

  // keys: / the question box, j and k through the passages, n and p through the pages
  const passages = () => Array.from(document.querySelectorAll(".passage"));
  let current = -1;
  document.addEventListener("keydown", (event) => {
    const typing = event.target.closest("input, textarea, select");
    if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "/") {
      const box = document.getElementById("q");
      if (box) { event.preventDefault(); box.focus(); box.select(); }
    } else if (event.key === "j" || event.key === "k") {
      const all = passages();
      if (!all.length) return;
      current = Math.max(0, Math.min(all.length - 1, current + (event.key === "j" ? 1 : -1)));
      all.forEach((p, i) => p.classList.toggle("current", i === current));
      all[current].scrollIntoView({ block: "start" });
    } else if (event.key === "n" || event.key === "p") {
      const link = document.querySelector(event.key === "n" ? "a[rel=next]" : "a[rel=prev]");
      if (link) location.href = link.href;
    }
  });
  const at = document.querySelector(".paragraph.at");
  if (at) at.scrollIntoView({ block: "center" });
})();
