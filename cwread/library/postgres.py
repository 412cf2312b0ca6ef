"""A library's paragraphs kept on a PostgreSQL server, for a team that shares one archive: a
`ParagraphStore` (cwread.library.store) every member's cwread searches and brings up to date.

- Tables: `cwread_libraries` (a server holds several, by name), `cwread_books` (one row a book:
  its stamp, sources, what describes it, its paragraphs and their words) and
  `cwread_paragraphs` (one row a paragraph, its words as a `tsvector` with a GIN index). The
  schema's version is in `cwread_schema`; another is refused with a line saying what to do.
- A book is replaced in one transaction, under an advisory lock on its name: two builders never
  write the same book twice (the second finds it done), and a reader never sees half a book. A
  build killed at any point loses the book it was writing; the next one puts it.
- Ranking is BM25 as SQLite's FTS5 computes it (k1 1.2, b 0.75, its idf), over the statistics
  the tables hold (a paragraph's words, the library's paragraphs, each term's paragraphs), not
  PostgreSQL's ts_rank_cd; PostgreSQL's English stemmer stands in for FTS5's Porter.
- Every statement is parameterised. The URL's password is marked secret (cwread.errors), so no
  message, trace or log shows it; messages name the server as user@host/database.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from cwread.environment import require_extra
from cwread.errors import CacheError, InputError, keep_secret
from cwread.library.store import HeldBook, StoredHit, phrases_of, query_words
from cwread.text.words import TERM

SCHEMA_VERSION = 2  # 2: each term's paragraphs counted (cwread_terms)
CONNECT_SECONDS = 10  # how long a connection may take before the server is called unreachable
K1, B = 1.2, 0.75  # FTS5's bm25() constants
_LANGUAGE = "english"  # PostgreSQL's text search configuration: its Snowball stemmer, its stop words
_SCHEMA_LOCK = 0x63777264  # "cwrd": the advisory lock that makes the schema once
_TERMS_LOCK = 0x74726D73  # "trms", with a library's id: the lock its term counts are updated under
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS cwread_schema (version integer NOT NULL);
CREATE TABLE IF NOT EXISTS cwread_libraries (id serial PRIMARY KEY, name text UNIQUE NOT NULL);
CREATE TABLE IF NOT EXISTS cwread_books (
    id bigserial PRIMARY KEY,
    library integer NOT NULL REFERENCES cwread_libraries ON DELETE CASCADE,
    name text NOT NULL, stamp text NOT NULL, sources jsonb NOT NULL, paragraphs integer NOT NULL,
    about jsonb NOT NULL, rows integer NOT NULL, words bigint NOT NULL,
    UNIQUE (library, name));
CREATE TABLE IF NOT EXISTS cwread_paragraphs (
    book bigint NOT NULL REFERENCES cwread_books ON DELETE CASCADE,
    id integer NOT NULL, page integer, words integer NOT NULL, text text NOT NULL,
    terms tsvector GENERATED ALWAYS AS (to_tsvector('{_LANGUAGE}', text)) STORED,
    PRIMARY KEY (book, id));
CREATE INDEX IF NOT EXISTS cwread_paragraphs_terms ON cwread_paragraphs USING gin (terms);
CREATE TABLE IF NOT EXISTS cwread_terms (
    library integer NOT NULL REFERENCES cwread_libraries ON DELETE CASCADE,
    lexeme text NOT NULL, paragraphs bigint NOT NULL,
    PRIMARY KEY (library, lexeme));
"""
# a book's terms, each with the paragraphs holding it, added to (or taken from) the library's counts
_COUNT_TERMS = (
    "INSERT INTO cwread_terms (library, lexeme, paragraphs) SELECT %(library)s, lexeme, %(sign)s * count(*) "
    "FROM cwread_paragraphs p, unnest(p.terms) WHERE p.book = %(book)s GROUP BY lexeme ORDER BY lexeme "
    "ON CONFLICT (library, lexeme) DO UPDATE SET paragraphs = cwread_terms.paragraphs + EXCLUDED.paragraphs"
)
# what libpq says of a connection the user's settings refuse, not a server out of reach
_REFUSED_SETTINGS = ("password authentication failed", "does not exist", "no password supplied",
                     "authentication failed", "invalid", "pg_hba.conf")


