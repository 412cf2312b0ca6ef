"""One question through the method: segments → Finder → packet → Interpreter → self-check."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from cwread import agents, extractive, grounding
from cwread.backends import Backend, GenerationRequest
from cwread.backends.select import Selection
from cwread.document import Document, Evidence, Passage
from cwread.embedders import load_embedder
from cwread.packing import pack
from cwread.progress import Progress
from cwread.reading import ReadingBudget
from cwread.records import (
    UNJUDGED,
    AgentCall,
    Answer,
    AnswerSettings,
    FindResult,
    ModelCall,
    Packet,
    Question,
    Quote,
    Trace,
    Unread,
    Verdict,
)
from cwread.segments import Budget, Segment

TOKEN_MARGIN = 0.15  # our token counts are estimates for models whose tokenizer we cannot reach


def _generate_parsed(
    backend: Backend,
    make_request: Callable[[bool], GenerationRequest],
    parse: Callable[[str], agents.ParsedReply],
) -> tuple[agents.ParsedReply, ModelCall]:
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
    call = ModelCall(
        generation.text,
        parsed.ok and not retry,
        prompt_tokens,
        completion_tokens,
        seconds,
        cached,
        generation.label_logprobs,
    )
    return parsed, call


def judge_segment(
    backend: Backend, document: Document, segment: Segment, question: Question, decision_first: bool = False
) -> Verdict:
    """The Finder on one segment: one retry with a firmer instruction, then keep it (recall).
    `decision_first`: YES/NO alone, then the clue's quote for a kept segment only (a dropped
    segment's quote is never shown, so it is not written)."""
    text = document.span_text(segment.start, segment.end)
    paragraphs = document.passages(segment.ids)

    def request(retry: bool) -> GenerationRequest:
        return agents.finder_request(
            question, segment.start, segment.end, text, retry=retry, paragraphs=paragraphs,
            decision_first=decision_first,
        )

    parsed, call = _generate_parsed(backend, request, agents.parse_finder_reply)
    reason = parsed.reason
    if decision_first and parsed.answer == "YES":
        asked = request(not call.parsed_first_try)
        clue = backend.generate(agents.clue_request(asked, call.raw, paragraphs))
        reason = agents.parse_finder_reply(clue.text).reason
        call = replace(
            call,
            raw=f"{call.raw}\n{clue.text}",
            prompt_tokens=call.prompt_tokens + clue.prompt_tokens,
            completion_tokens=call.completion_tokens + clue.completion_tokens,
            seconds=call.seconds + clue.seconds,
            cached=call.cached and clue.cached,
        )
    quotes, forged = _quotes(reason, paragraphs)
    _, dropped = agents.split_citations(reason, set(segment.ids))
    cited = tuple(dict.fromkeys(q.id for q in quotes))
    return Verdict(
        segment=segment,
        decision=parsed.answer if parsed.ok else "YES",
        reason=reason if parsed.ok else f"(unparseable Finder reply kept: {parsed.problem})",
        cited=cited,
        dropped=tuple(dropped),
        call=call,
        kept_on_failure=not parsed.ok,
        quotes=quotes,
        forged=forged,
    )


def _by_threshold(verdict: Verdict, keep_threshold: float | None) -> Verdict:
    """With a keep threshold, a scored verdict keeps its segment when its score reaches it,
    whatever its label; without one, or without a score, the label stands."""
    if keep_threshold is None or verdict.score is None:
        return verdict
    return replace(verdict, decision="YES" if verdict.score >= keep_threshold else "NO")


def _quotes(reason: str, paragraphs: Evidence):
    """The reason's quotes checked against the paragraphs as the agent was shown them."""
    shown = dict(agents.shown_evidence(paragraphs))
    return grounding.find_quotes(reason, shown, dict(paragraphs))


def reading_budget(budget: Budget, finder: Backend) -> ReadingBudget | None:
    """The Finder's token budget: `budget.read_tokens` tokens, "auto" (what `finder` reads in
    about reading.FINDER_SECONDS at its measured rate), or None (no cap but `budget.read`)."""
    if budget.read_tokens == "auto":
        return ReadingBudget.auto(finder)
    return ReadingBudget(tokens=budget.read_tokens) if budget.read_tokens else None


def finder_prompt_tokens(backend: Backend, document: Document, segment: Segment, question: Question) -> int:
    """What reading `segment` costs the Finder: its prompt, in tokens as cwread counts them."""
    paragraphs = document.passages(segment.ids)
    text = document.span_text(segment.start, segment.end)
    request = agents.finder_request(question, segment.start, segment.end, text, paragraphs=paragraphs)
    return backend.count_tokens("\n".join(content for _, content in request.messages))


