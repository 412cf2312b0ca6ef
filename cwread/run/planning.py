"""Planning a question's run: what it will do (the Plan, recorded in the trace) and with what (the
backends, the Finder, the sentence ranker, the answer reader), resolved once from its settings
before any model call; cwread.run.pipeline carries it out."""

from __future__ import annotations

from dataclasses import dataclass, replace

from cwread.agents.cross_encoder import JudgeUnavailable
from cwread.agents.extractive_qa import AnswerReader, ReaderUnavailable, load_reader
from cwread.agents.finder import Finder, make_finder
from cwread.agents.interpreter import CHANCE_CHECK_SKIPPED, self_check_decision
from cwread.agents.judge_finder import JudgeFinder
from cwread.agents.model_facts import FACTS, JUDGES_AT_CHANCE, KEEPS_NEARLY_ALL, READS_WHEN_ASKED, holds
from cwread.answer import extractive
from cwread.backends import Backend
from cwread.backends.select import Selection
from cwread.book import Tier
from cwread.records.plan import (
    ANSWER_CHOICES,
    AUTO,
    AnswerMode,
    FinderUse,
    PacketSource,
    Plan,
    SupportMethod,
)
from cwread.records.question import Question, asks_yes_or_no
from cwread.retrieval.segments import Budget
from cwread.settings import AnswerSettings, FinderSettings, RunSettings


@dataclass(frozen=True)
class PlannedRun:
    """A plan with what carries it out, resolved once (QuestionRun.plan) and then run (pipeline.run):
    the `plan` recorded in the trace, the `backends`, the `finder` that reads (built even when
    the plan skips it, so a judge that cannot run is told before any work) and the `rank` of
    the book's sentences (the session's, built once a book). A caller's own part goes
    in before planning (question_run.Stages)."""

    plan: Plan
    backends: Selection
    finder: Finder
    rank: extractive.SentenceRanker
    answer_reader: AnswerReader | None = None  # picks an extractive answer's words (None: the ranker does)


def backends_called(planned: PlannedRun) -> list[Backend]:
    """The backends the plan may call: the Finder's where it reads or judges an extractive
    answer's paragraph, the Interpreter's where it is asked (each once)."""
    plan, chosen = planned.plan, planned.backends
    called = []
    if _finder_reads(planned) or plan.answer_threshold is not None:
        called.append(chosen.finder)
    if plan.interpreter:
        called.append(chosen.interpreter)
    return list({id(b): b for b in called}.values())


def decisions_only(planned: PlannedRun, backend: Backend) -> bool:
    """Whether the plan asks `backend` for decisions alone (YES or NO, scored): it is the
    Finder's, which judges an extractive answer's paragraph and reads no segment, and not the
    Interpreter's."""
    plan, chosen = planned.plan, planned.backends
    return (
        backend is chosen.finder
        and not _finder_reads(planned)
        and not (plan.interpreter and backend is chosen.interpreter)
    )


def _finder_reads(planned: PlannedRun) -> bool:
    """Whether the plan's Finder reads segments with a model (not a judge without one)."""
    return planned.plan.finder is not None and getattr(planned.finder, "backend", None) is not None


