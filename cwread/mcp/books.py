"""The books an MCP server holds open: the server's settings (its root, how many sessions) and a
pool of sessions, one a book, each with its lock."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from cwread import api
from cwread.book import load_document
from cwread.errors import InputError
from cwread.library.catalog import Library, stamp_of
from cwread.run.session import Session

DEFAULT_SESSIONS = 4  # books held open at once: each holds its index and embedder in memory


@dataclass(frozen=True)
class ServerSettings:
    """What `cwread mcp` serves: the folders books may be read from, the backends, the dense
    model, the call cache, how many books stay open, and what a question's run is asked for
    (the stages' settings the settings file holds)."""

    roots: tuple[Path, ...]
    session: api.SessionSettings
    max_sessions: int = DEFAULT_SESSIONS
    run: api.RunSettings = field(default_factory=api.RunSettings)

    def __post_init__(self) -> None:
        if self.max_sessions < 1:
            raise InputError("--sessions must be at least 1")
        for root in self.roots:
            if not root.is_dir():
                raise InputError(f"--root {root}: no such folder")


class Books:
    """The books a server holds open, each behind its own lock (one answer at a time)."""

    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self.library = Library(settings.roots, url=settings.session.library_url)
        self.roots = self.library.roots
        self._open: OrderedDict[tuple, tuple[Session, threading.Lock]] = OrderedDict()
        self._lock = threading.Lock()

    def resolve(self, book: str) -> Path:
        """The file or folder `book` names under the roots (see `Library.resolve`)."""
        if not book or book == "-":
            raise InputError("give the book's path under the server's roots (standard input is the protocol)")
        return self.library.resolve(book)

    def open(self, book: str) -> tuple[Session, threading.Lock]:
        """The book's session, opened once and kept while it is among the most recently used;
        a book changed since it was opened (a folder: any of its files) is opened again."""
        path = self.resolve(book)
        key = (str(path), *stamp_of(path))
        with self._lock:
            if key in self._open:
                self._open.move_to_end(key)
                return self._open[key]
        # read from the handle opened, held again to the roots: a path swapped for a link after
        # `resolve` checked it is refused, not served
        document = load_document(str(path), within=self.roots)
        opened = api.open(document, api.Settings(self.settings.session))
        with self._lock:
            held = self._open.setdefault(key, (opened, threading.Lock()))
            for stale in [k for k in self._open if k[0] == key[0] and k != key]:
                del self._open[stale]
            while len(self._open) > self.settings.max_sessions:
                self._open.popitem(last=False)
            return held
