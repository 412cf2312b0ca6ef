"""A library: the books under one or more folders (its roots), listed, opened to their
contents, and searched together by BM25, with no model call.

- The books of a root are its entries: each file of a format cwread reads (by its suffix:
  text, Markdown, HTML, EPUB, PDF) and each folder (a book of its files, as `ask` reads
  one). Hidden entries are not books; a link that leads out of its root is left out.
- A root laid out by Calibre (`Author/Title (id)/` folders with `metadata.opf`, and Calibre's
  `metadata.db`) is a library of those folders: one book each, read from its best format
  (EPUB, then PDF, then HTML, then text), with its title, author and series from the OPF
  (cwread.book.calibre).
- A book is named by its path relative to its root, the name the other tools take.
- The search index (cwread.library.store: SQLite FTS5; or a team's, on PostgreSQL:
  cwread.library.postgres) holds every paragraph of every book.
  Each search first brings it up to date one book at a time: a book added or changed (its
  size, times or inode) is read and put in alone, a book removed is dropped; each file's
  reading is cached by its bytes (see `book.load`).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import sqlite3
import stat
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from cwread.book import Document, calibre, load_document
from cwread.book.chapters import is_heading
from cwread.book.folder import NOT_UTF8, name_not_utf8
from cwread.book.formats import book_suffixes, format_names, format_of
from cwread.cache import cache_root
from cwread.errors import CacheError, InputError
from cwread.library.contents import ContentsEntry, contents_of
from cwread.library.digests import Digests
from cwread.library.store import STORE_VERSION, HeldBook, ParagraphStore, open_store
from cwread.progress import Progress


@dataclass(frozen=True)
class Book:
    """One book of a library: its `name` (its path relative to its root, "/"-separated), where
    it is, its `format` (a reader's name: "text", "html", "epub", "pdf"; or "folder"), its size in bytes (a folder's:
    its files') and `stamp`, what changes when the book does."""

    name: str
    path: Path
    format: str
    size: int
    stamp: tuple
    catalogued: Path | None = None  # a Calibre book's folder, whose metadata.opf describes it

    @cached_property
    def about(self) -> dict:
        """What its catalogue says of it (title, author, series, note); {} for a book with none.
        Read when asked, not when the library is listed: every search lists every book."""
        return calibre.metadata(self.catalogued) if self.catalogued is not None else {}


@dataclass(frozen=True)
class Hit:
    """A paragraph found by a search: its book, its id in that book, the source it is in and
    its number there (None and the id in a single file), its page where it has one, its BM25
    score and its text."""

    book: str
    id: int
    source: str | None
    paragraph: int
    page: int | None
    score: float
    text: str
    # the paragraphs around it in its book (search's context), each (label, text), in order
    before: tuple[tuple[str, str], ...] = ()
    after: tuple[tuple[str, str], ...] = ()
    about: dict = field(default_factory=dict, compare=False)  # its book's title, author, series

    @property
    def label(self) -> str:
        """How the book cites it: "12", or "ch03:12" in a book of sources."""
        return str(self.id) if self.source is None else f"{self.source}:{self.paragraph}"


@dataclass(frozen=True)
class Found:
    """A search's hits, best first, over `books` books and `paragraphs` paragraphs; the books
    that could not be read ("name: why"), and whether the index was built for it."""

    query: str
    hits: tuple[Hit, ...]
    books: int
    paragraphs: int
    skipped: tuple[str, ...]
    built: bool


@dataclass(frozen=True)
class Within:
    """What part of a library a search reads: `books`, those whose name (or catalogue title or
    author) matches this glob ("*gatsby*", "novels/*"); `upto`, of each book only its first so
    many paragraphs (a reader's limit). None: all."""

    books: str | None = None
    upto: int | None = None


EVERYWHERE = Within()


@dataclass(frozen=True)
class LibraryIndexed:
    """A library's index as a build left it: where it is (a file, or user@host/database and
    the library's name there), the books it holds and their paragraphs, the books read for
    this build, and those that could not be read ("name: why")."""

    where: str
    books: int
    paragraphs: int
    read: int
    unread: tuple[str, ...]


class Library:
    """The books under `roots` (see the module's docstring)."""

    def __init__(
        self, roots: tuple[Path, ...], notice: Callable[[str], None] | None = None, url: str | None = None
    ) -> None:
        """`notice`: where to say a line about the index (a damaged one built again); `url`: a
        PostgreSQL server's library to keep the index in, shared (cwread.library.postgres),
        rather than this machine's SQLite file."""
        if not roots:
            raise InputError("a library needs at least one folder")
        for root in roots:
            if str(root) == "-":  # the other commands' standard input: a library is kept, stdin is not
                raise InputError("a library is a folder of books (or one book's file), not standard input")
            if not root.is_dir():
                raise InputError(f"{root}: no such folder")
        self.roots = tuple(root.resolve() for root in roots)
        self.left_out: list[str] = []  # the last listing's entries that are no book it holds ("name: why")
        self.unread: list[str] = []  # the last sync's books that could not be read ("name: why")
        self.read = 0  # the last sync's books read and put in (or tried)
        self._store: ParagraphStore | None = None
        self._notice = notice
        self._url = url
        self._digests: Digests | None = None

    def books(self) -> list[Book]:
        """Every book under the roots, by root then name (`left_out` says which links were
        not followed)."""
        found: list[Book] = []
        names: set[str] = set()
        self.left_out = []
        for root in self.roots:
            if calibre.is_library(root):
                for folder in calibre.book_folders(root):
                    book = self._book_folder(folder)
                    if book is not None and book.name not in names:
                        names.add(book.name)
                        found.append(book)
                continue
            try:
                # the files themselves before the links: a link to a book listed is the one said
                entries = sorted(os.scandir(root), key=lambda e: (e.is_symlink(), e.name))
            except OSError as exc:
                raise InputError(f"{root}: cannot read the folder ({exc.strerror or exc})") from None
            for entry in entries:
                book = self._book(root, entry)
                if book is not None and book.name in names:  # a link to a book listed already
                    self.left_out.append(f"{entry.name}: the same book as {book.name}; read once")
                elif book is not None:
                    names.add(book.name)
                    found.append(book)
        return found

    def _book_folder(self, folder: Path) -> Book | None:
        """A Calibre book folder as a book, or None (said in `left_out`) where it cannot be."""
        if shown := name_not_utf8(folder.name):
            self.left_out.append(f"{shown}: {NOT_UTF8}")
            return None
        try:
            real = folder.resolve(strict=True)
        except (OSError, RuntimeError):
            return None
        if not any(real.is_relative_to(root) for root in self.roots):
            self.left_out.append(f"{folder.name}: a link that leads out of the library's folder; not followed")
            return None
        try:
            return self._describe(real)
        except InputError as exc:
            self.left_out.append(str(exc))
            return None

    def _book(self, root: Path, entry: os.DirEntry) -> Book | None:
        if entry.name.startswith("."):
            return None
        if shown := name_not_utf8(entry.name):
            self.left_out.append(f"{shown}: {NOT_UTF8}")
            return None
        try:
            real = Path(entry.path).resolve(strict=True)
        except (OSError, RuntimeError):  # a link to nothing, or round in a loop
            if entry.name.rpartition(".")[2].lower() in book_suffixes():
                self.left_out.append(f"{entry.name}: a link that leads to no file; not read")
            return None
        if not real.is_relative_to(root) or real == root:  # a link out of the library, or back to its root
            self.left_out.append(f"{entry.name}: a link that leads out of the library's folder; not followed")
            return None
        if real.is_dir():
            book = self._describe(real)
            return book if book.size else None
        suffix = real.name.rpartition(".")[2].lower()
        if "." not in real.name or suffix not in book_suffixes():
            return None
        if not real.is_file():  # a FIFO, a socket, a device: reading one could block or never end
            self.left_out.append(f"{entry.name}: not a regular file; not read")
            return None
        return self._describe(real)

    def name_of(self, path: Path) -> str:
        """The name of a book at `path` (a real path under a root): relative to the first root
        that holds it; absolute for a book of any root but the first, whose names could clash."""
        if path.is_relative_to(self.roots[0]):
            return path.relative_to(self.roots[0]).as_posix()
        return str(path)

    def resolve(self, name: str) -> Path:
        """The real path of the file or folder `name` names, relative to the first root unless
        absolute; InputError for anything outside the roots, `..` and links included (the real
        path is checked)."""
        if not name or name == "-":
            raise InputError("give the book's path under the library's folders")
        if "\x00" in name:
            raise InputError("a book's path holds no NUL character")
        given = Path(name).expanduser()
        path = given if given.is_absolute() else self.roots[0] / given
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError):
            raise InputError(f"no such book under the library's folders: {name}") from None
        if not any(real.is_relative_to(root) for root in self.roots):
            roots = ", ".join(str(r) for r in self.roots)
            raise InputError(f"{name} is outside the library's folders ({roots}); refused")
        if not (real.is_file() or real.is_dir()):
            raise InputError(f"{name} is not a file or a folder")
        return real

    def book(self, name: str) -> Book:
        """The book `name` names (as `books` lists it, or any file or folder under a root)."""
        return self._describe(self.resolve(name))

    def _describe(self, real: Path) -> Book:
        """The book at `real`, a real path already held to the roots."""
        if real.is_dir() and calibre.is_book_folder(real) and calibre.is_library(real.parent.parent):
            chosen = calibre.best_format(real)
            if chosen is None or not any(chosen.resolve().is_relative_to(root) for root in self.roots):
                raise InputError(f"{self.name_of(real)}: no format cwread reads ({format_names()})")
            suffix = chosen.suffix.lower().lstrip(".")
            info = chosen.stat()
            opf = real / calibre.OPF
            opf_stamp = _stamp(opf.stat()) if opf.is_file() else ()
            return Book(self.name_of(real), chosen, format_of(suffix), info.st_size, (*_stamp(info), *opf_stamp), real)
        if real.is_dir():
            size, stamp = _folder_stamp(real)
            return Book(self.name_of(real), real, "folder", size, stamp)
        suffix = real.name.rpartition(".")[2].lower() if "." in real.name else ""
        info = real.stat()
        return Book(self.name_of(real), real, format_of(suffix), info.st_size, _stamp(info))

    def open(self, book: Book) -> Document:
        """The book read, held to the roots."""
        return load_document(str(book.path), within=self.roots)

    def contents(self, name: str) -> tuple[Book, Document, list[ContentsEntry]]:
        """A book's sources, each cut at the chapters its text heads (cwread.book.chapters),
        each with its paragraph range and heading (a part before the first heading: its first
        paragraph)."""
        book = self.book(name)
        document = self.open(book)
        return book, document, contents_of(document)

    def search(
        self,
        query: str,
        limit: int = 10,
        progress: Progress | None = None,
        within: Within = EVERYWHERE,
        context: int = 0,
    ) -> Found:
        """The `limit` paragraphs (0: every one that matches) of all the books that best match
        `query` (BM25), best first, `within` the books and paragraphs it names; `context`: each
        hit with as many paragraphs of its book before and after it."""
        books = within.books
        if not query.strip():
            raise InputError("the search is empty: give words to look for")
        if limit < 0:
            raise InputError("the limit must be 0 (every match) or more")
        if context < 0:
            raise InputError("the context must be 0 paragraphs or more")
        if books is not None:
            _check_glob(books)
        # past any library's paragraphs a number means "all": SQLite's integers end at 2**63
        limit, context = min(limit, _PAST_ANY_BOOK), min(context, _PAST_ANY_BOOK)
        upto = None if within.upto is None else min(within.upto, _PAST_ANY_BOOK)
        store, held, built = self.sync(progress, books)
        chosen = None
        if books is not None:
            chosen = [name for name, book in held.items() if _matches(books, name, book.about)]
            if not chosen:
                names = sorted(b.name for b in self.books())
                listed = ", ".join(names[:NAMED_BOOKS]) + (f", … ({len(names):,} in all)" if len(names) > NAMED_BOOKS else "")
                raise InputError(f"no book of the library matches {books!r}; its books: {listed or 'none'}")
        try:
            stored = store.search(query, limit, chosen, upto)
            arounds = {(h.book, h.id): store.around(h.book, h.id, context) if context else [] for h in stored}
        except sqlite3.Error as exc:
            raise CacheError(f"the library's index cannot be read: {exc}") from None
        hits = []
        for hit in stored:
            if hit.book not in held:  # put by another member since this sync: the next search has it
                continue
            book = held[hit.book]
            around = arounds[(hit.book, hit.id)]
            hits.append(
                Hit(
                    hit.book,
                    hit.id,
                    *_place(book.sources, hit.id),
                    hit.page,
                    hit.score,
                    hit.text,
                    tuple((_label(book.sources, pid), text) for pid, text in around if pid < hit.id),
                    tuple((_label(book.sources, pid), text) for pid, text in around if pid > hit.id),
                    book.about,
                )
            )
        searched = [held[name] for name in chosen] if chosen is not None else list(held.values())
        paragraphs = sum(b.paragraphs for b in searched)
        # of the books chosen ("name: why", a name may hold ": " too): a search of one book's file
        # told of its neighbours
        skipped = [x for x in (*self.unread, *self.left_out) if books is None or _names_one(books, x)]
        return Found(query, tuple(hits), len(searched), paragraphs, tuple(skipped), built)

    def indexed(self, books: list[Book]) -> dict[str, dict]:
        """Of `books`, those the search index of this library holds as they are now, each with
        its number of `sources` (0 for a single file) and `paragraphs`."""
        with suppress(CacheError, sqlite3.Error):
            held = self.store().held()
            return {
                b.name: {"sources": len(held[b.name].sources), "paragraphs": held[b.name].paragraphs}
                for b in books
                if b.name in held and held[b.name].stamp == self._stamp_key(b)
            }
        return {}

    def store(self) -> ParagraphStore:
        """The search index of this library (one per set of roots; on a server, one per library
        name: the URL's library=, else the roots' folder names), opened once."""
        if self._store is None and self._url is not None:
            from cwread.library.postgres import PostgresStore, library_url

            self._store = PostgresStore(library_url(self._url, "+".join(root.name for root in self.roots)))
            self._digests = Digests()
        if self._store is None:
            key = hashlib.sha256(json.dumps([str(r) for r in self.roots]).encode()).hexdigest()[:32]
            folder = cache_root() / "library"
            _sweep_old_indexes(folder)
            self._store = open_store(folder / f"index-v{STORE_VERSION}-{key}.sqlite", self._notice)
        return self._store

    def index(self, progress: Progress | None = None) -> LibraryIndexed:
        """The index brought up to date with the books as they are (see `sync`)."""
        store, held, _ = self.sync(progress)
        where = str(store.path) if self._url is None else f"{store.path} (library {store.where.name})"
        paragraphs = sum(book.paragraphs for book in held.values())
        return LibraryIndexed(where, len(held), paragraphs, self.read - len(self.unread), (*self.unread, *self.left_out))

    def sync(
        self, progress: Progress | None = None, only: str | None = None
    ) -> tuple[ParagraphStore, dict[str, HeldBook], bool]:
        """The index brought up to date with the books as they are: a book added or changed
        (its size, times or inode) read and put in, alone; one removed dropped. The store, the
        books it now holds, and whether any book was read. Each book is its own transaction: an
        interrupted sync keeps what it finished, and the next one goes on from there. `only`: a
        glob of the books' names (Within.books): those alone are brought up to date (`search
        FILE` reads that file, not its folder)."""
        books = self.books()
        if only is not None:
            books = [b for b in books if _matches(only, b.name, b.about)]
        elif not books:
            raise InputError(f"no books under {', '.join(map(str, self.roots))}")
        try:
            store = self.store()
            held = store.held()
        except sqlite3.Error as exc:  # a shared store's faults are worded by it (CacheError)
            raise CacheError(f"the library's index cannot be read or written: {exc}") from None
        listed = {b.name for b in books}
        considered = set(held) if only is None else {n for n, b in held.items() if _matches(only, n, b.about)}
        try:
            for name in considered - listed:
                store.drop(name)
        except sqlite3.Error as exc:
            raise CacheError(f"the library's index cannot be written: {exc}") from None
        stale = [b for b in books if b.name not in held or held[b.name].stamp != self._stamp_key(b)]
        self.unread = []
        self.read = len(stale)
        for number, book in enumerate(stale):
            if progress:
                progress("reading books", number, len(stale))
            try:
                document = self.open(book)
            except InputError as exc:
                self.unread.append(f"{book.name}: {exc}")
                with suppress(sqlite3.Error):  # a book that cannot be read is no hit; the next sync drops it else
                    store.drop(book.name)
                continue
            sources = tuple((s.name, s.first, s.last) for s in document.sources)
            kept = (
                (p.id, p.page, p.text) for p in document.paragraphs if not document.wrapping(p.id)
            )  # a Project Gutenberg header or licence, its front matter, contents or a caption, is no hit
            try:
                store.put(HeldBook(book.name, self._stamp_key(book), sources, len(document), book.about), kept)
            except sqlite3.Error as exc:
                raise CacheError(f"the library's index cannot be written: {exc}") from None
        if progress and stale:
            progress("reading books", len(stale), len(stale))
        if stale or considered - listed:  # what it holds now, read again only where it changed
            try:
                held = store.held()
            except sqlite3.Error as exc:
                raise CacheError(f"the library's index cannot be read: {exc}") from None
        if not held and (only is None or books):  # a glob that names no book is the search's to say
            why = f": {'; '.join(self.unread[:3])}" if self.unread else ""
            raise InputError(f"no book of the library could be read{why}")
        return store, held, bool(stale)

    def _stamp_key(self, book: Book) -> str:
        """A book's stamp as the index keeps it: where it is and what changes when it does; in a
        shared index, what it holds (its digest: every member's copy has its own path and times)."""
        local = json.dumps([str(book.path), *book.stamp])
        if self._digests is None:
            return local
        try:  # what is read from it too: a Calibre book's catalogue, and how this cwread reads
            digest = self._digests.of(book.path, local)
            if book.catalogued is not None:
                digest += ":" + self._digests.of(book.catalogued / "metadata.opf", f"{local}:opf")
        except OSError:
            return f"unreadable:{local}"  # never held as it is: read, and said unread, by the sync
        return f"v{STORE_VERSION}:{digest}"


