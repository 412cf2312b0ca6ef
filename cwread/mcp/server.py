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
from dataclasses import replace
from typing import Annotated, Any

import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import (
    CallToolResult,
    TextContent,
    ToolAnnotations,
)
from pydantic import Field, ValidationError

from cwread import __version__, api
from cwread.backends.transport import cancellable
from cwread.errors import CwreadError, InputError, error_exit
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
from cwread.run.library_question import find_in_library
from cwread.views import json_output, reading
from cwread.views.reading import FIND_CHARS, READER_CHARS
from cwread.views.terminal import defused, one_line, printable

MAX_CHARS = "max_chars"  # the tools' bound, as a left-out line names it
SEARCH_MOST = 100  # hits a search returns at most: 10**12 asked once returned 20,000 (7.2 MB)


class _Server(MCPServer):
    """The SDK's server, its tool list in compact schemas: an agent reads the list once a
    session, and pydantic's titles and `anyOf [T, null]` say nothing the names and types do not
    (10,900 characters against 5,800 with the descriptions shortened; #88). Arguments are still
    validated against the full signatures."""

    async def list_tools(self):
        return [
            t.model_copy(update={"input_schema": compact_schema(t.input_schema)})
            for t in await super().list_tools()
        ]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None):
        """The SDK's call, its refusals of a call's arguments (a book given as 5) and of an
        unknown tool answered as a usage error is everywhere: the CLI's JSON error as the
        structure, one line as the text (the SDK gave pydantic's text, with its web address)."""
        tools = {t.name: t for t in await super().list_tools()}
        if name not in tools:  # told by the name, not by the SDK's wording of its refusal
            return _error_reply(CwreadError(one_line(f"no tool {name!r}; the tools: {', '.join(tools)}")))
        taken = tools[name].input_schema.get("properties", {})
        if unknown := [key for key in arguments or {} if key not in taken]:  # the SDK drops them unsaid
            said = f"{name}'s arguments: no argument {', '.join(map(repr, unknown))}; it takes {', '.join(taken)}"
            return _error_reply(CwreadError(one_line(said)))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            said = "; ".join(
                f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
                for error in cause.errors(include_url=False)
            )  # a CwreadError's kind: usage, exit 2
            return _error_reply(CwreadError(one_line(f"{name}'s arguments: {said}")))


def _reply(structured: dict[str, Any], text: str, error: bool = False) -> CallToolResult:
    """A tool's reply, every tool's through here: the book's control and bidi characters (an
    escape sequence, BEL, RLO) reach no client raw, in the text or the structure."""
    return CallToolResult(
        content=[TextContent(type="text", text=printable(text))], structured_content=defused(structured), is_error=error
    )


def _error_reply(exc: CwreadError) -> CallToolResult:
    """A failure as a tool error: the CLI's JSON error as the structure, its one line as the text."""
    return _reply(json_output.error_json(error_exit(exc), exc.kind, str(exc)), f"{exc.kind}: {exc}", error=True)


def compact_schema(schema: Any) -> Any:
    """`schema` without titles, an optional value as its type alone (absent means not given)."""
    if isinstance(schema, list):
        return [compact_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: compact_schema(v) for k, v in schema.items() if k != "title" or not isinstance(v, str)}
    if "properties" in schema:  # property names are data, not schema keywords: a "title" argument stays
        out["properties"] = {name: compact_schema(v) for name, v in schema["properties"].items()}
    options = out.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        out.pop("anyOf")
        out.update(next(o for o in options if o != {"type": "null"}))
        if out.get("default", 0) is None:
            out.pop("default")
    return out


