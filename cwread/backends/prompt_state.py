"""llama.cpp's state after an agent's first prompt, kept in the cache for the next process.

A process that starts cold reads its first prompt whole, the agent's instructions too: in the
README example's one call, 200 of its 326 tokens (0.3 s of 0.65 on 2 cores). llama.cpp can save a
slot's state (its tokens and their keys and values) and restore it; a prompt that then shares
its start reads only the rest. So the first call of an in-process server restores the state kept
for its model and system message, if any, and the first call that finds none keeps its own.

A state is a file `prompts/<key>-<digest>.bin`: the key names the llama.cpp build, the model and
adapter files, the context size and the system message; the digest is the first 16 hex digits of
the file's sha256, checked before each restore (5 ms for the 135M's 5-8 MB); a damaged one is
removed. It is written under a temporary name and renamed into place (atomic), and a state over
MAX_STATE_BYTES is not kept. Any fault here leaves the call to read its prompt whole.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

from cwread.cache import STALE_TEMPORARY_SECONDS, file_sha256

STATE_FORMAT = 1
MAX_STATE_BYTES = 64 * 2**20  # a large model's long instructions are not worth a cache's space
MAX_STATES_BYTES = 256 * 2**20  # all kept states; the least recently used go first
_SLOT = 0  # the in-process server has one slot


def loaded_identity(build: str, files: Sequence[Path], n_ctx: int) -> str:
    """What a server's states depend on besides the prompt, taken when it loads (a file
    replaced later must not file the old model's state under the new one): the llama.cpp
    build, the files loaded (path, size, time) and the context size."""
    parts = [f"prompt-state {STATE_FORMAT}", build, str(n_ctx)]
    for path in files:
        stat = path.stat()
        parts.append(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}")
    return "\n".join(parts)


def state_key(identity: str, system: str) -> str:
    """The key of a state: its server's `loaded_identity` and the system message it starts with."""
    import hashlib  # here: loaded where a prompt is kept, not by every run

    return hashlib.sha256(f"{identity}\n{system}".encode()).hexdigest()[:24]


class PromptStates:
    """The kept states of one in-process server (`address`, answering `api_key` alone), in
    `folder`, the folder the server was started to save slots in."""

    def __init__(self, folder: Path, address: str, api_key: str) -> None:
        self.folder = folder
        self.address = address
        self.api_key = api_key
        self._lock = threading.Lock()
        self._first = True  # only an empty slot is restored: later prompts share the live one

    @property
    def first(self) -> bool:
        """Whether the server's first call is still to come."""
        return self._first

    def before_first(self, key: str) -> bool:
        """Before the server's first call: restore the state kept under `key`. Whether one was
        restored; later calls restore nothing (their prompts share the live slot's)."""
        with self._lock:
            if not self._first:
                return False
            self._first = False
            name = self.kept(key)
            if name is None:
                return False
            try:
                self._slot_action("restore", name)
            except Exception:  # any fault: the call reads its prompt whole, and keeps its own
                with suppress(OSError):
                    (self.folder / name).unlink()
                return False
            with suppress(OSError):  # used: the last to be pruned
                os.utime(self.folder / name)
            return True

    def keep(self, key: str) -> None:
        """After a first call that restored nothing: keep the slot's state under `key`, where
        no other process has meanwhile."""
        with self._lock:
            if self.kept(key) is not None:
                return
            temporary = self.folder / f"{key}.{os.getpid()}.{threading.get_ident()}.tmp"
            try:
                self._slot_action("save", temporary.name)
                if temporary.stat().st_size <= MAX_STATE_BYTES:
                    os.chmod(temporary, 0o600)  # it holds the prompt: the book's passages, the question
                    digest = file_sha256(temporary)[:16]
                    os.replace(temporary, self.folder / f"{key}-{digest}.bin")
                    prune(self.folder)
            except Exception:  # any fault: nothing is kept, and the next process reads it whole
                pass
            finally:
                with suppress(OSError):
                    temporary.unlink()

    def kept(self, key: str) -> str | None:
        """The verified state file kept under `key`; a damaged one is removed, and so is a
        second one (two processes that started together each kept theirs)."""
        found = None
        for path in sorted(self.folder.glob(f"{key}-*.bin")):
            if found is None:
                with suppress(OSError):
                    if file_sha256(path)[:16] == path.stem.rsplit("-", 1)[1]:
                        found = path.name
                        continue
            with suppress(OSError):
                path.unlink()
        return found

    def _slot_action(self, action: str, filename: str) -> dict:
        """llama.cpp's slot save or restore, over the server's loopback port."""
        import http.client
        from urllib.parse import urlsplit

        where = urlsplit(self.address)
        connection = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
        try:
            connection.request(
                "POST",
                f"/slots/{_SLOT}?action={action}",
                body=json.dumps({"filename": filename}),
                headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"},
            )
            response = connection.getresponse()
            reply = json.loads(response.read() or b"{}")
        finally:
            connection.close()
        if response.status != 200 or not isinstance(reply, dict):
            raise ValueError(f"llama.cpp's slot {action} answered {response.status}")
        return reply


def prune(folder: Path, most: int = MAX_STATES_BYTES) -> None:
    """Remove the least recently used states of `folder` until they hold `most` bytes at most
    (states of models, builds or instructions no longer used would otherwise stay for good)."""
    kept = []
    for path in folder.glob("*.tmp"):  # a save its process did not live to finish
        with suppress(OSError):
            if time.time() - path.stat().st_mtime > STALE_TEMPORARY_SECONDS:
                path.unlink()
    for path in folder.glob("*.bin"):
        with suppress(OSError):
            stat = path.stat()
            kept.append((stat.st_mtime, stat.st_size, path))
    total = sum(size for _, size, _ in kept)
    for _, size, path in sorted(kept, key=lambda item: item[0]):
        if total <= most:
            break
        with suppress(OSError):
            path.unlink()
            total -= size