def _sweep_old_indexes(folder: Path) -> None:
    """Remove what earlier versions kept in the library cache: bm25s indexes (two-letter
    folders of entries), their catalogs, and stores of another STORE_VERSION. They are never
    read again, and a library's index can be hundreds of MB."""
    import shutil

    current = f"index-v{STORE_VERSION}-"
    with suppress(OSError):
        for entry in folder.iterdir():
            old_index = entry.is_dir() and len(entry.name) == 2
            old_file = entry.name.startswith(("catalog-", "index-v")) and not entry.name.startswith(current)
            if old_index:
                shutil.rmtree(entry, ignore_errors=True)
            elif old_file:
                with suppress(OSError):
                    entry.unlink()




def _place(sources, pid: int) -> tuple[str | None, int]:
    """(source, number there) of paragraph `pid` in a book of `sources` ([name, first, last]);
    (None, pid) in a single file."""
    for name, first, last in sources:
        if first <= pid <= last:
            return name, pid - first + 1
    return None, pid


def _label(sources, pid: int) -> str:
    source, number = _place(sources, pid)
    return str(pid) if source is None else f"{source}:{number}"


NAMED_BOOKS = 5  # books named where a pattern matches none


def _check_glob(pattern: str) -> None:
    """InputError where `pattern` is no glob: a '[' it never closes ("[a-"), which fnmatch
    would take as itself and so match nothing, said as if no book were there; a name that is
    not UTF-8 (a book's file so named is left out, and said so)."""
    if shown := name_not_utf8(pattern):
        raise InputError(f"{shown}: {NOT_UTF8}")
    opened = None
    for i, char in enumerate(pattern):
        if char == "[" and opened is None:
            opened = i
        elif char == "]" and opened is not None and i > opened + 1 + (pattern[opened + 1 : opened + 2] == "!"):
            opened = None
    if opened is not None:
        raise InputError(f"the pattern {pattern!r} opens a '[' at character {opened + 1} that it never closes")


