"""The formats cwread reads, each one module with a `READER`, tried in this order: the first
whose `sniff` claims a file reads it. A new format is one module and one line here."""

from __future__ import annotations

from cwread.book.formats import epub, html, pdf, text
from cwread.book.formats.base import Part, Reader, Reading

READERS: tuple[Reader, ...] = (
    epub.READER,
    pdf.READER,
    html.READER,
    text.READER,  # last: whatever no other claims is read as text
)


def reader_for(data: bytes, name: str) -> Reader:
    """The reader of a file with these bytes and this name."""
    return next(reader for reader in READERS if reader.sniff(data, name))


__all__ = ["READERS", "Part", "Reader", "Reading", "reader_for"]