@dataclass(frozen=True)
class LibraryUrl:
    """A library on a server: what to connect with (`conninfo`, the URL without cwread's own
    `library` parameter), the library's `name` there, and the server as messages name it
    (`shown`: user@host/database, never the password)."""

    conninfo: str
    name: str
    shown: str


def library_url(url: str, default_name: str) -> LibraryUrl:
    """`url` (postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?library=NAME&...]) read; the
    library's name is its `library` parameter, else `default_name`. InputError for anything
    else; the password is marked secret before any message can hold it."""
    try:
        parts = urlsplit(url.strip())
        host, port, user, password = parts.hostname, parts.port, parts.username, parts.password
    except ValueError as exc:  # a port that is no number, a bracket never closed
        raise InputError(f"the library URL cannot be read: {exc}") from None
    if parts.scheme not in ("postgresql", "postgres"):
        raise InputError(
            "a library's URL is postgresql://USER@HOST/DATABASE (a password after USER:, a socket folder "
            "as ?host=/run/postgresql, the library's name as ?library=NAME)"
        )
    keep_secret(password)
    query = parse_qsl(parts.query, keep_blank_values=True)
    for key, value in query:
        if key == "password":
            keep_secret(value)
    name = next((value for key, value in query if key == "library"), default_name).strip()
    if not name:
        raise InputError("the library URL's library= names no library")
    # the query as written, but cwread's own parameter: libpq decodes what it takes itself
    rest = "&".join(part for part in parts.query.split("&") if part and unquote(part.split("=", 1)[0]) != "library")
    conninfo = urlunsplit((parts.scheme, parts.netloc, parts.path, rest, ""))
    host = host or dict(query).get("host") or "localhost"
    shown_user = f"{user}@" if user else ""
    shown_port = f":{port}" if port else ""
    return LibraryUrl(conninfo, name, f"{shown_user}{host}{shown_port}{parts.path or '/'}")


