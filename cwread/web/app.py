"""The reading room's pages, on the sessions the CLI and MCP use (books held open, indexes cached):
the shelf and a search across it, a book's contents, its text a page at a time with every
paragraph's id, a question's passages (and the answer where a model reads), the cast, each bounded
by the reader's limit (`upto`).

A request names a book by its place on the shelf and a paragraph by its id: no path from a request
reaches the disk. Requests for another host are refused (DNS rebinding), every page forbids any
script but its own (Content-Security-Policy), and the book's text is escaped and its control and
bidi characters made visible: the book is data.
"""

from __future__ import annotations

import glob
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from cwread import api
from cwread.book import Document
from cwread.errors import CwreadError, InputError
from cwread.library.catalog import Library, Within, shelving
from cwread.mcp.books import Books, ServerSettings
from cwread.records.stages import Status
from cwread.retrieval.passages import Passage, quoted_passages
from cwread.views import wording
from cwread.views.terminal import printable

PAGE_PARAGRAPHS = 250  # of a book's text on one page: a chapter, or a part of a long one
SEARCH_HITS = 20
CAST_SHOWN = 60
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


@dataclass(frozen=True)
class ShelfBook:
    """A book served: its `number` on the shelf (what a URL names), its name, where it is, and
    what its catalogue says of it (title, author)."""

    number: int
    name: str
    path: Path
    about: dict
    shelf: Path | None = None  # the folder of books it was found in; None: given alone


def shelf_of(paths: list[Path]) -> tuple[list[ShelfBook], tuple[Path, ...]]:
    """The books `paths` name, each a book, or, for a folder that reads as a shelf (a Calibre
    library, a folder of separate books: cwread.library.catalog.shelving), its books; and the
    folders they are read under."""
    books: list[ShelfBook] = []
    roots: list[Path] = []
    for given in paths:
        path = given.expanduser().resolve()
        if not path.exists():
            raise InputError(f"{given}: no such file or folder")
        if path.is_dir() and shelving(path).shelf:
            roots.append(path)
            for book in Library((path,)).books():
                books.append(ShelfBook(len(books) + 1, book.name, book.path, book.about, path))
        else:
            roots.append(path.parent)
            books.append(ShelfBook(len(books) + 1, path.name, path, {}))
    if not books:
        raise InputError("no book to serve: give files or folders of books")
    return books, tuple(dict.fromkeys(roots))


class Room:
    """The books served and their sessions: each opened once, kept while among the most
    recently used (cwread.mcp.books.Books), one answer at a time a book."""

    def __init__(
        self, paths: list[Path], session: api.SessionSettings, max_sessions: int = 4, run: api.RunSettings | None = None
    ) -> None:
        self.books, roots = shelf_of(paths)
        self.held = Books(ServerSettings(roots, session, max_sessions, run or api.RunSettings()))
        # the folders searched: a shelf whole, a book given alone by its name (its folder's
        # other files are neither read nor indexed)
        shelves = dict.fromkeys(b.shelf for b in self.books if b.shelf is not None)
        self.searched = [(shelf, None) for shelf in shelves] + [
            (b.path.parent, glob.escape(b.path.name)) for b in self.books if b.shelf is None
        ]
        self._pages: dict[str, list[tuple[int, int, str]]] = {}
        self._lock = threading.Lock()

    def book(self, number: int) -> ShelfBook:
        if not 1 <= number <= len(self.books):
            raise InputError(f"no book {number} on this shelf")
        return self.books[number - 1]

    def open(self, number: int):
        """(session, its lock) of book `number`."""
        return self.held.open(str(self.book(number).path))

    def pages(self, document: Document) -> list[tuple[int, int, str]]:
        """The book's text as pages: (first id, last id, heading), a contents entry each, one
        longer than PAGE_PARAGRAPHS in parts."""
        with self._lock:
            if document.sha256 not in self._pages:
                pages = []
                for chapter in api.contents(document):
                    for first in range(chapter.first, chapter.last + 1, PAGE_PARAGRAPHS):
                        last = min(chapter.last, first + PAGE_PARAGRAPHS - 1)
                        part = "" if first == chapter.first else f" (from {document.label(first)})"
                        pages.append((first, last, printable(chapter.heading) + part))
                self._pages[document.sha256] = pages
            return self._pages[document.sha256]


