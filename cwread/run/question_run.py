"""One question's run, start to end: plan, find, read, pack, answer.

A reading session (cwread.run.session) holds the book and what is open on it: its indexes, the
embedders, the backends selected once, the sentence rankers. A QuestionRun holds one question's
plan and stages, and is handed what it needs, opened: the backends and the book's sentence
ranker to plan with (cwread.run.planning), the book's index to retrieve from (pipeline.find),
then what was found for the Finder, packing, the Interpreter and the answer (pipeline.run).
It never calls back into the session. A caller puts its own part in place of one the settings
would choose by one mechanism, `Stages` (eval's ablations: its backends, a packet).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cwread.agents.finder import Finder
from cwread.agents.model_facts import JUDGES_AT_CHANCE, holds
from cwread.answer import extractive
from cwread.backends.select import Selection
from cwread.book import Document
from cwread.progress import Progress
from cwread.records.plan import AUTO, AnswerMode
from cwread.records.question import NO_HINTS, Hints, Question
from cwread.records.stages import FindResult, Packet
from cwread.records.trace import Trace, Turn
from cwread.retrieval.index import Index
from cwread.retrieval.segments import Budget, fit_budget, make_budget
from cwread.run import pipeline, planning
from cwread.settings import AnswerSettings, RunSettings

Notice = Callable[[str], None]


@dataclass(frozen=True)
class Stages:
    """Parts a caller puts in place of those the settings would choose: `backends`, called
    instead of the session's (eval: the run's own); `finder`, a Finder that reads instead of
    the one the settings choose, and always runs; `packet`, the evidence given (the Finder
    and packing are then skipped: ablations and baselines)."""

    backends: Selection | None = None
    finder: Finder | None = None
    packet: Packet | None = None


NO_STAGES = Stages()


class QuestionRun:
    """`question` carried through the method on `document`, as `settings` ask (see the
    module): `plan`, `find`, `answer`. `follows`: the earlier turn a follow-up leans on;
    `notice` hears what a small model changes; `hints`, what the reader adds to its
    retrieval (pipeline.find)."""

    def __init__(
        self,
        document: Document,
        question: Question,
        settings: RunSettings | None = None,
        *,
        stages: Stages = NO_STAGES,
        follows: Turn | None = None,
        notice: Notice | None = None,
        hints: Hints = NO_HINTS,
    ) -> None:
        self.document = document
        self.hints = hints  # what the reader adds to the question's retrieval (its limit, say)
        self.question = question
        self.settings = settings or RunSettings()
        self.stages = stages
        self.follows = follows
        self.notice = notice

    def budget(self, context_tokens: int | None = None) -> Budget:
        """The settings' budget (default: auto) fitted to the book and an Interpreter of
        `context_tokens`, where known."""
        return fit_budget(self.settings.budget or make_budget(), self.document.lengths, context_tokens)

    def plan(self, backends: Selection, rank: extractive.SentenceRanker) -> planning.PlannedRun:
        """What this run will do, and with what (see planning.PlannedRun): `backends` (unless
        the stages give their own), the budget fitted to the book and the Interpreter, the
        Finder that reads, the book's sentence ranker `rank`."""
        selection = self.stages.backends or backends
        return planning.plan_run(
            self.question,
            selection,
            self.settings,
            packet_given=self.stages.packet is not None,
            finder=self.stages.finder,
            budget=self.budget(selection.interpreter.capabilities.context),
            tier=self.document.tier,
            rank=rank,
        )

    def warm(self, planned: planning.PlannedRun) -> None:
        """Start loading the models the plan calls (an in-process model loads while the book
        is searched)."""
        for backend in planning.backends_called(planned):
            backend.warm(self.notice, decisions_only=planning.decisions_only(planned, backend))

    def find(
        self, index: Index, embedder: str, budget: Budget | None = None, context_tokens: int | None = None
    ) -> FindResult:
        """Retrieve and segment on the book's `index` (with `embedder`'s vectors): every paragraph lands in one ranked
        segment. The settings' `retrieval` ranks paragraphs by "fused" (BM25 with context, by
        section and the dense embedder, by reciprocal rank), "bm25" or "dense"; a follow-up is
        retrieved with the question of the turn it follows joined to it. The budget is fitted
        to the book (and to an Interpreter of `context_tokens`), unless `budget` is given fitted
        (the plan's; the session checked the retrieval method before opening `index`). The run's hints: what the reader adds (words for the lexical side, a
        paragraph whose neighbourhood ranks first, a limit: pipeline.find)."""
        budget = budget or self.budget(context_tokens)
        return pipeline.find(index, self.question, budget, self.settings.retrieval, embedder, self.follows, self.hints)

    def answer(self, planned: planning.PlannedRun, found: FindResult, progress: Progress | None = None) -> Trace:
        """Answer the question (or verify a claim) with quoted paragraphs as `planned`, from
        what was `found`: read, pack, interpret and decide (pipeline.run). The Trace holds the
        answer (None if no reply parsed, or the quotes do not support it), the plan, and every
        step, with what was skipped and why."""
        if self.notice:
            for line in small_model_notices(self.question, self.settings.answering, planned):
                self.notice(line)
        return pipeline.run(planned, found, packet=self.stages.packet, progress=progress, follows=self.follows)


def small_model_notices(question: Question, answering: AnswerSettings, planned: planning.PlannedRun) -> list[str]:
    """What a model too small to write or judge changes, said before the answer."""
    lines = []
    plan, selection = planned.plan, planned.backends
    if plan.judge_unavailable:
        lines.append(f"{plan.judge_unavailable}: the retriever's rank fills the packet instead")
    if plan.reader_unavailable:
        lines.append(f"{plan.reader_unavailable}: the sentence ranker picks the answer's words instead")
    if question.is_open and answering.answer_mode == AUTO and plan.answer_mode == AnswerMode.EXTRACTIVE:
        lines.append(
            "answers extractively: the model is too small to write them (answer.mode=generative overrides it)"
        )
    if not question.is_open and answering.judge_anyway and holds(JUDGES_AT_CHANCE, selection.interpreter):
        # asked for anyway: say how little the verdict is worth
        lines.append(
            "the model is too small to judge options or claims: its verdict is near chance "
            "(cwread doctor says how to run one that reads); judged anyway, it reads the packet "
            f"(up to {plan.budget.b_c:,} characters) {'twice, with its self-check' if plan.self_check else 'once'}"
        )
    return lines
