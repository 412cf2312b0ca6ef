"""Choosing backends: flags, then environment, then `auto` (an OpenAI-compatible server when a
base URL is set, else Ollama if it serves the models, else the embedded default). Factories are registered by name, so tests can add a scripted one."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from cwread.backends import DEFAULT_NUM_CTX, Backend
from cwread.errors import InputError, ModelError
from cwread.settings import env_positive

DEFAULT_FINDER_MODEL = "cwread-finder"
DEFAULT_INTERPRETER_MODEL = "cwread-interpreter"
CONSTRAINTS = ("auto", "grammar", "json", "none")  # how a server is made to keep the format


@dataclass(frozen=True)
class BackendSettings:
    backend: str = "auto"
    finder_model: str | None = None
    interpreter_model: str | None = None
    gguf: str | None = None
    finder_lora: str | None = None  # a LoRA GGUF for the embedded Finder; "none": without
    num_ctx: int | None = None
    host: str | None = None
    timeout: float | None = None
    workers: int | None = None
    base_url: str | None = None  # an OpenAI-compatible server
    # the Finder on a server of its own (llama-server serves one model: a trained Finder is a
    # second server with --lora, beside the base model's for the Interpreter)
    finder_base_url: str | None = None
    api_key: str | None = None
    constraint: str | None = None  # auto, grammar, json, none

    def resolved(self) -> BackendSettings:
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
            gguf=self.gguf or env.get("CWREAD_GGUF") or None,
            finder_lora=_adapter(self.finder_lora or env.get("CWREAD_FINDER_LORA")),
            num_ctx=self.num_ctx or env_positive("CWREAD_NUM_CTX", int),
            host=self.host or env.get("OLLAMA_HOST") or None,
            timeout=self.timeout or env_positive("CWREAD_TIMEOUT", float),  # None: scaled per call
            workers=self.workers,
            base_url=self.base_url or env.get("OPENAI_BASE_URL") or None,
            finder_base_url=self.finder_base_url or env.get("CWREAD_FINDER_BASE_URL") or None,
            api_key=self.api_key or env.get("OPENAI_API_KEY") or None,
            constraint=constraint,
        )


def _adapter(value: str | None) -> str | None:
    """A LoRA path, or None for unset and for "none" (which lets a flag cancel the env)."""
    return None if not value or value.lower() == "none" else value


@dataclass(frozen=True)
class Selection:
    finder: Backend
    interpreter: Backend
    why: str  # one line for stderr: which backend runs and why


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


def _only_openai_takes_a_finder_server(settings: BackendSettings) -> None:
    if settings.finder_base_url:
        raise InputError("--finder-base-url applies to --backend openai (with --base-url for the Interpreter)")


def _ollama(settings: BackendSettings, probe: bool = True) -> Selection:
    from cwread.backends.ollama import OllamaBackend, modelfile_hint

    _only_openai_takes_a_finder_server(settings)
    if settings.finder_lora:
        raise InputError(
            "--finder-lora applies to the embedded backend; with Ollama, put the adapter in a "
            "Modelfile (ADAPTER) and pass --finder-model"
        )

    if settings.constraint == "grammar":
        raise InputError("Ollama takes no grammar: use --constraint auto, json or none")
    kwargs = {
        "host": settings.host,
        "num_ctx": settings.num_ctx or DEFAULT_NUM_CTX,
        "timeout": settings.timeout,
        "structured": {"json": True, "none": False}.get(settings.constraint or "auto"),
    }
    if settings.workers:
        kwargs["concurrency"] = settings.workers
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

    _only_openai_takes_a_finder_server(settings)
    num_ctx = settings.num_ctx or DEFAULT_NUM_CTX
    lora = settings.finder_lora
    interpreter = EmbeddedBackend(settings.gguf, num_ctx=num_ctx)
    finder = EmbeddedBackend(settings.gguf, num_ctx=num_ctx, lora=lora) if lora else interpreter
    return Selection(
        finder,
        interpreter,
        f"backend: embedded llama.cpp (Finder {finder.model}, Interpreter {interpreter.model})",
    )


def _openai(settings: BackendSettings) -> Selection:
    from cwread.backends.openai_compat import OpenAIBackend, base_url_from

    base_url = base_url_from(settings.base_url)
    if base_url is None:
        raise InputError(
            "--backend openai needs the server's address: --base-url URL or OPENAI_BASE_URL "
            "(e.g. http://127.0.0.1:8080/v1 for llama-server)"
        )
    if settings.finder_lora:
        raise InputError(
            "--finder-lora applies to the embedded backend; load the adapter in the server "
            "(llama-server --lora FILE) instead"
        )
    kwargs = {
        "base_url": base_url,
        "api_key": settings.api_key,
        "num_ctx": settings.num_ctx,
        "timeout": settings.timeout,
        "concurrency": settings.workers,
        "constraint": settings.constraint or "auto",
    }
    finder_url = base_url_from(settings.finder_base_url, "--finder-base-url") or base_url
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
    from cwread.backends.ollama import DEFAULT_HOST, OllamaBackend

    if settings.base_url or settings.finder_base_url:  # a server the user named comes first
        return _openai(settings)
    if settings.finder_lora:  # an adapter GGUF runs only in-process
        chosen = _embedded(settings)
        return Selection(chosen.finder, chosen.interpreter, f"{chosen.why}; --finder-lora given")

    try:
        probe = OllamaBackend(settings.finder_model, host=settings.host, timeout=2.0)
        have = probe.available_models()
    except ModelError:
        host = settings.host or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST
        chosen = _embedded(settings)
        return Selection(
            chosen.finder, chosen.interpreter, f"{chosen.why}; no Ollama server answers at {host}"
        )
    missing = [m for m in (settings.finder_model, settings.interpreter_model) if m not in have]
    if missing:
        chosen = _embedded(settings)
        return Selection(
            chosen.finder, chosen.interpreter, f"{chosen.why}; Ollama runs but lacks {', '.join(missing)}"
        )
    return _ollama(settings, probe=False)


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