class PostgresStore:
    """ParagraphStore on a PostgreSQL server (see the module's docstring). Each thread has a
    connection of its own, in autocommit mode: a write is an explicit transaction."""

    shared = True  # books are stamped by their content, which every member's copy shares

    def __init__(self, where: LibraryUrl) -> None:
        self._psycopg = require_extra("psycopg", "postgres", "a library on PostgreSQL needs psycopg")
        self.where = where
        self.path = where.shown  # what messages name it by, as SqliteStore's file
        self._local = threading.local()
        self._connections: list = []
        self._lock = threading.Lock()
        with self._guard("opened"):
            self.library = self._prepare()

    # -- connections and faults --------------------------------------------------------------

    @property
    def _db(self):
        db = getattr(self._local, "db", None)
        if db is None or db.closed:
            db = self._local.db = self._connect()
        return db

    def _connect(self):
        psycopg = self._psycopg
        try:
            db = psycopg.connect(self.where.conninfo, autocommit=True, connect_timeout=CONNECT_SECONDS)
        except psycopg.ProgrammingError as exc:  # the URL itself: a key libpq does not take
            raise InputError(f"the library URL cannot be used: {_first_line(exc)}") from None
        except psycopg.OperationalError as exc:
            said = _first_line(exc)
            if any(word in said.lower() for word in _REFUSED_SETTINGS):
                raise InputError(f"the library's server {self.where.shown} refused the connection: {said}") from None
            raise CacheError(f"the library's server {self.where.shown} cannot be reached: {said}") from None
        with self._lock:
            self._connections.append(db)
        return db

    def _guard(self, doing: str):
        return _Guard(self, doing)

    def close(self) -> None:
        """Close every connection this store opened."""
        with self._lock:
            connections, self._connections = self._connections, []
        for db in connections:
            with suppress(self._psycopg.Error, OSError):  # a connection already gone is closed
                db.close()
        self._local = threading.local()

    # -- the schema --------------------------------------------------------------------------

    def _prepare(self) -> int:
        """The schema made (once, under a lock: members starting at once queue) or checked; the
        library's id, its row made where new."""
        db = self._db
        made = "SELECT to_regclass('cwread_schema') IS NOT NULL AND to_regclass('cwread_libraries') IS NOT NULL"
        if db.execute(made).fetchone()[0]:  # made already: no DDL, no lock (a member need not own the tables)
            version = db.execute("SELECT max(version) FROM cwread_schema").fetchone()[0]
            if version is not None and version != SCHEMA_VERSION:
                raise CacheError(_other_schema(self.where.shown, version))
            if version == SCHEMA_VERSION:
                return self._library_id(db)
        with db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            exists = db.execute("SELECT to_regclass('cwread_schema') IS NOT NULL").fetchone()[0]
            if exists:
                row = db.execute("SELECT max(version) FROM cwread_schema").fetchone()
                version = row[0] if row else None
                if version is not None and version != SCHEMA_VERSION:
                    raise CacheError(_other_schema(self.where.shown, version))
            db.execute(_SCHEMA)
            if not exists or db.execute("SELECT count(*) FROM cwread_schema").fetchone()[0] == 0:
                db.execute("INSERT INTO cwread_schema (version) VALUES (%s)", (SCHEMA_VERSION,))
            return self._library_id(db)

    def _library_id(self, db) -> int:
        """The library's id, its row made where new."""
        db.execute("INSERT INTO cwread_libraries (name) VALUES (%s) ON CONFLICT (name) DO NOTHING", (self.where.name,))
        return db.execute("SELECT id FROM cwread_libraries WHERE name = %s", (self.where.name,)).fetchone()[0]

    # -- ParagraphStore ----------------------------------------------------------------------

    def held(self) -> dict[str, HeldBook]:
        rows = self._read(
            lambda db: db.execute(
                "SELECT name, stamp, sources, paragraphs, about FROM cwread_books WHERE library = %s", (self.library,)
            ).fetchall()
        )
        return {
            name: HeldBook(name, stamp, tuple(tuple(s) for s in sources), paragraphs, about)
            for name, stamp, sources, paragraphs, about in rows
        }

    def put(self, book: HeldBook, paragraphs: Iterable[tuple[int, int | None, str]]) -> None:
        rows = [(pid, page, _storable(text)) for pid, page, text in paragraphs if pid > 0]
        words = [len(TERM.findall(text)) for _, _, text in rows]
        fields = (book.stamp, json.dumps(book.sources), book.paragraphs, json.dumps(book.about, ensure_ascii=False))
        with self._guard("written"):
            db = self._db
            with db.transaction():
                self._lock_book(db, book.name)
                found = db.execute(
                    "SELECT id, stamp FROM cwread_books WHERE library = %s AND name = %s", (self.library, book.name)
                ).fetchone()
                if found is not None and found[1] == book.stamp:
                    return  # another member put this very book while it was being read
                # the index is made from the books: a commit lost to a crash is put again by the next sync
                db.execute("SET LOCAL synchronous_commit TO OFF")
                if found is not None:
                    self._forget(db, found[0])
                book_id = db.execute(
                    "INSERT INTO cwread_books (library, name, stamp, sources, paragraphs, about, rows, words) "
                    "VALUES (%s, %s, %s, %s::jsonb, %s, %s::jsonb, %s, %s) RETURNING id",
                    (self.library, book.name, *fields, len(rows), sum(words)),
                ).fetchone()[0]
                with db.cursor().copy("COPY cwread_paragraphs (book, id, page, words, text) FROM STDIN") as copy:
                    for (pid, page, text), count in zip(rows, words, strict=True):
                        copy.write_row((book_id, pid, page, count, text))
                self._count_terms(db, book_id, +1)

    def drop(self, name: str) -> None:
        with self._guard("written"):
            db = self._db
            with db.transaction():
                self._lock_book(db, name)
                found = db.execute(
                    "SELECT id FROM cwread_books WHERE library = %s AND name = %s", (self.library, name)
                ).fetchone()
                if found is not None:
                    db.execute("SET LOCAL synchronous_commit TO OFF")
                    self._forget(db, found[0])

    def _forget(self, db, book_id: int) -> None:
        """Book `book_id` taken out: its terms from the library's counts, then its rows."""
        self._count_terms(db, book_id, -1)
        db.execute("DELETE FROM cwread_books WHERE id = %s", (book_id,))

    def _count_terms(self, db, book_id: int, sign: int) -> None:
        """Book `book_id`'s terms added to the library's counts (`sign` -1: taken off). Writers
        of one library take turns here, under its lock to the transaction's end: two updating
        the same counts in different orders would deadlock."""
        db.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_TERMS_LOCK, self.library))
        db.execute(_COUNT_TERMS, {"library": self.library, "book": book_id, "sign": sign})

    def _lock_book(self, db, name: str) -> None:
        """The book's advisory lock, held to the transaction's end: its writers queue."""
        db.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, %s))", (name, self.library))

    def search(
        self, query: str, limit: int, books: Sequence[str] | None = None, upto: int | None = None
    ) -> list[StoredHit]:
        words, phrases = query_words(query), phrases_of(query)
        if not words and not phrases:
            return []
        return self._read(lambda db: self._search(db, words, phrases, limit, books, upto))

    def _search(self, db, words, phrases, limit, books, upto) -> list[StoredHit]:
        found = db.execute(
            f"SELECT q.lexeme, coalesce(t.paragraphs, 0) FROM (SELECT DISTINCT lexeme FROM unnest("
            f"to_tsvector('{_LANGUAGE}', %s))) q LEFT JOIN cwread_terms t ON t.library = %s AND t.lexeme = q.lexeme",
            (" ".join(words), self.library),
        ).fetchall()
        statistics = db.execute(
            "SELECT coalesce(sum(rows), 0), coalesce(sum(words), 0) FROM cwread_books WHERE library = %s",
            (self.library,),
        ).fetchone()
        total, all_words = int(statistics[0]), int(statistics[1])
        held = {lexeme: int(count) for lexeme, count in found if count > 0}  # a term no paragraph holds matches none
        if total == 0 or (not held and not phrases):
            return []
        # a phrase of stop words alone has no terms in the index: its words are looked for in the text
        stemmed = [
            db.execute(f"SELECT numnode(phraseto_tsquery('{_LANGUAGE}', %s)) > 0", (phrase,)).fetchone()[0]
            for phrase in phrases
        ]
        idf = {lexeme: _idf(total, count) for lexeme, count in held.items()}
        rarest = sorted(idf, key=lambda lexeme: (-idf[lexeme], lexeme))
        search = _Search(db, self.library, rarest, idf, all_words / total, list(zip(phrases, stemmed, strict=True)), books, upto)
        if not limit or len(rarest) < 2:
            return search.run(rarest, limit)
        # MaxScore: rows holding none of the rarest terms score at most what the others can
        # add (idf * (k1 + 1) each); once that is below the limit's last score, they cannot
        # enter, and the rows holding a rarest term are the whole answer, exactly as ranked
        hits: list[StoredHit] = []
        scored = 0  # the rarest terms whose rows are scored
        for count in range(1, len(rarest) + 1):
            if count < len(rarest) and sum(held[t] for t in rarest[:count]) < limit:
                continue  # too few rows to fill the limit: a wider set first
            hits = _best([*hits, *search.run(rarest[scored:count], limit, rarest[:scored])], limit)
            scored = count
            rest = sum(idf[t] * (K1 + 1) for t in rarest[count:])
            if count == len(rarest) or (len(hits) == limit and rest < hits[-1].score):
                return hits
        return hits

    def _read(self, work):
        """`work(db)` in one read-only snapshot (every statement of a search sees the same
        books, whatever members write meanwhile), tried once more on a new connection where the
        old one is found gone (the server restarted since the last call)."""
        for attempt in (1, 2):
            with self._guard("read"):
                try:
                    db = self._db
                    with db.transaction():
                        db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                        return work(db)
                except self._psycopg.OperationalError:
                    gone = getattr(self._local, "db", None)
                    if attempt == 2 or not (gone is None or gone.closed or gone.broken):
                        raise
                    self._local.db = None
        raise AssertionError("unreachable")

    def around(self, book: str, pid: int, context: int) -> list[tuple[int, str]]:
        if context <= 0:
            return []
        rows = self._read(
            lambda db: db.execute(
                "SELECT p.id, p.text FROM cwread_paragraphs p JOIN cwread_books b ON b.id = p.book "
                "WHERE b.library = %s AND b.name = %s AND p.id BETWEEN %s AND %s AND p.id <> %s ORDER BY p.id",
                (self.library, book, max(1, pid - context), pid + context, pid),
            ).fetchall()
        )
        return [(row[0], row[1]) for row in rows]

    def count(self) -> int:
        """Paragraphs held, of every book."""
        return int(
            self._read(
                lambda db: db.execute(
                    "SELECT coalesce(sum(paragraphs), 0) FROM cwread_books WHERE library = %s", (self.library,)
                ).fetchone()[0]
            )
        )


