"""Choosing backends: each agent's provider (named in its model, `openai:qwen2.5@URL`; else
--backend), then the environment, then `auto` (an OpenAI-compatible server when a base URL is
set, else Ollama if it serves the models, else the embedded default). The providers are
registered here, a line each (see cwread.backends.provider)."""

from __future__ import annotations

from collections.abc import Callable

from cwread.backends import embedded, ollama, openai_compat
from cwread.backends.provider import (
    PROVIDERS,
    ROLES,
    BackendSettings,
    ModelRef,
    Selection,
    register,
)
from cwread.errors import InputError

register(embedded.PROVIDER)
register(ollama.PROVIDER)
register(openai_compat.PROVIDER)

__all__ = ["PROVIDERS", "BackendSettings", "Selection", "select", "select_backends", "with_call_cache"]


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


def check_backend(name: str) -> None:
    """InputError where `name` is neither auto nor a registered provider's (as written: case counts)."""
    if name != "auto" and name not in PROVIDERS:
        raise InputError(f"unknown backend {name!r}; choose one of: auto, {', '.join(PROVIDERS)}")


def select_backends(settings: BackendSettings) -> Selection:
    """The Finder's and the Interpreter's backends for `settings` (see module doc): the agents
    that name a provider in their model get it; the rest get --backend's, `auto` deciding
    which; each provider builds its agents' backends at once. `settings` come resolved from a
    face (BackendSettings.resolved); a record built by hand is resolved here."""
    settings = settings.resolved()
    refs = {role: settings.model_ref(role) for role in ROLES}
    backend, why_auto = settings.backend, ""
    check_backend(backend)
    unnamed = [role for role in ROLES if refs[role].provider is None]
    if unnamed and backend == "auto":
        backend, why_auto = _auto(settings, {role: refs[role] for role in unnamed})
    chosen = {role: refs[role].provider or backend for role in ROLES}
    settings.refuse_others(chosen["finder"])
    groups: dict[str, dict[str, ModelRef]] = {}
    for role in ROLES:
        groups.setdefault(chosen[role], {})[role] = refs[role]
    built = {name: PROVIDERS[name].build(settings, wanted) for name, wanted in groups.items()}
    finder = built[chosen["finder"]].backends["finder"]
    interpreter = built[chosen["interpreter"]].backends["interpreter"]
    why = "backend: " + "; ".join(b.where for b in built.values()) + why_auto
    return Selection(finder, interpreter, why)


def _auto(settings: BackendSettings, wanted: dict[str, ModelRef]) -> tuple[str, str]:
    """The backend `auto` gives the agents in `wanted`, and what to add to the line that says
    why: the first provider, in their `auto_order`, that claims them (a server the user named,
    an adapter that runs only in-process, Ollama serving their models), else the default one,
    with why the last one asked did not claim them."""
    why_not = ""
    for provider in sorted((p for p in PROVIDERS.values() if p.auto is not None), key=lambda p: p.auto_order):
        claim = provider.auto(settings, wanted)
        if claim.claims:
            return provider.name, claim.why
        why_not = claim.why or why_not
    default = next(p for p in PROVIDERS.values() if p.auto_default)
    return default.name, why_not


def serving_notes(selection: Selection) -> list[str]:
    """What the user may want to change about how the chosen server is used (for `doctor`):
    the Finder's provider says."""
    provider = PROVIDERS.get(selection.finder.name)
    return provider.notes(selection.finder) if provider else []


# The two ways to a reader where no model here can read a book, one line each: said by the view
# of an answer no model read, by `doctor` and by the README
READER_ROUTES = (
    "Serve a model that reads: Ollama (qwen3:4b-instruct fits about 4 GB of GPU memory, qwen3:8b "
    "about 8 GB; `cwread doctor` gives the commands) or any OpenAI-compatible server (base_url).",
    "Or read through an AI assistant: `cwread mcp --root DIR` lets it find, show and search your books.",
)


def model_advice(selection: Selection | None) -> list[str]:
    """How to get models that read, when `ask` would run on the tiny embedded one (or none)."""
    from cwread.backends.modelfiles import setup_commands

    if selection is not None and selection.finder.name != "embedded":
        return []
    # doctor itself gives the commands: its routes say they are below, not to run it
    here = [route.replace("`cwread doctor` gives the commands", "the commands are below") for route in READER_ROUTES]
    return [
        "The embedded model (SmolLM2-135M) finds and quotes evidence; it cannot read a novel for an answer.",
        *here,
        "Ollama's commands:",
        *[f"  {command}" for command in setup_commands()],
    ]
