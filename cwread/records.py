"""The records of a run: frozen dataclasses that the pipeline produces and everything reads.

One home for them, so the CLI's JSON, the Rich views, the eval harness and training see the
same objects. Only data and what follows directly from it; no model calls, no terminal.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cwread.document import Document
from cwread.segments import Budget, Segment

KINDS = ("mcq", "claim", "open")


@dataclass(frozen=True)
class Question:
    """What is asked: free text ("open"), options to choose from ("mcq"), or a claim to judge.

    Built and validated once by `cwread.api.make_question`; prompts, parser, pipeline and
    eval take it whole. `options` is empty unless the kind is "mcq".
    """

    text: str
    kind: str
    options: dict[str, str] = field(default_factory=dict, hash=False)

    @property
    def labels(self) -> list[str] | None:
        return list(self.options) if self.options else None


@dataclass(frozen=True)
class Quote:
    """A verbatim span of the book: paragraph `id`, characters [start, end) of its text."""

    id: int
    text: str
    start: int
    end: int


Forged = tuple[int, str]  # (id, text) of a quote that is not in its paragraph: never shown as support


@dataclass(frozen=True)
class ModelCall:
    """One agent call as the backend served it, after a retry if the first reply was unreadable."""

    raw: str = ""  # the last reply's text
    parsed_first_try: bool = True
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    cached: bool = False  # every attempt was answered from cwread's call cache
    label_logprobs: tuple[tuple[str, float], ...] = ()  # the last reply's, where the backend gives them


NO_CALL = ModelCall()  # a verdict no model gave (training data, hand-made packets)


@dataclass(frozen=True)
class Verdict:
    """The Finder's judgement of one segment."""

    segment: Segment
    decision: str  # "YES" or "NO"
    reason: str
    cited: tuple[int, ...] = ()  # cited ids inside the segment
    dropped: tuple[int, ...] = ()  # cited ids the Finder was not shown
    call: ModelCall = NO_CALL
    kept_on_failure: bool = False  # unparseable after a retry: kept, recall first
    quotes: tuple[Quote, ...] = ()  # its clue, found in the segment
    forged: tuple[Forged, ...] = ()

    @property
    def parsed_first_try(self) -> bool:
        return self.call.parsed_first_try

    @property
    def score(self) -> float | None:
        """The Finder's log-odds of YES over NO at its answer (ln P(YES) - ln P(NO)), where the
        backend gave log-probabilities; None otherwise, or for a reply that could not be read."""
        scores = dict(self.call.label_logprobs)
        if self.kept_on_failure or "YES" not in scores or "NO" not in scores:
            return None
        return scores["YES"] - scores["NO"]


@dataclass(frozen=True)
class AgentCall:
    """One Interpreter or self-check call, after parsing."""

    answer: str | None
    reason: str
    cited: tuple[int, ...]  # ids of its quotes that are in the book
    dropped: tuple[int, ...]  # ids it cited that it was not shown
    problem: str | None
    call: ModelCall
    quotes: tuple[Quote, ...] = ()  # found verbatim in the paragraphs it was shown
    forged: tuple[Forged, ...] = ()  # quoted but not there: dropped and counted

    @property
    def parsed_first_try(self) -> bool:
        return self.call.parsed_first_try


@dataclass(frozen=True)
class PacketItem:
    id: int
    text: str
    reason: str  # the Finder's reason for the segment the paragraph came from
    truncated: bool = False


@dataclass(frozen=True)
class Packet:
    items: tuple[PacketItem, ...]
    fallback: bool = False  # no segment was kept: the top retrieved segments were packed instead
    segments: tuple[tuple[int, int], ...] = ()  # spans of the segments the packet drew on
    left_out: tuple[int, ...] = ()  # paragraphs of those segments left out by the budgets

    @property
    def ids(self) -> list[int]:
        return [item.id for item in self.items]

    @property
    def chars(self) -> int:
        return sum(len(item.text) for item in self.items)

    def evidence(self) -> list[tuple[int, str]]:
        return [(item.id, item.text) for item in self.items]


