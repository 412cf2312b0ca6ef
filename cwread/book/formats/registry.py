"""The registry of formats: the readers cwread tries, in order (the first whose `sniff` claims a
file reads it), which `cwread.book.formats` fills with the built-in ones and `register` (or a
plug-in) adds to. The suffixes a folder or a library finds books by, the citation names, the
library's kinds and the help texts all read it."""

from __future__ import annotations

from cwread.book.document import safe_name
from cwread.book.formats.base import BookFormat

FORMATS: list[BookFormat] = []  # plain text last: whatever no other claims is read as text
TEXT = "text"  # the format of a file no format claims by its suffix


def register(book_format: BookFormat) -> None:
    """Add a format, tried before plain text (which claims anything)."""
    FORMATS.insert(len(FORMATS) - 1, book_format)


def format_for(data: bytes, name: str) -> BookFormat:
    """The format of a file with these bytes and this name."""
    return next(f for f in FORMATS if f.sniff(data, name))


def book_suffixes() -> frozenset[str]:
    """The file suffixes of every format, lower case, without the dot."""
    return frozenset(suffix for f in FORMATS for suffix in f.suffixes)


def format_of(suffix: str) -> str:
    """The format a file with `suffix` is read as, by name ("text" for any other)."""
    return next((r.name for r in FORMATS if suffix.lower() in r.suffixes), TEXT)


def format_names() -> str:
    """The formats as help texts name them: "text, HTML, PDF or EPUB"."""
    labels = [r.label for r in reversed(FORMATS) if r.label]
    return ", ".join(labels[:-1]) + f" or {labels[-1]}" if len(labels) > 1 else "".join(labels)


def source_name(relative: str) -> str:
    """The citation name of a file at `relative` (a "/"-separated path): the path without
    its suffixes of a format cwread reads, characters that cannot stand in `[name:N]` as "_"."""
    stem = relative
    while True:
        base, dot, suffix = stem.rpartition(".")
        if dot and base and "/" not in suffix and suffix.lower() in book_suffixes():
            stem = base
        else:
            break
    return safe_name(stem)
