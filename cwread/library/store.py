"""Where a library's paragraphs are kept for search: the storage behind `cwread.library.catalog`.

The interface is `ParagraphStore`: the books it holds (each by name, with the stamp it was
read at and what `list_books` shows of it), one book put or dropped at a time, and a BM25
search over every paragraph. `SqliteStore` keeps it in one SQLite file with FTS5 (BM25
ranking, the Porter stemmer over Unicode words), in WAL mode: each book is written in a
transaction of its own, so a change touches that book alone, a build that is interrupted
keeps every book it finished, and searches and builds in other processes go on beside it.
A server shared by a team is another class behind the same interface: `PostgresStore`
(cwread.library.postgres; docs/books.md, "A library on one machine, and shared by a team").

A paragraph's rowid is its book's id times ROWS_PER_BOOK plus its id in the book: a book's
rows are one rowid range (dropped as one), and a hit's neighbours are the rowids around it.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cwread.errors import CacheError
from cwread.text.words import STOPWORDS, TERM

STORE_VERSION = 4  # of the schema, the tokenizer and what is a hit (2: no contents, front matter or captions; 3: a folder's files each with their own; 4: nothing after the story's "THE END"): another opens a new file
ROWS_PER_BOOK = 2**24  # paragraph ids a book may hold (a 16M-paragraph book is far past any)
BUSY_SECONDS = 60.0  # how long a writer waits for another process's transaction


@dataclass(frozen=True)
class HeldBook:
    """A book as the store holds it: the stamp it was read at, its sources as
    [name, first, last] (none for a single file), its paragraphs, and what describes it."""

    name: str
    stamp: str
    sources: tuple[tuple[str, int, int], ...]
    paragraphs: int
    about: dict  # title, author, series, note: what a catalogue (Calibre's OPF) says


@dataclass(frozen=True)
class StoredHit:
    book: str
    id: int
    page: int | None
    score: float
    text: str


class ParagraphStore(Protocol):
    """What a library needs of its paragraphs' storage."""

    def held(self) -> dict[str, HeldBook]:
        """Every book held, by name."""
        ...

    def put(self, book: HeldBook, paragraphs: Iterable[tuple[int, int | None, str]]) -> None:
        """Hold `book` with its (id, page, text) paragraphs, in place of what was held of it."""
        ...

    def drop(self, name: str) -> None:
        """Hold the book `name` no more."""
        ...

    def search(
        self, query: str, limit: int, books: Sequence[str] | None = None, upto: int | None = None
    ) -> list[StoredHit]:
        """The `limit` paragraphs (0: all) that best match `query` by BM25, best first; only of
        `books` where given; of each book only its first `upto` paragraphs where given."""
        ...

    def around(self, book: str, pid: int, context: int) -> list[tuple[int, str]]:
        """The held paragraphs of `book` within `context` of `pid`, (id, text), in order, `pid`'s
        own left out."""
        ...


def query_words(query: str) -> list[str]:
    """The words of `query` a search looks for: lower case, stop words left out, each once."""
    return list(dict.fromkeys(w.lower() for w in TERM.findall(query) if w.lower() not in STOPWORDS))


_PHRASE = re.compile(r'"([^"]+)"|“([^”]+)”')


def match_expression(query: str) -> str | None:
    """An FTS5 query for `query`'s words (query_words), any of them (BM25 weighs them), each
    quoted (nothing in it is FTS5 syntax); a phrase the query quotes ("green light") must be
    in the paragraph as written, word for word (its stop words too); None where no word is left."""
    phrases = phrases_of(query)
    words = " OR ".join(_quoted(w) for w in query_words(query))
    if not phrases:
        return words or None
    # the phrases required; every word (theirs too) weighed, so the OR group always holds
    return " AND ".join([*(_quoted(p) for p in phrases), f"({words})"]) if words else " AND ".join(map(_quoted, phrases))


def phrases_of(query: str) -> list[str]:
    """The phrases `query` quotes ("green light"), each as its words, lower case."""
    phrases = [" ".join(w.lower() for w in TERM.findall(a or b)) for a, b in _PHRASE.findall(query)]
    return [p for p in phrases if p]


