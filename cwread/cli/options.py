"""Options shared by several commands, declared once: single options as `Annotated` types,
groups (budget, Finder, backend, answer) as decorators that build the core's `Budget`,
`FinderSettings`, `BackendSettings` and `AnswerSettings`. Lists of choices are read from their registries
(retrieval methods, backends, answer modes, eval methods), so help cannot drift from them.
"""

from __future__ import annotations

import copy
import functools
import inspect
import math
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from cwread.backends import DEFAULT_NUM_CTX
from cwread.backends.provider import backend_option_keys, backend_sections
from cwread.backends.select import PROVIDERS
from cwread.book.formats import format_names
from cwread.errors import InputError
from cwread.eval.methods import METHODS as EVAL_METHODS
from cwread.library_question import MOST_BOOKS
from cwread.plan import ANSWER_CHOICES, FINDER_CHOICES, FINDER_REPLIES
from cwread.question import FORMS, make_question
from cwread.retrieval.embedders import DEFAULT_EMBEDDER
from cwread.retrieval.fusion import METHODS as RETRIEVALS
from cwread.settings import (
    ASKED_READ_TOKENS,
    AnswerSettings,
    FinderSettings,
    RunSettings,
    SessionSettings,
    Settings,
)


def _listed(names) -> str:
    names = list(names)
    return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else "".join(names)


Book = Annotated[
    str,
    typer.Argument(
        help=f"The book: a {format_names()} file, or a folder of them read as one book (each "
        "paragraph then cited as FILE:N); - reads standard input.",
        show_default=False,
    ),
]
QuestionArg = Annotated[str, typer.Argument(help="The question.", show_default=False)]
JsonFlag = Annotated[
    bool,
    typer.Option("--json", help="Print exactly one JSON document on stdout; all else on stderr.", metavar=""),
]
DebugFlag = Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.", metavar="")]
EmbedderOpt = Annotated[
    str,
    typer.Option(
        envvar="CWREAD_EMBEDDER",
        help=f"Dense model: {DEFAULT_EMBEDDER} (fast default), minilm (full MiniLM, slower), none "
        "(BM25 only), or the path of a sentence-transformers model (e.g. BGE-M3 on a GPU).",
    ),
]
RetrievalOpt = Annotated[
    str,
    typer.Option(
        "--retrieval",
        help=f"How paragraphs are ranked: {_listed(RETRIEVALS)} (fused: BM25 and the dense model, "
        "by reciprocal rank).",
    ),
]

SELF_CHECK = {"auto": None, "on": True, "off": False}


def self_check_choice(value: str) -> bool | None:
    if value not in SELF_CHECK:
        raise InputError(f"--self-check must be {_listed(SELF_CHECK)}, not {value!r}")
    return SELF_CHECK[value]


TraceOpt = Annotated[str | None, typer.Option("--trace", help="Also write the JSON trace to this file.")]


def _option(kind: Any, help: str, default: Any = None, *names: str, **settings: Any) -> tuple[Any, Any]:
    """One entry of an option group: its annotation (`kind`, with its help) and its default."""
    if kind is bool:  # a flag takes no value: no "<bool>" beside it in the help
        settings.setdefault("metavar", "")
    return Annotated[kind, typer.Option(*names, help=help, **settings)], default


