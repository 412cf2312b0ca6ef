"""A run's summary (cwread.eval.summary) as tables and as its Markdown report."""

from __future__ import annotations

import os
import platform
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from rich.table import Table
from rich.text import Text

from cwread.eval.summary import RECALL_STAGES, SCORE_TOP_K
from cwread.views.console import stdout
from cwread.views.terminal import printable


def _fmt(value, pct: bool = True) -> str:
    if value is None:
        return "–"
    return f"{100 * value:.1f}" if pct else f"{value:.1f}"


def _ci(ci) -> str:
    return "" if not ci else f" [{100 * ci[0]:.0f}–{100 * ci[1]:.0f}]"


def _recall(e: dict) -> str:
    rec = e.get("evidence_recall") or {}
    return "/".join(_fmt(rec.get(k)) for k in RECALL_STAGES) if rec else "–"


@dataclass(frozen=True)
class Column:
    """One column of the summary table: its header and its cell from a method's entry.
    `brief`: its header in the terminal's narrower table ("": the Markdown report's alone)."""

    header: str
    cell: Callable[[dict], str]
    brief: str = ""


SUMMARY_COLUMNS = (
    Column("n", lambda e: str(e["records"]), brief="n"),
    Column(
        "accuracy % [95% CI]", lambda e: f"{_fmt(e['accuracy'])}{_ci(e.get('accuracy_ci'))}", brief="acc %"
    ),
    Column("pair acc %", lambda e: f"{_fmt(e.get('pair_accuracy'))}{_ci(e.get('pair_accuracy_ci'))}"),
    Column("F1 % [95% CI]", lambda e: f"{_fmt(e.get('f1'))}{_ci(e.get('f1_ci'))}", brief="F1 %"),
    Column("ROUGE-L %", lambda e: _fmt(e.get("rouge_l"))),
    Column("evidence recall % (anchor/read/yes/packet)", _recall, brief="recall % a/r/y/p"),
    Column("citation validity %", lambda e: _fmt(e.get("citation_validity")), brief="cite %"),
    Column("answers citing %", lambda e: _fmt(e.get("cite_share"))),
    Column(
        "format 1st/after retry %",
        lambda e: f"{_fmt(e.get('format_first_try'))}/{_fmt(e.get('format_after_retry'))}",
        brief="format %",
    ),
    Column("Finder calls", lambda e: _fmt(e.get("finder_calls_per_record"), False)),
    Column("prompt tokens", lambda e: _fmt(e.get("prompt_tokens_per_record"), False)),
    Column("s/record", lambda e: _fmt(e.get("seconds_per_record"), False), brief="s/rec"),
    Column("calls from cache %", lambda e: _fmt(e.get("cached_call_share"))),
)


def summary_rows(summary: dict, brief: bool = False) -> tuple[list[str], list[list[str]]]:
    """The summary table, one row per method: (headers, rows); `brief`: the terminal's columns."""
    columns = [c for c in SUMMARY_COLUMNS if c.brief or not brief]
    rows = [[method, *(c.cell(e) for c in columns)] for method, e in summary["methods"].items()]
    return ["method", *(c.brief if brief else c.header for c in columns)], rows


def recall_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    """Evidence recall [95% CI] per method, for all records and by question type and hops:
    (headers, rows); empty rows when no record has gold evidence."""
    stages = [s for s in RECALL_STAGES if s != "yes"]
    headers = ["method", "records", "n", "gold", *(f"{s} % [95% CI]" for s in stages)]
    rows = []
    for method, entry in summary["methods"].items():
        for name, group in (entry.get("evidence_recall_by") or {}).items():
            cells = [f"{_fmt(group.get(s))}{_ci(group.get(f'{s}_ci'))}" for s in stages]
            rows.append([method, name, str(group["records"]), str(group["gold"]), *cells])
    return headers, rows


