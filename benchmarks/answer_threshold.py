"""The trained Finder as the judge of an extractive answer's paragraph: its threshold curve on
the dev sets, beside the sentence ranker alone.

Runs `cwread eval -m pipeline` on the open records of the four dev sets (extractive_dev.SETS)
twice with the embedded default: with the shipped Finder adapter never withholding an answer
(`--set answer.threshold=-1000`; each row keeps the Finder's best score, `answer_judge_score`), and
without it (`--finder-lora none`: the ranker alone). Then, per threshold, as if the answers
under it were withheld: abstained %, gold-quoted % of shown answers, token-F1 over all
questions, and the paired F1 difference against the ranker alone with its 95% bootstrap
interval (a withheld answer scores 0).

    python benchmarks/answer_threshold.py [--out DIR [--reuse-ranker]] [--thresholds -2.5 -2 -1 0]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from extractive_dev import SETS, open_records

from cwread.eval.metrics import bootstrap_interval

# the extractive answer on every set (on a novel the default now shows passages: passages.py)
EXTRACTIVE = ("--answer", "extractive")
NEVER = "-1000"  # answer.threshold under any score: the Finder's choice is always shown


def rows_of(records: Path, out: Path, *flags: str, reuse: bool = False) -> dict[str, dict]:
    if reuse and out.is_file():  # a run kept in --out, read again rather than run again
        return {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    out.unlink(missing_ok=True)
    env = {**os.environ, "OLLAMA_HOST": "http://127.0.0.1:9"}  # the embedded default, whatever serves here
    subprocess.run(
        [sys.executable, "-m", "cwread", "eval", str(records), "-m", "pipeline", "--out", str(out), *flags],
        check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    return {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}


def shown_f1(row: dict, threshold: float | None) -> float | None:
    """The row's F1 if its answer is shown at `threshold` (None: withheld)."""
    score = row.get("answer_judge_score")
    if row["answer"] is None or (threshold is not None and score is not None and score < threshold):
        return None
    return row["f1"]


def line(name: str, rows: dict[str, dict], base: dict[str, dict], threshold: float | None) -> str:
    f1 = {k: shown_f1(r, threshold) for k, r in rows.items()}
    shown = [k for k, v in f1.items() if v is not None]
    gold = sum(1 for k in shown if rows[k].get("cited_gold"))
    diffs = [(f1[k] or 0.0) - base[k]["f1"] for k in base]
    low, high = bootstrap_interval(diffs)
    share = f"{100 * gold / len(shown):.1f}" if shown else "–"
    return (
        f"| {name} | {len(rows)} | {'−∞' if threshold is None else f'{threshold:+.2f}'} | "
        f"{100 * (1 - len(shown) / len(rows)):.1f} | {share} ({gold}/{len(shown)}) | "
        f"{100 * sum(v or 0.0 for v in f1.values()) / len(rows):.1f} | "
        f"{100 * sum(diffs) / len(diffs):+.1f} [{100 * low:+.1f}, {100 * high:+.1f}] |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="keep the rows here")
    parser.add_argument("--thresholds", type=float, nargs="*", default=[-2.5, -2.0, -1.5, -1.0, -0.5, 0.0])
    parser.add_argument(
        "--reuse-ranker", action="store_true", help="read the ranker-alone rows kept in --out (it calls no model)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.out or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        print("| set | open | threshold | abstained % | gold-quoted % of shown | F1 over all | F1 − ranker alone [95%] |")
        print("|---|---|---|---|---|---|---|")
        for name, source in SETS.items():
            records = work / f"{name}-open.jsonl"
            open_records(source, records)
            # the answer reader off in both: this curve is the Finder's (benchmarks/answer_reader.py has the reader's)
            base = rows_of(records, work / f"{name}-ranker.rows.jsonl", *EXTRACTIVE, "--finder-lora", "none", "--set", "answer.reader=off", reuse=args.reuse_ranker)
            judged = rows_of(records, work / f"{name}-judged.rows.jsonl", *EXTRACTIVE, "--set", f"answer.threshold={NEVER}", "--set", "answer.reader=off")
            gold = sum(1 for r in base.values() if r.get("cited_gold") and r["answer"] is not None)
            answered = sum(1 for r in base.values() if r["answer"] is not None)
            print(
                f"| {name} | {len(base)} | ranker alone | {100 * (1 - answered / len(base)):.1f} | "
                f"{100 * gold / max(1, answered):.1f} ({gold}/{answered}) | "
                f"{100 * sum(r['f1'] for r in base.values()) / len(base):.1f} | |"
            )
            for threshold in [None, *args.thresholds]:
                print(line(name, judged, base, threshold))


if __name__ == "__main__":
    main()
