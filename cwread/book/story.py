"""Where a book's story runs, found from its text: inside Project Gutenberg's markers and their
credits, past the front matter and a contents list to the first chapter, to its last "THE END"
where no chapter follows it (a publisher's list of books is no part of it), with illustration
captions set aside (a Document's `stories` and `unread` read these)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from cwread.book.chapters import WORD_ALTERNATIVES, is_the_end, numbered

_START = re.compile(r"^\W*\*{3}\s*START OF (?:THE|THIS) PROJECT GUTENBERG", re.I)


_END = re.compile(r"^\W*\*{3}\s*END OF (?:THE|THIS) PROJECT GUTENBERG", re.I)


# credits just inside the markers ("Produced by ...", "End of the Project Gutenberg EBook of ...")
_CREDIT = re.compile(r"^\W*(?:produced by|e-?text prepared by|this e-?(?:book|text) was produced)", re.I)


_END_LINE = re.compile(r"^\W*end of (?:the )?project gutenberg", re.I)


CREDIT_REACH = 3  # paragraphs inside a marker that may still be its credits


# A chapter heading's word (cwread.book.chapters.CHAPTER_WORDS) and number, capitalised as headings
# are ("CHAPTER IV", "Chapter 4", "Phase the First", "Letter 2"; not "for my part I think"): a
# paragraph naming three or more is a list of chapters. In 19 novels of Project Gutenberg it
# finds 20 paragraphs (in 8 of them), each a table of contents, and none of a story.
_HEADING_WORDS = WORD_ALTERNATIVES


_CHAPTER_HEADING = re.compile(
    rf"\b(?:{_HEADING_WORDS})\s*[-\u2014.:]?\s*"
    r"(?:[IVXLC]+\b|\d+\b|(?:the\s+)?(?:FIRST|First|SECOND|Second|THIRD|Third|LAST|Last|ONE|One|TWO|Two|THREE|Three)\b)"
)


_HEADING_WORD = re.compile(_HEADING_WORDS)


CONTENTS_HEADINGS = 3


_ILLUSTRATION = re.compile(r"^\s*\[Illustration\b")


CAPTION_PARAGRAPHS = 4  # an illustration's caption runs on over this many paragraphs at most


CAPTION_TAIL_WORDS = 3  # words after a caption's bracket that make its paragraph the story's


def illustration_ids(texts: Sequence[str], first: int, last: int) -> list[int]:
    """The 1-based ids, from `first` to `last`, of Project Gutenberg's illustration markup: a
    paragraph that opens "[Illustration" and those its caption runs on over, to its closing
    bracket ("[Illustration:" / "“He came down to see the place”" / "[_Copyright 1894 by George
    Allen._]]"). A bracket not closed within CAPTION_PARAGRAPHS marks the opening one alone."""
    out: list[int] = []
    pid = first
    while pid <= last:
        if not _ILLUSTRATION.match(texts[pid - 1]):
            pid += 1
            continue
        end, after = _caption_end(texts, pid, min(pid + CAPTION_PARAGRAPHS - 1, last))
        if end is None:  # never closed: the opening paragraph alone
            end, after = pid, ""
        if len(after.split()) < CAPTION_TAIL_WORDS:  # prose after the bracket is the story's
            out.extend(range(pid, end + 1))
        pid = end + 1
    return out


def _caption_end(texts: Sequence[str], pid: int, last: int) -> tuple[int | None, str]:
    """The id of the paragraph where the caption opened at `pid` closes its bracket (None if not
    by `last`), and what that paragraph holds after it."""
    depth = 0
    for end in range(pid, last + 1):
        text = texts[end - 1]
        for at, char in enumerate(text):
            depth += (char == "[") - (char == "]")
            if depth == 0 and char == "]":
                return end, text[at + 1 :]
    return None, ""


def lists_chapters(text: str) -> bool:
    """Whether a paragraph is a list of chapter headings (a table of contents)."""
    # the heading words alone first: a novel's paragraphs in 3 ms, not 19
    return (
        len(_HEADING_WORD.findall(text)) >= CONTENTS_HEADINGS
        and len(_CHAPTER_HEADING.findall(text)) >= CONTENTS_HEADINGS
        and not _is_prose(text)  # "Part One was the engine, Part Two the hull, and Part Three the crew."
    )


