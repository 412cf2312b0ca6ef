"""One question through the method: segments → Finder → packet → Interpreter → self-check."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from cwread import agents
from cwread.backends import Backend, GenerationRequest
from cwread.document import Document
from cwread.packing import Packet, Verdict, pack
from cwread.segments import Budget, Segment

Progress = Callable[[str, int, int], None]
TOKEN_MARGIN = 0.15  # our token counts are estimates for models whose tokenizer we cannot reach


@dataclass(frozen=True)
class AgentCall:
    """One Interpreter or self-check call, after parsing (and a retry if the first failed)."""

    answer: str | None
    reason: str
    raw: str
    cited: tuple[int, ...]
    dropped: tuple[int, ...]
    parsed_first_try: bool
    problem: str | None
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    cached: bool


@dataclass
class Trace:
    """Everything one question produced, for the Rich view, `--json` and the eval harness."""

    document: Document
    question: str
    kind: str
    options: dict[str, str]
    budget: Budget
    method: str
    embedder: str
    segments: list[Segment]
    verdicts: list[Verdict]
    packet: Packet
    interpreter: AgentCall | None
    self_check: AgentCall | None
    self_check_triggered: bool
    models: dict[str, str]
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def final(self) -> AgentCall | None:
        """The answer that stands: the self-check's when it parsed, else the first one."""
        if self.self_check is not None and self.self_check.answer is not None:
            return self.self_check
        return self.interpreter

    @property
    def answer(self) -> str | None:
        return self.final.answer if self.final else None

    @property
    def reason(self) -> str:
        return self.final.reason if self.final else ""

    @property
    def citations(self) -> list[int]:
        return list(self.final.cited) if self.final else []

    def tokens(self) -> dict[str, int]:
        calls = [v for v in self.verdicts] + [c for c in (self.interpreter, self.self_check) if c]
        return {
            "prompt": sum(c.prompt_tokens for c in calls),
            "completion": sum(c.completion_tokens for c in calls),
            "finder_prompt": sum(v.prompt_tokens for v in self.verdicts),
        }


@dataclass(frozen=True)
class _Attempts:
    parsed: agents.ParsedReply
    raw: str
    first_try: bool
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    cached: bool


def _generate_parsed(
    backend: Backend,
    make_request: Callable[[bool], GenerationRequest],
    parse: Callable[[str], agents.ParsedReply],
) -> _Attempts:
    """Call, parse, and on an unreadable reply call once more with a firmer instruction."""
    prompt_tokens = completion_tokens = 0
    seconds = 0.0
    cached = True
    for retry in (False, True):
        generation = backend.generate(make_request(retry))
        prompt_tokens += generation.prompt_tokens
        completion_tokens += generation.completion_tokens
        seconds += generation.seconds
        cached = cached and generation.cached
        parsed = parse(generation.text)
        if parsed.ok:
            break
    return _Attempts(
        parsed, generation.text, parsed.ok and not retry, prompt_tokens, completion_tokens, seconds, cached
    )


def judge_segment(
    backend: Backend, document: Document, segment: Segment, kind: str, question: str, options: dict[str, str]
) -> Verdict:
    """The Finder on one segment: one retry with a firmer instruction, then keep it (recall)."""
    text = document.span_text(segment.start, segment.end)
    result = _generate_parsed(
        backend,
        lambda retry: agents.finder_request(
            kind, question, options, segment.start, segment.end, text, retry=retry
        ),
        lambda raw: agents.parse_reply(raw, kind, finder=True),
    )
    parsed = result.parsed
    cited, dropped = agents.split_citations(parsed.reason, set(segment.ids))
    return Verdict(
        segment=segment,
        decision=parsed.answer if parsed.ok else "YES",
        reason=parsed.reason if parsed.ok else f"(unparseable Finder reply kept: {parsed.problem})",
        cited=tuple(cited),
        dropped=tuple(dropped),
        parsed_first_try=result.first_try,
        kept_on_failure=not parsed.ok,
        raw=result.raw,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        seconds=result.seconds,
        cached=result.cached,
    )


