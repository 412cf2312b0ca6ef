"""PDF books: the text layer read with pypdfium2 (PDFium, the PDF engine of Chromium), each
paragraph rebuilt from the lines it is set in and cited by the page it starts on.

- Lines come from PDFium's text in reading order (column by column, as the PDF sets it),
  each placed by its first and last glyph.
- Running headers and footers are left out: a line at the top or the bottom of a page, set
  apart from the text by a wider gap, whose words (numbers aside) recur on at least
  `RUNNING_PAGES` pages (cwread.book.formats.pdf_layout, as the rest of this list); so is a bare page number there ("12", "- 12 -", "Page 3 of 40", "xiv").
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

import os
import re
import threading
import time
import zlib

from cwread.book.formats.base import BookFormat, Reading, part_from_text
from cwread.book.formats.pdf_layout import DROPPED, HYPHEN_MARK, Line, paragraphs_of
from cwread.errors import InputError

MAX_PAGES = 20_000
MAX_SECONDS = 120.0
_PDFIUM = threading.Lock()
_HYPHENS = ("\x02", "\ufffe")  # how PDFium marks a hyphen at a line's end
_LINE_ENDS = re.compile("[\r\n\x02\ufffe]")
_SURROGATE = re.compile("[\ud800-\udfff]")
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
        line = " ".join(DROPPED.sub("", text[first : last + 1].translate(_LIGATURES)).split())
        if not line:
            continue
        if end.group() in _HYPHENS:
            line += HYPHEN_MARK  # the word goes on in the next line (see _join)
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
    return DROPPED.sub("", message)[:200]


FORMAT = BookFormat("pdf", _sniff, _read, cached_from=0, suffixes=("pdf",), label="PDF")  # reading a page costs more than its cache
