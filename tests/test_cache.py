import json
import os

import numpy as np
import pytest

from cwread import api
from cwread.cache import cache_root, read_entry, write_entry
from cwread.retrieval.embedders import load_static_minilm
from cwread.retrieval.index import document_cache_dir, open_index


def test_cache_root_follows_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("CWREAD_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "cwread"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "cwread"
    monkeypatch.setenv("CWREAD_CACHE_DIR", str(tmp_path / "explicit"))
    assert cache_root() == tmp_path / "explicit"


def test_entry_round_trip_and_no_temporary_left(tmp_path):
    entry = tmp_path / "e"

    def build(d):
        np.save(d / "x.npy", np.arange(5))
        return {"n": 5}

    assert write_entry(entry, build) == {"n": 5}
    assert read_entry(entry) == {"n": 5}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e"]
    manifest = json.loads((entry / "manifest.json").read_text())
    assert set(manifest["files"]) == {"x.npy"}


def test_failed_build_leaves_nothing(tmp_path):
    entry = tmp_path / "e"

    def build(d):
        (d / "half.npy").write_bytes(b"partial")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_entry(entry, build)
    assert list(tmp_path.iterdir()) == []


def test_a_killed_runs_temporary_is_removed_before_the_next_build(tmp_path):
    """A run killed mid-build (SIGKILL: no cleanup) left a decision model's 240 MB temporary that
    the next run, a minute later, built beside: a temporary names its process, and one whose
    process of this machine is gone is removed before a build, at once; one whose process runs,
    or of another machine, is left to the age rule."""
    import subprocess
    import sys

    from cwread.cache import _process_space

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    dead_pid = int(gone.stdout)
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        here = _process_space()
        names = {
            "killed": f".e.tmp-{here}-{dead_pid}-ab12cd34",
            "running": f".e.tmp-{here}-{running.pid}-ef56gh78",
            "elsewhere": f".e.tmp-{'0' * 12}-{dead_pid}-ij90kl12",  # another machine's, or PID namespace's
        }
        for name in names.values():
            (tmp_path / name).mkdir()
            (tmp_path / name / "model.onnx").write_bytes(b"half a model")
        write_entry(tmp_path / "e", lambda d: ((d / "x.txt").write_text("x"), {})[1])
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([names["running"], names["elsewhere"], "e"])
    finally:
        running.kill()
        running.wait()


def test_a_killed_build_s_temporary_is_removed_by_a_later_write_once_stale(tmp_path):
    # a run killed mid-build runs no cleanup: its temporary stays until a later write beside it
    killed = tmp_path / ".old.tmp-abc123"
    killed.mkdir()
    (killed / "graph.onnx").write_bytes(b"half a model")
    building = tmp_path / ".other.tmp-def456"  # another process's build, in progress now
    building.mkdir()
    hours_ago = killed.stat().st_mtime - 2 * 3600
    os.utime(killed, (hours_ago, hours_ago))
    write_entry(tmp_path / "e", lambda d: ((d / "x.txt").write_text("x"), {})[1])
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.tmp-def456", "e"]


def test_corrupt_or_partial_entries_are_removed(tmp_path):
    entry = tmp_path / "e"
    write_entry(entry, lambda d: (np.save(d / "x.npy", np.arange(5)), {})[1])
    data = bytearray((entry / "x.npy").read_bytes())
    data[-1] ^= 0xFF
    (entry / "x.npy").write_bytes(bytes(data))
    assert read_entry(entry) is None and not entry.exists()

    partial = tmp_path / "p"
    partial.mkdir()
    (partial / "x.npy").write_bytes(b"junk")  # no manifest: an interrupted write
    assert read_entry(partial) is None and not partial.exists()

    bad_meta = tmp_path / "m"
    write_entry(bad_meta, lambda d: {"paragraphs": 3})
    assert read_entry(bad_meta, lambda m: m["paragraphs"] == 4) is None


def test_an_entry_unchanged_since_written_is_trusted_where_asked(tmp_path):
    entry = tmp_path / "e"
    write_entry(entry, lambda d: (np.save(d / "x.npy", np.arange(5)), {"n": 5})[1])
    data = entry / "x.npy"
    stat = data.stat()
    changed = bytearray(data.read_bytes())
    changed[-1] ^= 0xFF
    data.write_bytes(bytes(changed))
    os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size and time: not read
    assert read_entry(entry, trust_unchanged=True) == {"n": 5}
    assert read_entry(entry) is None and not entry.exists()  # the checksum finds it
    write_entry(entry, lambda d: (np.save(d / "x.npy", np.arange(5)), {"n": 5})[1])
    stat = data.stat()
    data.write_bytes(bytes(changed))  # written again: its time moved, so its checksum is read
    os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # (a coarse clock may not move it)
    assert read_entry(entry, trust_unchanged=True) is None and not entry.exists()


def test_a_whole_entry_whose_time_moved_is_read_once_and_stamped_again(tmp_path):
    entry = tmp_path / "e"
    write_entry(entry, lambda d: (np.save(d / "x.npy", np.arange(5)), {"n": 5})[1])
    data = entry / "x.npy"
    stat = data.stat()
    os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # copied, say: same content
    assert read_entry(entry, trust_unchanged=True) == {"n": 5}
    assert json.loads((entry / "manifest.json").read_text())["files"]["x.npy"]["mtime_ns"] == stat.st_mtime_ns + 10**9


def test_an_entry_written_before_times_were_kept_is_read_whole_once(tmp_path):
    entry = tmp_path / "e"
    write_entry(entry, lambda d: (np.save(d / "x.npy", np.arange(5)), {"n": 5})[1])
    manifest = json.loads((entry / "manifest.json").read_text())
    del manifest["files"]["x.npy"]["mtime_ns"]
    (entry / "manifest.json").write_text(json.dumps(manifest))
    assert read_entry(entry, trust_unchanged=True) == {"n": 5}
    stamped = json.loads((entry / "manifest.json").read_text())["files"]["x.npy"]
    assert stamped["mtime_ns"] == (entry / "x.npy").stat().st_mtime_ns
    assert stamped["sha256"] == manifest["files"]["x.npy"]["sha256"]


def test_index_is_cached_per_content_and_rebuilt_when_corrupt(story, cache_dir):
    doc = api.open_document(str(story))
    embedder = load_static_minilm()
    first = open_index(doc, embedder)
    assert sorted(first.built) == ["bm25", "dense"]
    second = open_index(doc, embedder)
    assert second.built == []
    np.testing.assert_array_equal(first.dense, second.dense)
    expected = np.array(first.dense)  # the vectors are memory-mapped: the damage below shows in them

    dense_dir = next(p for p in document_cache_dir(doc).iterdir() if p.name.startswith("dense-"))
    vectors = dense_dir / "embeddings.npy"
    with open(vectors, "r+b") as f:
        f.seek(-4, os.SEEK_END)
        f.write(b"\x00\x00\x00\x00")
    third = open_index(doc, embedder)
    assert third.built == ["dense"]
    np.testing.assert_allclose(third.dense, expected)

    # a different text gets its own entry
    story.write_text(story.read_text() + "\nA last line.\n")
    other = api.open_document(str(story))
    assert document_cache_dir(other) != document_cache_dir(doc)
    assert sorted(open_index(other, embedder).built) == ["bm25", "dense"]


def test_atomic_file_write_leaves_no_temporary(tmp_path):
    from cwread.cache import write_file_atomic

    target = tmp_path / "out.json"
    write_file_atomic(target, "first")
    write_file_atomic(target, b"second")
    assert target.read_text() == "second"
    with pytest.raises(TypeError):
        write_file_atomic(target, 42)  # fails mid-write: the old file stays, no temporary left
    assert target.read_text() == "second" and [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_tiktoken_cache_is_seeded_offline_and_verified(tmp_path, monkeypatch):
    import hashlib

    from cwread.text.tokens import _tiktoken_source, seed_tiktoken_cache

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tt"))
    folder = seed_tiktoken_cache("cl100k_base")
    blobpath, expected = _tiktoken_source("cl100k_base")
    seeded = folder / hashlib.sha1(blobpath.encode()).hexdigest()
    assert hashlib.sha256(seeded.read_bytes()).hexdigest() == expected
    assert [p.name for p in folder.iterdir()] == [seeded.name]


def test_a_build_cut_off_by_the_process_ending_leaves_no_temporary(tmp_path):
    """A daemon thread still building an entry when the main thread ends (its own write failed on
    a full disk, say): the temporary is removed at exit, not left for an hour."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        f"""
        import threading, time
        from pathlib import Path
        from cwread.cache import write_entry

        def build(tmp):
            (tmp / "part").write_bytes(b"x" * 1000)
            time.sleep(60)
            return {{}}

        threading.Thread(target=write_entry, args=(Path({str(tmp_path / "entry")!r}), build), daemon=True).start()
        time.sleep(0.5)
        raise SystemExit(3)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 3, done.stderr
    assert [p.name for p in tmp_path.iterdir()] == []


def test_a_full_disk_is_one_line_and_leaves_no_temporary(tmp_path, monkeypatch):
    """The cache on a 64 KB filesystem (a tmpfs, where this machine lets root mount one)."""
    import subprocess
    import sys

    from tests.conftest import EXAMPLES

    tiny = tmp_path / "tiny"
    tiny.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(tiny)], capture_output=True, check=False).returncode:
        pytest.skip("no tmpfs can be mounted here")
    try:
        env = {**os.environ, "CWREAD_CACHE_DIR": str(tiny / "cache"), "OLLAMA_HOST": "http://127.0.0.1:9"}
        env.pop("CWREAD_BACKEND", None)
        done = subprocess.run(
            [sys.executable, "-m", "cwread", "ask", str(EXAMPLES / "the_selfish_giant.txt"), "Why did the Giant build a wall?"],
            capture_output=True, text=True, env=env, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 3 and "no space left for the cache" in done.stderr
        assert "Traceback" not in done.stderr
        assert [p for p in tiny.rglob("*") if ".tmp-" in p.name] == []
    finally:
        subprocess.run(["umount", str(tiny)], check=False)
