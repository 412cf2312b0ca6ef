"""The formats cwread reads, each one module with a `READER`, tried in this order: the first
whose `sniff` claims a file reads it. A new format is one module and one line here (or one
`register` call): the suffixes a folder or a library finds books by, the citation names, the
library's kinds and the help texts all read this registry."""

from __future__ import annotations

from cwread.book.formats import epub, html, pdf, text
from cwread.book.formats.base import Part, Reader, Reading

READERS: list[Reader] = [
    epub.READER,
    pdf.READER,
    html.READER,
    text.READER,  # last: whatever no other claims is read as text
]


def register(reader: Reader) -> None:
    """Add a format, tried before plain text (which claims anything)."""
    READERS.insert(len(READERS) - 1, reader)


def reader_for(data: bytes, name: str) -> Reader:
    """The reader of a file with these bytes and this name."""
    return next(reader for reader in READERS if reader.sniff(data, name))


def book_suffixes() -> frozenset[str]:
    """The file suffixes of every format, lower case, without the dot."""
    return frozenset(suffix for reader in READERS for suffix in reader.suffixes)


def format_of(suffix: str) -> str:
    """The format a file with `suffix` is read as, by name ("text" for any other)."""
    return next((r.name for r in READERS if suffix.lower() in r.suffixes), text.READER.name)


def format_names() -> str:
    """The formats as help texts name them: "text, HTML, PDF or EPUB"."""
    labels = [r.label for r in reversed(READERS) if r.label]
    return ", ".join(labels[:-1]) + f" or {labels[-1]}" if len(labels) > 1 else "".join(labels)


__all__ = ["READERS", "Part", "Reader", "Reading", "book_suffixes", "format_names", "format_of", "reader_for", "register"]