def run_finder(
    backend: Backend,
    document: Document,
    segments: list[Segment] | tuple[Segment, ...],
    question: Question,
    budget: Budget | None = None,
    reading: ReadingBudget | None = None,
    progress: Progress | None = None,
) -> tuple[Verdict, ...]:
    """Judge `segments` in their order (as many at once as the backend serves) until
    `reading`'s token budget is spent: the first segment is always read, and reading stops at
    the first segment that would overspend it. Returns the verdicts of the segments read,
    replied as `budget.finder_reply` says; with `budget.keep_threshold`, scored verdicts are
    decided by their score (`_by_threshold`)."""
    total = len(segments)
    if progress:
        progress("finder", 0, total)
    keep_threshold = budget.keep_threshold if budget else None
    decision_first = budget is not None and budget.finder_reply == "decision-first"
    costs: dict[int, int] = {}  # prompt tokens of each segment, counted when the budget needs them
    workers = max(1, min(backend.capabilities.parallel, total or 1))
    verdicts: list[Verdict] = []

    def cost(i: int) -> int:
        if i not in costs:
            costs[i] = finder_prompt_tokens(backend, document, segments[i], question)
        return costs[i]

    def judge(segment: Segment) -> Verdict:
        return judge_segment(backend, document, segment, question, decision_first)

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

    def observe(i: int, verdict: Verdict) -> None:
        if reading:
            reading.observe(cost(i), verdict.call.seconds, verdict.call.cached)
        if progress:
            progress("finder", len(verdicts), total)

    # an auto budget learns its rate from the first call: that one goes alone
    waiting = reading is not None and reading.limit() is None and reading.rate_of is not None
    while len(verdicts) < total:
        start = len(verdicts)
        n = affordable(start)
        if n == 0:
            break
        if workers == 1 or waiting:
            waiting = False
            verdicts.append(judge(segments[start]))
            observe(start, verdicts[-1])
            continue
        pool = ThreadPoolExecutor(max_workers=workers)
        try:
            futures = [pool.submit(judge, s) for s in segments[start : start + n]]
            for i, future in enumerate(futures, start=start):
                verdicts.append(future.result())
                observe(i, verdicts[-1])
        finally:  # on Ctrl-C or a failed call, do not wait for calls still out at a server
            pool.shutdown(wait=False, cancel_futures=True)
    if reading:
        reading.settle()
    if progress and len(verdicts) < total:  # the budget was spent: the bar ends where reading did
        progress("finder", len(verdicts), len(verdicts))
    return tuple(_by_threshold(v, keep_threshold) for v in verdicts)


def interpret(
    backend: Backend, question: Question, packet: Packet, previous: tuple[str, str] | None = None
) -> AgentCall:
    """The Interpreter on a packet; with `previous` (answer, reason) it is the self-check."""
    parsed, call = _generate_parsed(
        backend,
        lambda retry: agents.interpreter_request(question, packet.evidence(), previous=previous, retry=retry),
        lambda raw: agents.parse_reply(raw, question),
    )
    quotes, forged = _quotes(parsed.reason, packet.evidence())
    _, dropped = agents.split_citations(parsed.reason, set(packet.ids))
    return AgentCall(
        answer=parsed.answer,
        reason=parsed.reason,
        cited=tuple(dict.fromkeys(q.id for q in quotes)),
        dropped=tuple(dropped),
        problem=parsed.problem,
        call=call,
        quotes=quotes,
        forged=forged,
    )


def decide(
    question: Question,
    final: AgentCall | None,
    packet: Packet,
    mode: str = "generative",
    retrieved: Evidence | None = None,
    kept: Evidence | None = None,
    rank: grounding.Rank | None = None,
) -> Answer:
    """What is presented as the answer, and whether the quotes support it.

    Open questions: "generative" keeps the Interpreter's words (cut where they start to
    repeat) only if its quotes cover them, else nothing is presented (not determined from
    the text) and the best evidence is shown: the sentences of the packet, or else of the
    `retrieved` paragraphs, that fit the question best; "extractive" answers with the
    sentence that fits best of the packet and the rest of what the Finder `kept`, ranked by
    `rank` (see cwread.extractive; shared question words without one);
    "generative-or-extractive" is generative, with the extractive answer in place of words
    the quotes do not cover. Labels (mcq, claim) stand as chosen; whether the quotes bear on
    them is recorded.
    """
    if question.kind == "open" and mode == "extractive":
        return _extract(question, packet, retrieved, kept, rank, final)
    fallback = mode == "generative-or-extractive"
    shown = "generative" if fallback else mode  # unless its words go unbacked, it is the model's
    if final is None or final.answer is None:  # a fault, said as one (no sentence stands in)
        return Answer(None, None, shown, False)
    if question.kind != "open":
        supported = grounding.supports_label(question, final.answer, final.quotes)
        return Answer(final.answer, final.answer, shown, supported, final.quotes)
    text = grounding.cut_repetition(final.answer)
    if grounding.covers(text, final.quotes):
        return Answer(text, final.answer, shown, True, final.quotes)
    if fallback:  # a sentence of the book that fits, rather than words it does not back
        return _extract(question, packet, retrieved, kept, rank, final)
    evidence = _best_evidence(question, final, packet, retrieved, rank)
    return Answer(None, final.answer, shown, False, evidence, withheld=True)


