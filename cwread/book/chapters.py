"""Where a book's chapters begin, found from its text: the headings a reader would look for
("Chapter 7. The Stapletons of Merripit House", "CHAPTER XIII", "XXIII", "THE SELFISH GIANT"),
so that a passage can say which chapter it is in.

A heading is a short paragraph of the story that is not prose: a chapter word and its number,
a number alone (Roman or Arabic), or a line in capitals. Headings in a row (a part's title, then
its first chapter's) are one heading, their lines joined. A paragraph belongs to the last
heading before it in its own file: in a book of several files, a file with no heading of its
own has none (its name already says where the paragraph is).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

HEADING_CHARS = 100  # a heading, its title at most
HEADING_WORDS = 12
TITLE_CHARS = 80  # of a run of headings joined, as shown beside a passage

# the word whole: "Party!" is no PART (a quoted line read as a heading, #88 item 6)
# The words a chapter heading opens with, in capitals or capitalised ("CHAPTER", "Phase"): the one
# list the headings (`numbered`) and a contents list (cwread.book.story) are read by.
CHAPTER_WORDS = ("CHAPTER", "BOOK", "PART", "VOLUME", "STAVE", "LETTER", "SECTION", "SCENE", "ACT", "CANTO", "PHASE")
WORD_ALTERNATIVES = "|".join(f"{word}|{word.capitalize()}" for word in CHAPTER_WORDS)
_CHAPTER_WORD = re.compile(
    rf"^\W*(?:(?:{WORD_ALTERNATIVES})\b|CHAP\.|Chap\.)\s*[-\u2014.:]?\s*"
    r"(?:[IVXLCivxlc]+|\d+|(?:the\s+)?[A-Za-z]+)\b"
)
# "XXIII", "XXIII.", "12", "12." (not "01": an image's number, not a chapter's)
_NUMBER_ALONE = re.compile(r"^\W*(?:[IVXLC]+|[1-9]\d{0,2})\.?\s*$")
_NAMED_PART = re.compile(
    r"^\W*(?:PROLOGUE|Prologue|EPILOGUE|Epilogue|PREFACE|Preface|INTRODUCTION|Introduction|CONCLUSION|Conclusion)\b"
)
_THE_END = re.compile(r"^\W*(?:THE END|The End|FINIS|Finis)\W*$")
_SENTENCE_END = re.compile(r"[.!?,;:\u201d\"'\u2019]\s*$")
_TITLE_STOP = re.compile(r"[A-Z]{2}\.\s*$")  # "SECOND PERIOD.", "FIRST NARRATIVE.": a heading's full stop
_QUOTED = re.compile(r"^[\"'\u201c\u2018]")
_LOWER_WORD = re.compile(r"\b[a-z]\w*")
# a number, then a title: "I. The Period", "01 My Early Home", "XIV.  DOCTOR MOREAU EXPLAINS."
_NUMBERED_TITLE = re.compile(
    r"^\W*(?P<number>(?:[IVXLC]{2,}|[IVX])\.|\d{1,3}\.?)\s+(?P<title>[A-Z\"'\u201c\u2018].*)$"
)  # one letter: I, V or X ("C. VERNON." is a signature's initial)
_TITLE_SMALL_WORDS = frozenset(
    ["a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "of", "on", "or", "the", "to", "with", "his", "her", "its", "their", "our", "my", "your"]
)


@dataclass(frozen=True)
class Chapter:
    """A chapter as the text heads it: the ids of its heading's paragraphs (`first`, the
    heading's first) and its title, the heading's lines joined."""

    first: int
    title: str


def is_the_end(text: str) -> bool:
    """Whether a paragraph says the story ends here ("THE END", "Finis")."""
    return bool(_THE_END.match(" ".join(text.split())))


def _heading_sized(text: str) -> bool:
    """Whether a paragraph is as short as a heading is, and not the story's end."""
    line = " ".join(text.split())
    if not line or len(line) > HEADING_CHARS or len(line.split()) > HEADING_WORDS:
        return False
    return not is_the_end(line)  # the end of the story heads nothing


def is_heading(text: str) -> bool:
    """Whether a paragraph reads as a chapter heading (see the module's docstring)."""
    if not _heading_sized(text):
        return False
    line = " ".join(text.split())
    if numbered(line):
        return True
    letters = [c for c in line if c.isalpha()]
    if len(letters) < 3 or not all(c.isupper() for c in letters) or _QUOTED.match(line):
        return False  # not in capitals, or a line of speech
    # a title in capitals ("THE SELFISH GIANT", "FIRST PERIOD"), not a shout that ends a sentence
    # ("HELP! HELP!") nor a letter's signature ("HARRY."); but see `_stopped_series`
    return not _SENTENCE_END.search(line.rstrip(")]"))


