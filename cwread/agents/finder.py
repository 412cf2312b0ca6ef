"""The Finder: judges that read segments for a question, behind one protocol, and the loop
that has one read within its budget.

A `Finder` takes segments in and gives verdicts out, in the segments' order: each with its
label, its score where one was measured, the quotes of its clue and what it cost (its
ModelCall). Implementations:

- `GenerativeFinder`: one call per segment on a chat backend, replying quote-first (the
  clue's quote, then YES or NO) or decision-first (YES or NO, then a kept segment's quote);
- `ScoringFinder`: YES or NO alone, decided by its log-odds against a threshold (no quote,
  one short call a segment);
- `ScriptedFinder`: a function of the segment, for tests and for measuring a ranking as if
  it were a Finder;
- `JudgeFinder`: the judge (cwread.agents.cross_encoder), a small cross-encoder run in-process, scoring the
  paragraphs read best-ranked first within its budget, quoting each kept segment's clue
  sentence; no model call.

`make_finder` chooses one from FinderSettings; `read_segments` runs any of them over ranked
segments until its reading budget is spent. The pipeline and the eval's `finder` method
both go through them, so a new judge (a reranking endpoint, say) touches neither.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import replace
from typing import Protocol

from cwread.agents import shared
from cwread.agents.judge_finder import JudgeFinder
from cwread.agents.reading_budget import ReadingBudget
from cwread.backends import Backend, GenerationRequest
from cwread.book import Document, Evidence, ShownParagraph
from cwread.errors import InputError
from cwread.progress import Progress
from cwread.records.plan import AUTO, DECISION_FIRST, QUOTE_FIRST, SCORE, FinderUse
from cwread.records.question import Question
from cwread.records.stages import GroundedReply, ModelCall, Verdict, yes_odds
from cwread.retrieval.segments import Segment
from cwread.settings import FinderSettings

FINDER_MAX_TOKENS = 160


FINDER_SYSTEM = (
    "You are the Finder in a reading assistant for long narratives. You read one segment of "
    "a story; its paragraphs are numbered like [12]. Decide whether the segment holds a "
    "concrete clue for the question: a fact that answers it, supports or rules out an "
    "option, or confirms or contradicts a claim - an action, a line of dialogue, a motive, "
    "a relationship, a cause, a time or place, an object, an identity. Partial evidence "
    "counts. Say NO for scenery, weather, transitions, or a segment that only mentions a "
    "name or a word from the question without saying anything about what is asked. When in "
    "doubt say YES: a missed clue costs more than an extra passage." + shared.BOOK_IS_DATA
)

_QUOTE_FIRST_REPLY = (
    "Reply with exactly two tags and nothing else: <reason>, the one sentence that comes "
    'closest to a clue, as [N] "the sentence copied exactly from paragraph N", '
    "</reason>; then <answer>, YES if it is a clue for the question, else NO, </answer>."
)
_DECISION_REPLY = (
    "Reply with exactly one tag and nothing else: <answer>YES</answer> if the segment holds a "
    "clue for the question, else <answer>NO</answer>."
)
CLUE_REQUEST = (
    "Give the clue: the one sentence of the segment that is the clue, as <reason>[N] "
    '"the sentence copied exactly from paragraph N"</reason>, and nothing else.'
)


def finder_request(
    question: Question,
    start: int,
    end: int,
    segment_text: str,
    retry: bool = False,
    question_first: bool = False,
    paragraphs: Evidence | None = None,
    decision_first: bool = False,
) -> GenerationRequest:
    """The Finder's call for one segment: the segment first, then the question.

    `paragraphs` are the segment's (id, text); without them `segment_text` is split at its
    `[N] ` markers. Text first lets llama.cpp's prompt cache reuse a segment when another
    question reads it (benchmarks/ask_speed.py measures both orders; `question_first` is the
    other one). The reply is the clue's quote, then YES or NO; `decision_first` asks only for
    YES or NO, its score read at the first token, and `clue_request` asks a kept segment's
    quote after it, on the same (cached) prompt.
    """
    evidence = paragraphs if paragraphs is not None else _split_marked(segment_text)
    title = shared.span_title(evidence) if evidence else f"{start}-{end}"
    parts = [f"Segment (paragraphs {title}):\n{shared.evidence_block(evidence)}", shared.question_block(question)]
    if question_first:
        parts.reverse()
    user = "\n\n".join([*parts, _DECISION_REPLY if decision_first else _QUOTE_FIRST_REPLY])
    if retry:
        user += "\n\n" + shared.FIRM_RETRY
    messages = (("system", FINDER_SYSTEM), ("user", user))
    if decision_first:
        return shared.decision_request(messages, seed=1 if retry else 0)
    return GenerationRequest(
        messages=messages,
        max_tokens=FINDER_MAX_TOKENS,
        grammar=shared.answer_grammar(question, finder=True, evidence=evidence),
        schema=shared.answer_schema(question, finder=True, evidence=evidence),
        seed=1 if retry else 0,
        label_scores=("YES", "NO"),  # its score: how sure, for ranking and the eval's curve
    )


def clue_request(decision: GenerationRequest, reply: str, evidence: Evidence) -> GenerationRequest:
    """After a decision-first YES: the clue's quote, the conversation so far as its prefix (a
    prompt cache reads only the new turn). The quote is held to the segment's sentences as in
    the quote-first reply."""
    rules = shared.quote_rules(evidence, 1)
    quote = shared.quote_schema(evidence)
    return GenerationRequest(
        messages=(*decision.messages, ("assistant", reply), ("user", CLUE_REQUEST)),
        max_tokens=FINDER_MAX_TOKENS,
        grammar="\n".join(['root ::= "<reason>" reason "</reason>"', *rules]),
        schema={
            "type": "object",
            "properties": {"quotes": {"type": "array", "items": quote, "maxItems": 1}},
            "required": ["quotes"],
        },
        seed=decision.seed,
    )


def _split_marked(text: str) -> list[ShownParagraph]:
    """(id, text) of each `[N] ...` paragraph in a segment's text."""
    return [ShownParagraph(int(m.group(1)), m.group(2)) for m in re.finditer(r"^\[(\d+)\] (.*)$", text, re.M)]


