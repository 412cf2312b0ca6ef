"""A reading session: one book held open for as many questions as the caller asks.

It holds what a question needs and a second question would otherwise build again: the
document, its indexes (one per embedder), the embedder, the backends (selected once, behind
the call cache), the sentence ranker (the book's word rarities) and the Finder's reading
budget. `cwread.api.ask` and `find` are one-call conveniences over a session; a
conversation or a tool server keeps one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace

from cwread import pipeline, planning
from cwread.agents.finder import Finder
from cwread.agents.model_facts import JUDGES_AT_CHANCE, holds
from cwread.answer import extractive
from cwread.backends.select import Selection, select, with_call_cache
from cwread.book import Document
from cwread.plan import AUTO, AnswerMode
from cwread.progress import Progress
from cwread.question import NO_HINTS, Hints, Question, leans_on_previous
from cwread.records import FindResult
from cwread.retrieval.embedders import Embedder, load_embedder
from cwread.retrieval.fusion import Index, check_method, open_index
from cwread.retrieval.segments import Budget, fit_budget, make_budget
from cwread.settings import AnswerSettings, RunSettings, SessionSettings
from cwread.trace import Trace, Turn

Notice = Callable[[str], None]


class Session:
    """A book open for questions (see module doc). Backends are selected on the first
    `ask` (or by `selection()`), from `selection` if given, else from `settings.backends`,
    behind cwread's call cache unless `settings.use_cache` is False. Safe to share between
    threads."""

    def __init__(
        self,
        document: Document,
        settings: SessionSettings | None = None,
        *,
        selection: Selection | None = None,
    ) -> None:
        self.document = document
        self.settings = settings or SessionSettings()
        use_cache = self.settings.use_cache
        self._selection = with_call_cache(selection) if selection is not None and use_cache else selection
        self._embedders: dict[str, Embedder | None] = {}
        self._indexes: dict[str, Index] = {}
        self._rankers: dict[str, extractive.SentenceRanker] = {}
        self._lock = threading.RLock()

    # ---- what the session holds, built once -----------------------------------------------

    @property
    def embedder(self) -> str:
        """The dense model the session ranks by meaning with, unless a call names another."""
        return self.settings.embedder

    def selection(self, notice: Notice | None = None) -> Selection:
        """The Finder's and the Interpreter's backends, selected once; `notice` hears which
        backend runs and why when they are selected."""
        with self._lock:
            if self._selection is None:
                self._selection = select(self.settings.backends, self.settings.use_cache, notice)
            return self._selection

    def _embedder(self, name: str) -> Embedder | None:
        with self._lock:
            if name not in self._embedders:
                self._embedders[name] = load_embedder(name)
            return self._embedders[name]

    def index(self, embedder: str | None = None, progress: Progress | None = None) -> Index:
        """The book's indexes with `embedder`'s vectors (default: the session's), opened once."""
        name = embedder or self.embedder
        with self._lock:
            if name not in self._indexes:
                self._indexes[name] = open_index(self.document, self._embedder(name), progress)
            return self._indexes[name]

    def embedder_for(self, retrieval: str) -> str:
        """The embedder a retrieval method ranks with: none for BM25 alone."""
        return "none" if retrieval == "bm25" else self.embedder

    def ranker(self, embedder: str | None = None) -> extractive.SentenceRanker:
        """How extractive answers rank the book's sentences and a label's words are weighed
        (see cwread.answer.extractive), built once."""
        name = embedder or self.embedder
        with self._lock:
            if name not in self._rankers:
                self._rankers[name] = extractive.sentence_ranker(self.document, self._embedder(name))
            return self._rankers[name]

    def budget_for(self, budget: Budget | None = None, context_tokens: int | None = None) -> Budget:
        """`budget` (default: auto) fitted to this book and an Interpreter of `context_tokens`."""
        return fit_budget(budget or make_budget(), self.document.lengths, context_tokens)

    # ---- questions ------------------------------------------------------------------------

    def find(
        self,
        question: Question,
        budget: Budget | None = None,
        retrieval: str = "fused",
        progress: Progress | None = None,
        follows: Turn | None = None,
        context_tokens: int | None = None,
        hints: Hints = NO_HINTS,
    ) -> FindResult:
        """Retrieve and segment: every paragraph lands in one ranked segment. `retrieval` ranks
        paragraphs by "fused" (BM25 with context, by section and the dense embedder, by
        reciprocal rank), "bm25" or "dense"; a follow-up is retrieved with the question of the
        turn it `follows` joined to it. The budget is fitted to the book (and to an Interpreter
        of `context_tokens`, where known): `budget_for`. `hints`: what the reader adds (words
        for the lexical side, a paragraph whose neighbourhood ranks first: pipeline.find)."""
        check_method(retrieval)
        budget = self.budget_for(budget, context_tokens)
        embedder = self.embedder_for(retrieval)
        t0 = time.perf_counter()
        with self._lock:
            opened = embedder in self._indexes
        index = self.index(embedder, progress)
        seconds = time.perf_counter() - t0
        found = pipeline.find(index, question, budget, retrieval, embedder, follows, hints)
        return replace(
            found,
            timings={"index": round(seconds, 4), **found.timings},
            built=() if opened else tuple(index.built),
        )

    def plan(
        self,
        question: Question,
        run: RunSettings | None = None,
        finder: Finder | None = None,
        notice: Notice | None = None,
        packet_given: bool = False,
    ) -> planning.PlannedRun:
        """What a run of `question` with `run` will do on this book, and with what (see
        planning.PlannedRun): the backends selected (first: a bad setting or a missing server
        is told before any work), the budget fitted to the book and the Interpreter, the
        Finder that reads (`finder` replaces the one the settings choose), the book's sentence
        ranker; `packet_given`: the caller packs (eval's ablations)."""
        run = run or RunSettings()
        selection = self.selection(notice)
        budget = self.budget_for(run.budget, selection.interpreter.capabilities.context)
        return planning.plan_run(
            question,
            selection,
            run,
            packet_given=packet_given,
            finder=finder,
            budget=budget,
            paragraphs=len(self.document.paragraphs),
            rank=self.ranker(self.embedder_for(run.retrieval)),
        )

    def ask(
        self,
        question: Question,
        run: RunSettings | None = None,
        *,
        finder: Finder | None = None,
        progress: Progress | None = None,
        notice: Notice | None = None,
        follows: Turn | None = None,
    ) -> Trace:
        """Answer a question (or verify a claim) about the book with quoted paragraphs.

        `run` says what is asked of each stage (RunSettings; `finder` replaces the judge it
        would choose); `notice` hears which backend runs (when first selected) and what a
        small model changes. The Trace holds the answer (None if no reply parsed, or the
        quotes do not support it; `Trace.failure` says why), the plan, and every step, with
        what was skipped and why. `follows`: the earlier turn a follow-up leans on (see
        Conversation)."""
        run = run or RunSettings()
        planned = self.plan(question, run, finder, notice)
        for backend in planning.backends_called(planned):
            # an in-process model loads while the book is searched
            backend.warm(notice, decisions_only=planning.decisions_only(planned, backend))
        found = self.find(question, planned.plan.budget, run.retrieval, progress, follows)
        if notice:
            for line in small_model_notices(question, run.answering, planned):
                notice(line)
        return pipeline.run(planned, found, progress=progress, follows=follows)


class Conversation:
    """Questions asked one after another on a session: a question that leans on the last one
    (`question.leans_on_previous`: "why did she hide it?") is retrieved with the last question's
    words and answered with the last turn in view; its trace records the turn it followed."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.turns: list[Turn] = []

    def ask(self, question: Question, run: RunSettings | None = None, **options) -> Trace:
        """Session.ask, as a turn of this conversation."""
        last = self.turns[-1] if self.turns else None
        follows = last if last is not None and leans_on_previous(question) else None
        trace = self.session.ask(question, run, follows=follows, **options)
        self.turns.append(Turn(len(self.turns) + 1, question.text, trace.answer))
        return trace


def small_model_notices(
    question: Question, answering: AnswerSettings, planned: planning.PlannedRun
) -> list[str]:
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
