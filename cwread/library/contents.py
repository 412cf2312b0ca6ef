"""A book's contents: its chapters as a reader is shown them, each with its paragraphs' span, its
file in a book of several, and its pages in a PDF."""

from __future__ import annotations

from dataclasses import dataclass

from cwread.book import Document


@dataclass(frozen=True)
class ContentsEntry:
    """One entry of a book's contents: a chapter its text heads, or a source of a book (a
    folder's file, an EPUB's chapter) or a single file where it heads none, or what comes before
    its first heading: its source's name (None for a single file), its paragraph range as ids
    and as `show` takes it ("ch03:1-40"), the pages it spans where it has pages, and its heading
    (the chapter's title, else its first paragraph)."""

    name: str | None
    first: int
    last: int
    span: str
    pages: tuple[int, int] | None
    heading: str
    wrapping: str | None = None  # "front matter" or "back matter": outside its file's story (Document.stories)


def contents_of(document: Document) -> list[ContentsEntry]:
    """A book's contents: its sources, each cut at the chapters its text heads (see ContentsEntry)."""
    spans = [(s.name, s.first, s.last) for s in document.sources] or [(None, 1, len(document))]
    chapters = []
    for source, first, last in spans:
        story_first, story_last = document.story(first)
        headed = [c for c in document.chapters if first <= c.first <= last]
        # a part starts at the file's first paragraph, the story's, each heading, and after the story
        starts = {first: None, **{c.first: c.title for c in headed}}
        for edge in (story_first, story_last + 1):
            if first < edge <= last:
                starts.setdefault(edge, None)
        ordered = sorted(starts.items())
        for (start, title), (after, _) in zip(ordered, [*ordered[1:], (last + 1, None)], strict=True):
            chapters.append(_chapter(document, source, start, after - 1, title))
    return chapters


def _chapter(document: Document, source: str | None, first: int, last: int, title: str | None) -> ContentsEntry:
    """Paragraphs first..last of `source` as a contents entry, headed by `title` (else its first paragraph)."""
    pages = [p.page for p in document.paragraphs[first - 1 : last] if p.page is not None]
    heading = title or " ".join(document.paragraph(first).text.split())
    wrapping = document.wrapping(first)
    return ContentsEntry(
        source,
        first,
        last,
        document.span_label(first, last),
        (pages[0], pages[-1]) if pages else None,
        heading if len(heading) <= 80 else heading[:79].rstrip() + "…",
        wrapping if wrapping in ("front matter", "back matter") else None,
    )
