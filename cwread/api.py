"""The public API: what the CLI, the eval harness and scripts call. No terminal knowledge here.

Layers below: pipeline (one question through the method) → agents/packing → backends →
document/segments/retrieval → cache/errors. The records it returns are in `cwread.records`.
"""

from __future__ import annotations

import re
import string
import time
from collections.abc import Callable
from dataclasses import replace

from cwread import extractive, grounding, pipeline
from cwread.backends import Backend
from cwread.backends.select import BackendSettings, Selection, select_backends, with_call_cache
from cwread.cache import check_output_path, write_output_file
from cwread.document import Document, Paragraph, load_document
from cwread.embedders import DEFAULT_EMBEDDER, load_embedder, static_model_dir
from cwread.errors import InputError, ModelError
from cwread.packing import pack_segments
from cwread.records import (
    ANSWER_MODES,
    KINDS,
    NO_ANSWER,
    Answer,
    DoctorReport,
    FindResult,
    IndexReport,
    Packet,
    PacketItem,
    Question,
    Trace,
    Verdict,
)
from cwread.retrieval import METHODS, Index, IndexProgress, build_queries, open_index, paragraph_scores
from cwread.segments import Budget, Segment, build_segments, make_budget

__all__ = [
    "KINDS",
    "BackendSettings",
    "Budget",
    "DoctorReport",
    "Document",
    "FindResult",
    "IndexReport",
    "Packet",
    "Question",
    "Selection",
    "Trace",
    "ask",
    "backends",
    "check_output_path",
    "doctor",
    "extractive_trace",
    "find",
    "fit_prefix",
    "fits",
    "index_document",
    "interpret_packet",
    "judge_segments",
    "make_budget",
    "make_question",
    "open_document",
    "packet_of",
    "parse_options",
    "parse_paragraph_spec",
    "rank_paragraphs",
    "resolve_answer_mode",
    "run_pipeline",
    "segments_packet",
    "sentence_ranker",
    "show",
    "trace_without_answer",
    "write_output_file",
]


MAX_QUESTION_CHARS = 4000  # a question with its options: about 1,000 tokens of an 8k context


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
    lettered = [re.fullmatch(r"\s*\(?([A-Za-z])\)?\s*[=:)]\s*(.*)", item, flags=re.S) for item in raw or []]
    for item in raw or []:
        if re.match(r"\s*[=:]", item):
            raise InputError(f'option needs LETTER=TEXT: {item!r} has no letter (e.g. -o "A=text")')
    if any(lettered) and not all(lettered):
        bare = next(item for item, m in zip(raw or [], lettered, strict=True) if not m)
        raise InputError(
            f'option needs LETTER=TEXT: {bare!r} has no letter while other options do (e.g. -o "A=text")'
        )
    for item, m in zip(raw or [], lettered, strict=True):
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


def make_question(
    text: str, options: list[str] | dict[str, str] | None = None, *, claim: bool = False
) -> Question:
    """A validated Question: "claim" to verify, "mcq" with options ("A=text" strings or a
    dict), else "open". InputError for an empty text or bad options."""
    text = (text or "").strip()
    what = "claim" if claim else "question"
    if not text:
        raise InputError(f"the {what} is empty")
    parsed = {} if claim else dict(options) if isinstance(options, dict) else parse_options(options)
    size = len(text) + sum(len(v) for v in parsed.values())
    if size > MAX_QUESTION_CHARS:  # it goes to the model with every segment: refuse before any call
        raise InputError(
            f"the {what}{' and its options run' if parsed else ' runs'} to {size:,} characters; cwread takes "
            f"up to {MAX_QUESTION_CHARS:,} (it is sent with every segment the Finder reads)"
        )
    if claim:
        return Question(text, "claim")
    return Question(text, "mcq", parsed) if parsed else Question(text, "open")


def index_document(
    document: Document, embedder: str = DEFAULT_EMBEDDER, progress: IndexProgress | None = None
) -> IndexReport:
    """Build (or verify) the cached indexes of `document`."""
    from cwread.retrieval import document_cache_dir

    t0 = time.perf_counter()
    index = _open(document, embedder, progress)
    return IndexReport(
        paragraphs=len(document),
        built=tuple(index.built),
        seconds=time.perf_counter() - t0,
        cache_dir=str(document_cache_dir(document)),
        embedder=embedder,
    )


def _open(document: Document, embedder: str, progress: IndexProgress | None) -> Index:
    return open_index(document, load_embedder(embedder), progress)


