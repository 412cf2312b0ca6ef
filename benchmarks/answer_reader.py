"""The answer reader's words and its threshold curve on the dev sets, beside the answers before it
and the ranker alone.

Runs `cwread eval -m pipeline` on the open records of the four dev sets (extractive_dev.SETS)
three times with the embedded default: the ranker alone, no model at all (`--finder-lora none
--set answer.reader=off`); before the reader (`--set answer.reader=off`: the Finder's paragraph, the
ranker's sentence); and with the reader never withholding (`--set answer.reader_threshold=-1000`; each
row keeps the reader's score, `answer_reader_score`). Then, per threshold, as if answers under
it were withheld: abstained %, gold-quoted % of shown answers, token-F1 over shown answers and
over all questions, and the paired F1 difference (a withheld answer scores 0) against before,
with its 95% bootstrap interval. The dev novels are also pooled (70 questions).

    python benchmarks/answer_reader.py [--out DIR [--reuse]] [--thresholds -6 -5 -4 -3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from answer_threshold import EXTRACTIVE, rows_of
from extractive_dev import SETS, open_records

from cwread.eval.metrics import bootstrap_interval

NEVER = "-1000"
NOVELS = ("novelqa", "hound", "moonstone")


def shown_f1(row: dict, threshold: float | None) -> float | None:
    """The row's F1 if its answer is shown at `threshold` (None: withheld)."""
    score = row.get("answer_reader_score")
    if row["answer"] is None or (threshold is not None and score is not None and score < threshold):
        return None
    return row["f1"]


def line(name: str, rows: dict[str, dict], before: dict[str, dict], label: str, threshold: float | None) -> str:
    f1 = {k: shown_f1(r, threshold) for k, r in rows.items()}
    shown = [k for k, v in f1.items() if v is not None]
    gold = sum(1 for k in shown if rows[k].get("cited_gold"))
    diffs = [(f1[k] or 0.0) - (before[k]["f1"] if before[k]["answer"] is not None else 0.0) for k in rows]
    low, high = bootstrap_interval(diffs)
    over_shown = f"{100 * sum(f1[k] for k in shown) / len(shown):.1f}" if shown else "–"
    share = f"{100 * gold / len(shown):.1f} ({gold}/{len(shown)})" if shown else "–"
    return (
        f"| {name} | {len(rows)} | {label} | {100 * (1 - len(shown) / len(rows)):.1f} | {share} | {over_shown} | "
        f"{100 * sum(v or 0.0 for v in f1.values()) / len(rows):.1f} | "
        f"{100 * sum(diffs) / len(diffs):+.1f} [{100 * low:+.1f}, {100 * high:+.1f}] |"
    )


def fixed(name: str, rows: dict[str, dict], before: dict[str, dict], label: str) -> str:
    """A configuration's own answers (its own abstentions), as `line` prints them."""
    as_read = {k: {**r, "answer_reader_score": None} for k, r in rows.items()}
    return line(name, as_read, before, label, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="keep the rows here")
    parser.add_argument("--reuse", action="store_true", help="read the rows kept in --out rather than run again")
    parser.add_argument("--thresholds", type=float, nargs="*", default=[-7.0, -6.0, -5.0, -4.0, -3.0, -2.0, 0.0])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.out or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        runs: dict[str, tuple[dict, dict, dict]] = {}
        for name, source in SETS.items():
            records = work / f"{name}-open.jsonl"
            open_records(source, records)
            base = rows_of(records, work / f"{name}-ranker.rows.jsonl", *EXTRACTIVE, "--finder-lora", "none", "--set", "answer.reader=off", reuse=args.reuse)
            before = rows_of(records, work / f"{name}-before.rows.jsonl", *EXTRACTIVE, "--set", "answer.reader=off", reuse=args.reuse)
            read = rows_of(records, work / f"{name}-reader.rows.jsonl", *EXTRACTIVE, "--set", f"answer.reader_threshold={NEVER}", reuse=args.reuse)
            runs[name] = (base, before, read)
        pooled = tuple({f"{n}/{k}": r for n in NOVELS for k, r in runs[n][i].items()} for i in range(3))
        print("| set | open | answers | abstained % | gold-quoted % of shown | F1 over shown | F1 over all | F1 − before [95%] |")
        print("|---|---|---|---|---|---|---|---|")
        for name, (base, before, read) in [*runs.items(), ("novels together", pooled)]:
            print(fixed(name, base, before, "ranker alone (no model)"))
            print(fixed(name, before, before, "before (Finder's paragraph, ranker's sentence)"))
            for threshold in [None, *args.thresholds]:
                print(line(name, read, before, f"reader, withheld under {'−∞' if threshold is None else f'{threshold:+.1f}'}", threshold))


if __name__ == "__main__":
    main()
