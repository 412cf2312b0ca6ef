"""HTML and XHTML as text: each block of the markup (a paragraph, a heading, a block quote,
a list item) becomes a blank-line block, so the book numbers them as it numbers a plain
text, stably for the same bytes.

The parser is the standard library's `html.parser`: tolerant of broken HTML, it decodes
entities and expands no declared ones.
"""

from __future__ import annotations

import html.parser
import re

from cwread.book.decoding import decode
from cwread.book.formats.base import BookFormat, Reading, part_from_text

BLOCKS = {
    "p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "li", "dd", "dt", "pre",
    "section", "article", "header", "footer", "aside", "figcaption", "caption", "address",
    "tr", "table", "ul", "ol", "dl", "figure", "main", "body", "hr",
}  # fmt: skip
HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}  # a block the markup says is a heading
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
_SPACE = re.compile(r"[ \t\r\f\v\u00a0\u2028\u2029]+")


def looks_like_html(text: str, name: str) -> bool:
    """An HTML file by its name, or by how its text begins."""
    if name.lower().endswith((".html", ".htm", ".xhtml")):
        return True
    head = text[:1024].lstrip("\ufeff \t\r\n").lower()
    return head.startswith(("<!doctype html", "<html", "<?xml")) and "<html" in text[:4096].lower()


def _sniff(data: bytes, name: str) -> bool:
    """An HTML file by its name, or by how its first bytes read (as UTF-16 where they hold
    the zero bytes of UTF-16, else byte for byte)."""
    head = data[:4096]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in head[:64]:
        text = head.decode("utf-16", errors="ignore")
    else:
        text = head.decode("latin-1")
    return looks_like_html(text, name)


def _read(data: bytes, name: str, encoding: str | None, max_bytes: int) -> Reading:
    text, used, replaced = decode(data, encoding, name)
    if not looks_like_html(text, name):  # sniffed from its first bytes alone: read it as text
        return Reading((part_from_text("", name, text),), used, replaced)
    blocks, headings = html_blocks(text)
    return Reading((part_from_text("", name, blocks, headings=headings),), f"html ({used})", replaced)


class _Blocks(html.parser.HTMLParser):
    """Text of each block element, in order; scripts, styles and navigation left out."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self.headings: list[str] = []  # the blocks that are headings in the markup, in order
        self._current: list[str] = []
        self._heading = 0  # heading elements open
        self._skipping = 0
        self._skipped_tag: str | None = None  # the outermost element left out by its role or class
        self._skipped_depth = 0  # elements of that tag open inside it, itself included

    def _flush(self) -> None:
        lines = ["".join(part).strip() for part in _split_lines(self._current)]
        text = "\n".join(_SPACE.sub(" ", line).strip() for line in lines if line.strip())
        if text:
            self.blocks.append(text)
            if self._heading:
                self.headings.append(text)
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
            self._heading += tag in HEADINGS

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
            if tag in HEADINGS:
                self._heading = max(0, self._heading - 1)

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


def html_blocks(markup: str) -> tuple[str, tuple[str, ...]]:
    """The blocks of an HTML or XHTML document, a blank line between them (a <br> is a line
    break inside its block, which the paragraph parser joins), and those of them its markup
    heads (h1-h6), in order: the book's own headings, which `part_from_text` marks."""
    parser = _Blocks()
    parser.feed(markup)
    parser.close()
    return "\n\n".join(parser.blocks), tuple(parser.headings)


def html_text(markup: str) -> str:
    """The blocks of an HTML or XHTML document as text (see `html_blocks`)."""
    return html_blocks(markup)[0]


# version 2: its headings marked
FORMAT = BookFormat("html", _sniff, _read, version=2, suffixes=("html", "htm", "xhtml", "xml"), label="HTML")
