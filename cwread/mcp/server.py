"""`cwread mcp`: cwread as tools an agent calls, an MCP server over stdio (the official SDK).

Tools: `ask`, `verify`, `find` and `show`, each on a book under the roots the server was
started with; and, for the library as a whole, `list_books`, `contents` and `search`. Each returns structured content (the answer or verdict, its quotes with
paragraph and character offsets, what was skipped and why, the models) and a short text
rendering beside it for clients that show text only. Books stay open across calls (a
reading session each, at most `max_sessions`, the least recently used closed first), one
answer at a time per book. Failures are tool errors carrying the CLI's one-line message and
its kind. The server reads only under its roots and writes only to cwread's cache.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Annotated, Any

import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import (
    CallToolResult,
    TextContent,
    ToolAnnotations,
)
from pydantic import Field

from cwread import __version__, api
from cwread.backends.transport import cancellable
from cwread.book.formats import format_names
from cwread.errors import CwreadError, InputError, error_exit
from cwread.library_question import find_in_library
from cwread.mcp.books import Books, ServerSettings
from cwread.mcp.replies import (
    BOOKS_WORDS,
    INSTRUCTIONS,
    BookArg,
    JudgeArg,
    MaxCharsArg,
    UptoArg,
    answer_content,
    answer_text,
    bound_chars,
    cast_content,
    find_content,
    library_find_content,
    search_content,
    show_content,
)
from cwread.views import json_output, reading
from cwread.views.reading import READER_CHARS
from cwread.views.terminal import defused, one_line, printable

MAX_CHARS = "max_chars"  # the tools' bound, as a left-out line names it
SEARCH_MOST = 100  # hits a search returns at most: 10**12 asked once returned 20,000 (7.2 MB)


def build_server(settings: ServerSettings) -> MCPServer:
    """The MCP server: its four tools on `settings`' books."""
    books = Books(settings)
    # stderr is the client's log: warnings and worse, not every library's debug lines
    server = MCPServer("cwread", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    def result(structured: dict[str, Any], text: str, error: bool = False) -> CallToolResult:
        """A tool's reply, every tool's through here: the book's control and bidi characters
        (an escape sequence, BEL, RLO) reach no client raw, in the text or the structure."""
        return CallToolResult(
            content=[TextContent(type="text", text=printable(text))],
            structured_content=defused(structured),
            is_error=error,
        )

    def guarded(work: Callable[[], CallToolResult]) -> CallToolResult:
        """Run a tool's work; a failure is a tool error with the CLI's kind and one line."""
        try:
            return work()
        except CwreadError as exc:  # the CLI's JSON error, and its one line as the text
            return result(
                json_output.error_json(error_exit(exc), exc.kind, str(exc)), f"{exc.kind}: {exc}", error=True
            )
        except Exception as exc:  # a bug of ours: still one line for the agent
            raise ToolError(one_line(f"internal: {type(exc).__name__}: {exc}")) from None

    async def off_thread(work: Callable[[], CallToolResult]) -> CallToolResult:
        """A tool's work on a worker thread. A client that cancels the call, or goes away, ends
        it at once: its model calls stop (cwread.backends.cancellable), so the book's lock is
        not held until a call's timeout."""
        cancel = threading.Event()

        def run() -> CallToolResult:
            with cancellable(cancel):
                return guarded(work)

        try:
            return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        finally:
            cancel.set()  # done, or cancelled: nothing of this call goes on

    def reporter(ctx: Context | None):
        """cwread's progress (stage, done, total) as MCP progress notifications."""
        if ctx is None:
            return None

        def progress(stage: str, done: int, total: int) -> None:
            with suppress(Exception):  # a client that does not take progress loses nothing else
                anyio.from_thread.run(ctx.report_progress, done, total or None, stage)

        return progress

    def answer(
        book: str, question, ctx: Context | None, judge_anyway: bool = False, upto: str | None = None
    ) -> CallToolResult:
        session, lock = books.open(book)
        with lock:
            run = api.RunSettings(
                finding=api.FinderSettings(),  # as a question asked reads (settings.ASKED_READ_TOKENS)
                answering=api.AnswerSettings(judge_anyway=judge_anyway),
            )
            limit = api.reading_limit(session.document, upto) if upto else None
            trace = session.ask(question, run, progress=reporter(ctx), hints=api.Hints(upto=limit))
        return result(answer_content(trace, book), answer_text(trace, book))

    @server.tool(
        description="Answer a question about a book (or, with no book, about the library's book whose passages "
        'fit it best) with quotes from it: free-form, or multiple choice with options ["A=text", "B=text", ...]. '
        "The answer is null when the text does not determine one (the best evidence is quoted instead). "
        "Quotes are verified to be in the paragraph named.",
        annotations=read_only,
    )
    async def ask(
        question: Annotated[str, Field(description="The question, in plain words.")],
        book: Annotated[
            str,
            Field(
                description="The book, as list_books names it; empty: the book of the whole library whose "
                "passages fit the question best (as find with no book chooses it; named in the reply)."
            ),
        ] = "",
        options: Annotated[
            list[str] | None,
            Field(description='Options of a multiple-choice question: ["A=text", "B=text"].'),
        ] = None,
        judge_anyway: JudgeArg = False,
        upto: UptoArg = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        asked = api.make_question(question, options)

        def work() -> CallToolResult:
            if upto and not book.strip():
                raise InputError("upto names a place in one book; give the book too")
            return answer(book or best_book(asked, ctx), asked, ctx, judge_anyway, upto)

        return await off_thread(work)

    def best_book(question, ctx) -> str:
        """The book of the library whose passages fit `question` best (cwread.library_question)."""
        found = find_in_library(
            books.library, question, lambda name: books.open(name)[0], progress=reporter(ctx)
        )
        if found.answering is None:
            raise InputError("no book of the library holds the question's words (say it otherwise)")
        return found.answering.name

    @server.tool(
        description="Judge a claim TRUE or FALSE from a book, with the quotes it rests on; verdict null "
        "when the text does not determine it.",
        annotations=read_only,
    )
    async def verify(
        book: BookArg,
        claim: Annotated[str, Field(description="The claim to judge TRUE or FALSE, as one statement.")],
        judge_anyway: JudgeArg = False,
        upto: UptoArg = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        return await off_thread(lambda: answer(book, api.make_question(claim, claim=True), ctx, judge_anyway, upto))

    def library_find(
        question: str, limit: int, max_chars: int, hints, near: str | None, widen, ctx
    ) -> CallToolResult:
        """find with no book: a question over the whole library (cwread.library_question)."""
        if near is not None:
            raise InputError("near names a paragraph of one book; give the book too")
        found = find_in_library(
            books.library,
            api.make_question(question),
            lambda name: books.open(name)[0],
            progress=reporter(ctx),
            hints=hints,
        )
        passages = found.printed(limit, widen)
        data = library_find_content(found, passages)
        return result(
            data, "\n".join(reading.library_find_lines(found, passages, bound_chars(max_chars), None, MAX_CHARS))
        )

    @server.tool(
        description="The passages of a book (or, with no book, of the whole library) a question needs, best "
        "first (no model call): as text, each "
        "passage's rank, paragraph span and chapter, then its paragraphs as [N] text, whole passages up to "
        "max_chars characters and a line naming those left out; the question's words no paragraph holds "
        "are named first (say them otherwise). Structured: each passage's span, chapter and score.",
        annotations=read_only,
    )
    async def find(
        question: Annotated[str, Field(description="The question whose passages are wanted.")],
        book: Annotated[
            str,
            Field(
                description="The book, as list_books names it; empty: the whole library (the books whose "
                "paragraphs match the question best are searched, at most 3, their passages ranked together, "
                "each headed by its book)."
            ),
        ] = "",
        limit: Annotated[int, Field(description="Passages to consider, best first.")] = 8,
        max_chars: MaxCharsArg = READER_CHARS,
        compact: Annotated[
            bool,
            Field(
                description="A map instead: one line a candidate paragraph (its rank, id, chapter and the "
                "sentence sharing most of the question's words, marked *so*), `limit` lines; then show the ones to read."
            ),
        ] = False,
        also: Annotated[
            str,
            Field(
                description="Words to look for beside the question's: the book's own words for what it says otherwise."
            ),
        ] = "",
        expand: Annotated[
            str | None,
            Field(
                description="Widen each passage: 'replies' (the speech after a passage ending in dialogue), "
                "'scene' (to its heading or break) or a number of paragraphs each side."
            ),
        ] = None,
        near: Annotated[
            str | None,
            Field(
                description="A paragraph found already ('957', 'ch03:12'): the passages within 100 of it first."
            ),
        ] = None,
        upto: UptoArg = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        def work() -> CallToolResult:
            if limit < 1:
                raise InputError("limit must be at least 1")
            widen = api.expansion(expand)
            if not book.strip():
                if upto:
                    raise InputError("upto names a place in one book; give the book too")
                return library_find(question, limit, max_chars, api.Hints(also), near, widen, ctx)
            session, _ = books.open(book)
            document = session.document
            around = api.paragraph_id(document, near) if near is not None else None
            limit_read = api.reading_limit(document, upto) if upto else None
            found = session.find(
                api.make_question(question), progress=reporter(ctx), hints=api.Hints(also, around, limit_read)
            )
            absent = api.absent_words(document, question)
            if compact:
                return result(
                    {"book": book, "question": question},
                    "\n".join(reading.map_lines(found, limit, absent, None, bound_chars(max_chars), MAX_CHARS)),
                )
            passages = found.printed(limit, widen)
            lines = reading.find_lines(found, passages, limit, bound_chars(max_chars), absent, None, MAX_CHARS)
            data = find_content(book, found, passages)
            return result(data, "\n".join(lines))

        return await off_thread(work)

    @server.tool(
        description="The people and places a book names, from its text alone (no model call): each one's "
        "name, kind, forms, the descriptions the text sets beside the name ('Stapleton, the naturalist') with "
        "their paragraphs, and its first mention; given a name or a description ('the lawyer'), those it "
        "matches, each with the names it meets most often and where. Use it when a question calls someone by "
        "a role or relation: find looks for the name then.",
        annotations=read_only,
    )
    async def cast(
        book: BookArg,
        query: Annotated[
            str, Field(description="A name or a description; empty: the most mentioned members.")
        ] = "",
        limit: Annotated[int, Field(description="Members to return, best first.")] = reading.CAST_LISTED,
        max_chars: MaxCharsArg = READER_CHARS,
        upto: UptoArg = None,
    ) -> CallToolResult:
        def work() -> CallToolResult:
            if limit < 1:
                raise InputError("limit must be at least 1")
            session, _ = books.open(book)
            document = session.document
            whole, members = api.cast(document, query, api.reading_limit(document, upto) if upto else None)
            members = members[:limit]
            data = cast_content(book, document, members, query)
            text = "\n".join(
                reading.cast_lines(
                    document, whole, members, bool(query.strip()), bound_chars(max_chars), None, MAX_CHARS
                )
            )
            return result(
                data,
                text or f"no one in the book's cast is named or described by {query!r}",
            )

        return await off_thread(work)

    @server.tool(
        description='Paragraphs of a book by number: "12", "10-14" or "3,7,10-12"; in a book that is a '
        'folder or an EPUB, by file and number: "ch03:12", "ch03:12-20" or "ch03" (the whole file).',
        annotations=read_only,
    )
    async def show(
        book: BookArg,
        paragraphs: Annotated[
            str,
            Field(
                description='Paragraph numbers: "12", "10-14", "10+6" (10 and the 6 after it), "3,7,10-12", "ch03:12-20".'
            ),
        ],
        around: Annotated[
            int, Field(description="Each paragraph with this many neighbours before and after it.")
        ] = 0,
        max_chars: MaxCharsArg = READER_CHARS,
    ) -> CallToolResult:
        def work() -> CallToolResult:
            if around < 0:
                raise InputError("around must be 0 or more")
            session, _ = books.open(book)
            document = session.document
            notes: list[str] = []
            shown = api.show(document, paragraphs, notes, around)
            lines = reading.paragraph_lines(document, shown, bound_chars(max_chars), None, MAX_CHARS)
            data = show_content(book, document, shown)
            return result(data, "\n".join([*notes, *lines]))

        return await off_thread(work)

    library = books.library

    @server.tool(
        description=f"The books under the server's roots: each file ({format_names()}) and each "
        "folder directly in a root, with its name (what the other tools take as book), kind, size, "
        "whether the search index holds it as it is now (search builds it) and, if so, its number "
        "of sources (files or chapters; 0 for a single file) and paragraphs.",
        annotations=read_only,
    )
    async def list_books() -> CallToolResult:
        def work() -> CallToolResult:
            listed = library.books()
            indexed = library.indexed(listed)
            data = {
                "books": [
                    {
                        "book": b.name,
                        "kind": b.format,
                        "bytes": b.size,
                        "indexed": b.name in indexed,
                        # known once the search index holds the book
                        **indexed.get(b.name, {"sources": None, "paragraphs": None}),
                        **json_output.about_json(b.about),
                    }
                    for b in listed
                ]
            }
            text = "\n".join(
                f"{b.name} ({b.format}, {b.size:,} bytes){json_output.about_line(b.about)}" for b in listed
            )
            return result(data, text or "no books under the roots")

        return await off_thread(work)

    @server.tool(
        description="A book's table of contents: each chapter its text heads ('CHAPTER IV', 'XXIII', a "
        "title in capitals), within each source (a folder's file, an EPUB's chapter), with its paragraph "
        "range as show takes it, its pages where it has them, and its heading; a part with no heading "
        "is headed by its first paragraph.",
        annotations=read_only,
    )
    async def contents(book: BookArg, max_chars: MaxCharsArg = READER_CHARS) -> CallToolResult:
        def work() -> CallToolResult:
            entry, document, chapters = library.contents(book)
            listed = [json_output.chapter_json(c) for c in chapters]
            blocks = [
                reading.Block([], [reading.capped(f"{c['paragraphs']}: {c['heading']}")], c["paragraphs"], blank=False)
                for c in listed
            ]
            about = json_output.about_line(entry.about).strip()
            bound = bound_chars(max_chars)
            printed, left = reading.fit(blocks, bound, len(about) + 1, None, MAX_CHARS)
            lines = reading.printed_lines(printed, None) + reading.left_out_lines(
                left, bound, "chapters", None, MAX_CHARS
            )
            data = {
                "book": entry.name,
                "kind": entry.format,
                **json_output.about_json(entry.about),
                "paragraphs": len(document),
                "chapters": len(listed),
                "contents": listed[: len(printed)],  # those the text holds; the rest by a larger max_chars
            }
            return result(data, (about + "\n" if entry.about else "") + "\n".join(lines))

        return await off_thread(work)

    @server.tool(
        description="Search every book under the server's roots for paragraphs matching some words "
        "(BM25, no model call): each hit with its book, paragraph (as show takes it), page where there "
        "is one, score and text, best first. The first search builds the library's index.",
        annotations=read_only,
    )
    async def search(
        query: Annotated[
            str, Field(description='The words to look for; a quoted phrase ("green light") is matched as written.')
        ],
        limit: Annotated[
            int,
            Field(
                description=f"Paragraphs to return, best first: 1 to {SEARCH_MOST} (more is capped there)."
            ),
        ] = 10,
        books: Annotated[
            str | None,
            Field(description='Only the books whose name matches this glob: "*hound*", "novels/*".'),
        ] = None,
        max_chars: MaxCharsArg = READER_CHARS,
        upto: Annotated[
            int | None, Field(description="Where the reader has read to, a paragraph number: of each book, none past it.")
        ] = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        def work() -> CallToolResult:
            if limit < 1:
                raise InputError("limit must be at least 1")
            if upto is not None and upto < 1:
                raise InputError("upto must be a paragraph number, 1 or more")
            bound = bound_chars(max_chars)
            found = library.search(query, min(limit, SEARCH_MOST), reporter(ctx), within=api.Within(books, upto))
            data = search_content(found, SEARCH_MOST, limit)
            head = f"Paragraphs ({BOOKS_WORDS}):" if found.hits else "no paragraph matches"
            lines = [head, *reading.search_lines(found.hits, bound, len(head) + 1, MAX_CHARS)]
            if "capped" in data:
                lines.append(f"({data['capped']})")
            return result(data, "\n".join(lines))

        return await off_thread(work)

    return server
