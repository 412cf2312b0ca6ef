"""A PDF's lines laid out as paragraphs: running heads and page numbers left out, a paragraph begun
where a line is indented, spaced or follows a sentence's end short of the margin, hyphenated
words joined where the book spells them whole (cwread.book.formats.pdf reads the lines)."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass

RUNNING_PAGES = 3  # pages a header's words must recur on to be left out


_PAGE_NUMBER = re.compile(
    r"(?i)^[\W_]*(?:page\s*)?(?:\d{1,5}|[ivxlcdm]{1,7})(?:\s*(?:/|of)\s*\d{1,5})?[\W_]*$"
)


DROPPED = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ufffe\uffff\u200b]")  # controls, PDFium's placeholders


HYPHEN_MARK = "\u00ad"


_COMPOUND = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")  # a word, hyphenated or not


_WORD_END = re.compile(r"[^\W\d_]+$")


_WORD_START = re.compile(r"[^\W\d_]+")


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
        broken = last.endswith(HYPHEN_MARK) or (
            last.endswith("-") and text[:1].islower() and last[-2:-1].isalpha()
        )
        if broken:
            stem = last.rstrip(HYPHEN_MARK).rstrip("-")
            left, right = _WORD_END.search(stem), _WORD_START.match(text)
            keep = (
                left is not None and right is not None and _keeps_hyphen(left.group(), right.group(), words)
            )
            parts[-1] = stem + ("-" if keep else "") + text
        elif last.endswith(("\u2014", "--")):
            parts[-1] = last + text
        else:
            parts.append(text)
    return " ".join(DROPPED.sub("", " ".join(parts).replace(HYPHEN_MARK, "")).split())


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
        broken = text.endswith(HYPHEN_MARK)
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
    import statistics  # here: only a PDF's lines need it (3 ms a run)

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