def find(
    document: Document,
    question: Question,
    budget: Budget | None = None,
    embedder: str = DEFAULT_EMBEDDER,
    method: str = "fused",
    progress: IndexProgress | None = None,
) -> FindResult:
    """Retrieve and segment: every paragraph lands in one ranked segment."""
    if method not in METHODS:
        raise InputError(f"unknown retrieval method {method!r}; choose one of: {', '.join(METHODS)}")
    budget = budget or make_budget()
    if method == "bm25":
        embedder = "none"
    t0 = time.perf_counter()
    index = _open(document, embedder, progress)
    t1 = time.perf_counter()
    scores = paragraph_scores(index, build_queries(question.text, question.options or None), method)
    segments = build_segments([len(p.text) for p in document.paragraphs], scores.tolist(), budget)
    t2 = time.perf_counter()
    return FindResult(
        document=document,
        question=question,
        budget=budget,
        method=method,
        embedder=embedder,
        segments=tuple(segments),
        paragraph_scores=tuple(scores.tolist()),
        timings={"index": round(t1 - t0, 4), "retrieve": round(t2 - t1, 4)},
    )


def rank_paragraphs(
    document: Document, question: Question, retriever: str, embedder: str = DEFAULT_EMBEDDER
) -> list[float]:
    """One retriever's score for every paragraph ("bm25", "dense" or "fused")."""
    spec = "none" if retriever == "bm25" else embedder
    index = open_index(document, load_embedder(spec))
    return paragraph_scores(index, build_queries(question.text, question.options or None), retriever).tolist()


def backends(settings: BackendSettings | None = None, use_cache: bool = True) -> Selection:
    """The Finder's and the Interpreter's backends for `settings` (auto by default), behind
    cwread's call cache unless `use_cache` is False."""
    selection = select_backends(settings or BackendSettings())
    return with_call_cache(selection) if use_cache else selection


def ask(
    document: Document,
    question: Question,
    *,
    budget: Budget | None = None,
    embedder: str = DEFAULT_EMBEDDER,
    method: str = "fused",
    settings: BackendSettings | None = None,
    selection: Selection | None = None,
    use_cache: bool = True,
    self_check: bool | None = None,
    progress: IndexProgress | None = None,
    notice: Callable[[str], None] | None = None,
    answer_mode: str = "auto",
    finder: str = "auto",
    judge_anyway: bool = False,
) -> Trace:
    """Answer a question (or verify a claim) about `document` with quoted paragraphs.

    Backends come from `selection` if given, else from `settings` (auto by default).
    `answer_mode`: generative, extractive, or auto (extractive for a model too small to
    write). `finder`: auto (skip a Finder measured to keep nearly everything), on or off.
    A model too small to judge gives options and claims no verdict, only the best evidence,
    unless `judge_anyway`. The Trace holds the answer (None if no reply parsed, or the
    quotes do not support it) and every step, with what was skipped and why.
    """
    if selection is None:  # first: a bad setting or a missing server is told before any work
        selection = select_backends(settings or BackendSettings())
    found = find(document, question, budget, embedder, method, progress)
    if notice:
        notice(selection.why)
    mode = resolve_answer_mode(answer_mode, selection)
    if notice and question.kind == "open" and answer_mode == "auto" and mode == "extractive":
        notice("answers extractively: the model is too small to write them (--answer generative to override)")
    small = getattr(selection.interpreter, "small", False)
    judge = judge_anyway or not small
    if notice and question.kind != "open" and judge and small:
        # asked for anyway: say how little the verdict is worth
        notice(
            "the model is too small to judge options or claims: its verdict is near chance "
            "(cwread doctor says how to run one that reads)"
        )
    if use_cache:
        selection = with_call_cache(selection)
    workers = settings.workers if settings else None
    trace = run_pipeline(
        question,
        found,
        selection,
        self_check=self_check,
        workers=workers,
        progress=progress,
        answer_mode=mode,
        finder=finder,
        judge=judge,
    )
    timings = {**found.timings, **trace.timings}
    timings["total"] = round(sum(timings.values()), 3)
    return replace(trace, timings=timings)


def run_pipeline(
    question: Question,
    found: FindResult,
    selection: Selection,
    *,
    self_check: bool | None = None,
    workers: int | None = None,
    progress: IndexProgress | None = None,
    packet: Packet | None = None,
    answer_mode: str = "generative",
    finder: str = "auto",
    judge: bool = True,
) -> Trace:
    """The method on retrieved segments: Finder → packet → Interpreter → self-check (τ(q)
    decides when `self_check` is None). Given a `packet`, the Finder and packing are skipped;
    `finder` and `judge` as in `ask`."""
    return pipeline.answer(
        found.document,
        question,
        found.segments,
        found.budget,
        selection.finder,
        selection.interpreter,
        method=found.method,
        embedder=found.embedder,
        workers=workers,
        self_check=self_check,
        progress=progress,
        packet=packet,
        answer_mode=answer_mode,
        # sentences are ranked for open answers and for the evidence shown in place of a verdict
        rank=sentence_ranker(found) if question.kind == "open" or not judge else None,
        skip_finder=finder_skip_reason(finder, selection.finder),
        judge=judge,
    )


