"""EPUB and HTML books as text: each block of the markup (a paragraph, a heading, a block
quote, a list item) becomes a blank-line block, so `cwread.document` numbers them as it
numbers a plain text, stably for the same bytes.

Parsers: the standard library's. Markup goes through `html.parser` (tolerant of broken
HTML, decodes entities, expands no declared ones); an EPUB's container and package files go
through ElementTree only after any entity declaration has been refused, so no expansion (the
"billion laughs") is ever attempted; the archive is read in memory with `zipfile`, each
entry's name checked and its size bounded while it is read, so nothing in it reaches the disk
and a zip bomb is refused before it is inflated.
"""

from __future__ import annotations

import html.parser
import io
import posixpath
import re
import zipfile
from urllib.parse import unquote
from xml.etree import ElementTree

from cwread.errors import InputError

EPUB_MIMETYPE = "application/epub+zip"
MAX_ENTRIES = 10_000  # files in an EPUB: far above any book's
BLOCKS = {
    "p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "li", "dd", "dt", "pre",
    "section", "article", "header", "footer", "aside", "figcaption", "caption", "address",
    "tr", "table", "ul", "ol", "dl", "figure", "main", "body", "hr",
}  # fmt: skip
SKIPPED = {"script", "style", "nav", "head", "svg", "math", "template", "noscript", "iframe", "object"}
# What a reader never reads, marked by role or class rather than by tag: navigation bars,
# sidebars and footers of documentation generators (Sphinx, MkDocs, Read the Docs, pandoc),
# the pilcrow links beside headings, a note's reference mark and back link (the note itself
# is read), and page numbers printed into the text (Project Gutenberg's "pagenum", an EPUB's
# page breaks).
SKIPPED_ROLES = {
    "navigation", "banner", "contentinfo", "search", "doc-pagebreak", "doc-toc", "doc-noteref", "doc-backlink",
}  # fmt: skip
SKIPPED_EPUB_TYPES = {"pagebreak", "toc", "landmarks", "page-list", "noteref"}
SKIPPED_CLASSES = {
    "related", "sphinxsidebar", "sphinxsidebarwrapper", "headerlink", "footer", "navigation",
    "navbar", "breadcrumb", "breadcrumbs", "skip-link", "md-header", "md-sidebar", "md-footer",
    "md-nav", "md-search", "md-top", "wy-nav-side", "wy-breadcrumbs", "rst-footer-buttons",
    "rst-versions", "bd-sidebar", "bd-header", "bd-footer", "prev-next-area", "toc", "pagenum",
    "page-number", "pagebreak", "linenos", "lineno", "copybtn", "label", "fn-bracket",
    "footnote-ref", "footnote-back",
}  # fmt: skip
CONTENT_TYPES = {"application/xhtml+xml", "text/html", "application/x-dtbook+xml"}
FONT_SUFFIXES = (".ttf", ".otf", ".woff", ".woff2")
_SPACE = re.compile(r"[ \t\r\f\v\u00a0\u2028\u2029]+")


def looks_like_html(text: str, name: str) -> bool:
    """An HTML file by its name, or by how its text begins."""
    if name.lower().endswith((".html", ".htm", ".xhtml")):
        return True
    head = text[:1024].lstrip("\ufeff \t\r\n").lower()
    return head.startswith(("<!doctype html", "<html", "<?xml")) and "<html" in text[:4096].lower()


def is_epub(data: bytes, name: str) -> bool:
    """A ZIP whose first entry says it is an EPUB (or one named .epub)."""
    if not data.startswith(b"PK\x03\x04"):
        return False
    return name.lower().endswith(".epub") or b"mimetypeapplication/epub+zip" in data[:100]


