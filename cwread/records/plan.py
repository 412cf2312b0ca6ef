"""What a run will do: the Plan resolved before any model call from what it is asked for
(cwread.settings), recorded in the trace, and the modes and sources it is written in."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from cwread.retrieval.segments import Budget


class AnswerMode(StrEnum):
    """How an answer is given. The first three are the choices for an open question:
    generative-or-extractive is the model's words if its quotes cover them, else the
    best-fitting sentence (auto's choice for a model that writes); evidence-only asks no
    verdict of a model that judges at chance and shows only the best evidence; passages gives
    an open question on a novel no extractive answer where no model reads (the book's own
    description of a name excepted), only the passages that fit it best, each with its
    chapter: there the extractive answer quoted the answer too seldom to be shown
    (benchmarks/README.md, "Passages on novels"); generative-or-passages, auto's choice on a
    novel for a model that writes, is its words where its quotes back them, else those
    passages, for the same reason."""

    GENERATIVE = "generative"
    EXTRACTIVE = "extractive"
    GENERATIVE_OR_EXTRACTIVE = "generative-or-extractive"
    EVIDENCE_ONLY = "evidence-only"
    PASSAGES = "passages"
    GENERATIVE_OR_PASSAGES = "generative-or-passages"


ANSWER_CHOICES = (AnswerMode.GENERATIVE, AnswerMode.EXTRACTIVE, AnswerMode.GENERATIVE_OR_EXTRACTIVE)
ANSWER_MODES = tuple(AnswerMode)


class SupportMethod(StrEnum):
    """How `supported` is decided (cwread.answer.support): WORDS needs every content word of an open
    answer quoted (an option or claim: a tenth of its words' weight in the book); CONFIDENCE
    also shows an open answer whose words the model was sure of (the mean log-probability of
    its tokens at least the threshold the user calibrated for it, answer.confidence_threshold) when its
    quotes name whom it names; MODEL asks the Interpreter's model whether the quotes state or
    imply the answer and holds its score to the threshold the user calibrated for it
    (answer.support_threshold); QUOTES shows an open answer in the model's own words where every
    quote it gives is verbatim and in the packet and they name whom it names, saying how much
    of it they hold (answer.quoted_answers: a reader's answer, opt-in because with the 1.5B few such
    answers quoted the answer: benchmarks/README.md, "A reader's answer")."""

    MODEL = "model"
    CONFIDENCE = "confidence"
    WORDS = "words"
    QUOTES = "quotes"


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
    best-fitting paragraphs are judged by the trained Finder (cwread.agents.answer_picker.AnswerPicker),
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
    skipped_by_choice: tuple[str, ...] = ()  # stages skipped by cwread's choice, which a setting runs


# why the Interpreter gives no verdict, as the trace's `skipped` says it (and the views quote it)
UNJUDGED = "the model judges options and claims at chance, so it is not asked"
YES_OR_NO_UNJUDGED = (
    "a yes-or-no question is a claim, and the model judges claims at chance, so it is not asked"
)
