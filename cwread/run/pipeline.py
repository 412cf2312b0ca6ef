"""One question through the method: plan → segments → Finder → packet → Interpreter → self-check
→ support check.

`plan_run` resolves, before any call, what the run will do (the Plan, recorded in the trace)
and with what (a PlannedRun: the backends, the Finder that reads, the sentence ranker); `run`
is then a short sequence of stages, each a function of the planned run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from cwread.agents.answer_picker import AnswerPicker
from cwread.agents.finder import Finder, read_segments, reading_budget
from cwread.agents.interpreter import interpret, packet_fits
from cwread.agents.judge_finder import JUDGE_WORDS, JudgeFinder
from cwread.agents.support_check import SupportAgent
from cwread.answer import extractive
from cwread.answer.decide import Grounds, decide, shown_text
from cwread.answer.support import check_confidence, check_quotes, check_support
from cwread.backends import Backend, label
from cwread.book import Document, ShownParagraph, grounding
from cwread.progress import Progress
from cwread.records.plan import (
    UNJUDGED,
    YES_OR_NO_UNJUDGED,
    AnswerMode,
    Extract,
    PacketSource,
    Plan,
    SupportMethod,
)
from cwread.records.question import NO_HINTS, Hints, Question
from cwread.records.stages import AgentCall, FindResult, Outcome, Packet, SupportCheck, Verdict
from cwread.records.trace import Trace, Turn, Unread
from cwread.retrieval import describe
from cwread.retrieval.cast import named_in_book
from cwread.retrieval.fusion import build_queries, paragraph_scores
from cwread.retrieval.index import Index
from cwread.retrieval.lifts import lift_describing, lift_near, lift_numbered, numbered
from cwread.retrieval.segments import Budget, build_segments
from cwread.run.packing import pack, pack_segments
from cwread.run.planning import PlannedRun


def as_asked(question: Question, follows: Turn | None) -> Question:
    """The question as retrieval and the answer read it: a follow-up ("why did she hide it?"
    says neither who nor what) with the words of the question it leans on before its own."""
    return question if follows is None else replace(question, text=f"{follows.question} {question.text}")


def find(
    index: Index,
    question: Question,
    budget: Budget,
    retrieval: str,
    embedder: str,
    follows: Turn | None = None,
    hints: Hints = NO_HINTS,
) -> FindResult:
    """The retrieval stage: every paragraph of the indexed book lands in one segment, ranked
    by `index`'s scores for the question (`retrieval`: "fused", "bm25" or "dense"; `embedder`
    names the dense model); a follow-up is retrieved with the question of the turn it `follows`
    joined to it. `hints`: the reader's words added to the lexical side (`also`), and a
    paragraph found already (`near`): those near it rank first (cwread.retrieval.lifts)."""
    t0 = time.perf_counter()
    document = index.document
    asked = as_asked(question, follows)
    # a description the book sets beside a name ("the naturalist") looks for the name too: the
    # answer's paragraphs use the name
    named = tuple(named_in_book(document, asked.text, hints.upto))
    lexical = " ".join([hints.also, *(n.member.words for n in named)]).strip()
    scores = paragraph_scores(index, build_queries(asked.text, question.options or None), retrieval, lexical)
    lift_describing(scores, document, asked.text)
    held = numbered(document, asked.text)
    lift_numbered(scores, held)
    lift_near(scores, document, hints.near)
    left_out = document.unread
    if hints.upto is not None:  # the reader's limit: what lies past it is in no segment
        left_out = left_out | frozenset(range(hints.upto + 1, len(document) + 1))
        held = {pid: count for pid, count in held.items() if pid <= hints.upto}
    segments = build_segments(
        document.lengths,
        scores.tolist(),
        budget,
        [s.first for s in document.sources],
        left_out=left_out,
    )
    return FindResult(
        document=document,
        question=question,
        budget=budget,
        method=retrieval,
        embedder=embedder,
        segments=tuple(segments),
        paragraph_scores=tuple(scores.tolist()),
        timings={"retrieve": round(time.perf_counter() - t0, 4)},
        named=named,
        numbered=tuple(sorted(held, key=lambda pid: -scores[pid - 1])),
        upto=hints.upto,
        also=hints.also,
    )


def _lowercase(plan: Plan, document: Document) -> frozenset[str]:
    """The book's lower-case words where an extractive answer may be checked for a name (read
    once a book, cached): none for a plan that extracts nothing."""
    extracts = plan.answer_mode in (AnswerMode.EXTRACTIVE, AnswerMode.GENERATIVE_OR_EXTRACTIVE)
    return document.lowercase_words if extracts else frozenset()


@dataclass(frozen=True)
class FinderStage:
    """What the Finder stage produced: its verdicts, what it left unread, and the segments
    taken as kept (those it kept, or every segment read when it did not run)."""

    verdicts: tuple[Verdict, ...]
    unread: Unread | None
    kept: tuple[Verdict, ...]


def run(
    planned: PlannedRun,
    found: FindResult,
    *,
    packet: Packet | None = None,
    progress: Progress | None = None,
    follows: Turn | None = None,
) -> Trace:
    """Carry out `planned` (see QuestionRun.plan) on `found`: its Finder reads `found.read` as
    planned; pack, interpret, self-check, check support, decide.

    Given a `packet` (ablations, baselines; the plan says "given"), the Finder and packing are
    skipped. The planned `rank` ranks sentences and weighs a label's words (the book's word
    rarity and the retrieval's embedder, cwread.answer.extractive); `follows`: the earlier turn a follow-up leans on, shown to the Interpreter as conversation."""
    plan, selection = planned.plan, planned.backends
    question, interpreter = found.question, selection.interpreter
    t0 = time.perf_counter()
    judged = _finder_stage(found, plan, planned.finder, progress)
    seconds = {"finder": round(time.perf_counter() - t0, 3)}
    if packet is None:
        # an Interpreter that is not asked reads no packet: B_c alone bounds it, and the
        # tokenizer that counts a prompt (0.2 s to load) is not needed
        fits = (lambda evidence: packet_fits(interpreter, question, evidence)) if plan.interpreter else None
        if planned.finder.ranks and plan.evidence == PacketSource.FINDER:
            packet = pack_ranked_segments(found.document, judged.kept, found.budget, fits)
        else:  # N_E bounds the segments a Finder chose; with none to filter, B_c alone bounds the packet
            packet = pack(
                found.document,
                list(judged.kept),
                found.budget,
                fits,
                limit_segments=plan.evidence == PacketSource.FINDER,
            )
    first, checked = _interpret(plan, interpreter, question, packet, progress, seconds, follows)
    final = checked if checked is not None and checked.answer is not None else first
    t1 = time.perf_counter()
    support = _check_support(plan, interpreter, question, final, packet, progress, planned.rank.weights, found.document)
    seconds["support_check"] = round(time.perf_counter() - t1, 3)
    retrieved = _paragraphs(found.document, found.read) if plan.evidence != PacketSource.GIVEN else None
    picker = (
        AnswerPicker(selection.finder, plan.answer_threshold) if plan.answer_threshold is not None else None
    )
    t2 = time.perf_counter()
    outcome = decide(
        as_asked(question, follows),  # answered, and its answer judged, as it was retrieved
        final,
        Grounds(packet, retrieved, planned.rank, planned.answer_reader, found.numbered, _lowercase(plan, found.document)),
        plan.answer_mode,
        support,
        plan.extract or Extract.SPAN,
        picker,
        backed_labels=plan.evidence != PacketSource.GIVEN,
    )
    if picker is not None:
        seconds["answer_judge"] = round(time.perf_counter() - t2, 3)
    if outcome.reading is not None:
        seconds["answer_reader"] = outcome.reading.seconds
    return Trace(
        found=found,
        plan=plan,
        verdicts=judged.verdicts,
        packet=packet,
        interpreter=first,
        self_check=checked,
        models={
            "finder": getattr(planned.finder, "label", None) or label(selection.finder),
            "interpreter": label(interpreter),
        },
        seconds=seconds,
        outcome=outcome,
        skipped=_skipped(plan, found, judged, outcome),
        unread=judged.unread,
        follows=follows,
    )


