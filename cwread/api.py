"""The public API: what the CLI and scripts call. No terminal knowledge here.

    from cwread import api

    book = api.open_document("novel.txt")
    trace = api.ask(book, api.make_question("Why was the doll pushed?"))
    print(trace.answer, trace.citations)  # None when the text does not determine one

Layers below: pipeline (one question through the method) → agents/packing → backends →
document/segments/retrieval → cache/errors. The records a run returns are in
`cwread.records`; the eval harness (`cwread.eval`) builds on the pipeline's stages.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from cwread import pipeline
from cwread.backends.select import (
    BackendSettings,
    Selection,
    model_advice,
    select_backends,
    serving_notes,
    with_call_cache,
)
from cwread.document import Document, Paragraph, load_document, parse_paragraph_spec
from cwread.embedders import DEFAULT_EMBEDDER, load_embedder, static_model_dir
from cwread.errors import InputError, ModelError
from cwread.progress import Progress
from cwread.records import (
    AnswerSettings,
    DoctorReport,
    FindResult,
    IndexReport,
    Question,
    Trace,
    make_question,
)
from cwread.retrieval import METHODS, build_queries, open_index, paragraph_scores
from cwread.segments import Budget, build_segments, make_budget

__all__ = [
    "AnswerSettings",
    "BackendSettings",
    "Budget",
    "Document",
    "FindResult",
    "Question",
    "Trace",
    "ask",
    "doctor",
    "find",
    "index_document",
    "make_budget",
    "make_question",
    "open_document",
    "show",
]


def open_document(path: str, encoding: str | None = None) -> Document:
    """Read a text file ("-" for stdin) into numbered paragraphs."""
    return load_document(path, encoding=encoding)


def show(document: Document, spec: str) -> list[Paragraph]:
    """The paragraphs named by `spec`: "12", "10-14" or "3,7,10-12" (InputError if invalid)."""
    return [document.paragraph(pid) for pid in parse_paragraph_spec(spec, len(document))]


def index_document(
    document: Document, embedder: str = DEFAULT_EMBEDDER, progress: Progress | None = None
) -> IndexReport:
    """Build (or verify) the cached indexes of `document`."""
    from cwread.retrieval import document_cache_dir

    t0 = time.perf_counter()
    index = open_index(document, load_embedder(embedder), progress)
    return IndexReport(
        paragraphs=len(document),
        built=tuple(index.built),
        seconds=time.perf_counter() - t0,
        cache_dir=str(document_cache_dir(document)),
        embedder=embedder,
    )


def find(
    document: Document,
    question: Question,
    budget: Budget | None = None,
    embedder: str = DEFAULT_EMBEDDER,
    retrieval: str = "fused",
    progress: Progress | None = None,
) -> FindResult:
    """Retrieve and segment: every paragraph lands in one ranked segment. `retrieval` ranks
    paragraphs by "fused" (BM25 and the dense `embedder`, by reciprocal rank), "bm25" or "dense"."""
    if retrieval not in METHODS:
        raise InputError(f"unknown retrieval method {retrieval!r}; choose one of: {', '.join(METHODS)}")
    budget = budget or make_budget()
    if retrieval == "bm25":
        embedder = "none"
    t0 = time.perf_counter()
    index = open_index(document, load_embedder(embedder), progress)
    t1 = time.perf_counter()
    scores = paragraph_scores(index, build_queries(question.text, question.options or None), retrieval)
    segments = build_segments([len(p.text) for p in document.paragraphs], scores.tolist(), budget)
    t2 = time.perf_counter()
    return FindResult(
        document=document,
        question=question,
        budget=budget,
        method=retrieval,
        embedder=embedder,
        segments=tuple(segments),
        paragraph_scores=tuple(scores.tolist()),
        timings={"index": round(t1 - t0, 4), "retrieve": round(t2 - t1, 4)},
    )


def ask(
    document: Document,
    question: Question,
    *,
    settings: BackendSettings | None = None,
    selection: Selection | None = None,
    answering: AnswerSettings | None = None,
    use_cache: bool = True,
    budget: Budget | None = None,
    retrieval: str = "fused",
    embedder: str = DEFAULT_EMBEDDER,
    progress: Progress | None = None,
    notice: Callable[[str], None] | None = None,
) -> Trace:
    """Answer a question (or verify a claim) about `document` with quoted paragraphs.

    Backends come from `selection` if given, else from `settings` (auto by default), behind
    cwread's call cache unless `use_cache` is False. `answering` says how the answer is
    given (see AnswerSettings); `notice` hears which backend runs and what a small model
    changes. The Trace holds the answer (None if no reply parsed, or the quotes do not
    support it; `Trace.failure` says why) and every step, with what was skipped and why.
    """
    answering = answering or AnswerSettings()
    if selection is None:  # first: a bad setting or a missing server is told before any work
        selection = select_backends(settings or BackendSettings())
    found = find(document, question, budget, embedder, retrieval, progress)
    if notice:
        notice(selection.why)
        _notice_small_model(question, answering, selection, notice)
    if use_cache:
        selection = with_call_cache(selection)
    return pipeline.answer(found, selection, answering, progress=progress)


def _notice_small_model(
    question: Question, answering: AnswerSettings, selection: Selection, notice: Callable[[str], None]
) -> None:
    """What a model too small to write or judge changes, said before the answer."""
    interpreter = selection.interpreter
    mode = pipeline.resolve_answer_mode(answering.answer_mode, interpreter)
    if question.kind == "open" and answering.answer_mode == "auto" and mode == "extractive":
        notice("answers extractively: the model is too small to write them (--answer generative to override)")
    if question.kind != "open" and answering.judge_anyway and interpreter.capabilities.small:
        # asked for anyway: say how little the verdict is worth
        notice(
            "the model is too small to judge options or claims: its verdict is near chance "
            "(cwread doctor says how to run one that reads)"
        )


def doctor(settings: BackendSettings | None = None) -> DoctorReport:
    """Which backend, models and embedder `ask` would use, and what is missing."""
    from cwread.cache import cache_root
    from cwread.reading import reading_note

    finder = interpreter = why = error = None
    notes: list[str] = []
    selection = None
    try:
        selection = select_backends(settings or BackendSettings())
        finder = f"{selection.finder.name}:{selection.finder.model}"
        interpreter = f"{selection.interpreter.name}:{selection.interpreter.model}"
        why = selection.why
        notes = serving_notes(selection)
        if pipeline.finder_skip_reason("auto", selection.finder) is None:  # else no Finder call is made
            notes.append(reading_note(selection.finder))
        for backend in {id(b): b for b in (selection.finder, selection.interpreter)}.values():
            verdict = backend.verify()  # a truncated GGUF passes every check but loading it
            if verdict is not None:
                notes.append(f"{backend.model}: {verdict}")
    except ModelError as exc:  # an input error (a bad setting) still propagates: exit 2
        error = str(exc)
    return DoctorReport(
        cache=str(cache_root()),
        finder=finder,
        interpreter=interpreter,
        why=why,
        backend_error=error,
        embedder=DEFAULT_EMBEDDER,
        embedder_built=(static_model_dir() / "embeddings.npy").is_file(),
        notes=tuple(notes),
        advice=tuple(model_advice(selection)),
    )
