"""Book text never reaches the terminal raw: every control character from outside (the book,
the question, a model's reply, a file name) is neutralised before it is printed, in the Rich
view on a terminal and in plain piped output; `--json` keeps the text exact."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cwread.cli import main
from cwread.views.terminal import printable
from tests.conftest import REPO

# what a hostile book may hold: clipboard write, window title, clear screen, a hyperlink,
# the 8-bit CSI, a bell and a carriage return
ATTACKS = [
    "\x1b]52;c;SGVsbG8=\x07",
    "\x1b]0;PWNED\x07",
    "\x1b[2J",
    "\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\",
    "\x9b31m",
    "\x07",
    "\r",
    "\u202ecat\u202c \u2067\u2069",  # bidi: a right-to-left override reorders what a terminal shows
]
# Rich's own output on a terminal: styling (SGR), and its progress bar's cursor hiding, line
# erasing and moving up (a CR only as the start of an erase)
_RICH = re.compile(rb"\x1b\[[0-9;]*m|\x1b\[\?25[lh]|\x1b\[2K|\x1b\[\d*A|\r(?=\x1b\[2K)")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def hostile_book(tmp_path):
    filler = "\n\n".join(
        f"Paragraph {i} tells of the quiet village and the river that ran past the mill." for i in range(60)
    )
    text = (
        "THE LIGHTHOUSE\n\n"
        f"The fishermen gave her a silver medal {ATTACKS[0]} and {ATTACKS[1]} she kept it.\n\n"
        f"She cleared {ATTACKS[2]} the table and {ATTACKS[3]} smiled. Red {ATTACKS[4]} sky{ATTACKS[5]} {ATTACKS[7]}.\n\n"
        f"{filler}\n"
    )
    path = tmp_path / "hostile.txt"
    path.write_text(text, encoding="utf-8")
    return path


def assert_no_raw_controls(data: bytes) -> None:
    """Nothing but Rich's own sequences, newline and tab among the control characters of `data`."""
    # (a CR at a line's start is the progress bar returning there once it is gone)
    text = _RICH.sub(b"", data).replace(b"\n\r", b"\n").decode("utf-8", errors="replace")
    found = sorted({hex(ord(c)) for c in _CONTROL.findall(text)})
    assert found == [], f"raw control characters reached the terminal: {found}"


