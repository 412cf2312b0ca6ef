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

_CHAPTER_WORD = re.compile(
    r"^\W*(?:CHAPTER|Chapter|CHAP\.|Chap\.|BOOK|Book|PART|Part|VOLUME|Volume|STAVE|Stave|LETTER|Letter|"
    r"SECTION|Section|SCENE|Scene|ACT|Act|CANTO|Canto)\s*[-\u2014.:]?\s*"
    r"(?:[IVXLCivxlc]+|\d+|(?:the\s+)?[A-Za-z]+)\b"
)
# "XXIII", "XXIII.", "12", "12." (not "01": an image's number, not a chapter's)
_NUMBER_ALONE = re.compile(r"^\W*(?:[IVXLC]+|[1-9]\d{0,2})\.?\s*$")
_NAMED_PART = re.compile(r"^\W*(?:PROLOGUE|Prologue|EPILOGUE|Epilogue|PREFACE|Preface|INTRODUCTION|Introduction)\b")
_THE_END = re.compile(r"^\W*(?:THE END|The End|FINIS|Finis)\W*$")
_SENTENCE_END = re.compile(r"[.!?,;:\u201d\"'\u2019]\s*$")


@dataclass(frozen=True)
class Chapter:
    """A chapter as the text heads it: the ids of its heading's paragraphs (`first`, the
    heading's first) and its title, the heading's lines joined."""

    first: int
    title: str


def is_heading(text: str) -> bool:
    """Whether a paragraph reads as a chapter heading (see the module's docstring)."""
    line = " ".join(text.split())
    if not line or len(line) > HEADING_CHARS or len(line.split()) > HEADING_WORDS:
        return False
    if _THE_END.match(line):  # the end of the story heads nothing
        return False
    if _CHAPTER_WORD.match(line) or _NUMBER_ALONE.match(line) or _NAMED_PART.match(line):
        return True
    letters = [c for c in line if c.isalpha()]
    # a title in capitals ("THE SELFISH GIANT", "FIRST PERIOD"), not a shout that ends a sentence
    return len(letters) >= 3 and all(c.isupper() for c in letters) and not _SENTENCE_END.search(line.rstrip(")]"))


def find_chapters(
    texts: Sequence[str],
    stories: Sequence[tuple[int, int]],
    file_firsts: Sequence[int] = (),
    skip: frozenset[int] = frozenset(),
) -> tuple[Chapter, ...]:
    """The chapters of a book whose paragraphs are `texts` (ids from 1), headings looked for
    within its `stories` (first and last ids, one a file) only, leaving out the ids in `skip`
    (a table of contents, a caption). A run of headings in a row is one chapter; a file's first
    id (in `file_firsts`) ends a run."""
    starts = set(file_firsts)
    out: list[Chapter] = []
    for first, last in stories:
        out += _story_chapters(texts, first, last, starts, skip)
    return tuple(out)


def _story_chapters(
    texts: Sequence[str], first: int, last: int, starts: set[int], skip: frozenset[int]
) -> list[Chapter]:
    out: list[Chapter] = []
    run: list[int] = []

    def close() -> None:
        if run:
            title = " / ".join(" ".join(texts[i - 1].split()) for i in run)
            if len(title) > TITLE_CHARS:
                title = title[: TITLE_CHARS - 1].rstrip() + "\u2026"
            out.append(Chapter(run[0], title))
            run.clear()

    for pid in range(first, last + 1):
        if pid in starts or not run or pid != run[-1] + 1:
            close()
        if pid not in skip and is_heading(texts[pid - 1]):
            run.append(pid)
    close()
    return out
