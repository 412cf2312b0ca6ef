"""The option groups that build the core's settings, each from its record's fields (a flag may
read otherwise: --finder sets FinderSettings.use): the budget, how the Finder reads, the
backends, the session, how answers are given; together the whole settings tree that ask,
verify, chat and eval are given (cwread.settings.Settings)."""

from __future__ import annotations

import math
from typing import Any

from cwread.backends import DEFAULT_NUM_CTX
from cwread.backends.provider import BackendSettings, backend_option_keys, backend_sections
from cwread.backends.select import PROVIDERS
from cwread.cli.option_groups import in_panel, listed, option, option_group, second_panel
from cwread.cli.options import EmbedderOpt, RetrievalOpt
from cwread.errors import InputError
from cwread.records.plan import ANSWER_CHOICES, FINDER_CHOICES, FINDER_REPLIES
from cwread.retrieval import DEFAULT_EMBEDDER
from cwread.retrieval.segments import make_budget
from cwread.settings import (
    ASKED_READ_TOKENS,
    AnswerSettings,
    FinderSettings,
    RunSettings,
    SessionSettings,
    Settings,
)

SELF_CHECK = {"auto": None, "on": True, "off": False}


def self_check_choice(value: str) -> bool | None:
    if value not in SELF_CHECK:
        raise InputError(f"--self-check must be {listed(SELF_CHECK)}, not {value!r}")
    return SELF_CHECK[value]


BUDGET_OPTIONS: dict[str, tuple[Any, Any]] = in_panel("Budgets", {
    "preset": option(
        str,
        "Budget preset: auto (fitted to the book and the Interpreter's context: the focused values for "
        "a text of up to 1,000 paragraphs, wider and growing with a novel; the trace's plan says what "
        "was chosen and why), focused or broad.",
        "auto",
    ),
    "anchors": option(int | None, "Anchor paragraphs (overrides the preset)."),
    "read": option(int | None, "Segments the Finder reads at most."),
    "n_e": option(int | None, "N_E: evidence segments packed at most.", None, "--n-e"),
    "p_r": option(int | None, "P_r: neighbours around each anchor.", None, "--p-r"),
    "p_w": option(int | None, "P_w: paragraphs per local window.", None, "--p-w"),
    "b_c": option(int | None, "B_c: characters packed at most.", None, "--b-c"),
})


FINDER_OPTIONS: dict[str, tuple[Any, Any]] = in_panel("The Finder", {
    "use": option(
        str,
        "auto (skip a Finder measured to keep nearly every segment, such as the embedded default: its "
        "calls cannot change the answer), judge (cwread's small trained cross-encoder, run in-process: "
        "no model call), on (run the model Finder anyway) or off (take every segment read as kept). "
        f"One of: {listed(FINDER_CHOICES)}.",
        "auto",
        "--finder",
    ),
    "read_tokens": option(
        str | None,
        "Prompt tokens the Finder reads at most, in rank order: a number, auto (what the Finder reads "
        "in about half a minute at the rate measured for it on this machine) or none (only --read "
        "caps it) [default: auto for ask and verify, none for eval].",
        show_default=False,
    ),
    "reply": option(
        str,
        "The Finder's reply: quote-first (the clue's quote, then YES or NO), decision-first (YES or "
        "NO, the quote written for kept segments only), score (YES or NO alone, kept by its score, "
        "no quote) or auto (what a trained Finder adapter was trained on, else quote-first). "
        f"One of: {listed(FINDER_REPLIES)}.",
        "auto",
        "--finder-reply",
    ),
    "keep_threshold": option(
        float | None,
        "Keep a segment when the Finder's score, ln P(YES) - ln P(NO), is at least this, whatever its "
        "label (backends that give no score: the label decides).",
        show_default=False,
    ),
})