def baseline_lines(summary: dict) -> list[str]:
    """The constant baselines of each labelled kind (always A, always TRUE, ...)."""
    return [
        f"baselines ({kind}): " + ", ".join(f"{k} {100 * v:.1f}%" for k, v in base.items())
        for kind, base in summary["baselines"].items()
    ]


def report_markdown(summary: dict, meta: dict) -> str:
    """A Markdown report: machine, models, date, the method table with 95% intervals."""
    lines = [
        f"# cwread eval: {meta.get('data', '')}",
        "",
        f"- date: {meta.get('date', datetime.now(UTC).isoformat(timespec='seconds'))}",
        f"- machine: {meta.get('machine', machine_description())}",
        f"- models: {meta.get('models', '')}",
        f"- settings: {meta.get('settings', '')}",
        "",
        "Accuracy with 95% Wilson intervals; F1 with a 95% bootstrap interval. Evidence recall is the",
        "share of gold paragraphs inside anchor segments / segments read / Finder-YES segments / the packet.",
        "Methods run in turn on each record and share the model-call cache: a call another method already",
        "made costs ~0 s, so compare seconds together with the share of calls served from the cache.",
        "",
    ]
    headers, rows = summary_rows(summary)
    lines += ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    headers, rows = recall_rows(summary)
    if rows:
        lines += [
            "",
            "## Evidence recall by question type and hops",
            "",
            "Gold paragraphs inside anchor segments / segments read / the packet, with 95% bootstrap intervals",
            "(records resampled whole). An open question's type is its first question word; claims and",
            "multiple choice are their kind. Hops 2: the answer ties paragraphs far apart.",
            "",
            "| " + " | ".join(headers) + " |",
            "|" + "---|" * len(headers),
        ]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
    grounded = {m: e["grounding"] for m, e in summary["methods"].items() if e.get("grounding")}
    if grounded:
        lines += [
            "",
            "## Grounding",
            "",
            "Quote fidelity: shown quotes found verbatim in the book (must be 100%); dropped: quotes not in",
            "their paragraph, per record (never shown); cited gold: cited paragraphs that are gold evidence;",
            "supported: readable answers their quotes back; abstained: answers withheld as not determined from",
            "the text; claim pairs consistent: a claim and its negation given different labels.",
            "",
            "| method | quote fidelity % | dropped/record | cited gold % | supported % | abstained % "
            "| claim pairs consistent % |",
            "|---|---|---|---|---|---|---|",
        ]
        for method, g in grounded.items():
            lines.append(
                f"| {method} | {_fmt(g['quote_fidelity'])} | {_fmt(g['quotes_dropped_per_record'], False)} "
                f"| {_fmt(g['cited_gold_precision'])} | {_fmt(g['supported_rate'])} | {_fmt(g['abstention_rate'])} "
                f"| {_fmt(g['claim_pair_consistency'])} (n={g['claim_pairs']}) |"
            )
    finders = {m: e["finder"] for m, e in summary["methods"].items() if e.get("finder")}
    if finders:
        lines += [
            "",
            "## The Finder against gold evidence (segments the pipeline reads)",
            "",
            "YES-recall: segments holding a gold paragraph that the Finder kept; precision: kept segments",
            "holding one; NO on non-gold: segments without gold it dropped; cited gold: cited ids that are gold;",
            "unparsed: replies unreadable after a retry, kept as YES (recall first) and counted in the above.",
            "Rank baseline: the retriever's own top-k of the same segments, k = the Finder's YES count per",
            "record (the same keep rate); gold kept − rank: segments with gold the Finder kept beyond it,",
            "summed over records, with a 95% bootstrap interval. The Finder earns its calls only above 0.",
            "",
            "| method | segments | with gold | YES-recall % | precision % | NO on non-gold % | keep rate % "
            "| cited gold % | format 1st try % | unparsed % | rank YES-recall % | rank precision % "
            "| gold kept − rank |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for method, f in finders.items():
            low, high = f.get("gold_kept_minus_rank_ci") or (None, None)
            interval = f" [{low:+.0f}, {high:+.0f}]" if low is not None else ""
            lines.append(
                f"| {method} | {f['segments']} | {f['segments_with_gold']} | {_fmt(f['yes_recall'])} "
                f"| {_fmt(f['precision'])} | {_fmt(f['no_on_non_gold'])} | {_fmt(f['keep_rate'])} "
                f"| {_fmt(f['cited_gold_share'])} | {_fmt(f['format_first_try'])} | {_fmt(f['kept_unparsed'])} "
                f"| {_fmt(f.get('rank_yes_recall'))} | {_fmt(f.get('rank_precision'))} "
                f"| {f.get('gold_kept_minus_rank', 0):+d}{interval} |"
            )
        ranked = {m: f["score_ranking"] for m, f in finders.items() if f.get("score_ranking")}
        if ranked:
            lines += [
                "",
                "The Finder's score (ln P(YES) - ln P(NO) at its answer) as a ranking, whatever its YES/NO",
                "bias: gold segments among each record's top k by score against the retriever's top k, summed,",
                "with the paired difference's 95% bootstrap interval. Above 0 the score knows more than retrieval.",
                "",
                "| method | records | with gold | "
                + " | ".join(f"top {k}: score / rank / diff" for k in SCORE_TOP_K)
                + " |",
                "|---|---|---|" + "---|" * len(SCORE_TOP_K),
            ]
            for method, sr in ranked.items():
                cells = []
                for k in SCORE_TOP_K:
                    t = sr[f"top{k}"]
                    low, high = t["ci"] or (None, None)
                    interval = f" [{low:+.0f}, {high:+.0f}]" if low is not None else ""
                    cells.append(
                        f"{t['score_gold']} / {t['rank_gold']} / {t['score_gold'] - t['rank_gold']:+d}{interval}"
                    )
                lines.append(
                    f"| {method} | {sr['records']} | {sr['with_gold']} | " + " | ".join(cells) + " |"
                )
    if summary.get("paired"):
        lines += [
            "",
            "## The pipeline against each method, paired",
            "",
            "On the records both scored: accuracy (options, claims) or token-F1 (open questions), and the",
            "pipeline's lead with a 95% paired bootstrap interval, in points. An interval holding 0 is no",
            "difference.",
            "",
            "| method | records | pipeline % | method % | pipeline − method, points [95% CI] |",
            "|---|---|---|---|---|",
        ]
        for method, p in summary["paired"].items():
            low, high = p["difference_ci"]
            lines.append(
                f"| {method} | {p['records']} | {_fmt(p['pipeline'])} | {_fmt(p['method'])} "
                f"| {100 * p['difference']:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}] |"
            )
    dists = {
        m: e["answer_distribution"] for m, e in summary["methods"].items() if e.get("answer_distribution")
    }
    if dists or summary["baselines"]:
        lines += ["", "## Answer distributions and constant baselines", ""]
        for method, dist in dists.items():
            lines.append(f"- {method}: " + ", ".join(f"{k} {v}" for k, v in dist.items()))
        lines += [f"- {line}" for line in baseline_lines(summary)]
    return "\n".join(lines) + "\n"


def machine_description() -> str:
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )


def eval_view(summary: dict) -> None:
    """The eval summary as a table (the Markdown report's brief columns), evidence recall with
    intervals by question type and hops where records have gold evidence, then the baselines."""
    out = stdout()
    out.print(_table("cwread eval", *summary_rows(summary, brief=True)))
    headers, rows = recall_rows(summary)
    if rows:
        out.print(_table("evidence recall by question type and hops", headers, rows))
    for line in baseline_lines(summary):
        out.print(Text(line))


def _table(title: str, headers: list[str], rows: list[list[str]]) -> Table:
    table = Table(title=title)
    for header in headers:
        table.add_column(
            header, justify="left" if header in ("method", "records") else "right", overflow="fold"
        )
    for row in rows:
        table.add_row(*(printable(cell) for cell in row))
    return table
