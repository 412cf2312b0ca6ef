"""`cwread search`: the paragraphs of every book in a folder, ranked by BM25, through the real
CLI; the library's index kept until a book changes."""

from __future__ import annotations

import json
import shutil

import pytest

from cwread.library import Library
from tests.conftest import EXAMPLES, REPO, run

DATA = REPO / "tests" / "data"


@pytest.fixture
def library(tmp_path):
    root = tmp_path / "library"
    (root / "letters").mkdir(parents=True)
    shutil.copy(EXAMPLES / "the_selfish_giant.txt", root / "giant.txt")
    shutil.copy(DATA / "selfish-giant-libreoffice.pdf", root / "giant.pdf")
    (root / "letters" / "1851.txt").write_text("Dear brother, the lamp oil came late.\n", encoding="utf-8")
    (root / "letters" / "1852.txt").write_text("The foundry closed; I walked home by the wall.\n", encoding="utf-8")
    (root / "notes.docx").write_bytes(b"PK\x03\x04 not a book")
    (root / ".draft.txt").write_text("A hidden draft about the giant's wall.\n", encoding="utf-8")
    secret = tmp_path / "secret.txt"
    secret.write_text("The giant's wall of the secret.\n", encoding="utf-8")
    (root / "secret.txt").symlink_to(secret)
    return root


def test_search_ranks_the_paragraphs_of_every_book(capsys, library, cache_dir):
    code, out, err = run(capsys, "search", str(library), "the giant built a high wall", "--json", "--limit", "4")
    found = json.loads(out)
    assert code == 0 and found["books"] == 3 and found["index_built"] is True
    hits = found["hits"]
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert {h["book"] for h in hits[:2]} == {"giant.txt", "giant.pdf"}
    assert all("high wall" in h["text"] for h in hits[:2])
    pdf = next(h for h in hits if h["book"] == "giant.pdf")
    assert pdf["page"] >= 1 and isinstance(pdf["id"], int)
    assert "wall of the secret" not in out and "hidden draft" not in out
    assert found["skipped"] == ["secret.txt: a link that leads out of the library's folder; not followed"]
    code, out, err = run(capsys, "search", str(library), "foundry walked home")
    assert code == 0 and f"{library}/letters 1852:1" in out and "The foundry closed" in out
    assert "reading the books" not in err  # the index is kept


def test_a_changed_book_rebuilds_the_index_and_reads_only_that_book(capsys, library, cache_dir, monkeypatch):
    Library((library,)).search("wall")
    read = []
    from cwread.book.formats import pdf

    pages = pdf._pages
    monkeypatch.setattr(pdf, "_pages", lambda data, name: read.append(name) or pages(data, name))
    (library / "letters" / "1851.txt").write_text("Dear brother, the lighthouse wall fell.\n", encoding="utf-8")
    found = Library((library,)).search("lighthouse wall")
    assert found.built and found.hits[0].book == "letters" and found.hits[0].label == "1851:1"
    assert read == []  # the PDF's reading came from the cache


def test_unreadable_books_are_named_and_the_rest_searched(capsys, library, cache_dir):
    (library / "broken.pdf").write_bytes(b"%PDF-1.7 broken")
    code, out, err = run(capsys, "search", str(library), "garden")
    assert code == 0 and "not searched: broken.pdf: " in err and "not a readable PDF" in err
    assert "2 left out" in out  # the PDF, and the link out of the library


@pytest.mark.parametrize(
    "args, message",
    [
        (["search", "{root}", "  "], "the search is empty"),
        (["search", "{root}", "wall", "--limit", "-1"], "the limit must be 0 (every match) or more"),
        (["search", "{root}", "wall", "-C", "-2"], "the context must be 0 paragraphs or more"),
        (["search", "{root}/missing", "wall"], "no such folder"),
        (["search", "{empty}", "wall"], "no books under"),
    ],
)
def test_bad_searches_are_one_line_and_exit_2(capsys, library, cache_dir, tmp_path, args, message):
    (tmp_path / "empty").mkdir()
    args = [a.format(root=library, empty=tmp_path / "empty") for a in args]
    code, out, err = run(capsys, *args)
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1


def test_a_hit_is_headed_by_what_show_takes(capsys, library, cache_dir, monkeypatch):
    """Pasted after `cwread show`, a hit's head prints its paragraph; in a book of files too."""
    monkeypatch.chdir(library.parent)
    for query in ("the giant built a high wall", "foundry walked home"):
        code, out, _ = run(capsys, "search", "library", query, "--limit", "1")
        head = out.strip().split("\n\n")[1].splitlines()[0]
        path, label = head.split("  ")[0].split(" ")
        code, shown, _ = run(capsys, "show", path, label)
        hit_text = out.strip().split("\n\n")[1].splitlines()[1]
        assert code == 0 and shown.startswith(f"[{label}] ") and hit_text[:40] in shown


def test_search_takes_every_match_context_and_a_glob_of_books(capsys, library, cache_dir):
    code, out, _ = run(capsys, "search", str(library), "wall", "--limit", "0", "--json")
    every = json.loads(out)["hits"]
    assert code == 0 and len(every) > 10 and all("wall" in h["text"].lower() for h in every)
    code, out, _ = run(capsys, "search", str(library), "wall", "--limit", "0", "--books", "letters", "--json")
    assert [h["id"] for h in json.loads(out)["hits"]] == ["1852:1"]
    code, out, _ = run(capsys, "search", str(library), "wall", "--books", "*.txt", "-C", "1", "--json")
    hits = json.loads(out)["hits"]
    assert {h["book"] for h in hits} == {"giant.txt"}
    for hit in hits:
        ids = [c["id"] for c in hit["before"]] + [hit["id"]] + [c["id"] for c in hit["after"]]
        assert ids == list(range(ids[0], ids[0] + len(ids))) and 2 <= len(ids) <= 3


def test_matched_words_are_highlighted_on_a_terminal_only(capsys, library, cache_dir, monkeypatch):
    code, piped, _ = run(capsys, "search", str(library), "foundry", "--books", "letters")
    assert code == 0 and "The foundry closed" in piped and "\x1b[" not in piped
    monkeypatch.setenv("FORCE_COLOR", "1")  # Rich takes stdout for a terminal
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TERM", raising=False)
    code, shown, _ = run(capsys, "search", str(library), "foundry", "--books", "letters")
    assert code == 0 and "\x1b[1;31mfoundry\x1b[0m" in shown and "\x1b[1;31mclosed" not in shown


def test_contents_give_each_source_its_range_heading_and_pages(library, cache_dir):
    lib = Library((library,))
    assert [(b.name, b.kind) for b in lib.books()] == [("giant.pdf", "pdf"), ("giant.txt", "text"), ("letters", "folder")]
    _, _, chapters = lib.contents("letters")
    assert [(c.name, c.span, c.heading) for c in chapters] == [
        ("1851", "1851:1", "Dear brother, the lamp oil came late."),
        ("1852", "1852:1", "The foundry closed; I walked home by the wall."),
    ]
    _, document, [whole] = lib.contents("giant.pdf")
    assert whole.span == f"1-{len(document)}" and whole.pages == (1, 4)
