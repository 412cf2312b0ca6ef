"""A library: the books under one or more folders (its roots), listed, opened to their
contents, and searched together by BM25, with no model call.

- The books of a root are its entries: each file of a format cwread reads (by its suffix:
  text, Markdown, HTML, EPUB, PDF) and each folder (a book of its files, as `ask` reads
  one). Hidden entries are not books; a link that leads out of its root is left out.
- A book is named by its path relative to its root, the name the other tools take.
- The search index holds every paragraph of every book, cached by what the books are (each
  one's size, times and inode): a changed book rebuilds it, reading again only what changed
  (each file's reading is cached by its bytes, see `book.load`).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import stat
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cwread import lexical
from cwread.book import Document, load_document
from cwread.book.model import BOOK_SUFFIXES
from cwread.book.paragraphs import PARSER_VERSION
from cwread.cache import cache_root, read_entry, remove_entry, write_entry, write_file_atomic
from cwread.errors import CacheError, InputError
from cwread.progress import Progress

LIBRARY_VERSION = 2
KINDS = {"epub": "epub", "pdf": "pdf", "html": "html", "htm": "html", "xhtml": "html"}  # else text


@dataclass(frozen=True)
class Book:
    """One book of a library: its `name` (its path relative to its root, "/"-separated), where
    it is, its kind ("text", "html", "epub", "pdf" or "folder"), its size in bytes (a folder's:
    its files') and `stamp`, what changes when the book does."""

    name: str
    path: Path
    kind: str
    size: int
    stamp: tuple


@dataclass(frozen=True)
class Chapter:
    """One source of a book (a folder's file, an EPUB's chapter), or the whole of a single
    file: its name (None for a single file), its paragraph range as ids and as `show` takes it
    ("ch03:1-40"), the pages it spans where it has pages, and its first paragraph as its
    heading."""

    name: str | None
    first: int
    last: int
    span: str
    pages: tuple[int, int] | None
    heading: str


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


class Library:
    """The books under `roots` (see the module's docstring)."""

    def __init__(self, roots: tuple[Path, ...]) -> None:
        if not roots:
            raise InputError("a library needs at least one folder")
        for root in roots:
            if not root.is_dir():
                raise InputError(f"{root}: no such folder")
        self.roots = tuple(root.resolve() for root in roots)
        self.left_out: list[str] = []  # the last listing's entries that are no book it holds ("name: why")

    def books(self) -> list[Book]:
        """Every book under the roots, by root then name (`left_out` says which links were
        not followed)."""
        found: list[Book] = []
        names: set[str] = set()
        self.left_out = []
        for root in self.roots:
            try:
                entries = sorted(os.scandir(root), key=lambda e: e.name)
            except OSError as exc:
                raise InputError(f"{root}: cannot read the folder ({exc.strerror or exc})") from None
            for entry in entries:
                book = self._book(root, entry)
                if book is not None and book.name not in names:
                    names.add(book.name)
                    found.append(book)
        return found

    def _book(self, root: Path, entry: os.DirEntry) -> Book | None:
        if entry.name.startswith("."):
            return None
        try:
            real = Path(entry.path).resolve(strict=True)
        except (OSError, RuntimeError):
            return None
        if not real.is_relative_to(root) or real == root:  # a link out of the library, or back to its root
            self.left_out.append(f"{entry.name}: a link that leads out of the library's folder; not followed")
            return None
        if real.is_dir():
            book = self._describe(real)
            return book if book.size else None
        suffix = real.name.rpartition(".")[2].lower()
        if not real.is_file() or "." not in real.name or suffix not in BOOK_SUFFIXES:
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
        if real.is_dir():
            size, stamp = _folder_stamp(real)
            return Book(self.name_of(real), real, "folder", size, stamp)
        suffix = real.name.rpartition(".")[2].lower() if "." in real.name else ""
        info = real.stat()
        return Book(self.name_of(real), real, KINDS.get(suffix, "text"), info.st_size, _stamp(info))

    def open(self, book: Book) -> Document:
        """The book read, held to the roots."""
        return load_document(str(book.path), within=self.roots)

    def contents(self, name: str) -> tuple[Book, Document, list[Chapter]]:
        """A book's sources or chapters, each with its paragraph range and first heading."""
        book = self.book(name)
        document = self.open(book)
        spans = [(s.name, s.first, s.last) for s in document.sources] or [(None, 1, len(document))]
        chapters = []
        for source, first, last in spans:
            pages = [p.page for p in document.paragraphs[first - 1 : last] if p.page is not None]
            heading = " ".join(document.paragraph(first).text.split())
            chapters.append(
                Chapter(
                    source,
                    first,
                    last,
                    document.span_label(first, last),
                    (pages[0], pages[-1]) if pages else None,
                    heading if len(heading) <= 80 else heading[:79].rstrip() + "…",
                )
            )
        return book, document, chapters

    def search(
        self,
        query: str,
        limit: int = 10,
        progress: Progress | None = None,
        books: str | None = None,
        context: int = 0,
    ) -> Found:
        """The `limit` paragraphs (0: every one that matches) of all the books that best match
        `query` (BM25), best first; `books`: only the books whose name matches this glob
        ("*gatsby*", "novels/*"); `context`: each hit with as many paragraphs of its book
        before and after it."""
        if not query.strip():
            raise InputError("the search is empty: give words to look for")
        if limit < 0:
            raise InputError("the limit must be 0 (every match) or more")
        if context < 0:
            raise InputError("the context must be 0 paragraphs or more")
        index, built = self._index(progress)
        terms = [t for t in lexical.tokenize([query])[0] if t in index.retriever.vocab_dict]
        hits: list[Hit] = []
        if terms:
            scores = np.asarray(index.retriever.get_scores(terms), dtype=np.float32)
            if books is not None:
                chosen = [n for n, book in enumerate(index.books) if fnmatch.fnmatchcase(book["name"], books)]
                scores = np.where(np.isin(index.rows[:, 0], chosen), scores, 0)
            matched = int((scores > 0).sum())
            count = matched if limit == 0 else min(limit, matched)
            top = np.argpartition(-scores, count - 1)[:count] if count else np.array([], dtype=np.int64)
            for row in sorted(top.tolist(), key=lambda r: (-scores[r], r)):
                hits.append(index.hit(row, float(scores[row]), context))
        skipped = (*index.skipped, *self.left_out)
        return Found(query, tuple(hits), len(index.books), index.rows.shape[0], skipped, built)

    def indexed(self, books: list[Book]) -> dict[str, dict]:
        """Of `books`, those the last search index of this library holds as they are now, each
        with its number of `sources` (0 for a single file) and `paragraphs`."""
        with suppress(OSError, ValueError, TypeError, AttributeError, KeyError):
            held = json.loads(self._catalog().read_text(encoding="utf-8"))
            return {
                b.name: {"sources": held[b.name]["sources"], "paragraphs": held[b.name]["paragraphs"]}
                for b in books
                if b.name in held and held[b.name]["stamp"] == [str(b.path), *b.stamp]
            }
        return {}

    def _catalog(self) -> Path:
        key = hashlib.sha256(json.dumps([str(r) for r in self.roots]).encode()).hexdigest()[:32]
        return cache_root() / "library" / f"catalog-{key}.json"

    def _index(self, progress: Progress | None) -> tuple[_Index, bool]:
        books = self.books()
        if not books:
            raise InputError(f"no books under {', '.join(map(str, self.roots))}")
        key = hashlib.sha256(
            json.dumps(
                [LIBRARY_VERSION, lexical.LEXICAL_VERSION, PARSER_VERSION]
                + [[str(b.path), b.name, list(b.stamp)] for b in books]
            ).encode()
        ).hexdigest()
        entry = cache_root() / "library" / key[:2] / key
        if read_entry(entry) is not None:
            with suppress(OSError, ValueError, KeyError, TypeError):
                return _Index.load(entry), False
            remove_entry(entry)
        index = _build(self, books, progress)
        try:
            write_entry(entry, index.save)
        except CacheError:
            return index, True  # not kept: the next search builds it again
        read = {b["name"]: b for b in index.books}
        catalog = {
            b.name: {
                "stamp": [str(b.path), *b.stamp],
                "sources": len(read[b.name]["sources"]),
                "paragraphs": read[b.name]["paragraphs"],
            }
            for b in books
            if b.name in read
        }
        with suppress(OSError):  # a catalog not written: list_books says "not indexed"
            write_file_atomic(self._catalog(), json.dumps(catalog, ensure_ascii=False))
        return index, True


@dataclass(frozen=True)
class _Index:
    """Every paragraph of a library: its BM25 index, each row's (book, id, page), the books'
    sources (for labels) and the paragraphs' texts."""

    retriever: object
    rows: np.ndarray  # (n, 3) int32: book, paragraph id, page (0: none)
    books: list[dict]  # name, paragraphs, and sources as [name, first, last]
    skipped: tuple[str, ...]
    text_of: Callable[[int], str]

    def hit(self, row: int, score: float, context: int = 0) -> Hit:
        """The hit at `row`, with `context` paragraphs of its book on each side."""
        book_no, pid, page = (int(x) for x in self.rows[row])
        book = self.books[book_no]
        source, number = self._place(book, pid)
        around = [
            (other, self.text_of(other))
            for other in range(max(0, row - context), min(self.rows.shape[0], row + context + 1))
            if other != row and self.rows[other, 0] == book_no and abs(int(self.rows[other, 1]) - pid) <= context
        ]
        before = tuple((self._label(book, int(self.rows[r, 1])), text) for r, text in around if r < row)
        after = tuple((self._label(book, int(self.rows[r, 1])), text) for r, text in around if r > row)
        return Hit(book["name"], pid, source, number, page or None, score, self.text_of(row), before, after)

    @staticmethod
    def _place(book: dict, pid: int) -> tuple[str | None, int]:
        for name, first, last in book["sources"]:
            if first <= pid <= last:
                return name, pid - first + 1
        return None, pid

    def _label(self, book: dict, pid: int) -> str:
        source, number = self._place(book, pid)
        return str(pid) if source is None else f"{source}:{number}"

    def save(self, tmp: Path) -> dict:
        lexical.save_index(self.retriever, tmp / "bm25")
        np.save(tmp / "rows.npy", self.rows)
        texts = [self.text_of(row).encode("utf-8") for row in range(self.rows.shape[0])]
        np.save(tmp / "offsets.npy", np.cumsum([0] + [len(t) for t in texts], dtype=np.int64))
        (tmp / "texts.bin").write_bytes(b"".join(texts))
        meta = {"books": self.books, "skipped": list(self.skipped)}
        (tmp / "books.json").write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")
        return {"paragraphs": int(self.rows.shape[0])}

    @staticmethod
    def load(entry: Path) -> _Index:
        meta = json.loads((entry / "books.json").read_text(encoding="utf-8"))
        rows = np.load(entry / "rows.npy")
        offsets = np.load(entry / "offsets.npy")
        if rows.ndim != 2 or rows.shape[1] != 3 or offsets.shape[0] != rows.shape[0] + 1:
            raise ValueError("a damaged library index")
        texts = entry / "texts.bin"

        def text_of(row: int) -> str:
            with open(texts, "rb") as f:  # a few rows a search: read them, not the whole file
                f.seek(int(offsets[row]))
                return f.read(int(offsets[row + 1] - offsets[row])).decode("utf-8")

        return _Index(lexical.load_index(entry / "bm25"), rows, meta["books"], tuple(meta["skipped"]), text_of)


def _build(library: Library, books: list[Book], progress: Progress | None) -> _Index:
    texts: list[str] = []
    rows: list[tuple[int, int, int]] = []
    kept: list[dict] = []
    skipped: list[str] = []
    for number, book in enumerate(books):
        if progress:
            progress("reading books", number, len(books))
        try:
            document = library.open(book)
        except InputError as exc:
            skipped.append(f"{book.name}: {exc}")
            continue
        at = len(kept)
        sources = [[s.name, s.first, s.last] for s in document.sources]
        kept.append({"name": book.name, "sources": sources, "paragraphs": len(document)})
        for p in document.paragraphs:
            if document.wrapping(p.id):  # a Project Gutenberg header or licence is no hit
                continue
            texts.append(p.text)
            rows.append((at, p.id, p.page or 0))
    if not texts:
        why = f": {'; '.join(skipped[:3])}" if skipped else ""
        raise InputError(f"no book of the library could be read{why}")
    if progress:
        progress("reading books", len(books), len(books))
        progress("bm25", 0, len(texts))
    retriever = lexical.build_index(texts)
    if progress:
        progress("bm25", len(texts), len(texts))
    return _Index(retriever, np.asarray(rows, dtype=np.int32), kept, tuple(skipped), texts.__getitem__)


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
