"""PDF books: the text layer read with pypdfium2 (PDFium, the PDF engine of Chromium), each
paragraph rebuilt from the lines it is set in and cited by the page it starts on.

- Lines come from PDFium's text in reading order (column by column, as the PDF sets it),
  each placed by its first and last glyph.
- Running headers and footers are left out: a line at the top or the bottom of a page, set
  apart from the text by a wider gap, whose words (numbers aside) recur on at least
  `RUNNING_PAGES` pages; so is a bare page number there ("12", "- 12 -", "Page 3 of 40", "xiv").
- A new paragraph starts at a first-line indent; after a gap wider than the book's line
  spacing or a change of type size; in justified type, after a line that stops short of the
  margin; in ragged type, after a line that ends a sentence where the next line's first word
  would have fit. A paragraph runs on across a page or column break unless one of those
  says otherwise.
- A word broken at a line's end is joined, its hyphen kept only where the book's own words
  say it is the word's ("moor-gate", not "deve-lopment"): PDFium marks both alike.
- A PDF with no text layer (a scan) is refused in one line; OCR is not built. So are an
  encrypted PDF that needs a password, a damaged one, one of more than `MAX_PAGES` pages,
  and one that takes longer than `MAX_SECONDS` to read. Control characters are dropped:
  nothing of the PDF reaches a terminal raw.

PDFium is not thread-safe: every use of it holds `_PDFIUM`.
"""

from __future__ import annotations

import itertools
import os
import re
import statistics
import threading
import time
import zlib
from collections import Counter
from dataclasses import dataclass

from cwread.book.formats.base import Reader, Reading, part_from_text
from cwread.errors import InputError

