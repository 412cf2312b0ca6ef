"""`cwread chat`: many questions on one open book, at a terminal or as JSON Lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES, REPO, run
from tests.scripted_replies import smart_interpreter

GIANT = str(EXAMPLES / "the_selfish_giant.txt")


def chat(capsys, monkeypatch, scripted, story, lines: bytes, *args: str, size: int | None = None) -> tuple[int, str, str]:
    """`cwread chat` in-process on the scripted backends, `lines` on its standard input (`size`:
    the Interpreter's parameters, as small as the embedded default's to judge at chance)."""
    from cwread.backends.scripted import ScriptedBackend

    scripted.interpreter = ScriptedBackend(default=smart_interpreter, size=size)
    base = ("chat", str(story), "--backend", "scripted", "--no-cache")
    return run(capsys, *base, *args, stdin=lines, monkeypatch=monkeypatch)


def test_json_lines_one_trace_a_question(capsys, story, cache_dir, scripted, monkeypatch):
    lines = (
        b"What did the fishermen give her?\n\n/show 5\nWho slept on the lamp?\n"
        + b"x" * 5000
        + b"\n/verify She kept the medal in a biscuit tin.\n"
    )
    code, out, _ = chat(capsys, monkeypatch, scripted, story, lines, "--json")
    docs = [json.loads(line) for line in out.splitlines()]
    first, shown, second, refused, claim = docs
    assert (
        first["citations"] and first["exit"] == 0 and first["question"] == "What did the fishermen give her?"
    )
    assert shown["paragraphs"][0]["id"] == 5
    assert second["answer"] == "Admiral" and second["exit"] == 0
    assert refused["error"]["kind"] == "input" and "5,000 characters" in refused["error"]["message"]
    assert claim["answer"] == "TRUE" and claim["kind"] == "claim" and claim["exit"] == 0
    assert code == 0  # the last answer's status
    assert len(scripted.finder.requests) > 0


def test_chat_saves_and_appends_traces(capsys, story, cache_dir, scripted, monkeypatch, tmp_path):
    saved, appended = tmp_path / "saved.jsonl", tmp_path / "trace.jsonl"
    lines = f"What did the fishermen give her?\nWho slept on the lamp?\n/save {saved}\n/nonsense\n".encode()
    code, out, err = chat(capsys, monkeypatch, scripted, story, lines, "--trace", str(appended))
    assert [json.loads(x)["question"] for x in saved.read_text().splitlines()] == [
        "What did the fishermen give her?",
        "Who slept on the lamp?",
    ]
    assert saved.read_text() == appended.read_text()
    assert "Answer:" in out and "unknown command /nonsense" in err and code == 2


def test_a_trace_never_overwrites_the_book(capsys, story, cache_dir, scripted, monkeypatch, tmp_path):
    """Nothing the user gave is lost: /save and --trace refuse the book's own file."""
    before = story.read_bytes()
    lines = f"What did the fishermen give her?\n/save {story}\n".encode()
    code, _, err = chat(capsys, monkeypatch, scripted, story, lines)
    assert code == 2 and "/save would overwrite the book itself" in err and story.read_bytes() == before
    code, _, err = chat(capsys, monkeypatch, scripted, story, b"What did the fishermen give her?\n", "--trace", str(story))
    assert code == 2 and "--trace would overwrite the book itself" in err and story.read_bytes() == before


def test_help_lists_one_command_a_line(capsys, story, cache_dir, scripted, monkeypatch):
    code, out, _ = chat(capsys, monkeypatch, scripted, story, b"/help\n", "--width", "40")
    commands = [line.split()[0] for line in out.splitlines() if line.lstrip().startswith("/")]
    assert commands == ["/verify", "/show", "/find", "/json", "/save", "/help", "/quit"] and code == 0


def test_chat_refuses_standard_input_as_the_book(capsys, cache_dir):
    code, _, err = run(capsys, "chat", "-")
    assert code == 2 and "standard input" in err