_PAST_ANY_BOOK = 10**12  # paragraphs: more than any library holds


def _names_one(pattern: str, said: str) -> bool:
    """Whether a line said of a file left out ("name: why") is of a book the glob `pattern`
    chooses: any prefix before a ": " may be its name ("Wilde: Stories.txt: looks like...")."""
    return any(_matches(pattern, said[: m.start()], {}) for m in re.finditer(": ", said))


def _matches(pattern: str, name: str, about: dict) -> bool:
    """Whether a book answers to the glob `pattern`: its name, or its title or author where a
    catalogue gives them (case aside for those)."""
    if fnmatch.fnmatchcase(name, pattern):
        return True
    folded = pattern.casefold()
    return any(fnmatch.fnmatchcase(str(about.get(k) or "").casefold(), folded) for k in ("title", "author"))


def _stamp(info: os.stat_result) -> tuple[int, ...]:
    """What changes when a file does: its size, times and inode (a rewrite that keeps its size
    and sets its old time back still changes its ctime)."""
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


def _folder_stamp(path: Path) -> tuple[int, tuple]:
    """(size, stamp) of a folder: its visible files', in order."""
    seen = []
    size = 0
    for folder, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(n for n in names if not n.startswith(".")):
            with suppress(OSError):
                info = (Path(folder) / name).stat()
                if stat.S_ISREG(info.st_mode):
                    size += info.st_size
                    seen.append((os.path.relpath(folder, path), name, *_stamp(info)))
    return size, (hashlib.sha256(repr(seen).encode()).hexdigest(),)


