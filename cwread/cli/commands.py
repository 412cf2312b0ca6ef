"""The commands around the reading ones: index, contents, cast, doctor, modelfiles, eval, search and mcp."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

import typer

from cwread.cli.app import app, emit, open_document
from cwread.cli.option_groups import arg, opt
from cwread.cli.options import (
    Book,
    DebugFlag,
    EmbedderOpt,
    JsonFlag,
    LibraryUrlOpt,
    UptoOpt,
    bounded_output_options,
    evaluation_options,
    output_options,
)
from cwread.cli.settings_groups import eval_settings_options, model_options, session_options
from cwread.environment import require_extra
from cwread.errors import InputError, ModelError
from cwread.retrieval import DEFAULT_EMBEDDER
from cwread.settings import run_in_force
from cwread.views import CAST_LISTED


@app.command()
@output_options
def index(
    book: Book,
    embedder: EmbedderOpt = DEFAULT_EMBEDDER,
    library_url: LibraryUrlOpt = None,
    output: Any = None,
    debug: DebugFlag = False,
) -> None:
    """Build a book's cached indexes, so later questions start fast.

    A shelf of books (as `find` reads it), or a folder with --library-url: its library's index,
    here or on that server, brought up to date (a book added or changed read, one removed dropped)."""
    from cwread import api
    from cwread.run.library_question import library_roots
    from cwread.views import console, json_output, render

    console.set_width(output.width)
    if library_url is not None or getattr(api.read_as(book), "shelf", False):  # what find then searches
        with console.progress() as progress:
            built = api.index_library(library_roots(book), progress, console.notice, library_url)
        emit(output.json_out, lambda: json_output.library_index_json(built), lambda: render.library_index_view(built))
        return
    document = open_document(book, output)
    with console.progress() as progress:
        report = api.index_document(document, embedder, progress)
    emit(output.json_out, lambda: json_output.index_json(document, report), lambda: render.index_view(document, report))


@app.command()
@bounded_output_options
def contents(book: Book, output: Any = None, debug: DebugFlag = False) -> None:
    """List a book's chapters with their paragraph ranges (as `show` takes them).

    Chapters are found from the text's headings, within each file of a folder or EPUB."""
    from cwread import api
    from cwread.views import json_output, render

    document = open_document(book, output)
    chapters = api.contents(document)
    emit(output.json_out, lambda: json_output.contents_json(document, chapters), lambda: render.contents_view(chapters, output.max_chars))


@app.command()
@bounded_output_options
def cast(
    book: Book,
    query: arg('A name ("Stapleton") or a description ("the naturalist"): the people it names or describes.') = "",
    limit: opt(
        int | None, f"Members to list, the most mentioned first (0: all); {CAST_LISTED} without a query.",
        show_default=False, min=0,
    ) = None,
    upto: UptoOpt = None,
    output: Any = None,
    debug: DebugFlag = False,
) -> None:
    """List the people and places a book names, or those a name matches.

    From the text alone: each one's forms, the descriptions the text sets beside the name ("Stapleton, the naturalist") with their
    paragraphs, and where it is first mentioned; with a name or description, those it matches,
    and the names each meets most often, with where. `find` and `ask` look for the name of
    someone a question calls by such a description."""
    from cwread import api
    from cwread.views import console, json_output, render, wording

    document = open_document(book, output)
    whole, members = api.cast(document, query, api.reading_limit(document, upto) if upto is not None else None)
    count = (0 if query.strip() else CAST_LISTED) if limit is None else limit
    members = members[:count] if count else members
    if output.json_out:
        console.print_json(json_output.cast_json(document, members, query))
    elif members:
        render.cast_view(document, whole, members, bool(query.strip()), output.max_chars or None)
    if not members:  # exit 4 with --json too: a script reads the same code either way
        console.notice(wording.no_cast(query))
        raise typer.Exit(4)