class _Search:
    """One search's statement: the rows matching some of its terms (and every phrase, within
    the books and the reader's limit), each scored by BM25 over all of its terms, best first."""

    def __init__(self, db, library: int, lexemes: list[str], idf: dict[str, float], average: float,
                 phrases: list[tuple[str, bool]], books: Sequence[str] | None, upto: int | None) -> None:  # fmt: skip
        self.db = db
        self.where = ["b.library = %(library)s"]
        self.arguments: dict = {
            "library": library, "lexemes": lexemes, "idf": [idf[t] for t in lexemes], "average": average,
            "k1": K1, "b": B,
        }  # fmt: skip
        for number, (phrase, stemmed) in enumerate(phrases):
            if stemmed:
                self.where.append(f"p.terms @@ phraseto_tsquery('{_LANGUAGE}', %(phrase{number})s)")
                self.arguments[f"phrase{number}"] = phrase
            else:  # its words in order, whole, anything but a word between them (as FTS5 matches a phrase)
                self.where.append(f"p.text ~* %(phrase{number})s")
                self.arguments[f"phrase{number}"] = r"\m" + r"\M\W+\m".join(map(_literal, phrase.split())) + r"\M"
        if books is not None:
            self.where.append("b.name = ANY(%(books)s)")
            self.arguments["books"] = list(books)
        if upto is not None:  # the reader's limit, in each book
            self.where.append("p.id <= %(upto)s")
            self.arguments["upto"] = upto

    def run(self, matching: list[str], limit: int, scored: Sequence[str] = ()) -> list[StoredHit]:
        """The best `limit` (0: all) rows holding one of `matching` at least, none of `scored`
        (terms whose rows an earlier run gave)."""
        where = list(self.where)
        if matching:
            where.append("p.terms @@ %(matched)s::tsquery")
        if scored:
            where.append("NOT p.terms @@ %(scored)s::tsquery")
        order = ' ORDER BY score DESC, b.name COLLATE "C", p.id'  # as _best orders: by code point
        sql = _BM25_SQL + " AND ".join(where) + order + (" LIMIT %(limit)s" if limit else "")
        arguments = {**self.arguments, "limit": limit, "matched": _any_of(matching), "scored": _any_of(scored)}
        rows = self.db.execute(sql, arguments).fetchall()
        return [StoredHit(name, pid, page, float(score), text) for name, pid, page, text, score in rows]


