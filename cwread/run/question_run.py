"""One question's run, start to end, and its one owner: plan, find, read, pack, answer.

A reading session (cwread.run.session) holds what every question of a book needs: the book, its
indexes, the embedders, the backends selected once, the sentence rankers. A QuestionRun
borrows them (`BookHeld`) and carries one question through the method: the Plan resolved
before any model call (cwread.run.planning), retrieval (pipeline.find), then the Finder, packing,
the Interpreter and the answer (pipeline.run). A caller puts its own part in place of one the
settings would choose by one mechanism, `Stages` (eval's ablations: its backends, a packet).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from cwread.agents.finder import Finder
from cwread.agents.model_facts import JUDGES_AT_CHANCE, holds
from cwread.answer import extractive
from cwread.backends.select import Selection
from cwread.book import Document
from cwread.progress import Progress
from cwread.records import FindResult, Packet
from cwread.records.plan import AUTO, AnswerMode
from cwread.records.question import NO_HINTS, Hints, Question
from cwread.records.trace import Trace, Turn
from cwread.retrieval.fusion import Index, check_method
from cwread.retrieval.segments import Budget
from cwread.run import pipeline, planning
from cwread.settings import AnswerSettings, RunSettings

Notice = Callable[[str], None]


class BookHeld(Protocol):
    """What a run borrows from the session that holds its book (cwread.run.session.Session)."""

    document: Document

    def selection(self, notice: Notice | None = None) -> Selection: ...
    def index(self, embedder: str | None = None, progress: Progress | None = None) -> Index: ...
    def has_index(self, embedder: str) -> bool: ...
    def embedder_for(self, retrieval: str) -> str: ...
    def ranker(self, embedder: str | None = None) -> extractive.SentenceRanker: ...
    def budget_for(self, budget: Budget | None = None, context_tokens: int | None = None) -> Budget: ...


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
    """`question` carried through the method on `held`'s book, as `settings` ask (see the
    module): `plan`, `find`, `answer`. `follows`: the earlier turn a follow-up leans on;
    `notice` hears which backend runs (when first selected) and what a small model changes;
    `hints`, what the reader adds to its retrieval (pipeline.find)."""

    def __init__(
        self,
        held: BookHeld,
        question: Question,
        settings: RunSettings | None = None,
        *,
        stages: Stages = NO_STAGES,
        follows: Turn | None = None,
        notice: Notice | None = None,
        hints: Hints = NO_HINTS,
    ) -> None:
        self.held = held
        self.hints = hints  # what the reader adds to the question's retrieval (its limit, say)
        self.question = question
        self.settings = settings or RunSettings()
        self.stages = stages
        self.follows = follows
        self.notice = notice

    def plan(self) -> planning.PlannedRun:
        """What this run will do, and with what (see planning.PlannedRun): the backends
        selected (first: a bad setting or a missing server is told before any work), the
        budget fitted to the book and the Interpreter, the Finder that reads, the book's
        sentence ranker."""
        run, held = self.settings, self.held
        selection = self.stages.backends or held.selection(self.notice)
        budget = held.budget_for(run.budget, selection.interpreter.capabilities.context)
        return planning.plan_run(
            self.question,
            selection,
            run,
            packet_given=self.stages.packet is not None,
            finder=self.stages.finder,
            budget=budget,
            paragraphs=len(held.document.paragraphs),
            rank=held.ranker(held.embedder_for(run.retrieval)),
        )

    def find(
        self,
        progress: Progress | None = None,
        hints: Hints = NO_HINTS,
        context_tokens: int | None = None,
        budget: Budget | None = None,
    ) -> FindResult:
        """Retrieve and segment: every paragraph lands in one ranked segment. The settings'
        `retrieval` ranks paragraphs by "fused" (BM25 with context, by section and the dense
        embedder, by reciprocal rank), "bm25" or "dense"; a follow-up is retrieved with the
        question of the turn it follows joined to it. The budget is fitted to the book (and to
        an Interpreter of `context_tokens`, where known), unless `budget` is given fitted (the
        plan's). `hints`: what the reader adds (words for the lexical side, a paragraph whose
        neighbourhood ranks first: pipeline.find)."""
        run, held = self.settings, self.held
        check_method(run.retrieval)
        budget = budget or held.budget_for(run.budget, context_tokens)
        embedder = held.embedder_for(run.retrieval)
        t0 = time.perf_counter()
        opened = held.has_index(embedder)
        index = held.index(embedder, progress)
        seconds = time.perf_counter() - t0
        found = pipeline.find(index, self.question, budget, run.retrieval, embedder, self.follows, hints)
        return replace(
            found,
            timings={"index": round(seconds, 4), **found.timings},
            built=() if opened else tuple(index.built),
        )

    def answer(self, progress: Progress | None = None, found: FindResult | None = None) -> Trace:
        """Answer the question (or verify a claim) with quoted paragraphs: plan, find (unless
        `found` is given), then read, pack, interpret and decide (pipeline.run). The Trace holds
        the answer (None if no reply parsed, or the quotes do not support it), the plan, and
        every step, with what was skipped and why."""
        planned = self.plan()
        for backend in planning.backends_called(planned):
            # an in-process model loads while the book is searched
            backend.warm(self.notice, decisions_only=planning.decisions_only(planned, backend))
        if found is None:
            found = self.find(progress, self.hints, budget=planned.plan.budget)
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
            "answers extractively: the model is too small to write them (--answer generative to override)"
        )
    if not question.is_open and answering.judge_anyway and holds(JUDGES_AT_CHANCE, selection.interpreter):
        # asked for anyway: say how little the verdict is worth
        lines.append(
            "the model is too small to judge options or claims: its verdict is near chance "
            "(cwread doctor says how to run one that reads); judged anyway, it reads the packet "
            f"(up to {plan.budget.b_c:,} characters) {'twice, with its self-check' if plan.self_check else 'once'}"
        )
    return lines