BACKEND_OPTIONS: dict[str, tuple[Any, Any]] = in_panel("Backends and models", {
    "backend": option(
        str | None,
        "auto (an OpenAI-compatible server when --base-url is set, else Ollama when it serves the "
        f"models, else embedded), or one of {listed(PROVIDERS)}. "
        "[env: CWREAD_BACKEND]",
        show_default=False,
    ),
    "finder_model": option(
        str | None,
        "The Finder's model: a server's model name, or [backend:]model[@url] to run it elsewhere "
        "(openai:NAME@URL, ollama:NAME, embedded:FILE.gguf) "
        "[env: CWREAD_FINDER_MODEL; default: cwread-finder].",
    ),
    "interpreter_model": option(
        str | None,
        "The Interpreter's model, as --finder-model [env: CWREAD_INTERPRETER_MODEL; default: "
        "cwread-interpreter].",
    ),
    "gguf": option(
        str | None, "GGUF file for the embedded backend [env: CWREAD_GGUF; default: SmolLM2-135M]."
    ),
    "finder_lora": option(
        str | None,
        "LoRA GGUF adapter for the embedded Finder, e.g. from `python -m training export` "
        "[env: CWREAD_FINDER_LORA; unset: the trained Finder adapter cwread ships, on the default "
        "model; 'none': the base model].",
    ),
})


SERVER_OPTIONS: dict[str, tuple[Any, Any]] = in_panel("Backends and models", {
    "base_url": option(
        str | None,
        "OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 for llama-server [env: OPENAI_BASE_URL].",
        show_default=False,
    ),
    "finder_base_url": option(
        str | None,
        "A second server for the Finder alone (a trained Finder: llama-server with --lora); the "
        "Interpreter stays at --base-url [env: CWREAD_FINDER_BASE_URL].",
        show_default=False,
    ),
    "api_key": option(
        str | None,
        "Key for that server [env: OPENAI_API_KEY; local servers need none].",
        show_default=False,
    ),
    "constraint": option(
        str | None,
        "How the server keeps the reply format: grammar (llama.cpp), json (a schema), none, or auto "
        "[env: CWREAD_CONSTRAINT; default: auto].",
        show_default=False,
    ),
    "backend_option": option(
        list[str] | None,
        "A backend's own setting, KEY=VALUE (repeat for more); a key is BACKEND.SETTING, or the "
        f"setting alone where one backend has it: {listed(backend_option_keys())}. "
        "--gguf, --finder-lora, --base-url, --finder-base-url and --api-key are shortcuts for some.",
        None,
        "--backend-option",
        show_default=False,
        metavar="KEY=VALUE",
    ),
})


# the shortcut flags: each one backend's own setting (backend_option_keys)
SHORTCUTS = {
    "gguf": "embedded.gguf",
    "finder_lora": "embedded.finder_lora",
    "base_url": "openai.base_url",
    "finder_base_url": "openai.finder_base_url",
    "api_key": "openai.api_key",
}


SERVING_OPTIONS: dict[str, tuple[Any, Any]] = in_panel("Backends and models", {
    "num_ctx": option(
        int | None, f"Context window in tokens [env: CWREAD_NUM_CTX; default: {DEFAULT_NUM_CTX}]."
    ),
    "workers": option(int | None, "Finder calls at once (default: what the backend serves)."),
    "timeout": option(
        float | None,
        "Seconds one call to a server (Ollama, OpenAI-compatible) may take [env: CWREAD_TIMEOUT; "
        "default: 30 plus the prompt at 100 tokens/s and the reply at 10 tokens/s].",
        show_default=False,
    ),
})


def _budget(**values):
    return make_budget(**values)


def _settings(num_ctx=None, workers=None, timeout=None, backend_option=None, **values):
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
    return BackendSettings(
        num_ctx=num_ctx, workers=workers, timeout=timeout, own=backend_sections(own), **values
    )


budget_options = option_group("budget", BUDGET_OPTIONS, _budget)


model_options = option_group("settings", {**BACKEND_OPTIONS, **SERVER_OPTIONS}, _settings)  # not serving


SESSION_OPTIONS: dict[str, tuple[Any, Any]] = {
    "embedder": (EmbedderOpt, DEFAULT_EMBEDDER),
    "no_cache": option(
        bool, "Bypass the model-call cache.", False, "--no-cache", **second_panel("Backends and models")
    ),
}


