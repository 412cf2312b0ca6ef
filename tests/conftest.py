"""Shared fixtures: an isolated cache per test, scripted backends, small stories."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from cwread.backends import select
from cwread.backends.scripted import ScriptedBackend
from cwread.backends.select import Selection
from tests.scripted_replies import finder_reply

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"
EXAMPLES = REPO / "examples"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    """A fresh, empty cache root for one test (the static embedder ships with cwread)."""
    root = tmp_path / "cache"
    monkeypatch.setenv("CWREAD_CACHE_DIR", str(root))
    return root


@pytest.fixture
def story(tmp_path) -> Path:
    """A small hard-wrapped story with distinct facts in distinct paragraphs."""
    text = (
        "THE LIGHTHOUSE KEEPER\n\n"
        "Martha Quill kept the lighthouse on Gannet Rock for thirty\n"
        "years, and she never once let the lamp go dark.\n\n"
        "Every Sunday the supply boat brought flour, lamp oil and\n"
        "letters from her brother, who worked in a foundry inland.\n\n"
        "One winter a storm smashed the lantern glass. Martha climbed\n"
        "the tower with a bed sheet and held it against the wind so\n"
        "the flame would not be blown out.\n\n"
        "The fishermen of the harbour later gave her a silver medal,\n"
        "which she kept in a biscuit tin under her bed.\n\n"
        "Her cat, a grey tom called Admiral, slept every night on the\n"
        "warm brass of the lamp housing.\n"
    )
    path = tmp_path / "story.txt"
    path.write_text(text, encoding="utf-8")
    return path


@dataclass
class ScriptedAgents:
    """The two backends behind `--backend scripted`; tests queue replies or swap either."""

    finder: ScriptedBackend
    interpreter: ScriptedBackend


@pytest.fixture
def scripted(monkeypatch) -> ScriptedAgents:
    """Register `--backend scripted`: a Finder that keeps the segments mentioning the medal and
    an Interpreter with an empty queue (tests enqueue replies, or replace it)."""
    agents = ScriptedAgents(
        finder=ScriptedBackend(default=finder_reply, model="finder"),
        interpreter=ScriptedBackend(model="interp"),
    )
    monkeypatch.setitem(
        select.FACTORIES,
        "scripted",
        lambda settings: Selection(agents.finder, agents.interpreter, "backend: scripted"),
    )
    return agents
