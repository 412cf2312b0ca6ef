"""What a format is and what it gives back: one `Part` per file or chapter."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cwread.book.document import Paragraph
from cwread.book.paragraphs import fingerprint, parse_paragraphs


@dataclass(frozen=True)
class Part:
    """One file's (or chapter's) paragraphs, numbered from 1, before they join a book: its
    citation name ("" for a single file), where it was read, its paragraphs' fingerprint,
    the page each paragraph starts on, where the format has pages (else empty), and the
    paragraphs (numbered from 1) its markup heads (HTML's h1-h6; else none)."""

    name: str
    path: str
    texts: tuple[str, ...]
    blocks: tuple[int, ...]
    lines: tuple[int, ...]
    fingerprint: str
    pages: tuple[int, ...] = ()
    headings: tuple[int, ...] = ()

    def paragraphs(self, first: int = 1) -> tuple[Paragraph, ...]:
        """Its paragraphs, numbered from `first` (made once per book: 125,000 took 0.3 s)."""
        ids = range(first, first + len(self.texts))
        if self.pages:
            return tuple(map(Paragraph, ids, self.texts, self.blocks, self.lines, self.pages))
        return tuple(map(Paragraph, ids, self.texts, self.blocks, self.lines))


def part_from_text(
    name: str,
    path: str,
    text: str,
    place: Callable[[int], tuple[int, int]] | None = None,
    headings: Sequence[str] = (),
) -> Part:
    """A part of `text` numbered by `parse_paragraphs`. `place`, for a format with pages,
    maps the line of `text` a paragraph starts on to (its page, its line on that page);
    `headings`, the blocks of `text` its markup heads, in order, each marked on the paragraph
    it became."""
    paragraphs = parse_paragraphs(text)
    places = [place(p.line) for p in paragraphs] if place else []
    return Part(
        name,
        path,
        tuple(p.text for p in paragraphs),
        tuple(p.block for p in paragraphs),
        tuple(line for _, line in places) if place else tuple(p.line for p in paragraphs),
        fingerprint(paragraphs),
        tuple(page for page, _ in places),
        _marked(paragraphs, headings),
    )


def _marked(paragraphs, headings: Sequence[str]) -> tuple[int, ...]:
    """The numbers of the paragraphs that are the `headings`, matched in order, by their words."""
    wanted = [" ".join(h.split()) for h in headings]
    marked, at = [], 0
    for number, paragraph in enumerate(paragraphs, start=1):
        if at < len(wanted) and " ".join(paragraph.text.split()) == wanted[at]:
            marked.append(number)
            at += 1
    return tuple(marked)


@dataclass(frozen=True)
class Reading:
    """What a format made of one file's bytes: its parts, the encoding (or format) it read
    them as, and how many invalid bytes it replaced."""

    parts: tuple[Part, ...]
    encoding: str
    replaced: int = 0


@dataclass(frozen=True)
class BookFormat:
    """One format: `sniff` says from the bytes and the name whether a file is of it, `read`
    turns the bytes into parts (InputError, one line, for anything unusable), `cached_from`
    the size from which its reading is kept on disk, by the bytes (a smaller text reads
    about as fast as its cache entry; None: never, as for an EPUB, nothing of which reaches
    the disk), `version` a number raised whenever the same bytes would read otherwise (it
    keys the cache of readings), `suffixes` and `label` what finds and names it."""

    name: str
    sniff: Callable[[bytes, str], bool]
    read: Callable[[bytes, str, str | None, int], Reading]
    cached_from: int | None = 64 * 1024
    version: int = 1
    # the file suffixes of the format (a folder's files and a library's books are found by
    # them; a source's citation name leaves them off), and its name in help texts
    suffixes: tuple[str, ...] = ()
    label: str = ""