# how answers are given and checked: AnswerSettings' fields (ask's self-check and judge_anyway beside)
ANSWERING_OPTIONS: dict[str, tuple[Any, Any]] = {
    "answer_mode": option(
        str,
        "Open questions: generative (the model's words, shown only if its quotes cover them), "
        "extractive (the best-fitting quoted sentence), generative-or-extractive (the model's words, "
        "else that sentence), or auto (extractive for a model too small to write, such as the "
        "embedded default, which on a novel gives the passages that fit instead of a guess; else "
        f"generative-or-extractive). One of: {listed((*ANSWER_CHOICES, 'auto'))}.",
        "auto",
        "--answer",
    ),
    "support_threshold": option(
        float | None,
        "Ask the model whether its quotes state or imply its answer, and show the answer when that "
        "score, ln P(YES) - ln P(NO), is at least this (calibrate it for your model, as the "
        "benchmarks README says). Default: no such call; every content word of a free-form "
        "answer must be quoted (Qwen2.5-Coder-1.5B's own check was measured at chance).",
    ),
    "confidence_threshold": option(
        float | None,
        "Show a free-form answer whose words are not all quoted when the mean log-probability of "
        "its tokens is at least this and its quotes name whom it names (calibrate it for your "
        "model). Default: off (Qwen2.5-Coder-1.5B's was measured at chance).",
        None,
        "--min-confidence",
    ),
    "answer_threshold": option(
        float | None,
        "With the trained Finder adapter (the embedded default): give no extractive answer when the "
        "Finder's best score of its candidate paragraphs is under this (-1000: always answer). "
        "Default: -2.5, chosen on the dev sets (docs/answers.md).",
    ),
    "reader": option(
        str,
        "The answer reader, a small extractive model cwread ships: auto (it picks the words of the "
        "paragraph an extractive answer comes from; $CWREAD_READER names another) or off (the "
        "sentence ranker's words).",
        "auto",
        "--answer-reader",
    ),
    "quoted_answers": option(
        bool,
        "Show a model's free-form answer in its own words where every quote it gives is verbatim, "
        "from the evidence it was given, and names whom it names, with how much of it the quotes "
        "hold. Off by default: with Qwen2.5-Coder-1.5B few answers so shown quoted the answer "
        "(benchmarks/README.md, \"A reader's answer\"); the default shows one only where every "
        "content word is quoted.",
        False,
        "--quoted-answers",
    ),
    "reader_threshold": option(
        float | None,
        "Give no extractive answer when the answer reader's score for its words is under this "
        "(-1000: always answer). Default: the reader's own, chosen on the dev sets (docs/answers.md).",
    ),
}


def _answering(self_check: str = "auto", **values) -> AnswerSettings:
    # the answer mode and thresholds are checked here, before any work (AnswerSettings)
    return AnswerSettings(self_check=self_check_choice(self_check), **values)


ANSWERING_OPTIONS = {
    **{k: v for k, v in ANSWERING_OPTIONS.items() if k == "answer_mode"},
    **in_panel("Answer checks", {k: v for k, v in ANSWERING_OPTIONS.items() if k != "answer_mode"}),
}


ASKED_OPTIONS: dict[str, tuple[Any, Any]] = {  # what ask, verify and chat add to how an answer is given
    "self_check": option(
        str,
        "The Interpreter's second pass: auto (for claims and risky questions with options; a "
        "free-form answer's was measured not to earn its call), on or off.",
        "auto",
        "--self-check",
    ),
    "judge_anyway": option(
        bool,
        "Options and claims: ask a model that judges at chance (the embedded default) for its verdict "
        "anyway, with a warning; else it gives none (exit 4). A yes-or-no question gets the sentence "
        "that fits best.",
        False,
        "--judge-anyway",
    ),
}


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
            FinderSettings(**group(finder_options)),
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
    return option_group("settings", options, build)


def _session(embedder: str, no_cache: bool, **backends) -> SessionSettings:
    return SessionSettings(embedder, _settings(**backends), not no_cache)


# what a reading session is opened with (the MCP server's sessions)
session_options = option_group("session", {**_BACKEND_ALL, **SESSION_OPTIONS}, _session)


# ask, verify and chat: the settings tree, in the order --help lists them
settings_options = _settings_group(
    _ASK_FINDER_OPTIONS, {**ANSWERING_OPTIONS, **ASKED_OPTIONS}, retrieval=True
)


# eval: the same, reading with no token cap unless asked (settings.EVAL_READ_TOKENS); each method its own self-check
eval_settings_options = _settings_group(FINDER_OPTIONS, ANSWERING_OPTIONS, retrieval=False)