@app.command()
@model_options
def doctor(
    settings: Any = None,
    prepare: opt(
        bool, "Prepare the embedded model for this CPU now (else the first question does it).", "--prepare"
    ) = False,
    json_out: JsonFlag = False,
    debug: DebugFlag = False,
) -> None:
    """Say which backend and models `ask` would use, and what is missing.

    Also the embedder, and how to get what is missing.
    It writes nothing: what the first question would prepare is said, with its size."""
    from cwread import api
    from cwread.views import json_output, render

    report = api.doctor(settings, prepare, run_in_force().answering)
    emit(json_out, lambda: json_output.doctor_json(report), lambda: render.doctor_view(report))
    if not report.ok:  # the report above says what is missing
        raise ModelError(report.backend_error, quiet=True)


@app.command()
def modelfiles(
    out: opt(str, "Folder to write the Modelfiles into.", "--out") = "modelfiles",
    force: opt(bool, "Replace different files of the same name.", "--force") = False,
    json_out: JsonFlag = False,
    debug: DebugFlag = False,
) -> None:
    """Write the Ollama Modelfiles of cwread's agents.

    For `ollama create cwread-finder -f ...`."""
    from cwread.backends.modelfiles import setup_commands, write_modelfiles
    from cwread.views import console, json_output, render

    written = write_modelfiles(Path(out), overwrite=force)
    emit(json_out, lambda: json_output.modelfiles_json(written), lambda: render.modelfiles_view(written))
    console.notice("then: " + "; ".join(setup_commands(out)[1:]))


@app.command("eval")
@eval_settings_options
@evaluation_options
def eval_command(
    data: arg('Benchmark records, one JSON object a line: id, doc (the book path, from the file), kind (open, '
              'mcq, claim), question, options ({"A": ..., "B": ...}), answer (a label, TRUE, FALSE or text), evidence.'),
    evaluation: Any = None,
    settings: Any = None,
    json_out: JsonFlag = False,
    debug: DebugFlag = False,
) -> None:
    """Score the pipeline and baselines on benchmark records.

    Reports accuracy (mcq, claim), pair accuracy, token-F1 and ROUGE-L (open), evidence
    recall, citation validity, format rate, cost, answer distributions beside constant
    baselines, with 95% intervals. Rows are saved as they finish; Ctrl-C loses nothing.
    """
    from cwread.eval.report import eval_view
    from cwread.eval.run import EvalOptions, evaluate
    from cwread.views import console, json_output

    options = EvalOptions(data=data, settings=settings, **evaluation)
    with console.progress() as progress:
        result = evaluate(options, progress, console.notice)
    emit(json_out, lambda: json_output.eval_json(result.meta, result.summary), lambda: eval_view(result.summary))


@app.command()
@bounded_output_options
def search(
    library: arg("A folder of books (each file or folder in it a book; or a Calibre library), or one book's file."),
    query: arg("The words to look for."),
    limit: opt(int, "Paragraphs to print, best first; 0: every one that matches.") = 10,
    context: opt(int, "Paragraphs to print before and after each hit.", "--context", "-C") = 0,
    books: opt(str | None, "Only the books whose path in the folder matches this glob ('*gatsby*').", "--books",
               metavar="GLOB", show_default=False) = None,
    upto: opt(int | None, "Where you have read to: of each book, no paragraph past it.", "--upto", min=1,
              metavar="N", show_default=False) = None,
    library_url: LibraryUrlOpt = None,
    output: Any = None,
    debug: DebugFlag = False,
) -> None:
    """Rank the paragraphs of a folder of books by words (no model call).

    E.g. `cwread search ~/books "the yew alley"`: a quoted phrase is matched as written. Each
    hit opens with its book's path and paragraph id, as `show` takes them. The index is built on
    the first search and kept until a book changes.
    """
    from cwread import api
    from cwread.views import console, json_output, render

    root = Path(library)
    if root.is_file():  # one book: its folder's index, this book alone
        if books is not None:
            raise InputError("--books chooses among a folder's books; give the folder, not a book")
        root, books = root.parent, glob.escape(root.name)
    console.set_width(output.width)
    with console.progress() as progress:
        found = api.search_library(
            (root,), query, limit, progress, within=api.Within(books, upto), context=context, notice=console.notice,
            library_url=library_url,
        )
    emit(output.json_out, lambda: json_output.search_json(found, str(root)), lambda: render.search_view(found, str(root), output.max_chars))


