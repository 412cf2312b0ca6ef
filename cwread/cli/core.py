"""The `cwread` command line: parses options, calls `cwread.api`, renders with `cwread.views`.
Every failure becomes one line and its exit code from the one table (cwread.errors; `main`);
with `--json`, stdout carries exactly one JSON document and everything else goes to stderr."""

from __future__ import annotations

import copy
import os
import sys
from contextlib import suppress
from dataclasses import replace
from typing import Any

import typer

from cwread.plugins import load_plugins

load_plugins()  # before the options read the registries for their choices and help
from cwread.cli.app import app, emit, open_document  # noqa: E402
from cwread.cli.option_groups import arg, opt  # noqa: E402
from cwread.cli.options import (  # noqa: E402
    FIND_CHARS,
    LIBRARY_PASSAGES,
    MAP_CANDIDATES,
    ONE_BOOK_HELP,
    READER_CHARS,
    Book,
    DebugFlag,
    EmbedderOpt,
    LibraryUrlOpt,
    Output,
    Reading,
    RetrievalOpt,
    TraceOpt,
    bounded_output_options,
    chat_output_options,
    find_options,
    output_options,
    question_options,
    reading_options,
    shelf_chosen,
)
from cwread.cli.settings_groups import budget_options, settings_options  # noqa: E402
from cwread.environment import apply_settings_file  # noqa: E402
from cwread.errors import (  # noqa: E402
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    AnswerError,
    CwreadError,
    InputError,
    Interrupted,
    OutputError,
    error_exit,
)
from cwread.retrieval import DEFAULT_EMBEDDER  # noqa: E402
from cwread.views import help as help_text  # noqa: E402


def _click_types(name: str) -> tuple[type[BaseException], ...]:
    """Click's exception class `name`, typer's vendored click's or click's (one not loaded raised nothing)."""
    modules = (sys.modules.get(module) for module in ("typer._click.exceptions", "click.exceptions"))
    return tuple(getattr(module, name) for module in modules if module is not None and hasattr(module, name))


@app.command()
@bounded_output_options
def show(
    book: Book,
    paragraphs: arg(
        "Paragraph ids: 12, 10-14, 10- (to the end), 10+4 (10 and the 4 after it), 3,7,10-12 (or 3 7 10-12) or "
        "all; in a folder or an EPUB, by file: ch03:12, ch03:12-20, ch03:40-ch04:2 or ch03 (the whole file); in "
        "a PDF, by page: p37 or p37-39.",
        list[str],
    ),
    around: opt(int, "Each paragraph with this many of its neighbours before and after it.", "--around", min=0) = 0,
    output: Any = None,
    debug: DebugFlag = False,
) -> None:
    """Print paragraphs with their ids (`cwread show novel.txt 1200-1210`)."""
    from cwread import api
    from cwread.views import console, json_output, render

    document = open_document(book, output)
    notes: list[str] = []
    selected = api.show(document, ",".join(p.strip(",") for p in paragraphs if p.strip(",")), notes, around)
    for line in notes:
        console.notice(line)
    emit(output.json_out, lambda: json_output.show_json(document, selected), lambda: render.show_view(document, selected, output.max_chars))


@app.command()
@question_options
@budget_options
@find_options
@output_options
def find(
    book: Book,
    asked: Any = None,
    budget: Any = None,
    retrieval: RetrievalOpt = "fused",
    embedder: EmbedderOpt = DEFAULT_EMBEDDER,
    shape: Any = None,
    output: Any = None,
    debug: DebugFlag = False,
) -> None:
    """Print the passages a question needs, best first (no model call).

    Each paragraph opens with its id.

    `cwread show BOOK ID` reads on from a paragraph. Passages are found around the paragraphs
    ranked highest by BM25 and a dense model together (docs/budgets.md says how).
    """
    from cwread import api
    from cwread.views import console, json_output, render

    session = api.SessionSettings(embedder, library_url=shape.library_url)
    settings = api.Settings(session, api.RunSettings(budget, retrieval))
    if _read_as_shelf(book, shape.library, output):
        _find_library(book, asked, settings, shape, output)
        return
    document = open_document(book, output)
    hints = api.Hints(
        shape.also,
        api.paragraph_id(document, shape.near) if shape.near is not None else None,
        api.reading_limit(document, shape.upto) if shape.upto is not None else None,
    )
    with console.progress() as progress:
        result = api.find(document, asked, settings, progress=progress, hints=hints)
    shown = len(result.anchor_segments) if shape.limit is None else shape.limit
    if shape.compact and not output.json_out:
        count = MAP_CANDIDATES if shape.limit is None else shape.limit or len(document)  # 0: all, as for passages
        render.map_view(result, count, shape.printed_chars(READER_CHARS))
        return
    passages = result.printed(shown, shape.expand)
    if output.json_out:
        console.print_json(json_output.find_json(result, shown, passages))
    elif shape.plain or not console.stdout().is_terminal:  # a reader in a pipe: bounded plain text
        bound = shape.printed_chars(FIND_CHARS)
        render.find_text_view(result, passages, shown, bound)
    else:
        render.find_view(result, passages, shown, shape.max_chars)


