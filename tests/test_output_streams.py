"""--trace into an open stream or a special file writes into it, as the shell's > and >> do,
and never replaces the file the stream goes to; a regular file (or a link to one) is replaced
atomically. Through the real CLI in a shell, with the embedded default and no model call."""

import json
import os
import subprocess
import sys
import threading

import pytest

from tests.conftest import EXAMPLES

BOOK = EXAMPLES / "the_selfish_giant.txt"
ASK = f'{sys.executable} -m cwread ask "{BOOK}" "Why did the Giant build a wall?" --finder-lora none'


def sh(script: str, cwd, cache) -> subprocess.CompletedProcess:
    env = {**os.environ, "OLLAMA_HOST": "http://127.0.0.1:9", "CWREAD_CACHE_DIR": str(cache)}
    return subprocess.run(["bash", "-c", script], check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def traces_in(text: str) -> int:
    return text.count('"version": 2')


@pytest.mark.parametrize("stream", ["/dev/stdout", "/proc/self/fd/1"])
def test_a_trace_to_stdout_appended_to_a_log_keeps_the_log(tmp_path, cache_dir, stream):
    log = tmp_path / "app.log"
    log.write_text("old\n")
    inode = log.stat().st_ino
    done = sh(f"{ASK} --trace {stream} >> app.log", tmp_path, cache_dir)
    assert done.returncode == 0, done.stderr
    text = log.read_text()
    assert text.startswith("old\n") and traces_in(text) == 1 and "Answer:" in text
    assert log.stat().st_ino == inode


def test_a_trace_to_stdout_into_a_pipe_and_a_file(tmp_path, cache_dir):
    done = sh(f"{ASK} --trace /dev/stdout | cat", tmp_path, cache_dir)
    assert done.returncode == 0 and traces_in(done.stdout) == 1 and "Answer:" in done.stdout, done.stderr
    done = sh(f"{ASK} --trace /dev/stdout > out.txt", tmp_path, cache_dir)
    text = (tmp_path / "out.txt").read_text()
    assert done.returncode == 0 and traces_in(text) == 1 and "Answer:" in text


def test_a_trace_to_stderr_and_to_another_descriptor(tmp_path, cache_dir):
    (tmp_path / "err.log").write_text("before\n")
    done = sh(f"{ASK} --trace /dev/stderr 2>>err.log", tmp_path, cache_dir)
    text = (tmp_path / "err.log").read_text()
    assert done.returncode == 0 and text.startswith("before\n") and traces_in(text) == 1
    (tmp_path / "three.log").write_text("kept\n")
    done = sh(f"{ASK} --trace /dev/fd/3 3>>three.log", tmp_path, cache_dir)
    text = (tmp_path / "three.log").read_text()
    assert done.returncode == 0 and text.startswith("kept\n") and traces_in(text) == 1, done.stderr
    done = sh(f"{ASK} --trace /dev/fd/7", tmp_path, cache_dir)  # not open: one line, exit 2
    assert done.returncode == 2 and "file descriptor 7 is not open" in done.stderr


def test_a_fifo_is_written_into_and_a_link_to_a_file_stays_a_link(tmp_path, cache_dir):
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    done = sh(f"{ASK} --trace trace.fifo > /dev/null", tmp_path, cache_dir)
    reader.join(timeout=60)
    assert done.returncode == 0 and got and json.loads(got[0])["version"] == 2, done.stderr
    (tmp_path / "real.json").write_text('{"version": 2, "cwread": "0.1.0"}')
    (tmp_path / "link.json").symlink_to("real.json")
    done = sh(f"{ASK} --trace link.json > /dev/null", tmp_path, cache_dir)
    assert done.returncode == 0 and (tmp_path / "link.json").is_symlink()
    assert json.loads((tmp_path / "real.json").read_text())["version"] == 2


def test_a_device_is_written_into_never_replaced(tmp_path, cache_dir):
    """`--trace /dev/null` (as root a replace would swap the device for a file)."""
    import stat

    before = os.stat("/dev/null")
    done = sh(f"{ASK} --trace /dev/null > /dev/null", tmp_path, cache_dir)
    after = os.stat("/dev/null")
    assert done.returncode == 0, done.stderr
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino and after.st_rdev == before.st_rdev
