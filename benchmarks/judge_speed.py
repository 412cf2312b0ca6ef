"""Where a question's time goes with the judge as Finder, on a book already indexed.

    python benchmarks/judge_speed.py BOOK QUESTIONS.jsonl [--limit N] [--words W]

For each question: the whole `ask` (index cached, the embedded default), the judge's share
(the trace's `finder` seconds), how many paragraphs it judged and how many it left. A
benchmark, not a test: the numbers depend on the machine (say which when quoting them).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace
from pathlib import Path

from cwread import api
from cwread.agents import judge_finder
from cwread.records.plan import FinderUse
from cwread.settings import FinderSettings, RunSettings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("book")
    parser.add_argument("questions", help="JSONL records (their `question` is asked; answers unused)")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--words", type=int, default=None, help="the judge's word budget (default: judge_finder.JUDGE_WORDS)")
    args = parser.parse_args()
    if args.words:
        judge_finder.JUDGE_WORDS = args.words
    lines = Path(args.questions).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines if line.strip()][: args.limit]
    session = api.open(args.book)
    session.index()
    run = RunSettings(finding=FinderSettings(use=FinderUse.JUDGE))
    session.ask(api.make_question(records[0]["question"]), run)  # the judge loaded, the book's sentences ranked
    totals, judge_seconds = [], []
    for record in records:
        if record.get("kind", "open") != "open":
            continue
        t0 = time.perf_counter()
        trace = session.ask(api.make_question(record["question"]), replace(run))
        totals.append(time.perf_counter() - t0)
        judge_seconds.append(trace.seconds["finder"])
        unjudged = sum(1 for v in trace.verdicts if v.score is None)
        print(
            f"{totals[-1]:5.2f} s  judge {judge_seconds[-1]:5.2f} s  segments {len(trace.verdicts)} "
            f"(unjudged {unjudged})  packet {len(trace.packet.ids)} paragraphs  {record['question'][:60]}"
        )
    print(
        f"{len(totals)} questions: median {statistics.median(totals):.2f} s end to end "
        f"(max {max(totals):.2f}), judge median {statistics.median(judge_seconds):.2f} s"
    )


if __name__ == "__main__":
    main()
