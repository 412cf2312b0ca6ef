"""EPUB books: each content document of the spine a chapter, read as HTML (see `html`) and
cited by its file's name.

The archive is read in memory with `zipfile`, each entry's name checked and its size bounded
while it is read, so nothing in it reaches the disk and a zip bomb is refused before it is
inflated; its container and package files go through ElementTree only after any entity
declaration has been refused, so no expansion (the "billion laughs") is ever attempted.
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
from typing import TYPE_CHECKING
from urllib.parse import unquote

from cwread.book.decoding import decode
from cwread.book.document import safe_name
from cwread.book.formats.base import BookFormat, Reading, part_from_text
from cwread.book.formats.html import html_blocks
from cwread.book.formats.registry import source_name
from cwread.errors import InputError

if TYPE_CHECKING:  # ElementTree is loaded where an EPUB is read, not by every run that lists formats
    from xml.etree import ElementTree

EPUB_MIMETYPE = "application/epub+zip"
MAX_ENTRIES = 10_000  # files in an EPUB: far above any book's
CONTENT_TYPES = {"application/xhtml+xml", "text/html", "application/x-dtbook+xml"}
FONT_SUFFIXES = (".ttf", ".otf", ".woff", ".woff2")


def is_epub(data: bytes, name: str) -> bool:
    """A ZIP whose first entry says it is an EPUB (or one named .epub)."""
    if not data.startswith(b"PK\x03\x04"):
        return False
    return name.lower().endswith(".epub") or b"mimetypeapplication/epub+zip" in data[:100]


def _read(data: bytes, name: str, encoding: str | None, max_bytes: int) -> Reading:
    chapters = epub_chapters(data, name, max_bytes, lambda raw, where: decode(raw, None, where)[0])
    names = _chapter_names([path for path, _, _ in chapters])
    parts = tuple(
        part_from_text(n, path, text, headings=headings)
        for n, (path, text, headings) in zip(names, chapters, strict=True)
    )
    return Reading(parts, "epub")


def _chapter_names(paths: list[str]) -> list[str]:
    """Citation names of an EPUB's chapters: each file's name without its suffix, or, where
    two share one, its path in the package (with the suffix, where even that is shared)."""
    names = [source_name(p.rsplit("/", 1)[-1]) for p in paths]
    for stage in (source_name, safe_name):
        shared = {n for n in names if names.count(n) > 1}
        names = [stage(p) if n in shared else n for p, n in zip(paths, names, strict=True)]
    if len(set(names)) < len(names):
        raise InputError(
            f"two chapters would both be cited as {next(n for n in names if names.count(n) > 1)}:N"
        )
    return names


def epub_chapters(data: bytes, name: str, max_bytes: int, decode) -> list[tuple[str, str, tuple[str, ...]]]:
    """(path in the package, text, its headings: `html_blocks`) of each of an EPUB's content documents that holds text,
    in spine order (see module doc); a document the spine names twice is read once. `decode`
    turns a content document's bytes into text (the text reader's detection)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        entries = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise InputError(f"{name} is not a readable EPUB: {exc}") from None
    if len(entries) > MAX_ENTRIES:
        raise InputError(
            f"{name} holds {len(entries):,} files; an EPUB of more than {MAX_ENTRIES:,} is refused"
        )
    for entry in entries:
        parts = entry.filename.replace("\\", "/").split("/")
        if entry.filename.startswith(("/", "\\")) or ".." in parts or re.match(r"[A-Za-z]:", entry.filename):
            raise InputError(f"{name} holds an entry named {entry.filename!r}, outside the book; refused")
    declared = sum(entry.file_size for entry in entries)
    if declared > max_bytes:
        raise InputError(
            f"{name} expands to {declared:,} bytes, past the {max_bytes:,} cwread reads "
            "(a zip bomb, or raise CWREAD_MAX_BYTES); refused"
        )
    files = _Entries(archive, name, max_bytes)
    names = {entry.filename for entry in entries}
    if "META-INF/encryption.xml" in names:
        _refuse_drm(files.xml("META-INF/encryption.xml"), name)
    container = files.xml("META-INF/container.xml")
    rootfile = next((el.get("full-path") for el in container.iter() if _local(el.tag) == "rootfile"), None)
    if not rootfile:
        raise InputError(f"{name}: its META-INF/container.xml names no package file")
    package = files.xml(rootfile)
    base = posixpath.dirname(rootfile)
    manifest = {
        el.get("id"): (el.get("href") or "", el.get("media-type") or "")
        for el in package.iter()
        if _local(el.tag) == "item"
    }
    spine = [el.get("idref") for el in package.iter() if _local(el.tag) == "itemref"]
    chapters: dict[str, tuple[str, tuple[str, ...]]] = {}
    for idref in spine:
        href, media = manifest.get(idref, ("", ""))
        if not href or media not in CONTENT_TYPES:
            continue
        path = posixpath.normpath(posixpath.join(base, unquote(href.split("#")[0])))
        if path not in names or path in chapters:
            continue
        text, headings = html_blocks(decode(files.read(path), f"{name}:{path}"))
        if text:
            chapters[path] = (text, headings)
    if not chapters:
        raise InputError(f"{name} has no readable text in its spine")
    return [(path, text, headings) for path, (text, headings) in chapters.items()]


class _Entries:
    """Entries read into memory, at most `max_bytes` in all, whatever their headers say."""

    def __init__(self, archive: zipfile.ZipFile, name: str, max_bytes: int) -> None:
        self.archive, self.name, self.left = archive, name, max_bytes

    def read(self, path: str) -> bytes:
        try:
            with self.archive.open(path) as handle:
                data = handle.read(self.left + 1)
        except KeyError:
            raise InputError(f"{self.name} has no {path}, which it names") from None
        except (zipfile.BadZipFile, OSError, ValueError, RuntimeError) as exc:  # RuntimeError: encrypted
            raise InputError(f"{self.name}: {path} cannot be read ({exc})") from None
        if len(data) > self.left:
            raise InputError(f"{self.name} expands past the size cwread reads (a zip bomb?); refused")
        self.left -= len(data)
        return data

    def xml(self, path: str) -> ElementTree.Element:
        from xml.etree import ElementTree

        data = self.read(path)
        if b"<!ENTITY" in data or b"<!entity" in data:  # declared entities: the billion laughs
            raise InputError(f"{self.name}: {path} declares XML entities; refused")
        try:
            return ElementTree.fromstring(data)
        except ElementTree.ParseError as exc:
            raise InputError(f"{self.name}: {path} is not well-formed XML ({exc})") from None


def _refuse_drm(encryption: ElementTree.Element, name: str) -> None:
    """Fonts may be obfuscated (an EPUB rule); anything else encrypted is DRM."""
    for el in encryption.iter():
        if _local(el.tag) == "CipherReference":
            uri = (el.get("URI") or "").lower()
            if not uri.endswith(FONT_SUFFIXES):
                raise InputError(f"{name} is DRM-encrypted; cwread reads only books without DRM")


def _local(tag) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


# nothing of an EPUB reaches the disk
FORMAT = BookFormat("epub", is_epub, _read, cached_from=None, suffixes=("epub",), label="EPUB")