def anchor(document: Document, pid: int) -> str:
    """A paragraph's HTML id: "p957", or "pch03:12" in a book of files."""
    return f"p{document.label(pid)}"


def marked(text: str, spans: list[tuple[int, int]]) -> Markup:
    """`text` escaped, its visible stand-ins for control characters made, each span in <mark>."""
    out, at = [], 0
    for start, end in sorted(spans):
        out += [escape(printable(text[at:start])), Markup("<mark>"), escape(printable(text[start:end])), Markup("</mark>")]
        at = end
    out.append(escape(printable(text[at:])))
    return Markup("").join(out)


def make_app(room: Room, allowed_hosts: tuple[str, ...] = LOOPBACK) -> Starlette:
    """The reading room's web app over `room`, answering only requests for `allowed_hosts`."""
    templates = Environment(loader=PackageLoader("cwread.web", "templates"), autoescape=select_autoescape())
    templates.globals.update(printable=printable, shelf=room.books)

    def page(name: str, status: int = 200, **values) -> HTMLResponse:
        return HTMLResponse(templates.get_template(name).render(**values), status_code=status)

    def limit_of(request: Request, document: Document) -> int | None:
        said = request.query_params.get("upto", "").strip()
        return api.reading_limit(document, said) if said else None

    def shelf(request: Request) -> HTMLResponse:
        return page("shelf.html", title="The shelf")

    def search(request: Request) -> HTMLResponse:
        words = request.query_params.get("q", "").strip()
        said = request.query_params.get("upto", "").strip()
        if said and not said.isdigit():
            raise InputError("across the shelf, read to a paragraph number (each book's)")
        upto = int(said) if said else None
        hits = []
        if words:
            by_path = {b.path: b for b in room.books}
            for root, alone in room.searched:
                library = Library((root,), url=room.held.settings.session.library_url)
                found = library.search(words, SEARCH_HITS * 2, within=Within(alone, upto))
                for hit in found.hits:
                    served = by_path.get((root / hit.book).resolve())
                    if served is not None:
                        hits.append((hit.score, served, hit))
            hits.sort(key=lambda item: -item[0])
        return page("search.html", title=f"Search: {words}", words=words, hits=hits[:SEARCH_HITS], upto=said)

    def book(request: Request) -> HTMLResponse:
        number = int(request.path_params["number"])
        session, _ = room.open(number)
        document = session.document
        return page(
            "book.html", title=room.book(number).name, book=room.book(number), pages=room.pages(document)
        )

    def read(request: Request) -> HTMLResponse:
        number = int(request.path_params["number"])
        session, _ = room.open(number)
        document = session.document
        pages = room.pages(document)
        at = request.query_params.get("at")
        pid = api.paragraph_id(document, at) if at else None
        said = request.query_params.get("page", "1")
        if pid is None and not said.strip().isdecimal():  # (isdigit takes "²", which int() does not)
            raise InputError(f"no page {said!r}: give a page's number, 1 to {len(pages)}")
        index = int(said) - 1 if pid is None else next(
            i for i, (first, last, _) in enumerate(pages) if first <= pid <= last
        )
        if not 0 <= index < len(pages):
            raise InputError(f"no page {index + 1}: the book has {len(pages)}")
        first, last, heading = pages[index]
        paragraphs = [
            (anchor(document, p), document.label(p), document.page(p), marked(document.paragraph(p).text, []), p == pid)
            for p in range(first, last + 1)
        ]
        return page(
            "read.html",
            title=f"{room.book(number).name}: {heading}",
            book=room.book(number),
            heading=heading,
            paragraphs=paragraphs,
            page=index + 1,
            pages=len(pages),
        )

    def ask(request: Request) -> HTMLResponse:
        number = int(request.path_params["number"])
        words = request.query_params.get("q", "").strip()
        if not words:
            return RedirectResponse(f"/book/{number}")
        session, lock = room.open(number)
        document = session.document
        upto = limit_of(request, document)
        question = api.make_question(words)
        hints = api.Hints(upto=upto)
        with lock:
            trace = session.ask(question, room.held.settings.run, hints=hints)
        found = trace.found  # the answer's own retrieval: its passages are those it read from
        passages = found.printed(len(found.anchor_segments))
        answer = _answer_view(trace)
        return page(
            "ask.html",
            title=f"{room.book(number).name}: {words}",
            book=room.book(number),
            words=words,
            upto=request.query_params.get("upto", ""),
            answer=answer,
            passages=[_passage_view(document, p) for p in passages],
        )

    def cast(request: Request) -> HTMLResponse:
        number = int(request.path_params["number"])
        session, _ = room.open(number)
        document = session.document
        _, members = api.cast(document, "", limit_of(request, document))
        shown = [
            {
                "name": printable(m.name),
                "kind": m.kind,
                "mentions": len(m.mentions),
                "first": document.label(m.mentions[0]),
                "descriptions": [(printable(d.span), document.label(d.pid)) for d in m.descriptions],
                "forms": [printable(f) for f in m.forms if f != m.name][:6],
            }
            for m in members[:CAST_SHOWN]
        ]
        return page("cast.html", title=f"{room.book(number).name}: the cast", book=room.book(number), members=shown)

    def route(path: str, handler: Callable[[Request], Response]) -> Route:
        """`handler`'s page at `path`, on a worker thread; a fault of the reader's (a bad id, a
        bad limit) is a page that says so in one line, never a traceback."""

        async def endpoint(request: Request) -> Response:
            try:
                return await anyio.to_thread.run_sync(handler, request)
            except CwreadError as exc:
                status = 400 if isinstance(exc, InputError) else 500
                return page("error.html", status=status, title="Not read", message=str(exc))
            except (ValueError, StopIteration):  # Python's own words ("invalid literal for int()") are no reader's
                return page("error.html", status=400, title="Not read", message="bad request: a number or a name in its address is not one this reader takes")

        return Route(path, endpoint, name=handler.__name__)

    async def headers(request: Request, call_next) -> Response:
        response = await call_next(request)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    return Starlette(
        routes=[
            route("/", shelf),
            route("/search", search),
            route("/book/{number:int}", book),
            route("/book/{number:int}/read", read),
            route("/book/{number:int}/ask", ask),
            route("/book/{number:int}/cast", cast),
            Mount("/static", StaticFiles(packages=[("cwread.web", "static")]), name="static"),
        ],
        middleware=[
            Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts)),
            Middleware(BaseHTTPMiddleware, dispatch=headers),
        ],
    )


