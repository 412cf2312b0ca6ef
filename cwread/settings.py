"""The settings tree, grouped by stage, that every entry point (the CLI, chat, MCP, the eval
harness, a script) builds once and passes whole: what a reading session is opened with
(`SessionSettings`: the dense model, the backends, the call cache) and what each question's
run is asked for (`cwread.plan.RunSettings`: budget and retrieval, the Finder, the answer).
The environment (`CWREAD_*`) is read where a setting is resolved, each variable in one module.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cwread.backends.provider import BackendSettings
from cwread.plan import RunSettings
from cwread.retrieval.embedders import DEFAULT_EMBEDDER


@dataclass(frozen=True)
class SessionSettings:
    """What a reading session holds for all its questions: `embedder`, the dense model that
    ranks by meaning; `backends`, which backends run the agents (each provider's own settings
    inside); `use_cache`, whether model calls are answered from the call cache where held."""

    embedder: str = DEFAULT_EMBEDDER
    backends: BackendSettings = field(default_factory=BackendSettings)
    use_cache: bool = True


@dataclass(frozen=True)
class Settings:
    """The whole tree: the session's settings and a question's run."""

    session: SessionSettings = field(default_factory=SessionSettings)
    run: RunSettings = field(default_factory=RunSettings)
