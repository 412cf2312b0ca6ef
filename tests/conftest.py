"""Shared fixtures: an isolated cache per test session, with the static embedder built once."""

from __future__ import annotations

import os
import shutil
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


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory) -> Path:
    """A cache root holding the distilled static model (built once per test session)."""
    root = tmp_path_factory.mktemp("cwread-cache")
    old = os.environ.get("CWREAD_CACHE_DIR")
    os.environ["CWREAD_CACHE_DIR"] = str(root)
    try:
        from cwread.embedders import load_static_minilm

        load_static_minilm()
    finally:
        if old is None:
            os.environ.pop("CWREAD_CACHE_DIR", None)
        else:
            os.environ["CWREAD_CACHE_DIR"] = old
    return root


@pytest.fixture
def cache_dir(session_cache, tmp_path, monkeypatch) -> Path:
    """A fresh cache root for one test that already has the static model (hard-linked)."""
    root = tmp_path / "cache"
    shutil.copytree(session_cache / "models", root / "models", copy_function=os.link)
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