def plan_run(
    question: Question,
    backends: Selection,
    run: RunSettings | None = None,
    *,
    packet_given: bool = False,
    finder: Finder | None = None,
    budget: Budget | None = None,
    tier: Tier | None = None,
    rank: extractive.SentenceRanker,
) -> PlannedRun:
    """What a run on `question` will do with these backends and settings (the Plan), and
    with what (see PlannedRun).

    Open answers in "auto" mode are extractive for a model too small to write, else the
    model's words with the best-fitting sentence when its quotes do not cover them. Options
    and claims get no verdict from a model that judges at chance unless `judge_anyway`. The
    Finder is skipped when off, or in auto for a Finder measured to keep nearly every segment
    it reads (its calls could not change the answer); a given `finder` always runs, in place
    of the one `run.finding` chooses. `packet_given`: the caller packs (eval's ablations).
    `budget`: the budget fitted to the book, recorded with why it was chosen. An extractive
    answer is the span reader's words in a story, the best sentence in a novel (`tier`: the
    book's, cwread.book.Tier) (see cwread.records.plan.Extract)."""
    run = run or RunSettings()
    answering, finding = run.answering, run.finding
    judge_missing = None
    # the judge only when asked for: on the dev sets its packet held less gold than the rank's at the
    # same B_c (benchmarks/README.md, "The judge as Finder"), so auto does not choose it
    if finder is None and not packet_given and finding.use == FinderUse.JUDGE:
        try:
            finder = make_finder(finding, backends.finder)
        except JudgeUnavailable as e:  # the rank fills the packet, as with no Finder, and the trace says so
            judge_missing = str(e)
    # the model Finder, built even where it will not read: a setting it cannot run is told before any work
    reading_finder = finder or make_finder(
        replace(finding, use=FinderUse.ON) if finding.use == FinderUse.JUDGE else finding, backends.finder
    )
    interpreter = backends.interpreter
    small = holds(JUDGES_AT_CHANCE, interpreter)
    verdict = answering.judge_anyway or not small
    if question.is_open:
        mode = open_answer_mode(answering, interpreter)
        chosen = mode == AnswerMode.EXTRACTIVE and answering.answer_mode == AUTO
        if chosen and not verdict and asks_yes_or_no(question):
            mode = AnswerMode.EVIDENCE_ONLY  # a claim put as a question: no sentence is its yes or no
        elif chosen and small and tier == Tier.NOVEL:
            # no model here reads a novel: its extractive answers quoted the answer too seldom to
            # be shown (benchmarks/README.md, "Passages on novels"), so it gets where the book answers
            mode = AnswerMode.PASSAGES
        elif (
            mode == AnswerMode.GENERATIVE_OR_EXTRACTIVE
            and answering.answer_mode == AUTO
            and tier == Tier.NOVEL
        ):  # a model that reads: where its quotes do not back its words, the same passages, not a guess
            mode = AnswerMode.GENERATIVE_OR_PASSAGES
    else:  # a label is the model's verdict, or none from a model that judges at chance
        mode = AnswerMode.GENERATIVE if verdict else AnswerMode.EVIDENCE_ONLY
    skipped = None if finder is not None or packet_given else finder_skip_reason(finding.use, backends.finder)
    if judge_missing:
        skipped = f"{judge_missing}; every segment read is taken as kept, by the retriever's rank"
    evidence = (
        PacketSource.GIVEN if packet_given else PacketSource.ALL_READ if skipped else PacketSource.FINDER
    )
    finder_reply = reading_finder.reply if evidence == PacketSource.FINDER else None
    asked = mode not in (AnswerMode.EVIDENCE_ONLY, AnswerMode.PASSAGES) and not (
        question.is_open and mode == AnswerMode.EXTRACTIVE
    )
    self_check, self_check_skipped = self_check_decision(question, answering.self_check)
    if (
        self_check and small and answering.self_check is None
    ):  # a verdict judged anyway is bounded to one pass
        self_check, self_check_skipped = False, CHANCE_CHECK_SKIPPED
    # the trained Finder picks the paragraph an extractive answer comes from, or none: on the dev
    # sets it chose gold more often than the sentence ranker (benchmarks/README.md, "Answers")
    trained = backends.finder.capabilities.trained
    answer_threshold = None
    if trained is not None:  # the answer picker is the trained Finder: its threshold as asked, else its own
        answer_threshold = (
            answering.answer_threshold if answering.answer_threshold is not None else trained.answer_threshold
        )
    # the passages of a novel are ordered by the same picker
    picked = (
        question.is_open
        and mode in (AnswerMode.EXTRACTIVE, AnswerMode.PASSAGES, AnswerMode.GENERATIVE_OR_PASSAGES)
        and not packet_given
        and answer_threshold is not None
    )
    support, threshold = _support_method(answering, interpreter, question, small) if asked else (None, None)
    answer_reader, reader_missing = None, None
    if question.is_open and mode == AnswerMode.EXTRACTIVE and not packet_given and answering.reader == AUTO:
        try:  # the reader picks the words of the paragraph an extractive answer comes from
            loaded = load_reader(answering.reader_folder)
            reader_at = loaded.threshold if answering.reader_threshold is None else answering.reader_threshold
            answer_reader = AnswerReader(loaded, reader_at)
        except ReaderUnavailable as e:  # the sentence ranker answers, as without one, and the trace says so
            reader_missing = str(e)
    plan = Plan(
        answer_mode=mode,
        evidence=evidence,
        finder=finder_reply,
        finder_skipped=skipped,
        read_tokens=finding.read_tokens if finder_reply else None,
        keep_threshold=keep_threshold_of(finding, reading_finder) if finder_reply else None,
        verdict=verdict,
        interpreter=asked,
        self_check=asked and self_check,
        budget=budget,
        support=support,
        support_threshold=threshold,
        extract=extractive.extract_kind(tier)
        if question.is_open and mode not in (AnswerMode.PASSAGES, AnswerMode.GENERATIVE_OR_PASSAGES)
        else None,
        self_check_skipped=self_check_skipped if asked else None,
        # skipped by cwread's own choice: the face says which setting runs each
        skipped_by_choice=tuple(
            stage
            for stage, chosen in (
                ("finder", bool(skipped) and finding.use == FinderUse.AUTO),  # not off, not a judge missing
                ("self-check", bool(self_check_skipped) and asked),
            )
            if chosen
        ),
        judge_unavailable=judge_missing,
        answer_threshold=answer_threshold if picked else None,
        answer_reader=answer_reader.reader.name if answer_reader else None,
        reader_threshold=answer_reader.threshold if answer_reader else None,
        reader_unavailable=reader_missing,
    )
    return PlannedRun(plan, backends, reading_finder, rank, answer_reader)


