"""What a book holds, as a digest of its bytes, for a store shared by several machines: each
member's copy of a book has its own path, times and inode, so a shared index stamps a book by
its content (a folder's: its files' names and contents). A digest is read once per state of the
file and kept in this machine's cache (an SQLite table keyed by the local stamp), so a search
reads no book that has not changed."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from contextlib import suppress
from pathlib import Path

from cwread.cache import cache_root, file_sha256

DIGESTS_VERSION = 1


class Digests:
    """Content digests of books, kept by their local stamp (see the module's docstring). A
    cache that cannot be opened or written is done without: each digest is then read again."""

    def __init__(self, folder: Path | None = None) -> None:
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # one connection, a server's threads taking turns
        path = (folder or cache_root() / "library") / f"digests-v{DIGESTS_VERSION}.sqlite"
        with suppress(OSError, sqlite3.Error):
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE IF NOT EXISTS digests (stamp TEXT PRIMARY KEY, digest TEXT NOT NULL)")
            self._db = db

    def of(self, path: Path, stamp: str) -> str:
        """The digest of the book at `path` (a file or a folder) whose local stamp is `stamp`."""
        if self._db is not None:
            with self._lock, suppress(sqlite3.Error):
                row = self._db.execute("SELECT digest FROM digests WHERE stamp = ?", (stamp,)).fetchone()
                if row is not None:
                    return row[0]
        digest = _folder_digest(path) if path.is_dir() else file_sha256(path)
        if self._db is not None:
            with self._lock, suppress(sqlite3.Error):
                self._db.execute("INSERT OR REPLACE INTO digests (stamp, digest) VALUES (?, ?)", (stamp, digest))
        return digest


def _folder_digest(path: Path) -> str:
    """A folder's digest: its visible files' names (relative, in order) and contents."""
    digest = hashlib.sha256()
    for folder, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(n for n in names if not n.startswith(".")):
            file = Path(folder) / name
            with suppress(OSError):
                if file.is_file():
                    digest.update(f"{file.relative_to(path).as_posix()}\0{file_sha256(file)}\0".encode())
    return digest.hexdigest()