def _quoted(words: str) -> str:
    """`words` as an FTS5 string (a phrase where there are several): nothing in it is syntax."""
    return '"' + words.replace('"', '""') + '"'


class SqliteStore:
    """ParagraphStore in an SQLite file with FTS5 (see the module's docstring). Each thread
    has a connection of its own (a server's calls run on several): a transaction is a
    connection's, so two threads never share one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheError(f"cannot open the library's index {path}: {exc}") from None
        self._local.db = self._connect()  # the first connection makes the schema, or finds the file damaged

    @property
    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = self._connect()
        return db

    def _connect(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(self.path, timeout=BUSY_SECONDS, isolation_level=None)
        except sqlite3.Error as exc:
            raise CacheError(f"cannot open the library's index {self.path}: {exc}") from None
        try:
            _write_ahead(db)
            db.execute("PRAGMA synchronous=NORMAL")
            # the schema in a write transaction: processes opening a new file at once queue here,
            # rather than fail at CREATE and take the file for damaged
            with _transaction(db):
                db.execute(
                    "CREATE TABLE IF NOT EXISTS books (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, "
                    "stamp TEXT NOT NULL, sources TEXT NOT NULL, paragraphs INTEGER NOT NULL, about TEXT NOT NULL)"
                )
                db.execute(
                    "CREATE VIRTUAL TABLE IF NOT EXISTS paragraphs USING fts5("
                    "text, page UNINDEXED, tokenize = 'porter unicode61 remove_diacritics 2')"
                )
            db.execute("SELECT count(*) FROM books").fetchone()  # a file that is no database fails here
        except sqlite3.OperationalError as exc:
            db.close()
            if _DAMAGE.search(str(exc)):
                raise Damaged(str(self.path)) from None
            # busy past BUSY_SECONDS, a read-only folder: no damage, so the file is kept
            raise CacheError(f"cannot open the library's index {self.path}: {exc}") from None
        except sqlite3.DatabaseError:
            db.close()
            raise Damaged(str(self.path)) from None
        return db

    def close(self) -> None:
        """Close this thread's connection (another thread's closes with its thread)."""
        db = getattr(self._local, "db", None)
        if db is not None:
            self._local.db = None
            with suppress(sqlite3.Error):
                db.close()

    def held(self) -> dict[str, HeldBook]:
        rows = self._db.execute("SELECT name, stamp, sources, paragraphs, about FROM books").fetchall()
        return {
            name: HeldBook(name, stamp, tuple(tuple(s) for s in json.loads(sources)), paragraphs, json.loads(about))
            for name, stamp, sources, paragraphs, about in rows
        }

    def put(self, book: HeldBook, paragraphs: Iterable[tuple[int, int | None, str]]) -> None:
        rows = list(paragraphs)  # read before the write lock is taken: one book's, no more
        with _transaction(self._db):
            found = self._db.execute("SELECT id, stamp FROM books WHERE name = ?", (book.name,)).fetchone()
            if found is not None and found[1] == book.stamp:
                return  # another process put this very book while it was being read
            if found is not None:
                self._drop_rows(found[0])
            fields = (book.stamp, json.dumps(book.sources), book.paragraphs, json.dumps(book.about, ensure_ascii=False))
            if found is None:
                cursor = self._db.execute(
                    "INSERT INTO books (name, stamp, sources, paragraphs, about) VALUES (?, ?, ?, ?, ?)", (book.name, *fields)
                )
                book_id = cursor.lastrowid
            else:
                book_id = found[0]
                self._db.execute(
                    "UPDATE books SET stamp = ?, sources = ?, paragraphs = ?, about = ? WHERE id = ?", (*fields, book_id)
                )
            base = book_id * ROWS_PER_BOOK
            self._db.executemany(
                "INSERT INTO paragraphs (rowid, text, page) VALUES (?, ?, ?)",
                ((base + pid, text, page) for pid, page, text in rows if 0 < pid < ROWS_PER_BOOK),
            )

    def drop(self, name: str) -> None:
        with _transaction(self._db):
            found = self._db.execute("SELECT id FROM books WHERE name = ?", (name,)).fetchone()
            if found is not None:
                self._drop_rows(found[0])
                self._db.execute("DELETE FROM books WHERE id = ?", (found[0],))

    def _drop_rows(self, book_id: int) -> None:
        base = book_id * ROWS_PER_BOOK
        self._db.execute("DELETE FROM paragraphs WHERE rowid BETWEEN ? AND ?", (base, base + ROWS_PER_BOOK - 1))

    def search(
        self, query: str, limit: int, books: Sequence[str] | None = None, upto: int | None = None
    ) -> list[StoredHit]:
        expression = match_expression(query)
        if expression is None:
            return []
        names = dict(self._db.execute("SELECT id, name FROM books").fetchall())
        sql = "SELECT rowid, page, text, bm25(paragraphs) AS rank FROM paragraphs WHERE paragraphs MATCH ?"
        arguments: list = [expression]
        if books is not None:
            asked = set(books)
            wanted = [i for i, name in names.items() if name in asked]
            if not wanted:
                return []
            sql += f" AND (rowid / {ROWS_PER_BOOK}) IN ({','.join('?' * len(wanted))})"
            arguments += wanted
        if upto is not None:  # the reader's limit, in each book
            sql += f" AND (rowid % {ROWS_PER_BOOK}) <= ?"
            arguments.append(upto)
        sql += " ORDER BY rank" + (" LIMIT ?" if limit else "")
        if limit:
            arguments.append(limit)
        hits = []
        for rowid, page, text, rank in self._db.execute(sql, arguments):
            book_id, pid = divmod(rowid, ROWS_PER_BOOK)
            if book_id in names:
                hits.append(StoredHit(names[book_id], pid, page, -float(rank), text))
        return hits

    def around(self, book: str, pid: int, context: int) -> list[tuple[int, str]]:
        found = self._db.execute("SELECT id FROM books WHERE name = ?", (book,)).fetchone()
        if found is None or context <= 0:
            return []
        base = found[0] * ROWS_PER_BOOK
        rows = self._db.execute(
            "SELECT rowid, text FROM paragraphs WHERE rowid BETWEEN ? AND ? ORDER BY rowid",
            (base + max(1, pid - context), base + pid + context),
        )
        return [(rowid - base, text) for rowid, text in rows if rowid - base != pid]

    def count(self) -> int:
        """Paragraphs held, of every book."""
        return int(self._db.execute("SELECT coalesce(sum(paragraphs), 0) FROM books").fetchone()[0])


class _transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception, Ctrl-C included: the write lock
    is taken first, so two writers queue rather than fail at commit."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            self.db.execute("COMMIT")
        else:
            with suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")


class Damaged(Exception):
    """The store's file is not an SQLite database, or a damaged one."""


