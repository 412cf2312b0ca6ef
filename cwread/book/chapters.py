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
    r"^\W*(?:PROLOGUE|Prologue|EPILOGUE|Epilogue|PREFACE|Preface|INTRODUCTION|Introduction)\b"
)
_THE_END = re.compile(r"^\W*(?:THE END|The End|FINIS|Finis)\W*$")
_SENTENCE_END = re.compile(r"[.!?,;:\u201d\"'\u2019]\s*$")
_TITLE_STOP = re.compile(r"[A-Z]{2}\.\s*$")  # "SECOND PERIOD.", "FIRST NARRATIVE.": a heading's full stop
_QUOTED = re.compile(r"^[\"'\u201c\u2018]")


@dataclass(frozen=True)
class Chapter:
    """A chapter as the text heads it: the ids of its heading's paragraphs (`first`, the
    heading's first) and its title, the heading's lines joined."""

    first: int
    title: str


def _heading_sized(text: str) -> bool:
    """Whether a paragraph is as short as a heading is, and not the story's end."""
    line = " ".join(text.split())
    if not line or len(line) > HEADING_CHARS or len(line.split()) > HEADING_WORDS:
        return False
    return not _THE_END.match(line)  # the end of the story heads nothing


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
    FALCONER.") ends none."""
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
    return {pid for pid, word in found.items() if lasts[word] >= 2}


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
) -> tuple[Chapter, ...]:
    """The chapters of a book whose paragraphs are `texts` (ids from 1), headings looked for
    within its `stories` (first and last ids, one a file) only, leaving out the ids in `skip`
    (a table of contents, a caption). A run of headings in a row is one chapter; a file's first
    id (in `file_firsts`) ends a run. In a book whose layout numbers its chapters (at least
    SERIES_LEAST headings numbered or repeating a pattern), a title in capitals before the first
    of them is the book's title page or dedication, not a chapter. The ids in `marked` are
    headings the book's markup says are headings (HTML's h1-h6): headings in their own case
    ("The Stapletons of Merripit House"), as long as a heading is, and part of its series."""
    starts = set(file_firsts)
    stopped = _stopped_series(texts, stories) | {pid for pid in marked if _heading_sized(texts[pid - 1])}
    runs = [run for first, last in stories for run in _story_runs(texts, first, last, starts, skip, stopped)]
    # the headings of the book's series: numbered, or titles it repeats as a pattern
    series = [pid for first, end in runs for pid in range(first, end + 1) if numbered(texts[pid - 1]) or pid in stopped]
    if len(series) >= SERIES_LEAST:  # the runs from the series on; one that opens with the book's
        # title, then its first numbered heading ("THE FIREFLY OF FRANCE / CHAPTER I / ALARUMS…"),
        # from that one
        runs = [(max(first, series[0]), end) for first, end in runs if end >= series[0]]
    return tuple(Chapter(first, _title(texts, first, end)) for first, end in runs)


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
