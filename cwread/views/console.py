"""The terminal and the pipe: the consoles (stdout, stderr), their width, notices, progress on stderr,
and JSON printed; the views (cwread.views.render, cwread.views.answer_view) print through them."""

from __future__ import annotations

import codecs
import errno
import functools
import io
import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from cwread.environment import check_width
from cwread.errors import CwreadError, OutputError, hide_secrets
from cwread.progress import Progress
from cwread.views.terminal import BIDI, one_line

if TYPE_CHECKING:
    from rich.console import Console
    from rich.panel import Panel

_STAGES = {
    "bm25": "Building the lexical index",
    "reading books": "Reading the books of the library",
    "candidate books": "Searching the books that match best",
    "embed": "Embedding paragraphs",
    "finder": "Finder reading segments",
    "interpreter": "Interpreter answering",
    "self-check": "Interpreter self-checking",
    "support check": "Checking the answer against its quotes",
}

# escaped in JSON beside the C0 JSON escapes itself: DEL, C1 (U+009B is a terminal's CSI) and the
# bidi formatting characters (cwread.views.terminal.BIDI)
_C1_DEL_AND_BIDI = re.compile(rf"[\x7f-\x9f{BIDI}]")
NOTES_SAID: set[str] = set()  # the notes on skipped stages this run (a chat: every answer) has printed
_width: int | None = None  # --width; None: the terminal's, and no wrapping into a pipe
_json_printed = False


def set_width(width: int | None) -> None:
    """Wrap at `width` columns (0: never); None: the terminal's width, unwrapped off a terminal.
    A width no view is readable at is a usage error (environment.check_width): each command sets
    it first, before a shelf's note or an index built."""
    check_width(width)
    global _width
    _width = width


def width() -> int | None:
    """The width set (`set_width`): columns, 0 for never, None for the terminal's."""
    return _width


class ReaderGone(Exception):
    """The reader of our stdout went away (`| head`): not an OSError, so that click does not
    turn it into exit 1; the CLI exits 0, as `cat` does."""


@functools.cache
def _console_class() -> type[Console]:
    """A Rich console whose failures to write are cwread's: a reader that went away (`| head`)
    is no error (exit 0, as `cat` does); any other failure (a full disk) is one line, exit 3.
    Made at the first view: a run that prints none (a usage error) loads no Rich (18 ms)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise ReaderGone

        def _check_buffer(self) -> None:
            try:
                super()._check_buffer()
            except OSError as exc:
                self.quiet = True
                raise output_error(exc) from None

    return _Console


def output_error(exc: OSError) -> OutputError:
    return OutputError(f"cannot write the output: {exc.strerror or exc}")


_WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EBADF)


class _ClosedStream(io.TextIOBase):
    """Standard output the shell closed: every write fails, as writing to a closed descriptor does."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")


def stdout_closed() -> bool:
    """Whether the shell closed standard output (`>&-`): see begin_run."""
    return isinstance(sys.stdout, _ClosedStream)


def failed_writing(exc: OSError) -> OutputError | None:
    """`exc` as the failure to write the output it is, else None: a stream's write names no
    file (click writing a help into a full disk, not through our consoles)."""
    return output_error(exc) if exc.filename is None and exc.errno in _WRITE_ERRNOS else None


UNWRAPPED = 100_000  # columns of a view into a pipe or file (or --width 0): nothing wraps


def _console(file, lines: bool) -> Console:
    _Console = _console_class()
    if _width:
        return _Console(file=file, highlight=False, width=_width)
    console = _Console(file=file, highlight=False)
    if _width == 0 or not console.is_terminal:
        # Lines of text into a pipe or file stay one line each, unpadded, so `grep` finds a
        # sentence of a paragraph; a view's panels fit their text, never wrapped at 80
        console.soft_wrap = lines
        if not lines:
            console = _Console(file=file, highlight=False, width=UNWRAPPED)
    return console


def panel(console: Console, body, **options) -> Panel:
    """A panel as wide as the console, or as its text where nothing wraps."""
    from rich.panel import Panel

    return Panel(body, expand=console.width < UNWRAPPED, **options)


def stdout(lines: bool = False) -> Console:
    """The console for views; `lines`: plain lines of text, unwrapped off a terminal."""
    return _console(sys.stdout, lines)


def stderr() -> Console:
    return _console(sys.stderr, lines=True)


def notice(line: str) -> None:
    """One line of information on stderr, e.g. which backend runs."""
    stderr().print(f"cwread: {one_line(line)}", highlight=False, markup=False)


def help_view(text: str) -> None:
    """A help text of cwread's own (chat's commands), one line of it a line of stdout."""
    console = stdout(lines=True)
    for line in text.splitlines():
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def notice_once(line: str) -> None:
    """`notice`, but once on this machine (per cache folder) for the same line: which backend
    runs, and what a small model changes, are said the first time and when they change, not
    on every answer (the trace and `cwread doctor` always say them)."""
    if first_time_here(line):
        notice(line)


def first_time_here(line: str) -> bool:
    """Whether `line` is said for the first time on this machine (per cache folder); marks it
    said."""
    import hashlib

    from cwread.cache import cache_root

    try:
        seen = cache_root() / "notices" / hashlib.sha256(line.encode()).hexdigest()[:24]
        if seen.exists():
            return False
        seen.parent.mkdir(parents=True, exist_ok=True)
        seen.touch()
    except (OSError, CwreadError):  # a cache that cannot keep it: said every time
        pass
    return True