def _finder_stage(found: FindResult, plan: Plan, finder: Finder, progress: Progress | None) -> FinderStage:
    """The Finder stage as planned: the Finder reads within the plan's token budget and keeps
    by its threshold; a skipped one is taken to have kept every segment it would read, as that
    Finder would have."""
    if plan.evidence == PacketSource.GIVEN:
        return FinderStage((), None, ())
    if plan.evidence == PacketSource.ALL_READ:
        return FinderStage((), None, tuple(Verdict(s, "YES") for s in found.read))
    budget = reading_budget(plan.read_tokens, finder)
    verdicts = read_segments(
        finder,
        found.document,
        found.read,
        found.question,
        budget,
        plan.keep_threshold,
        progress,
        found.paragraph_scores,
    )
    unread = None
    if budget is not None and len(verdicts) < len(found.read):
        unread = Unread(tuple(found.read[len(verdicts) :]), budget.limit() or 0, budget.why())
    return FinderStage(verdicts, unread, packing_order(finder, verdicts))


def pack_ranked_segments(
    document: Document, ranked: tuple[Verdict, ...], budget: Budget, fits=None
) -> Packet:
    """The packet of a Finder whose scores rank (the judge): its kept segments whole, best
    first, then the rest it scored, best first, while B_c lasts (recall first: packet recall
    +3.4 points on the Hound, +2.8 on the Moonstone, Styles unchanged). Whole segments,
    not the cited paragraphs first: a clue's context is its segment, and packing every kept
    segment's cited paragraphs before the rest of any lost a fifth of the gold on the dev novel."""
    kept = [v.segment for v in ranked if v.kept]
    rest = [v.segment for v in ranked if not v.kept and v.score is not None]  # recall first: B_c filled
    return pack_segments(document, kept + rest, budget, fits)


