"""The summary of a run's rows (per method, with 95% intervals) and its Markdown report."""

from __future__ import annotations

import os
import platform
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from cwread import metrics


def paired_interval(differences: list[int]) -> tuple[float, float] | None:
    """95% bootstrap interval of the sum of per-record differences."""
    if not differences:
        return None
    low, high = metrics.bootstrap_interval([float(d) for d in differences])
    return low * len(differences), high * len(differences)


_NO_ANSWER = ("retrieval", "finder")  # methods that give no answer


def _ratio(num: int, den: int) -> float | None:
    return None if den == 0 else num / den


RECALL_STAGES = ("anchor", "read", "yes", "packet")


def recall_breakdown(group: list[dict]) -> dict:
    """Evidence recall per stage with a 95% interval (records resampled), for all records with
    gold evidence, then by question type and by hops: {"all" | "type why" | "hops 2": {...}}."""
    with_gold = [r for r in group if r.get("evidence_gold")]
    groups: dict[str, list[dict]] = {"all": with_gold}
    for r in with_gold:
        groups.setdefault(f"type {r.get('question_type', 'other')}", []).append(r)
    for r in with_gold:
        groups.setdefault(f"hops {r.get('hops', 1)}", []).append(r)
    out = {}
    for name, rows in groups.items():
        entry: dict = {"records": len(rows), "gold": sum(r["evidence_gold"] for r in rows)}
        for stage in RECALL_STAGES:
            if any(f"evidence_{stage}_hits" in r for r in rows):
                pairs = [(r.get(f"evidence_{stage}_hits", 0), r["evidence_gold"]) for r in rows]
                entry[stage] = _ratio(sum(h for h, _ in pairs), entry["gold"])
                entry[f"{stage}_ci"] = metrics.ratio_interval(pairs)
        out[name] = entry
    return out


def summarize(rows: list[dict]) -> dict:
    """Per-method metrics with 95% intervals, answer distributions and constant baselines."""
    by_method: dict[str, list[dict]] = {}
    for row in rows:
        by_method.setdefault(row["method"], []).append(row)
    summary: dict = {"methods": {}, "baselines": {}}
    for method, group in by_method.items():
        scored = [r for r in group if r.get("correct") is not None]
        right = sum(bool(r["correct"]) for r in scored)
        opens = [r for r in group if r["kind"] == "open" and "f1" in r]
        answered = [r for r in group if r.get("parsed")]
        cited_ids = sum(len(r.get("citations", [])) + len(r.get("invalid_citations", [])) for r in group)
        valid_ids = sum(len(r.get("citations", [])) for r in group)
        gold = sum(r.get("evidence_gold", 0) for r in group)
        entry = {
            "records": len(group),
            "accuracy": _ratio(right, len(scored)),
            "accuracy_ci": metrics.wilson_interval(right, len(scored)) if scored else None,
            "scored": len(scored),
        }
        pairs_right, pairs = metrics.pair_accuracy(group)
        if pairs:
            entry["pair_accuracy"] = pairs_right / pairs
            entry["pair_accuracy_ci"] = metrics.wilson_interval(pairs_right, pairs)
            entry["pairs"] = pairs
        if opens:
            f1s = [r["f1"] for r in opens]
            entry["f1"] = sum(f1s) / len(f1s)
            entry["f1_ci"] = metrics.bootstrap_interval(f1s)
            entry["rouge_l"] = sum(r["rouge_l"] for r in opens) / len(opens)
        if gold:
            entry["evidence_recall"] = {
                stage: _ratio(sum(r.get(f"evidence_{stage}_hits", 0) for r in group), gold)
                for stage in RECALL_STAGES
                if any(f"evidence_{stage}_hits" in r for r in group)
            }
            entry["evidence_recall_by"] = recall_breakdown(group)
        if method not in _NO_ANSWER:
            entry["citation_validity"] = _ratio(valid_ids, cited_ids)
            entry["cite_share"] = _ratio(sum(bool(r.get("citations")) for r in answered), len(answered))
            entry["format_first_try"] = _ratio(
                sum(bool(r.get("parsed_first_try")) for r in group), len(group)
            )
            entry["format_after_retry"] = _ratio(len(answered), len(group))
            calls = sum(r.get("finder_calls", 0) for r in group)
            entry["finder_format_first_try"] = _ratio(
                sum(r.get("finder_parsed_first_try", 0) for r in group), calls
            )
            entry["grounding"] = _grounding(group, answered)
            labelled = [r for r in group if r["kind"] in ("mcq", "claim")]
            entry["answer_distribution"] = metrics.answer_distribution([r.get("answer") for r in labelled])
        if method != "retrieval":
            entry["finder_calls_per_record"] = sum(r.get("finder_calls", 0) for r in group) / len(group)
            entry["prompt_tokens_per_record"] = sum(r.get("prompt_tokens", 0) for r in group) / len(group)
        if method == "finder":
            judged = sum(r.get("finder_calls", 0) for r in group)
            labelled = [r for r in group if "segments_gold" in r]  # records with gold evidence
            judged_l = sum(r["finder_calls"] for r in labelled)
            kept = sum(r["finder_yes"] for r in labelled)
            with_gold = sum(r["segments_gold"] for r in labelled)
            kept_gold = sum(r["yes_gold"] for r in labelled)
            rank_gold = sum(r.get("rank_yes_gold", 0) for r in labelled)
            entry["finder"] = {
                "segments": judged,
                "segments_with_gold": with_gold,
                "yes_recall": _ratio(kept_gold, with_gold),
                "precision": _ratio(kept_gold, kept),
                "no_on_non_gold": _ratio(judged_l - with_gold - (kept - kept_gold), judged_l - with_gold),
                "keep_rate": _ratio(sum(r.get("finder_yes", 0) for r in group), judged),
                "cited_gold_share": _ratio(
                    sum(r.get("finder_cited_gold", 0) for r in group),
                    sum(r.get("finder_cited", 0) for r in group),
                ),
                "format_first_try": _ratio(sum(r.get("finder_parsed_first_try", 0) for r in group), judged),
                "kept_unparsed": _ratio(sum(r.get("finder_kept_unparsed", 0) for r in group), judged),
                "rank_yes_recall": _ratio(rank_gold, with_gold),
                "rank_precision": _ratio(rank_gold, kept),
                "gold_kept_minus_rank": kept_gold - rank_gold,
                "gold_kept_minus_rank_ci": paired_interval(
                    [r["yes_gold"] - r.get("rank_yes_gold", 0) for r in labelled]
                ),
                "score_ranking": _score_ranking(labelled),
            }
        entry["seconds_per_record"] = sum(r.get("seconds", 0) for r in group) / len(group)
        calls = sum(r.get("model_calls", 0) for r in group)
        if calls:
            entry["cached_call_share"] = sum(r.get("cached_calls", 0) for r in group) / calls
        summary["methods"][method] = entry
    summary["paired"] = _paired_with_pipeline(by_method)
    any_group = next(iter(by_method.values()), [])
    for kind in ("mcq", "claim"):
        golds = [str(r["gold"]).upper() for r in any_group if r["kind"] == kind and r.get("gold")]
        if golds:
            summary["baselines"][kind] = metrics.constant_baselines(golds)
    return summary


