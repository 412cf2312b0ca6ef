"""Choosing backends: flags, then environment, then `auto` (an OpenAI-compatible server when a
base URL is set, else Ollama if it serves the models, else the embedded default). Factories are registered by name, so tests can add a scripted one."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from cwread.backends import DEFAULT_NUM_CTX, Backend
from cwread.backends.embedded import EmbeddedSettings
from cwread.backends.ollama import OllamaSettings
from cwread.backends.openai_compat import OpenAISettings
from cwread.errors import InputError, ModelError
from cwread.settings import env_positive

DEFAULT_FINDER_MODEL = "cwread-finder"
DEFAULT_INTERPRETER_MODEL = "cwread-interpreter"
CONSTRAINTS = ("auto", "grammar", "json", "none")  # how a server is made to keep the format


@dataclass(frozen=True)
class BackendSettings:
    """Which backend runs the agents and what every backend takes (server models, context,
    timeout, workers, the reply constraint); each backend's own settings are in its section,
    declared (and its environment read) in its own module."""

    backend: str = "auto"
    finder_model: str | None = None
    interpreter_model: str | None = None
    num_ctx: int | None = None
    timeout: float | None = None
    workers: int | None = None
    constraint: str | None = None  # auto, grammar, json, none
    embedded: EmbeddedSettings = field(default_factory=EmbeddedSettings)
    ollama: OllamaSettings = field(default_factory=OllamaSettings)
    openai: OpenAISettings = field(default_factory=OpenAISettings)

    def resolved(self) -> BackendSettings:
        """Flags first, then the environment (CWREAD_*), then defaults; each section the same."""
        env = os.environ
        constraint = (self.constraint or env.get("CWREAD_CONSTRAINT") or "auto").lower()
        if constraint not in CONSTRAINTS:
            raise InputError(f"unknown constraint {constraint!r}; choose one of: {', '.join(CONSTRAINTS)}")
        return BackendSettings(
            backend=self.backend or env.get("CWREAD_BACKEND") or "auto",
            finder_model=self.finder_model or env.get("CWREAD_FINDER_MODEL") or DEFAULT_FINDER_MODEL,
            interpreter_model=self.interpreter_model
            or env.get("CWREAD_INTERPRETER_MODEL")
            or DEFAULT_INTERPRETER_MODEL,
            num_ctx=self.num_ctx or env_positive("CWREAD_NUM_CTX", int),
            timeout=self.timeout or env_positive("CWREAD_TIMEOUT", float),  # None: scaled per call
            workers=self.workers,
            constraint=constraint,
            embedded=self.embedded.resolved(),
            ollama=self.ollama.resolved(),
            openai=self.openai.resolved(),
        )

    def refuse_others(self, backend: str) -> None:
        """InputError when a setting only another backend takes is given for `backend`."""
        for section in (self.embedded, self.ollama, self.openai):
            section.refuse(backend)


@dataclass(frozen=True)
class Selection:
    finder: Backend
    interpreter: Backend
    why: str  # one line for stderr: which backend runs and why


def select(settings: BackendSettings | None, use_cache: bool = True, notice: Callable[[str], None] | None = None) -> Selection:
    """The backends `settings` choose (see select_backends), behind the call cache unless
    `use_cache` is False; `notice` hears which run and why."""
    chosen = select_backends(settings or BackendSettings())
    if notice:
        notice(chosen.why)
    return with_call_cache(chosen) if use_cache else chosen


def with_call_cache(selection: Selection) -> Selection:
    """The same backends behind cwread's call cache (one cache when both agents share a model)."""
    from cwread.backends.callcache import CachedBackend

    finder = CachedBackend(selection.finder)
    interpreter = (
        finder if selection.interpreter is selection.finder else CachedBackend(selection.interpreter)
    )
    return Selection(finder, interpreter, selection.why)


Factory = Callable[[BackendSettings], Selection]
FACTORIES: dict[str, Factory] = {}


def register(name: str, factory: Factory) -> None:
    FACTORIES[name] = factory


def _ollama(settings: BackendSettings, probe: bool = True) -> Selection:
    from cwread.backends.ollama import OllamaBackend, modelfile_hint

    if settings.constraint == "grammar":
        raise InputError("Ollama takes no grammar: use --constraint auto, json or none")
    kwargs = {
        "host": settings.ollama.host,
        "num_ctx": settings.num_ctx or DEFAULT_NUM_CTX,
        "timeout": settings.timeout,
        "structured": {"json": True, "none": False}.get(settings.constraint or "auto"),
        "concurrency": settings.workers or settings.ollama.parallel,
    }
    finder = OllamaBackend(settings.finder_model, **kwargs)
    interpreter = OllamaBackend(settings.interpreter_model, **kwargs)
    if probe:
        have = finder.available_models()
        for model in (settings.finder_model, settings.interpreter_model):
            if model not in have:
                raise ModelError(f"Ollama has no model {model!r}: {modelfile_hint(model)}")
    return Selection(
        finder, interpreter, f"backend: ollama at {finder.host} ({finder.model}, {interpreter.model})"
    )


def _embedded(settings: BackendSettings) -> Selection:
    from cwread.backends.embedded import EmbeddedBackend

    num_ctx = settings.num_ctx or DEFAULT_NUM_CTX
    gguf, lora = settings.embedded.gguf, settings.embedded.finder_lora
    interpreter = EmbeddedBackend(gguf, num_ctx=num_ctx)
    finder = EmbeddedBackend(gguf, num_ctx=num_ctx, lora=lora) if lora else interpreter
    return Selection(
        finder,
        interpreter,
        f"backend: embedded llama.cpp (Finder {finder.model}, Interpreter {interpreter.model})",
    )


