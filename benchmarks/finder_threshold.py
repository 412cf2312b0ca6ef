"""Pick a `--keep-threshold` for a Finder from its `cwread eval -m finder` rows, cross-validated.

A threshold t keeps a segment when the Finder's score (ln P(YES) - ln P(NO)) reaches t. Chosen
on the same records it is scored on, a threshold flatters itself, so this script folds: the
records are split by book (records whose ids share a prefix before the last "-N" stay together)
into two halves; on each half it picks the highest t whose YES-recall there reaches --recall
(the most selective threshold that still keeps that share of gold segments), then scores that t
on the other half. The summed held-out figures are what a threshold picked this way is worth,
beside the rank baseline at the same keep rate (per record, the retriever's top k of the same
segments, k = the threshold's keep count), with the paired difference's 95% bootstrap interval.
It also prints the in-sample sweep, for reading the curve, not for choosing from it.

    python benchmarks/finder_threshold.py benchmarks/results/fairytale-finder-qwen15-cpu.rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cwread.eval.summary import paired_interval


def scored_rows(path: Path) -> list[dict]:
    """The Finder rows with gold labels and a score for every segment read."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        scores, gold = row.get("finder_scores"), row.get("segment_gold")
        if row.get("method") == "finder" and gold and scores and all(s is not None for s in scores):
            rows.append(row)
    return rows


def book_of(row: dict) -> str:
    head, _, tail = row["id"].rpartition("-")
    return head if head and tail.isdigit() else row["id"]


def keep_counts(rows: list[dict], threshold: float) -> list[tuple[int, int, int]]:
    """Per record: (segments kept, gold segments kept, gold segments the rank baseline keeps)."""
    out = []
    for row in rows:
        kept = [s >= threshold for s in row["finder_scores"]]
        k = sum(kept)
        out.append(
            (
                k,
                sum(g and y for g, y in zip(row["segment_gold"], kept, strict=True)),
                sum(row["segment_gold"][:k]),
            )
        )
    return out


def figures(rows: list[dict], counts: list[tuple[int, int, int]]) -> dict:
    segments = sum(len(r["finder_scores"]) for r in rows)
    gold = sum(sum(r["segment_gold"]) for r in rows)
    kept = sum(c[0] for c in counts)
    kept_gold = sum(c[1] for c in counts)
    rank_gold = sum(c[2] for c in counts)
    interval = paired_interval([c[1] - c[2] for c in counts]) or (0.0, 0.0)
    return {
        "records": len(rows),
        "segments": segments,
        "gold": gold,
        "keep_rate": kept / segments if segments else None,
        "recall": kept_gold / gold if gold else None,
        "precision": kept_gold / kept if kept else None,
        "rank_recall": rank_gold / gold if gold else None,
        "rank_precision": rank_gold / kept if kept else None,
        "gold_minus_rank": kept_gold - rank_gold,
        "gold_minus_rank_ci": interval,
    }


def rank_prior(rows: list[dict]) -> list[float]:
    """Per reading position (the retriever's rank), the log-odds that a segment there holds gold,
    estimated on `rows` (add-half smoothed): what retrieval alone says of a segment."""
    width = max(len(r["segment_gold"]) for r in rows)
    prior = []
    for i in range(width):
        at = [r["segment_gold"][i] for r in rows if i < len(r["segment_gold"])]
        prior.append(math.log((sum(at) + 0.5) / (len(at) - sum(at) + 0.5)))
    return prior


def fused(rows: list[dict], prior: list[float]) -> list[dict]:
    """The rows with each score plus its rank's prior log-odds: the Finder's judgement of the
    text added to retrieval's (the base rate both count is a constant the threshold absorbs)."""
    return [
        {**r, "finder_scores": [s + prior[min(i, len(prior) - 1)] for i, s in enumerate(r["finder_scores"])]}
        for r in rows
    ]


def pick_threshold(rows: list[dict], target_recall: float) -> float:
    """The highest score threshold whose YES-recall on `rows` reaches `target_recall`."""
    gold = sum(sum(r["segment_gold"]) for r in rows)
    gold_scores = sorted(
        (s for r in rows for s, g in zip(r["finder_scores"], r["segment_gold"], strict=True) if g),
        reverse=True,
    )
    if not gold:
        return min(s for r in rows for s in r["finder_scores"])
    # keeping the n best-scored gold segments needs t <= the n-th best gold score
    needed = max(1, math.ceil(target_recall * gold - 1e-9))
    return gold_scores[min(needed, len(gold_scores)) - 1]


def folds(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """Two halves with no book in both, alternating books in order of first appearance."""
    books: list[str] = []
    for row in rows:
        if book_of(row) not in books:
            books.append(book_of(row))
    first = {b for i, b in enumerate(books) if i % 2 == 0}
    return [r for r in rows if book_of(r) in first], [r for r in rows if book_of(r) not in first]


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _row(label: str, f: dict) -> str:
    low, high = f["gold_minus_rank_ci"]
    return (
        f"| {label} | {f['records']} | {f['gold']} | {_pct(f['keep_rate'])} | {_pct(f['recall'])} | "
        f"{_pct(f['precision'])} | {_pct(f['rank_recall'])} | {_pct(f['rank_precision'])} | "
        f"{f['gold_minus_rank']:+d} [{low:+.0f}, {high:+.0f}] |"
    )


HEADER = (
    "| threshold | records | gold segments | keep % | YES-recall % | precision % | rank recall % | "
    "rank precision % | gold kept − rank [95% CI] |\n|---|---|---|---|---|---|---|---|---|"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", type=Path, help="rows of `cwread eval -m finder` with scores")
    parser.add_argument("--recall", type=float, default=0.85, help="YES-recall a threshold must keep")
    args = parser.parse_args(argv)
    if not args.rows.is_file():
        print(f"finder_threshold: no such file: {args.rows}", file=sys.stderr)
        return 2
    rows = scored_rows(args.rows)
    if len(rows) < 2:
        print("finder_threshold: fewer than two scored finder rows with gold evidence", file=sys.stderr)
        return 2

    halves = folds(rows)
    print(f"# Keep threshold for {args.rows.name}\n")
    for title, fuse in (("the Finder's score", False), ("the score plus the rank's prior log-odds of gold", True)):
        print(f"## {title}: picked on one half (YES-recall ≥ {args.recall:.2f}), scored on the other\n")
        print(HEADER)
        held_rows: list[dict] = []
        held_counts: list[tuple[int, int, int]] = []
        for i, (train, test) in enumerate((halves, halves[::-1])):
            if not train or not test:
                continue
            if fuse:  # the prior too is estimated on the picking half only
                prior = rank_prior(train)
                train, test = fused(train, prior), fused(test, prior)
            t = pick_threshold(train, args.recall)
            counts = keep_counts(test, t)
            held_rows += test
            held_counts += counts
            print(_row(f"fold {i + 1}: {t:+.3f}", figures(test, counts)))
        if held_rows:
            print(_row("both folds, held out", figures(held_rows, held_counts)))
        everything = fused(rows, rank_prior(rows)) if fuse else rows
        print(f"\nPicked on all {len(rows)} records: {pick_threshold(everything, args.recall):+.3f}\n")

    print("## In-sample sweep (reading the curve, not choosing from it)\n")
    print(HEADER)
    cuts = sorted({round(s, 2) for r in rows for s in r["finder_scores"]})
    step = max(1, len(cuts) // 12)
    for t in [*cuts[::step], 0.0]:
        print(_row(f"{t:+.2f}", figures(rows, keep_counts(rows, t))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