MAX_PAGES = 20_000
MAX_SECONDS = 120.0
RUNNING_PAGES = 3  # pages a header's words must recur on to be left out
_PDFIUM = threading.Lock()
_PAGE_NUMBER = re.compile(
    r"(?i)^[\W_]*(?:page\s*)?(?:\d{1,5}|[ivxlcdm]{1,7})(?:\s*(?:/|of)\s*\d{1,5})?[\W_]*$"
)
_DROPPED = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ufffe\uffff\u200b]")  # controls, PDFium's placeholders
_HYPHENS = ("\x02", "\ufffe")  # how PDFium marks a hyphen at a line's end
_LINE_ENDS = re.compile("[\r\n\x02\ufffe]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_HYPHEN_MARK = "\u00ad"
_COMPOUND = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")  # a word, hyphenated or not
_WORD_END = re.compile(r"[^\W\d_]+$")
_WORD_START = re.compile(r"[^\W\d_]+")
_LIGATURES = str.maketrans(
    {
        "\ufb00": "ff",
        "\ufb01": "fi",
        "\ufb02": "fl",
        "\ufb03": "ffi",
        "\ufb04": "ffl",
        "\ufb05": "st",
        "\ufb06": "st",
    }
)
_ENDS_SENTENCE = re.compile(r"[.!?:;][\"'\u201d\u2019)\]]*$")


@dataclass(frozen=True)
class Line:
    """A line of a page as set: its text and where its glyphs lie (PDF points, y upwards)."""

    text: str
    left: float
    right: float
    bottom: float
    top: float
    size: float = 0.0  # the type size of its first character, in points

    @property
    def height(self) -> float:
        return self.top - self.bottom


def _sniff(data: bytes, name: str) -> bool:
    # the header may follow a little junk (the PDF rule allows 1,024 bytes)
    return data.startswith(b"%PDF-") or (b"%PDF-" in data[:1024] and name.lower().endswith(".pdf"))


def _read(data: bytes, name: str, encoding: str | None, max_bytes: int) -> Reading:
    with _PDFIUM:
        pages = _pages(data, name)
    paragraphs = paragraphs_of(pages)
    if not paragraphs:
        raise InputError(
            f"{name} is a PDF with no text layer (a scan?); cwread reads the text of a PDF and does "
            "no OCR: run OCR on it first (ocrmypdf, say)"
        )
    lines: list[tuple[int, int]] = []  # (page, line on the page) of each line of the text below
    for page, line, _ in paragraphs:
        lines += [(page, line), (page, line)]  # the paragraph, then the blank line after it
    text = "\n\n".join(paragraph for _, _, paragraph in paragraphs)
    return Reading((part_from_text("", name, text, lambda n: lines[n - 1]),), "pdf")


def _pages(data: bytes, name: str) -> list[list[Line]]:
    """The lines of each page, in PDFium's reading order. A long PDF's second half is read by
    a forked process while this one reads the first (PDFium's own work is most of a PDF's
    reading, and it takes no threads); not where other threads run, which a fork would copy
    mid-step."""
    _check_inflation(data, name)
    pdf = _open(data, name)
    try:
        count = len(pdf)
        if count > MAX_PAGES:
            raise InputError(f"{name} declares {count:,} pages; a PDF of more than {MAX_PAGES:,} is refused")
        started = time.monotonic()
        if count < PARALLEL_PAGES or not _may_fork():
            return _read_pages(pdf, name, range(count), count, started)
        import multiprocessing

        half = count // 2
        with multiprocessing.get_context("fork").Pool(1) as pool:
            later = pool.apply_async(_read_in_child, (data, name, half, count, started))
            first = _read_pages(pdf, name, range(half), count, started)
            try:  # a child that died (PDFium crashed on a page) never answers: bounded
                return first + later.get(timeout=max(1.0, started + MAX_SECONDS + 5 - time.monotonic()))
            except multiprocessing.TimeoutError:
                raise InputError(
                    f"{name} took more than {MAX_SECONDS:.0f} s to read, or a page of it could not be "
                    "read; refused"
                ) from None
    finally:
        pdf.close()


PARALLEL_PAGES = 64  # a PDF this long is read in two processes (see _pages)


def _may_fork() -> bool:
    import multiprocessing

    return (
        (os.cpu_count() or 1) > 1
        and threading.active_count() == 1
        and "fork" in multiprocessing.get_all_start_methods()
    )


MAX_STREAM_INFLATED = 256 * 2**20  # bytes a compressed stream (not an image) may inflate to
MAX_INFLATED = 2 * 2**30  # and all of them together
_STREAM_START = re.compile(rb"(?<!end)stream\r?\n")
_INFLATE_CHUNK = 2**20


def _check_inflation(data: bytes, name: str) -> None:
    """Refuse a PDF whose Flate streams would inflate past the bounds before PDFium reads it:
    PDFium inflates a page's content stream whole, so a 2 MB file that inflates to 2 GiB (a
    decompression bomb) took 3.1 GB to read. Each stream is inflated here a megabyte at a time
    and counted, never held; images are skipped (reading text never decodes them)."""
    total = 0
    for start in _STREAM_START.finditer(data):
        opened = data.rfind(b" obj", max(0, start.start() - 4096), start.start())
        head = data[opened if opened >= 0 else max(0, start.start() - 512) : start.start()]
        if b"FlateDecode" not in head or re.search(rb"/Subtype\s*/Image", head):
            continue
        inflater = zlib.decompressobj()
        size, at = 0, start.end()
        try:
            while at < len(data) and not inflater.eof:
                pending = data[at : at + _INFLATE_CHUNK]
                at += _INFLATE_CHUNK
                while pending and not inflater.eof:
                    size += len(inflater.decompress(pending, _INFLATE_CHUNK))
                    pending = inflater.unconsumed_tail
                    if size > MAX_STREAM_INFLATED or total + size > MAX_INFLATED:
                        raise InputError(
                            f"{name}: a stream of the PDF inflates past {MAX_STREAM_INFLATED // 2**20} MiB "
                            f"(or all of them past {MAX_INFLATED // 2**30} GiB): a decompression bomb? refused"
                        )
        except zlib.error:  # not whole or not Flate after all: PDFium judges it
            pass
        total += size


def _open(data: bytes, name: str):
    import pypdfium2 as pdfium

    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise InputError(
                f"{name} is an encrypted PDF that needs a password; cwread reads only PDFs that open without one"
            ) from None
        raise InputError(f"{name} is not a readable PDF (damaged?): {_clean(str(exc))}") from None


def _read_in_child(data: bytes, name: str, first: int, count: int, started: float) -> list[list[Line]]:
    pdf = _open(data, name)
    try:
        return _read_pages(pdf, name, range(first, count), count, started)
    finally:
        pdf.close()


def _read_pages(pdf, name: str, indexes: range, count: int, started: float) -> list[list[Line]]:
    import pypdfium2 as pdfium

    pages = []
    for index in indexes:
        if time.monotonic() - started > MAX_SECONDS:
            raise InputError(f"{name} took more than {MAX_SECONDS:.0f} s to read ({index} of {count} pages); refused")
        try:
            page = pdf[index]
            textpage = page.get_textpage()
            pages.append(_lines(textpage))
            textpage.close()
            page.close()
        except pdfium.PdfiumError as exc:
            raise InputError(f"{name}: page {index + 1} cannot be read ({_clean(str(exc))})") from None
    return pages


def _lines(textpage) -> list[Line]:
    """A page's lines in PDFium's reading order. PDFium ends a line with generated characters,
    and marks a hyphen there as such."""
    import pypdfium2.raw as pdfium_c

    text = _page_text(textpage)
    lines: list[Line] = []

    def blank(i: int) -> bool:
        return text[i].isspace() or bool(pdfium_c.FPDFText_IsGenerated(textpage.raw, i))

    start = 0
    for end in _LINE_ENDS.finditer(text + "\n"):
        first, last = start, end.start() - 1
        start = end.end()
        while first <= last and blank(first):
            first += 1
        while last >= first and blank(last):
            last -= 1
        if first > last:
            continue
        line = " ".join(_DROPPED.sub("", text[first : last + 1].translate(_LIGATURES)).split())
        if not line:
            continue
        if end.group() in _HYPHENS:
            line += _HYPHEN_MARK  # the word goes on in the next line (see _join)
        left, bottom, _, top = textpage.get_charbox(first, loose=True)
        _, bottom2, right, top2 = textpage.get_charbox(last, loose=True)
        size = pdfium_c.FPDFText_GetFontSize(textpage.raw, first)
        lines.append(Line(line, left, right, min(bottom, bottom2), max(top, top2), size))
    return lines


def _page_text(textpage) -> str:
    """A page's text, its i-th character PDFium's character i. In one call where the page's
    text holds one UTF-16 unit per character (nearly every page of prose); else character by
    character (a code point past the BMP takes two units there, and PDFium leaves some
    characters out of it)."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    count = textpage.count_chars()
    buffer = ctypes.create_string_buffer((count + 1) * 2)
    units = ctypes.cast(buffer, ctypes.POINTER(ctypes.c_ushort))
    if pdfium_c.FPDFText_GetText(textpage.raw, 0, count, units) == count + 1:  # with its NUL
        text = buffer.raw[: count * 2].decode("utf-16-le", errors="surrogatepass")
        if len(text) == count and not _SURROGATE.search(text):
            return text
    codes = (pdfium_c.FPDFText_GetUnicode(textpage.raw, i) for i in range(count))
    return "".join(chr(c) if 0 <= c < 0x110000 and not 0xD800 <= c < 0xE000 else "\ufffd" for c in codes)


def _clean(message: str) -> str:
    return _DROPPED.sub("", message)[:200]


def paragraphs_of(pages: list[list[Line]]) -> list[tuple[int, int, str]]:
    """(page, line on the page, text) of each paragraph of the book set in `pages`, running
    headers and footers left out (see the module's docstring)."""
    body = _without_running_lines(pages)
    all_lines = [line for page in body for line in page]
    if not all_lines:
        return []
    spacing = _line_spacing(body)
    margins_of = [_margins(lines) if lines else [] for lines in body]
    justified = _is_justified(body, margins_of)
    words = _words(all_lines)
    paragraphs: list[tuple[int, int, str]] = []
    current: list[str] = []
    start = (0, 0)
    previous: Line | None = None
    previous_page: list[Line] = []
    for page_no, (lines, margins) in enumerate(zip(body, margins_of, strict=True), start=1):
        if not lines:
            continue
        for line_no, line in enumerate(lines, start=1):
            if previous is None or _starts_paragraph(
                previous, line, margins, spacing, justified, previous_page is not lines
            ):
                if current:
                    paragraphs.append((*start, _join(current, words)))
                current, start = [], (page_no, line_no)
            current.append(line.text)
            previous, previous_page = line, lines
    if current:
        paragraphs.append((*start, _join(current, words)))
    return [p for p in paragraphs if p[2]]


def _starts_paragraph(
    previous: Line,
    line: Line,
    margins: list[tuple[float, float]],
    spacing: float,
    justified: bool,
    new_page: bool,
) -> bool:
    left, right = _column(line, margins)
    width = max(right - left, 1.0)
    if line.left - left > 2.0 and line.left > previous.left + 2.0:
        return True  # a first-line indent, or a line set apart (centred, a heading)
    prev_left, prev_right = _column(previous, margins)
    ended = bool(_ENDS_SENTENCE.search(previous.text))
    if justified and previous.right < prev_right - max(4.0, 0.02 * (prev_right - prev_left)):
        return True  # in justified type only a paragraph's last line stops short of the margin
    word = _WORD_START.match(line.text) or re.match(r"\S+", line.text)
    per_char = (previous.right - previous.left) / max(len(previous.text), 1)
    if ended and word and previous.right + per_char * (len(word.group()) + 2) < prev_right:
        return True  # a sentence ends where the next line's first word would have fit
    same_column = not new_page and abs(prev_left - left) < 0.25 * width and previous.bottom > line.bottom
    if same_column:
        gap = previous.bottom - line.bottom
        resized = max(line.size, previous.size) > 1.15 * min(line.size, previous.size)
        if gap > 1.4 * spacing or resized:
            return True  # a blank line, or a change of type size (a heading)
    return False


def _join(texts: list[str], words: set[str]) -> str:
    """The lines of a paragraph as one line. PDFium marks a hyphen at a line's end alike
    whether it is the word's ("moor-gate") or the typesetter's ("deve-lopment"), so the book's
    own words decide (see `_keeps_hyphen`). A line that ends in a dash runs on unspaced."""
    parts: list[str] = []
    for text in texts:
        last = parts[-1] if parts else ""
        broken = last.endswith(_HYPHEN_MARK) or (
            last.endswith("-") and text[:1].islower() and last[-2:-1].isalpha()
        )
        if broken:
            stem = last.rstrip(_HYPHEN_MARK).rstrip("-")
            left, right = _WORD_END.search(stem), _WORD_START.match(text)
            keep = (
                left is not None and right is not None and _keeps_hyphen(left.group(), right.group(), words)
            )
            parts[-1] = stem + ("-" if keep else "") + text
        elif last.endswith(("\u2014", "--")):
            parts[-1] = last + text
        else:
            parts.append(text)
    return " ".join(_DROPPED.sub("", " ".join(parts).replace(_HYPHEN_MARK, "")).split())


def _keeps_hyphen(left: str, right: str, words: set[str]) -> bool:
    """Whether `left`-`right`, broken at a line's end, is a hyphenated word: not where the
    book sets the word whole elsewhere ("something"); yes where it sets it hyphenated, or
    where both halves are words of the book ("well-marked"; "lopment" is none)."""
    left, right = left.lower(), right.lower()
    if left + right in words:
        return False
    return f"{left}-{right}" in words or (left in words and right in words)


def _words(lines: list[Line]) -> set[str]:
    """The words the book sets within its lines, hyphenated ones whole and in their halves,
    lower-cased; the halves of a word broken at a line's end are none."""
    kept: list[str] = []
    broken = False  # whether the line before ended in a broken word
    for line in lines:
        text = line.text
        if broken:
            text = text.split(" ", 1)[1] if " " in text else ""
        broken = text.endswith(_HYPHEN_MARK)
        if broken:
            text = text.rsplit(" ", 1)[0] if " " in text else ""
        kept.append(text)
    words = set(_COMPOUND.findall("\n".join(kept).lower()))
    for word in [w for w in words if "-" in w]:
        words.update(word.split("-"))
    return words


def _key(text: str) -> str:
    return re.sub(r"\d+", "#", " ".join(text.lower().split()))


def _without_running_lines(pages: list[list[Line]]) -> list[list[Line]]:
    """The pages less their running headers and footers and bare page numbers."""
    spacing = _line_spacing(pages)
    edges: list[list[int]] = []  # per page: the indexes of lines at its top or bottom, set apart
    for lines in pages:
        at = []
        if len(lines) >= 2:
            top = max(range(len(lines)), key=lambda i: lines[i].top)
            below = [other.top for other in lines if other.top < lines[top].bottom]
            if below and lines[top].bottom - max(below) > 0.4 * spacing:
                at.append(top)
            bottom = min(range(len(lines)), key=lambda i: lines[i].bottom)
            above = [other.bottom for other in lines if other.bottom > lines[bottom].top]
            if above and min(above) - lines[bottom].top > 0.4 * spacing and bottom not in at:
                at.append(bottom)
        edges.append(at)
    counts = Counter(
        key for lines, at in zip(pages, edges, strict=True) for key in {_key(lines[i].text) for i in at}
    )
    kept = []
    for lines, at in zip(pages, edges, strict=True):
        drop = {
            i for i in at if counts[_key(lines[i].text)] >= RUNNING_PAGES or _PAGE_NUMBER.match(lines[i].text)
        }
        kept.append([line for i, line in enumerate(lines) if i not in drop])
    return kept


def _line_spacing(pages: list[list[Line]]) -> float:
    """The book's usual distance between the baselines of two lines that follow each other."""
    gaps = [
        a.bottom - b.bottom
        for lines in pages
        for a, b in itertools.pairwise(lines)
        if 0 < a.bottom - b.bottom < 3 * max(a.height, 1.0) and abs(a.left - b.left) < 50
    ]
    if not gaps:
        return 12.0
    return statistics.median(gaps)


def _is_justified(pages: list[list[Line]], margins_of: list[list[tuple[float, float]]]) -> bool:
    """Whether most lines end at the right margin of their column (`margins_of`: each page's)."""
    flush = total = 0
    for lines, margins in zip(pages, margins_of, strict=True):
        for line in lines:
            left, right = _column(line, margins)
            total += 1
            flush += line.right >= right - 0.015 * max(right - left, 1.0)
    return total > 0 and flush / total >= 0.4


def _margins(lines: list[Line]) -> list[tuple[float, float]]:
    """(left, right) of each column of a page's text: the left edges most lines share, each
    with the right edge most of its lines reach."""
    lefts = Counter(round(line.left) for line in lines)
    common = sorted(x for x, n in lefts.items() if n >= max(2, 0.15 * len(lines)))
    if not common:
        common = [round(min(line.left for line in lines))]
    span = max(line.right for line in lines) - min(line.left for line in lines)
    columns: list[float] = []
    for x in common:  # an edge a little right of another is its first-line indent, not a column
        if not columns or x - columns[-1] > max(60.0, 0.3 * span):
            columns.append(x)
    margins = []
    for i, left in enumerate(columns):
        end = columns[i + 1] if i + 1 < len(columns) else float("inf")
        rights = sorted(line.right for line in lines if left - 2 <= line.left < end - 2)
        margins.append((left, rights[int(len(rights) * 0.9)] if rights else left + 1))
    return margins


def _column(line: Line, margins: list[tuple[float, float]]) -> tuple[float, float]:
    """The column `line` is set in: the last whose left edge is at or before its start."""
    found = margins[0]
    for left, right in margins:
        if left - 2 <= line.left:
            found = (left, right)
    return found


READER = Reader("pdf", _sniff, _read, cached_from=0, suffixes=("pdf",), label="PDF")  # reading a page costs more than its cache
