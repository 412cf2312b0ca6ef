"""The settings tree, grouped by stage, that every entry point (the CLI, chat, MCP, the eval
harness, a script) builds once and passes whole: what a reading session is opened with
(`SessionSettings`: the dense model, the backends, the call cache) and what each question's
run is asked for (`RunSettings`: budget and retrieval, the Finder, the answer).
The environment is read at the faces (the CLI, with MCP and the reading room, and `cwread.api`), each
variable in one module: the backends' as BackendSettings.resolved, the stages' (CWREAD_JUDGE,
CWREAD_READER) as stage settings (cwread.environment.environment_knobs).
"""

from __future__ import annotations

import math
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

from cwread.backends.provider import BackendSettings
from cwread.environment import NO, YES, environment_knobs, settings_file_knobs, settings_path
from cwread.errors import InputError
from cwread.records.plan import (
    ANSWER_CHOICES,
    AUTO,
    FINDER_CHOICES,
    FINDER_REPLIES,
    READ_TOKENS_CHOICES,
    READER_CHOICES,
    FinderUse,
)
from cwread.retrieval import DEFAULT_EMBEDDER
from cwread.retrieval.segments import BUDGET_VALUES, Budget, make_budget


@dataclass(frozen=True)
class SessionSettings:
    """What a reading session holds for all its questions: `embedder`, the dense model that
    ranks by meaning; `backends`, which backends run the agents (each provider's own settings
    inside); `use_cache`, whether model calls are answered from the call cache where held;
    `library_url`, a PostgreSQL server that keeps a library's index, shared by a team
    (cwread.library.postgres; None: this machine's SQLite file)."""

    embedder: str = DEFAULT_EMBEDDER
    backends: BackendSettings = field(default_factory=BackendSettings)
    use_cache: bool = True
    library_url: str | None = None


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
    is its score under which none is shown (None: the reader's own, chosen on dev data);
    `quoted_answers`: show a model's open answer in its own words where its quotes are verbatim,
    in the packet and name whom it names (cwread.answer.support.check_quotes; else the words
    decide); `reader_folder`: the answer reader's folder (None: the one cwread ships)."""

    answer_mode: str = "auto"
    self_check: bool | None = None
    judge_anyway: bool = False
    support_threshold: float | None = None
    confidence_threshold: float | None = None
    answer_threshold: float | None = None
    reader: str = AUTO
    reader_threshold: float | None = None
    quoted_answers: bool = False
    reader_folder: str | None = None

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
    decides; a verdict without a score keeps its label). `judge_folder`: the judge's folder
    (None: the one cwread ships).
    """

    use: FinderUse = FinderUse.AUTO
    read_tokens: int | str | None = ASKED_READ_TOKENS
    reply: str = "auto"
    keep_threshold: float | None = None
    judge_folder: str | None = None

    def __post_init__(self) -> None:
        if self.use not in FINDER_CHOICES:
            raise InputError(f"finder.use must be one of {', '.join(FINDER_CHOICES)}, not {self.use!r}")
        object.__setattr__(self, "use", FinderUse(self.use))
        object.__setattr__(self, "read_tokens", _read_tokens(self.read_tokens))
        if self.reply not in FINDER_REPLIES:
            raise InputError(f"finder.reply must be one of {', '.join(FINDER_REPLIES)}, not {self.reply!r}")
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
    raise InputError(f"finder.read_tokens must be {READ_TOKENS_CHOICES}, not {value!r}")


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
class Settings:
    """The whole tree: the session's settings and a question's run."""

    session: SessionSettings = field(default_factory=SessionSettings)
    run: RunSettings = field(default_factory=RunSettings)


# The stages' settings a user sets by name, "stage.field" (`finder.read_tokens=2000`): each a
# field of its stage's record, read from its text by the field's type and validated by the
# record. A field that repeats its stage's name drops it ("answer_mode" is answer.mode).
STAGES: dict[str, type] = {"budget": Budget, "finder": FinderSettings, "answer": AnswerSettings}
KNOB_HELP = {
    "budget.preset": "auto (fitted to the book and the Interpreter's context), focused or broad",
    "budget.anchors": "anchor paragraphs",
    "budget.read": "segments the Finder reads at most",
    "budget.n_e": "N_E, evidence segments packed at most",
    "budget.p_r": "P_r, neighbours around each anchor",
    "budget.p_w": "P_w, paragraphs per local window",
    "budget.b_c": "B_c, characters packed at most",
    "finder.use": f"{', '.join(FINDER_CHOICES)} (auto skips a Finder measured to keep nearly every segment)",
    "finder.read_tokens": "prompt tokens the Finder reads at most: a number, auto (about half a minute here) or none",
    "finder.reply": f"the Finder's reply: {', '.join(FINDER_REPLIES)}",
    "finder.keep_threshold": "keep a segment whose Finder score, ln P(YES) - ln P(NO), is at least this",
    "finder.judge_folder": "the judge's folder (CWREAD_JUDGE; none ships yet)",
    "answer.mode": f"open questions: {', '.join((*ANSWER_CHOICES, AUTO))}",
    "answer.self_check": "the Interpreter's second pass: auto, on or off",
    "answer.judge_anyway": "on: a model that judges at chance gives its verdict all the same",
    "answer.support_threshold": "ask the model whether its quotes support its answer; show it at this score",
    "answer.confidence_threshold": "show an answer not all quoted at this mean token log-probability",
    "answer.threshold": "the trained Finder's score under which an extractive answer is none",
    "answer.reader": f"the answer reader: {', '.join(READER_CHOICES)}",
    "answer.reader_threshold": "the answer reader's score under which its words are no answer",
    "answer.quoted_answers": "on: a model's own words where every quote is verbatim",
    "answer.reader_folder": "another answer reader's folder (CWREAD_READER)",
}


def _fields(stage: str) -> dict[str, str]:
    """A stage's settable fields, by the name a user gives (see STAGES)."""
    record = STAGES[stage]
    names = ["preset", *BUDGET_VALUES] if record is Budget else [f.name for f in fields(record)]
    return {name.removeprefix(f"{stage}_"): name for name in names}


