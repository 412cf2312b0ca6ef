"""The GPU lane's one-page summary (SUMMARY.md), from whatever its phases have written so far:
each call collects a fresh one, so a lane cut at any minute still says what it finished.

For each phase (a base model): how far training went and how far it moved the weights, then
the decision that matters, on each dev set (fairytale dev, every segment the pipeline reads;
the dev novel, a question's first segments): among each record's top 1 and 2, does the
trained Finder hold more gold than the untrained one and than the retriever's own ranking?
It ships where it does on the novel (where the retriever's anchors hold a third of the gold),
each paired interval above 0, and does not lose on fairytale.

    python -m benchmarks.lane_summary --lane DIR      (the lane's state folder on the device)
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import time
from pathlib import Path

from cwread.eval.summary import paired_interval

TOP_K = (1, 2, 4, 8)
PHASE_MODELS = {"a": "SmolLM2-135M-Instruct (the embedded default)", "b": "Qwen2.5-Coder-1.5B-Instruct"}


def _read_json(path: Path, default=None):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default


def _jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def machine() -> str:
    try:
        gpus = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        gpus = ""
    return (gpus.strip().splitlines() or ["no GPU (nvidia-smi answered nothing)"])[0]


def _interval(ci) -> str:
    return f" [{ci[0]:+.0f}, {ci[1]:+.0f}]" if ci else ""


def gold_in_top(gold: list[bool], scores: list[float] | None, k: int) -> int:
    """Gold segments among the top k: by score (reading order on ties), or, without scores,
    the first k in reading order (the retriever's ranking)."""
    order = range(len(gold)) if scores is None else sorted(range(len(gold)), key=lambda i: (-scores[i], i))
    return sum(gold[i] for i in list(order)[:k])


def compare_at_keep_rate(rows: list[dict], threshold: float) -> dict:
    """The trained Finder keeps the segments scoring at least `threshold`; on each record the
    untrained Finder and the retriever keep as many (their top k by score, by rank). Gold
    kept by each, and the paired differences with 95% bootstrap intervals of their sums."""
    kept = [sum(s >= threshold for s in r["trained"]) for r in rows]
    trained = [sum(g for g, s in zip(r["gold"], r["trained"], strict=True) if s >= threshold) for r in rows]
    untrained = [gold_in_top(r["gold"], r["base"], k) for r, k in zip(rows, kept, strict=True)]
    rank = [gold_in_top(r["gold"], None, k) for r, k in zip(rows, kept, strict=True)]
    segments = sum(len(r["gold"]) for r in rows)
    return {
        "records": len(rows),
        "segments": segments,
        "gold_segments": sum(sum(r["gold"]) for r in rows),
        "kept": sum(kept),
        "keep_rate": sum(kept) / segments if segments else None,
        **_paired(trained, untrained, rank),
    }


def _paired(trained: list[int], untrained: list[int], rank: list[int]) -> dict:
    """Gold kept per record by each, summed, and the trained Finder's paired differences from
    the other two with 95% bootstrap intervals of their sums."""
    minus_untrained = [t - u for t, u in zip(trained, untrained, strict=True)]
    minus_rank = [t - r for t, r in zip(trained, rank, strict=True)]
    return {
        "trained": sum(trained),
        "untrained": sum(untrained),
        "rank": sum(rank),
        "minus_untrained": sum(minus_untrained),
        "minus_untrained_ci": paired_interval(minus_untrained),
        "minus_rank": sum(minus_rank),
        "minus_rank_ci": paired_interval(minus_rank),
    }


VERDICT_K = (1, 2)  # a trained Finder is judged on the segments it would put first


def compare_at_k(rows: list[dict], k: int) -> dict:
    """Gold among each record's top k by the trained Finder's score, the untrained one's and
    the retriever's rank, with the paired differences' 95% bootstrap intervals of their sums."""
    trained = [gold_in_top(r["gold"], r["trained"], k) for r in rows]
    untrained = [gold_in_top(r["gold"], r["base"], k) for r in rows]
    rank = [gold_in_top(r["gold"], None, k) for r in rows]
    return {"k": k, **_paired(trained, untrained, rank)}


DEV_SETS = {"novelqa": "the dev novel", "fairytale": "fairytale dev"}


def by_set(rows: list[dict]) -> dict[str, list[dict]]:
    """Score rows by dev set (rows of a kit from before the novel was added are fairytale's)."""
    sets: dict[str, list[dict]] = {}
    for row in rows:
        sets.setdefault(row.get("set", "fairytale"), []).append(row)
    return sets


def ships_at_k(rows: list[dict]) -> tuple[bool, list[str]]:
    """A trained Finder ships where, at k = 1 or 2, it puts more gold first than both the
    untrained Finder and the retriever's ranking, each paired interval above 0, on the dev
    novel (or, for a kit without it, on fairytale), and at that k does not lose on fairytale
    (neither interval wholly below 0): a verdict on the Finder's ranking where a Finder can
    win, not on where a keep threshold happens to fall."""
    sets = by_set(rows)
    judged = "novelqa" if "novelqa" in sets else "fairytale"
    reasons = []
    for k in VERDICT_K:
        ok, why = ships(compare_at_k(sets.get(judged, []), k))
        if ok and judged != "fairytale" and "fairytale" in sets:
            fairytale = compare_at_k(sets["fairytale"], k)
            lost = [
                what
                for key, what in (("minus_untrained", "the untrained Finder"), ("minus_rank", "the retriever's ranking"))
                if fairytale[f"{key}_ci"] and fairytale[f"{key}_ci"][1] < 0
            ]
            if lost:
                ok, why = False, [f"it loses to {' and '.join(lost)} on fairytale dev"]
        if ok:
            return True, []
        reasons.append(f"at k = {k} on {DEV_SETS.get(judged, judged)}, " + "; ".join(why))
    return False, reasons


def ships(comparison: dict) -> tuple[bool, list[str]]:
    """A trained Finder ships only if, at its own keep rate, it keeps more gold than both the
    untrained Finder and the retriever's ranking, each interval above 0."""
    reasons = []
    for key, what in (("minus_untrained", "the untrained Finder"), ("minus_rank", "the retriever's ranking")):
        ci = comparison.get(f"{key}_ci")
        if not ci or ci[0] <= 0:
            reasons.append(f"its gold kept over {what}'s is {comparison[key]:+d}{_interval(ci)}, not above 0")
    return not reasons, reasons


def training_lines(out: Path, report: dict) -> list[str]:
    steps = _jsonl(out / "metrics.jsonl")
    lines = []
    done = report.get("training")
    if steps:
        span = max(1, min(20, len(steps) // 2))
        head, tail = steps[:span], steps[-span:]
        mean = lambda entries, key: sum(e[key] for e in entries) / len(entries)  # noqa: E731
        lines.append(
            f"- Training: {steps[-1]['examples']} examples in {steps[-1]['step']} steps, {steps[-1]['seconds']:.0f} s"
            + (f" (stopped by {done['stopped_by']}; {done['rows']} rows)" if done else " (in progress)")
            + f"; loss {mean(head, 'loss'):.3f} (first {len(head)} steps) -> {mean(tail, 'loss'):.3f} (last {len(tail)}),"
            f" accuracy {mean(head, 'accuracy'):.1%} -> {mean(tail, 'accuracy'):.1%}."
        )
        peak = next((e["peak_memory_gib"] for e in steps if e.get("peak_memory_gib") is not None), None)
        if peak is not None or (done and done.get("oom_halvings")):
            lines.append(
                f"- Memory: {peak if peak is not None else '?'} GiB at the peak of the first minute"
                + (
                    f"; the batch halved {done['oom_halvings']} time(s) on running out, to {done['batch_tokens']} tokens"
                    if done and done.get("oom_halvings")
                    else ""
                )
                + "."
            )
    elif report:
        lines.append("- Training: no step logged yet.")
    movement = report.get("movement")
    if movement and movement.get("matrices"):
        lines.append(
            f"- How far the LoRA moved the weights: ||dW|| / ||W|| {movement['mean_relative']:.2e} on average over "
            f"{movement['matrices']} matrices (at most {movement['max_relative']:.2e}); the largest change of one "
            f"weight {movement['largest_weight_change']:.2e}."
        )
    if report.get("base_auc") is not None:
        trained = report.get("trained_auc")
        lines.append(
            f"- Held-out training rows ({report.get('held_out_rows')}, half gold): AUC of the score {report['base_auc']:.3f} untrained"
            + (f" -> {trained:.3f} trained" if trained is not None else "")
            + "."
        )
    threshold = report.get("keep_threshold")
    if threshold and threshold.get("trained") is not None:
        lines.append(
            f"- Keep threshold (the score that keeps {threshold['recall_target']:.0%} of the held-out gold rows): "
            f"{threshold['trained']:+.3f}."
        )
    return lines


def finder_lines(out: Path, report: dict) -> tuple[list[str], dict | None]:
    """Each dev set's table of gold among the top k, and where the trained Finder is scored,
    its keep threshold's comparison at the same keep rate (returned: fairytale's, or the
    first set's)."""
    rows = _jsonl(out / "scores.jsonl")
    if not rows:
        return ["- The dev segments are not scored yet."], None
    not_scored = "The trained Finder is not scored yet."
    broken = sum(1 for r in rows if not all(math.isfinite(s) for s in r.get("trained", [])))
    if broken:  # a diverged training's NaNs would sort like the retriever's rank: no measurement
        rows = [{k: v for k, v in r.items() if k != "trained"} for r in rows]
        not_scored = f"The trained Finder's scores are not finite on {broken} of {len(rows)} records: left out, they measure nothing."
    lines: list[str] = []
    comparisons: dict[str, dict] = {}
    for name, part in sorted(by_set(rows).items(), key=lambda kv: kv[0] != "fairytale"):
        more, comparison = _set_lines(name, part, report)
        lines += more
        if comparison is not None:
            comparisons[name] = comparison
    if not comparisons:
        return [*lines, "", not_scored], None
    return lines, comparisons.get("fairytale") or next(iter(comparisons.values()))


def _set_lines(name: str, rows: list[dict], report: dict) -> tuple[list[str], dict | None]:
    segments = sum(len(r["gold"]) for r in rows)
    what = "every segment the pipeline reads" if name == "fairytale" else "a question's first segments in reading order"
    lines = [
        "",
        f"{DEV_SETS.get(name, name).capitalize()}: {len(rows)} records, {segments} segments ({what}), "
        f"{sum(sum(r['gold']) for r in rows)} holding gold. Gold kept among each record's top k:",
        "",
    ]
    scored = "trained" in rows[0]
    if scored:
        lines += ["| k | trained | untrained | rank | trained - untrained [95%] | trained - rank [95%] |", "|---|---|---|---|---|---|"]
    else:
        lines += ["| k | untrained | rank |", "|---|---|---|"]
    for k in TOP_K:
        if scored:
            c = compare_at_k(rows, k)
            cells = [
                str(c["trained"]),
                str(c["untrained"]),
                str(c["rank"]),
                f"{c['minus_untrained']:+d}{_interval(c['minus_untrained_ci'])}",
                f"{c['minus_rank']:+d}{_interval(c['minus_rank_ci'])}",
            ]
        else:
            cells = [
                str(sum(gold_in_top(r["gold"], r["base"], k) for r in rows)),
                str(sum(gold_in_top(r["gold"], None, k) for r in rows)),
            ]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    threshold = (report.get("keep_threshold") or {}).get("trained")
    if not scored or threshold is None:
        return lines, None
    c = compare_at_keep_rate(rows, threshold)
    lines += [
        "",
        f"At its keep threshold the trained Finder keeps {c['kept']} of {c['segments']} segments ({c['keep_rate']:.1%}) "
        f"and {c['trained']} of {c['gold_segments']} gold ones. At the same keep rate (as many segments per record):",
        "",
        "| Finder | gold kept | trained - it [95%] |",
        "|---|---|---|",
        f"| trained | {c['trained']} | |",
        f"| untrained (its top k by score) | {c['untrained']} | {c['minus_untrained']:+d}{_interval(c['minus_untrained_ci'])} |",
        f"| rank (the retriever's top k) | {c['rank']} | {c['minus_rank']:+d}{_interval(c['minus_rank_ci'])} |",
    ]
    return lines, c


def phase_section(root: Path, name: str) -> list[str]:
    record = _read_json(root / f"status-{name}.json", {})  # the runner's
    out = root / f"phase-{name}"
    report = _read_json(out / "train.json", {})
    lines = [f"## Phase {name.upper()}: {PHASE_MODELS[name]}", ""]
    lines.append(
        f"- Status: {record.get('status', 'waiting')}"
        + (f" ({record['note']})" if record.get("note") else "")
        + (f"; its last stage: {report['stage']}" if report.get("stage") else "")
        + "."
    )
    if report.get("timings"):
        lines.append("- Seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in report["timings"].items()) + ".")
    lines += training_lines(out, report)
    finder, comparison = finder_lines(out, report)
    lines += finder
    if comparison is not None and report.get("stage") == "exported":
        ok, reasons = ships_at_k(_jsonl(out / "scores.jsonl"))
        verdict = "ships" if ok else "does not ship: " + "; ".join(reasons)
        lines += ["", f"**Verdict: the trained Finder {verdict}.**"]
    return [*lines, ""]


def summary_markdown(root: Path) -> str:
    state = _read_json(root / "state.json", {})
    started = state.get("t0", time.time())
    base = state.get("base", {})
    preflight = base.get("preflight", {})
    lines = [
        "# GPU lane: summary",
        "",
        f"- machine: {machine()}",
        f"- first call {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(started))} UTC; "
        f"{(time.time() - started) / 60:.1f} min since; timing {state.get('timing')}, "
        f"budget {state.get('budget', 0) / 60:.0f} min of device time",
        f"- pre-flight: CUDA {preflight.get('cuda')} ({preflight.get('gpu')}); torch {preflight.get('torch')}, "
        f"transformers {preflight.get('transformers')}, peft {preflight.get('peft')}; nvcc {preflight.get('nvcc')}; "
        f"cmake {preflight.get('cmake')}; wheels {', '.join(preflight.get('wheels', [])) or '-'}"
        + (f"; import error: {preflight['import_error']}" if preflight.get("import_error") else ""),
        f"- calls so far: {', '.join(map(str, state.get('calls', []))) or '-'}",
        "",
    ]
    for name in PHASE_MODELS:
        lines += phase_section(root, name)
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lane", required=True)
    args = parser.parse_args()
    root = Path(args.lane)
    (root / "SUMMARY.md").write_text(summary_markdown(root), encoding="utf-8")
    print(root / "SUMMARY.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