def _stopped_series(texts: Sequence[str], stories: Sequence[tuple[int, int]]) -> set[int]:
    """Titles in capitals with a full stop that the book repeats as a pattern ("FIRST
    NARRATIVE.", "SECOND NARRATIVE."; "SECOND PERIOD." beside "FIRST PERIOD"): two words or
    more, their last word ending another such title or a heading. A signature ("HARRY.", "ESME
    FALCONER.") ends none, or is names alone: initials and words the book never writes in lower
    case ("VAN HELSING." beside "... SPOKEN BY VAN HELSING"; not "THE WILL OF ROGER MELTON.")."""
    found: dict[int, str] = {}
    lasts: dict[str, int] = {}
    for first, last in stories:
        for pid in range(first, last + 1):
            line = " ".join(texts[pid - 1].split())
            if len(line) > HEADING_CHARS or _QUOTED.match(line):
                continue
            words = line.rstrip(".").split()
            if not words or not all(c.isupper() for c in line if c.isalpha()):
                continue
            stop = _TITLE_STOP.search(line)
            if stop and len(words) >= 2:
                found[pid] = words[-1]
            if stop or is_heading(line):
                lasts[words[-1]] = lasts.get(words[-1], 0) + 1
    titles = {pid for pid, word in found.items() if lasts[word] >= 2}
    if not titles:
        return set()
    lower = set(_LOWER_WORD.findall("\n".join(texts)))  # once: a book of letters has hundreds of signatures

    def a_name(word: str) -> bool:  # an initial, or a word never written in lower case
        word = word.strip(".,")
        return len(word) == 1 or word.lower() not in lower

    return {pid for pid in titles if not all(a_name(w) for w in texts[pid - 1].split())}


def _numbered_titles(texts: Sequence[str], stories: Sequence[tuple[int, int]]) -> set[int]:
    """Headings of a number and a title, in capitals or with two thirds of its words (but the
    small ones) capitalized ("I. The Period", "26 How it Ended", "XIV. DOCTOR MOREAU
    EXPLAINS."), where the book repeats the pattern (SERIES_LEAST of them or more): an item of a
    numbered list is none ("1. Take the lamp oil to the rock"; "1. Ernest Melton, J.P." then "2. ...")."""
    found: dict[int, str] = {}  # id -> its number
    for first, last in stories:
        for pid in range(first, last + 1):
            line = " ".join(texts[pid - 1].split())
            match = _NUMBERED_TITLE.match(line) if _heading_sized(line) else None
            if match is None:
                continue
            words = [w.strip("\"'.,:;!?()\u201c\u201d\u2018\u2019") for w in match.group("title").split()]
            words = [w for w in words if w]
            content = [w for w in words if w not in _TITLE_SMALL_WORDS]
            if content and 3 * sum(w[0].isupper() for w in content) >= 2 * len(content):  # "How it Ended"
                found[pid] = match.group("number").rstrip(".")
    titles = {pid: n for pid, n in found.items() if pid - 1 not in found and pid + 1 not in found}  # no list's items
    return set(titles) if len(set(titles.values())) >= SERIES_LEAST else set()  # numbers of a series differ


def numbered(text: str) -> bool:
    """Whether a heading says it is one of a series: a chapter word, a number, a named part
    ("CHAPTER IV", "XXIII", "PROLOGUE"), not a title in capitals alone."""
    line = " ".join(text.split())
    return bool(_CHAPTER_WORD.match(line) or _NUMBER_ALONE.match(line) or _NAMED_PART.match(line))


SERIES_LEAST = 3  # numbered headings that make a book's layout: its titles in capitals then follow them