# BM25 as FTS5 scores it: for each query term in the paragraph, idf * tf * (k1 + 1) /
# (tf + k1 * (1 - b + b * words / average words)), tf the term's positions in the paragraph
_BM25_SQL = (
    "SELECT b.name, p.id, p.page, p.text, ("
    "SELECT coalesce(sum(w.idf * cardinality(t.positions) * (%(k1)s + 1) / (cardinality(t.positions) + "
    "%(k1)s * (1 - %(b)s + %(b)s * p.words / %(average)s))), 0) "
    "FROM unnest(ts_filter(setweight(p.terms, 'A', %(lexemes)s), '{a}')) t "  # the query's terms alone
    "JOIN unnest(%(lexemes)s::text[], %(idf)s::float8[]) w(lexeme, idf) "
    "ON w.lexeme = t.lexeme) AS score "
    "FROM cwread_paragraphs p JOIN cwread_books b ON b.id = p.book WHERE "
)


def _literal(word: str) -> str:
    """`word` as a regular expression matching it alone (a backslash before each non-word character)."""
    return re.sub(r"(\W)", r"\\\1", word)


def _best(hits: list[StoredHit], limit: int) -> list[StoredHit]:
    """The best `limit` of `hits`, ordered as a search orders them."""
    return sorted(hits, key=lambda hit: (-hit.score, hit.book, hit.id))[:limit]