BUDGET_OPTIONS: dict[str, tuple[Any, Any]] = {
    "preset": _option(
        str,
        "Budget preset: auto (fitted to the book and the Interpreter's context: the focused values for "
        "a text of up to 1,000 paragraphs, wider and growing with a novel; the trace's plan says what "
        "was chosen and why), focused or broad.",
        "auto",
    ),
    "anchors": _option(int | None, "Anchor paragraphs (overrides the preset)."),
    "read": _option(int | None, "Segments the Finder reads at most."),
    "n_e": _option(int | None, "N_E: evidence segments packed at most.", None, "--n-e"),
    "p_r": _option(int | None, "P_r: neighbours around each anchor.", None, "--p-r"),
    "p_w": _option(int | None, "P_w: paragraphs per local window.", None, "--p-w"),
    "b_c": _option(int | None, "B_c: characters packed at most.", None, "--b-c"),
}
FINDER_OPTIONS: dict[str, tuple[Any, Any]] = {
    "use": _option(
        str,
        "auto (skip a Finder measured to keep nearly every segment, such as the embedded default: its "
        "calls cannot change the answer), judge (cwread's small trained cross-encoder, run in-process: "
        "no model call), on (run the model Finder anyway) or off (take every segment read as kept). "
        f"One of: {_listed(FINDER_CHOICES)}.",
        "auto",
        "--finder",
    ),
    "read_tokens": _option(
        str | None,
        "Prompt tokens the Finder reads at most, in rank order: a number, auto (what the Finder reads "
        "in about half a minute at the rate measured for it on this machine) or none (only --read "
        "caps it) [default: auto for ask and verify, none for eval].",
        show_default=False,
    ),
    "reply": _option(
        str,
        "The Finder's reply: quote-first (the clue's quote, then YES or NO), decision-first (YES or "
        "NO, the quote written for kept segments only), score (YES or NO alone, kept by its score, "
        "no quote) or auto (what a trained Finder adapter was trained on, else quote-first). "
        f"One of: {_listed(FINDER_REPLIES)}.",
        "auto",
        "--finder-reply",
    ),
    "keep_threshold": _option(
        float | None,
        "Keep a segment when the Finder's score, ln P(YES) - ln P(NO), is at least this, whatever its "
        "label (backends that give no score: the label decides).",
        show_default=False,
    ),
}
BACKEND_OPTIONS: dict[str, tuple[Any, Any]] = {
    "backend": _option(
        str | None,
        "auto (an OpenAI-compatible server when --base-url is set, else Ollama when it serves the "
        f"models, else embedded), or one of {_listed(PROVIDERS)}. "
        "[env: CWREAD_BACKEND]",
        show_default=False,
    ),
    "finder_model": _option(
        str | None,
        "The Finder's model: a server's model name, or [backend:]model[@url] to run it elsewhere "
        "(openai:NAME@URL, ollama:NAME, embedded:FILE.gguf) "
        "[env: CWREAD_FINDER_MODEL; default: cwread-finder].",
    ),
    "interpreter_model": _option(
        str | None,
        "The Interpreter's model, as --finder-model [env: CWREAD_INTERPRETER_MODEL; default: "
        "cwread-interpreter].",
    ),
    "gguf": _option(
        str | None, "GGUF file for the embedded backend [env: CWREAD_GGUF; default: SmolLM2-135M]."
    ),
    "finder_lora": _option(
        str | None,
        "LoRA GGUF adapter for the embedded Finder, e.g. from `python -m training export` "
        "[env: CWREAD_FINDER_LORA; unset: the trained Finder adapter cwread ships, on the default "
        "model; 'none': the base model].",
    ),
}
SERVER_OPTIONS: dict[str, tuple[Any, Any]] = {
    "base_url": _option(
        str | None,
        "OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 for llama-server [env: OPENAI_BASE_URL].",
        show_default=False,
    ),
    "finder_base_url": _option(
        str | None,
        "A second server for the Finder alone (a trained Finder: llama-server with --lora); the "
        "Interpreter stays at --base-url [env: CWREAD_FINDER_BASE_URL].",
        show_default=False,
    ),
    "api_key": _option(
        str | None, "Key for that server [env: OPENAI_API_KEY; local servers need none].", show_default=False
    ),
    "constraint": _option(
        str | None,
        "How the server keeps the reply format: grammar (llama.cpp), json (a schema), none, or auto "
        "[env: CWREAD_CONSTRAINT; default: auto].",
        show_default=False,
    ),
    "backend_option": _option(
        list[str] | None,
        "A backend's own setting, KEY=VALUE (repeat for more); a key is BACKEND.SETTING, or the "
        f"setting alone where one backend has it: {_listed(backend_option_keys())}. "
        "--gguf, --finder-lora, --base-url, --finder-base-url and --api-key are shortcuts for some.",
        None,
        "--backend-option",
        show_default=False,
        metavar="KEY=VALUE",
    ),
}
# the shortcut flags: each one backend's own setting (backend_option_keys)
SHORTCUTS = {
    "gguf": "embedded.gguf",
    "finder_lora": "embedded.finder_lora",
    "base_url": "openai.base_url",
    "finder_base_url": "openai.finder_base_url",
    "api_key": "openai.api_key",
}
SERVING_OPTIONS: dict[str, tuple[Any, Any]] = {
    "num_ctx": _option(
        int | None, f"Context window in tokens [env: CWREAD_NUM_CTX; default: {DEFAULT_NUM_CTX}]."
    ),
    "workers": _option(int | None, "Finder calls at once (default: what the backend serves)."),
    "timeout": _option(
        float | None,
        "Seconds one call to a server (Ollama, OpenAI-compatible) may take [env: CWREAD_TIMEOUT; "
        "default: 30 plus the prompt at 100 tokens/s and the reply at 10 tokens/s].",
        show_default=False,
    ),
}


