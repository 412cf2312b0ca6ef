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


QuestionArg = Annotated[str, typer.Argument(help="The question.", show_default=False)]
OptionOpt = Annotated[
    list[str] | None,
    typer.Option("--option", "-o", help='An answer option, "A=text" (repeat for B, C, ...).'),
]
PresetOpt = Annotated[str, typer.Option(help="Budget preset: focused or broad.")]
AnchorsOpt = Annotated[int | None, typer.Option(help="Anchor paragraphs (overrides the preset).")]
ReadOpt = Annotated[int | None, typer.Option(help="Segments the Finder reads at most.")]
NEOpt = Annotated[int | None, typer.Option("--n-e", help="N_E: evidence segments packed at most.")]
PROpt = Annotated[int | None, typer.Option("--p-r", help="P_r: neighbours around each anchor.")]
PWOpt = Annotated[int | None, typer.Option("--p-w", help="P_w: paragraphs per local window.")]
BCOpt = Annotated[int | None, typer.Option("--b-c", help="B_c: characters packed at most.")]
MethodOpt = Annotated[str, typer.Option(help="Ranking: fused (BM25 + dense), bm25 or dense.")]
BackendOpt = Annotated[
    str | None,
    typer.Option(
        help="auto (Ollama when it serves the models, else embedded), ollama, or embedded. "
        "[env: CWREAD_BACKEND]",
        show_default=False,
    ),
]
FinderModelOpt = Annotated[
    str | None,
    typer.Option(help="Ollama model for the Finder [env: CWREAD_FINDER_MODEL; default: cwread-finder]."),
]
InterpreterModelOpt = Annotated[
    str | None,
    typer.Option(
        help="Ollama model for the Interpreter [env: CWREAD_INTERPRETER_MODEL; default: cwread-interpreter]."
    ),
]
GgufOpt = Annotated[
    str | None,
    typer.Option(help="GGUF file for the embedded backend [env: CWREAD_GGUF; default: SmolLM2-135M]."),
]
FinderLoraOpt = Annotated[
    str | None,
    typer.Option(
        help="LoRA GGUF adapter for the embedded Finder, e.g. from `python -m training export` "
        "[env: CWREAD_FINDER_LORA; 'none' or unset: the base model]."
    ),
]
NumCtxOpt = Annotated[
    int | None, typer.Option(help="Context window in tokens [env: CWREAD_NUM_CTX; default: 8192].")
]
WorkersOpt = Annotated[
    int | None, typer.Option(help="Finder calls at once (default: what the backend serves).")
]
NoCacheFlag = Annotated[bool, typer.Option("--no-cache", help="Bypass the model-call cache.")]
SelfCheckOpt = Annotated[
    bool | None,
    typer.Option(
        "--self-check/--no-self-check",
        help="Force the Interpreter's self-check on or off (default: for claims and risky questions).",
        show_default=False,
    ),
]
TraceOpt = Annotated[str | None, typer.Option("--trace", help="Also write the JSON trace to this file.")]


def _budget(preset, anchors, read, n_e, p_r, p_w, b_c):
    from cwread.segments import make_budget

    return make_budget(preset, anchors=anchors, read=read, n_e=n_e, p_r=p_r, p_w=p_w, b_c=b_c)


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
    "finder": "Finder reading segments",
    "interpreter": "Interpreter answering",
    "self-check": "Interpreter self-checking",
}


