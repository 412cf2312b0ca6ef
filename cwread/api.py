"""The public API: what the CLI, the eval harness and scripts call. No terminal knowledge here."""

from __future__ import annotations

import re
import string
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from cwread import pipeline
from cwread.backends.select import BackendSettings, Selection, select_backends, with_call_cache
from cwread.document import Document, Paragraph, load_document
from cwread.embedders import DEFAULT_EMBEDDER, load_embedder
from cwread.errors import InputError
from cwread.pipeline import Trace
from cwread.retrieval import METHODS, Index, IndexProgress, build_queries, open_index, paragraph_scores
from cwread.segments import Budget, Segment, build_segments, make_budget

__all__ = [
    "BackendSettings",
    "FindResult",
    "IndexReport",
    "Trace",
    "ask",
    "find",
    "index_document",
    "make_budget",
    "open_document",
    "parse_options",
    "parse_paragraph_spec",
    "show",
]


def open_document(path: str, encoding: str | None = None) -> Document:
    """Read a text file ("-" for stdin) into numbered paragraphs."""
    return load_document(path, encoding=encoding)


def parse_paragraph_spec(spec: str, count: int) -> list[int]:
    """Ids named by "12", "10-14" or "3,7,10-12" (1-based, inclusive); InputError if invalid."""
    ids: list[int] = []
    for part in spec.replace(" ", "").split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise InputError(f"bad paragraph range {part!r}: use N, N-M or a comma list like 3,7,10-12")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if lo > hi:
            raise InputError(f"bad paragraph range {part!r}: the start is after the end")
        for pid in (lo, hi):
            if not 1 <= pid <= count:
                raise InputError(
                    f"paragraph {pid} is out of range: the text has {count} paragraphs (1-{count})"
                )
        ids.extend(range(lo, hi + 1))
    return ids


def show(document: Document, spec: str) -> list[Paragraph]:
    """The paragraphs named by `spec` (see `parse_paragraph_spec`)."""
    return [document.paragraph(pid) for pid in parse_paragraph_spec(spec, len(document))]


def parse_options(raw: list[str] | None) -> dict[str, str]:
    """Answer options from "A=text" strings (or bare texts, lettered A, B, C... in order)."""
    options: dict[str, str] = {}
    for item in raw or []:
        m = re.fullmatch(r"\s*\(?([A-Za-z])\)?\s*[=:)]\s*(.*)", item, flags=re.S)
        if m:
            label, text = m.group(1).upper(), m.group(2).strip()
        else:
            label = next((c for c in string.ascii_uppercase if c not in options), None)
            text = item.strip()
            if label is None:
                raise InputError("too many options: at most 26")
        if not text:
            raise InputError(f'option {label} is empty: write it as -o "{label}=text"')
        if label in options:
            raise InputError(f"option {label} is given twice")
        options[label] = text
    if len(options) == 1:
        raise InputError("a multiple-choice question needs at least two options")
    return dict(sorted(options.items()))


@dataclass(frozen=True)
class IndexReport:
    paragraphs: int
    built: list[str]
    seconds: float
    cache_dir: str
    embedder: str


def index_document(
    document: Document, embedder: str = DEFAULT_EMBEDDER, progress: IndexProgress | None = None
) -> IndexReport:
    """Build (or verify) the cached indexes of `document`."""
    from cwread.retrieval import document_cache_dir

    t0 = time.perf_counter()
    index = _open(document, embedder, progress)
    return IndexReport(
        paragraphs=len(document),
        built=index.built,
        seconds=time.perf_counter() - t0,
        cache_dir=str(document_cache_dir(document)),
        embedder=embedder,
    )


def _open(document: Document, embedder: str, progress: IndexProgress | None) -> Index:
    report = (lambda done, total: progress("model", done, total)) if progress else None
    return open_index(document, load_embedder(embedder, report), progress)


@dataclass(frozen=True)
class FindResult:
    """Ranked candidate segments for a question, with what produced them."""

    document: Document
    question: str
    options: dict[str, str]
    budget: Budget
    method: str
    embedder: str
    segments: list[Segment]
    paragraph_scores: list[float]
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def anchors(self) -> list[int]:
        return sorted(a for s in self.segments for a in s.anchors)


def find(
    document: Document,
    question: str,
    options: dict[str, str] | None = None,
    budget: Budget | None = None,
    embedder: str = DEFAULT_EMBEDDER,
    method: str = "fused",
    progress: IndexProgress | None = None,
) -> FindResult:
    """Retrieve and segment: every paragraph lands in one ranked segment."""
    question = (question or "").strip()
    if not question:
        raise InputError("the question is empty")
    if method not in METHODS:
        raise InputError(f"unknown retrieval method {method!r}; choose one of: {', '.join(METHODS)}")
    budget = budget or make_budget()
    options = options or {}
    if method == "bm25":
        embedder = "none"
    t0 = time.perf_counter()
    index = _open(document, embedder, progress)
    t1 = time.perf_counter()
    scores = paragraph_scores(index, build_queries(question, options), method)
    segments = build_segments([len(p.text) for p in document.paragraphs], scores.tolist(), budget)
    t2 = time.perf_counter()
    return FindResult(
        document=document,
        question=question,
        options=options,
        budget=budget,
        method=method,
        embedder=embedder,
        segments=segments,
        paragraph_scores=scores.tolist(),
        timings={"index": round(t1 - t0, 4), "retrieve": round(t2 - t1, 4)},
    )


def question_kind(options: dict[str, str] | None, claim: bool = False) -> str:
    """ "claim" for verification, "mcq" with options, else "open"."""
    if claim:
        return "claim"
    return "mcq" if options else "open"


def ask(
    document: Document,
    question: str,
    options: dict[str, str] | None = None,
    *,
    claim: bool = False,
    budget: Budget | None = None,
    embedder: str = DEFAULT_EMBEDDER,
    method: str = "fused",
    backends: BackendSettings | None = None,
    selection: Selection | None = None,
    use_cache: bool = True,
    self_check: bool | None = None,
    progress: IndexProgress | None = None,
    notice: Callable[[str], None] | None = None,
) -> Trace:
    """Answer a question (or verify a claim) about `document` with cited paragraphs.

    Backends come from `selection` if given, else from `backends` settings (auto by default).
    The Trace holds the answer (None if the Interpreter's reply never parsed) and every step.
    """
    kind = question_kind(options, claim)
    budget = budget or make_budget()
    found = find(document, question, options if kind == "mcq" else None, budget, embedder, method, progress)
    if selection is None:
        selection = select_backends(backends or BackendSettings())
    if notice:
        notice(selection.why)
    if use_cache:
        selection = with_call_cache(selection)
    finder, interpreter = selection.finder, selection.interpreter
    workers = backends.workers if backends else None
    trace = pipeline.answer(
        document,
        found.question,
        kind,
        options if kind == "mcq" else {},
        found.segments,
        budget,
        finder,
        interpreter,
        method=method,
        embedder=found.embedder,
        workers=workers,
        self_check=self_check,
        progress=progress,
    )
    trace.timings = {**found.timings, **trace.timings}
    trace.timings["total"] = round(sum(trace.timings.values()), 3)
    return trace