def _in_panel(options: dict[str, tuple[Any, Any]], panel: str) -> dict[str, tuple[Any, Any]]:
    """`options` listed under their own heading in --help (the common ones stay first, under
    "Options"): each option's typer info copied, so an annotation shared elsewhere keeps its own."""
    out = {}
    for key, (annotation, default) in options.items():
        kind, *extras = typing.get_args(annotation)
        extras = [copy.copy(e) if isinstance(e, typer.models.OptionInfo) else e for e in extras]
        for extra in extras:
            if isinstance(extra, typer.models.OptionInfo):
                extra.rich_help_panel = panel
        out[key] = (Annotated[(kind, *extras)], default)
    return out


def _option_group(name: str, options: dict[str, tuple[Any, Any]], build: Callable[..., Any]):
    """A decorator that puts `options` (parameter → (annotation, default)) in a command's
    signature where its `name` parameter stands, and passes `build(**their values)` as `name`:
    an option group declared once and shared by every command that takes it."""

    def decorate(func):
        params: list[inspect.Parameter] = []
        for p in inspect.signature(func).parameters.values():
            if p.name == name:
                params += [
                    inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, annotation=ann, default=default)
                    for key, (ann, default) in options.items()
                ]
            else:
                annotation = (
                    eval(p.annotation, func.__globals__) if isinstance(p.annotation, str) else p.annotation
                )
                params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=annotation))

        @functools.wraps(func)
        def wrapper(**kwargs):
            values = {key: kwargs.pop(key) for key in options}
            return func(**kwargs, **{name: build(**values)})

        wrapper.__signature__ = inspect.Signature(params)
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper

    return decorate


def _budget(**values):
    from cwread import api

    return api.make_budget(values.pop("preset"), **values)


def _finding(**values) -> FinderSettings:
    return FinderSettings(**values)


def _settings(num_ctx=None, workers=None, timeout=None, backend_option=None, **values):
    from cwread import api

    for flag, value in (("--num-ctx", num_ctx), ("--workers", workers), ("--timeout", timeout)):
        if value is not None and (not math.isfinite(value) or value <= 0):
            raise InputError(f"{flag} must be a positive number, not {value!r}")
    own: dict[str, str] = {}
    for item in backend_option or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--backend-option takes KEY=VALUE, not {item!r}")
        own[key.strip()] = value
    for (
        flag,
        key,
    ) in SHORTCUTS.items():  # a shortcut flag given wins over the same key given with --backend-option
        value = values.pop(flag, None)
        if value is not None:
            own[key] = value
    return api.BackendSettings(
        num_ctx=num_ctx, workers=workers, timeout=timeout, own=backend_sections(own), **values
    )


