"""The `cwread` command line: parses options, calls `cwread.api`, renders with `cwread.render`.

Exit codes, mapped in one place (`main`): 0 success, 1 a claim judged FALSE, 2 usage or input
error, 3 model, backend, cache or output failure, 4 no answer, 70 internal error (a bug),
130 interrupted. Commands raise
the typed errors of `cwread.errors`; `verify` returns its verdict's code.
With `--json`, stdout carries exactly one JSON document; everything else goes to stderr.
"""

from __future__ import annotations

import os
import sys
from contextlib import suppress
from typing import Annotated, Any

import typer

from cwread import __version__
from cwread.cli.exits import EXIT_CODES, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_USAGE, answer_exit
from cwread.cli.options import (
    AnswerRun,
    Book,
    DebugFlag,
    EmbedderOpt,
    JsonFlag,
    Output,
    RetrievalOpt,
    answer_options,
    ask_finder_options,
    backend_options,
    budget_options,
    eval_finder_options,
    evaluation_options,
    model_options,
    model_run_options,
    output_options,
    question_options,
)
from cwread.embedders import DEFAULT_EMBEDDER
from cwread.errors import (
    AnswerError,
    CwreadError,
    InputError,
    Interrupted,
    ModelError,
    OutputError,
)


def _click_types(name: str) -> tuple[type[BaseException], ...]:
    """Click's exception class `name`, whether typer vendors click (typer ≥ 0.22) or not."""
    import importlib

    found = []
    for module in ("typer._click.exceptions", "click.exceptions"):
        with suppress(ImportError, AttributeError):
            found.append(getattr(importlib.import_module(module), name))
    return tuple(found)


