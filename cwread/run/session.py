"""A reading session: one book held open for as many questions as the caller asks.

It holds what a question needs and a second question would otherwise build again: the
document, its indexes (one per embedder), the embedder, the backends (selected once, behind
the call cache) and the sentence ranker (the book's word rarities). Each question is carried
through the method by its own run (cwread.run.question_run.QuestionRun), which borrows them.
`cwread.api.ask` and `find` are one-call conveniences over a session; a conversation or a
tool server keeps one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from cwread.agents.finder import Finder
from cwread.answer import extractive
from cwread.backends.select import Selection, select, with_call_cache
from cwread.book import Document
from cwread.progress import Progress
from cwread.records import FindResult
from cwread.records.question import NO_HINTS, Hints, Question, leans_on_previous
from cwread.records.trace import Trace, Turn
from cwread.retrieval.embedders import Embedder, load_embedder
from cwread.retrieval.fusion import Index, open_index
from cwread.retrieval.segments import Budget, fit_budget, make_budget
from cwread.run.question_run import QuestionRun, Stages
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

    def budget_for(self, budget: Budget | None = None, context_tokens: int | None = None) -> Budget:
        """`budget` (default: auto) fitted to this book and an Interpreter of `context_tokens`."""
        return fit_budget(budget or make_budget(), self.document.lengths, context_tokens)

    def has_index(self, embedder: str) -> bool:
        """Whether the book's indexes with `embedder`'s vectors are open already."""
        with self._lock:
            return embedder in self._indexes

    # ---- questions: each one run's own (cwread.run.question_run) ------------------------------

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
        asked = QuestionRun(self, question, RunSettings(budget, retrieval), follows=follows)
        return asked.find(progress, hints, context_tokens)

    def plan(self, question: Question, run: RunSettings | None = None, notice: Notice | None = None):
        """What a run of `question` with `run` will do on this book, and with what
        (QuestionRun.plan)."""
        return QuestionRun(self, question, run, notice=notice).plan()

    def ask(
        self,
        question: Question,
        run: RunSettings | None = None,
        *,
        finder: Finder | None = None,
        progress: Progress | None = None,
        notice: Notice | None = None,
        follows: Turn | None = None,
        hints: Hints = NO_HINTS,
    ) -> Trace:
        """Answer a question (or verify a claim) about the book with quoted paragraphs
        (QuestionRun.answer). `run` says what is asked of each stage (RunSettings; `finder`
        reads in place of the one it would choose); `notice` hears which backend runs (when
        first selected) and what a small model changes; `follows`: the earlier turn a follow-up
        leans on (see Conversation); `hints`, what the reader adds to its retrieval (its limit)."""
        asked = QuestionRun(
            self, question, run, stages=Stages(finder=finder), follows=follows, notice=notice, hints=hints
        )
        return asked.answer(progress)


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