def keep_threshold_of(finding: FinderSettings, reader: Finder) -> float | None:
    """The score a segment is kept at: as asked, else the judge's own or a trained adapter's
    (each chosen on its held-out training data), else none (the label decides)."""
    if finding.keep_threshold is not None:
        return finding.keep_threshold
    if isinstance(reader, JudgeFinder):
        return reader.threshold
    trained = reader.backend.capabilities.trained if reader.backend is not None else None
    return trained.keep_threshold if trained is not None else None


def _support_method(
    answering: AnswerSettings, interpreter: Backend, question: Question, small: bool
) -> tuple[SupportMethod, float | None]:
    """How a model's answer is checked, and the threshold it is held to (cwread.answer.support): the
    model's own check, or for an open answer the model's confidence in its words, only where
    its threshold was given (calibrated for that model: the 1.5B's judged at chance both
    ways); a reader's answer where asked (`quoted_answers`: quotes verbatim and in the packet);
    else the words. Never a score from a model that judges at chance or gives none, and no
    reader's answer from a model too small to write."""
    scores = not small and interpreter.capabilities.logprobs
    if scores and answering.support_threshold is not None:
        return SupportMethod.MODEL, answering.support_threshold
    if scores and question.is_open and answering.confidence_threshold is not None:
        return SupportMethod.CONFIDENCE, answering.confidence_threshold
    if question.is_open and answering.quoted_answers and not small:  # a reader's answer, as asked
        return SupportMethod.QUOTES, None
    return SupportMethod.WORDS, None


def open_answer_mode(answering: AnswerSettings, interpreter: Backend) -> AnswerMode:
    """How an open question is answered: as asked, or for "auto" extractively with a model
    too small to write, else the model's words with the best-fitting words of the book when
    its quotes do not back them."""
    if answering.answer_mode in ANSWER_CHOICES:
        return AnswerMode(answering.answer_mode)
    small = holds(JUDGES_AT_CHANCE, interpreter)
    return AnswerMode.EXTRACTIVE if small else AnswerMode.GENERATIVE_OR_EXTRACTIVE


def finder_skip_reason(use: str, finder: Backend) -> str | None:
    """Why the Finder `finder` is not run under FinderSettings.use `use` (None: it runs)."""
    if use == FinderUse.OFF:
        return "off, as asked: every segment read is taken as kept"
    for fact in (KEEPS_NEARLY_ALL, READS_WHEN_ASKED):
        if use == FinderUse.AUTO and holds(fact, finder):
            return f"{finder.model} {FACTS[fact].says} ({FACTS[fact].measured}); every segment read is taken as kept"
    return None
