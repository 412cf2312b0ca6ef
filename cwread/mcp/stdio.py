"""What arrives on the MCP server's stdin, screened: each line parsed as JSON-RPC before the SDK
reads it (an unreadable line answered with an error, lone surrogates mended; a line too long or
nested too deep refused, whatever it holds), and stdin kept from the tools."""

from __future__ import annotations

import io
import json
import os
import re
import sys
from typing import Any

import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    jsonrpc_message_adapter,
)

from cwread.errors import InputError, OutputError
from cwread.mcp.books import ServerSettings
from cwread.mcp.server import build_server
from cwread.views.console import stdout_closed

LINE_MOST = 4 * 2**20  # bytes of one message: a question is 4,000 characters at most
DEPTH_MOST = 64  # nesting of one message: MCP's own are a few levels deep

TOO_LONG = object()  # stands for a line longer than LINE_MOST (its bytes are never held)


def _parse_error(why: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message=f"Parse error: {why}"))


def screen_line(line: str | object) -> tuple[str | None, JSONRPCError | None]:
    """A line from the client as the SDK's transport should read it, and the error reply it
    gets instead where it is not a JSON-RPC message. The SDK drops a line it cannot validate
    without a word (not JSON, `params: "oops"`, a lone surrogate such as "\\ud800" that JSON
    allows and its parser refuses): every request must get a reply. A lone surrogate becomes
    U+FFFD, so that the request is answered (a book of that name is not found, say). A line
    over LINE_MOST bytes (TOO_LONG) or nested deeper than DEPTH_MOST is refused before it is
    parsed: 100,000 brackets overflowed the parser's stack and ended the server. Whatever
    fails in here is a parse error for the line, never the server's end."""
    if line is TOO_LONG:
        return None, _parse_error(f"a line over {LINE_MOST:,} bytes")
    try:
        return _screened(line)
    except Exception as exc:  # RecursionError, MemoryError's kin: the line's fault, said as such
        return None, _parse_error(f"unreadable ({type(exc).__name__})")


def _screened(line: str) -> tuple[str | None, JSONRPCError | None]:
    if not line.strip():
        return None, None
    if line.count("[") + line.count("{") > DEPTH_MOST and _depth(line) > DEPTH_MOST:
        return None, _parse_error(f"nested deeper than {DEPTH_MOST} levels")
    try:
        message = json.loads(line)
    except ValueError:
        return None, _parse_error("not JSON")
    if _has_surrogate(message):
        message = _without_surrogates(message)
        line = json.dumps(message, ensure_ascii=False)
    # an id that is no string or integer (1.5, true, {}, [1], null): the message still passes as
    # a notification, which gets no reply, and the client waits for ever
    # (a request's: a response, an error's with id null among them, is never answered)
    bad_id = isinstance(message, dict) and "method" in message and "id" in message and not _an_id(message["id"])
    try:
        if bad_id:
            raise ValueError("an id MCP does not take")
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError:
        request_id = message.get("id") if isinstance(message, dict) else None
        error = ErrorData(
            code=INVALID_REQUEST, message="Invalid Request: not a JSON-RPC 2.0 message MCP reads"
        )
        return None, JSONRPCError(jsonrpc="2.0", id=request_id if _an_id(request_id) else None, error=error)
    return line, None


def _an_id(value: Any) -> bool:
    """Whether `value` is a request id MCP takes: a string or an integer (not a boolean)."""
    return isinstance(value, (int, str)) and not isinstance(value, bool)


_SURROGATE = re.compile("[\ud800-\udfff]")
_JSON_MARK = re.compile(r'\\.|["\[\]{}]')  # an escape, a quote or a bracket: what depth reads


def _depth(line: str) -> int:
    """How deep the brackets of a JSON text nest, those inside strings skipped: counted in one
    pass, without parsing it."""
    depth = most = 0
    quoted = False
    for match in _JSON_MARK.finditer(line):
        mark = match.group()
        if mark == '"':
            quoted = not quoted
        elif quoted or len(mark) > 1:
            continue
        elif mark in "[{":
            depth += 1
            most = max(most, depth)
        else:
            depth -= 1
    return most


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_surrogate(v) for v in value)
    return False


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    return value


class ScreenedStdin:
    """The client's lines, screened (screen_line) before the SDK's stdio transport reads them;
    an error reply goes out on the server's write stream, once `replies` is given it."""

    def __init__(self, lines) -> None:
        self.lines = lines
        self.replies = None
        self.ready = anyio.Event()

    async def __aiter__(self):
        await self.ready.wait()
        async for line in self.lines:
            passed, error = screen_line(line)
            if error is not None:
                await self.replies.send(SessionMessage(error))
            if passed is not None:
                yield passed


class BoundedLines:
    """The lines read from a binary file, each decoded as UTF-8 (a bad byte as U+FFFD), and
    TOO_LONG in place of a line over `most` bytes, whose bytes are read and dropped as they come
    (a client can send a line of any size: it is never held whole); a last line with no newline
    is a line."""

    CHUNK = 65536

    def __init__(self, file: io.RawIOBase | io.BufferedIOBase, most: int = LINE_MOST) -> None:
        self.file = file
        self.most = most

    async def __aiter__(self):
        pending = bytearray()
        dropping = False  # within a line over the bound, until its newline
        while True:
            chunk = await anyio.to_thread.run_sync(self.file.read1, self.CHUNK, abandon_on_cancel=True)
            if not chunk:
                break
            start = 0
            while True:
                end = chunk.find(b"\n", start)
                piece = chunk[start:] if end < 0 else chunk[start:end]
                if not dropping:
                    pending += piece
                    if len(pending) > self.most:
                        pending.clear()
                        dropping = True
                        yield TOO_LONG
                if end < 0:
                    break
                if not dropping:
                    yield pending.decode("utf-8", errors="replace") + "\n"
                pending.clear()
                dropping = False
                start = end + 1
        if pending and not dropping:
            yield pending.decode("utf-8", errors="replace")


def private_stdin() -> BoundedLines:
    """The process's stdin, read from a private descriptor while fd 0 reads the null device
    (as the SDK's transport does: a child started by a tool reads EOF, not the protocol)."""
    private = os.dup(0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return BoundedLines(os.fdopen(private, "rb"))


async def _serve_stdio(server: MCPServer) -> None:
    stdin = ScreenedStdin(private_stdin())
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):
        stdin.replies = write_stream
        stdin.ready.set()
        lowlevel = server._lowlevel_server  # the SDK's own run_stdio_async does the same
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def serve(settings: ServerSettings) -> None:
    """Serve over stdio until the client closes the connection, or stops reading it (a reply
    that finds no reader ends the session, as a closed stdin does: no error of cwread's); a
    closed stdout, where the replies would go, is one line and exit 3 before any is read (a
    closed stdin, exit 2)."""
    if stdout_closed():
        raise OutputError("cannot write the output: standard output is closed (the MCP server replies on it)")
    if sys.stdin is None:  # closed at start (`<&-`): descriptor 0 may since be any file opened
        raise InputError("standard input is closed: the MCP server reads its requests there")
    try:
        anyio.run(_serve_stdio, build_server(settings))
    except* (BrokenPipeError, ConnectionResetError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass
