"""Who is X? on novels no dev set uses: the answer with the packet's description of X, or the
Finder's pick among where the book first names X and the best-fitting paragraphs
(cwread.retrieval.describe), and without either (the Finder's pick among the best-fitting, the
default before), on the embedded default.

    python benchmarks/who_is.py BOOKS_DIR [--data benchmarks/data/who_is.jsonl]

BOOKS_DIR holds the books `data` names (training/data/judge/BOOKS.tsv says where each came from).
Each record names a character and what a reader would accept as who they are (written from the
novels, before any answer was read). An answer is right when it says one of them. Prints
a row for each question and the share right each way, with 95% Wilson intervals.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from unittest import mock

from cwread import api
from cwread.eval.metrics import wilson_interval
from cwread.records.question import Question
from cwread.retrieval import describe
from cwread.settings import Settings

HERE = Path(__file__).resolve().parent


def answers(records: list[dict], books: Path) -> list[tuple[str | None, bool]]:
    """Each record's answer, and whether it came from a description."""
    sessions: dict[str, api.Session] = {}
    out = []
    for record in records:
        book = str(books / record["book"])
        if book not in sessions:
            sessions[book] = api.open(book, Settings())
        trace = sessions[book].ask(Question(f"Who is {record['name']}?", "open"))
        out.append((trace.answer, trace.outcome.description is not None))
    return out


def right(answer: str | None, accept: list[str]) -> bool:
    return answer is not None and any(a in answer.lower() for a in accept)


def share(hits: int, n: int) -> str:
    low, high = wilson_interval(hits, n)
    return f"{hits}/{n} ({100 * hits / n:.0f}% [{100 * low:.0f}–{100 * high:.0f}])"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("books", type=Path)
    parser.add_argument("--data", type=Path, default=HERE / "data" / "who_is.jsonl")
    args = parser.parse_args()
    os.environ["OLLAMA_HOST"] = "http://127.0.0.1:9"  # the embedded default, whatever serves here
    records = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines() if line.strip()]
    now = answers(records, args.books)
    with (
        mock.patch.object(describe, "described", lambda *a, **k: None),
        mock.patch.object(describe, "describing_paragraphs", lambda *a, **k: []),
        mock.patch.object(describe, "first_mentions", lambda *a, **k: []),
    ):
        before = answers(records, args.books)
    print("| book | who is | before (the Finder's paragraph) | now | from a description |")
    print("|---|---|---|---|---|")
    for record, (old, _), (new, said) in zip(records, before, now, strict=True):
        cells = [f"{'✓' if right(a, record['accept']) else '✗'} {(a or '(none)')[:70]!r}" for a in (old, new)]
        print(f"| {record['book'].split('_')[0]} | {record['name']} | {cells[0]} | {cells[1]} | {'yes' if said else ''} |")
    n = len(records)
    print()
    print("right before:", share(sum(right(a, r["accept"]) for r, (a, _) in zip(records, before, strict=True)), n))
    print("right now:   ", share(sum(right(a, r["accept"]) for r, (a, _) in zip(records, now, strict=True)), n))
    described = [(r, a) for r, (a, said) in zip(records, now, strict=True) if said]
    print("from a description:", len(described), "of", n, "; right:", share(sum(right(a, r["accept"]) for r, a in described), max(1, len(described))))


if __name__ == "__main__":
    main()