def stamp_of(path: Path) -> tuple:
    """What changes when the book at `path` (a file or a folder) does."""
    return _folder_stamp(path)[1] if path.is_dir() else _stamp(path.stat())




@dataclass(frozen=True)
class Shelving:
    """How a folder is read: as a `shelf` of `books` separate books (a question over it is asked
    as over a library), or as one book of chapters; `why`, in a reader's words."""

    shelf: bool
    books: int
    why: str


HEAD_BYTES = 8192  # of a file, read to find a title of its own
_GUTENBERG_TITLE = re.compile(
    r"project gutenberg(?: e-?book,? of|['’]s(?: e-?book of)?) (.+?)(?:,\s+by\b|\r?\n)", re.I
)
# a title page: a short first line, then "by AUTHOR" ("THE SELFISH GIANT" / "by Oscar Wilde")
_BYLINE = re.compile(r"\A\W*([^\n]{1,80}?)\s*\n(?:[ \t]*\r?\n)*[ \t]*by\s+[A-Z]", re.I)
_TITLE_LINE = re.compile(r"^\s*title:\s*(\S.*?)\s*$", re.I | re.M)
# a title that names a part, not a book: "Chapter 3", "Part Two", "BOOK IV"
_PART_TITLE = re.compile(
    r"^(chapter|part|book|act|scene|canto|section|volume|vol|letter|episode)\b[\s.:-]*"
    r"([ivxlcdm]+\b|\d+|one|two|three|four|five|six|seven|eight|nine|ten|the\s+\w+)",
    re.I,
)
_HTML_TITLE = re.compile(r"<title[^>]*>\s*([^<]*?\S)\s*</title>", re.I)
# a file named as a part of something: "ch03", "chapter-2", "part_1", "07", "letter 12"
_PART_NAME = re.compile(
    r"^(ch|chap|chapter|part|pt|book|section|sec|act|scene|canto|letter|vol|volume|episode)?[\s._-]*\d+\b",
    re.I,
)