def build_server(settings: ServerSettings) -> MCPServer:
    """The MCP server: its tools on `settings`' books."""
    books = Books(settings)
    # stderr is the client's log: warnings and worse, not every library's debug lines
    server = _Server("cwread", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    def guarded(work: Callable[[], CallToolResult]) -> CallToolResult:
        """Run a tool's work; a failure is a tool error with the CLI's kind and one line."""
        try:
            return work()
        except CwreadError as exc:
            return _error_reply(exc)
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
            asked = settings.run.answering  # as a question asked reads (settings.ASKED_READ_TOKENS)
            run = replace(settings.run, answering=replace(asked, judge_anyway=judge_anyway or asked.judge_anyway))
            limit = api.reading_limit(session.document, upto) if upto else None
            trace = session.ask(question, run, progress=reporter(ctx), hints=api.Hints(upto=limit))
        return _reply(answer_content(trace, book), answer_text(trace, book))

    @server.tool(
        description="Answer a question about a book with verified quotes; null where the text does not "
        "determine one (the best evidence is quoted instead). On a novel the embedded default model "
        "answers none, giving passages: find is cheaper.",
        annotations=read_only,
    )
    async def ask(
        question: Annotated[str, Field(description="The question.")],
        book: Annotated[
            str, Field(description="As list_books names it; empty: the library's book that fits best.")
        ] = "",
        options: Annotated[
            list[str] | None, Field(description='Multiple choice: ["A=text", "B=text"].')
        ] = None,
        judge_anyway: JudgeArg = False,
        upto: UptoArg = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        def work() -> CallToolResult:
            asked = api.make_question(question, options)  # inside: a bad question is the reply's error
            if upto and not book.strip():
                raise InputError("upto names a place in one book; give the book too")
            return answer(book or best_book(asked, ctx), asked, ctx, judge_anyway, upto)

        return await off_thread(work)

    def best_book(question, ctx) -> str:
        """The book of the library whose passages fit `question` best (cwread.run.library_question)."""
        found = find_in_library(
            books.library, question, lambda name: books.open(name)[0], progress=reporter(ctx)
        )
        if found.answering is None:
            raise InputError("no book of the library holds the question's words (say it otherwise)")
        return found.answering.name

    @server.tool(
        description="Judge a claim TRUE or FALSE from a book, with its quotes; null where the text does not "
        "determine it.",
        annotations=read_only,
    )
    async def verify(
        book: BookArg,
        claim: Annotated[str, Field(description="One statement.")],
        judge_anyway: JudgeArg = False,
        upto: UptoArg = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        return await off_thread(
            lambda: answer(book, api.make_question(claim, claim=True), ctx, judge_anyway, upto)
        )

    def library_find(
        question: str, limit: int, max_chars: int, hints, near: str | None, widen, ctx
    ) -> CallToolResult:
        """find with no book: a question over the whole library (cwread.run.library_question)."""
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
        return _reply(
            data,
            "\n".join(reading.library_find_lines(found, passages, bound_chars(max_chars), None, MAX_CHARS)),
        )

    @server.tool(
        description="The passages a question needs, best first (no model call), each paragraph as [N] "
        "text; compact: one line a candidate, the cheaper first look. Then show to read on.",
        annotations=read_only,
    )
    async def find(
        question: Annotated[str, Field(description="The question.")],
        book: Annotated[
            str, Field(description="As list_books names it; empty: the books of the library that fit best.")
        ] = "",
        limit: Annotated[int, Field(description="Passages at most.")] = 8,
        max_chars: Annotated[
            int,
            Field(description="Characters of passages printed whole (0: no bound); the rest a line each."),
        ] = FIND_CHARS,
        compact: Annotated[
            bool,
            Field(description="One line a candidate paragraph instead."),
        ] = False,
        also: Annotated[
            str,
            Field(description="More words, as the book may put them."),
        ] = "",
        expand: Annotated[
            str | None,
            Field(description="Widen each passage: 'replies', 'scene' or a number of paragraphs."),
        ] = None,
        near: Annotated[
            str | None,
            Field(description="A paragraph id: the passages near it first."),
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
            if compact:  # the book named as the client named it, not by the server's path
                return _reply(
                    {"book": book, "question": question},
                    "\n".join(reading.map_lines(found, limit, None, bound_chars(max_chars), MAX_CHARS, book)),
                )
            passages = found.printed(limit, widen)
            lines = reading.find_lines(found, passages, limit, bound_chars(max_chars), None, MAX_CHARS, book)
            data = find_content(book, found, passages)
            return _reply(data, "\n".join(lines))

        return await off_thread(work)

    @server.tool(
        description="The people and places a book names, or those a name or role ('the lawyer') matches "
        "(no model call).",
        annotations=read_only,
    )
    async def cast(
        book: BookArg,
        query: Annotated[str, Field(description="A name or a role; empty: the most mentioned.")] = "",
        limit: Annotated[int, Field(description="Members at most.")] = reading.CAST_LISTED,
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
            return _reply(
                data,
                text or f"no one in the book's cast is named or described by {query!r}",
            )

        return await off_thread(work)

    @server.tool(
        description="Paragraphs of a book by id.",
        annotations=read_only,
    )
    async def show(
        book: BookArg,
        paragraphs: Annotated[
            str,
            Field(
                description='"12", "10-14", "10+6" (10 and 6 after), "3,7", "ch03:12-20" (a folder or EPUB).'
            ),
        ],
        around: Annotated[int, Field(description="Neighbours before and after each.")] = 0,
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
            return _reply(data, "\n".join([*notes, *lines]))

        return await off_thread(work)

    library = books.library

    @server.tool(
        description="The books under the server's roots: name (the other tools' book), kind and size.",
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
            return _reply(data, text or "no books under the roots")

        return await off_thread(work)

    @server.tool(
        description="A book's chapters, each with its paragraph range (as show takes it) and heading.",
        annotations=read_only,
    )
    async def contents(book: BookArg, max_chars: MaxCharsArg = READER_CHARS) -> CallToolResult:
        def work() -> CallToolResult:
            entry, document, chapters = library.contents(book)
            listed = [json_output.chapter_json(c) for c in chapters]
            blocks = [
                reading.Block(
                    [], [reading.capped(f"{c['paragraphs']}: {c['heading']}")], c["paragraphs"], blank=False
                )
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
            return _reply(data, (about + "\n" if entry.about else "") + "\n".join(lines))

        return await off_thread(work)

    @server.tool(
        description="Paragraphs of every book matching some words (BM25, no model call), best first, each "
        "with its book and id.",
        annotations=read_only,
    )
    async def search(
        query: Annotated[
            str, Field(description='Words; a quoted phrase ("green light") is matched as written.')
        ],
        limit: Annotated[
            int,
            Field(description=f"Hits, at most {SEARCH_MOST}."),
        ] = 10,
        books: Annotated[
            str | None,
            Field(description='Only the books whose name matches this glob: "*hound*".'),
        ] = None,
        max_chars: MaxCharsArg = READER_CHARS,
        upto: Annotated[
            int | None, Field(description="Where the reader has read to: no paragraph past it.")
        ] = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        def work() -> CallToolResult:
            if limit < 1:
                raise InputError("limit must be at least 1")
            if upto is not None and upto < 1:
                raise InputError("upto must be a paragraph number, 1 or more")
            bound = bound_chars(max_chars)
            found = library.search(
                query, min(limit, SEARCH_MOST), reporter(ctx), within=api.Within(books, upto)
            )
            data = search_content(found, SEARCH_MOST, limit)
            head = f"Paragraphs ({BOOKS_WORDS}):" if found.hits else "no paragraph matches"
            lines = [head, *reading.search_lines(found.hits, bound, len(head) + 1, MAX_CHARS)]
            if "capped" in data:
                lines.append(f"({data['capped']})")
            return _reply(data, "\n".join(lines))

        return await off_thread(work)

    return server