# the options a newcomer seldom needs, each group under its heading in --help
BUDGET_OPTIONS = _in_panel(BUDGET_OPTIONS, "How much is read (the paper's budgets)")
FINDER_OPTIONS = _in_panel(FINDER_OPTIONS, "The Finder")
BACKEND_OPTIONS = _in_panel(BACKEND_OPTIONS, "Backends and models")
SERVER_OPTIONS = _in_panel(SERVER_OPTIONS, "Backends and models")
SERVING_OPTIONS = _in_panel(SERVING_OPTIONS, "Backends and models")
budget_options = _option_group("budget", BUDGET_OPTIONS, _budget)
model_options = _option_group("settings", {**BACKEND_OPTIONS, **SERVER_OPTIONS}, _settings)  # not serving


@dataclass(frozen=True)
class Output:
    """How a command that reads a book reads it and prints: --json, --encoding, --width."""

    json_out: bool
    encoding: str | None
    width: int | None


OUTPUT_OPTIONS: dict[str, tuple[Any, Any]] = {
    "json_out": (JsonFlag, False),
    "encoding": _option(
        str | None,
        "Force the text encoding (default: detect UTF-8/UTF-16 marks, else UTF-8, cp1252, latin-1).",
    ),
    "width": _option(
        int | None,
        "Wrap output at this many columns; 0 never wraps. Default: the terminal's width, and no "
        "wrapping when output goes to a pipe or file.",
        None,
        "--width",
        envvar="CWREAD_WIDTH",
        min=0,
        show_default=False,
    ),
}
output_options = _option_group("output", OUTPUT_OPTIONS, Output)


SESSION_OPTIONS: dict[str, tuple[Any, Any]] = {
    "embedder": (EmbedderOpt, DEFAULT_EMBEDDER),
    "no_cache": _option(bool, "Bypass the model-call cache.", False, "--no-cache"),
}
# how answers are given and checked: AnswerSettings' fields (ask's self-check and judge_anyway beside)
ANSWERING_OPTIONS: dict[str, tuple[Any, Any]] = {
    "answer_mode": _option(
        str,
        "Open questions: generative (the model's words, shown only if its quotes cover them), "
        "extractive (the best-fitting quoted sentence), generative-or-extractive (the model's words, "
        "else that sentence), or auto (extractive for a model too small to write, such as the "
        "embedded default, which on a novel gives the passages that fit instead of a guess; else "
        f"generative-or-extractive). One of: {_listed((*ANSWER_CHOICES, 'auto'))}.",
        "auto",
        "--answer",
    ),
    "support_threshold": _option(
        float | None,
        "Ask the model whether its quotes state or imply its answer, and show the answer when that "
        "score, ln P(YES) - ln P(NO), is at least this (calibrate it for your model, as the "
        "benchmarks README says). Default: no such call; every content word of a free-form "
        "answer must be quoted (Qwen2.5-Coder-1.5B's own check was measured at chance).",
    ),
    "confidence_threshold": _option(
        float | None,
        "Show a free-form answer whose words are not all quoted when the mean log-probability of "
        "its tokens is at least this and its quotes name whom it names (calibrate it for your "
        "model). Default: off (Qwen2.5-Coder-1.5B's was measured at chance).",
        None,
        "--min-confidence",
    ),
    "answer_threshold": _option(
        float | None,
        "With the trained Finder adapter (the embedded default): give no extractive answer when the "
        "Finder's best score of its candidate paragraphs is under this (-1000: always answer). "
        "Default: -2.5, chosen on the dev sets (docs/answers.md).",
    ),
    "reader": _option(
        str,
        "The answer reader, a small extractive model cwread ships: auto (it picks the words of the "
        "paragraph an extractive answer comes from; $CWREAD_READER names another) or off (the "
        "sentence ranker's words).",
        "auto",
        "--answer-reader",
    ),
    "quoted_answers": _option(
        bool,
        "Show a model's free-form answer in its own words where every quote it gives is verbatim, "
        "from the evidence it was given, and names whom it names, with how much of it the quotes "
        "hold (not yet measured: the default shows one only where every content word is quoted).",
        False,
        "--quoted-answers",
    ),
    "reader_threshold": _option(
        float | None,
        "Give no extractive answer when the answer reader's score for its words is under this "
        "(-1000: always answer). Default: the reader's own, chosen on the dev sets (docs/answers.md).",
    ),
}


