"""Score a reading-benchmark run: an AI assistant answered questions reading the books only
through `cw` (the wrapper that logs each cwread call). For each question: whether a paragraph
it cited holds the answer (is among the record's gold `evidence`), its calls and the characters
cwread printed to it, from the wrapper's log (not from what the reader says of itself).

    python benchmarks/reading/score.py ANSWERS.jsonl LOG.jsonl RECORDS.jsonl [RECORDS.jsonl ...]
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cwread.eval.metrics import wilson_interval


def read_jsonl(path: Path) -> list[dict]:
    """The records of a JSON Lines file, gzipped or not (the logs kept in results/ are)."""
    text = gzip.decompress(path.read_bytes()).decode("utf-8") if path.suffix == ".gz" else path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("answers", type=Path)
    parser.add_argument("log", type=Path)
    parser.add_argument("records", type=Path, nargs="+")
    args = parser.parse_args()
    records = {r["id"]: r for path in args.records for r in read_jsonl(path)}
    gold = {qid: set(r.get("evidence") or []) for qid, r in records.items()}
    # a two-fact question: its gold in parts, each a fact; "both" where a cited id holds each
    parts = {qid: [set(p) for p in r["parts"]] for qid, r in records.items() if r.get("parts")}
    calls: dict[str, int] = defaultdict(int)
    chars: dict[str, int] = defaultdict(int)
    for call in read_jsonl(args.log):
        calls[call["tag"]] += 1
        chars[call["tag"]] += call["chars"]
    rows = []
    for answer in read_jsonl(args.answers):
        qid = answer["id"]
        cited = {int(c) for c in answer.get("cited") or [] if str(c).isdigit()}
        both = all(cited & part for part in parts[qid]) if qid in parts else None
        rows.append(
            {"id": qid, "set": qid.split("-")[0], "gold_cited": bool(cited & gold[qid]), "both": both,
             "calls": calls[qid], "chars": chars[qid]}
        )  # fmt: skip
    print("| set | questions | cited a gold paragraph [95%] | median calls | median characters read | most |")
    print("|---|---|---|---|---|---|")
    for name in (*sorted({r["set"] for r in rows}), "all"):
        part = [r for r in rows if name in ("all", r["set"])]
        hits = sum(r["gold_cited"] for r in part)
        low, high = wilson_interval(hits, len(part))
        print(
            f"| {name} | {len(part)} | {hits} ({100 * hits / len(part):.0f}%) [{100 * low:.0f}-{100 * high:.0f}] | "
            f"{statistics.median(r['calls'] for r in part):g} | {statistics.median(r['chars'] for r in part):,.0f} | "
            f"{max(r['chars'] for r in part):,} |"
        )
    missed = [r["id"] for r in rows if not r["gold_cited"]]
    print(f"\nno gold cited: {', '.join(missed) or 'none'}")
    two = [r for r in rows if r["both"] is not None]
    if two:
        print(
            f"two-fact questions: {len(two)}; a gold paragraph cited {sum(r['gold_cited'] for r in two)}, "
            f"one for each fact {sum(r['both'] for r in two)} "
            f"({', '.join(r['id'] for r in two if not r['both']) or 'none'} short of both)"
        )
    helped = {tag: chars[tag] for tag in chars if tag not in records}
    if helped:
        print(f"read outside the questions (help, tool lists): {sum(helped.values()):,} characters in {sum(calls[t] for t in helped)} calls")


if __name__ == "__main__":
    main()
