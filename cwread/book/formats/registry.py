"""The registry of formats: the readers cwread tries, in order (the first whose `sniff` claims a
file reads it), which `cwread.book.formats` fills with the built-in ones and `register` (or a
plug-in) adds to. The suffixes a folder or a library finds books by, the citation names, the
library's kinds and the help texts all read it."""

from __future__ import annotations

from cwread.book.document import safe_name
from cwread.book.formats.base import Reader

READERS: list[Reader] = []  # plain text last: whatever no other claims is read as text
TEXT = "text"  # the format of a file no reader claims by its suffix


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
    return next((r.name for r in READERS if suffix.lower() in r.suffixes), TEXT)


def format_names() -> str:
    """The formats as help texts name them: "text, HTML, PDF or EPUB"."""
    labels = [r.label for r in reversed(READERS) if r.label]
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