def _read_as_shelf(book: str, library: bool | None, output: Output) -> bool:
    """Whether BOOK is asked as a library: as --library or --one-book says; else a folder as
    it reads (a shelf of books, or one book's parts: cwread.library.catalog.shelving), said on
    stderr with the option that reads it the other way. The output's width is set first."""
    from cwread import api
    from cwread.views import console, wording

    console.set_width(output.width)
    if library is not None:
        return library

    reading = api.read_as(book)
    if reading is not None:
        console.notice(wording.shelving(book, reading))
    return reading is not None and reading.shelf


def _find_library(book: str, asked, settings, shape, output) -> None:
    """`find --library`: a question over a library's books (cwread.run.library_question)."""
    from cwread import api
    from cwread.run.library_question import library_roots
    from cwread.views import console, json_output, render

    if shape.near is not None or shape.upto is not None:
        raise InputError("--near and --upto name a place in one book; with a shelf give none (or --one-book)")
    roots = library_roots(book)
    with console.progress() as progress:
        found = api.find_library(
            roots, asked, settings, progress=progress, notice=console.notice, hints=api.Hints(shape.also),
            most_books=shape.books_opened,
        )
    if output.json_out:
        console.print_json(json_output.library_find_json(found, found.printed(shape.limit or 0, shape.expand)))
    else:
        count = shape.limit if shape.limit is not None else MAP_CANDIDATES if shape.compact else LIBRARY_PASSAGES
        bound = shape.printed_chars(READER_CHARS if shape.compact else FIND_CHARS)  # --map: a line a passage
        render.library_find_view(found, found.printed(count, shape.expand), bound, shape.compact)
    if not found.candidates:  # exit 4 with --json too
        raise typer.Exit(4)


def _answer(book: str, asked, settings, output: Output, reading: Reading, quiet: bool = False):
    """Shared by `ask` and `verify`: run the pipeline with `settings`, print as `output` says
    (and the JSON trace to `reading.trace`), within the reader's limit (`reading.upto`), return
    the trace."""
    from cwread import api
    from cwread.views import console, output_files

    output_files.check_output_path(reading.trace, "--trace", book)
    document = open_document(book, output)
    console.want_reader_routes(settings.session.backends.backend == "auto")
    notice = None if quiet else console.notice_once
    upto = api.reading_limit(document, reading.upto) if reading.upto is not None else None
    with console.progress(quiet) as progress:
        result = api.ask(document, asked, settings, progress=progress, notice=notice, hints=api.Hints(upto=upto))
    return _report(result, output, reading.trace, quiet)


def _report(result, output: Output, trace: str | None, quiet: bool = False):
    """An answer's trace printed (the JSON or the view, the JSON to `trace` too) and, where no
    answer stands, why on stderr; the trace returned."""
    from cwread.views import answer_view, console, trace_json, wording
    from cwread.views.output_files import output_failure

    data = trace_json.ask_json(result)
    failed = trace and output_failure(trace, console.json_text(data) + "\n", "--trace")  # said after the answer
    if output.json_out:  # asked for, the one JSON document is printed, --quiet or not
        console.print_json(data)
    elif not quiet:
        answer_view.answer_view(result)
    if failed:
        raise failed
    failure = wording.failure(result)
    if failure is not None and not quiet:  # no answer (the trace's exit 4) is an outcome, not an error
        console.notice(failure)
    return result


