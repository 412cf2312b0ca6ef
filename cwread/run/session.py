"""A reading session: one book held open for as many questions as the caller asks.

It holds what a question needs and a second question would otherwise build again: the
document, its indexes (one per embedder), the embedder, the backends (selected once, behind
the call cache) and the sentence ranker (the book's word rarities). Each question is carried
through the method by its own run (cwread.run.question_run.QuestionRun), handed what it needs
opened: the run never calls back.
`cwread.api.ask` and `find` are one-call conveniences over a session; a conversation or a
tool server keeps one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace

from cwread.answer import extractive
from cwread.backends.select import Selection, select, with_call_cache
from cwread.book import Document
from cwread.progress import Progress
from cwread.records.question import NO_HINTS, Hints, Question, leans_on_previous
from cwread.records.stages import FindResult
from cwread.records.trace import Trace, Turn
from cwread.retrieval.embedders import Embedder, load_embedder
from cwread.retrieval.fusion import check_method
from cwread.retrieval.index import Index, open_index
from cwread.retrieval.segments import Budget
from cwread.run import planning
from cwread.run.question_run import NO_STAGES, QuestionRun, Stages
from cwread.settings import RunSettings, SessionSettings

Notice = Callable[[str], None]


class Session:
    """A book open for questions (see module doc). Backends are selected on the first
    `ask` (or by `selection()`), from `selection` if given, else from `settings.backends`,
    behind cwread's call cache unless `settings.use_cache` is False. Safe to share between
    threads. `close()` (or a `with` block) stops what the session started (a model it runs in
    this process, its threads); a question asked after it starts them again. What is never
    closed is closed at the interpreter's exit."""

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
        self._selected_here = False  # a selection given is the caller's to close
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
                self._selected_here = True
            return self._selection

    def close(self) -> None:
        """Stop the backends this session selected (a model it runs in-process, its threads);
        the book and its indexes stay open, and a later question selects them again."""
        with self._lock:
            selection, selected_here = self._selection, self._selected_here
            if selected_here:
                self._selection, self._selected_here = None, False
        if selection is not None and selected_here:
            selection.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

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

    def has_index(self, embedder: str) -> bool:
        """Whether the book's indexes with `embedder`'s vectors are open already."""
        with self._lock:
            return embedder in self._indexes

    # ---- questions: each one run's own (cwread.run.question_run) ------------------------------

    def _found(
        self,
        asked: QuestionRun,
        progress: Progress | None = None,
        budget: Budget | None = None,
        context_tokens: int | None = None,
    ) -> FindResult:
        """`asked` retrieved on this book's index for its retrieval, opened (and built, the
        first time) here; the trace's timings say how long opening took and what was built."""
        embedder = self.embedder_for(asked.settings.retrieval)
        check_method(asked.settings.retrieval)
        t0 = time.perf_counter()
        opened = self.has_index(embedder)
        index = self.index(embedder, progress)
        seconds = time.perf_counter() - t0
        found = asked.find(index, embedder, budget, context_tokens)
        return replace(
            found,
            timings={"index": round(seconds, 4), **found.timings},
            built=() if opened else tuple(index.built),
        )

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
        """Retrieve and segment (QuestionRun.find) with `budget` and `retrieval`."""
        asked = QuestionRun(self.document, question, RunSettings(budget, retrieval), follows=follows, hints=hints)
        return self._found(asked, progress, context_tokens=context_tokens)

    def _planned(self, asked: QuestionRun) -> planning.PlannedRun:
        """`asked`'s plan with this session's backends (selected first: a bad setting or a
        missing server is told before any work) and the book's sentence ranker."""
        backends = asked.stages.backends or self.selection(asked.notice)
        return asked.plan(backends, self.ranker(self.embedder_for(asked.settings.retrieval)))

    def plan(self, question: Question, run: RunSettings | None = None, notice: Notice | None = None):
        """What a run of `question` with `run` will do on this book, and with what
        (QuestionRun.plan)."""
        return self._planned(QuestionRun(self.document, question, run, notice=notice))

    def ask(
        self,
        question: Question,
        run: RunSettings | None = None,
        *,
        stages: Stages = NO_STAGES,
        found: FindResult | None = None,
        progress: Progress | None = None,
        notice: Notice | None = None,
        follows: Turn | None = None,
        hints: Hints = NO_HINTS,
    ) -> Trace:
        """Answer a question (or verify a claim) about the book with quoted paragraphs
        (QuestionRun.answer): plan, warm the models the plan calls, find (unless `found` is
        given), then read, pack, interpret and decide. `run` says what is asked of each stage
        (RunSettings; `stages` puts a caller's parts in place of those it would choose);
        `notice` hears which backend runs (when first selected) and what a small model
        changes; `follows`: the earlier turn a follow-up leans on (see Conversation); `hints`,
        what the reader adds to its retrieval (its limit)."""
        asked = QuestionRun(self.document, question, run, stages=stages, follows=follows, notice=notice, hints=hints)
        planned = self._planned(asked)
        asked.warm(planned)
        if found is None:
            found = self._found(asked, progress, budget=planned.plan.budget)
        return asked.answer(planned, found, progress)


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
