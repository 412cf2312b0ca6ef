"""Backends as providers: what a backend module declares, and the settings every one reads.

A backend module declares one `Provider`: its name, what it runs (for help), its own settings
(a frozen dataclass with `resolved()`, which reads its environment, and `refuse(backend)`),
how it builds the backends of the agents that name it (`build`), how to run a trained adapter
on it, and its notes for `doctor`. `cwread.backends.select` registers the providers, one line
each, and picks one per agent: a new backend is one module, its registry line and its tests.

An agent's model may name its provider: `--finder-model openai:qwen2.5@http://127.0.0.1:8080/v1`,
`ollama:qwen2.5:7b`, `embedded:/models/finder.gguf` (see `ModelRef`); a plain name
(`cwread-finder`) is for the backend `--backend` chooses, as before.
"""

from __future__ import annotations

import dataclasses
import os
import re
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from cwread.backends import DEFAULT_NUM_CTX, Backend
from cwread.environment import NO, YES, env_positive
from cwread.errors import InputError, keep_url_password

ROLES = ("finder", "interpreter")
DEFAULT_MODELS = {"finder": "cwread-finder", "interpreter": "cwread-interpreter"}
CONSTRAINTS = ("auto", "grammar", "json", "none")  # how a server is made to keep the format
_AT_URL = re.compile(r"@(?=[A-Za-z][A-Za-z0-9+.-]*://)")  # "@" before a scheme: a server's address


def checked_constraint(name: str) -> str:
    """`name` as a constraint, in any case ("JSON" is json); InputError for none of CONSTRAINTS."""
    if name.lower() not in CONSTRAINTS:
        raise InputError(f"unknown constraint {name.lower()!r}; choose one of: {', '.join(CONSTRAINTS)}")
    return name.lower()


@dataclass(frozen=True)
class ModelRef:
    """An agent's model as the user named it: `provider` (None: the backend --backend
    chooses), `model` (a server's model name, or a GGUF file for the embedded backend; None:
    the default) and `url` (a server's address)."""

    provider: str | None = None
    model: str | None = None
    url: str | None = None

    @classmethod
    def parse(cls, text: str | None, providers: Iterable[str]) -> ModelRef:
        """`[provider:]model[@url]`; a prefix is a provider only when one of `providers` is
        so named, since Ollama's model names hold colons ("qwen2.5:7b")."""
        if not text:
            return cls()
        provider, rest = None, text
        head, colon, tail = text.partition(":")
        if colon and head in providers:
            provider, rest = head, tail
        url = None
        marks = list(_AT_URL.finditer(rest))
        if marks:
            rest, url = rest[: marks[-1].start()], rest[marks[-1].end() :]
        return cls(provider, rest or None, url)

    def model_for(self, role: str) -> str:
        """The model named, else `role`'s default (a server's model name)."""
        return self.model or DEFAULT_MODELS[role]

    def named(self) -> str:
        """The model as named, for messages."""
        text = f"{self.provider}:" if self.provider else ""
        return text + (self.model or "(default)") + (f"@{self.url}" if self.url else "")


@dataclass(frozen=True)
class Selection:
    """The backends that run the Finder and the Interpreter, and why, in one line for stderr."""

    finder: Backend
    interpreter: Backend
    why: str

    def close(self) -> None:
        """Let the backends go: a backend that runs a model in this process (one with a
        `close`) stops it; those a server holds have nothing to stop."""
        for backend in dict.fromkeys([self.finder, self.interpreter]):
            close = getattr(backend, "close", None)
            if close is not None:
                close()


@dataclass(frozen=True)
class Built:
    """What a provider built: the backend of each agent that named it (one object where both
    agents run the same model, so they share a call cache), and where, in words."""

    backends: dict[str, Backend]
    where: str


@dataclass(frozen=True)
class AutoClaim:
    """What a provider says when `auto` asks it whether to run the agents: `claims` it, and
    `why`, said on the line that names the backend (why it was picked, or why not)."""

    claims: bool
    why: str = ""