def _openai(settings: BackendSettings) -> Selection:
    from cwread.backends.openai_compat import OpenAIBackend, base_url_from

    base_url = base_url_from(settings.openai.base_url)
    if base_url is None:
        raise InputError(
            "--backend openai needs the server's address: --base-url URL or OPENAI_BASE_URL "
            "(e.g. http://127.0.0.1:8080/v1 for llama-server)"
        )
    kwargs = {
        "base_url": base_url,
        "api_key": settings.openai.api_key,
        "num_ctx": settings.num_ctx,
        "timeout": settings.timeout,
        "concurrency": settings.workers,
        "constraint": settings.constraint or "auto",
    }
    finder_url = base_url_from(settings.openai.finder_base_url, "--finder-base-url") or base_url
    finder = OpenAIBackend(settings.finder_model, **{**kwargs, "base_url": finder_url})
    finder.model = served_model(finder.info.models, finder.model, finder_url)
    if finder_url != base_url:
        interpreter = OpenAIBackend(settings.interpreter_model, **kwargs)
        interpreter.model = served_model(interpreter.info.models, interpreter.model, base_url)
        where = f"Finder at {finder_url}, Interpreter at {base_url}"
    else:
        interpreter = finder  # one backend (and one call cache) when both agents get the same model
        wanted = served_model(finder.info.models, settings.interpreter_model, base_url)
        if wanted != finder.model:
            interpreter = OpenAIBackend(wanted, info=finder.info, **kwargs)
        where = f"at {base_url}"
    return Selection(
        finder,
        interpreter,
        f"backend: openai-compatible server {where} ({finder.model}, {interpreter.model}; "
        f"{finder.constraint} constraint, {finder.capabilities.parallel} calls at once)",
    )


def served_model(served: tuple[str, ...], wanted: str, base_url: str) -> str:
    """`wanted` if the server lists it (or lists nothing); the one model a single-model
    server serves (llama-server, a vLLM started on one model); else a clear error."""
    if not served or wanted in served:
        return wanted
    if len(served) == 1:
        return served[0]
    raise ModelError(
        f"the server at {base_url} has no model {wanted!r}; it serves {', '.join(served)}: "
        "choose with --finder-model / --interpreter-model"
    )


def _auto(settings: BackendSettings) -> Selection:
    from cwread.backends.ollama import OllamaBackend

    if settings.openai.base_url or settings.openai.finder_base_url:  # a server the user named comes first
        return _openai(settings)
    if settings.embedded.finder_lora:  # an adapter GGUF runs only in-process
        chosen = _embedded(settings)
        return replace(chosen, why=f"{chosen.why}; --finder-lora given")
    try:
        probe = OllamaBackend(settings.finder_model, host=settings.ollama.host, timeout=2.0)
        have = probe.available_models()
    except ModelError:
        chosen = _embedded(settings)
        return replace(chosen, why=f"{chosen.why}; no Ollama server answers at {settings.ollama.host}")
    missing = [m for m in (settings.finder_model, settings.interpreter_model) if m not in have]
    if missing:
        chosen = _embedded(settings)
        return replace(chosen, why=f"{chosen.why}; Ollama runs but lacks {', '.join(missing)}")
    return _ollama(settings, probe=False)


def _auto_choice(settings: BackendSettings) -> str:
    """The backend `auto` takes before any probe: a server named, an adapter given, or either
    of Ollama and the embedded default ("auto": no setting of another backend may be given)."""
    if settings.openai.base_url or settings.openai.finder_base_url:
        return "openai"
    return "embedded" if settings.embedded.finder_lora else "auto"


register("auto", _auto)
register("ollama", _ollama)
register("embedded", _embedded)
register("openai", _openai)


def select_backends(settings: BackendSettings) -> Selection:
    """The Finder's and the Interpreter's backends for `settings` (see module doc)."""
    settings = settings.resolved()
    factory = FACTORIES.get(settings.backend)
    if factory is None:
        raise InputError(f"unknown backend {settings.backend!r}; choose one of: {', '.join(FACTORIES)}")
    settings.refuse_others(_auto_choice(settings) if settings.backend == "auto" else settings.backend)
    return factory(settings)


def serving_notes(selection: Selection) -> list[str]:
    """What the user may want to change about how the chosen server is used (for `doctor`)."""
    finder = selection.finder
    parallel = finder.capabilities.parallel
    if finder.name == "ollama":
        return [
            f"Ollama serves one call at a time unless its server runs with OLLAMA_NUM_PARALLEL=N; "
            f"cwread sends {parallel} Finder call(s) at once (set OLLAMA_NUM_PARALLEL "
            "here to the server's value, or pass --workers)"
        ]
    if finder.name == "openai":
        return [f"the server takes {parallel} calls at once; cwread sends as many (--workers to change)"]
    return []


def model_advice(selection: Selection | None) -> list[str]:
    """How to get models that read, when `ask` would run on the tiny embedded one (or none)."""
    from cwread.modelfiles import setup_commands

    if selection is not None and selection.finder.name != "embedded":
        return []
    return [
        "The embedded model (SmolLM2-135M) is tiny: it finds and quotes evidence but cannot "
        "write answers. For answers, serve a model that reads with Ollama:",
        *[f"  {command}" for command in setup_commands()],
        "or give --base-url (OPENAI_BASE_URL) of an OpenAI-compatible server "
        "(llama.cpp's llama-server, vLLM, LM Studio).",
    ]