def packing_order(finder: Finder, verdicts: tuple[Verdict, ...]) -> tuple[Verdict, ...]:
    """The verdicts in the order the packet takes them: a Finder whose scores rank gives its
    best segments first (reading order on ties; an unscored one last), others reading order."""
    if not finder.ranks:
        return verdicts
    return tuple(sorted(verdicts, key=lambda v: -v.score if v.score is not None else float("inf")))


def _interpret(
    plan: Plan,
    interpreter: Backend,
    question: Question,
    packet: Packet,
    progress: Progress | None,
    seconds: dict[str, float],
    follows: Turn | None = None,
) -> tuple[AgentCall | None, AgentCall | None]:
    """The Interpreter and its self-check as planned: (first answer, self-check), None for a
    call not made; each stage's seconds go into `seconds`."""
    t0 = time.perf_counter()
    first = checked = None
    if plan.interpreter:
        if progress:
            progress("interpreter", 0, 1)
        first = interpret(interpreter, question, packet, conversation=follows)
    t1 = time.perf_counter()
    if plan.self_check and first is not None and first.answer is not None:
        if progress:
            progress("self-check", 0, 1)
        checked = interpret(interpreter, question, packet, (first.answer, first.reply.reason), follows)
    seconds.update(interpreter=round(t1 - t0, 3), self_check=round(time.perf_counter() - t1, 3))
    return first, checked


def _check_support(
    plan: Plan,
    interpreter: Backend,
    question: Question,
    final: AgentCall | None,
    packet: Packet,
    progress: Progress | None,
    weights: grounding.Weights | None,
    document: Document,
) -> SupportCheck | None:
    """Whether the final answer's quotes support it, as planned (cwread.answer.support; `weights`:
    the `document`'s word weights); None when there is no readable answer to check."""
    if plan.support is None or final is None or final.answer is None:
        return None
    if progress and plan.support == SupportMethod.MODEL:
        progress("support check", 0, 1)
    text = shown_text(question, final.answer)
    if plan.support == SupportMethod.MODEL and plan.support_threshold is not None:
        return check_support(
            SupportAgent(interpreter), question, text, final, packet.evidence(), plan.support_threshold, weights
        )
    if plan.support == SupportMethod.CONFIDENCE and plan.support_threshold is not None:
        return check_confidence(question, text, final, plan.support_threshold)
    if plan.support == SupportMethod.QUOTES:
        return check_quotes(question, text, final, packet.ids, document.lowercase_words)
    return check_support(None, question, text, final, packet.evidence(), weights=weights)


def _skipped(plan: Plan, found: FindResult, judged: FinderStage, outcome: Outcome) -> dict[str, str]:
    """Stages not run, each with why (the view and the trace say it)."""
    skipped: dict[str, str] = {}
    if outcome.description is not None and plan.answer_threshold is not None:
        said = outcome.description
        skipped["answer_judge"] = f"a who-is question, answered by the packet's description of {said.name}"
    if plan.reader_unavailable:
        skipped["answer_reader"] = f"{plan.reader_unavailable}; the sentence ranker picks the answer's words"
    if plan.finder_skipped and plan.evidence == PacketSource.ALL_READ:
        skipped["finder"] = plan.finder_skipped
    if judged.unread is not None:
        unread = judged.unread
        skipped["reading"] = (
            f"{len(unread.segments)} of {len(found.read)} segments, once the Finder's budget of "
            f"{unread.budget_tokens:,} prompt tokens was spent ({unread.why})"
        )
    unjudged = [v for v in judged.verdicts if v.score is None and plan.finder == JudgeFinder.reply]
    if unjudged:
        skipped["judging"] = (
            f"{len(unjudged)} of {len(judged.verdicts)} segments read, none of whose paragraphs the judge "
            f"reached (it reads the retriever's best-ranked paragraphs first, {JUDGE_WORDS:,} words at most); "
            "they were not kept"
        )
    if plan.answer_mode == AnswerMode.EVIDENCE_ONLY:
        skipped["interpreter"] = YES_OR_NO_UNJUDGED if found.question.is_open else UNJUDGED
    if plan.self_check_skipped:
        skipped["self-check"] = plan.self_check_skipped
    if (
        plan.extract == Extract.SENTENCE and plan.answer_mode != AnswerMode.GENERATIVE
    ):  # else no words of the book are given
        why = extractive.whole_sentence_why(found.document.tier)
        if why is not None and outcome.description is None:
            skipped["spans"] = why
    elif (
        outcome.mode == AnswerMode.EXTRACTIVE
        and outcome.description is None
        and describe.asked(found.question.text)
    ):
        skipped["spans"] = "who someone is is told by a sentence, not cut to a span"
    return skipped


def _paragraphs(document: Document, segments) -> list[ShownParagraph]:
    return document.shown(pid for s in segments for pid in s.ids)