def test_a_script_holds_a_session_open(tmp_path):
    """`printf 'q1\\nq2\\n' | cwread chat BOOK --json` on the embedded default."""
    env = {**os.environ, "CWREAD_CACHE_DIR": str(tmp_path / "cache"), "OLLAMA_HOST": "http://127.0.0.1:9"}
    env.pop("CWREAD_BACKEND", None)
    questions = "Why did the Giant build a high wall round his garden?\nWhere did the children play?\n"
    proc = subprocess.run(
        [sys.executable, "-m", "cwread", "chat", GIANT, "--json"],
        input=questions,
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    traces = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(traces) == 2 and all(t["citations"] for t in traces), proc.stderr
    book = (EXAMPLES / "the_selfish_giant.txt").read_text(encoding="utf-8")
    for trace in traces:
        for quote in trace["quotes"]:
            assert " ".join(quote["quote"].split()) in " ".join(book.split())


@pytest.mark.slow
def test_chat_at_a_terminal(tmp_path):
    """Under a pseudo-terminal: two questions, /show, Ctrl-C during an answer (a real model
    call), a question after it, then Ctrl-D."""
    import pty
    import select
    import time

    env = {
        **os.environ,
        "CWREAD_CACHE_DIR": str(tmp_path / "cache"),
        "OLLAMA_HOST": "http://127.0.0.1:9",
        "COLUMNS": "120",
        "TERM": "dumb",
    }
    env.pop("CWREAD_BACKEND", None)
    pid, fd = pty.fork()
    if pid == 0:  # the child: cwread chat on the terminal
        os.chdir(REPO)
        os.execvpe(
            sys.executable,
            [sys.executable, "-m", "cwread", "chat", GIANT, "--no-cache", "--judge-anyway"],
            env,
        )
    seen = b""

    def read_until(marker: bytes, seconds: float = 60) -> bytes:
        nonlocal seen
        end = time.time() + seconds
        while marker not in seen and time.time() < end:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(fd, 65536)
                except OSError:
                    break
        assert marker in seen, seen.decode(errors="replace")[-2000:]
        found, seen = seen, b""
        return found

    def send(text: bytes) -> None:
        os.write(fd, text)

    read_until(b"cwread> ")
    send(b"Why did the Giant build a high wall round his garden?\r")
    assert b"Answer:" in read_until(b"cwread> ")
    send(b"/show 7\r")
    assert b"[7]" in read_until(b"cwread> ")
    send(b"/verify The Giant was selfish.\r")  # a real Interpreter call: interrupt it
    time.sleep(1.5)
    send(b"\x03")
    assert b"interrupted" in read_until(b"cwread> ", 120)
    send(b"Where did the children play?\r")
    assert b"Answer:" in read_until(b"cwread> ")
    send(b"/bogus\r")  # refused at the prompt; leaving after it is still no error
    read_until(b"cwread> ")
    send(b"\x04")
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_json_lines_every_line_in_gives_one_json_line_out(
    capsys, story, cache_dir, scripted, monkeypatch, tmp_path
):
    saved = tmp_path / "s.jsonl"
    lines = f"/help\n/json\nWhat did the fishermen give her?\n/json\n/save {saved}\n/nonsense\n".encode()
    _code, out, _ = chat(capsys, monkeypatch, scripted, story, lines, "--json")
    docs = [json.loads(line) for line in out.splitlines()]
    assert len(docs) == 6
    helped, none_yet, answered, again, stored, unknown = docs
    assert "/verify" in helped["help"] and none_yet["error"]["kind"] == "input"
    assert again["question"] == answered["question"] == "What did the fishermen give her?"
    assert stored == {"version": 2, "saved": 1, "path": str(saved)} and saved.exists()
    assert unknown["error"]["kind"] == "input"


def test_a_stage_note_is_said_once_a_chat_not_after_every_answer(capsys, story, cache_dir, scripted, monkeypatch):
    lines = b"What did the fishermen give her?\nWho slept on the lamp?\n"
    code, out, err = chat(capsys, monkeypatch, scripted, story, lines, "--finder", "off")
    assert code == 0 and out.count("Answer:") == 2 and err.count("Finder skipped: off, as asked") == 1


def test_a_piped_chat_exits_as_its_last_answer(capsys, story, cache_dir, scripted, monkeypatch):
    """As its help says: questions piped in, the exit is the last answer's (4 for no verdict,
    though the chat exited 0 after two such answers); a question answered last, 0."""
    lines = b"/verify She kept the medal in a drawer.\n/verify The fishermen gave her a lamp.\n"
    code, out, err = chat(capsys, monkeypatch, scripted, story, lines, size=135_000_000)  # judges claims at chance
    assert code == 4 and out.count("no verdict") == 2
    assert "start the chat with --judge-anyway" in err and "pass --judge-anyway" not in err
    lines = b"/verify She kept the medal in a drawer.\nWhat did the fishermen give her?\n"
    code, out, _ = chat(capsys, monkeypatch, scripted, story, lines, "--finder", "off")
    assert code == 0 and "Answer:" in out