def _extract(
    question: Question,
    packet: Packet,
    retrieved: Evidence | None,
    kept: Evidence | None,
    rank: grounding.Rank | None,
    final: AgentCall | None,
) -> Answer:
    """The extractive answer: the best-fitting sentence of the packet and the rest of what the
    Finder kept (the packet's budget is for the Interpreter's context, which a quoted sentence
    does not need), or not determined when none shares enough of the question."""
    model_answer = final.answer if final else None
    in_packet = set(packet.ids)
    pool = [*packet.evidence(), *(p for p in kept or [] if p[0] not in in_packet)]
    found = extractive.best_answer(question.text, pool, rank, grounding.answer_support_needed(question.text))
    if found is None:
        evidence = _best_evidence(question, final, packet, retrieved, rank)
        return Answer(None, model_answer, "extractive", False, evidence, withheld=True)
    # The sentence is the answer (a why-question's, its reason): giving only its longest run
    # of words the question does not already say lowered token-F1 on the dev anthology (0.160
    # -> 0.132 on the extractive baseline's sentences, 20 records).
    text, quote = found
    return Answer(text, model_answer, "extractive", True, (quote,))


BEST_EVIDENCE = 3  # sentences shown when the answer is withheld


def _best_evidence(
    question: Question,
    final: AgentCall | None,
    packet: Packet,
    retrieved: Evidence | None,
    rank: grounding.Rank | None = None,
) -> tuple[Quote, ...]:
    """What to show instead of an unsupported answer: the model's quotes that share a word
    with the question, then the sentences of the packet and of what the Finder read that
    fit it best, up to BEST_EVIDENCE in all."""
    asked = grounding.content_words(question.text)
    shown = [q for q in (final.quotes if final else ()) if asked & grounding.content_words(q.text)]
    wanted = " ".join([question.text, *question.options.values()])  # the options say what counts
    candidates = grounding.best_sentences(
        wanted, [*packet.evidence(), *(retrieved or [])], BEST_EVIDENCE + len(shown), rank=rank
    )
    for quote in candidates:
        if len(shown) < BEST_EVIDENCE and not any(
            q.id == quote.id and q.start <= quote.start < q.end for q in shown
        ):
            shown.append(quote)
    return tuple(shown)


def prompt_fits(backend: Backend, request: GenerationRequest) -> bool:
    """Whether the request's prompt plus its answer fits the model's context (with margin)."""
    prompt = "\n".join(content for _, content in request.messages)
    needed = backend.count_tokens(prompt) * (1 + TOKEN_MARGIN) + request.max_tokens + 32
    return needed <= backend.capabilities.context


def packet_fits(backend: Backend, question: Question, evidence: Evidence) -> bool:
    """Whether an Interpreter prompt over `evidence` fits, sized for the longer self-check."""
    request = agents.interpreter_request(question, evidence, previous=("X", "x" * 600))
    return prompt_fits(backend, request)


def resolve_answer_mode(mode: str, interpreter: Backend) -> str:
    """One of ANSWER_MODES; "auto" is extractive for a model too small to write, else the
    model's words with the best-fitting sentence when its quotes do not cover them."""
    if mode != "auto":
        return mode
    return "extractive" if interpreter.capabilities.small else "generative-or-extractive"


def judges(settings: AnswerSettings, interpreter: Backend) -> bool:
    """Whether options and claims are given the Interpreter's verdict (not by a model that
    judges at chance, unless asked anyway)."""
    return settings.judge_anyway or not interpreter.capabilities.small


def finder_skip_reason(choice: str, finder: Backend) -> str | None:
    """Why the Finder is not run (None: it runs): `choice` off, or auto with a Finder measured
    to keep nearly every segment it reads, whose calls could not change the answer."""
    if choice == "off":
        return "--finder off: every segment read is taken as kept"
    if choice == "auto" and finder.capabilities.keeps_nearly_all:
        return (
            f"{finder.model} keeps nearly every segment it reads (99.7% on FairytaleQA dev), so its "
            "calls could not change the answer; every segment read is taken as kept (--finder on runs it)"
        )
    return None