FINDER_CHOICES = ("auto", "on", "off")
NO_VERDICT = (
    f"{pipeline.UNJUDGED}; the best evidence is shown. Serve a model that reads (cwread doctor "
    "says how), or pass --judge-anyway"
)


def finder_skip_reason(choice: str, finder: Backend) -> str | None:
    """Why the Finder is not run (None: it runs): `choice` off, or auto with a Finder measured
    to keep nearly every segment it reads, whose calls could not change the answer."""
    if choice not in FINDER_CHOICES:
        raise InputError(f"--finder must be one of {', '.join(FINDER_CHOICES)}, not {choice!r}")
    if choice == "off":
        return "--finder off: every segment read is taken as kept"
    if choice == "auto" and getattr(finder, "keeps_nearly_all", False):
        return (
            f"{finder.model} keeps nearly every segment it reads (99.7% on FairytaleQA dev), so its "
            "calls could not change the answer; every segment read is taken as kept (--finder on runs it)"
        )
    return None


def sentence_ranker(found: FindResult) -> grounding.Rank:
    """How extractive answers rank sentences for this retrieval: by the book's rarity of the
    question's words and by the retrieval's embedder (see cwread.extractive)."""
    return extractive.sentence_ranker(found.document, load_embedder(found.embedder))


def resolve_answer_mode(mode: str, selection: Selection) -> str:
    """One of ANSWER_MODES; "auto" is extractive for a model too small to write, else the
    model's words with the best-fitting sentence when its quotes do not cover them."""
    if mode not in (*ANSWER_MODES, "auto"):
        raise InputError(f"unknown answer mode {mode!r}; choose one of: {', '.join((*ANSWER_MODES, 'auto'))}")
    if mode != "auto":
        return mode
    return "extractive" if getattr(selection.interpreter, "small", False) else "generative-or-extractive"


def judge_segments(
    finder: Backend,
    document: Document,
    segments: list[Segment] | tuple[Segment, ...],
    question: Question,
    budget: Budget,
    workers: int | None = None,
) -> tuple[Verdict, ...]:
    """The Finder alone on `segments`, in their order, as `budget` has it read and reply."""
    return pipeline.run_finder(
        finder,
        document,
        segments,
        question,
        workers,
        keep_threshold=budget.keep_threshold,
        reading=pipeline.reading_budget(budget, finder),
        decision_first=budget.finder_reply == "decision-first",
    )


def interpret_packet(
    question: Question,
    found: FindResult,
    packet: Packet,
    selection: Selection,
    self_check: bool | None = False,
    answer_mode: str = "generative",
) -> Trace:
    """The Interpreter (and its self-check, if asked; None: when τ(q)) on a given packet."""
    return run_pipeline(
        question, found, selection, self_check=self_check, packet=packet, answer_mode=answer_mode
    )


def trace_without_answer(found: FindResult, verdicts: tuple[Verdict, ...] = ()) -> Trace:
    """The record of a run that stops before the Interpreter: retrieval, and the Finder's
    verdicts if it ran."""
    return Trace(
        document=found.document,
        question=found.question,
        budget=found.budget,
        method=found.method,
        embedder=found.embedder,
        segments=found.segments,
        verdicts=verdicts,
        packet=Packet(items=()),
        interpreter=None,
        self_check=None,
        self_check_triggered=False,
        models={},
    )


def packet_of(document: Document, ids: list[int]) -> Packet:
    """A packet of exactly these paragraphs, in story order, with no Finder reasons."""
    return Packet(items=tuple(PacketItem(pid, document.paragraph(pid).text, "") for pid in sorted(ids)))


def fits(interpreter: Backend, question: Question, document: Document, ids: list[int]) -> bool:
    """Whether an Interpreter prompt (and its self-check) over these paragraphs fits the context."""
    return pipeline.packet_fits(interpreter, question, [(p, document.paragraph(p).text) for p in ids])