PAIRED_BASE = "pipeline"


def record_score(row: dict) -> float | None:
    """A record's score for paired comparison: 1/0 for a labelled answer, token-F1 for an open one."""
    if row["kind"] == "open":
        return row.get("f1")
    return None if row.get("correct") is None else float(bool(row["correct"]))


def _paired_with_pipeline(by_method: dict[str, list[dict]]) -> dict:
    """Each answering method against the pipeline on the records both scored: the pipeline's
    mean score, the method's, and their difference with a 95% paired bootstrap interval (the
    per-method intervals overlap far more than a paired difference does)."""
    base = {r["id"]: record_score(r) for r in by_method.get(PAIRED_BASE, [])}
    out = {}
    for method, group in by_method.items():
        if method in (PAIRED_BASE, *_NO_ANSWER):
            continue
        scores = {r["id"]: record_score(r) for r in group}  # a record run twice: its last row
        pairs = [
            (base[i], score) for i, score in scores.items() if score is not None and base.get(i) is not None
        ]
        if not pairs:
            continue
        n = len(pairs)
        differences = [a - b for a, b in pairs]
        out[method] = {
            "records": n,
            "pipeline": sum(a for a, _ in pairs) / n,
            "method": sum(b for _, b in pairs) / n,
            "difference": sum(differences) / n,
            "difference_ci": metrics.bootstrap_interval(differences),
        }
    return out


SCORE_TOP_K = (1, 2, 3)


def _score_ranking(labelled: list[dict]) -> dict:
    """The Finder's score used as a ranking, whatever its YES/NO bias: per record, the gold
    segments among the top k by score (ties in reading order) against the retriever's top k,
    for a few k. Only records whose every verdict has a score; {} when none has."""
    scored = [
        r
        for r in labelled
        if r.get("finder_scores") and all(s is not None for s in r["finder_scores"]) and r.get("segment_gold")
    ]
    if not scored:
        return {}
    out = {"records": len(scored), "with_gold": sum(sum(r["segment_gold"]) for r in scored)}
    # each record's segments by score, best first, reading order on ties
    orders = [
        sorted(range(len(r["finder_scores"])), key=lambda i, r=r: (-r["finder_scores"][i], i)) for r in scored
    ]
    for k in SCORE_TOP_K:
        by_score = [
            sum(r["segment_gold"][i] for i in order[:k]) for r, order in zip(scored, orders, strict=True)
        ]
        by_rank = [sum(r["segment_gold"][:k]) for r in scored]
        out[f"top{k}"] = {
            "score_gold": sum(by_score),
            "rank_gold": sum(by_rank),
            "ci": paired_interval([a - b for a, b in zip(by_score, by_rank, strict=True)]),
        }
    return out


def _grounding(group: list[dict], answered: list[dict]) -> dict:
    """Quote fidelity (shown quotes found verbatim in the book), quotes dropped as not in the
    book, cited-gold precision, supported-answer and abstention rates, claim-pair consistency."""
    with_gold = [r for r in group if "cited_gold" in r]
    pairs: dict = {}
    for r in group:
        if r["kind"] == "claim" and r.get("pair") is not None:
            pairs.setdefault(r["pair"], []).append(r.get("answer"))
    complete = [a for a in pairs.values() if len(a) == 2]
    return {
        "quote_fidelity": _ratio(
            sum(r.get("quotes_verbatim", 0) for r in group), sum(r.get("quotes_shown", 0) for r in group)
        ),
        "quotes_dropped_per_record": sum(r.get("quotes_dropped", 0) for r in group) / len(group),
        "cited_gold_precision": _ratio(
            sum(r["cited_gold"] for r in with_gold), sum(r.get("cited", 0) for r in with_gold)
        ),
        "supported_rate": _ratio(sum(bool(r.get("supported")) for r in answered), len(answered)),
        "abstention_rate": _ratio(sum(bool(r.get("abstained")) for r in group), len(group)),
        "claim_pair_consistency": _ratio(
            sum(a[0] is not None and a[1] is not None and a[0] != a[1] for a in complete), len(complete)
        ),
        "claim_pairs": len(complete),
    }


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
