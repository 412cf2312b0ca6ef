"""The real CLI: `cwread.cli.main` in-process, plus the installed console script in a subprocess."""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from cwread import __version__
from tests.conftest import REPO, run


def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"cwread {__version__}"


def test_show_single_range_and_list(capsys, story):
    code, out, _ = run(capsys, "show", str(story), "2")
    assert code == 0 and out.startswith("[2] Martha Quill kept the lighthouse")
    code, out, _ = run(capsys, "show", str(story), "1-2,5")
    assert code == 0
    assert [line.split("]")[0] for line in out.splitlines() if line.startswith("[")] == ["[1", "[2", "[5"]
    for apart in (("1-2", "5"), ("1-2,", "5"), ("1-2,,5",), ("1,2,1-2,5,5",)):  # as readers write them
        code, spaced, _ = run(capsys, "show", str(story), *apart)
        assert code == 0 and spaced == out, apart  # each paragraph once; an empty part is none


def test_show_json(capsys, story):
    code, out, _ = run(capsys, "show", str(story), "3", "--json")
    data = json.loads(out)
    assert code == 0
    assert data["document"]["paragraphs"] == 6 and len(data["document"]["sha256"]) == 64
    assert data["paragraphs"] == [
        {
            "id": 3,
            "source": None,
            "paragraph": 3,
            "chapter": "THE LIGHTHOUSE KEEPER",
            "block": 3,
            "line": 6,
            "text": data["paragraphs"][0]["text"],
            "wrapping": None,
        }
    ]
    assert data["paragraphs"][0]["text"].startswith("Every Sunday the supply boat")


def test_show_reads_stdin(capsys, monkeypatch):
    code, out, _ = run(capsys, "show", "-", "2", stdin=b"one\n\ntwo\n", monkeypatch=monkeypatch)
    assert code == 0 and out.strip() == "[2] two"


def test_find_json_is_pure_and_complete(capsys, story, cache_dir):
    code, out, _ = run(
        capsys,
        "find",
        str(story),
        "What did the fishermen give her?",
        "--json",
        "-o",
        "A=a medal",
        "-o",
        "B=a boat",
    )
    assert code == 0
    data = json.loads(out)  # nothing but JSON on stdout
    assert data["version"] == 2
    assert set(data["document"]) >= {"path", "sha256", "paragraphs"}
    assert data["question"] == "What did the fishermen give her?"
    assert data["options"] == {"A": "a medal", "B": "a boat"}
    segs = data["segments"]
    assert segs and all(set(s) >= {"start", "end", "source", "kind", "score"} for s in segs)
    assert {s["kind"] for s in segs} <= {"anchor", "window"} and {s["source"] for s in segs} == {None}
    covered = sorted(pid for s in segs for pid in range(s["start"], s["end"] + 1))
    assert covered == list(range(1, 7))  # a short story: every segment shown, all paragraphs once
    assert segs[0]["kind"] == "anchor" and 5 in range(segs[0]["start"], segs[0]["end"] + 1)
    assert "[5]" in segs[0]["text"]


def test_find_into_a_pipe_is_plain_text(capsys, story, cache_dir):
    code, out, _ = run(capsys, "find", str(story), "Who slept on the lamp?", "--limit", "1")
    assert code == 0
    assert (
        "#1 [" in out and "THE LIGHTHOUSE KEEPER" in out and "[6] Her cat, a grey tom called Admiral" in out
    )
    assert not set("╭╮╰╯│─") & set(out) and "score" not in out


def test_find_budget_flags(capsys, story, cache_dir):
    code, out, _ = run(
        capsys,
        "find",
        str(story),
        "lamp",
        "--json",
        "--set",
        "budget.preset=broad",
        "--set",
        "budget.anchors=1",
        "--set",
        "budget.p_w=2",
        "--limit",
        "0",
        "--retrieval",
        "bm25",
    )
    data = json.loads(out)
    assert code == 0 and data["budget"]["preset"] == "broad" and data["budget"]["p_w"] == 2
    assert len(data["anchors"]) == 1 and data["method"] == "bm25"
    assert all(s["end"] - s["start"] < 2 for s in data["segments"] if s["kind"] == "window")


def test_index_then_find_is_cached(capsys, story, cache_dir):
    code, out, _ = run(capsys, "index", str(story), "--json")
    assert code == 0 and sorted(json.loads(out)["built"]) == ["bm25", "dense"]
    code, out, _ = run(capsys, "index", str(story), "--json")
    assert json.loads(out)["built"] == []


