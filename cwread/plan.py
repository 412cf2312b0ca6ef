"""What a run is asked for (the answer and Finder settings, checked once) and what it will
do (the Plan resolved from them before any model call, recorded in the trace)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

from cwread.errors import InputError
from cwread.retrieval.segments import Budget


class AnswerMode(StrEnum):
    """How an answer is given. The first three are the choices for an open question:
    generative-or-extractive is the model's words if its quotes cover them, else the
    best-fitting sentence (auto's choice for a model that writes); evidence-only asks no
    verdict of a model that judges at chance and shows only the best evidence; passages gives
    an open question on a novel no extractive answer where no model reads (the book's own
    description of a name excepted), only the passages that fit it best, each with its
    chapter: there the extractive answer quoted the answer too seldom to be shown
    (benchmarks/README.md, "Passages on novels")."""

    GENERATIVE = "generative"
    EXTRACTIVE = "extractive"
    GENERATIVE_OR_EXTRACTIVE = "generative-or-extractive"
    EVIDENCE_ONLY = "evidence-only"
    PASSAGES = "passages"


ANSWER_CHOICES = (AnswerMode.GENERATIVE, AnswerMode.EXTRACTIVE, AnswerMode.GENERATIVE_OR_EXTRACTIVE)
ANSWER_MODES = tuple(AnswerMode)


class SupportMethod(StrEnum):
    """How `supported` is decided (cwread.answer.support): WORDS needs every content word of an open
    answer quoted (an option or claim: a tenth of its words' weight in the book); CONFIDENCE
    also shows an open answer whose words the model was sure of (the mean log-probability of
    its tokens at least the threshold the user calibrated for it, --min-confidence) when its
    quotes name whom it names; MODEL asks the Interpreter's model whether the quotes state or
    imply the answer and holds its score to the threshold the user calibrated for it
    (--support-threshold)."""

    MODEL = "model"
    CONFIDENCE = "confidence"
    WORDS = "words"


SUPPORT_METHODS = tuple(SupportMethod)


class Extract(StrEnum):
    """How an extractive answer is cut from the best sentences: SPAN, the words the span
    reader chooses (cwread.answer.span_scorer), or SENTENCE, the best sentence whole (a
    why-question's reason clause). A novel gets the sentence: the span reader, fit on short
    tales, lost to it there (dev novels, token-F1: benchmarks/README.md, "Extractive answers")."""

    SPAN = "span"
    SENTENCE = "sentence"


EXTRACTS = tuple(Extract)


class PacketSource(StrEnum):
    """Where a run's packet comes from: FINDER (the Finder judges the segments read),
    ALL_READ (no Finder runs: every segment read is taken as kept) or GIVEN (an ablation or
    baseline gave the packet)."""

    FINDER = "finder"
    ALL_READ = "all-read"
    GIVEN = "given"


class FinderUse(StrEnum):
    """--finder: AUTO skips a model Finder measured to keep nearly every segment it reads (the
    retriever's rank fills the packet), else runs it; JUDGE runs the judge (cwread.agents.cross_encoder);
    ON runs the model Finder; OFF takes every segment read as kept."""

    AUTO = "auto"
    JUDGE = "judge"
    ON = "on"
    OFF = "off"


FINDER_CHOICES = tuple(FinderUse)
# quote-first: the clue's quote, then YES or NO; decision-first: YES or NO, a kept segment's quote
# after it; score: YES or NO alone, decided by its log-odds (no quote); auto: the reply a trained
# adapter was trained on, else quote-first: cwread.agents.finder
AUTO = "auto"  # a setting left to cwread (the answer mode, the Finder's reply): the plan decides
QUOTE_FIRST, DECISION_FIRST = "quote-first", "decision-first"  # how a generative Finder replies
SCORE = "score"  # the Finder replies YES or NO alone, its score read off the first token
FINDER_REPLIES = (AUTO, QUOTE_FIRST, DECISION_FIRST, SCORE)
READ_TOKENS_CHOICES = "a number of tokens, auto or none"
READER_CHOICES = (AUTO, "off")  # the answer reader: the one installed, or none


def _check_threshold(value: object, name: str) -> None:
    """InputError unless a score threshold is None or a finite number."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)):
        raise InputError(f"the {name} threshold must be a finite number, not {value!r}")


@dataclass(frozen=True)
class AnswerSettings:
    """How a retrieved question is answered: `answer_mode` for open questions (ANSWER_CHOICES,
    or auto: extractive for a model too small to write); `self_check` (None: for claims and
    risky questions with options, cwread.agents.interpreter.self_check_decision); `judge_anyway`: ask
    a model that judges at chance for a verdict on options and claims all the same;
    `support_threshold`: ask the Interpreter's model whether the quotes support its answer, and
    pass it at this score (None: no such call; the words decide, see cwread.answer.support);
    `confidence_threshold`: the mean token log-probability at which a model's open answer whose
    words are not all quoted is shown all the same (None: never, the words decide);
    `answer_threshold`: the trained Finder's score under which an extractive answer's best
    paragraph is no answer (None: the one chosen for its adapter on dev data); `reader`: the
    answer reader picks an extractive answer's words ("auto": the one cwread ships, or
    $CWREAD_READER; "off": the sentence ranker and span rules alone), and `reader_threshold`
    is its score under which none is shown (None: the reader's own, chosen on dev data)."""

    answer_mode: str = "auto"
    self_check: bool | None = None
    judge_anyway: bool = False
    support_threshold: float | None = None
    confidence_threshold: float | None = None
    answer_threshold: float | None = None
    reader: str = AUTO
    reader_threshold: float | None = None

    def __post_init__(self) -> None:
        if self.answer_mode not in (*ANSWER_CHOICES, AUTO):
            raise InputError(
                f"unknown answer mode {self.answer_mode!r}; choose one of: {', '.join((*ANSWER_CHOICES, AUTO))}"
            )
        if self.reader not in READER_CHOICES:
            raise InputError(f"unknown answer reader {self.reader!r}; choose one of: {', '.join(READER_CHOICES)}")
        _check_threshold(self.reader_threshold, "reader")
        _check_threshold(self.support_threshold, "support")
        _check_threshold(self.confidence_threshold, "confidence")
        _check_threshold(self.answer_threshold, "answer")


# A question asked (ask, verify, chat, MCP, the API's default) reads what its Finder reads in
# about half a minute here; eval states no cap unless told (its runs compare across machines).
ASKED_READ_TOKENS = "auto"
EVAL_READ_TOKENS = None


@dataclass(frozen=True)
class FinderSettings:
    """How the Finder runs, validated once, here.

    `use`: auto (skip a model Finder measured to keep nearly every segment it reads: its calls
    cannot change the answer), judge (cwread.agents.cross_encoder), on (the model) or off (every segment
    read is taken as kept).
    `read_tokens`: prompt tokens it reads at most, in rank order: a number, "auto" (what it
    reads in about half a minute at the rate measured for it: cwread.agents.reading_budget; the
    default, as every question asked) or None (no cap but the budget's `read`: eval's, stated
    there); the flag's text ("2000", "auto", "none") is read here.
    `reply`: one of FINDER_REPLIES. `keep_threshold`: a segment is kept when its score,
    ln P(YES) - ln P(NO) (the judge's: its logit), reaches this, whatever its label (None:
    the judge's own threshold for the judge, a trained adapter's for it, else the label
    decides; a verdict without a score keeps its label).
    """

    use: FinderUse = FinderUse.AUTO
    read_tokens: int | str | None = ASKED_READ_TOKENS
    reply: str = "auto"
    keep_threshold: float | None = None

    def __post_init__(self) -> None:
        if self.use not in FINDER_CHOICES:
            raise InputError(f"--finder must be one of {', '.join(FINDER_CHOICES)}, not {self.use!r}")
        object.__setattr__(self, "use", FinderUse(self.use))
        object.__setattr__(self, "read_tokens", _read_tokens(self.read_tokens))
        if self.reply not in FINDER_REPLIES:
            raise InputError(f"--finder-reply must be one of {', '.join(FINDER_REPLIES)}, not {self.reply!r}")
        _check_threshold(self.keep_threshold, "keep")


def _read_tokens(value: int | str | None) -> int | str | None:
    """`read_tokens` as FinderSettings holds it: a positive number, "auto" or None."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("auto", "none"):
            return None if text == "none" else "auto"
        if text.isdigit() and int(text) > 0:
            return int(text)
    elif isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise InputError(f"--read-tokens must be {READ_TOKENS_CHOICES}, not {value!r}")


@dataclass(frozen=True)
class RunSettings:
    """What a question's run is asked for, grouped by stage, as every entry point (the CLI,
    chat, MCP, `api`) builds it once and a session resolves it into a Plan: `budget`,
    retrieval and packing (cwread.retrieval.segments; None: auto, fitted to the book); `retrieval`,
    how anchors are ranked (fused, bm25, dense); `finding`, how the Finder reads; `answering`,
    how the answer is given. The backends are the session's own (BackendSettings)."""

    budget: Budget | None = None
    retrieval: str = "fused"
    finding: FinderSettings = FinderSettings()
    answering: AnswerSettings = AnswerSettings()


@dataclass(frozen=True)
class Plan:
    """What one question's run will do, resolved once before any model call and recorded in
    the trace, so the view, `api`, `eval` and `doctor` read it rather than derive it again.

    `answer_mode`: one of ANSWER_MODES, as the question will be answered. `evidence`: where
    the packet comes from (PacketSource; with no Finder, `finder_skipped` says why).
    `finder`: the judge that reads (its reply, or "scripted"; None when none runs), with its
    `read_tokens` and `keep_threshold` as FinderSettings has them. `verdict`: options and
    claims are given the Interpreter's verdict. `interpreter`: the Interpreter is asked (not for an extractive answer or a
    withheld verdict); `self_check`: its second pass follows a readable first answer
    (`self_check_skipped`: why auto leaves out a pass τ(q) names).
    `budget`: the budget fitted to the book and the Interpreter, with why
    (cwread.retrieval.segments.fit_budget); None where the caller gave none to fit. `support`: how
    the answer's support is checked (SUPPORT_METHODS; None: no model answer to check), and
    `support_threshold` the score the model's check must reach. `extract`: how an
    extractive answer to an open question is cut (EXTRACTS; None for options and claims).
    `judge_unavailable`: why the judge (cwread.agents.cross_encoder) that would have read could not be
    loaded; the rank fills the packet instead. `answer_threshold`: an extractive answer's
    best-fitting paragraphs are judged by the trained Finder (cwread.agents.finder.ParagraphJudge),
    and none scoring this much means no answer (None: not judged). `answer_reader`: the answer
    reader (cwread.agents.extractive_qa) picks the words of that paragraph, none shown under
    `reader_threshold`; `reader_unavailable`: why it could not be loaded.
    """

    answer_mode: AnswerMode
    evidence: PacketSource
    finder: str | None
    finder_skipped: str | None
    read_tokens: int | str | None
    keep_threshold: float | None
    verdict: bool
    interpreter: bool
    self_check: bool
    budget: Budget | None = None
    support: SupportMethod | None = None
    support_threshold: float | None = None
    extract: Extract | None = None
    self_check_skipped: str | None = None
    judge_unavailable: str | None = None  # why the judge that would read could not be loaded
    answer_threshold: float | None = None  # the trained Finder judges an extractive answer's paragraphs
    answer_reader: str | None = None  # the answer reader's name, where it picks an extractive answer's words
    reader_threshold: float | None = None  # its score under which no extractive answer is shown
    reader_unavailable: str | None = None  # why the answer reader could not be loaded