def _any_of(lexemes: Sequence[str]) -> str:
    """A tsquery that any of `lexemes` matches."""
    return " | ".join(map(_tsquery_lexeme, lexemes))


def _idf(total: int, holding: int) -> float:
    """FTS5's idf: log((N - n + 0.5) / (n + 0.5)), at least 1e-6 (a term in most paragraphs)."""
    return max(math.log((total - holding + 0.5) / (holding + 0.5)), 1e-6)


def _tsquery_lexeme(lexeme: str) -> str:
    """`lexeme` as a tsquery's quoted operand: nothing in it is tsquery syntax."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _storable(text: str) -> str:
    """PostgreSQL's text holds no NUL: one is stored as U+FFFD, as a reading replaces bad bytes."""
    return text.replace("\x00", "\ufffd")


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return " ".join(lines[:2]) if lines else type(exc).__name__


def _other_schema(shown: str, version: int) -> str:
    if version > SCHEMA_VERSION:
        return (
            f"the library's tables on {shown} are of a newer cwread (schema {version}; this one reads "
            f"{SCHEMA_VERSION}): upgrade cwread"
        )
    return (
        f"the library's tables on {shown} are of an older cwread (schema {version}; this one reads "
        f"{SCHEMA_VERSION}): drop the cwread_ tables (DROP TABLE cwread_terms, cwread_paragraphs, cwread_books, "
        "cwread_libraries, cwread_schema) and the next search builds them anew"
    )


class _Guard:
    """A store's operation with the server's faults as cwread's: the server gone (exit 3), a
    statement refused (exit 3, named), each one line."""

    def __init__(self, store: PostgresStore, doing: str) -> None:
        self.store, self.doing = store, doing

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, value, traceback) -> bool:
        if value is None or not isinstance(value, self.store._psycopg.Error):
            return False
        db = getattr(self.store._local, "db", None)
        if db is not None and (db.closed or db.broken):
            self.store._local.db = None  # the next call connects again
        raise CacheError(
            f"the library's index on {self.store.where.shown} cannot be {self.doing}: {_first_line(value)}"
        ) from None