def find_chapters(
    texts: Sequence[str],
    stories: Sequence[tuple[int, int]],
    file_firsts: Sequence[int] = (),
    skip: frozenset[int] = frozenset(),
    marked: frozenset[int] = frozenset(),
    lines: Sequence[int] = (),
) -> tuple[Chapter, ...]:
    """The chapters of a book whose paragraphs are `texts` (ids from 1), headings looked for
    within its `stories` (first and last ids, one a file) only, leaving out the ids in `skip`
    (a table of contents, a caption). A run of headings in a row is one chapter; a file's first
    id (in `file_firsts`) ends a run. In a book whose layout numbers its chapters (at least
    SERIES_LEAST headings numbered or repeating a pattern), a title in capitals before the first
    of them is the book's title page or dedication, not a chapter. The ids in `marked` are
    headings the book's markup says are headings (HTML's h1-h6): headings in their own case
    ("The Stapletons of Merripit House"), as long as a heading is, and part of its series.
    `lines`: each paragraph's first line in its file's text, whose blank lines lay the book out
    (a plain-text book's own; a format's text has one between paragraphs): a run's lines that
    close the chapter before are left out."""
    starts = set(file_firsts)
    stopped = _stopped_series(texts, stories) | _numbered_titles(texts, stories)
    stopped |= {pid for pid in marked if _heading_sized(texts[pid - 1])}
    runs = [run for first, last in stories for run in _story_runs(texts, first, last, starts, skip, stopped)]
    width = _line_width(texts, lines) if lines else None
    if width is not None:  # a text laid out by its own blank lines, hard-wrapped
        runs = [(first if first in starts else _past_closing_lines(texts, lines, width, first, end), end) for first, end in runs]
    # the headings of the book's series: numbered, or titles it repeats as a pattern
    series = [pid for first, end in runs for pid in range(first, end + 1) if numbered(texts[pid - 1]) or pid in stopped]
    if len(series) >= SERIES_LEAST:  # the runs from the series on; one that opens with the book's
        # title, then its first numbered heading ("THE FIREFLY OF FRANCE / CHAPTER I / ALARUMS…"),
        # from that one
        runs = [(max(first, series[0]), end) for first, end in runs if end >= series[0]]
    return tuple(Chapter(first, _title(texts, first, end)) for first, end in runs)


def _line_width(texts: Sequence[str], lines: Sequence[int]) -> float | None:
    """The characters of a line of the text, as wrapped (the median over paragraphs of three
    lines or more, each taken to have one blank line under it): how many lines a paragraph took.
    None where no paragraph is wrapped: a format's generated text, whose blank lines are not the
    book's."""
    widths = sorted(
        len(texts[i]) / (lines[i + 1] - lines[i] - 1)
        for i in range(len(lines) - 1)
        if lines[i + 1] - lines[i] - 1 >= 3
    )
    return widths[len(widths) // 2] if widths else None


def _past_closing_lines(texts: Sequence[str], lines: Sequence[int], width: float, first: int, end: int) -> int:
    """Where a run of headings first..end begins once the lines that close the chapter before it
    are left out: lines before its first numbered heading, each standing close under what is
    above it and further, in blank lines, from what follows it than the rest of the run is from
    what follows each (a letter's signature, "S. VERNON", one blank line under its
    letter and five above "XXXI", which has two under it; not "THE SECOND PART", four blank
    lines under its chapter's end). A heading is taken to be one line; a paragraph of prose as
    many as its characters fill at the text's `width`."""
    if numbered(texts[first - 1]):  # "VOLUME II / CHAPTER I": the run opens its series
        return first
    number = next((pid for pid in range(first + 1, end + 1) if numbered(texts[pid - 1])), None)
    if number is None or first < 2:
        return first

    def blanks(pid: int) -> int:  # blank lines between pid and the paragraph after it
        return lines[pid] - lines[pid - 1] - 1 if pid < len(lines) else -1

    rest = max(blanks(pid) for pid in range(number, end + 1))
    above = lines[first - 1] - lines[first - 2] - max(1, math.ceil(len(texts[first - 2]) / width))
    start = first
    while start < number and blanks(start) >= 2 and rest < blanks(start) and above <= blanks(start) - 2:
        above = blanks(start)  # the line closes the chapter above it: the next may open this one
        start += 1
    return start


def _title(texts: Sequence[str], first: int, last: int) -> str:
    """The title of a run of headings first..last: their lines joined, capped."""
    title = " / ".join(" ".join(texts[i - 1].split()) for i in range(first, last + 1))
    return title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1].rstrip() + "\u2026"


def _story_runs(
    texts: Sequence[str], first: int, last: int, starts: set[int], skip: frozenset[int], stopped: set[int]
) -> list[tuple[int, int]]:
    """The runs of headings in a row within first..last, each as its first and last id."""
    out: list[tuple[int, int]] = []
    run: list[int] = []

    def close() -> None:
        if run:
            out.append((run[0], run[-1]))
            run.clear()

    for pid in range(first, last + 1):
        if pid in starts or not run or pid != run[-1] + 1:
            close()
        if pid not in skip and (is_heading(texts[pid - 1]) or pid in stopped):
            run.append(pid)
    close()
    return out