@app.command()
@question_options
@settings_options
@output_options
@reading_options
def ask(
    book: Book,
    asked: Any = None,
    output: Any = None,
    settings: Any = None,
    reading: Any = None,
    library: opt(
        bool,
        "BOOK is a library (a folder of books, or a Calibre library): answer from the book whose passages fit "
        "the question best, of those its index matches best (as find --library).  [default: a folder as it "
        "reads, said on stderr]",
        "--library", show_default=False,
    ) = False,
    one_book: opt(bool, ONE_BOOK_HELP, "--one-book", show_default=False) = False,
    library_url: LibraryUrlOpt = None,
    debug: DebugFlag = False,
) -> int:
    """Answer a question about a text, citing the paragraphs it rests on.

    Free-form without options, multiple choice with -o "A=..." -o "B=...". Retrieval finds the
    segments the question needs and their evidence is packed in story order. With a served
    model that reads, the Finder judges each segment first and the Interpreter answers from the
    packet only. On the embedded default (no server) a short text's answer is its sentence that
    fits best, from the paragraph the trained Finder judges to hold it; a novel gets no answer but
    the passages that fit best, each with its chapter (exit 4); options and claims get no verdict
    (--judge-anyway asks it all the same). Exit 4 if the text does not determine an answer (the
    best evidence is shown) or no reply could be parsed; exit 1 for a verdict its kind calls false
    (a registered kind's; `verify` for claims).
    """
    if _read_as_shelf(book, shelf_chosen(library, one_book), output):
        if reading.upto is not None:
            raise InputError("--upto names a place in one book; with a shelf give none (or --one-book)")
        settings = replace(settings, session=replace(settings.session, library_url=library_url))
        return _answer_library(book, asked, settings, output, reading.trace).exit_code
    return _answer(book, asked, settings, output, reading).exit_code


def _answer_library(library: str, asked, settings, output: Output, trace: str | None):
    """`ask --library`: the answer from the book whose passages fit `asked` best among the
    library's candidate books (cwread.run.library_question); exit 4 where no book holds the
    question's words."""
    from cwread import api
    from cwread.run.library_question import library_roots
    from cwread.views import console
    from cwread.views.output_files import check_output_path

    check_output_path(trace, "--trace", library)
    roots = library_roots(library)
    with console.progress() as progress:
        answered = api.ask_library(roots, asked, settings, progress=progress, notice=console.notice)
    if answered.trace is None:
        raise AnswerError(f"no book of {library} holds the question's words (say it otherwise)")
    return _report(answered.trace, output, trace)


@app.command()
@settings_options
@output_options
@reading_options
def verify(
    book: Book,
    claim: arg("The claim to check against the text."),
    quiet: opt(bool, "Print nothing (but --json's document); the exit code tells.", "--quiet", "-q") = False,
    output: Any = None,
    settings: Any = None,
    reading: Any = None,
    debug: DebugFlag = False,
) -> int:
    """Judge a claim TRUE or FALSE from the text (exit 0, 1; 4: undetermined).

    For scripts: `cwread verify book.txt "claim" --quiet && echo supported`.
    """
    from cwread import api

    return _answer(book, api.make_question(claim, claim=True), settings, output, reading, quiet).exit_code


@app.command()
@settings_options
@chat_output_options
def chat(
    book: Book,
    output: Any = None,
    settings: Any = None,
    trace: TraceOpt = None,
    debug: DebugFlag = False,
) -> int:
    """Ask question after question about one book (Ctrl-D ends).

    Each answer is given as `ask` gives it. At a terminal: line editing, history, /help for
    commands (/show, /find, /verify, /json, /save); Ctrl-C cancels the answer in progress. With
    --json, for scripts: one question a line in, one JSON trace a line out (with its "exit").
    Exit status: with questions piped in, that of the last answer (or command); at a terminal, 0
    unless it failed.
    """
    from cwread import api
    from cwread.chat import Chat
    from cwread.views import console

    if book == "-":
        raise InputError("chat reads its questions from standard input: give the book's path")
    session = api.open(open_document(book, output), settings)
    session.selection(None if output.json_out else console.notice)  # a missing server is told first
    console.want_reader_routes(settings.session.backends.backend == "auto")
    interactive = sys.stdin.isatty() and not output.json_out
    return Chat(session, output.json_out, trace, settings.run).main(interactive)


from cwread.cli import commands  # noqa: E402, F401  (registers its commands on the app)