def knob_names() -> list[str]:
    """Every stage setting a user may set, "stage.field", in the stages' order."""
    return [f"{stage}.{name}" for stage in STAGES for name in _fields(stage)]


def _value(key: str, text: str, kind: object) -> object:
    """`text` read as a field of type `kind`: a number, a switch (on/off; auto for None), none
    for an optional field's None, else the text itself for the record to check."""
    options = set(typing.get_args(kind)) or {kind}
    word = text.strip().lower()
    if type(None) in options and str not in options and word in ("none", "auto"):
        return None  # a field that reads its own text ("read_tokens") says what none and auto are
    if bool in options:
        if word not in (*YES, *NO):
            raise InputError(f"{key} must be on or off{', or auto' if type(None) in options else ''}, not {text!r}")
        return word in YES
    for number in (int, float):
        if number in options and str not in options:
            try:
                value = number(word)
            except ValueError:
                raise InputError(f"{key} must be a number, not {text!r}") from None
            if not math.isfinite(value):
                raise InputError(f"{key} must be a finite number, not {text!r}")
            return value
    return text.strip()


def with_knobs(run: RunSettings, knobs: Mapping[str, str]) -> RunSettings:
    """`run` with the stage settings `knobs` ("stage.field" → its text) set, each read by its
    field's type and checked by its record; InputError, one line naming the key, for a key no
    stage has or a value its record refuses."""
    known = knob_names()
    given: dict[str, dict[str, object]] = {stage: {} for stage in STAGES}
    for key, text in knobs.items():
        stage, _, name = key.partition(".")
        if key not in known:
            raise InputError(f"unknown setting {key!r}; the settings are: {', '.join(known)}")
        field_name = _fields(stage)[name]
        kind = typing.get_type_hints(STAGES[stage])[field_name]
        given[stage][field_name] = _value(key, text, kind)
    budget = make_budget(**given["budget"]) if given["budget"] else run.budget
    finding = replace(run.finding, **given["finder"]) if given["finder"] else run.finding
    answering = replace(run.answering, **given["answer"]) if given["answer"] else run.answering
    return replace(run, budget=budget, finding=finding, answering=answering)


def parse_knobs(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """Stage settings written KEY=VALUE, the last of a key winning; InputError for one without
    its "="."""
    knobs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"a setting is KEY=VALUE (finder.read_tokens=2000), not {item!r}")
        knobs[key.strip()] = value
    return knobs


def knobs_in_force(given: list[str] | tuple[str, ...] = (), **shortcuts: str | None) -> dict[str, str]:
    """The stage settings a face runs with: the settings file's (checked, a bad one named with
    the file), the environment's (CWREAD_JUDGE...), then `given` (KEY=VALUE texts), then the
    face's `shortcuts` given (key: value, None for not given), the last of a key winning."""
    held = settings_file_knobs()
    try:
        with_knobs(RunSettings(), held)
    except InputError as exc:
        raise InputError(f"{settings_path()}: {exc}") from None
    knobs = {**held, **environment_knobs(), **parse_knobs(given)}
    knobs.update({key: value for key, value in shortcuts.items() if value is not None})
    return knobs


def run_in_force() -> RunSettings:
    """A question's run as the settings file and the environment set it (a server's questions)."""
    return with_knobs(RunSettings(), knobs_in_force())