class _Blocks(html.parser.HTMLParser):
    """Text of each block element, in order; scripts, styles and navigation left out."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self._current: list[str] = []
        self._skipping = 0
        self._skipped_tag: str | None = None  # the outermost element left out by its role or class
        self._skipped_depth = 0  # elements of that tag open inside it, itself included

    def _flush(self) -> None:
        lines = ["".join(part).strip() for part in _split_lines(self._current)]
        text = "\n".join(_SPACE.sub(" ", line).strip() for line in lines if line.strip())
        if text:
            self.blocks.append(text)
        self._current = []

    def handle_starttag(self, tag, attrs):
        if self._skipped_tag is not None:
            self._skipped_depth += tag == self._skipped_tag
            return
        if tag not in VOID and _left_out(attrs):
            self._skipped_tag, self._skipped_depth = tag, 1
            return
        if tag in SKIPPED:
            self._skipping += 1
        elif tag == "br":
            self._current.append("\n")
        elif tag in BLOCKS:
            self._flush()

    def handle_startendtag(self, tag, attrs):
        if self._skipped_tag is not None:
            return
        if tag == "br":
            self._current.append("\n")
        elif tag in BLOCKS:
            self._flush()

    def handle_endtag(self, tag):
        if self._skipped_tag is not None:
            if tag == self._skipped_tag:
                self._skipped_depth -= 1
                if self._skipped_depth == 0:
                    self._skipped_tag = None
            return
        if tag in SKIPPED:
            self._skipping = max(0, self._skipping - 1)
        elif tag in BLOCKS:
            self._flush()

    def handle_data(self, data):
        if not self._skipping and self._skipped_tag is None:
            self._current.append(data.replace("\u00ad", "").replace("\n", " "))

    def close(self):
        super().close()
        self._flush()


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


def _left_out(attrs: list[tuple[str, str | None]]) -> bool:
    """Whether an element's role, EPUB type or class marks it as navigation or a page label."""
    values = {name.lower(): (value or "").lower() for name, value in attrs}
    if values.get("role", "") in SKIPPED_ROLES or values.get("epub:type", "") in SKIPPED_EPUB_TYPES:
        return True
    return bool(SKIPPED_CLASSES.intersection(values.get("class", "").split()))


def _split_lines(parts: list[str]) -> list[list[str]]:
    lines: list[list[str]] = [[]]
    for part in parts:
        if part == "\n":
            lines.append([])
        else:
            lines[-1].append(part)
    return lines


def html_text(markup: str) -> str:
    """The blocks of an HTML or XHTML document, a blank line between them (a <br> is a line
    break inside its block, which the paragraph parser joins)."""
    parser = _Blocks()
    parser.feed(markup)
    parser.close()
    return "\n\n".join(parser.blocks)


def epub_chapters(data: bytes, name: str, max_bytes: int, decode) -> list[tuple[str, str]]:
    """(path in the package, text) of each of an EPUB's content documents that holds text,
    in spine order (see module doc); a document the spine names twice is read once. `decode`
    turns a content document's bytes into text (cwread.document's detection)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        entries = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise InputError(f"{name} is not a readable EPUB: {exc}") from None
    if len(entries) > MAX_ENTRIES:
        raise InputError(f"{name} holds {len(entries):,} files; an EPUB of more than {MAX_ENTRIES:,} is refused")
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
    reader = _Reader(archive, name, max_bytes)
    names = {entry.filename for entry in entries}
    if "META-INF/encryption.xml" in names:
        _refuse_drm(reader.xml("META-INF/encryption.xml"), name)
    container = reader.xml("META-INF/container.xml")
    rootfile = next((el.get("full-path") for el in container.iter() if _local(el.tag) == "rootfile"), None)
    if not rootfile:
        raise InputError(f"{name}: its META-INF/container.xml names no package file")
    package = reader.xml(rootfile)
    base = posixpath.dirname(rootfile)
    manifest = {
        el.get("id"): (el.get("href") or "", el.get("media-type") or "")
        for el in package.iter()
        if _local(el.tag) == "item"
    }
    spine = [el.get("idref") for el in package.iter() if _local(el.tag) == "itemref"]
    chapters: dict[str, str] = {}
    for idref in spine:
        href, media = manifest.get(idref, ("", ""))
        if not href or media not in CONTENT_TYPES:
            continue
        path = posixpath.normpath(posixpath.join(base, unquote(href.split("#")[0])))
        if path not in names or path in chapters:
            continue
        text = html_text(decode(reader.read(path), f"{name}:{path}"))
        if text:
            chapters[path] = text
    if not chapters:
        raise InputError(f"{name} has no readable text in its spine")
    return list(chapters.items())


class _Reader:
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