def begin_run() -> None:
    """Forget the last run's settings (the CLI may run several times in one process), and mend
    the streams the shell closed (`>&-`, `2>&-`): Python holds such a stream as None, and
    print() to a None stderr writes to stdout. A closed stderr is discarded; a closed stdout
    fails as a full disk does (one line, exit 3), never silently."""
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115  (the process's, to its end)
    if sys.stdout is None:
        sys.stdout = _ClosedStream()
    for stream in (sys.stdout, sys.stderr):  # PYTHONIOENCODING=ascii, a C locale: what it cannot show, as ?
        if not _writes_unicode(stream) and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    global _json_printed, _width, _routes_wanted, _statistics_wanted
    _json_printed, _width, _routes_wanted, _statistics_wanted = False, None, True, False
    NOTES_SAID.clear()


_statistics_wanted = False  # --debug: a run's statistics on stderr (the trace always has them)


def want_statistics(wanted: bool) -> None:
    global _statistics_wanted
    _statistics_wanted = wanted


def statistics_wanted() -> bool:
    return _statistics_wanted


_routes_wanted = True  # where the user chose no backend: how to get a model that reads is said


def want_reader_routes(wanted: bool) -> None:
    """Whether this run says the ways to a model that reads (not where a backend was chosen)."""
    global _routes_wanted
    _routes_wanted = wanted


def reader_routes(lines: tuple[str, ...]) -> None:
    """The ways to a model that reads, on stderr, once a run (a chat's too), where wanted."""
    if not _routes_wanted:
        return
    for line in lines:
        if line not in NOTES_SAID:
            NOTES_SAID.add(line)
            notice(line)


def _writes_unicode(stream) -> bool:
    """Whether `stream` encodes every character (a UTF), or holds no encoding of its own."""
    encoding = getattr(stream, "encoding", None)
    if not isinstance(encoding, str):
        return True
    try:
        return codecs.lookup(encoding).name.startswith("utf")
    except LookupError:
        return False


def json_text(data: dict, indent: int | None = 2, ascii_only: bool = False) -> str:
    """`data` as JSON (indented, or on one line with `indent` None), every control character
    escaped: JSON escapes C0 itself, DEL, C1 and bidi formatting are escaped here
    (_C1_DEL_AND_BIDI), so the text stays exact; `ascii_only`: every character past ASCII too."""
    dumped = hide_secrets(json.dumps(data, ensure_ascii=False, indent=indent))  # a key never printed
    if ascii_only:  # escaped after the secrets are hidden: a password past ASCII is matched as written
        dumped = json.dumps(json.loads(dumped), ensure_ascii=True, indent=indent)
    return _C1_DEL_AND_BIDI.sub(lambda m: f"\\u{ord(m.group()):04x}", dumped)


def print_json(data: dict, one_line: bool = False) -> None:
    """`data` on stdout as JSON; `one_line`: a line of JSON Lines."""
    global _json_printed
    _json_printed = True
    try:
        # a stream that cannot write every character gets them as \u escapes: the same JSON
        sys.stdout.write(json_text(data, None if one_line else 2, not _writes_unicode(sys.stdout)) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        raise ReaderGone from None
    except OSError as exc:
        raise output_error(exc) from None


def print_json_error(code: int, kind: str, message: str) -> None:
    """With --json, a failure is a JSON document too, unless the run already printed its one."""
    if not _json_printed:
        from cwread.views.json_output import error_json  # the records' JSON: loaded when an error needs it

        print_json(error_json(code, kind, message))


@contextmanager
def progress(quiet: bool = False) -> Iterator[Progress | None]:
    """A progress callback for the core: a Rich bar on a terminal, one line per stage otherwise."""
    console = stderr()
    if quiet:
        yield None
        return
    if not console.is_terminal:
        seen: set[str] = set()

        def plain(stage: str, done: int, total: int) -> None:
            if stage not in seen:
                seen.add(stage)
                print(f"cwread: {_STAGES.get(stage, stage).lower()} ({total} items)", file=sys.stderr)

        yield plain
        return
    # a terminal's bar alone loads Rich's progress (7 ms)
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bar

    bar = Bar(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    tasks: dict[str, int] = {}

    def update(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(_STAGES.get(stage, stage), total=total)
        bar.update(tasks[stage], completed=done, total=total)

    with bar:
        yield update


def without_measurements(why: str) -> str:
    """`why` without its parentheses that cite a measurement (" (... benchmarks/...)"), nested
    parentheses and all: the trace and `cwread doctor` give those, not every answer's note."""
    out, depth, start = [], 0, 0
    for i, char in enumerate(why):
        if char == "(":
            if depth == 0:
                out.append(why[start:i])
                start = i
            depth += 1
        elif char == ")" and depth:
            depth -= 1
            if depth == 0:
                group = why[start : i + 1]
                if "benchmarks/" in group:
                    out[-1] = out[-1].rstrip(" ")
                else:
                    out.append(group)
                start = i + 1
    out.append(why[start:])
    return "".join(out)