def run_finder(
    backend: Backend,
    document: Document,
    segments: list[Segment],
    kind: str,
    question: str,
    options: dict[str, str],
    workers: int | None = None,
    progress: Progress | None = None,
) -> list[Verdict]:
    """Judge `segments` (concurrently where the backend serves parallel calls), in their order."""
    total = len(segments)
    if progress:
        progress("finder", 0, total)
    workers = max(1, min(workers or backend.concurrency, total or 1))
    if workers == 1:
        verdicts = []
        for i, seg in enumerate(segments, start=1):
            verdicts.append(judge_segment(backend, document, seg, kind, question, options))
            if progress:
                progress("finder", i, total)
        return verdicts
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [
            pool.submit(judge_segment, backend, document, s, kind, question, options) for s in segments
        ]
        verdicts = []
        for i, future in enumerate(futures, start=1):
            verdicts.append(future.result())
            if progress:
                progress("finder", i, total)
        return verdicts


def _call_interpreter(
    backend: Backend,
    kind: str,
    question: str,
    options: dict[str, str],
    packet: Packet,
    previous: tuple[str, str] | None = None,
) -> AgentCall:
    labels = list(options) if options else None
    result = _generate_parsed(
        backend,
        lambda retry: agents.interpreter_request(
            kind, question, options, packet.evidence(), previous=previous, retry=retry
        ),
        lambda raw: agents.parse_reply(raw, kind, labels),
    )
    parsed = result.parsed
    cited, dropped = agents.split_citations(parsed.reason, set(packet.ids))
    return AgentCall(
        answer=parsed.answer,
        reason=parsed.reason,
        raw=result.raw,
        cited=tuple(cited),
        dropped=tuple(dropped),
        parsed_first_try=result.first_try,
        problem=parsed.problem,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        seconds=result.seconds,
        cached=result.cached,
    )


def prompt_fits(backend: Backend, request: GenerationRequest) -> bool:
    """Whether the request's prompt plus its answer fits the model's context (with margin)."""
    prompt = "\n".join(content for _, content in request.messages)
    needed = backend.count_tokens(prompt) * (1 + TOKEN_MARGIN) + request.max_tokens + 32
    return needed <= backend.context_size()


def packet_fits(
    backend: Backend, kind: str, question: str, options: dict[str, str], evidence: list[tuple[int, str]]
) -> bool:
    """Whether an Interpreter prompt over `evidence` fits, sized for the longer self-check."""
    request = agents.interpreter_request(kind, question, options, evidence, previous=("X", "x" * 600))
    return prompt_fits(backend, request)


def answer(
    document: Document,
    question: str,
    kind: str,
    options: dict[str, str],
    segments: list[Segment],
    budget: Budget,
    finder: Backend,
    interpreter: Backend,
    method: str = "fused",
    embedder: str = "",
    workers: int | None = None,
    self_check: bool | None = None,
    progress: Progress | None = None,
    verdicts: list[Verdict] | None = None,
    packet: Packet | None = None,
) -> Trace:
    """Run the Finder over the first `budget.read` segments, pack, interpret, self-check.

    Ablations and baselines enter midway: given `verdicts`, the Finder is skipped; given a
    `packet`, packing is skipped too.
    """
    t0 = time.perf_counter()
    if verdicts is None and packet is None:
        verdicts = run_finder(
            finder, document, segments[: budget.read], kind, question, options, workers, progress
        )
    verdicts = verdicts or []
    t1 = time.perf_counter()
    if packet is None:
        packet = pack(
            document,
            verdicts,
            budget,
            lambda evidence: packet_fits(interpreter, kind, question, options, evidence),
        )
    if progress:
        progress("interpreter", 0, 1)
    first = _call_interpreter(interpreter, kind, question, options, packet)
    t2 = time.perf_counter()
    triggered = agents.needs_self_check(kind, question) if self_check is None else self_check
    checked = None
    if triggered and first.answer is not None:
        if progress:
            progress("self-check", 0, 1)
        checked = _call_interpreter(
            interpreter, kind, question, options, packet, previous=(first.answer, first.reason)
        )
    t3 = time.perf_counter()
    return Trace(
        document=document,
        question=question,
        kind=kind,
        options=options,
        budget=budget,
        method=method,
        embedder=embedder,
        segments=segments,
        verdicts=verdicts,
        packet=packet,
        interpreter=first,
        self_check=checked,
        self_check_triggered=triggered,
        models={
            "finder": f"{finder.name}:{finder.model}",
            "interpreter": f"{interpreter.name}:{interpreter.model}",
        },
        timings={
            "finder": round(t1 - t0, 3),
            "interpreter": round(t2 - t1, 3),
            "self_check": round(t3 - t2, 3),
        },
    )