def story_bounds(texts: Sequence[str]) -> tuple[int, int]:
    """(first, last) 1-based ids of the work within a Project Gutenberg wrapping (see
    Document.stories); the whole text when it has no markers."""
    n = len(texts)
    starts = [i for i, t in enumerate(texts) if _START.match(t)]
    ends = [i for i, t in enumerate(texts) if _END.match(t)]
    first, last = 0, n - 1
    if starts:
        first = starts[0] + 1
        while first < min(n, starts[0] + 1 + CREDIT_REACH) and _CREDIT.match(texts[first]):
            first += 1
    if ends and ends[-1] >= first:
        last = ends[-1] - 1
        while last > max(first, ends[-1] - 1 - CREDIT_REACH) and _END_LINE.match(texts[last]):
            last -= 1
    if first > last:  # markers with nothing between them: keep the whole text
        return (1, n) if n else (1, 0)
    if starts:
        first = _first_chapter(texts, first, last)
    return first + 1, _the_end(texts, first, last) + 1


AFTER_THE_END = 1 / 3  # of the story: the most a publisher's pages after "THE END" may be


def _the_end(texts: Sequence[str], first: int, last: int) -> int:
    """The 0-based index where the story first..last ends: its last "THE END" (or "FINIS") where
    no heading of a chapter comes after it and what does is short beside the story (a
    publisher's advertisements, "Books for Girls", "There's More to Follow!"); else `last`. A
    diary a character ends with "FINIS." halfway through an unchaptered book ends nothing."""
    for i in range(last, first, -1):
        if numbered(texts[i]):
            return last  # a chapter after the last "THE END": an anthology's next story
        if is_the_end(texts[i]):
            if numbered(texts[i - 1]):
                return last  # "CHAPTER IV / THE END": a chapter's title
            return i if last - i <= AFTER_THE_END * (last - first + 1) else last
    return last


# The heading that opens a work's first part: "CHAPTER I.", "Chapter 1", "PROLOGUE", "Stave One",
# "Letter 1", "Book the First—Recalled to Life"
_OPENING = re.compile(
    r"^\W*(?:(?:CHAPTER|Chapter|CHAP\.|Chap\.|STAVE|Stave|LETTER|Letter|BOOK|Book|PART|Part|VOLUME|Volume)"
    r"\s*[-\u2014.:]?\s*(?:I|1|ONE|One|FIRST|First|(?:the|THE)\s+(?:FIRST|First))\b|PROLOGUE\b|Prologue\b)"
)


_HEADING_LINE = re.compile(r"^\W*(?:" + _CHAPTER_HEADING.pattern + ")")


_FRONT_MATTER = re.compile(
    r"^\W*(?:(?:LIST OF |List of )?(?:CONTENTS|Contents|ILLUSTRATIONS|Illustrations)|PREFACE|Preface|INTRODUCTION|"
    r"Introduction|FOREWORD|Foreword|DEDICATION|Dedication|(?:TRANSCRIBER|Transcriber)['\u2019]?s? (?:NOTE|Note))\b[^\n]{0,60}$"
)


OPENING_CHARS = 100  # a heading, its title at most


OPENING_REACH = 0.1  # of the story's paragraphs: how far in the first chapter may open


PROSE_AFTER = 8  # paragraphs after the heading (before the next) where its prose must begin


def _first_chapter(texts: Sequence[str], first: int, last: int) -> int:
    """The 0-based index at which a Project Gutenberg work's first chapter opens, where its
    heading lies early on and a paragraph of prose follows it (a table of contents' entry has
    headings after it): what comes before it (title page, dedication, contents, an editor's
    preface that names every character) is front matter. `first` where there is no such
    heading."""
    reach = first + max(1, int(OPENING_REACH * (last - first + 1)))
    for i in range(first, min(reach, last + 1)):
        heading = texts[i]
        if len(heading) > OPENING_CHARS or not _OPENING.match(heading):
            continue
        for following in texts[i + 1 : min(i + 1 + PROSE_AFTER, last + 1)]:
            if _OPENING.match(following) or _HEADING_LINE.match(following):
                break  # the next heading (a contents' next entry) came before any prose
            if _is_prose(following):
                return i if _front_matter(texts[first:i]) else first
    return first


def _front_matter(texts: Sequence[str]) -> bool:
    """Whether what comes before a work's first heading is front matter: no prose at all (a
    title page), or a contents or a preface said to be one (a heading "Contents", "Preface",
    ..., a list of chapters, or a contents' entry), not an opening the author left unheaded."""
    return not any(_is_prose(t) for t in texts) or any(
        _FRONT_MATTER.match(t) or lists_chapters(t) or _HEADING_LINE.match(t) for t in texts
    )


def _is_prose(text: str) -> bool:
    """A sentence or more of prose, not a heading or a title: eight words or more, most of them
    in lower case ("I address these lines—written in India—to my relatives in England.", not
    "CHAPTER II. The Curse of the Baskervilles")."""
    words = text.split()
    return len(words) >= 8 and 2 * sum(w[:1].islower() for w in words) >= len(words)