def run_in_pty(args: list[str], env: dict) -> tuple[int, bytes]:
    """Run `python -m cwread ARGS` with stdout and stderr on a pseudo-terminal."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the CLI on the terminal
        os.chdir(REPO)
        os.execvpe(sys.executable, [sys.executable, "-m", "cwread", *args], env)
    chunks = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    # the terminal itself turns each newline into CR LF (onlcr): that CR is not the book's
    return os.waitstatus_to_exitcode(status), b"".join(chunks).replace(b"\r\n", b"\n")


@pytest.mark.parametrize(
    "command",
    [
        ["show", "{book}", "1-3"],
        ["find", "{book}", "What did the fishermen give her?", "--limit", "3"],
    ],
    ids=["show", "find"],
)
def test_a_hostile_book_on_a_terminal_shows_no_raw_control(tmp_path, cache_dir, command):
    book = hostile_book(tmp_path)
    env = {**os.environ, "CWREAD_CACHE_DIR": str(cache_dir), "COLUMNS": "100", "TERM": "xterm-256color"}
    code, data = run_in_pty([part.format(book=book) for part in command], env)
    assert code == 0, data[-500:]
    assert b"\x1b[" in data, "expected Rich's styling on a terminal"
    assert_no_raw_controls(data)
    assert "\u241b]52;c;SGVsbG8=".encode() in data  # shown, visibly, not obeyed


BIDI = ["\u202e", "\u202d", "\u202a", "\u202b", "\u202c", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f", "\u061c"]


@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
@pytest.mark.parametrize(
    "command",
    [["show", "{book}", "1-3"], ["find", "{book}", "Who paid the invoice?", "--limit", "2"], ["search", "{folder}", "invoice paid"]],
    ids=["show", "find", "search"],
)
def test_bidi_controls_reach_no_terminal_raw(tmp_path, cache_dir, command, locale):
    """RLO and its kin would make a line read otherwise than its bytes ("paid" shown as
    "diap"): on a terminal they are shown as U+FFFD, from the book and from its file name."""
    folder = tmp_path / "shelf"
    folder.mkdir()
    book = folder / "ledger\u202etxt.exe.txt"
    filler = "\n\n".join(f"Entry {i}: the clerk copied the ledger by lamplight." for i in range(40))
    book.write_text(
        "THE LEDGER\n\n"
        "The invoice was \u202ediap ton\u202c by Mr. Hale, \u2067said the clerk\u2069 \u200fquietly.\n\n"
        f"Mr. Hale paid the invoice \u2066in full\u2069 \u200e\u061con Monday.\n\n{filler}\n",
        encoding="utf-8",
    )
    env = {**os.environ, "CWREAD_CACHE_DIR": str(cache_dir), "COLUMNS": "100", "TERM": "xterm-256color", "LC_ALL": locale}
    code, data = run_in_pty([part.format(book=book, folder=folder) for part in command], env)
    assert code == 0, data[-500:]
    text = data.decode("utf-8", errors="replace")
    assert [c for c in BIDI if c in text] == [] and "\ufffd" in text
    assert "diap ton" in text  # shown as its bytes are, not reordered


def test_ask_on_a_terminal_neutralises_the_book_question_and_reply(capsys, tmp_path, cache_dir, scripted, monkeypatch):
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # Rich styles as on a terminal
    monkeypatch.setenv("FORCE_COLOR", "1")
    book = hostile_book(tmp_path)
    scripted.interpreter.enqueue(
        '<reason>[2] "The fishermen gave her a silver medal \x1b]52;c;SGVsbG8=\x07 and \x1b]0;PWNED\x07 '
        'she kept it."</reason><answer>a silver medal \x1b[2J\x9b31m</answer>'
    )
    code = main(["ask", str(book), "What did the fishermen \x1b]0;T\x07 give her?", "--backend", "scripted", "--no-cache"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "\x1b[" in out  # styled
    assert_no_raw_controls(out.encode())
    assert_no_raw_controls(err.encode())
    assert "\u241b]52;c;SGVsbG8=" in out  # the quote is shown, neutralised


def test_json_keeps_the_text_exact_and_escapes_every_control(capsys, tmp_path):
    book = hostile_book(tmp_path)
    code = main(["show", str(book), "2-3", "--json"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert _CONTROL.findall(out) == []  # C0 by JSON itself, DEL, C1 and bidi by cwread
    texts = [p["text"] for p in json.loads(out)["paragraphs"]]
    assert ATTACKS[0] in texts[0] and ATTACKS[4] in texts[1]  # exact after parsing
    assert any(ATTACKS[-1] in text for text in texts)


def test_printable_keeps_length_and_newlines():
    text = "a\x1b[2Jb\tc\nd\x9be\x7f\x00 \u202eevil\u202c \u2066x\u2069\u200f"
    shown = printable(text)
    assert len(shown) == len(text)  # quote highlights keep their offsets
    assert "\n" in shown and "\t" in shown
    assert _CONTROL.findall(shown) == []


_controls = st.sampled_from([chr(c) for c in [*range(0, 9), *range(11, 32), *range(127, 160)]])
_hostile_text = st.lists(st.one_of(_controls, st.sampled_from(ATTACKS), st.text("abc medal ", min_size=1, max_size=8)), min_size=1, max_size=12).map("".join)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(in_book=_hostile_text, in_question=_hostile_text, in_reply=_hostile_text)
def test_no_control_character_from_outside_reaches_stdout_or_stderr(
    capsys, tmp_path, cache_dir, scripted, in_book, in_question, in_reply
):
    filler = "\n\n".join(f"The mill by the river turned slowly, day {i}." for i in range(80))
    book = tmp_path / "b.txt"
    book.write_text(f"The silver medal {in_book} lay in a tin.\n\n{filler}\n", encoding="utf-8")
    question = f"Where was the medal {in_question}?"
    scripted.interpreter.enqueue(f"<reason>[1] \"The silver medal\"</reason><answer>in a tin {in_reply}</answer>")
    for args in (
        ["show", str(book), "1-2"],
        ["find", str(book), question, "--limit", "2"],
        ["ask", str(book), question, "--backend", "scripted", "--no-cache", "--answer", "generative"],
    ):
        code = main(args)
        out, err = capsys.readouterr()
        # 2 only for a book that is mostly control bytes, refused; 4 only for an answer its quotes do not cover
        refused = code == 2 and "looks like a binary file" in err
        unbacked = code == 4 and args[0] == "ask" and "not determined from the text" in err
        assert code == 0 or refused or unbacked, (args[0], code, err)
        assert _CONTROL.findall(out) == [], args[0]
        assert _CONTROL.findall(err) == [], args[0]


def test_an_arguments_undecodable_byte_is_not_written_back_raw(capsys, tmp_path, cache_dir):
    """An argument's byte 0x9B (a terminal's CSI) reaches Python as the surrogate U+DC9B and was
    written back to the terminal as that raw byte in search's "for: ..." line."""
    from cwread.views.terminal import printable

    assert printable("a\udc9bb") == "a\ufffdb"
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    hostile_book(shelf)
    code = main(["search", str(shelf), "\udc9bx lighthouse"])
    out, err = capsys.readouterr()
    assert code == 0 and "for: \ufffdx lighthouse" in out and "\udc9b" not in out + err