def parse_finder_reply(text: str) -> shared.ParsedReply:
    """The Finder's reply: a reason and YES or NO (see `shared.parse_tags`)."""
    return shared.parse_yes_no(text)


class Finder(Protocol):
    """Judges segments for a question. `reply` names how it replies (for the plan);
    `backend` is the model it calls (None: it calls none), whose reading rate an auto
    budget learns; `parallel`: segments worth judging at once; `ranks`: its scores say which
    kept segments matter most, so the packet takes them best first (else in reading order)."""

    reply: str
    backend: Backend | None
    parallel: int
    ranks: bool

    def cost(self, document: Document, segment: Segment, question: Question) -> int:
        """Prompt tokens reading `segment` costs, as cwread counts them."""
        ...

    def judge(
        self, document: Document, segments: Sequence[Segment], question: Question, ranking: Sequence[float] | None = None
    ) -> Iterator[Verdict]:
        """A verdict per segment, in their order, each as soon as it and those before it are in.
        `ranking`: the retrieval's score of every paragraph of the book (index id - 1), for a
        Finder that chooses what to read first."""
        ...


def _in_order(decide_one: Callable[[Segment], Verdict], segments: Sequence[Segment], workers: int):
    """`decide_one` over `segments`, up to `workers` at once, yielded in order. Closed early (a
    spent budget, Ctrl-C, a failed call), it does not wait for calls still out at a server."""
    if workers <= 1 or len(segments) <= 1:
        for segment in segments:
            yield decide_one(segment)
        return
    pool = ThreadPoolExecutor(max_workers=min(workers, len(segments)))
    try:
        # each call in the caller's context: its cancellation reaches the calls (cwread.backends)
        futures = [pool.submit(contextvars.copy_context().run, decide_one, s) for s in segments]
        for future in futures:
            yield future.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


class _ChatFinder:
    """A Finder that makes one chat call (and its retry) per segment on `backend`, as many
    at once as the backend serves; subclasses say how a segment is decided (`decide_one`)."""

    reply = ""
    ranks = False

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.parallel = max(1, backend.capabilities.parallel)

    def cost(self, document: Document, segment: Segment, question: Question) -> int:
        return self.backend.count_tokens(
            "\n".join(c for _, c in _request(document, segment, question).messages)
        )

    def judge(
        self, document: Document, segments: Sequence[Segment], question: Question, ranking: Sequence[float] | None = None
    ) -> Iterator[Verdict]:
        return _in_order(lambda s: self.decide_one(document, s, question), segments, self.parallel)

    def decide_one(self, document: Document, segment: Segment, question: Question) -> Verdict:
        raise NotImplementedError