app = typer.Typer(
    name="cwread",
    help=(
        "Read long narratives (text, HTML, EPUB, PDF) with numbered paragraphs: show them, find the "
        "passages a question needs, and (with a model) answer with [N] citations.\n\n"
        "Exit codes: 0 ok, 1 claim FALSE, 2 usage/input error, 3 model/backend/cache failure, "
        "4 no answer (not determined from the text, or unparseable), 70 internal error, "
        "130 interrupted."
    ),
    no_args_is_help=True,
    add_completion=True,
    rich_markup_mode="markdown",
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        print(f"cwread {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool | None,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = None,
) -> None:
    """cwread: cited answers from long narratives."""


# ---- commands ----------------------------------------------------------------------------


@app.command()
@output_options
def show(
    book: Book,
    paragraphs: Annotated[
        str,
        typer.Argument(
            help="Paragraph ids: 12, 10-14 or 3,7,10-12; in a folder or an EPUB, by file: ch03:12, "
            "ch03:12-20, ch03:40-ch04:2 or ch03 (the whole file); in a PDF, by page: p37 or "
            "p37-39.",
            show_default=False,
        ),
    ],
    output: Any = None,
    debug: DebugFlag = False,
) -> None:
    """Print paragraphs with their ids, e.g. `cwread show novel.txt 1200-1210`."""
    from cwread import api, json_output, render

    document = _open_document(book, output)
    selected = api.show(document, paragraphs)
    if output.json_out:
        render.print_json(json_output.show_json(document, selected))
    else:
        render.show_view(document, selected)


@app.command()
@question_options
@budget_options
@output_options
def find(
    book: Book,
    asked: Any = None,
    budget: Any = None,
    retrieval: RetrievalOpt = "fused",
    embedder: EmbedderOpt = DEFAULT_EMBEDDER,
    limit: Annotated[
        int | None,
        typer.Option(
            help="Segments to print, 0 for all.  [default: the anchor segments]", show_default=False
        ),
    ] = None,
    output: Any = None,
    debug: DebugFlag = False,
) -> None:
    """Rank the passages a question needs, each with its paragraph span.

    Anchor segments sit around the paragraphs ranked highest (BM25 with each paragraph's
    neighbours, BM25 of the section around it and the dense model, fused by reciprocal rank);
    local windows cover the rest of the text, so nothing is out of reach. The Finder reads
    segments in this order, up to the read budget; by default the anchor segments are printed.
    """
    from cwread import api, json_output, render

    if limit is not None and limit < 0:
        raise InputError("--limit must be 0 (all) or a positive number")
    document = _open_document(book, output)
    with render.progress() as progress:
        result = api.find(document, asked, budget, embedder, retrieval, progress)
    shown = len(result.anchor_segments) if limit is None else limit
    if output.json_out:
        render.print_json(json_output.find_json(result, shown))
    else:
        render.find_view(result, shown)


def _open_document(book: str, output: Output):
    """The book as `output` says to read it, with one warning line when invalid bytes were
    replaced while decoding it, and one naming the files of a folder left out; later views
    wrap as `output` says."""
    from cwread import api, render

    render.set_width(output.width)
    document = api.open_document(book, output.encoding)
    if document.replaced:
        what = f"{document.path} is UTF-8" if not document.sources else f"the files of {document.path} are UTF-8"
        render.notice(
            f"warning: {what} with {document.replaced} invalid byte sequence(s), "
            "shown as \ufffd (--encoding reads it as another encoding)"
        )
    if document.skipped:
        shown = "; ".join(document.skipped[:SKIPPED_NAMED])
        more = f"; and {len(document.skipped) - SKIPPED_NAMED} more (--json lists them)" if len(document.skipped) > SKIPPED_NAMED else ""
        render.notice(f"left out of {document.path}: {shown}{more}")
    return document


SKIPPED_NAMED = 5  # files left out of a folder named on the terminal; --json lists them all


def _answer(book: str, asked, budget, finding, settings, run: AnswerRun, quiet: bool = False):
    """Shared by `ask` and `verify`: run the pipeline, print, return the trace."""
    from pathlib import Path

    from cwread import api, json_output, render
    from cwread.cache import check_output_path, write_output_file

    if run.trace is not None:  # checked before any work, so a finished answer is never lost
        check_output_path(run.trace, "--trace")
        target = Path(run.trace)
        if book != "-" and target.exists() and target.resolve() == Path(book).resolve():
            raise InputError("--trace would overwrite the book itself; give another file name")
    document = _open_document(book, run.output)
    with render.progress(quiet) as progress:
        result = api.ask(
            document,
            asked,
            budget=budget,
            embedder=run.model.embedder,
            retrieval=run.retrieval,
            settings=settings,
            answering=run.answering,
            finding=finding,
            use_cache=run.model.use_cache,
            progress=progress,
            notice=None if quiet else render.notice_once,
        )
    data = json_output.ask_json(result)
    if run.trace is not None:
        write_output_file(run.trace, render.json_text(data) + "\n", "--trace")
    if run.output.json_out and not quiet:
        render.print_json(data)
    elif not quiet:
        render.answer_view(result)
    failure = result.failure()
    if failure is not None:
        raise AnswerError(failure, quiet=quiet)
    return result


@app.command()
@question_options
@answer_options
@backend_options
@budget_options
@ask_finder_options
def ask(
    book: Book,
    asked: Any = None,
    budget: Any = None,
    finding: Any = None,
    settings: Any = None,
    run: Any = None,
    debug: DebugFlag = False,
) -> None:
    """Answer a question about a text, citing the paragraphs it rests on.

    Free-form without options, multiple choice with -o "A=..." -o "B=...". The Finder judges
    the retrieved segments, the kept evidence is packed in story order, and the Interpreter
    answers from that packet only. Exit 4 if the text does not determine an answer (the best
    evidence is shown) or no reply could be parsed.
    """
    _answer(book, asked, budget, finding, settings, run)


@app.command()
@answer_options
@backend_options
@budget_options
@ask_finder_options
def verify(
    book: Book,
    claim: Annotated[str, typer.Argument(help="The claim to check against the text.", show_default=False)],
    budget: Any = None,
    finding: Any = None,
    settings: Any = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print nothing; only the exit code tells.")
    ] = False,
    run: Any = None,
    debug: DebugFlag = False,
) -> int:
    """Judge a claim TRUE or FALSE from the text: exit 0 TRUE, 1 FALSE, 4 undetermined.

    For scripts: `cwread verify book.txt "claim" --quiet && echo supported`.
    """
    from cwread import api

    result = _answer(book, api.make_question(claim, claim=True), budget, finding, settings, run, quiet)
    return answer_exit(result)


@app.command()
@answer_options
@backend_options
@budget_options
@ask_finder_options
def chat(
    book: Book,
    budget: Any = None,
    finding: Any = None,
    settings: Any = None,
    run: Any = None,
    debug: DebugFlag = False,
) -> int:
    """Ask question after question about one book, which stays open (Ctrl-D ends).

    Each answer is given as `ask` gives it. At a terminal: line editing, history, /help for
    commands (/show, /find, /verify, /json, /save); Ctrl-C cancels the answer in progress. With
    --json, for scripts: one question a line in, one JSON trace a line out (with its "exit").
    Exit status: that of the last answer.
    """
    from cwread import api
    from cwread.cli.chat import Chat

    if book == "-":
        raise InputError("chat reads its questions from standard input: give the book's path")
    document = _open_document(book, run.output)
    session = api.open(document, embedder=run.model.embedder, settings=settings, use_cache=run.model.use_cache)
    session.selection(None if run.output.json_out else _notice())  # a missing server is told before any question
    interactive = sys.stdin.isatty() and not run.output.json_out
    return Chat(session, run, budget, finding).main(interactive)


def _notice():
    from cwread import render

    return render.notice


