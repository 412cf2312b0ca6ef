"""The library's index stays whole and answers right under concurrency and interruption: threads
sharing one library (as the MCP server's calls do), processes searching a new library at once,
a build killed at several points, a damaged file. Each search finds the one book that holds
its word (#79)."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from cwread.library.catalog import Library
from tests.conftest import EXAMPLES

BOOKS = 6


@pytest.fixture(scope="module")
def shelf(tmp_path_factory):
    """Six copies of the Hound, each with a word of its own inside the story."""
    folder = tmp_path_factory.mktemp("shelf")
    paragraphs = (EXAMPLES / "the_hound_of_the_baskervilles.txt").read_text(encoding="utf-8").split("\n\n")
    for i in range(1, BOOKS + 1):
        text = [*paragraphs[:200], f"The word of this copy is zyzzyva{i}.", *paragraphs[200:]]
        (folder / f"hound{i}.txt").write_text("\n\n".join(text), encoding="utf-8")
    return folder


def search(shelf, cache, word: str) -> subprocess.Popen:
    env = {**os.environ, "CWREAD_CACHE_DIR": str(cache)}
    return subprocess.Popen(
        [sys.executable, "-m", "cwread", "search", str(shelf), word, "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip


def found_only(done: subprocess.Popen, number: int) -> None:
    out, err = done.communicate(timeout=300)
    assert done.returncode == 0 and "Traceback" not in err, err
    assert [h["book"] for h in json.loads(out)["hits"]] == [f"hound{number}.txt"], err


def test_threads_sharing_a_new_library_each_find_their_book(shelf, cache_dir):
    library = Library((shelf,))
    right, errors = [], []

    def go(i: int) -> None:
        number = i % BOOKS + 1
        try:
            hits = library.search(f"zyzzyva{number}", 5).hits
            right.append([h.book for h in hits] == [f"hound{number}.txt"])
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=go, args=(i,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert errors == [] and right == [True] * 12


def test_processes_searching_a_new_library_at_once_each_find_their_book(shelf, tmp_path):
    running = [search(shelf, tmp_path / "cache", f"zyzzyva{i}") for i in (1, 2, 3)]
    for number, done in zip((1, 2, 3), running, strict=True):
        found_only(done, number)
    found_only(search(shelf, tmp_path / "cache", "zyzzyva6"), 6)


@pytest.mark.parametrize("after", [0.5, 1.5, 3.0])
def test_a_build_killed_midway_is_finished_by_the_next_search(shelf, tmp_path, after):
    cache = tmp_path / "cache"
    first = search(shelf, cache, "zyzzyva4")
    time.sleep(after)
    first.send_signal(signal.SIGINT)
    time.sleep(0.2)
    first.kill()  # and then SIGKILL, whatever it was doing
    first.communicate(timeout=60)
    found_only(search(shelf, cache, "zyzzyva5"), 5)


def test_a_damaged_index_is_built_again_with_one_line(shelf, tmp_path):
    cache = tmp_path / "cache"
    found_only(search(shelf, cache, "zyzzyva2"), 2)
    [index] = list((cache / "library").glob("index-v*.sqlite"))
    with open(index, "r+b") as f:  # its header kept, its pages overwritten
        f.seek(100)
        f.write(b"\x00garbage" * 4096)
    for suffix in ("-wal", "-shm"):
        index.with_name(index.name + suffix).unlink(missing_ok=True)
    done = search(shelf, cache, "zyzzyva3")
    out, err = done.communicate(timeout=300)
    assert done.returncode == 0 and "Traceback" not in err, err
    assert [h["book"] for h in json.loads(out)["hits"]] == ["hound3.txt"]
    assert err.count("was damaged: building it again") == 1