def main(argv: list[str] | None = None) -> int:
    """Entry point: runs the app and turns every failure into one line and an exit code
    (and, with --json, a JSON error document on stdout)."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or os.environ.get("CWREAD_DEBUG") == "1"
    json_out = "--json" in args[: args.index("--")] if "--" in args else "--json" in args
    from cwread.views import console, terminal

    def fail(code: int, kind: str, message: str, line: str | None = None) -> int:
        if line is not None:
            with suppress(OSError):
                print(terminal.one_line(line), file=sys.stderr, flush=True)
        if json_out:
            with suppress(OSError, console.ReaderGone, OutputError):
                console.print_json_error(code, kind, message)
        return code

    console.begin_run()
    console.want_statistics(debug)
    # a terminal gets Rich's panels; a pipe (an assistant reading the help) plain text, two
    # fifths the characters (cwread --help with find, show and search: 25,400 against 10,800)
    command = typer.main.get_command(_named(args))
    args = help_text.prepare(command, args, terminal=lambda: console.stdout().is_terminal)
    try:
        if args[:1] != ["config"]:  # the settings file stands in for the environment (config mends it)
            apply_settings_file()
        result = command.main(args=args, prog_name="cwread", standalone_mode=False)
        if result == EXIT_INTERRUPTED:  # typer turns Ctrl-C into a silent Exit(130)
            return fail(EXIT_INTERRUPTED, "interrupted", "interrupted", "cwread: interrupted")
        return result if isinstance(result, int) else 0
    except (console.ReaderGone, BrokenPipeError):  # the reader of our stdout left (`| head`): no error
        _discard_stdout()
        return 0
    except CwreadError as exc:
        _traceback(debug)
        code = error_exit(exc)
        kind = exc.kind
        if isinstance(exc, Interrupted):
            return fail(code, kind, str(exc), f"cwread: {exc}")
        if isinstance(exc, OutputError) and exc.of_stdout:  # stdout is unwritable: no JSON error there
            _discard_stdout()
            return fail(code, kind, str(exc), f"cwread: error: {exc}")
        # no answer (exit 4) is an outcome, not an error: "cwread: no verdict: ..."
        prefix = "cwread: " if isinstance(exc, AnswerError) else "cwread: error: "
        return fail(code, kind, str(exc), None if exc.quiet else f"{prefix}{exc}")
    except _click_types("UsageError") as exc:
        ctx = getattr(exc, "ctx", None)
        hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        message = " ".join(exc.format_message().split())
        if not message or isinstance(exc, _click_types("NoArgsIsHelpError")):  # `cwread` alone: its help, in lines
            try:  # (Rich's, shown already); a reader gone (`| head`) is no error
                print(exc.format_message().rstrip(), end="\n" if message else "", flush=True)
            except OSError:
                _discard_stdout()
            return EXIT_USAGE
        return fail(EXIT_USAGE, "usage", message, f"cwread: error: {message}{hint}")
    except (typer.Exit, *_click_types("Exit")) as exc:
        return exc.exit_code
    except (typer.Abort, KeyboardInterrupt, *_click_types("Abort")):
        return fail(EXIT_INTERRUPTED, "interrupted", "interrupted", "cwread: interrupted")
    except Exception as exc:  # a bug of ours: still one line, and the traceback on --debug
        if isinstance(exc, OSError) and (failed := console.failed_writing(exc)) is not None:  # click's help
            _discard_stdout()
            return fail(failed.exit_code, failed.kind, str(failed), f"cwread: error: {failed}")
        _traceback(debug)
        message = f"internal error ({type(exc).__name__}: {exc}); rerun with --debug and report the traceback"
        return fail(EXIT_INTERNAL, "internal", message, f"cwread: error: {message}")


def _named(args: list[str]) -> typer.Typer:
    """The app with only the command (or group) `args` name first, where they name one (else all,
    to list them): a run builds its own command's parameters, not nineteen's (20 ms a `show`)."""
    named, name = copy.copy(app), args[:1]
    named.registered_commands = [
        c for c in app.registered_commands if name == [c.name or typer.main.get_command_name(c.callback.__name__)]
    ]
    named.registered_groups = [g for g in app.registered_groups if name == [g.name]]
    return named if named.registered_commands or named.registered_groups else app


def _traceback(debug: bool) -> None:
    if debug:
        __import__("traceback").print_exc()


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush has nowhere to fail."""
    with suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def entry() -> None:
    """The `cwread` command. After Ctrl-C, or a failure with calls still out, it exits at once:
    a worker thread still waiting on a server that hangs would otherwise hold the process open
    (finished work is already kept: cache entries and eval rows are written as each call ends)."""
    import atexit
    import signal
    import threading

    from cwread.backends.transport import INTERRUPTED

    def on_ctrl_c(signum, frame) -> None:
        INTERRUPTED.set()  # kept, should a C call swallow the exception (cwread.backends)
        raise KeyboardInterrupt

    with suppress(ValueError):  # not the main thread: Python's own handler stays
        signal.signal(signal.SIGINT, on_ctrl_c)
    code = main()
    if code == EXIT_INTERRUPTED or threading.active_count() > 1:
        # a model loading or a llama.cpp server in a call is not waited for: os._exit ends them
        embedded = sys.modules.get("cwread.backends.embedded")
        if embedded is not None:
            atexit.unregister(embedded.at_exit)
        atexit._run_exitfuncs()  # e.g. a temporary cache folder is removed
        with suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