@dataclass(frozen=True)
class FindResult:
    """Ranked candidate segments for a question, with what produced them."""

    document: Document
    question: Question
    budget: Budget
    method: str
    embedder: str
    segments: tuple[Segment, ...]
    paragraph_scores: tuple[float, ...]
    timings: dict[str, float] = field(default_factory=dict, hash=False)

    @property
    def anchors(self) -> list[int]:
        return sorted(a for s in self.segments for a in s.anchors)

    @property
    def read(self) -> tuple[Segment, ...]:
        """The segments the Finder reads: the first `budget.read`."""
        return self.segments[: self.budget.read]


# generative-or-extractive: the model's words if its quotes cover them, else the best-fitting
# sentence (auto's choice for a model that writes)
ANSWER_MODES = ("generative", "extractive", "generative-or-extractive")


@dataclass(frozen=True)
class Answer:
    """What cwread presents: the answer (None: not determined from the text, or no readable
    reply) and the quotes that support it."""

    text: str | None
    model_answer: str | None  # what the Interpreter wrote (None: no readable reply, or not asked)
    # "generative": the Interpreter's words; "extractive": the best-fitting quote; "evidence-only":
    # no verdict asked of a model that judges at chance, only the best evidence shown
    mode: str
    supported: bool  # the quotes back the answer (open: cover its content words)
    quotes: tuple[Quote, ...] = ()
    withheld: bool = False  # not determined from the text: the quotes are the best evidence

    @property
    def abstained(self) -> bool:
        return self.withheld


NO_ANSWER = Answer(None, None, "generative", False)


@dataclass(frozen=True)
class Unread:
    """Segments the Finder was to read but did not: its token budget was spent first."""

    segments: tuple[Segment, ...]
    budget_tokens: int
    why: str  # how the budget was set


@dataclass(frozen=True)
class Trace:
    """Everything one question produced, for the Rich view, `--json` and the eval harness."""

    document: Document
    question: Question
    budget: Budget
    method: str
    embedder: str
    segments: tuple[Segment, ...]
    verdicts: tuple[Verdict, ...]
    packet: Packet
    interpreter: AgentCall | None
    self_check: AgentCall | None
    self_check_triggered: bool
    models: dict[str, str] = field(hash=False)
    timings: dict[str, float] = field(default_factory=dict, hash=False)
    outcome: Answer = NO_ANSWER
    # stages not run because their calls could not change the answer: stage -> why
    skipped: dict[str, str] = field(default_factory=dict, hash=False)
    unread: Unread | None = None

    @property
    def final(self) -> AgentCall | None:
        """The answer that stands: the self-check's when it parsed, else the first one."""
        if self.self_check is not None and self.self_check.answer is not None:
            return self.self_check
        return self.interpreter

    @property
    def answer(self) -> str | None:
        """The answer cwread stands behind; None when the text does not determine one."""
        return self.outcome.text

    @property
    def reason(self) -> str:
        return self.final.reason if self.final else ""

    @property
    def citations(self) -> list[int]:
        """Paragraphs whose quotes support the answer, in order of first quote."""
        return list(dict.fromkeys(q.id for q in self.outcome.quotes))

    @property
    def agent_calls(self) -> list[AgentCall]:
        return [c for c in (self.interpreter, self.self_check) if c is not None]

    def tokens(self) -> dict[str, int]:
        calls = [v.call for v in self.verdicts] + [c.call for c in self.agent_calls]
        return {
            "prompt": sum(c.prompt_tokens for c in calls),
            "completion": sum(c.completion_tokens for c in calls),
            "finder_prompt": sum(v.call.prompt_tokens for v in self.verdicts),
        }


@dataclass(frozen=True)
class IndexReport:
    """What `index` built for a document, and where."""

    paragraphs: int
    built: tuple[str, ...]
    seconds: float
    cache_dir: str
    embedder: str


@dataclass(frozen=True)
class DoctorReport:
    """Which backend and embedder `ask` would use; `backend_error` says why none can run."""

    cache: str
    finder: str | None
    interpreter: str | None
    why: str | None
    backend_error: str | None
    embedder: str
    embedder_built: bool
    notes: tuple[str, ...] = ()  # advice on the backend chosen (e.g. Ollama's parallelism)
    advice: tuple[str, ...] = ()  # how to get better models, when only the embedded one runs

    @property
    def ok(self) -> bool:
        return self.backend_error is None
