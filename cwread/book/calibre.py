"""Calibre libraries: the folders Calibre lays out, `Author/Title (id)/`, each with a
`metadata.opf` and the book in one or more formats, beside Calibre's own `metadata.db`.

A root is such a library when it holds `metadata.db` or when a folder two levels down holds a
`metadata.opf`. Each `Title (id)` folder is one book, read from its best format that cwread
reads (FORMATS, in order); its title, authors and series come from the OPF (Dublin Core and
Calibre's own meta elements), or, where the OPF is missing or cannot be read, from the folder
names, with a note that says so.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from contextlib import suppress
from pathlib import Path

FORMATS = ("epub", "pdf", "html", "htm", "xhtml", "txt", "text", "md", "markdown", "rst")  # best first
OPF = "metadata.opf"
_ID_SUFFIX = re.compile(r"\s*\((\d+)\)$")
_DC = "{http://purl.org/dc/elements/1.1/}"
_OPF_NS = "{http://www.idpf.org/2007/opf}"
MAX_OPF_BYTES = 1 << 20  # an OPF is a few KB: a larger one is not read


def is_library(root: Path) -> bool:
    """Whether `root` is laid out by Calibre."""
    if (root / "metadata.db").is_file():
        return True
    with suppress(OSError):
        for author in root.iterdir():
            visible = author.is_dir() and not author.name.startswith(".")
            if visible and any((title / OPF).is_file() for title in author.iterdir() if title.is_dir()):
                return True
    return False


def book_folders(root: Path) -> list[Path]:
    """The book folders of the Calibre library `root`, by author then title."""
    folders = []
    with suppress(OSError):
        for author in sorted(root.iterdir()):
            if not author.is_dir() or author.name.startswith("."):
                continue
            with suppress(OSError):
                folders += [t for t in sorted(author.iterdir()) if is_book_folder(t)]
    return folders


def is_book_folder(folder: Path) -> bool:
    """A Calibre book folder: it holds an OPF, or is named `Title (id)` (an OPF lost)."""
    return folder.is_dir() and not folder.name.startswith(".") and ((folder / OPF).is_file() or bool(_ID_SUFFIX.search(folder.name)))


def best_format(folder: Path) -> Path | None:
    """The file of `folder` in the best format cwread reads, None if none."""
    files = {}
    with suppress(OSError):
        for path in folder.iterdir():
            suffix = path.suffix.lower().lstrip(".")
            if path.is_file() and suffix in FORMATS and not path.name.startswith("."):
                files.setdefault(suffix, path)
    return next((files[f] for f in FORMATS if f in files), None)


def metadata(folder: Path) -> dict:
    """The book's title, author(s), series (with its index) from its OPF; from the folder names
    where the OPF is missing or unreadable, with a `note` saying so."""
    opf = folder / OPF
    try:
        if opf.stat().st_size > MAX_OPF_BYTES:
            raise ValueError("larger than an OPF is")
        return _read_opf(ElementTree.fromstring(opf.read_bytes()), folder)
    except FileNotFoundError:
        why = "it has no metadata.opf"
    except (OSError, ValueError, ElementTree.ParseError) as exc:
        why = f"its metadata.opf cannot be read ({type(exc).__name__})"
    return {
        "title": _ID_SUFFIX.sub("", folder.name),
        "author": folder.parent.name,
        "series": None,
        "note": f"{why}: title and author from the folder names",
    }


def _read_opf(package: ElementTree.Element, folder: Path) -> dict:
    meta = package.find(f"{_OPF_NS}metadata")
    if meta is None:
        meta = package.find("metadata")
    if meta is None:
        raise ValueError("no metadata element")
    title = (meta.findtext(f"{_DC}title") or "").strip()
    authors = [
        (c.text or "").strip()
        for c in meta.findall(f"{_DC}creator")
        if (c.get(f"{_OPF_NS}role") or c.get("role") or "aut") == "aut" and (c.text or "").strip()
    ]
    named = {m.get("name"): m.get("content") for m in meta.iter() if m.tag.endswith("meta") and m.get("name")}
    series = (named.get("calibre:series") or "").strip() or None
    index = (named.get("calibre:series_index") or "").strip()
    if series and index:
        number = index[:-2] if index.endswith(".0") else index
        series = f"{series} #{number}"
    note = None
    if not title:
        title, note = _ID_SUFFIX.sub("", folder.name), "its metadata.opf has no title: the title from the folder name"
    return {"title": title, "author": " & ".join(authors) or folder.parent.name, "series": series, "note": note}