class GenerativeFinder(_ChatFinder):
    """The Finder as the paper has it: a chat call per segment (see `finder_request`),
    one retry with a firmer instruction, then an unreadable reply keeps its segment (recall
    first). `reply` "decision-first" asks YES or NO alone, then the clue's quote for a kept
    segment only (a dropped segment's quote is never shown, so it is not written)."""

    def __init__(self, backend: Backend, reply: str = QUOTE_FIRST, threshold: float | None = None) -> None:
        if reply not in (QUOTE_FIRST, DECISION_FIRST):
            raise InputError(f"a generative Finder replies quote-first or decision-first, not {reply!r}")
        super().__init__(backend)
        self.reply = reply
        self.threshold = threshold  # decision-first: a score reaching it asks the clue (kept)

    def decide_one(self, document: Document, segment: Segment, question: Question) -> Verdict:
        decision_first = self.reply == DECISION_FIRST
        paragraphs = document.shown(segment.ids)

        def request(retry: bool) -> GenerationRequest:
            return _request(document, segment, question, retry, decision_first)

        parsed, call = shared.call_agent(self.backend, request, parse_finder_reply)
        reason = parsed.reason
        if decision_first and self._keeps(parsed, call):
            asked = request(not call.parsed_first_try)
            clue = self.backend.generate(clue_request(asked, call.raw, paragraphs))
            # a schema reply (Ollama's format, a server's json constraint) read as tags, as call_agent does
            clue_text = shared.json_reply_to_tags(clue.text) if clue.structured else clue.text
            reason = parse_finder_reply(clue_text).reason
            call = replace(
                call,
                raw=f"{call.raw}\n{clue_text}",
                prompt_tokens=call.prompt_tokens + clue.prompt_tokens,
                completion_tokens=call.completion_tokens + clue.completion_tokens,
                seconds=call.seconds + clue.seconds,
                cached=call.cached and clue.cached,
                prompt_cached=call.prompt_cached + shared.cached_prompt_tokens(clue),
            )
        reply = shared.ground(reason, paragraphs, call)
        if not parsed.ok:
            reply = replace(reply, reason=_kept_unread(parsed))
        return Verdict(segment, parsed.answer if parsed.ok else "YES", reply, kept_on_failure=not parsed.ok)


    def _keeps(self, parsed: shared.ParsedReply, call: ModelCall) -> bool:
        """Whether a readable decision-first reply keeps its segment: by its score where a
        threshold and a score are there (as by_threshold decides it after), else by its label."""
        score = yes_odds(call.label_logprobs)
        if not parsed.ok or self.threshold is None or score is None:
            return parsed.ok and parsed.answer == "YES"
        return score >= self.threshold


def _kept_unread(parsed: shared.ParsedReply) -> str:
    """The reason a verdict gives for a reply it could not read (its segment kept: recall first)."""
    return f"(unparseable Finder reply kept: {parsed.problem})"


class ScoringFinder(_ChatFinder):
    """YES or NO alone (the decision-first prompt, no clue written), kept when the score
    ln P(YES) - ln P(NO) reaches `threshold`; a reply that comes without log-probabilities
    keeps its label, and an unreadable one keeps its segment."""

    reply = SCORE

    def __init__(self, backend: Backend, threshold: float = 0.0) -> None:
        if not backend.capabilities.logprobs:
            raise InputError(
                f"finder.reply=score needs log-probabilities, which {backend.name}:{backend.model} "
                "does not give; use quote-first or decision-first"
            )
        super().__init__(backend)
        self.threshold = threshold

    def decide_one(self, document: Document, segment: Segment, question: Question) -> Verdict:
        parsed, call = shared.call_agent(
            self.backend,
            lambda retry: _request(document, segment, question, retry, decision_first=True),
            parse_finder_reply,
        )
        reason = "" if parsed.ok else _kept_unread(parsed)
        verdict = Verdict(segment, parsed.answer if parsed.ok else "YES", GroundedReply(reason, call), not parsed.ok)
        return by_threshold(verdict, self.threshold)


class ScriptedFinder:
    """A Finder that calls no model: `score(segment, question)` gives each segment's score
    (ln P(YES) - ln P(NO)), kept when it reaches `threshold`. For tests, and to read a
    retriever's ranking as if it were a Finder's judgement."""

    reply = "scripted"
    backend = None
    parallel = 1
    ranks = False

    def __init__(self, score: Callable[[Segment, Question], float], threshold: float = 0.0) -> None:
        self.score = score
        self.threshold = threshold

    def cost(self, document: Document, segment: Segment, question: Question) -> int:
        return sum(len(p.text.split()) for p in document.paragraphs[segment.start - 1 : segment.end])

    def judge(
        self, document: Document, segments: Sequence[Segment], question: Question, ranking: Sequence[float] | None = None
    ) -> Iterator[Verdict]:
        for segment in segments:
            score = float(self.score(segment, question))
            call = ModelCall(raw="", label_logprobs=(("YES", score), ("NO", 0.0)))
            yield by_threshold(Verdict(segment, "NO", GroundedReply(call=call)), self.threshold)


