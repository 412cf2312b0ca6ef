"""Options shared by several commands, declared once: single options as `Annotated` types,
groups (budget, backend, answer) as decorators that build the core's `Budget`,
`BackendSettings` and `AnswerSettings`. Lists of choices are read from their registries
(retrieval methods, backends, answer modes, eval methods), so help cannot drift from them.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from cwread.backends.select import FACTORIES
from cwread.embedders import DEFAULT_EMBEDDER
from cwread.errors import InputError
from cwread.eval.methods import METHODS as EVAL_METHODS
from cwread.records import ANSWER_MODES, FINDER_CHOICES, AnswerSettings
from cwread.retrieval import METHODS as RETRIEVALS


def _listed(names) -> str:
    names = list(names)
    return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else "".join(names)


Book = Annotated[
    str,
    typer.Argument(help="Plain-text file to read; - reads standard input.", show_default=False),
]
QuestionArg = Annotated[str, typer.Argument(help="The question.", show_default=False)]
JsonFlag = Annotated[
    bool, typer.Option("--json", help="Print exactly one JSON document on stdout; all else on stderr.")
]
EncodingOpt = Annotated[
    str | None,
    typer.Option(
        help="Force the text encoding (default: detect UTF-8/UTF-16 marks, else UTF-8, cp1252, latin-1)."
    ),
]
WidthOpt = Annotated[
    int | None,
    typer.Option(
        "--width",
        envvar="CWREAD_WIDTH",
        min=0,
        help="Wrap output at this many columns; 0 never wraps. Default: the terminal's width, "
        "and no wrapping when output goes to a pipe or file.",
        show_default=False,
    ),
]
DebugFlag = Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")]
EmbedderOpt = Annotated[
    str,
    typer.Option(
        envvar="CWREAD_EMBEDDER",
        help=f"Dense model: {DEFAULT_EMBEDDER} (fast default), minilm (full MiniLM, slower), none "
        "(BM25 only), or the path of a sentence-transformers model (e.g. BGE-M3 on a GPU).",
    ),
]
OptionOpt = Annotated[
    list[str] | None,
    typer.Option("--option", "-o", help='An answer option, "A=text" (repeat for B, C, ...).'),
]
RetrievalOpt = Annotated[
    str,
    typer.Option(
        "--retrieval",
        help=f"How paragraphs are ranked: {_listed(RETRIEVALS)} (fused: BM25 and the dense model, "
        "by reciprocal rank).",
    ),
]
EvalMethodOpt = Annotated[
    list[str] | None,
    typer.Option("--method", "-m", help=f"{_listed(EVAL_METHODS)} (repeat; default: all)."),
]
NoCacheFlag = Annotated[bool, typer.Option("--no-cache", help="Bypass the model-call cache.")]
SelfCheckOpt = Annotated[
    str,
    typer.Option(
        "--self-check",
        help="The Interpreter's second pass: auto (for claims and risky questions), on or off.",
    ),
]
SELF_CHECK = {"auto": None, "on": True, "off": False}
AnswerModeOpt = Annotated[
    str,
    typer.Option(
        "--answer",
        help="Open questions: generative (the model's words, shown only if its quotes cover them), "
        "extractive (the best-fitting quoted sentence), generative-or-extractive (the model's words, "
        "else that sentence), or auto (extractive for a model too small to write, such as the "
        f"embedded default, else generative-or-extractive). One of: {_listed((*ANSWER_MODES, 'auto'))}.",
    ),
]


def self_check_choice(value: str) -> bool | None:
    if value not in SELF_CHECK:
        raise InputError(f"--self-check must be {_listed(SELF_CHECK)}, not {value!r}")
    return SELF_CHECK[value]

TraceOpt = Annotated[str | None, typer.Option("--trace", help="Also write the JSON trace to this file.")]

BUDGET_OPTIONS: dict[str, tuple[Any, Any]] = {
    "preset": (Annotated[str, typer.Option(help="Budget preset: focused or broad.")], "focused"),
    "anchors": (Annotated[int | None, typer.Option(help="Anchor paragraphs (overrides the preset).")], None),
    "read": (Annotated[int | None, typer.Option(help="Segments the Finder reads at most.")], None),
    "n_e": (
        Annotated[int | None, typer.Option("--n-e", help="N_E: evidence segments packed at most.")],
        None,
    ),
    "p_r": (Annotated[int | None, typer.Option("--p-r", help="P_r: neighbours around each anchor.")], None),
    "p_w": (Annotated[int | None, typer.Option("--p-w", help="P_w: paragraphs per local window.")], None),
    "b_c": (Annotated[int | None, typer.Option("--b-c", help="B_c: characters packed at most.")], None),
    "read_tokens": (
        Annotated[
            str | None,
            typer.Option(
                help="Prompt tokens the Finder reads at most, in rank order: a number, auto (what the "
                "Finder reads in about half a minute at the rate measured for it on this machine) or "
                "none (only --read caps it) [default: auto for ask and verify, none for eval].",
                show_default=False,
            ),
        ],
        None,
    ),
    "finder_reply": (
        Annotated[
            str,
            typer.Option(
                help="The Finder's reply: quote-first (the clue's quote, then YES or NO) or "
                "decision-first (YES or NO, the quote written for kept segments only).",
            ),
        ],
        "quote-first",
    ),
    "keep_threshold": (
        Annotated[
            float | None,
            typer.Option(
                help="Keep a segment when the Finder's score, ln P(YES) - ln P(NO), is at least this, "
                "whatever its label (backends that give no score: the label decides).",
                show_default=False,
            ),
        ],
        None,
    ),
}
BACKEND_OPTIONS: dict[str, tuple[Any, Any]] = {
    "backend": (
        Annotated[
            str | None,
            typer.Option(
                help="auto (an OpenAI-compatible server when --base-url is set, else Ollama when it "
                f"serves the models, else embedded), or one of {_listed(n for n in FACTORIES if n != 'auto')}. "
                "[env: CWREAD_BACKEND]",
                show_default=False,
            ),
        ],
        None,
    ),
    "finder_model": (
        Annotated[
            str | None,
            typer.Option(
                help="Server model for the Finder [env: CWREAD_FINDER_MODEL; default: cwread-finder]."
            ),
        ],
        None,
    ),
    "interpreter_model": (
        Annotated[
            str | None,
            typer.Option(
                help="Server model for the Interpreter [env: CWREAD_INTERPRETER_MODEL; default: cwread-interpreter]."
            ),
        ],
        None,
    ),
    "gguf": (
        Annotated[
            str | None,
            typer.Option(
                help="GGUF file for the embedded backend [env: CWREAD_GGUF; default: SmolLM2-135M]."
            ),
        ],
        None,
    ),
    "finder_lora": (
        Annotated[
            str | None,
            typer.Option(
                help="LoRA GGUF adapter for the embedded Finder, e.g. from `python -m training export` "
                "[env: CWREAD_FINDER_LORA; 'none' or unset: the base model]."
            ),
        ],
        None,
    ),
}
SERVER_OPTIONS: dict[str, tuple[Any, Any]] = {
    "base_url": (
        Annotated[
            str | None,
            typer.Option(
                help="OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 for llama-server "
                "[env: OPENAI_BASE_URL].",
                show_default=False,
            ),
        ],
        None,
    ),
    "finder_base_url": (
        Annotated[
            str | None,
            typer.Option(
                help="A second server for the Finder alone (a trained Finder: llama-server with --lora); "
                "the Interpreter stays at --base-url [env: CWREAD_FINDER_BASE_URL].",
                show_default=False,
            ),
        ],
        None,
    ),
    "api_key": (
        Annotated[
            str | None,
            typer.Option(help="Key for that server [env: OPENAI_API_KEY; local servers need none].", show_default=False),
        ],
        None,
    ),
    "constraint": (
        Annotated[
            str | None,
            typer.Option(
                help="How the server keeps the reply format: grammar (llama.cpp), json (a schema), none, "
                "or auto [env: CWREAD_CONSTRAINT; default: auto].",
                show_default=False,
            ),
        ],
        None,
    ),
}
SERVING_OPTIONS: dict[str, tuple[Any, Any]] = {
    "num_ctx": (
        Annotated[
            int | None, typer.Option(help="Context window in tokens [env: CWREAD_NUM_CTX; default: 8192].")
        ],
        None,
    ),
    "workers": (
        Annotated[int | None, typer.Option(help="Finder calls at once (default: what the backend serves).")],
        None,
    ),
    "timeout": (
        Annotated[
            float | None,
            typer.Option(
                help="Seconds one call to a server (Ollama, OpenAI-compatible) may take [env: CWREAD_TIMEOUT; "
                "default: 30 plus the prompt at 100 tokens/s and the reply at 10 tokens/s].",
                show_default=False,
            ),
        ],
        None,
    ),
}


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


def _budget(read_tokens=None, **values):
    from cwread import api
    from cwread.reading import parse_read_tokens

    return api.make_budget(values.pop("preset"), read_tokens=parse_read_tokens(read_tokens), **values)


def _settings(num_ctx=None, workers=None, timeout=None, **values):
    from cwread import api

    for flag, value in (("--num-ctx", num_ctx), ("--workers", workers), ("--timeout", timeout)):
        if value is not None and value <= 0:
            raise InputError(f"{flag} must be a positive number")
    return api.BackendSettings(num_ctx=num_ctx, workers=workers, timeout=timeout, **values)


# `find` runs no Finder; eval reads without a token cap unless asked (runs compare across
# machines); ask and verify read what the Finder reads in about half a minute here
FINDER_OPTIONS = ("read_tokens", "finder_reply")
budget_options = _option_group(
    "budget", {k: v for k, v in BUDGET_OPTIONS.items() if k not in FINDER_OPTIONS}, _budget
)
eval_budget_options = _option_group("budget", BUDGET_OPTIONS, _budget)
ask_budget_options = _option_group(
    "budget", {**BUDGET_OPTIONS, "read_tokens": (BUDGET_OPTIONS["read_tokens"][0], "auto")}, _budget
)
backend_options = _option_group(
    "settings", {**BACKEND_OPTIONS, **SERVER_OPTIONS, **SERVING_OPTIONS}, _settings
)
model_options = _option_group("settings", {**BACKEND_OPTIONS, **SERVER_OPTIONS}, _settings)  # not serving


@dataclass(frozen=True)
class ModelRun:
    """What every command that runs models shares: the dense model, the call cache, open answers."""

    embedder: str
    use_cache: bool
    answer_mode: str


MODEL_RUN_OPTIONS: dict[str, tuple[Any, Any]] = {
    "embedder": (EmbedderOpt, DEFAULT_EMBEDDER),
    "no_cache": (NoCacheFlag, False),
    "answer": (AnswerModeOpt, "auto"),
}


def _model_run(embedder: str, no_cache: bool, answer: str) -> ModelRun:
    AnswerSettings(answer_mode=answer)  # a bad mode is one line, exit 2, before any work
    return ModelRun(embedder, not no_cache, answer)


model_run_options = _option_group("run", MODEL_RUN_OPTIONS, _model_run)


@dataclass(frozen=True)
class AnswerRun:
    """How `ask` and `verify` run and report: retrieval, the call cache, how to answer, output."""

    retrieval: str
    embedder: str
    use_cache: bool
    answering: AnswerSettings
    json_out: bool
    trace: str | None
    encoding: str | None
    width: int | None


ANSWER_OPTIONS: dict[str, tuple[Any, Any]] = {
    "retrieval": (RetrievalOpt, "fused"),
    **MODEL_RUN_OPTIONS,
    "self_check": (SelfCheckOpt, "auto"),
    "json_out": (JsonFlag, False),
    "trace": (TraceOpt, None),
    "encoding": (EncodingOpt, None),
    "width": (WidthOpt, None),
    "finder": (
        Annotated[
            str,
            typer.Option(
                "--finder",
                help="auto (skip a Finder measured to keep nearly every segment, such as the embedded "
                "default: its calls cannot change the answer), on (run it anyway) or off (take every "
                f"segment read as kept). One of: {_listed(FINDER_CHOICES)}.",
            ),
        ],
        "auto",
    ),
    "judge_anyway": (
        Annotated[
            bool,
            typer.Option(
                "--judge-anyway",
                help="Options and claims: ask a model that judges at chance (the embedded default) "
                "for its verdict anyway, with a warning; else it gives none (exit 4).",
            ),
        ],
        False,
    ),
}


def _answer_run(retrieval, embedder, no_cache, answer, self_check, finder, judge_anyway, **output) -> AnswerRun:
    answering = AnswerSettings(answer, self_check_choice(self_check), finder, judge_anyway)
    return AnswerRun(retrieval, embedder, not no_cache, answering, **output)


answer_options = _option_group("run", ANSWER_OPTIONS, _answer_run)