def _passage_view(document: Document, passage: Passage) -> dict:
    """A passage as the question page shows it: its ranks, span, chapter and paragraphs."""
    return {
        "rank": passage.rank_label,
        "span": passage.span,
        "chapter": printable(passage.chapter.title) if passage.chapter else "",
        "best": document.label(passage.best),
        "paragraphs": [
            (anchor(document, p), document.label(p), marked(document.paragraph(p).text, [])) for p in passage.ids
        ],
    }


def _answer_view(trace) -> dict:
    """What the question page says of the answer: the answer with its quotes marked in their
    paragraphs where cwread stands behind one; else why none is given, and where the book
    answers it (its quotes, each in its paragraph)."""
    document = trace.document
    status = trace.status
    by_paragraph: dict[int, list[tuple[int, int]]] = {}
    for q in trace.outcome.quotes:
        by_paragraph.setdefault(q.id, []).append((q.start, q.end))
    quoted = [
        (anchor(document, pid), document.label(pid), marked(document.paragraph(pid).text, spans))
        for pid, spans in by_paragraph.items()
    ]
    if status == Status.ANSWERED:
        return {"answer": printable(trace.answer or ""), "why": "", "quoted": quoted, "heading": "Its quotes"}
    if status == Status.PASSAGES:
        where = [
            (anchor(document, p.best), p.span, printable(p.excerpt.text))
            for p in quoted_passages(document, trace.outcome.quotes)
        ]
        return {"answer": None, "why": wording.UNREAD, "where": where, "heading": "Where the book answers it"}
    if status == Status.NOT_SAID:
        return {"answer": None, "why": f"{wording.NOT_SAID}: {wording.not_said_why(trace.outcome)}", "quoted": quoted, "heading": "The closest passages"}
    return {"answer": None, "why": wording.failure(trace) or wording.NOT_DETERMINED, "quoted": quoted, "heading": "Best evidence (not an answer)"}