@app.command()
@output_options
def index(
    book: Book,
    embedder: EmbedderOpt = DEFAULT_EMBEDDER,
    output: Any = None,
    debug: DebugFlag = False,
) -> None:
    """Build the cached lexical and dense indexes of a text, so later questions start fast."""
    from cwread import api, json_output, render

    document = _open_document(book, output)
    with render.progress() as progress:
        report = api.index_document(document, embedder, progress)
    if output.json_out:
        render.print_json(json_output.index_json(document, report))
    else:
        render.index_view(document, report)


@app.command()
@model_options
def doctor(
    settings: Any = None,
    json_out: JsonFlag = False,
    debug: DebugFlag = False,
) -> None:
    """Say which backend, models and embedder `ask` would use, and how to get what is missing."""
    from cwread import api, json_output, render

    report = api.doctor(settings)
    if json_out:
        render.print_json(json_output.doctor_json(report))
    else:
        render.doctor_view(report)
    if not report.ok:  # the report above says what is missing
        raise ModelError(report.backend_error, quiet=True)


@app.command()
def modelfiles(
    out: Annotated[str, typer.Option("--out", help="Folder to write the Modelfiles into.")] = "modelfiles",
    force: Annotated[bool, typer.Option("--force", help="Replace different files of the same name.")] = False,
    json_out: JsonFlag = False,
    debug: DebugFlag = False,
) -> None:
    """Write the Ollama Modelfiles of cwread's agents, for `ollama create cwread-finder -f ...`."""
    from pathlib import Path

    from cwread import json_output, render
    from cwread.modelfiles import setup_commands, write_modelfiles

    written = write_modelfiles(Path(out), overwrite=force)
    if json_out:
        render.print_json({"version": json_output.TRACE_VERSION, "written": [str(p) for p in written]})
        return
    for path in written:
        render.stdout(lines=True).print(render.printable(str(path)), markup=False, highlight=False)
    render.notice("then: " + "; ".join(setup_commands(out)[1:]))


@app.command("eval")
@backend_options
@budget_options
@eval_finder_options
@model_run_options
@evaluation_options
def eval_command(
    data: Annotated[
        str,
        typer.Argument(
            help="Benchmark records, one JSON object a line (document path, question, options or claim, "
            "gold answer and evidence).",
            show_default=False,
        ),
    ],
    evaluation: Any = None,
    budget: Any = None,
    finding: Any = None,
    settings: Any = None,
    run: Any = None,
    json_out: JsonFlag = False,
    debug: DebugFlag = False,
) -> None:
    """Run the pipeline and baselines on benchmark records and score them.

    Reports accuracy (mcq, claim), pair accuracy, token-F1 and ROUGE-L (open), evidence
    recall, citation validity, format rate, cost, answer distributions beside constant
    baselines, with 95% intervals. Rows are saved as they finish; Ctrl-C loses nothing.
    """
    from cwread import json_output, render
    from cwread.eval.run import EvalOptions, evaluate

    options = EvalOptions(
        data=data,
        budget=budget,
        finding=finding,
        settings=settings,
        embedder=run.embedder,
        use_cache=run.use_cache,
        answer_mode=run.answer_mode,
        support_threshold=run.support_threshold,
        **evaluation,
    )
    with render.progress() as progress:
        result = evaluate(options, progress, render.notice)
    if json_out:
        render.print_json(json_output.eval_json(result.meta, result.summary))
    else:
        render.eval_view(result.summary)


@app.command()
@output_options
def search(
    library: Annotated[
        str,
        typer.Argument(
            help="A folder of books: each file (text, HTML, EPUB, PDF) and each folder in it is a book.",
            show_default=False,
        ),
    ],
    query: Annotated[str, typer.Argument(help="The words to look for.", show_default=False)],
    limit: Annotated[int, typer.Option(help="Paragraphs to print, best first.")] = 10,
    output: Any = None,
    debug: DebugFlag = False,
) -> None:
    """Rank the paragraphs of every book in a folder by BM25 (no model call), each named
    by its book, its paragraph and its page, e.g. `cwread search ~/books "the yew alley"`.

    The index of the whole library is built on the first search and kept until a book
    changes; a changed book is read again alone.
    """
    from pathlib import Path

    from cwread import api, json_output, render

    with render.progress() as progress:
        found = api.search_library((Path(library),), query, limit, progress)
    if output.json_out:
        render.print_json(json_output.search_json(found))
    else:
        render.search_view(found)


