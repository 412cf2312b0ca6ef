"""Plain text: decoded (see `decoding.decode`) and numbered as the package's docstring says."""

from __future__ import annotations

from cwread.book.decoding import decode
from cwread.book.formats.base import BookFormat, Reading, part_from_text


def _read(data: bytes, name: str, encoding: str | None, max_bytes: int) -> Reading:
    text, used, replaced = decode(data, encoding, name)
    return Reading((part_from_text("", name, text),), used, replaced)


FORMAT = BookFormat("text", lambda data, name: True, _read, suffixes=("txt", "text", "md", "markdown", "rst"), label="text")