@app.command()
@session_options
def mcp(
    root: opt(
        list[str] | None,
        "A folder whose books (files below it) the server may read; repeat for more. "
        "Default: the current folder. Paths outside, `..` and symlinks that leave it are refused.",
        "--root",
    ) = None,
    sessions: opt(int, "Books held open at once (least recently used closed first).", "--sessions") = 4,
    session: Any = None,
    debug: DebugFlag = False,
) -> None:
    """Serve cwread's tools to an MCP client over stdio.

    The tools: ask, verify, find, show, list_books, contents, cast, search.

    For a client's configuration: `{"command": "cwread", "args": ["mcp", "--root", "/path/to/books"]}`.
    Books stay open across calls; every quote returned is verified to be in its paragraph.
    """
    stdio = require_extra("cwread.mcp.stdio", "mcp", "cwread mcp needs the MCP SDK")
    roots = tuple(Path(r) for r in (root or ["."]))
    stdio.serve(stdio.ServerSettings(roots, session, max_sessions=sessions, run=run_in_force()))


@app.command()
@session_options
def serve(
    paths: arg("Books to serve: files, folders of one book, or shelves (a folder of books, a Calibre library).", list[str]),
    port: opt(int, "The port; 0: any free one.", "--port", min=0, max=65535) = 8765,
    host: opt(str, "The address to listen on: this machine alone by default.", "--host") = "127.0.0.1",
    open_browser: opt(bool, "Open it in the browser.", "--open") = False,
    session: Any = None,
    debug: DebugFlag = False,
) -> None:
    """The reading room: the books in a browser.

    Each paragraph with its id; a question's passages in their place in the book; the cast; a
    reading limit kept in the browser (no spoilers).

    Its first line on stdout is its URL. It reads the books and writes nothing of theirs; Ctrl-C
    stops it.
    """
    server = require_extra("cwread.web.server", "web", "cwread serve needs the web extra")
    server.run_server([Path(p) for p in paths], session, host, port, open_browser, run_in_force())


config_app = typer.Typer(
    help="The settings file: what you set once (a backend, a model, a server and its key, a stage's "
    "setting as --set takes it). Flags and environment variables win over it; a key is never printed.",
    no_args_is_help=True,
)
app.add_typer(config_app, name="config")


@config_app.command("set", context_settings={"ignore_unknown_options": True})  # a VALUE of -5 is a value
def config_set(
    key: arg("One of the settings `cwread config show` lists."),
    value: arg("Its value."),
) -> None:
    """Set KEY to VALUE in the settings file (`cwread config set backend ollama`,
    `cwread config set finder.read_tokens 2000`)."""
    from cwread import api
    from cwread.environment import shown_setting, write_setting
    from cwread.views import console

    api.check_setting(key, value)
    path, _ = write_setting(key, value)
    console.notice(f"{key} = {shown_setting(key, value)} in {path}")


@config_app.command("unset")
def config_unset(key: arg("The setting to remove.")) -> None:
    """Remove KEY from the settings file."""
    from cwread.environment import write_setting
    from cwread.views import console

    path, removed = write_setting(key, None)
    console.notice(f"{key} removed from {path}" if removed else f"{key} is not set in {path}; nothing changed")


@config_app.command("show")
def config_show(json_out: JsonFlag = False) -> None:
    """The settings file's path and what it sets (a key shown as "(set)"), then every setting it
    takes, each with the environment variable it stands for."""
    from cwread.environment import SETTINGS_FILE_KEYS, read_settings_file, settings_path, shown_setting
    from cwread.views import render

    path, held = settings_path(), read_settings_file()
    shown = {key: shown_setting(key, value) for key, value in held.items()}
    data = {"path": str(path), "settings": shown, "takes": SETTINGS_FILE_KEYS}
    emit(json_out, lambda: data, lambda: render.config_view(path, shown, SETTINGS_FILE_KEYS))
