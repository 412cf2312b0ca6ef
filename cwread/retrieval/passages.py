"""A passage as every face prints it (the terminal, plain text, JSON, MCP): built here once from
a find's ranked segments, or from an answer's quotes, and read by the renderers.

A find's passages are its segments widened as the reader asked (`printed_span`), each paragraph
printed once, those of one scene printed together (`Passage.ranks` holds theirs)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from cwread.book import Document, Quote
from cwread.book.chapters import Chapter, is_heading
from cwread.retrieval.segments import Segment


@dataclass(frozen=True)
class Passage:
    """Paragraphs a reader is shown together: `ranks`, the find ranks of the segments it prints
    (best first; several where passages of one scene are printed as one); `ids`, its paragraphs
    in the book's order; `best`, the id of its best-ranked paragraph (a cut keeps those around
    it); its `chapter`; why it ranks: its first segment's `origin` ("anchor", around a paragraph
    retrieval ranked high, or "window") and `score`, and its `anchors`; `book`, of a library:
    the book's name as `show` takes it; `excerpt`, of an answer: the part of its one paragraph
    shown."""

    document: Document = field(repr=False, compare=False)
    ranks: tuple[int, ...]
    ids: tuple[int, ...]
    best: int
    chapter: Chapter | None
    origin: str = ""
    score: float = 0.0
    anchors: tuple[int, ...] = ()
    book: str = ""
    excerpt: Quote | None = None

    @property
    def span(self) -> str:
        """Its paragraphs as `show` takes them, in runs: "954-960, 963-965"."""
        return runs_label(list(self.ids), self.document.span_label)

    @property
    def rank_label(self) -> str:
        """"#1", or "#1+#3" for passages of one scene printed together."""
        return "+".join(f"#{rank}" for rank in self.ranks)

    @property
    def pages(self) -> tuple[int, int] | None:
        """The first and last page its paragraphs start on, in a book with pages; else None."""
        pages = [p for p in (self.document.page(pid) for pid in self.ids) if p is not None]
        return (min(pages), max(pages)) if pages else None


def runs_label(ids: list[int], span_label: Callable[[int, int], str]) -> str:
    """Ids as runs, each labelled by `span_label` (Document.span_label): "954-960, 963-965"."""
    runs: list[list[int]] = []
    for pid in ids:
        if runs and pid == runs[-1][-1] + 1:
            runs[-1].append(pid)
        else:
            runs.append([pid])
    return ", ".join(span_label(r[0], r[-1]) for r in runs)


REPLIES = 3  # paragraphs of dialogue printed after a passage that ends in dialogue
SCENE_PARAGRAPHS = 40  # of a passage widened to its scene, at most (centred on the passage)
SCENE_GAP = 2  # paragraphs between two passages printed as one scene
_SPEAKS = ("“", '"', "‘", "'")


def _speech(text: str) -> bool:
    return text.lstrip(" _*([").startswith(_SPEAKS)


def scene_break(text: str) -> bool:
    """Whether a paragraph bounds a scene: a chapter heading, or a line with no letters ("* * *")."""
    return is_heading(text) or not any(c.isalpha() for c in text)


def printed_span(document: Document, segment: Segment, expand: int | str | None = None) -> tuple[int, int]:
    """The paragraphs a reader is shown for a segment: the segment, widened by `expand`:
    "replies", the speech that follows a passage ending in dialogue (up to REPLIES paragraphs:
    the answer is often the next speaker's line); a number, as many paragraphs on each side;
    "scene", out to the scene's bounds (a heading or a break line, SCENE_PARAGRAPHS at most).
    Never past the segment's file or story. (By default none: on the dev novels' first calls
    the replies printed no more gold and 1,300 more characters; see benchmarks/README.md.)"""
    first, last = document.story(segment.start)
    start, end = segment.start, segment.end
    if expand is None:
        return start, end
    if expand == "replies":
        while end < last and end - segment.end < REPLIES and _speech(document.paragraph(end).text):
            if not _speech(document.paragraph(end + 1).text):
                break
            end += 1
    elif expand == "scene":
        while (
            start > first
            and not scene_break(document.paragraph(start - 1).text)
            and segment.end - start < SCENE_PARAGRAPHS // 2
        ):
            start -= 1
        while (
            end < last
            and not scene_break(document.paragraph(end + 1).text)
            and end - start < SCENE_PARAGRAPHS
        ):
            end += 1
    else:
        start, end = max(first, start - int(expand)), min(last, end + int(expand))
    return start, end


def _same_scene(document: Document, shown: list[int], ids: list[int]) -> bool:
    """Whether paragraphs `ids` sit within SCENE_GAP paragraphs of the `shown` ones, in their
    chapter and file, with no scene break between."""
    if ids[0] > shown[-1] + SCENE_GAP + 1 or ids[-1] < shown[0] - SCENE_GAP - 1:
        return False
    if document.chapter(ids[0]) != document.chapter(shown[0]) or document.file_span(
        ids[0]
    ) != document.file_span(shown[0]):
        return False
    low, high = (shown[-1], ids[0]) if ids[0] > shown[-1] else (ids[-1], shown[0])
    return not any(scene_break(document.paragraph(pid).text) for pid in range(low + 1, high))


def best_paragraph(ids: Sequence[int], scores: Sequence[float]) -> int:
    """The id of `ids` that retrieval scored highest (`scores`, each paragraph's; the first of equals)."""
    return max(ids, key=lambda pid: scores[pid - 1]) if scores else ids[0]


def find_passages(
    document: Document,
    segments: Sequence[Segment],
    scores: Sequence[float],
    chapter_of: Callable[[Segment], Chapter | None],
    expand: int | str | None = None,
) -> tuple[Passage, ...]:
    """A find's `segments` (ranked) as passages: each widened as `expand` says (`printed_span`),
    each paragraph printed once (a segment all printed before is left out), one beside a passage
    printed before in its scene (`_same_scene`) joined to it in the story's order, the gap
    between filled; `scores`, each paragraph's (its best is a cut's centre); `chapter_of`, a
    segment's chapter (a joined passage keeps its first's)."""
    groups: list[tuple[list[int], list[int]]] = []  # (ranks, ids)
    firsts: list[Segment] = []
    taken: set[int] = set()
    for rank, s in enumerate(segments, start=1):
        start, end = printed_span(document, s, expand)
        ids = [pid for pid in range(start, end + 1) if pid not in taken]
        if not ids:
            continue
        taken.update(ids)
        near = next((g for g in groups if _same_scene(document, g[1], ids)), None)
        if near is None:
            groups.append(([rank], ids))
            firsts.append(s)
        else:
            near[0].append(rank)
            joined = sorted(near[1] + ids)
            gap = [pid for pid in range(joined[0], joined[-1] + 1) if pid not in taken]
            taken.update(gap)
            near[1][:] = sorted(joined + gap)
    ranked = {rank: s for rank, s in enumerate(segments, start=1)}
    return tuple(
        Passage(
            document,
            tuple(ranks),
            tuple(ids),
            best_paragraph(ids, scores),
            chapter_of(first),
            first.origin,
            first.score,
            tuple(sorted({a for r in ranks for a in ranked[r].anchors if a in ids})),
        )
        for (ranks, ids), first in zip(groups, firsts, strict=True)
    )


def quoted_passages(document: Document, quotes: Sequence[Quote]) -> tuple[Passage, ...]:
    """An answer's quotes as passages, in their order: each its one paragraph, the quote its excerpt."""
    return tuple(
        Passage(document, (rank,), (q.id,), q.id, document.chapter(q.id), excerpt=q)
        for rank, q in enumerate(quotes, start=1)
    )
