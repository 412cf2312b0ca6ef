"""A question over a whole library: the passages that answer it, from whichever books hold them.

A library may hold hundreds of books; reading each as `find` reads one (its lexical and dense
indexes, built on first use) would cost what the library costs. So the library's own index
(SQLite FTS5, BM25 over every paragraph of every book, kept up to date one book at a time)
chooses the candidate books first: the books whose paragraphs match the question's words best,
each scored by its CANDIDATE_HITS best hits. Only those books (MOST_BOOKS at most) are opened
and searched as one book is (fused lexical and dense retrieval, segments), their indexes built
when first needed and kept (the per-book cache). Their passages are ranked together: within a
book by its own retrieval, across books by the book's share of the library's matches, so a
question costs about what one book's question costs once its candidate books are indexed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cwread.errors import InputError
from cwread.library import MOST_BOOKS
from cwread.library.catalog import Library, Within
from cwread.progress import Progress
from cwread.records.question import NO_HINTS, Hints, Question
from cwread.records.stages import FindResult
from cwread.records.trace import Trace
from cwread.retrieval.passages import Passage, best_paragraph, printed_span
from cwread.retrieval.segments import Budget, Segment
from cwread.run.session import Session
from cwread.settings import RunSettings, SessionSettings

LIBRARY_HITS = 300  # paragraphs the library's index ranks for a question, to choose books from
CANDIDATE_HITS = 3  # a book's best hits summed: its score as a candidate


@dataclass(frozen=True)
class Candidate:
    """A book the library's index chose for a question: its name (as `list_books` and `show`
    take it), what its catalogue says of it, its score (the BM25 of its best CANDIDATE_HITS
    paragraphs, summed), how many of the library's best hits it holds, and its own retrieval,
    with the seconds it took and the index parts built for it."""

    name: str
    about: dict
    score: float
    hits: int
    found: FindResult
    seconds: float
    built: tuple[str, ...] = ()


@dataclass(frozen=True)
class LibrarySegment:
    """A segment of a candidate book (`book`: its index among the candidates) with its score
    across the library: its score in its book's ranking, as a share of that book's best,
    times the book's share of the best candidate's score."""

    book: int
    segment: Segment
    score: float


@dataclass(frozen=True)
class LibraryFound:
    """A question over a library: the candidate books opened (best first), the books the
    library holds and how many of them match the question's words at all, and the passages
    of the candidates ranked together."""

    question: Question
    roots: tuple[str, ...]
    candidates: tuple[Candidate, ...]
    segments: tuple[LibrarySegment, ...]
    books: int
    matching: int
    index_built: bool  # the library's index was built or brought up to date for this question
    skipped: tuple[str, ...] = ()
    timings: dict[str, float] = field(default_factory=dict, hash=False)

    @property
    def answering(self) -> Candidate | None:
        """The book whose passage ranks first, which answers the question (None: no passage)."""
        return self.candidates[self.segments[0].book] if self.segments else None

    def printed(self, limit: int, expand: int | str | None = None) -> tuple[Passage, ...]:
        """The first `limit` segments (0: all) as passages, each headed by its book: widened as
        `expand` says (`printed_span`), each paragraph of a book printed once; not joined by
        scene (one book's passages are rarely neighbours here)."""
        out = []
        taken: set[tuple[int, int]] = set()  # (book, paragraph) printed
        for rank, ranked in enumerate(self.segments if not limit else self.segments[:limit], start=1):
            found = self.candidates[ranked.book].found
            document, s = found.document, ranked.segment
            start, end = printed_span(document, s, expand)
            ids = tuple(pid for pid in range(start, end + 1) if (ranked.book, pid) not in taken)
            if not ids:
                continue
            taken.update((ranked.book, pid) for pid in ids)
            best = best_paragraph(ids, found.paragraph_scores)
            name = self.candidates[ranked.book].name
            anchors = tuple(a for a in s.anchors if a in ids)
            out.append(
                Passage(document, (rank,), ids, best, found.chapter_of(s), s.origin, ranked.score, anchors, name)
            )
        return tuple(out)


def find_in_library(
    library: Library,
    question: Question,
    opener: Callable[[str], Session],
    budget: Budget | None = None,
    retrieval: str = "fused",
    progress: Progress | None = None,
    *,
    books: str | None = None,
    hints: Hints = NO_HINTS,
    most_books: int = MOST_BOOKS,
) -> LibraryFound:
    """The passages of `library` that answer `question`: candidate books chosen by the
    library's index (the `books` glob: among those only), each opened by `opener` (a book's
    name -> its reading session: the caller's pool, or a new one) and searched as one book is
    (`budget`, `retrieval`, the reader's words in `hints`), their passages ranked together (see the module's doc)."""
    if most_books < 1:
        raise InputError("--books-opened must be at least 1")
    t0 = time.perf_counter()
    if hints.near is not None:
        raise InputError("--near names a paragraph of one book; a library question takes none")
    hits = library.search(f"{question.text} {hints.also}".strip(), LIBRARY_HITS, progress, within=Within(books))
    by_book: dict[str, list[float]] = {}
    for hit in hits.hits:
        by_book.setdefault(hit.book, []).append(hit.score)
    scored = sorted(
        ((sum(sorted(s, reverse=True)[:CANDIDATE_HITS]), name) for name, s in by_book.items()), reverse=True
    )
    timings = {"library_search": round(time.perf_counter() - t0, 4)}
    candidates: list[Candidate] = []
    about = {hit.book: hit.about for hit in hits.hits}
    chosen = scored[:most_books]
    for done, (score, name) in enumerate(chosen):
        t1 = time.perf_counter()
        if progress is not None:
            progress("candidate books", done, len(chosen))
        session = opener(name)
        found = session.find(question, budget, retrieval, progress, hints=hints)
        candidates.append(
            Candidate(
                name,
                about.get(name, {}),
                score,
                len(by_book[name]),
                found,
                round(time.perf_counter() - t1, 4),
                found.built,
            )
        )
    if progress is not None and chosen:
        progress("candidate books", len(chosen), len(chosen))
    timings["books"] = round(time.perf_counter() - t0 - timings["library_search"], 4)
    return LibraryFound(
        question=question,
        roots=tuple(str(r) for r in library.roots),
        candidates=tuple(candidates),
        segments=tuple(_ranked(candidates)),
        books=hits.books,
        matching=len(by_book),
        index_built=hits.built,
        skipped=hits.skipped,
        timings=timings,
    )


@dataclass(frozen=True)
class LibraryAnswer:
    """A question answered over a library: its passages found (`found`) and the answer from the
    book whose passages fit best (`found.answering`; None where no book holds the question's
    words)."""

    found: LibraryFound
    trace: Trace | None = None


def ask_in_library(
    library: Library,
    question: Question,
    opener: Callable[[str], Session],
    run: RunSettings,
    progress: Progress | None = None,
    notice: Callable[[str], None] | None = None,
) -> LibraryAnswer:
    """`question` answered from the library's book whose passages fit it best (see
    `find_in_library`), on the session that found them: its indexes are not opened again (its
    retrieval is run again, for the budget fitted to the Interpreter). Which book answers, and
    which others were searched, is said to `notice`."""
    sessions: dict[str, Session] = {}

    def held(name: str) -> Session:
        if name not in sessions:
            sessions[name] = opener(name)
        return sessions[name]

    found = find_in_library(library, question, held, run.budget, run.retrieval, progress)
    best = found.answering
    if best is None:
        return LibraryAnswer(found)
    if notice is not None:
        others = [c.name for c in found.candidates if c is not best]
        notice(
            f"answering from {best.name}, whose passages fit best"
            + (f" (also searched: {', '.join(others)})" if others else "")
        )
    return LibraryAnswer(found, sessions[best.name].ask(question, run, progress=progress, notice=notice))


def _ranked(candidates: list[Candidate]) -> list[LibrarySegment]:
    """The candidates' anchor segments ranked together (see LibrarySegment)."""
    if not candidates:
        return []
    best = candidates[0].score or 1.0
    out = []
    for i, candidate in enumerate(candidates):
        anchors = candidate.found.anchor_segments or candidate.found.segments[:1]
        top = max((s.score for s in anchors), default=0.0) or 1.0
        out += [LibrarySegment(i, s, (s.score / top) * (candidate.score / best)) for s in anchors]
    out.sort(key=lambda p: (-p.score, p.book, p.segment.start))
    return out


def session_opener(library: Library, settings: SessionSettings) -> Callable[[str], Session]:
    """Open a library's book by name as a new reading session (the CLI's: one question, then
    gone; the MCP server keeps its own pool)."""

    def opener(name: str) -> Session:
        return Session(library.open(library.book(name)), settings)

    return opener


def library_roots(path: str) -> tuple[Path, ...]:
    """The library a command names: one folder (InputError for anything else)."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise InputError(f"{path}: a library is a folder of books (or a Calibre library); no such folder")
    return (root,)
