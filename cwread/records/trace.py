"""The record of one question's run (Trace): what was found, planned, read, packed, asked and
presented, with what each stage cost and why any was skipped; and the reports of index and
doctor."""

from __future__ import annotations

from dataclasses import dataclass, field

from cwread.book import Document
from cwread.errors import EXIT_CLAIM_FALSE, EXIT_NO_ANSWER
from cwread.records.plan import Plan
from cwread.records.question import Question
from cwread.records.stages import (
    EMPTY_PACKET,
    NO_ANSWER,
    AgentCall,
    FindResult,
    ModelCall,
    Outcome,
    Packet,
    Status,
    Verdict,
)
from cwread.retrieval.segments import Budget, Segment


@dataclass(frozen=True)
class Turn:
    """An earlier question of a conversation and the answer given, as a follow-up sees it:
    its words join the retrieval's queries and the Interpreter is shown it as conversation,
    never as evidence."""

    number: int  # 1-based, in the conversation
    question: str
    answer: str | None


@dataclass(frozen=True)
class Unread:
    """Segments the Finder was to read but did not: its token budget was spent first."""

    segments: tuple[Segment, ...]
    budget_tokens: int
    why: str  # how the budget was set


@dataclass(frozen=True)
class Trace:
    """Everything one question produced, from the retrieval it started from (`found`) to the
    answer, for the Rich view, `--json` and the eval harness. A run that stops early (the eval's
    retrieval and Finder methods) leaves the later stages at their defaults."""

    found: FindResult
    plan: Plan | None = None  # None: a run that stopped before answering (the eval's retrieval)
    verdicts: tuple[Verdict, ...] = ()
    packet: Packet = EMPTY_PACKET
    interpreter: AgentCall | None = None
    self_check: AgentCall | None = None
    models: dict[str, str] = field(default_factory=dict, hash=False)
    seconds: dict[str, float] = field(default_factory=dict, hash=False)  # the stages after retrieval
    outcome: Outcome = NO_ANSWER
    # stages not run because their calls could not change the answer: stage -> why
    skipped: dict[str, str] = field(default_factory=dict, hash=False)
    unread: Unread | None = None
    follows: Turn | None = None  # the earlier turn this question leaned on (a conversation's)

    @property
    def document(self) -> Document:
        return self.found.document

    @property
    def exit_code(self) -> int:
        """What `ask` or `verify` exits with: 4 when cwread stands behind no answer, 1 for a
        claim judged FALSE, else 0."""
        if self.status != Status.ANSWERED:
            return EXIT_NO_ANSWER
        false = self.question.form.false_label
        return EXIT_CLAIM_FALSE if false is not None and self.answer == false else 0

    @property
    def self_check_triggered(self) -> bool:
        """The plan has the self-check follow a readable first answer."""
        return self.plan is not None and self.plan.self_check

    @property
    def question(self) -> Question:
        return self.found.question

    @property
    def budget(self) -> Budget:
        return self.found.budget

    @property
    def segments(self) -> tuple[Segment, ...]:
        return self.found.segments

    @property
    def timings(self) -> dict[str, float]:
        """Seconds per stage, retrieval's first, and their total."""
        stages = {**self.found.timings, **self.seconds}
        return {**stages, "total": round(sum(stages.values()), 3)}

    @property
    def status(self) -> Status:
        """Whether cwread stands behind the answer (see Status), as the answer stage set it."""
        return self.outcome.status

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
        return self.final.reply.reason if self.final else ""

    @property
    def citations(self) -> list[int]:
        """Paragraphs whose quotes support the answer, in order of first quote."""
        return list(dict.fromkeys(q.id for q in self.outcome.quotes))

    @property
    def agent_calls(self) -> list[AgentCall]:
        return [c for c in (self.interpreter, self.self_check) if c is not None]

    @property
    def model_calls(self) -> list[ModelCall]:
        """Every call to a model the run made: the Finder's, the Interpreter's, the support
        check's, the Finder's judgement of an extractive answer's paragraphs."""
        check = self.outcome.check
        support = [check.call] if check is not None and check.call is not None else []
        judged = list(self.outcome.judgement.calls) if self.outcome.judgement is not None else []
        return (
            [v.reply.call for v in self.verdicts]
            + [c.reply.call for c in self.agent_calls]
            + support
            + judged
        )

    def tokens(self) -> dict[str, int]:
        calls = self.model_calls
        return {
            "prompt": sum(c.prompt_tokens for c in calls),
            "completion": sum(c.completion_tokens for c in calls),
            "finder_prompt": sum(v.reply.call.prompt_tokens for v in self.verdicts),
            # of the prompt tokens, those the server's prompt cache held (a segment read before)
            "prompt_cached": sum(c.prompt_cached for c in calls),
            "finder_prompt_cached": sum(v.reply.call.prompt_cached for v in self.verdicts),
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
    settings_file: str = ""  # the settings file's path (cwread.environment.settings_path)
    settings: tuple[tuple[str, str], ...] = ()  # what it sets, a key shown as "(set)"

    @property
    def ok(self) -> bool:
        return self.backend_error is None
