"""The formats cwread reads, each one module with a `READER`, tried in this order: the first
whose `sniff` claims a file reads it. A new format is one module and one line here (or one
`register` call): the suffixes a folder or a library finds books by, the citation names, the
library's kinds and the help texts all read this registry."""

from __future__ import annotations

from cwread.book.formats import epub, html, pdf, text
from cwread.book.formats.base import Part, Reader, Reading
from cwread.book.formats.registry import (
    READERS,
    book_suffixes,
    format_names,
    format_of,
    reader_for,
    register,
    source_name,
)

READERS.extend([epub.READER, pdf.READER, html.READER, text.READER])  # text last: it claims anything

__all__ = [
    "READERS",
    "Part",
    "Reader",
    "Reading",
    "book_suffixes",
    "format_names",
    "format_of",
    "reader_for",
    "register",
    "source_name",
]