@app.command()
@backend_options
def mcp(
    root: Annotated[
        list[str] | None,
        typer.Option(
            "--root",
            help="A folder whose books (files below it) the server may read; repeat for more. "
            "Default: the current folder. Paths outside, `..` and symlinks that leave it are refused.",
        ),
    ] = None,
    embedder: EmbedderOpt = DEFAULT_EMBEDDER,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Bypass the model-call cache.")] = False,
    sessions: Annotated[
        int, typer.Option("--sessions", help="Books held open at once (least recently used closed first).")
    ] = 4,
    settings: Any = None,
    debug: DebugFlag = False,
) -> None:
    """Serve cwread's tools (ask, verify, find, show) to an MCP client over stdio.

    For a client's configuration: `{"command": "cwread", "args": ["mcp", "--root", "/path/to/books"]}`.
    Books stay open across calls; every quote returned is verified to be in its paragraph.
    """
    from pathlib import Path

    try:
        from cwread.mcp_server import ServerSettings, serve
    except ImportError as exc:
        raise InputError(f"cwread mcp needs the MCP SDK ({exc.name} is missing): pip install 'cwread[mcp]'") from None
    roots = tuple(Path(r) for r in (root or ["."]))
    serve(ServerSettings(roots, settings, embedder, use_cache=not no_cache, max_sessions=sessions))


# ---- the one place errors become exit codes ------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Entry point: runs the app and turns every failure into one line and an exit code
    (and, with --json, a JSON error document on stdout)."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or os.environ.get("CWREAD_DEBUG") == "1"
    json_out = "--json" in args[: args.index("--")] if "--" in args else "--json" in args
    from cwread import render
    from cwread.terminal import one_line

    def fail(code: int, kind: str, message: str, line: str | None = None) -> int:
        if line is not None:
            with suppress(OSError):
                print(one_line(line), file=sys.stderr, flush=True)
        if json_out:
            with suppress(OSError, render.ReaderGone, OutputError):
                render.print_json_error(code, kind, message)
        return code

    render.begin_run()
    command = typer.main.get_command(app)
    try:
        result = command.main(args=args, prog_name="cwread", standalone_mode=False)
        if result == EXIT_INTERRUPTED:  # typer turns Ctrl-C into a silent Exit(130)
            return fail(EXIT_INTERRUPTED, "interrupted", "interrupted", "cwread: interrupted")
        return result if isinstance(result, int) else 0
    except render.ReaderGone:
        return _reader_gone()
    except CwreadError as exc:
        if debug:
            import traceback

            traceback.print_exc()
        code = EXIT_CODES.get(type(exc), EXIT_USAGE)
        kind = exc.kind
        if isinstance(exc, Interrupted):
            return fail(code, kind, str(exc), f"cwread: {exc}")
        if isinstance(exc, OutputError):  # stdout is unwritable: the JSON error cannot go there
            fail(code, kind, str(exc), f"cwread: error: {exc}")
            _discard_stdout()
            return code
        # no answer (exit 4) is an outcome, not an error: "cwread: no verdict: ..."
        prefix = "cwread: " if isinstance(exc, AnswerError) else "cwread: error: "
        return fail(code, kind, str(exc), None if exc.quiet else f"{prefix}{exc}")
    except _click_types("UsageError") as exc:
        ctx = getattr(exc, "ctx", None)
        hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        message = " ".join(exc.format_message().split())
        if not message:  # an empty message follows the help text shown for a bare `cwread`
            return EXIT_USAGE
        return fail(EXIT_USAGE, "usage", message, f"cwread: error: {message}{hint}")
    except (typer.Exit, *_click_types("Exit")) as exc:
        return exc.exit_code
    except (typer.Abort, KeyboardInterrupt, *_click_types("Abort")):
        return fail(EXIT_INTERRUPTED, "interrupted", "interrupted", "cwread: interrupted")
    except BrokenPipeError:
        return _reader_gone()
    except Exception as exc:  # a bug of ours: still one line, and the traceback on --debug
        if debug:
            import traceback

            traceback.print_exc()
        message = f"internal error ({type(exc).__name__}: {exc}); rerun with --debug and report the traceback"
        return fail(EXIT_INTERNAL, "internal", message, f"cwread: error: {message}")


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush has nowhere to fail."""
    with suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _reader_gone() -> int:
    """The reader of our stdout went away (e.g. `| head`): not an error of ours."""
    _discard_stdout()
    return 0


def entry() -> None:
    """The `cwread` command. After Ctrl-C, or a failure with calls still out, it exits at once:
    a worker thread still waiting on a server that hangs would otherwise hold the process open
    (finished work is already kept: cache entries and eval rows are written as each call ends)."""
    import atexit
    import signal
    import threading

    from cwread.backends import INTERRUPTED

    def on_ctrl_c(signum, frame) -> None:
        INTERRUPTED.set()  # kept, should a C call swallow the exception (cwread.backends)
        raise KeyboardInterrupt

    with suppress(ValueError):  # not the main thread: Python's own handler stays
        signal.signal(signal.SIGINT, on_ctrl_c)
    code = main()
    if code == EXIT_INTERRUPTED or threading.active_count() > 1:
        atexit._run_exitfuncs()  # e.g. a temporary cache folder is removed
        with suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
