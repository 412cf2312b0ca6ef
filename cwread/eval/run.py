"""A run of `cwread eval`: records × methods → rows appended to a JSONL file as each finishes,
so an interrupted run loses nothing scored and `--resume` continues it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from cwread import api
from cwread.backends import label
from cwread.backends.select import select
from cwread.errors import InputError, Interrupted
from cwread.eval import rows
from cwread.eval.dataset import Record, load_records, rotations, spread_sample
from cwread.eval.methods import METHODS, EvalContext, with_question
from cwread.eval.report import report_markdown
from cwread.eval.summary import summarize
from cwread.progress import Progress
from cwread.records.plan import AUTO, AnswerMode, FinderUse
from cwread.records.question import QuestionKind
from cwread.run import planning
from cwread.settings import EVAL_READ_TOKENS, AnswerSettings, FinderSettings, RunSettings, Settings
from cwread.views.output_files import check_output_path, write_output_file


def run_record(record: Record, method: str, ctx: EvalContext) -> dict:
    """One record through one method: a JSON-ready row of what happened and its scores."""
    t0 = time.perf_counter()
    chosen = METHODS[method]
    found = ctx.find(record)
    question = record.question
    row = rows.base_fields(record, method)
    if chosen.answers and question.kind == QuestionKind.MCQ and ctx.permute_options:
        traces, answers = [], []
        for shown, back in rotations(question.options):
            trace = chosen.run(ctx, record, with_question(found, replace(question, options=shown)))
            traces.append(trace)
            answers.append(back.get(trace.answer) if trace.answer else None)
        row.update(rows.rotated_fields(record, found, traces, answers))
    else:
        row.update(chosen.fields(record, found, chosen.run(ctx, record, found)))
    row["seconds"] = round(time.perf_counter() - t0, 3)
    return row


def done_keys(out: Path) -> set[tuple[str, str]]:
    """(record id, method) pairs already in a results file (a torn last line is ignored)."""
    keys = set()
    if out.is_file():
        for line in out.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
                keys.add((row["id"], row["method"]))
            except (json.JSONDecodeError, KeyError, TypeError):
                continue
    return keys


def run_eval(
    records: list[Record],
    methods: list[str],
    ctx: EvalContext,
    out: Path | None = None,
    resume: bool = False,
    progress: Progress | None = None,
) -> Iterator[dict]:
    """Yield a row per (record, method), appending each to `out` as soon as it is scored."""
    skip = done_keys(out) if (out and resume) else set()
    if out and not resume and out.exists():
        raise InputError(f"{out} exists: pass --resume to continue it, or choose another --out")
    todo = [(r, m) for r in records for m in methods if (r.id, m) not in skip]
    handle = open(out, "a", encoding="utf-8") if out else None  # noqa: SIM115 (kept open across yields)
    if handle and not _ends_with_newline(out):
        handle.write("\n")  # a torn last line from a killed run must not swallow the next row
    try:
        for i, (record, method) in enumerate(todo, start=1):
            if progress:
                progress(f"eval {method}", i - 1, len(todo))
            row = run_record(record, method, ctx)
            if handle:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
                handle.flush()
            yield row
        if progress:
            progress("eval", len(todo), len(todo))
    finally:
        if handle:
            handle.close()


def _ends_with_newline(path: Path) -> bool:
    if path.stat().st_size == 0:
        return True
    with open(path, "rb") as f:
        f.seek(-1, 2)
        return f.read(1) == b"\n"


def read_rows(out: Path) -> list[dict]:
    rows_read = []
    for line in out.read_text(encoding="utf-8").splitlines():
        try:
            rows_read.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows_read


EVAL_SETTINGS = Settings(run=RunSettings(finding=FinderSettings(read_tokens=EVAL_READ_TOKENS)))


@dataclass(frozen=True)
class EvalOptions:
    """What `cwread eval` was asked to do (see its help)."""

    data: str
    methods: tuple[str, ...] = ()  # empty: every method
    limit: int | None = None
    spread: bool = False
    out: str | None = None
    resume: bool = False
    report: str | None = None
    permute_options: bool = False
    # the settings tree: the session's (the dense model, the backends, the call cache) and the
    # run's (the budget, how the Finder reads: by default with no token cap, EVAL_READ_TOKENS;
    # open questions' answer mode and the support thresholds; each method adds its own
    # self-check and judges every label)
    settings: Settings = field(default_factory=lambda: EVAL_SETTINGS)


def _support_settings(answering: AnswerSettings) -> str:
    """The support check's thresholds as asked, for the report's header (none: the words decide)."""
    support, confidence = answering.support_threshold, answering.confidence_threshold
    return (f", support threshold {support:g}" if support is not None else "") + (
        f", min confidence {confidence:g}" if confidence is not None else ""
    )


@dataclass(frozen=True)
class EvalResult:
    meta: dict  # data, models, settings: what the report's header says
    summary: dict  # see `summarize`


def evaluate(
    options: EvalOptions, progress: Progress | None = None, notice: Callable[[str], None] | None = None
) -> EvalResult:
    """Run every (record, method), save rows and the report as asked, and summarise."""
    methods = list(options.methods) or list(METHODS)
    for m in methods:
        if m not in METHODS:
            raise InputError(f"unknown method {m!r}; choose from: {', '.join(METHODS)}")
    if options.limit is not None and options.limit <= 0:
        raise InputError("--limit must be a positive number")
    if options.resume and not options.out:
        raise InputError("--resume needs --out (the results file to continue)")
    for path, flag in ((options.out, "--out"), (options.report, "--report")):
        if path is not None:  # before any work: a finished run's summary is never lost
            check_output_path(path, flag, replaces=flag == "--report")  # --out is only added to (--resume)
    records = load_records(options.data)
    limit = options.limit
    records = spread_sample(records, limit) if options.spread and limit else records[:limit]
    session, run = options.settings.session, options.settings.run
    budget = run.budget or api.make_budget()
    selection = None
    if any(METHODS[m].needs_model for m in methods):
        selection = select(session.backends, session.use_cache, notice)
    finding = run.finding
    # open answers are given as `ask` gives them: each plan resolves "auto" for its question and
    # book (a novel's passages on a model too small to read; cwread.run.planning.plan_run)
    answering = run.answering if selection else replace(run.answering, answer_mode=AnswerMode.GENERATIVE)
    mode = planning.open_answer_mode(answering, selection.interpreter) if selection else AnswerMode.GENERATIVE
    ctx = EvalContext(selection, budget, session.embedder, options.permute_options, answering, finding)
    out_path = Path(options.out) if options.out else None
    done: list[dict] = []
    try:
        done.extend(run_eval(records, methods, ctx, out_path, options.resume, progress))
    except KeyboardInterrupt:
        saved = f"; rows so far are in {options.out} (continue with --resume)" if options.out else ""
        raise Interrupted(f"interrupted{saved}") from None
    if out_path is not None:
        done = [r for r in read_rows(out_path) if r["method"] in methods]
    summary = summarize(done)
    models = f"finder {label(selection.finder)}, interpreter {label(selection.interpreter)}" if selection else "none"
    meta = {
        "data": options.data,
        "models": models,
        "settings": f"preset {budget.preset} (anchors {budget.anchors}, read {budget.read}, N_E {budget.n_e}, "
        f"P_r {budget.p_r}, P_w {budget.p_w}, B_c {budget.b_c}"
        f"{'' if finding.keep_threshold is None else f', keep threshold {finding.keep_threshold:g}'}"
        f"{'' if finding.read_tokens is None else f', read tokens {finding.read_tokens}'}"
        f"{'' if finding.reply == AUTO else f', Finder reply {finding.reply}'}"
        f"{'' if finding.use == FinderUse.AUTO else f', Finder {finding.use}'}), "
        f"embedder {session.embedder}"
        f"{', permuted options' if options.permute_options else ''}, {mode} open answers"
        f"{' (passages on a novel)' if mode == AnswerMode.EXTRACTIVE and answering.answer_mode == AUTO else ''}"
        f"{_support_settings(run.answering)}, {len(records)} records",
    }
    if options.report:
        write_output_file(options.report, report_markdown(summary, meta), "--report")
    return EvalResult(meta, summary)
