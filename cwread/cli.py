"""The `cwread` command line: parses options, calls `cwread.api`, renders with Rich.

Exit codes (one place: `EXIT_CODES` and `main`): 0 success, 1 a claim judged FALSE,
2 usage or input error, 3 model or backend failure, 4 no parseable answer, 130 interrupted.
With `--json`, stdout carries exactly one JSON document; everything else goes to stderr.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager, suppress
from typing import Annotated

import typer

from cwread import __version__
from cwread.errors import AnswerError, CwreadError, InputError, ModelError

EXIT_CODES: dict[type[CwreadError], int] = {InputError: 2, ModelError: 3, AnswerError: 4}
EXIT_INTERRUPTED = 130


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
        "Read long plain-text narratives with numbered paragraphs: show them, find the "
        "passages a question needs, and (with a model) answer with [N] citations.\n\n"
        "Exit codes: 0 ok, 1 claim FALSE, 2 usage/input error, 3 model/backend failure, "
        "4 no parseable answer, 130 interrupted."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

Book = Annotated[
    str,
    typer.Argument(help="Plain-text file to read; - reads standard input.", show_default=False),
]
JsonFlag = Annotated[
    bool, typer.Option("--json", help="Print exactly one JSON document on stdout; all else on stderr.")
]
EncodingOpt = Annotated[
    str | None,
    typer.Option(
        help="Force the text encoding (default: detect UTF-8/UTF-16 marks, else UTF-8, cp1252, latin-1)."
    ),
]
DebugFlag = Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")]
EmbedderOpt = Annotated[
    str,
    typer.Option(
        envvar="CWREAD_EMBEDDER",
        help="Dense model: minilm-static (fast default), minilm (full MiniLM, slower), none "
        "(BM25 only), or the path of a sentence-transformers model (e.g. BGE-M3 on a GPU).",
    ),
]


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


def _stdout():
    from rich.console import Console

    return Console(file=sys.stdout, highlight=False, soft_wrap=False)


def _stderr():
    from rich.console import Console

    return Console(file=sys.stderr, highlight=False)


_STAGES = {
    "model": "Building the static embedding model (once per machine)",
    "bm25": "Building the lexical index",
    "embed": "Embedding paragraphs",
}


@contextmanager
def _progress():
    """A progress callback for the core: a Rich bar on a terminal, one line per stage otherwise."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = _stderr()
    if not console.is_terminal:
        seen: set[str] = set()

        def plain(stage: str, done: int, total: int) -> None:
            if stage not in seen:
                seen.add(stage)
                print(f"cwread: {_STAGES.get(stage, stage).lower()} ({total} items)", file=sys.stderr)

        yield plain
        return
    bar = Progress(
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


def _load(book: str, encoding: str | None):
    from cwread import api

    return api.open_document(book, encoding)


def _print_json(data: dict) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


@app.command()
def show(
    book: Book,
    paragraphs: Annotated[
        str, typer.Argument(help="Paragraph ids: 12, 10-14 or 3,7,10-12.", show_default=False)
    ],
    json_out: JsonFlag = False,
    encoding: EncodingOpt = None,
    debug: DebugFlag = False,
) -> None:
    """Print paragraphs with their ids, e.g. `cwread show novel.txt 1200-1210`."""
    from cwread import api
    from cwread.trace import TRACE_VERSION, document_json

    document = _load(book, encoding)
    selected = api.show(document, paragraphs)
    if json_out:
        _print_json(
            {
                "version": TRACE_VERSION,
                "document": document_json(document),
                "paragraphs": [
                    {"id": p.id, "block": p.block, "line": p.line, "text": p.text} for p in selected
                ],
            }
        )
        return
    from rich.text import Text

    out = _stdout()
    for p in selected:
        line = Text()
        line.append(f"[{p.id}] ", style="bold cyan")
        line.append(p.text)
        out.print(line)
        out.print()


@app.command()
def find(
    book: Book,
    question: Annotated[str, typer.Argument(help="The question or claim.", show_default=False)],
    option: Annotated[
        list[str] | None,
        typer.Option("--option", "-o", help='An answer option, "A=text" (repeat for B, C, ...).'),
    ] = None,
    preset: Annotated[str, typer.Option(help="Budget preset: focused or broad.")] = "focused",
    anchors: Annotated[int | None, typer.Option(help="Anchor paragraphs (overrides the preset).")] = None,
    read: Annotated[int | None, typer.Option(help="Segments the Finder reads at most.")] = None,
    n_e: Annotated[int | None, typer.Option("--n-e", help="N_E: evidence segments packed at most.")] = None,
    p_r: Annotated[int | None, typer.Option("--p-r", help="P_r: neighbours around each anchor.")] = None,
    p_w: Annotated[int | None, typer.Option("--p-w", help="P_w: paragraphs per local window.")] = None,
    b_c: Annotated[int | None, typer.Option("--b-c", help="B_c: characters packed at most.")] = None,
    method: Annotated[str, typer.Option(help="Ranking: fused (BM25 + dense), bm25 or dense.")] = "fused",
    embedder: EmbedderOpt = "minilm-static",
    limit: Annotated[
        int | None,
        typer.Option(help="Segments to print, 0 for all.  [default: the read budget]", show_default=False),
    ] = None,
    json_out: JsonFlag = False,
    encoding: EncodingOpt = None,
    debug: DebugFlag = False,
) -> None:
    """Rank the passages a question needs, each with its paragraph span.

    Anchor segments sit around the paragraphs that BM25 and the dense model rank highest
    (fused by reciprocal rank); local windows cover the rest of the text, so nothing is out
    of reach. The Finder reads segments in this order, up to the read budget.
    """
    from cwread import api
    from cwread.segments import make_budget
    from cwread.trace import find_json

    budget = make_budget(preset, anchors=anchors, read=read, n_e=n_e, p_r=p_r, p_w=p_w, b_c=b_c)
    options = api.parse_options(option)
    if not question.strip():
        raise InputError("the question is empty")
    if limit is not None and limit < 0:
        raise InputError("--limit must be 0 (all) or a positive number")
    document = _load(book, encoding)
    with _progress() as progress:
        result = api.find(document, question, options, budget, embedder, method, progress)
    shown = budget.read if limit is None else limit
    if json_out:
        _print_json(find_json(result, shown))
        return
    _render_find(result, shown)


def _render_find(result, limit: int) -> None:
    from rich.panel import Panel
    from rich.text import Text

    out = _stdout()
    doc = result.document
    segments = result.segments if not limit else result.segments[:limit]
    out.print(
        Text.assemble(
            ("Question: ", "bold"),
            result.question,
            "\n",
            *[(f"  ({k}) {v}\n") for k, v in result.options.items()],
            (f"{doc.path}: {len(doc)} paragraphs, {len(result.segments)} segments; ", "dim"),
            (f"showing {len(segments)} (Finder reads {result.budget.read}); ", "dim"),
            (f"anchors {', '.join(map(str, result.anchors))}", "dim"),
        )
    )
    for rank, s in enumerate(segments, start=1):
        body = Text()
        for pid in s.ids:
            p = doc.paragraph(pid)
            style = "bold" if pid in s.anchors else ""
            body.append(f"[{pid}] ", style="bold cyan")
            body.append(p.text, style=style)
            if pid != s.end:
                body.append("\n\n")
        title = f"#{rank} {s.source} [{s.start}-{s.end}]  score {s.score:.4f}"
        out.print(
            Panel(
                body, title=title, title_align="left", border_style="cyan" if s.source == "anchor" else "dim"
            )
        )


@app.command()
def index(
    book: Book,
    embedder: EmbedderOpt = "minilm-static",
    json_out: JsonFlag = False,
    encoding: EncodingOpt = None,
    debug: DebugFlag = False,
) -> None:
    """Build the cached lexical and dense indexes of a text, so later questions start fast."""
    from cwread import api
    from cwread.trace import document_json

    document = _load(book, encoding)
    with _progress() as progress:
        report = api.index_document(document, embedder, progress)
    if json_out:
        _print_json(
            {
                "version": 1,
                "document": document_json(document),
                "embedder": report.embedder,
                "built": report.built,
                "seconds": round(report.seconds, 3),
                "cache_dir": report.cache_dir,
            }
        )
        return
    what = ", ".join(report.built) if report.built else "nothing (already cached)"
    _stderr().print(
        f"{document.path}: {report.paragraphs} paragraphs; built {what} in {report.seconds:.1f} s; "
        f"cache {report.cache_dir}"
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point: runs the app and turns every failure into one line and an exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or os.environ.get("CWREAD_DEBUG") == "1"
    command = typer.main.get_command(app)
    try:
        result = command.main(args=args, prog_name="cwread", standalone_mode=False)
        return result if isinstance(result, int) else 0
    except CwreadError as exc:
        if debug:
            import traceback

            traceback.print_exc()
        print(f"cwread: error: {exc}", file=sys.stderr)
        return EXIT_CODES.get(type(exc), 2)
    except _click_types("UsageError") as exc:
        ctx = getattr(exc, "ctx", None)
        hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        message = " ".join(exc.format_message().split())
        if message:  # an empty message follows the help text shown for a bare `cwread`
            print(f"cwread: error: {message}{hint}", file=sys.stderr)
        return 2
    except (typer.Exit, *_click_types("Exit")) as exc:
        return exc.exit_code
    except (typer.Abort, KeyboardInterrupt, *_click_types("Abort")):
        print("cwread: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader of our stdout went away (e.g. `| head`): not an error of ours
        with suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