@contextmanager
def _progress(quiet: bool = False):
    """A progress callback for the core: a Rich bar on a terminal, one line per stage otherwise."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = _stderr()
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
    question: QuestionArg,
    option: OptionOpt = None,
    preset: PresetOpt = "focused",
    anchors: AnchorsOpt = None,
    read: ReadOpt = None,
    n_e: NEOpt = None,
    p_r: PROpt = None,
    p_w: PWOpt = None,
    b_c: BCOpt = None,
    method: MethodOpt = "fused",
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
    from cwread.trace import find_json

    budget = _budget(preset, anchors, read, n_e, p_r, p_w, b_c)
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


def _run_ask(
    *,
    book,
    question,
    options,
    claim,
    budget,
    method,
    embedder,
    settings,
    no_cache,
    self_check,
    json_out,
    trace_file,
    encoding,
    quiet=False,
):
    """Shared by `ask` and `verify`: run the pipeline, print, return the trace."""
    from cwread import api
    from cwread.trace import ask_json

    if not question.strip():
        raise InputError("the claim is empty" if claim else "the question is empty")
    document = _load(book, encoding)
    if trace_file is not None:
        _check_trace_path(trace_file, book)
    err = _stderr()

    def notice(line: str) -> None:
        if not quiet:
            err.print(f"cwread: {line}", highlight=False)

    with _progress(quiet) as progress:
        trace = api.ask(
            document,
            question,
            options,
            claim=claim,
            budget=budget,
            embedder=embedder,
            method=method,
            backends=settings,
            use_cache=not no_cache,
            self_check=self_check,
            progress=progress,
            notice=notice,
        )
    data = ask_json(trace)
    if trace_file is not None:
        _write_atomic(trace_file, json.dumps(data, ensure_ascii=False, indent=2) + "\n", "--trace")
    if json_out:
        _print_json(data)
    elif not quiet:
        _render_answer(trace)
    if trace.answer is None and not quiet:
        problem = trace.final.problem if trace.final else "no reply"
        err.print(f"cwread: error: no parseable answer after a retry ({problem})", highlight=False)
    return trace


def _check_trace_path(trace_file: str, book: str) -> None:
    from pathlib import Path

    target = Path(trace_file)
    if target.is_dir():
        raise InputError(f"--trace {trace_file} is a directory; give a file name")
    if book != "-" and target.exists() and target.resolve() == Path(book).resolve():
        raise InputError("--trace would overwrite the book itself; give another file name")


def _write_atomic(path: str, text: str, option: str) -> None:
    from pathlib import Path

    from cwread.cache import write_file_atomic

    try:
        write_file_atomic(Path(path), text)
    except OSError as exc:
        raise InputError(f"cannot write {option} {path}: {exc.strerror or exc}") from None


def _settings(backend, finder_model, interpreter_model, gguf, finder_lora, num_ctx, workers):
    from cwread.backends.select import BackendSettings

    for name, value in (("--num-ctx", num_ctx), ("--workers", workers)):
        if value is not None and value <= 0:
            raise InputError(f"{name} must be a positive number")
    return BackendSettings(
        backend=backend,
        finder_model=finder_model,
        interpreter_model=interpreter_model,
        gguf=gguf,
        finder_lora=finder_lora,
        num_ctx=num_ctx,
        workers=workers,
    )


def _render_answer(trace) -> None:
    from rich.panel import Panel
    from rich.text import Text

    out = _stdout()
    doc = trace.document
    head = Text()
    head.append("Answer: ", style="bold")
    answer = trace.answer if trace.answer is not None else "(none)"
    head.append(answer, style="bold green" if trace.answer is not None else "bold red")
    if trace.kind == "mcq" and trace.answer in trace.options:
        head.append(f"  {trace.options[trace.answer]}")
    body = Text()
    body.append_text(head)
    if trace.reason:
        body.append("\n\n")
        body.append(trace.reason)
    title = {"mcq": "multiple choice", "claim": "claim", "open": "question"}[trace.kind]
    out.print(Panel(body, title=f"{title}: {trace.question}", title_align="left", border_style="green"))
    if trace.citations:
        out.print(Text("Cited paragraphs", style="bold"))
        for pid in trace.citations:
            line = Text()
            line.append(f"[{pid}] ", style="bold cyan")
            line.append(doc.paragraph(pid).text)
            out.print(line)
            out.print()
    kept = sum(v.decision == "YES" for v in trace.verdicts)
    tokens = trace.tokens()
    checked = "self-checked" if trace.self_check else "no self-check"
    out.print(
        Text(
            f"Finder kept {kept} of {len(trace.verdicts)} segments; packet {len(trace.packet.items)} "
            f"paragraphs ({', '.join(map(str, trace.packet.ids[:12]))}{'…' if len(trace.packet.items) > 12 else ''})"
            f"{' (fallback: nothing kept)' if trace.packet.fallback else ''}; {checked}; "
            f"{tokens['prompt']} prompt tokens; {trace.timings.get('total', 0):.1f} s",
            style="dim",
        )
    )


@app.command()
def ask(
    book: Book,
    question: QuestionArg,
    option: OptionOpt = None,
    preset: PresetOpt = "focused",
    anchors: AnchorsOpt = None,
    read: ReadOpt = None,
    n_e: NEOpt = None,
    p_r: PROpt = None,
    p_w: PWOpt = None,
    b_c: BCOpt = None,
    method: MethodOpt = "fused",
    embedder: EmbedderOpt = "minilm-static",
    backend: BackendOpt = None,
    finder_model: FinderModelOpt = None,
    interpreter_model: InterpreterModelOpt = None,
    gguf: GgufOpt = None,
    finder_lora: FinderLoraOpt = None,
    num_ctx: NumCtxOpt = None,
    workers: WorkersOpt = None,
    no_cache: NoCacheFlag = False,
    self_check: SelfCheckOpt = None,
    json_out: JsonFlag = False,
    trace: TraceOpt = None,
    encoding: EncodingOpt = None,
    debug: DebugFlag = False,
) -> None:
    """Answer a question about a text, citing the paragraphs it rests on.

    Free-form without options, multiple choice with -o "A=..." -o "B=...". The Finder judges
    the retrieved segments, the kept evidence is packed in story order, and the Interpreter
    answers from that packet only. Exit 4 if no answer could be parsed.
    """
    from cwread import api

    options = api.parse_options(option)
    result = _run_ask(
        book=book,
        question=question,
        options=options,
        claim=False,
        budget=_budget(preset, anchors, read, n_e, p_r, p_w, b_c),
        method=method,
        embedder=embedder,
        settings=_settings(backend, finder_model, interpreter_model, gguf, finder_lora, num_ctx, workers),
        no_cache=no_cache,
        self_check=self_check,
        json_out=json_out,
        trace_file=trace,
        encoding=encoding,
    )
    if result.answer is None:
        raise typer.Exit(4)


@app.command()
def verify(
    book: Book,
    claim: Annotated[str, typer.Argument(help="The claim to check against the text.", show_default=False)],
    preset: PresetOpt = "focused",
    anchors: AnchorsOpt = None,
    read: ReadOpt = None,
    n_e: NEOpt = None,
    p_r: PROpt = None,
    p_w: PWOpt = None,
    b_c: BCOpt = None,
    method: MethodOpt = "fused",
    embedder: EmbedderOpt = "minilm-static",
    backend: BackendOpt = None,
    finder_model: FinderModelOpt = None,
    interpreter_model: InterpreterModelOpt = None,
    gguf: GgufOpt = None,
    finder_lora: FinderLoraOpt = None,
    num_ctx: NumCtxOpt = None,
    workers: WorkersOpt = None,
    no_cache: NoCacheFlag = False,
    self_check: SelfCheckOpt = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print nothing; only the exit code tells.")
    ] = False,
    json_out: JsonFlag = False,
    trace: TraceOpt = None,
    encoding: EncodingOpt = None,
    debug: DebugFlag = False,
) -> None:
    """Judge a claim TRUE or FALSE from the text: exit 0 TRUE, 1 FALSE, 4 undetermined.

    For scripts: `cwread verify book.txt "claim" --quiet && echo supported`.
    """
    result = _run_ask(
        book=book,
        question=claim,
        options=None,
        claim=True,
        budget=_budget(preset, anchors, read, n_e, p_r, p_w, b_c),
        method=method,
        embedder=embedder,
        settings=_settings(backend, finder_model, interpreter_model, gguf, finder_lora, num_ctx, workers),
        no_cache=no_cache,
        self_check=self_check,
        json_out=json_out and not quiet,
        trace_file=trace,
        encoding=encoding,
        quiet=quiet,
    )
    if result.answer is None:
        raise typer.Exit(4)
    raise typer.Exit(0 if result.answer == "TRUE" else 1)


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


@app.command()
def doctor(
    backend: BackendOpt = None,
    finder_model: FinderModelOpt = None,
    interpreter_model: InterpreterModelOpt = None,
    gguf: GgufOpt = None,
    finder_lora: FinderLoraOpt = None,
    json_out: JsonFlag = False,
    debug: DebugFlag = False,
) -> None:
    """Say which backend, models and embedder `ask` would use, and how to get what is missing."""
    from cwread.backends.select import select_backends
    from cwread.cache import cache_root
    from cwread.embedders import DEFAULT_EMBEDDER, static_model_dir

    report: dict = {"cache": str(cache_root())}
    try:
        selection = select_backends(
            _settings(backend, finder_model, interpreter_model, gguf, finder_lora, None, None)
        )
        report["backend"] = {
            "ok": True,
            "finder": f"{selection.finder.name}:{selection.finder.model}",
            "interpreter": f"{selection.interpreter.name}:{selection.interpreter.model}",
            "why": selection.why,
        }
    except ModelError as exc:  # an input error (a bad setting) still exits 2
        report["backend"] = {"ok": False, "error": str(exc)}
    report["embedder"] = {
        "default": DEFAULT_EMBEDDER,
        "built": (static_model_dir() / "manifest.json").is_file(),
        "note": "built on first use (~20 s)",
    }
    if json_out:
        _print_json(report)
    else:
        out = _stdout()
        b = report["backend"]
        if b["ok"]:
            out.print(f"[green]ok[/green] {b['why']}")
        else:
            out.print(f"[red]missing[/red] {b['error']}")
        e = report["embedder"]
        out.print(
            f"{'[green]ok[/green]' if e['built'] else '[yellow]later[/yellow]'} embedder {e['default']}"
            f"{'' if e['built'] else ' (' + e['note'] + ')'}"
        )
        out.print(f"cache {report['cache']}")
    if not report["backend"]["ok"]:
        raise typer.Exit(3)


@app.command("eval")
def eval_command(
    data: Annotated[
        str,
        typer.Argument(help="Benchmark records (JSONL; see ../shared/data/README.md).", show_default=False),
    ],
    method: Annotated[
        list[str] | None,
        typer.Option(
            "--method",
            "-m",
            help="pipeline, no-self-check, no-finder, direct, bm25-rag, dense-rag, closed-book, "
            "finder, retrieval (repeat; default: all that need a model, plus retrieval).",
        ),
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N records.")] = None,
    spread: Annotated[
        bool, typer.Option(help="With --limit: N records evenly spaced through the file, not the first N.")
    ] = False,
    out: Annotated[
        str | None, typer.Option(help="Append a row per record and method to this JSONL file.")
    ] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Skip records already in --out.")] = False,
    report: Annotated[str | None, typer.Option(help="Write a Markdown report here.")] = None,
    permute_options: Annotated[
        bool,
        typer.Option(
            "--permute-options",
            help="Ask each multiple-choice question once per option rotation; right only if all are.",
        ),
    ] = False,
    preset: PresetOpt = "focused",
    anchors: AnchorsOpt = None,
    read: ReadOpt = None,
    n_e: NEOpt = None,
    p_r: PROpt = None,
    p_w: PWOpt = None,
    b_c: BCOpt = None,
    embedder: EmbedderOpt = "minilm-static",
    backend: BackendOpt = None,
    finder_model: FinderModelOpt = None,
    interpreter_model: InterpreterModelOpt = None,
    gguf: GgufOpt = None,
    finder_lora: FinderLoraOpt = None,
    num_ctx: NumCtxOpt = None,
    workers: WorkersOpt = None,
    no_cache: NoCacheFlag = False,
    json_out: JsonFlag = False,
    debug: DebugFlag = False,
) -> None:
    """Run the pipeline and baselines on benchmark records and score them.

    Reports accuracy (mcq, claim), pair accuracy, token-F1 and ROUGE-L (open), evidence
    recall, citation validity, format rate, cost, answer distributions beside constant
    baselines, with 95% intervals. Rows are saved as they finish; Ctrl-C loses nothing.
    """
    from pathlib import Path

    from cwread import evaluate
    from cwread.backends.select import select_backends, with_call_cache

    methods = method or [*evaluate.MODEL_METHODS, "retrieval"]
    for m in methods:
        if m not in evaluate.METHODS:
            raise InputError(f"unknown method {m!r}; choose from: {', '.join(evaluate.METHODS)}")
    if limit is not None and limit <= 0:
        raise InputError("--limit must be a positive number")
    if resume and not out:
        raise InputError("--resume needs --out (the results file to continue)")
    records = evaluate.load_records(data)
    records = evaluate.spread_sample(records, limit) if spread and limit else records[:limit]
    budget = _budget(preset, anchors, read, n_e, p_r, p_w, b_c)
    selection = None
    err = _stderr()
    if any(m != "retrieval" for m in methods):
        selection = select_backends(
            _settings(backend, finder_model, interpreter_model, gguf, finder_lora, num_ctx, workers)
        )
        err.print(f"cwread: {selection.why}", highlight=False)
        if not no_cache:
            selection = with_call_cache(selection)
    ctx = evaluate.EvalContext(selection, budget, embedder, permute_options)
    out_path = Path(out) if out else None
    rows: list[dict] = []
    try:
        with _progress() as progress:
            rows.extend(evaluate.run_eval(records, methods, ctx, out_path, resume, progress))
    except KeyboardInterrupt:
        saved = f"; rows so far are in {out} (continue with --resume)" if out else ""
        print(f"cwread: interrupted{saved}", file=sys.stderr)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    if out_path is not None:
        rows = [r for r in evaluate.read_rows(out_path) if r["method"] in methods]
    summary = evaluate.summarize(rows)
    models = (
        f"finder {selection.finder.name}:{selection.finder.model}, interpreter "
        f"{selection.interpreter.name}:{selection.interpreter.model}"
        if selection
        else "none"
    )
    meta = {
        "data": data,
        "models": models,
        "settings": f"preset {budget.preset} (anchors {budget.anchors}, read {budget.read}, N_E {budget.n_e}, "
        f"P_r {budget.p_r}, P_w {budget.p_w}, B_c {budget.b_c}), embedder {embedder}"
        f"{', permuted options' if permute_options else ''}, {len(records)} records",
    }
    if report:
        _write_atomic(report, evaluate.report_markdown(summary, meta), "--report")
    if json_out:
        _print_json({"version": 1, **meta, **summary})
        return
    _render_eval(summary)


def _render_eval(summary: dict) -> None:
    from rich.table import Table

    def pct(v):
        return "–" if v is None else f"{100 * v:.1f}"

    table = Table(title="cwread eval")
    for col in (
        "method",
        "n",
        "acc %",
        "95% CI",
        "F1 %",
        "evidence recall %",
        "cite valid %",
        "format %",
        "s/rec",
    ):
        table.add_column(col, justify="right" if col != "method" else "left")
    for method, e in summary["methods"].items():
        ci = e.get("accuracy_ci")
        rec = e.get("evidence_recall") or {}
        table.add_row(
            method,
            str(e["records"]),
            pct(e["accuracy"]),
            f"{100 * ci[0]:.0f}–{100 * ci[1]:.0f}" if ci else "–",
            pct(e.get("f1")),
            "/".join(pct(rec.get(k)) for k in ("anchor", "packet") if k in rec) or "–",
            pct(e.get("citation_validity")),
            pct(e.get("format_after_retry")),
            f"{e['seconds_per_record']:.1f}",
        )
    _stdout().print(table)
    for kind, base in summary["baselines"].items():
        _stdout().print(f"baselines ({kind}): " + ", ".join(f"{k} {100 * v:.1f}%" for k, v in base.items()))


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
