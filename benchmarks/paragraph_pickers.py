"""Which paragraph an extractive answer comes from: the pickers side by side on the dev sets.

For each open record of the dev sets (extractive_dev.SETS) the embedded default is asked once
(its Finder adapter judges the answer's candidate paragraphs; its calls come from the call
cache when run before), and the candidates (extractive.candidate_paragraphs, the five the
adapter judges) are picked among by:

- the ranker: its first candidate (no model);
- the Finder adapter: the default's choice;
- a judge (`--judge FOLDER`, what `python -m training judge` exports): its best-scoring candidate;
- an answer reader (`--reader FOLDER`, the shipped one unless given): the candidate whose
  best span scores highest.

Printed per set and for the novels together: how often the pick is a gold paragraph, and how
often gold is among the candidates at all; then, over the whole packet, gold among the first 1
and 5 paragraphs as the ranker orders the candidates and as the judge orders every packet
paragraph. 95% intervals resample records.

    python benchmarks/paragraph_pickers.py [--judge FOLDER] [--reader FOLDER] [--sets novelqa hound ...]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from extractive_dev import SETS, open_record_list

from cwread import api
from cwread.agents.answer_picker import JUDGED_PARAGRAPHS
from cwread.answer import extractive
from cwread.eval.metrics import ratio_interval
from cwread.records.question import Question
from cwread.settings import Settings

NOVELS = ("novelqa", "hound", "moonstone")


def picks(record: dict, session, judge, reader) -> dict:
    """The record's candidates, each picker's choice, and the packet's order by the judge."""
    question = Question(record["question"], "open")
    trace = session.ask(question)
    pool = trace.packet.evidence()
    text_of = {p[0]: p[1] for p in pool}
    rank = session.ranker(session.embedder_for("fused"))
    candidates = extractive.candidate_paragraphs(question.text, pool, rank, JUDGED_PARAGRAPHS)
    judgement = trace.outcome.judgement
    row = {"gold": record.get("evidence", []), "candidates": candidates, "packet": list(text_of)}
    row["ranker"] = candidates[0] if candidates else None
    row["finder"] = judgement.chosen if judgement else None
    if judge is not None and candidates:
        # the candidates are packet paragraphs: one scoring of the packet serves both
        scored = dict(zip(row["packet"], judge.score(question.text, list(text_of.values())).tolist(), strict=True))
        row["judge"] = max(candidates, key=lambda p: scored[p])
        row["judge_order"] = sorted(row["packet"], key=lambda p: -scored[p])
    if candidates:
        read = reader.read(question.text, [text_of[p] for p in candidates])
        row["reader"] = candidates[max(range(len(read)), key=lambda i: read[i].score)]
    return row


def share(rows: list[dict], hit) -> str:
    pairs = [(int(bool(hit(r))), 1) for r in rows]
    low, high = ratio_interval(pairs)
    return f"{sum(h for h, _ in pairs)} ({100 * sum(h for h, _ in pairs) / len(pairs):.0f}% [{100 * low:.0f}–{100 * high:.0f}])"


def report(name: str, rows: list[dict], pickers: list[str]) -> str:
    return (
        f"| {name} | {len(rows)} | {share(rows, lambda r: set(r['gold']) & set(r['candidates']))} | "
        + " | ".join(share(rows, lambda r, p=p: r.get(p) in set(r["gold"])) for p in pickers)
        + " |"
    )


def order_report(name: str, rows: list[dict]) -> str:
    def among(order_key: str, k: int):
        return lambda r: bool(set(r["gold"]) & set((r.get(order_key) or [])[:k]))

    return (
        f"| {name} | {len(rows)} | {share(rows, lambda r: set(r['gold']) & set(r['packet']))} | "
        f"{share(rows, among('candidates', 1))} | {share(rows, among('judge_order', 1))} | "
        f"{share(rows, among('candidates', 5))} | {share(rows, among('judge_order', 5))} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", default=None, help="a judge's folder (python -m training judge)")
    parser.add_argument("--reader", default=None, help="an answer reader's folder (default: the shipped one)")
    parser.add_argument("--sets", nargs="*", default=list(SETS), choices=list(SETS))
    args = parser.parse_args()
    os.environ["OLLAMA_HOST"] = "http://127.0.0.1:9"  # the embedded default, whatever serves here
    from cwread.agents.cross_encoder import Judge
    from cwread.agents.extractive_qa import ExtractiveQaModel, shipped_dir

    judge = Judge(Path(args.judge)) if args.judge else None
    reader = ExtractiveQaModel(Path(args.reader) if args.reader else shipped_dir())
    pickers = ["ranker", "finder", *(["judge"] if judge else []), "reader"]
    by_set: dict[str, list[dict]] = {}
    sessions: dict[str, object] = {}
    for name in args.sets:
        rows = []
        for record in open_record_list(SETS[name]):
            if record["doc"] not in sessions:
                sessions[record["doc"]] = api.open(record["doc"], Settings())
            rows.append(picks(record, sessions[record["doc"]], judge, reader))
        by_set[name] = rows
    novels = [r for n in NOVELS if n in by_set for r in by_set[n]]
    groups = [
        *by_set.items(),
        *([("novels together", novels)] if sum(name in by_set for name in NOVELS) > 1 else []),
    ]
    print(
        "| set | open | gold among the candidates | "
        + " | ".join(f"{p}'s pick is gold" for p in pickers)
        + " |"
    )
    print("|---|---|---|" + "---|" * len(pickers))
    for name, rows in groups:
        print(report(name, rows, pickers))
    if judge is not None:
        print()
        print(
            "| set | open | gold in the packet | ranker's first | judge's first | ranker's first 5 | judge's first 5 |"
        )
        print("|---|---|---|---|---|---|---|")
        for name, rows in groups:
            print(order_report(name, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