def sentence_ranker(found: FindResult) -> grounding.Rank:
    """How extractive answers rank sentences for this retrieval: by the book's rarity of the
    question's words and by the retrieval's embedder (see cwread.extractive)."""
    return extractive.sentence_ranker(found.document, load_embedder(found.embedder))


def answer(
    found: FindResult,
    selection: Selection,
    settings: AnswerSettings | None = None,
    packet: Packet | None = None,
    progress: Progress | None = None,
) -> Trace:
    """Run the Finder over the first `budget.read` segments of `found`, pack, interpret,
    self-check, as `settings` say (see AnswerSettings).

    Ablations and baselines enter midway: given a `packet`, the Finder and packing are skipped.
    A skipped Finder (`finder_skip_reason`) takes every segment read as kept, as that Finder
    would have. The Finder reads within `budget.read_tokens` (see `reading_budget`; the trace
    says what it did not read) and replies as `budget.finder_reply` says (see `judge_segment`).
    """
    settings = settings or AnswerSettings()
    document, question, budget = found.document, found.question, found.budget
    finder, interpreter = selection.finder, selection.interpreter
    answer_mode = resolve_answer_mode(settings.answer_mode, interpreter)
    judge = judges(settings, interpreter)
    skip_finder = finder_skip_reason(settings.finder, finder)
    # sentences are ranked for open answers and for the evidence shown in place of a verdict
    rank = sentence_ranker(found) if question.kind == "open" or not judge else None
    t0 = time.perf_counter()
    verdicts: tuple[Verdict, ...] = ()
    reading = None
    skipped: dict[str, str] = {}
    read = found.read
    # the best evidence shown when the answer is withheld may come from what the Finder read
    retrieved = _paragraphs(document, read) if packet is None else None
    if packet is None and skip_finder:
        skipped["finder"] = skip_finder
    elif packet is None:
        reading = reading_budget(budget, finder)
        verdicts = run_finder(finder, document, read, question, budget, reading, progress)
    unread = None
    if reading is not None and len(verdicts) < len(read):  # set only where the Finder ran
        unread = Unread(tuple(read[len(verdicts) :]), reading.limit() or 0, reading.why())
        skipped["reading"] = (
            f"{len(unread.segments)} of {len(read)} segments, once the Finder's budget of "
            f"{unread.budget_tokens:,} prompt tokens was spent ({unread.why})"
        )
    t1 = time.perf_counter()
    if packet is None:  # a skipped Finder is taken to have kept every segment it would read
        judged = [Verdict(s, "YES", "") for s in read] if skip_finder else list(verdicts)
        packet = pack(document, judged, budget, lambda evidence: packet_fits(interpreter, question, evidence))
    kept = retrieved if "finder" in skipped else _kept(document, verdicts)
    # An extractive answer is chosen without the model (see `decide`): the Interpreter and its
    # self-check would cost their calls (half of the README example's time) and change nothing.
    extract = question.kind == "open" and answer_mode == "extractive"
    unjudged = question.kind != "open" and not judge
    if unjudged:
        skipped["interpreter"] = UNJUDGED
    asked = not extract and not unjudged
    first = None
    if asked:
        if progress:
            progress("interpreter", 0, 1)
        first = interpret(interpreter, question, packet)
    t2 = time.perf_counter()
    self_check = settings.self_check
    triggered = asked and (agents.needs_self_check(question) if self_check is None else self_check)
    checked = None
    if triggered and first.answer is not None:
        if progress:
            progress("self-check", 0, 1)
        checked = interpret(interpreter, question, packet, previous=(first.answer, first.reason))
    t3 = time.perf_counter()
    final = checked if checked is not None and checked.answer is not None else first
    if unjudged:
        evidence = _best_evidence(question, None, packet, retrieved, rank)
        outcome = Answer(None, None, "evidence-only", False, evidence, True)
    else:
        outcome = decide(question, final, packet, answer_mode, retrieved, kept, rank)
    return Trace(
        found=found,
        verdicts=verdicts,
        packet=packet,
        interpreter=first,
        self_check=checked,
        self_check_triggered=triggered,
        models={
            "finder": f"{finder.name}:{finder.model}",
            "interpreter": f"{interpreter.name}:{interpreter.model}",
        },
        seconds={
            "finder": round(t1 - t0, 3),
            "interpreter": round(t2 - t1, 3),
            "self_check": round(t3 - t2, 3),
        },
        outcome=outcome,
        skipped=skipped,
        unread=unread,
    )


def _kept(document: Document, verdicts: tuple[Verdict, ...]) -> list[Passage]:
    return _paragraphs(document, [v.segment for v in verdicts if v.decision == "YES"])


def _paragraphs(document: Document, segments) -> list[Passage]:
    return document.passages(pid for s in segments for pid in s.ids)