def folder_of(tmp_path, files: dict[str, bytes]) -> str:
    folder = tmp_path / "folder"
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return str(folder)


def write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def looped(tmp_path, name):
    """A link to itself: round in a loop, no file at its end."""
    path = tmp_path / name
    path.symlink_to(path)
    return str(path)


@pytest.mark.parametrize(
    "make_args,needle",
    [
        (lambda t, s: ["show", str(t / "missing.txt"), "1"], "no such file"),
        (lambda t, s: ["show", looped(t, "loop.txt"), "1"], "a link that leads to no file"),
        (lambda t, s: ["search", "-", "lamp"], "not standard input"),
        (lambda t, s: ["show", folder_of(t, {"scan.pdf": b"%PDF-1.4 ..."}), "1"], "no readable text"),
        (lambda t, s: ["show", str(s.parent), "1"], "needs its file"),
        (lambda t, s: ["show", write(t, "b.bin", b"\x00\x01\x02\xff" * 300), "1"], "binary"),
        (lambda t, s: ["show", write(t, "e.txt", b""), "1"], "empty"),
        (lambda t, s: ["show", write(t, "w.txt", b"  \n\n \t\n"), "1"], "empty"),
        (lambda t, s: ["show", write(t, "p.pdf", b"%PDF-1.4 ..."), "1"], "PDF"),
        (lambda t, s: ["show", str(s), "99"], "out of range"),
        (lambda t, s: ["show", str(s), "x-y"], "bad paragraph range"),
        (lambda t, s: ["show", str(s), "1", "--encoding", "klingon"], "unknown encoding"),
        (lambda t, s: ["show", str(s), "1", "--encoding", "undefined"], "not valid undefined"),  # decodes nothing
        (
            lambda t, s: [
                "show",
                write(t, "l.txt", "d\u00e9j\u00e0".encode("latin-1")),
                "1",
                "--encoding",
                "utf-8",
            ],
            "not valid utf-8",
        ),
        (lambda t, s: ["find", str(s), "   "], "question is empty"),
        (lambda t, s: ["find", str(s), "q", "-o", "A="], "option A is empty"),
        (lambda t, s: ["find", str(s), "q", "-o", "A=x"], "at least two options"),
        (lambda t, s: ["find", str(s), "q", "-o", "A"], "one was given, 'A' (as option A: 'A'): give each as \"A=text\""),
        (lambda t, s: ["find", str(s), "q", "--set", "budget.preset=huge"], "unknown preset"),
        (lambda t, s: ["find", str(s), "q", "--set", "budget.p_w=0"], "p_w"),
        (lambda t, s: ["find", str(s), "q", "--set", "budget.anchors=many"], "budget.anchors must be a number"),
        (lambda t, s: ["find", str(s), "q", "--set", "finder.use=on"], "only budget.* settings apply"),
        (lambda t, s: ["find", str(s), "q", "--set", "budget.b_c"], "a setting is KEY=VALUE"),
        (lambda t, s: ["find", str(s), "q", "--retrieval", "magic"], "unknown retrieval method"),
        (lambda t, s: ["find", str(s)], "Missing argument"),
        (lambda t, s: ["frobnicate"], "No such command"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, story, cache_dir, make_args, needle):
    code, out, err = run(capsys, *make_args(tmp_path, story))
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cwread: error:")
    assert needle in lines[0]
    assert "Traceback" not in err


def test_missing_embedding_model_is_exit_2_and_a_broken_one_exit_3(capsys, story, cache_dir, monkeypatch):
    code, _, err = run(capsys, "find", str(story), "q", "--embedder", str(story.parent / "no-model"))
    assert code == 2 and "no such folder" in err and "Traceback" not in err  # a bad path: input
    monkeypatch.setenv("HF_HOME", str(cache_dir / "hf"))
    code, _, err = run(capsys, "find", str(story), "q", "--embedder", "no-such-cached-model")
    assert (
        code == 2
        and "not a shipped embedder, a local folder, or a model already in the local model cache" in err
    )
    # a name the local model cache holds, but broken: the loader's failure is a model error
    (cache_dir / "hf" / "hub" / "models--sentence-transformers--broken" / "snapshots").mkdir(parents=True)
    code, _, err = run(capsys, "find", str(story), "q", "--embedder", "broken")
    last = err.strip().splitlines()[-1]
    if importlib.util.find_spec("sentence_transformers") is None:  # the fast lane's install: no dense extra
        assert code == 3 and "needs the dense extra" in last
    else:
        assert code == 3 and last.startswith("cwread: error: cannot load embedding model 'broken' (")


def test_debug_shows_the_traceback(capsys, tmp_path):
    code, _, err = run(capsys, "show", str(tmp_path / "missing.txt"), "1", "--debug")
    assert code == 2 and "Traceback" in err


@pytest.mark.skipif(shutil.which("cwread") is None, reason="console script not installed")
def test_console_script_end_to_end(story, cache_dir):
    """The installed `cwread`: JSON alone on stdout, progress on stderr, exit codes kept."""
    env = dict(os.environ)
    proc = subprocess.run(
        ["cwread", "find", str(story), "Why did Martha climb the tower?", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["document"]["paragraphs"] == 6
    proc = subprocess.run(
        ["cwread", "show", str(story) + ".nope", "1"], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().count("\n") == 0 and "no such file" in proc.stderr


def _option_text(help_text: str, flag: str) -> str:
    """An option's whole entry in plain help: its line and the indented lines that go on with it."""
    lines = help_text.splitlines()
    at = next(i for i, line in enumerate(lines) if flag + " " in line)
    rest = []
    for line in lines[at + 1 :]:
        if line.lstrip().startswith("-") or not line.startswith("      "):
            break
        rest.append(line.strip())
    return " ".join([lines[at], *rest])


def test_help_lists_every_registered_choice(capsys, monkeypatch):
    """Choices in help come from their registries: a method, backend or mode added there is
    listed without touching the help text."""
    from cwread.backends.select import PROVIDERS
    from cwread.eval.methods import METHODS as EVAL_METHODS
    from cwread.records.plan import ANSWER_CHOICES, FINDER_REPLIES
    from cwread.retrieval.fusion import METHODS as RETRIEVALS
    from cwread.settings import knob_names

    monkeypatch.setenv("COLUMNS", "1000")  # one line an option: no name is broken across lines
    _, eval_help, _ = run(capsys, "eval", "--help-all")
    _, ask_help, _ = run(capsys, "ask", "--help-all")
    method_line = _option_text(eval_help, "--method")
    assert [m for m in EVAL_METHODS if m not in method_line] == []
    for flag, names in (
        ("--retrieval", RETRIEVALS),
        ("--backend", PROVIDERS),
        ("--answer", ANSWER_CHOICES),
        ("--set", [*FINDER_REPLIES, *knob_names()]),
    ):
        line = _option_text(ask_help, flag)
        assert [n for n in names if n not in line] == [], flag


@pytest.mark.parametrize("args", [("-h",), ("ask", "-h"), ("show", "-h"), ("eval", "-h")])
def test_dash_h_is_help(capsys, args):
    code, out, err = run(capsys, *args)
    assert code == 0, err
    assert "Usage:" in out


def test_the_help_an_assistant_reads_once_is_short_and_names_the_rest(capsys, story):
    """Into a pipe, `cwread --help` with find's, show's and search's fits 6,000 characters
    (#88): the second panels' options are counted and shown by --help-all, and still work."""
    helps = {c: run(capsys, *([c] if c else []), "--help")[1] for c in ("", "find", "show", "search")}
    assert sum(len(h) for h in helps.values()) <= 6000
    assert all("<str>" not in h and "{" not in h.splitlines()[0] for h in helps.values())
    assert "--around N " in helps["show"] and "--limit N " in helps["find"]  # a number named N, not TEXT
    assert "--set" not in helps["find"] and "--encoding" not in helps["find"]
    more = re.search(r"(\d+) more options \(([^)]*)\): --help-all", " ".join(helps["find"].split()))
    assert more and "Stage settings" in more.group(2)
    code, every, _ = run(capsys, "find", "--help-all")
    listed = [line for line in every.splitlines() if line.startswith(("-", "  -"))]
    shown = [line for line in helps["find"].splitlines() if line.startswith(("-", "  -"))]
    assert code == 0 and "--set KEY=VALUE" in every and "budget.b_c" in every and "--encoding TEXT" in every
    assert len(listed) - len(shown) == int(more.group(1))
    code, _, _ = run(capsys, "show", str(story), "1", "--encoding", "utf-8", "--width", "40")  # hidden, still taken
    assert code == 0


def test_show_to_the_end_all_and_a_range_past_it(capsys, story):
    code, out, err = run(capsys, "show", str(story), "5-", "--json")
    assert code == 0 and [p["id"] for p in json.loads(out)["paragraphs"]] == [5, 6]
    code, out, err = run(capsys, "show", str(story), "all", "--json")
    assert code == 0 and len(json.loads(out)["paragraphs"]) == 6
    code, out, err = run(capsys, "show", str(story), "4-2000", "--json")
    assert code == 0 and [p["id"] for p in json.loads(out)["paragraphs"]] == [4, 5, 6]
    assert "4-2000 stops at 6, the last paragraph" in err


def test_flags_take_no_value_in_the_help(capsys):
    """A flag is listed without a value type: "--json <bool>" read as if it took one."""
    for command in ("ask", "verify", "show", "search", "chat", "eval", "doctor", "index", "find"):
        code, out, _ = run(capsys, command, "--help")
        assert code == 0
        flags = [line for line in out.splitlines() if "<bool>" in line and "--help" not in line]
        assert not flags, f"{command}: {flags}"


def test_help_names_every_format_and_every_mcp_tool(capsys):
    import asyncio
    from pathlib import Path

    from cwread import api
    from cwread.mcp.books import ServerSettings
    from cwread.mcp.server import build_server

    for command in ("ask", "verify", "show", "find", "index", "chat"):
        code, out, _ = run(capsys, command, "--help")
        flat = " ".join(out.split())
        assert code == 0 and all(kind in flat for kind in ("text", "HTML", "EPUB", "PDF")), command
    server = build_server(ServerSettings((Path("."),), api.SessionSettings("minilm-static")))
    tools = [t.name for t in asyncio.run(server.list_tools())]
    code, out, _ = run(capsys, "mcp", "--help")
    assert code == 0 and len(tools) == 8 and all(name in out for name in tools)
    readme, mcp_page = (REPO / "README.md").read_text(), (REPO / "docs" / "chat-and-mcp.md").read_text()
    assert all(f"`{name}`" in readme and f"`{name}`" in mcp_page for name in tools)
    assert all(kind in " ".join(readme.split()) for kind in ("text, HTML, EPUB or PDF",))


def test_the_mcp_hint_names_what_pip_can_install(monkeypatch):
    from cwread.environment import install_extra

    # the extra's requirement, not 'cwread[mcp]' (no index has it)
    assert install_extra("mcp").startswith("pip install 'mcp")


def test_show_takes_neighbours_and_a_relative_range(capsys, story):
    code, out, _ = run(capsys, "show", str(story), "3", "--around", "1")
    assert code == 0 and [line.split("]")[0] for line in out.split("\n\n") if line.strip()] == [
        "[2",
        "[3",
        "[4",
    ]
    code, out, err = run(capsys, "show", str(story), "5+3")
    assert code == 0 and "[5] The fishermen" in out and "[6] Her cat" in out and "5+3 stops at 6" in err
    code, out, _ = run(capsys, "show", str(story), "2,3", "--around", "1", "--json")
    assert [p["id"] for p in json.loads(out)["paragraphs"]] == [1, 2, 3, 4]  # every paragraph once


def test_ask_help_puts_the_common_options_first_and_groups_the_rest(capsys, monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")  # a terminal's help: Rich's panels
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TERM", raising=False)
    code, out, _ = run(capsys, "ask", "--help")
    lines = re.sub(r"\x1b\[[0-9;]*m", "", out).splitlines()
    panels = [line.split("─ ")[1].split(" ─")[0] for line in lines if line.startswith("╭─ ")]
    assert code == 0 and panels == ["Arguments", "Options"] and len(lines) < 80  # one screen
    plain = " ".join(" ".join(line.strip("│ ") for line in lines).split())
    assert "--json " in plain and "--set " not in plain and "more options (Question kind" in plain
    code, out, _ = run(capsys, "ask", "--help-all")
    lines = re.sub(r"\x1b\[[0-9;]*m", "", out).splitlines()
    where = {
        flag: next(i for i, line in enumerate(lines) if f"{flag} " in line)
        for flag in ("--json", "--width", "--set", "--gguf")
    }
    panels = [line.split("─ ")[1].split(" ─")[0] for line in lines if line.startswith("╭─ ")]
    assert code == 0 and panels[:3] == ["Arguments", "Options", "Question kind"] and "Stage settings" in panels
    assert where["--json"] < where["--width"] < where["--set"] < where["--gguf"]


def test_version_is_answered_before_the_cli_is_imported():
    """`cwread --version` starts as fast as Python (benchmarks/startup.py): no typer, no numpy."""
    import subprocess
    import sys

    probe = (
        "import sys; sys.argv = ['cwread', '--version']; from cwread.cli import entry; entry(); "
        "print(sorted(m for m in ('typer', 'numpy', 'rich') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    from cwread import __version__

    assert done.stdout.splitlines() == [f"cwread {__version__}", "[]"]


def test_a_usage_error_loads_no_view_no_format_and_no_package_scan():
    """A usage error is answered from the options alone (#91 item 6: within 5x a bare Python):
    Rich is loaded at the first view, the formats when a book is read or a help names them, and
    importlib.metadata only where a package on the path declares a plug-in (cwread.plugins)."""
    import subprocess
    import sys

    probe = (
        "import sys; from cwread.cli.core import main; code = main(['ask']); "
        "print(code, sorted({m.split('.')[0] if m.startswith('rich') else m for m in sys.modules "
        "if m.startswith(('rich', 'cwread.book.formats', 'cwread.book.document', 'importlib.metadata'))}))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["2 []"] and "Missing argument 'BOOK'" in done.stderr


def test_a_find_into_a_pipe_loads_no_library_and_no_progress_bar(tmp_path):
    """A file's find asks no folder how it reads (the library's catalog) and, off a terminal,
    draws no bar (Rich's progress): neither is loaded."""
    import subprocess
    import sys

    giant = REPO / "examples" / "the_selfish_giant.txt"
    probe = (
        "import sys; from cwread.cli.core import main; "
        f"code = main(['find', {str(giant)!r}, 'Why did the giant build a wall?', '--map']); "
        "print(code, sorted(m for m in ('cwread.library.catalog', 'rich.progress') if m in sys.modules))"
    )
    env = {**os.environ, "CWREAD_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.splitlines()[-1] == "0 []" and "#1 [" in done.stdout


@pytest.mark.parametrize("terminal", [False, True])
def test_help_names_the_formats_cwread_reads(capsys, monkeypatch, terminal):
    """The formats a help names are filled from their registry when the help is written."""
    if terminal:
        monkeypatch.setenv("FORCE_COLOR", "1")
        monkeypatch.delenv("NO_COLOR", raising=False)
    for command in ([], ["show"], ["ask"]):
        code, out, _ = run(capsys, *command, "--help")
        plain = " ".join(re.sub(r"\x1b\[[0-9;]*m|[│╭╮╰╯─]", " ", out).split())
        assert code == 0 and "text, HTML, PDF or EPUB" in plain and "{format_names}" not in plain, command


def test_help_into_a_pipe_is_plain_text(capsys):
    """An assistant reads the help through a pipe: no boxes padded to the width, two fifths the
    characters of Rich's panels (#88: the help read once cost 25,000 characters)."""
    sizes = {}
    for command in ([], ["find"], ["show"], ["search"]):
        code, out, _ = run(capsys, *command, "--help")
        assert code == 0 and "╭" not in out and "│" not in out
        sizes[" ".join(command) or "cwread"] = len(out)
    assert sum(sizes.values()) < 12_000, sizes


@pytest.mark.parametrize("args", [(), ("config",)])
def test_a_command_alone_prints_its_help_in_lines(capsys, args):
    """`cwread` (or a group) alone into a pipe: its help on stdout as lines, exit 2 (click hands
    the help over as a usage error's message, which was once pressed into one error line)."""
    code, out, err = run(capsys, *args)
    assert code in (0, 2) and err == ""  # 2 where click hands the help over as an error (8.2 and later)
    assert out.startswith(f"Usage: cwread {' '.join(args)}".rstrip() + " COMMAND") and out.count("\n") > 10
    assert "show " in out if not args else "set " in out
    # its reader gone at once (`cwread | head -1`): no traceback, nothing on stderr
    gone = subprocess.Popen(
        [sys.executable, "-m", "cwread", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO
    )
    gone.stdout.close()
    assert gone.wait(timeout=60) in (0, 2) and gone.stderr.read() == b""
    gone.stderr.close()