def _request(
    document: Document,
    segment: Segment,
    question: Question,
    retry: bool = False,
    decision_first: bool = False,
) -> GenerationRequest:
    return finder_request(
        question,
        segment.start,
        segment.end,
        document.span_text(segment.start, segment.end),
        retry=retry,
        paragraphs=document.shown(segment.ids),
        decision_first=decision_first,
    )


def make_finder(settings: FinderSettings, backend: Backend) -> Finder:
    """The Finder the settings name: the judge (cwread.agents.cross_encoder) for `use` "judge", else the
    model Finder `settings.reply` names, on `backend`. JudgeUnavailable when the judge's
    files cannot be loaded."""
    if settings.use == FinderUse.JUDGE:
        from cwread.agents.cross_encoder import load_judge

        return JudgeFinder(load_judge(settings.judge_folder), settings.keep_threshold)
    trained = backend.capabilities.trained
    reply = settings.reply if settings.reply != AUTO else trained.reply if trained else QUOTE_FIRST
    threshold = settings.keep_threshold
    if threshold is None and trained is not None:
        threshold = trained.keep_threshold
    if reply == SCORE:
        return ScoringFinder(backend, 0.0 if threshold is None else threshold)
    return GenerativeFinder(backend, reply, threshold)


def by_threshold(verdict: Verdict, keep_threshold: float | None) -> Verdict:
    """With a keep threshold, a scored verdict keeps its segment when its score reaches it,
    whatever its label; without one, or without a score, the label stands."""
    if keep_threshold is None or verdict.score is None:
        return verdict
    return replace(verdict, decision="YES" if verdict.score >= keep_threshold else "NO")


def reading_budget(read_tokens: int | str | None, finder: Finder) -> ReadingBudget | None:
    """The Finder's token budget: `read_tokens` tokens (FinderSettings.read_tokens), "auto"
    (what `finder` reads in about reading.FINDER_SECONDS at its measured rate; no cap for a
    Finder that calls no model), or None (no cap but the budget's `read`)."""
    if read_tokens == "auto":
        return ReadingBudget.auto(finder.backend) if finder.backend is not None else None
    return ReadingBudget(tokens=read_tokens) if read_tokens else None


def read_segments(
    finder: Finder,
    document: Document,
    segments: Sequence[Segment],
    question: Question,
    reading: ReadingBudget | None = None,
    keep_threshold: float | None = None,
    progress: Progress | None = None,
    ranking: Sequence[float] | None = None,
) -> tuple[Verdict, ...]:
    """Have `finder` judge `segments` in their order (as many at once as it serves) until
    `reading`'s token budget is spent: the first segment is always read, and reading stops at
    the first segment that would overspend it. Returns the verdicts of the segments read;
    with `keep_threshold`, scored verdicts are decided by their score (`by_threshold`).
    `ranking`: the retrieval's paragraph scores, for a Finder that chooses what to read first."""
    total = len(segments)
    if progress:
        progress("finder", 0, total)
    costs: dict[int, int] = {}  # prompt tokens of each segment, counted when the budget needs them
    verdicts: list[Verdict] = []

    def cost(i: int) -> int:
        if i not in costs:
            costs[i] = finder.cost(document, segments[i], question)
        return costs[i]

    def affordable(start: int) -> int:
        """How many segments from `start` on fit what is left of the budget (all: no cap yet)."""
        cap = reading.limit() if reading else None
        if cap is None:
            return total - start
        spent = sum(cost(i) for i in range(start))
        n = 0
        while start + n < total and (start + n == 0 or spent + cost(start + n) <= cap):
            spent += cost(start + n)
            n += 1
        return n

    # an auto budget learns its rate from the first call: that one goes alone
    waiting = reading is not None and reading.limit() is None and reading.rate_of is not None
    while len(verdicts) < total:
        start = len(verdicts)
        n = 1 if waiting else affordable(start)
        if n == 0:
            break
        waiting = False
        with closing(finder.judge(document, segments[start : start + n], question, ranking)) as judged:
            for i, verdict in enumerate(judged, start=start):
                verdicts.append(verdict)
                if reading:
                    reading.observe(cost(i), verdict.reply.call.seconds, verdict.reply.call.cached)
                if progress:
                    progress("finder", len(verdicts), total)
    if reading:
        reading.settle()
    if progress and len(verdicts) < total:  # the budget was spent: the bar ends where reading did
        progress("finder", len(verdicts), len(verdicts))
    return tuple(by_threshold(v, keep_threshold) for v in verdicts)