# what SQLite says of a file that is not its own, or is damaged (sqlite3.DatabaseError, or an
# OperationalError for a file whose schema is not this store's)
_DAMAGE = re.compile(r"not a database|malformed|corrupt|no such table|no such module|vtable constructor", re.I)


def open_store(path: Path, notice: Callable[[str], None] | None = None) -> SqliteStore:
    """The store at `path`; a file that is not a readable store is removed and made anew, said
    in one line to `notice` (an index is rebuilt, never trusted when damaged). A store that is
    busy or cannot be written is a CacheError, never taken for damaged."""
    try:
        return SqliteStore(path)
    except Damaged:
        if notice is not None:
            notice(f"the library's index {path} was damaged: building it again")
        for suffix in ("", "-wal", "-shm"):
            with suppress(OSError):
                Path(f"{path}{suffix}").unlink()
        try:
            return SqliteStore(path)
        except Damaged:
            raise CacheError(f"the library's index {path} cannot be made anew") from None


__all__ = [
    "HeldBook", "ParagraphStore", "SqliteStore", "StoredHit", "match_expression", "open_store", "phrases_of", "query_words"
]


def _write_ahead(db: sqlite3.Connection) -> None:
    """The file in write-ahead mode. Switching to it may be refused at once as locked while
    another connection opens the new file (SQLite takes no busy wait there): tried again until
    BUSY_SECONDS, and not asked where the file is in that mode already."""
    deadline = time.monotonic() + BUSY_SECONDS
    while True:
        try:
            if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