QUESTION_OPTIONS: dict[str, tuple[Any, Any]] = {
    "question": (QuestionArg, inspect.Parameter.empty),
    "option": _option(list[str] | None, 'An answer option, "A=text" (repeat for B, C, ...).', None, "--option", "-o"),
    "kind": _option(
        str | None,
        f"The kind of question, where it is not open (or mcq, given -o): one of {_listed(FORMS)} "
        "(claim: as `cwread verify`).",
        None,
        "--kind",
        show_default=False,
    ),
}
# the question, its options (-o) and its kind, validated into a Question before any work
question_options = _option_group(
    "asked", QUESTION_OPTIONS, lambda question, option, kind: make_question(question, option, kind=kind)
)


def _answering(self_check: str = "auto", **values) -> AnswerSettings:
    # the answer mode and thresholds are checked here, before any work (AnswerSettings)
    return AnswerSettings(self_check=self_check_choice(self_check), **values)


ANSWERING_OPTIONS = {
    **{k: v for k, v in ANSWERING_OPTIONS.items() if k == "answer_mode"},
    **_in_panel({k: v for k, v in ANSWERING_OPTIONS.items() if k != "answer_mode"}, "How answers are checked"),
}
ASKED_OPTIONS: dict[str, tuple[Any, Any]] = {  # what ask, verify and chat add to how an answer is given
    "self_check": _option(
        str,
        "The Interpreter's second pass: auto (for claims and risky questions with options; a "
        "free-form answer's was measured not to earn its call), on or off.",
        "auto",
        "--self-check",
    ),
    "judge_anyway": _option(
        bool,
        "Options and claims: ask a model that judges at chance (the embedded default) for its verdict "
        "anyway, with a warning; else it gives none (exit 4). A yes-or-no question gets the sentence "
        "that fits best.",
        False,
        "--judge-anyway",
    ),
}


EVALUATION_OPTIONS: dict[str, tuple[Any, Any]] = {
    "method": _option(
        list[str] | None, f"{_listed(EVAL_METHODS)} (repeat; default: all).", None, "--method", "-m"
    ),
    "limit": _option(int | None, "Only the first N records."),
    "spread": _option(
        bool, "With --limit: N records evenly spaced through the file, not the first N.", False, "--spread"
    ),
    "out": _option(str | None, "Append a row per record and method to this JSONL file."),
    "resume": _option(bool, "Skip records already in --out.", False, "--resume"),
    "report": _option(str | None, "Write a Markdown report here."),
    "permute_options": _option(
        bool,
        "Ask each multiple-choice question once per option rotation; right only if all are.",
        False,
        "--permute-options",
    ),
}
# what `cwread eval` runs, as EvalOptions' fields (the rest come from the shared groups)
evaluation_options = _option_group(
    "evaluation", EVALUATION_OPTIONS, lambda method, **v: {"methods": tuple(method or ()), **v}
)


_ASK_FINDER_OPTIONS = {**FINDER_OPTIONS, "read_tokens": (FINDER_OPTIONS["read_tokens"][0], ASKED_READ_TOKENS)}
_BACKEND_ALL = {**BACKEND_OPTIONS, **SERVER_OPTIONS, **SERVING_OPTIONS}


def _settings_group(finder_options: dict, answering_options: dict, retrieval: bool):
    """The option group that builds the whole settings tree (cwread.settings.Settings), each of
    its records from its own options: the budget, how the Finder reads, the backends, the dense
    model and call cache, how answers are given."""

    def build(**values) -> Settings:
        def group(options: dict) -> dict:
            return {key: values[key] for key in options}

        session = _session(values["embedder"], values["no_cache"], **group(_BACKEND_ALL))
        run = RunSettings(
            _budget(**group(BUDGET_OPTIONS)),
            values.get("retrieval", "fused"),
            _finding(**group(finder_options)),
            _answering(**group(answering_options)),
        )
        return Settings(session, run)

    options = {
        **BUDGET_OPTIONS,
        **finder_options,
        **_BACKEND_ALL,
        **({"retrieval": (RetrievalOpt, "fused")} if retrieval else {}),
        **SESSION_OPTIONS,
        **answering_options,
    }
    return _option_group("settings", options, build)


