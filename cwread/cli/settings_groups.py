"""The option groups that build the core's settings, each from its record's fields (a flag may
read otherwise: --finder sets FinderSettings.use): the budget, how the Finder reads, the
backends, the session, how answers are given; together the whole settings tree that ask,
verify, chat and eval are given (cwread.settings.Settings)."""

from __future__ import annotations

import math
from typing import Any

from cwread.backends.embedded import EmbeddedSettings
from cwread.backends.openai_compat import OpenAISettings
from cwread.backends.provider import BackendSettings, backend_option_keys, backend_sections, setting_help
from cwread.backends.select import PROVIDERS
from cwread.cli.option_groups import in_panel, listed, option, option_group, second_panel
from cwread.cli.options import EmbedderOpt, LibraryUrlOpt, RetrievalOpt
from cwread.errors import InputError
from cwread.records.plan import ANSWER_CHOICES, FINDER_CHOICES
from cwread.retrieval import DEFAULT_EMBEDDER
from cwread.settings import (
    ASKED_READ_TOKENS,
    EVAL_READ_TOKENS,
    KNOB_HELP,
    FinderSettings,
    RunSettings,
    SessionSettings,
    Settings,
    knobs_in_force,
    parse_knobs,
    with_knobs,
)

STAGE_PANEL = "Stage settings"
# the stages' settings (cwread.settings.knob_names), each KEY=VALUE: one option for them all
KNOB_OPTIONS: dict[str, tuple[Any, Any]] = {
    "knobs": option(
        list[str] | None,
        "A stage's setting, KEY=VALUE (repeat for more; a settings file's, `cwread config set KEY "
        "VALUE`, come first): "
        + "; ".join(f"{key}: {text}" for key, text in KNOB_HELP.items())
        + ". docs/budgets.md says what the budget's values do.",
        None, "--set", show_default=False, metavar="KEY=VALUE", **second_panel(STAGE_PANEL),
    ),
}


FINDER_OPTIONS: dict[str, tuple[Any, Any]] = {
    "finder": option(
        str | None,
        "finder.use, the setting most often changed: auto (skip a Finder measured to keep nearly every "
        "segment, such as the embedded default: its calls cannot change the answer), judge (cwread's "
        "small trained cross-encoder, run in-process: no model call), on (run the model Finder "
        f"anyway) or off (take every segment read as kept). One of: {listed(FINDER_CHOICES)} "
        "[default: auto].",
        None, "--finder", show_default=False, **second_panel(STAGE_PANEL),
    ),
}


def _described(record: type, names: str, kind: Any = str | None) -> dict[str, tuple[Any, Any]]:
    """The options of settings `record`'s fields `names`, each with the help its field gives."""
    return {name: option(kind, setting_help(record, name), show_default=False) for name in names.split()}


