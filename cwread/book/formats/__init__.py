"""The formats cwread reads, each one module with a `FORMAT`, tried in this order: the first
whose `sniff` claims a file reads it. A new format is one module and one line here (or one
`register` call): the suffixes a folder or a library finds books by, the citation names, the
library's kinds and the help texts all read this registry."""

from __future__ import annotations

from cwread.book.formats import epub, html, pdf, text
from cwread.book.formats.base import BookFormat, Part, Reading
from cwread.book.formats.registry import (
    FORMATS,
    book_suffixes,
    format_for,
    format_names,
    format_of,
    register,
    source_name,
)

FORMATS.extend([epub.FORMAT, pdf.FORMAT, html.FORMAT, text.FORMAT])  # text last: it claims anything

__all__ = [
    "FORMATS",
    "BookFormat",
    "Part",
    "Reading",
    "book_suffixes",
    "format_for",
    "format_names",
    "format_of",
    "register",
    "source_name",
]