def shelving(folder: Path) -> Shelving:
    """Whether `folder` is a shelf of separate books or one book's parts. A shelf: a Calibre
    library, or a folder where most entries are books of their own, by format (an EPUB or a
    PDF) or by a title of their own (a Project Gutenberg header, a "Title:" line) with at least
    two titles between them; anything else (chapters, parts named by number, letters, one titled
    file and its sequels) is one book."""
    if calibre.is_library(folder):
        return Shelving(True, len(calibre.book_folders(folder)), "a Calibre library")
    if calibre.is_book_folder(folder):
        return Shelving(False, 1, "a Calibre book's folder")
    entries = Library((folder,)).books()
    if len(entries) < 2:
        return Shelving(False, len(entries), "it holds one book")
    titles, parts = [], 0
    for book in entries:
        title = _own_title(book.path)
        if title is not None and not (_PART_TITLE.match(title) or _PART_NAME.match(title)):
            titles.append(title.casefold())
        elif title is not None or _PART_NAME.match(Path(book.name).stem) or _opens_with_heading(book.path):
            parts += 1  # "Chapter 3" is no book's title
    titled = len(titles)
    if len(set(titles)) >= 2 and titled > parts and 2 * titled >= len(entries):
        return Shelving(True, len(entries), f"{titled} of its {len(entries)} entries are books with titles of their own")
    return Shelving(False, 1, f"its {len(entries)} entries read as one book's parts")


def _own_title(path: Path) -> str | None:
    """A title the file (or a folder's first file) gives itself; an EPUB or PDF is a book by
    its format, named by its file."""
    if path.is_dir():
        first = next((f for f in sorted(path.iterdir()) if f.is_file() and not f.name.startswith(".")), None)
        return _own_title(first) if first is not None else None
    if path.suffix.lower() in (".epub", ".pdf"):
        return path.name
    head = _head(path)
    found = _GUTENBERG_TITLE.search(head) or _TITLE_LINE.search(head) or _BYLINE.match(head)
    if found is None and path.suffix.lower() in (".html", ".htm", ".xhtml"):
        found = _HTML_TITLE.search(head)
    return " ".join(found.group(1).split()) if found else None


def _opens_with_heading(path: Path) -> bool:
    """Whether a text file's first line is a chapter heading ("CHAPTER IV", "Part Two")."""
    if path.is_dir():
        return False
    first = next((line for line in _head(path).splitlines() if line.strip()), "")
    return is_heading(first.lstrip("\ufeff"))


def _head(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""