def fit_prefix(interpreter: Backend, question: Question, document: Document) -> list[int]:
    """The longest run of paragraphs from the start whose Interpreter prompt fits the context."""
    from cwread.agents import interpreter_request

    lo, hi = 0, len(document)
    while lo < hi:  # binary search for the largest prefix that fits
        mid = (lo + hi + 1) // 2
        evidence = [(p.id, p.text) for p in document.paragraphs[:mid]]
        if pipeline.prompt_fits(interpreter, interpreter_request(question, evidence)):
            lo = mid
        else:
            hi = mid - 1
    return [p.id for p in document.paragraphs[:lo]]


def segments_packet(
    document: Document,
    segments: list[Segment],
    budget: Budget,
    interpreter: Backend | None,
    question: Question,
) -> Packet:
    """Every segment packed whole (no Finder), under B_c and, given one, the Interpreter's context."""
    fits = (lambda evidence: pipeline.packet_fits(interpreter, question, evidence)) if interpreter else None
    return pack_segments(document, segments, budget, fits)


def extractive_trace(question: Question, found: FindResult, packet: Packet, ranked: bool = False) -> Trace:
    """No model: the packet sentence sharing most words with the question is the answer
    (open questions; other kinds get none). `ranked`: the answer the pipeline's extractive
    mode would give from this packet instead (see cwread.extractive)."""
    chosen = None
    if question.kind == "open" and ranked:
        chosen = extractive.best_answer(question.text, packet.evidence(), sentence_ranker(found))
    elif question.kind == "open":
        best = grounding.best_sentence(question.text, packet.evidence())
        chosen = (best.text, best) if best else None
    if chosen is None:
        return replace(trace_without_answer(found), packet=packet, outcome=NO_ANSWER)
    text, quote = chosen
    outcome = Answer(text, text, "extractive", True, (quote,))
    return replace(trace_without_answer(found), packet=packet, outcome=outcome)


def doctor(settings: BackendSettings | None = None) -> DoctorReport:
    """Which backend, models and embedder `ask` would use, and what is missing."""
    from cwread.cache import cache_root

    finder = interpreter = why = error = None
    notes: list[str] = []
    selection = None
    try:
        selection = select_backends(settings or BackendSettings())
        finder = f"{selection.finder.name}:{selection.finder.model}"
        interpreter = f"{selection.interpreter.name}:{selection.interpreter.model}"
        why = selection.why
        notes = _serving_notes(selection)
        if finder_skip_reason("auto", selection.finder) is None:  # else no Finder call is made
            notes.append(_reading_note(selection.finder))
        for backend in {id(b): b for b in (selection.finder, selection.interpreter)}.values():
            verify = getattr(backend, "verify", None)
            if verify is not None:  # a truncated GGUF passes every check but loading it
                notes.append(f"{backend.model}: {verify()}")
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
        advice=tuple(_model_advice(selection)),
    )


def _reading_note(finder: Backend) -> str:
    """What `--read-tokens auto` gives the Finder on this machine."""
    from cwread.reading import FINDER_SECONDS, stored_rate

    rate = stored_rate(finder)
    if rate is None:
        return (
            f"the Finder's reading rate for {finder.model} is not measured yet: the first question "
            f"measures it (--read-tokens auto reads about {FINDER_SECONDS:.0f} s)"
        )
    return (
        f"the Finder reads {rate:,.0f} prompt tokens/s with {finder.model} on this machine: "
        f"--read-tokens auto reads about {int(rate * FINDER_SECONDS):,} tokens a question"
    )


def _model_advice(selection: Selection | None) -> list[str]:
    """How to get models that read, when `ask` would run on the tiny embedded one (or none)."""
    from cwread.modelfiles import setup_commands

    if selection is not None and selection.finder.name != "embedded":
        return []
    lines = [
        "The embedded model (SmolLM2-135M) is tiny: it finds and quotes evidence but cannot "
        "write answers. For answers, serve a model that reads with Ollama:",
        *[f"  {command}" for command in setup_commands()],
        "or give --base-url (OPENAI_BASE_URL) of an OpenAI-compatible server "
        "(llama.cpp's llama-server, vLLM, LM Studio).",
    ]
    return lines


def _serving_notes(selection: Selection) -> list[str]:
    """What the user may want to change about how the chosen server is used."""
    finder = selection.finder
    if finder.name == "ollama":
        return [
            f"Ollama serves one call at a time unless its server runs with OLLAMA_NUM_PARALLEL=N; "
            f"cwread sends {finder.concurrency} Finder call(s) at once (set OLLAMA_NUM_PARALLEL "
            "here to the server's value, or pass --workers)"
        ]
    if finder.name == "openai":
        return [f"the server takes {finder.concurrency} calls at once; cwread sends as many (--workers to change)"]
    return []