@dataclass(frozen=True)
class Provider:
    """A backend as a module declares it (see the module doc). `auto`: asked, in `auto_order`,
    whether `auto` should pick it (None: never, unless named); `auto_default`: the one `auto`
    picks when none claims the agents."""

    name: str
    summary: str  # what it runs, for help
    build: Callable[[BackendSettings, dict[str, ModelRef]], Built]  # the agents (by role) that named it
    settings: type | None = None  # its own settings section (a frozen dataclass; --backend-option sets its fields)
    adapter_hint: str = ""  # how a trained Finder adapter runs on it (when --finder-lora cannot)
    notes: Callable[[Backend], list[str]] = field(default=lambda backend: [])  # for doctor
    auto: Callable[[BackendSettings, dict[str, ModelRef]], AutoClaim] | None = None
    auto_order: int = 100
    auto_default: bool = False


PROVIDERS: dict[str, Provider] = {}


def models_said(backends: dict[str, Backend]) -> str:
    """The agents' models in words: "f, i" for both agents, "Finder f" for one."""
    if len(backends) > 1:
        return ", ".join(b.model for b in backends.values())
    return ", ".join(f"{role.capitalize()} {b.model}" for role, b in backends.items())


def places_said(places: dict[str, str]) -> str:
    """Where the agents' servers are: "at URL" when they are one, else "Finder at X,
    Interpreter at Y"."""
    if len(set(places.values())) == 1:
        return f"at {next(iter(places.values()))}"
    return ", ".join(f"{role.capitalize()} at {place}" for role, place in places.items())


def register(provider: Provider) -> None:
    PROVIDERS[provider.name] = provider


def backend_option_keys() -> dict[str, tuple[type, str]]:
    """Every provider's own settings, as `--backend-option` names them ("openai.base_url"),
    with the settings class and the field."""
    keys: dict[str, tuple[type, str]] = {}
    for provider in PROVIDERS.values():
        if provider.settings is not None:
            for item in dataclasses.fields(provider.settings):
                keys[f"{provider.name}.{item.name}"] = (provider.settings, item.name)
    return keys


def backend_sections(options: dict[str, str]) -> tuple[Any, ...]:
    """The providers' settings sections that `options` ("provider.field" or a field name only
    one provider has → its value as given) set; an unknown key or a value that is not of its
    field's type is an input error."""
    keys = backend_option_keys()
    by_field: dict[str, list[str]] = {}
    for key in keys:
        by_field.setdefault(key.split(".", 1)[1], []).append(key)
    values: dict[type, dict[str, Any]] = {}
    for given, raw in options.items():
        key = given.replace("-", "_")
        if key not in keys:
            named = by_field.get(key, [])
            if len(named) != 1:
                known = ", ".join(sorted(keys))
                raise InputError(f"unknown backend option {given!r}; the backends take: {known}")
            key = named[0]
        kind, name = keys[key]
        values.setdefault(kind, {})[name] = _typed(kind, name, raw, given)
    return tuple(kind(**fields) for kind, fields in values.items())


def _typed(kind: type, name: str, raw: str, given: str) -> Any:
    """`raw` as field `name` of `kind` takes it: a number, a yes/no, or text (its type says)."""
    hint = typing.get_type_hints(kind)[name]
    types = set(typing.get_args(hint)) - {type(None)} or {hint}
    if bool in types:
        if raw.lower() in YES:
            return True
        if raw.lower() in NO:
            return False
        raise InputError(f"backend option {given}={raw!r} is not true or false")
    for cast in (int, float):
        if cast in types:
            try:
                return cast(raw)
            except ValueError:
                raise InputError(f"backend option {given}={raw!r} is not a number") from None
    return raw


def described(default: Any, help: str) -> Any:
    """A settings field with what it means to a user: one text that every face's help reads
    (`setting_help`)."""
    return field(default=default, metadata={"help": help})