def _session(embedder: str, no_cache: bool, **backends) -> SessionSettings:
    return SessionSettings(embedder, _settings(**backends), not no_cache)


# what a reading session is opened with (the MCP server's sessions)
session_options = _option_group("session", {**_BACKEND_ALL, **SESSION_OPTIONS}, _session)
# ask, verify and chat: the settings tree, in the order --help lists them
settings_options = _settings_group(_ASK_FINDER_OPTIONS, {**ANSWERING_OPTIONS, **ASKED_OPTIONS}, retrieval=True)
# eval: the same, reading with no token cap unless asked (settings.EVAL_READ_TOKENS); each method its own self-check
eval_settings_options = _settings_group(FINDER_OPTIONS, ANSWERING_OPTIONS, retrieval=False)


FIND_CHARS = 15_000  # find's plain text by default: the anchor segments that fit best, not all
MAP_CANDIDATES = 25  # lines of find --map: about 3,000 characters to pick from
LIBRARY_PASSAGES = 12  # passages find --library prints at most (within --max-chars): from several books


@dataclass(frozen=True)
class FindShape:
    """What `find` is asked beyond the question: where to look (`also`, words beside the
    question's; `near`, a paragraph as `show` takes it; `library`, a folder of books, at most
    `books_opened` searched) and how to print (`limit` passages, `max_chars`, `expand`, the
    `compact` map, `plain` text)."""

    limit: int | None
    max_chars: int | None
    also: str
    expand: int | str | None
    near: str | None
    library: bool
    books_opened: int
    compact: bool
    plain: bool

    def printed_chars(self, default: int) -> int | None:
        """The characters of plain text printed at most (None: no bound)."""
        return default if self.max_chars is None else (self.max_chars or None)


def _find_shape(**values) -> FindShape:
    from cwread import api

    if values["limit"] is not None and values["limit"] < 0:
        raise InputError("--limit must be 0 (all) or a positive number")
    return FindShape(**{**values, "expand": api.expansion(values["expand"])})


FIND_OPTIONS: dict[str, tuple[Any, Any]] = {
    "limit": _option(int | None, "Segments to print, 0 for all.  [default: the anchor segments]", show_default=False),
    "max_chars": _option(
        int | None,
        "Print whole passages, best first, up to this many characters, then one line naming those left "
        f"out; 0: no bound.  [default: {FIND_CHARS:,} as plain text, none in boxes]",
        None,
        "--max-chars",
        min=0,
        show_default=False,
    ),
    "also": _option(
        str,
        "Words to look for beside the question's (the book's own for what it says otherwise: \"motor "
        "garage\"); the dense ranking keeps the question's.",
        "",
        "--also",
        show_default=False,
    ),
    "expand": _option(
        str | None,
        "Widen each passage printed: replies (the speech that follows a passage ending in dialogue), "
        "scene (to the scene's heading or break), or N paragraphs each side.",
        None,
        "--expand",
        show_default=False,
    ),
    "near": _option(
        str | None,
        "A paragraph you found already (as show takes it): the passages within 100 paragraphs of it first.",
        None,
        "--near",
        show_default=False,
    ),
    "library": _option(
        bool,
        "BOOK is a library (a folder of books, or a Calibre library): search the books its index "
        "matches best, at most --books-opened, each as one book, their passages ranked together.",
        False,
        "--library",
    ),
    "books_opened": _option(int, "With --library: the candidate books searched at most.", MOST_BOOKS, "--books-opened", min=1),
    "compact": _option(
        bool,
        "One line a candidate paragraph: its rank, id, chapter and the sentence that shares most of the "
        f"question's words, those marked *so* ({MAP_CANDIDATES} lines, or --limit): pick, then show.",
        False,
        "--map",
    ),
    "plain": _option(
        bool, "Plain text (no boxes, wrapped at --width), as into a pipe or file, on a terminal too.", False, "--plain"
    ),
}
find_options = _option_group("shape", FIND_OPTIONS, _find_shape)
