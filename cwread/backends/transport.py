"""What every served backend's calls share: their timeouts (connecting, a call sized by its
prompt and reply), a reply's size bounded, a deadline past which the wait ends, and
cancellation (a chat's Ctrl-C, an MCP client's cancel) seen while a call is out."""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from cwread.errors import Interrupted

T = TypeVar("T")


CONNECT_TIMEOUT = 5.0  # seconds to reach a server: a local one answers at once


def call_timeout(prompt_tokens: int, max_tokens: int) -> float:
    """Seconds one model call may take when no --timeout (CWREAD_TIMEOUT) is set: 30 s, plus
    the prompt read at 100 tokens/s and the reply written at 10 tokens/s, a slow CPU server's
    pace; a server that hangs is reported in under a minute for a Finder call."""
    return 30.0 + prompt_tokens / 100 + max_tokens / 10


def new_timeout(seconds: float):
    """An HTTP timeout of `seconds` for a whole call, but only CONNECT_TIMEOUT to reach the server."""
    import httpx

    return httpx.Timeout(seconds, connect=CONNECT_TIMEOUT)


MAX_REPLY_BYTES = 8 * 2**20  # a server's reply to one call, at most: the longest real one is a few KB


class ReplyTooLarge(Exception):
    """A server's reply ran past MAX_REPLY_BYTES: read no further (a 300 MB reply once cost
    6-8 GB to parse)."""

    def __init__(self) -> None:
        super().__init__(f"it sent a reply of more than {MAX_REPLY_BYTES // 2**20} MiB to one call; refused")


def bound_reply(response) -> None:
    """An httpx response hook: the body is read through a counter that stops at MAX_REPLY_BYTES
    (ReplyTooLarge), and one that says it is larger is refused before it is read."""
    import httpx

    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_REPLY_BYTES:
        response.close()
        raise ReplyTooLarge()
    inner = response.stream

    class Bounded(httpx.SyncByteStream):
        def __iter__(self):
            read = 0
            for chunk in inner:
                read += len(chunk)
                if read > MAX_REPLY_BYTES:
                    raise ReplyTooLarge()
                yield chunk

        def close(self) -> None:
            inner.close()

    response.stream = Bounded()


def bounded_http_client(timeout: float):
    """An httpx client for a model server: `timeout` a call (new_timeout), its replies bounded
    (bound_reply)."""
    import httpx

    return httpx.Client(timeout=new_timeout(timeout), event_hooks={"response": [bound_reply]})


DEADLINE_GRACE = 1.0  # seconds past a call's timeout before its deadline ends the wait


# The cancellation of the run this thread works for (an MCP client that cancels or goes away):
# set, a model call being waited for ends at once with Interrupted, and an embedded generation
# stops at its next token. Threads a run starts take it with them (contextvars.copy_context).
_CANCEL: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("cwread_cancel", default=None)


@contextmanager
def cancellable(event: threading.Event) -> Iterator[None]:
    """Within the block, model calls end at once when `event` is set."""
    token = _CANCEL.set(event)
    try:
        yield
    finally:
        _CANCEL.reset(token)


def cancel_event() -> threading.Event | None:
    """The cancellation of the run this thread works for, if it can be cancelled."""
    return _CANCEL.get()


# Set by the CLI's Ctrl-C handler (`cli.entry`): a KeyboardInterrupt raised inside a C call
# (llama.cpp loading a model) can be swallowed there, and the wait for the next call would
# then never end; the wait looks here too.
INTERRUPTED = threading.Event()


CANCEL_POLL = 0.2  # seconds between looks at a cancellation (or Ctrl-C) while a call is out


class DeadlinePassed(Exception):
    """A call ran past its whole-call deadline (see `within`)."""


def within(seconds: float | None, call: Callable[[], T]) -> T:
    """`call()`, given at most `seconds` (plus DEADLINE_GRACE) in all (None: no deadline). An
    HTTP client's timeouts bound each read, so a server that sends its headers and then a byte
    a second outlasts them; here the call runs on a daemon thread, and past the deadline
    DeadlinePassed is raised while the call is left to end on its own (its next read fails or
    times out). Ctrl-C while waiting interrupts at once, as it cannot inside a C call."""
    outcome: dict[str, object] = {}
    finished = threading.Event()

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the waiting thread as it is
            outcome["error"] = exc
        finally:
            finished.set()

    threading.Thread(target=run, daemon=True, name="cwread-call").start()
    cancel = _CANCEL.get()
    limit = None if seconds is None else time.monotonic() + seconds + DEADLINE_GRACE
    while True:
        # never one long wait: a Ctrl-C that the kernel hands to another thread (llama.cpp's)
        # reaches Python only when the main thread wakes, so it wakes every CANCEL_POLL
        step = CANCEL_POLL
        if limit is not None:
            left = limit - time.monotonic()
            if left <= 0:
                raise DeadlinePassed(seconds)
            step = min(step, left)
        if finished.wait(step):
            break
        if INTERRUPTED.is_set():
            raise KeyboardInterrupt
        if cancel is not None and cancel.is_set():
            raise Interrupted("cancelled: the model call was left to end on its own")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


def too_slow_message(where: str, seconds: float) -> str:
    return (
        f"{where} answered but did not finish its reply within {seconds:.0f} s (the server is too slow); "
        "raise the timeout setting (CWREAD_TIMEOUT) if it is only slow, or use a faster server or a smaller model"
    )


def timeout_message(where: str, seconds: float) -> str:
    return (
        f"{where} did not answer within {seconds:.0f} s; raise the timeout setting (CWREAD_TIMEOUT) if it is "
        "only slow, or use a faster server or a smaller model"
    )
