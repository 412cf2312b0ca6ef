"""The GPU lane's one-page summary (results/SUMMARY.md), from what its stages left in results/:
training curves, the Finder against the untrained one and the retriever's own ranking, the
methods per dev set, and whether the trained Finder ships.

    python -m benchmarks.lane_summary --lane DIR      (the lane's summary stage runs this)
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import time
from pathlib import Path

from cwread import metrics
from cwread.eval.report import paired_interval, record_score, summarize

DEV_SETS = ("fairytale", "quality", "scifi")


def read_rows(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    latest = {(r["id"], r["method"]): r for r in rows}  # a record run twice: its last row
    return list(latest.values())


def machine() -> str:
    try:
        gpus = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        gpus = ""
    return (gpus.strip().splitlines() or [f"{platform.machine()} CPU, no GPU"])[0]


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _interval(ci, form: str = "{:.3f}") -> str:
    return f" [{form.format(ci[0])}, {form.format(ci[1])}]" if ci else ""


def curve(metrics_file: Path, key: str) -> list[tuple[int, float]]:
    if not metrics_file.is_file():
        return []
    entries = [
        json.loads(line) for line in metrics_file.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    return [(e["step"], e[key]) for e in entries if key in e]


def stopped_early(metrics_file: Path) -> str:
    if not metrics_file.is_file():
        return ""
    for line in metrics_file.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if "stopped_early_of" in entry:
            return f", stopped at its deadline after step {entry['step']} of {entry['stopped_early_of']}"
    return ""


def training_section(results: Path) -> list[str]:
    lines = ["## Training", ""]
    sft = curve(results / "warm-start-metrics.jsonl", "loss")
    if sft:
        head = sum(v for _, v in sft[:5]) / len(sft[:5])
        tail = sum(v for _, v in sft[-5:]) / len(sft[-5:])
        lines.append(
            f"- SFT warm start: {sft[-1][0]} steps{stopped_early(results / 'warm-start-metrics.jsonl')}; "
            f"loss {head:.3f} (first 5 steps) -> {tail:.3f} (last 5)."
        )
    else:
        lines.append("- SFT warm start: no step logged.")
    rewards = curve(results / "run-metrics.jsonl", "reward")
    if rewards:
        lines.append(
            f"- GRPO: {rewards[-1][0]} steps{stopped_early(results / 'run-metrics.jsonl')}; "
            f"reward {rewards[0][1]:.3f} (step {rewards[0][0]}) -> {rewards[-1][1]:.3f} (step {rewards[-1][0]})."
        )
        write_reward_curve(results)
        lines.append("  Every step's reward, its spread, KL and reply length: `reward-curve.md`.")
    else:
        lines.append("- GRPO: no step finished.")
    return [*lines, ""]


def write_reward_curve(results: Path) -> None:
    entries = [
        json.loads(line)
        for line in (results / "run-metrics.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    lines = [
        "# GRPO reward curve (the Finder)",
        "",
        "| step | reward | reward std | KL | reply tokens |",
        "|---|---|---|---|---|",
    ]
    for e in entries:
        if "reward" not in e:
            continue
        cells = [e.get("reward"), e.get("reward_std"), e.get("kl"), e.get("completions/mean_length")]
        lines.append(f"| {e['step']} | " + " | ".join("-" if c is None else f"{c:.3f}" for c in cells) + " |")
    (results / "reward-curve.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def finder_section(results: Path) -> tuple[list[str], dict]:
    """The Finder untrained and trained on the same records, each against the rank baseline."""
    untrained = {r["id"]: r for r in read_rows(results / "fairytale-finder-untrained.rows.jsonl")}
    trained = {r["id"]: r for r in read_rows(results / "fairytale-finder-trained.rows.jsonl")}
    common = sorted(set(untrained) & set(trained)) if trained else sorted(untrained)
    lines = ["## The Finder on the fairytale dev set", ""]
    verdict: dict = {}
    if not common:
        return [*lines, "No records were judged.", ""], verdict
    lines += [
        f"{len(common)} records, each Finder on the same segments. 'Rank' is the retriever's own top-k at",
        "the Finder's keep rate: the gold a Finder keeps must beat it to be worth its calls.",
        "",
        "| Finder | segments | keep rate | gold kept | rank's gold | kept - rank [95%] | precision |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, rows in (("untrained", untrained), ("trained", trained)):
        if not rows:
            continue
        labelled = [rows[i] for i in common if "segments_gold" in rows[i]]
        f = summarize([rows[i] for i in common])["methods"]["finder"]["finder"]
        kept = sum(r["yes_gold"] for r in labelled)
        rank = sum(r.get("rank_yes_gold", 0) for r in labelled)
        ci = f.get("gold_kept_minus_rank_ci")
        lines.append(
            f"| {label} | {f['segments']} | {_pct(f['keep_rate'])} | {kept} | {rank} "
            f"| {f['gold_kept_minus_rank']:+d}"
            + (f" [{ci[0]:+.0f}, {ci[1]:+.0f}]" if ci else "")
            + f" | {_pct(f['precision'])} |"
        )
        verdict[label] = {"minus_rank": f["gold_kept_minus_rank"], "ci": ci}
    if trained:
        diff = [
            trained[i]["yes_gold"] - untrained[i]["yes_gold"] for i in common if "segments_gold" in trained[i]
        ]
        ci = paired_interval(diff)
        lines += [
            "",
            f"Gold kept, trained - untrained: {sum(diff):+d}"
            + (f" [{ci[0]:+.0f}, {ci[1]:+.0f}]" if ci else ""),
        ]
    return [*lines, ""], verdict


def methods_section(results: Path) -> tuple[list[str], dict]:
    lines = ["## Methods on the dev sets (untrained Finder unless named)", ""]
    paired: dict = {}
    for name in DEV_SETS:
        rows = read_rows(results / f"{name}-methods.rows.jsonl")
        trained = [
            dict(r, method="pipeline+trained-finder")
            for r in read_rows(results / f"{name}-trained-finder.rows.jsonl")
        ]
        if not rows:
            continue
        summary = summarize(rows + trained)
        lines += [f"### {name}", "", "| method | records | score [95%] |", "|---|---|---|"]
        for method, entry in summary["methods"].items():
            if entry.get("accuracy") is not None:
                score = f"{entry['accuracy']:.1%}{_interval(entry.get('accuracy_ci'), '{:.1%}')} (accuracy)"
            elif entry.get("f1") is not None:
                score = f"{entry['f1']:.3f}{_interval(entry.get('f1_ci'))} (F1)"
            else:
                score = "-"
            lines.append(f"| {method} | {entry['records']} | {score} |")
        base = {r["id"]: record_score(r) for r in rows if r["method"] == "pipeline"}
        pairs = [
            (base[r["id"]], record_score(r))
            for r in trained
            if base.get(r["id"]) is not None and record_score(r) is not None
        ]
        if pairs:
            differences = [b - a for a, b in pairs]
            ci = metrics.bootstrap_interval(differences)
            mean = sum(differences) / len(differences)
            paired[name] = {"records": len(pairs), "difference": mean, "ci": ci}
            lines += [
                "",
                f"Pipeline with the trained Finder - with the untrained, paired on {len(pairs)} records: "
                f"{mean:+.3f}{_interval(ci, '{:+.3f}')} (score: accuracy 1/0, or F1)",
            ]
        lines.append("")
    return lines, paired


def ship_verdict(finder: dict, paired: dict) -> list[str]:
    """Ships only if it keeps more gold than the rank baseline at its keep rate (the interval
    above 0) and the pipeline with it answers no worse than with the untrained Finder."""
    trained = finder.get("trained")
    if not trained:
        return ["## Verdict", "", "No trained Finder was measured: nothing ships.", ""]
    ci = trained.get("ci")
    beats_rank = bool(ci) and ci[0] > 0
    no_worse = bool(paired) and all(p["difference"] >= 0 for p in paired.values())
    reasons = []
    if not beats_rank:
        reasons.append("its gold kept does not beat the rank baseline's (the interval holds 0 or less)")
    if not paired:
        reasons.append("no paired pipeline answers were measured")
    elif not no_worse:
        worse = [n for n, p in paired.items() if p["difference"] < 0]
        reasons.append(f"the pipeline answers worse with it on {', '.join(worse)}")
    decision = "ships" if not reasons else "does not ship: " + "; ".join(reasons)
    return ["## Verdict", "", f"The trained Finder {decision}.", ""]


def summary_markdown(lane: Path, results: Path, state: dict) -> str:
    started = state.get("started", time.time())
    kit = json.loads((lane / "kit" / "KIT.json").read_text()) if (lane / "kit" / "KIT.json").is_file() else {}
    lines = [
        "# GPU lane: summary",
        "",
        f"- machine: {machine()}",
        f"- plan: {state.get('plan')}; started {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(started))} UTC; "
        f"{(time.time() - started) / 60:.1f} min to this summary",
        f"- model: {kit.get('model')} (sha256 {str(kit.get('model_sha256'))[:16]}...); "
        f"{len(kit.get('carried', {}))} packages carried as wheels; llama.cpp from {kit.get('llama_cpp_from')}",
        "",
        "## Stages",
        "",
        "| stage | status | seconds | note |",
        "|---|---|---|---|",
    ]
    for name, record in state.get("stages", {}).items():
        note = str(record.get("note", "")).replace("|", "/")
        lines.append(f"| {name} | {record.get('status')} | {record.get('seconds', '-')} | {note} |")
    lines.append("")
    lines += training_section(results)
    finder_lines, finder = finder_section(results)
    methods_lines, paired = methods_section(results)
    lines += finder_lines + methods_lines + ship_verdict(finder, paired)
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lane", required=True)
    args = parser.parse_args()
    lane = Path(args.lane)
    state = json.loads((lane / "state.json").read_text())
    text = summary_markdown(lane, lane / "results", state)
    (lane / "results" / "SUMMARY.md").write_text(text, encoding="utf-8")
    print(f"{lane / 'results' / 'SUMMARY.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