def setting_help(record: type, name: str) -> str:
    """What field `name` of the settings `record` means, as `described` gave it."""
    return next(item.metadata["help"] for item in dataclasses.fields(record) if item.name == name)


@dataclass(frozen=True)
class BackendSettings:
    """Which backend runs the agents and what every backend takes (each agent's model, the
    context, timeout, workers and reply constraint); `own` holds the providers' own settings
    sections given (e.g. `OpenAISettings(base_url=...)`), every other one taking its defaults
    and its environment."""

    backend: str = described(
        "auto",
        "auto (an OpenAI-compatible server when base_url is set, else Ollama when it serves the models, "
        "else embedded), or a backend by name [env: CWREAD_BACKEND].",
    )
    finder_model: str | None = described(
        None,
        "The Finder's model: a server's model name, or [backend:]model[@url] to run it elsewhere "
        "(openai:NAME@URL, ollama:NAME, embedded:FILE.gguf) [env: CWREAD_FINDER_MODEL; default: cwread-finder].",
    )
    interpreter_model: str | None = described(
        None, "The Interpreter's model, as the Finder's [env: CWREAD_INTERPRETER_MODEL; default: cwread-interpreter]."
    )
    num_ctx: int | None = described(None, f"Context window in tokens [env: CWREAD_NUM_CTX; default: {DEFAULT_NUM_CTX}].")
    timeout: float | None = described(
        None,
        "Seconds one call to a server (Ollama, OpenAI-compatible) may take [env: CWREAD_TIMEOUT; default: 30 plus "
        "the prompt at 100 tokens/s and the reply at 10 tokens/s].",
    )
    workers: int | None = described(None, "Finder calls at once (default: what the backend serves).")
    constraint: str | None = described(
        None,
        "How the server keeps the reply format: grammar (llama.cpp), json (a schema), none, or auto "
        "[env: CWREAD_CONSTRAINT; default: auto].",
    )
    own: tuple[Any, ...] = ()
    environment_read: bool = False  # resolved(): what the environment gives is in it

    def resolved(self) -> BackendSettings:
        """Flags first, then the environment (CWREAD_*), then defaults; each provider's
        section the same, one for every provider registered. The faces call it once, as they
        build a session's settings (the CLI, MCP and the reading room through it, cwread.api);
        resolved settings are returned as they are."""
        if self.environment_read:
            return self
        env = os.environ
        constraint = checked_constraint(self.constraint or env.get("CWREAD_CONSTRAINT") or "auto")
        kinds = [p.settings for p in PROVIDERS.values() if p.settings is not None]
        own = tuple(self.section(kind).resolved() for kind in kinds)
        for section in own:  # a server's address may carry a password: never printed, as a key
            for item in dataclasses.fields(section):
                keep_url_password(getattr(section, item.name))
        return BackendSettings(
            backend=self.backend or env.get("CWREAD_BACKEND") or "auto",
            finder_model=self.finder_model or env.get("CWREAD_FINDER_MODEL") or None,
            interpreter_model=self.interpreter_model or env.get("CWREAD_INTERPRETER_MODEL") or None,
            num_ctx=self.num_ctx or env_positive("CWREAD_NUM_CTX", int),
            timeout=self.timeout or env_positive("CWREAD_TIMEOUT", float),  # None: scaled per call
            workers=self.workers,
            constraint=constraint,
            own=own,
            environment_read=True,
        )

    def section(self, kind: type) -> Any:
        """The settings section of type `kind` given (else its defaults)."""
        return next((s for s in self.own if isinstance(s, kind)), None) or kind()

    def model_ref(self, role: str) -> ModelRef:
        """The model `role` ("finder", "interpreter") names (see ModelRef)."""
        return ModelRef.parse(getattr(self, f"{role}_model"), PROVIDERS)

    def refuse_others(self, finder_backend: str) -> None:
        """InputError when a setting only another backend takes is given (each section
        says; a Finder's own settings, such as its adapter, go by the Finder's backend)."""
        for section in self.own:
            section.refuse(finder_backend)