_ALL_BACKENDS = {"backend": option(str | None, f"{setting_help(BackendSettings, 'backend')[:-1]}: {listed(PROVIDERS)}.", show_default=False)}
BACKEND_OPTIONS = in_panel(
    "Backends and models",
    _ALL_BACKENDS | _described(BackendSettings, "finder_model interpreter_model") | _described(EmbeddedSettings, "gguf finder_lora"),
)
SERVER_OPTIONS: dict[str, tuple[Any, Any]] = in_panel("Backends and models", {
    **_described(OpenAISettings, "base_url finder_base_url api_key"),
    **_described(BackendSettings, "constraint"),
    "backend_option": option(
        list[str] | None,
        "A backend's own setting, KEY=VALUE (repeat for more); a key is BACKEND.SETTING, or the "
        f"setting alone where one backend has it: {listed(backend_option_keys())}. "
        "--gguf, --finder-lora, --base-url, --finder-base-url and --api-key are shortcuts for some.",
        None, "--backend-option", show_default=False, metavar="KEY=VALUE",
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
SERVING_OPTIONS = in_panel(
    "Backends and models",
    _described(BackendSettings, "num_ctx", int | None) | _described(BackendSettings, "workers", int | None)
    | _described(BackendSettings, "timeout", float | None),
)


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
    for flag, key in SHORTCUTS.items():  # a shortcut flag given wins over the same key in --backend-option
        if (value := values.pop(flag, None)) is not None:
            own[key] = value
    return BackendSettings(
        num_ctx=num_ctx, workers=workers, timeout=timeout, own=backend_sections(own), **values
    ).resolved()  # the environment read here, at the face, once


model_options = option_group("settings", {**BACKEND_OPTIONS, **SERVER_OPTIONS}, _settings)  # not serving


SESSION_OPTIONS: dict[str, tuple[Any, Any]] = {
    "embedder": (EmbedderOpt, DEFAULT_EMBEDDER),
    "no_cache": option(
        bool, "Bypass the model-call cache.", False, "--no-cache", **second_panel("Backends and models")
    ),
}


ANSWERING_OPTIONS: dict[str, tuple[Any, Any]] = {
    "answer_mode": option(
        str | None,
        "Open questions (answer.mode): generative (the model's words, shown only if its quotes cover "
        "them), extractive (the best-fitting quoted sentence), generative-or-extractive (the model's "
        "words, else that sentence), or auto (extractive for a model too small to write, such as the "
        "embedded default, which on a novel gives the passages that fit instead of a guess; else "
        f"generative-or-extractive). One of: {listed((*ANSWER_CHOICES, 'auto'))} [default: auto].",
        None, "--answer", show_default=False,
    ),
}


ASKED_OPTIONS: dict[str, tuple[Any, Any]] = {  # what ask, verify and chat add to how an answer is given
    "self_check": option(
        str,
        "The Interpreter's second pass (answer.self_check): auto (for claims and risky questions "
        "with options; a free-form answer's was measured not to earn its call), on or off "
        "[default: auto].",
        None, "--self-check", show_default=False,
    ),
    "judge_anyway": option(
        bool,
        "Options and claims: ask a model that judges at chance (the embedded default) for its verdict "
        "anyway, with a warning; else it gives none (exit 4). A yes-or-no question gets the sentence "
        "that fits best.",
        False, "--judge-anyway",
    ),
}


_BACKEND_ALL = {**BACKEND_OPTIONS, **SERVER_OPTIONS, **SERVING_OPTIONS}


def _settings_group(answering_options: dict, retrieval: bool, read_tokens: str | None):
    """The option group that builds the whole settings tree (cwread.settings.Settings): the
    backends, the dense model and call cache, and a run's stages from their settings (--set,
    with the shortcut flags); `read_tokens`, what the Finder reads unless told."""

    def build(**values) -> Settings:
        session = _session(values["embedder"], values["no_cache"], **{key: values[key] for key in _BACKEND_ALL})
        self_check, judge_anyway = values.get("self_check"), values.get("judge_anyway")
        shortcuts = {"finder.use": values["finder"], "answer.mode": values["answer_mode"]}
        shortcuts |= {"answer.self_check": self_check, "answer.judge_anyway": "on" if judge_anyway else None}
        knobs = knobs_in_force(values["knobs"] or (), **shortcuts)
        base = RunSettings(retrieval=values.get("retrieval", "fused"), finding=FinderSettings(read_tokens=read_tokens))
        return Settings(session, with_knobs(base, knobs))

    options = {
        **KNOB_OPTIONS,
        **FINDER_OPTIONS,
        **_BACKEND_ALL,
        **({"retrieval": (RetrievalOpt, "fused")} if retrieval else {}),
        **SESSION_OPTIONS,
        **answering_options,
    }
    return option_group("settings", options, build)


def _budget(knobs: list[str] | None = None):
    """find's budget, from the budget's settings alone: find reads with no model."""
    stray = next((key for key in parse_knobs(knobs or []) if not key.startswith("budget.")), None)
    if stray is not None:
        raise InputError(f"find reads with no model: only budget.* settings apply, not {stray}")
    budget = {key: value for key, value in knobs_in_force(knobs or ()).items() if key.startswith("budget.")}
    return with_knobs(RunSettings(), budget).budget


budget_options = option_group("budget", KNOB_OPTIONS, _budget)


def _session(embedder: str, no_cache: bool, library_url: str | None = None, **backends) -> SessionSettings:
    return SessionSettings(embedder, _settings(**backends), not no_cache, library_url)


# what a reading session is opened with (the MCP server's and the reading room's)
session_options = option_group("session", {**_BACKEND_ALL, **SESSION_OPTIONS, "library_url": (LibraryUrlOpt, None)}, _session)


# ask, verify and chat: the settings tree, in the order --help lists them
settings_options = _settings_group({**ANSWERING_OPTIONS, **ASKED_OPTIONS}, retrieval=True, read_tokens=ASKED_READ_TOKENS)


# eval: the same, reading with no token cap unless asked (settings.EVAL_READ_TOKENS); each method its own self-check
eval_settings_options = _settings_group(ANSWERING_OPTIONS, retrieval=False, read_tokens=EVAL_READ_TOKENS)
