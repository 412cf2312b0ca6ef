"""The part of a candidate paragraph the Finder reads when it picks an extractive answer's
paragraph: each candidate whole against its window (extractive.judged_window, finder.
JUDGED_CHARS characters around the sentence most like the question), on the dev sets' open
records with the embedded default, calls not cached.

Per set: the questions whose five candidates hold gold; gold picked (the Finder's best-scored
candidate) whole and by windows, with the paired difference and its 95% bootstrap interval;
the characters the Finder read and its seconds a question (mean and 90th percentile); and
token-F1 over all questions of the answers as shown. Whole is the same code with the window
widened past any paragraph.

    python benchmarks/judge_window.py [--sets novelqa hound moonstone fairytale] [--extra RECORDS]
        [--generated BOOKS_DIR]

`--generated BOOKS_DIR` adds the questions the 1.5B wrote for paragraphs of the judge's 16
books (training/data/judge/BOOKS.tsv, the books in BOOKS_DIR): ten a book, spread, of those
whose answer shares over half its words with its paragraph (the paragraph is the gold).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from extractive_dev import SETS, open_record_list

from cwread import api
from cwread.answer import decide
from cwread.eval.metrics import best_over_references, bootstrap_interval, token_f1
from cwread.records.question import Question

WHOLE = 10**9  # a window no paragraph is longer than: each read whole
JUDGE_DATA = Path(__file__).resolve().parents[1] / "training" / "data" / "judge"
STOP = {"the", "a", "of", "and", "to", "was", "he", "she", "his", "her", "in", "that", "it"}


def generated_records(books: Path, per_book: int = 10) -> Path:
    """The generated questions as records (see the module doc), in a temporary file."""
    rows = [json.loads(line) for name in ("novel-questions.jsonl", "novel-questions-2.jsonl")
            for line in (JUDGE_DATA / name).read_text(encoding="utf-8").splitlines()]  # fmt: skip
    by_book: dict[str, list[dict]] = collections.defaultdict(list)
    for row in rows:
        if "question" in row and "answer" in row:
            by_book[row["book"]].append(row)

    def words(text: str) -> set[str]:
        return set(re.findall(r"[a-z]+", text.lower()))

    chosen = []
    for book in sorted(by_book):
        document = api.open_document(str(books / book))
        good = []
        for i, row in enumerate(by_book[book]):
            asked = words(row["answer"]) - STOP
            if len(asked & words(document.paragraph(row["paragraph"]).text)) / max(1, len(asked)) > 0.5:
                good.append({"id": f"other-{book[:20]}-{i}", "doc": str(books / book), "kind": "open",
                             "question": row["question"], "answer": row["answer"], "answers": [row["answer"]],
                             "evidence": [row["paragraph"]]})  # fmt: skip
        chosen += good[:: max(1, len(good) // per_book)][:per_book]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        f.write("".join(json.dumps(r) + "\n" for r in chosen))
    return Path(f.name)


def run_set(records: list[dict], chars: int) -> list[dict]:
    """One row a record: gold among the candidates, gold picked, characters read, judge seconds, F1."""
    decide.JUDGED_CHARS = chars
    sessions: dict[str, api.Session] = {}
    rows = []
    settings = api.Settings(api.SessionSettings(use_cache=False))
    for record in records:
        doc = record["doc"]
        if doc not in sessions:
            sessions[doc] = api.open(doc, settings)
        trace = sessions[doc].ask(Question(record["question"], "open"), settings.run)
        judged, gold = trace.outcome.judgement, set(record.get("evidence") or [])
        text_of = {p[0]: p[1] for p in trace.packet.evidence()}
        windows = {pid: end - start for pid, start, end in judged.windows} if judged else {}
        read = sum(windows.get(pid, len(text_of.get(pid, ""))) for pid, _ in judged.scores) if judged else 0
        refs = record.get("answers") or [record.get("answer") or ""]
        rows.append({
            "candidates_gold": bool(judged and gold & ({p for p, _ in judged.scores} | set(judged.unjudged))),
            "picked_gold": bool(judged and judged.best and judged.best[0] in gold),
            "chars": read,
            "seconds": trace.seconds.get("answer_judge", 0.0),
            "f1": best_over_references(token_f1, trace.outcome.text, refs) if trace.outcome.text else 0.0,
        })  # fmt: skip
    return rows


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else (values[0] if values else 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    parser.add_argument("--extra", type=Path, help="another records file, its documents' paths absolute")
    parser.add_argument("--generated", type=Path, metavar="BOOKS_DIR", help="add the generated questions (module doc)")
    options = parser.parse_args()
    sources = {name: SETS[name] for name in options.sets}
    if options.extra:
        sources[options.extra.stem] = options.extra
    if options.generated:
        sources["generated (16 other novels)"] = generated_records(options.generated)
    print(f"judged window: {decide.JUDGED_CHARS} characters (answer_picker.JUDGED_CHARS); 2 cores, calls not cached\n")
    print("| set | questions | gold among the candidates | gold picked: whole / window, window − whole [95%] "
          "| characters read a question: whole / window (mean, p90) | judge s a question: whole / window (mean, p90) "
          "| token-F1 over all: whole / window |")
    print("|---|---|---|---|---|---|---|")
    window = decide.JUDGED_CHARS
    for name, source in sources.items():
        records = open_record_list(source)
        started = time.perf_counter()
        whole, cut = run_set(records, WHOLE), run_set(records, window)
        diffs = [float(b["picked_gold"]) - float(a["picked_gold"]) for a, b in zip(whole, cut, strict=True)]
        low, high = bootstrap_interval(diffs)

        def stat(rows: list[dict], key: str, digits: int) -> str:
            values = [r[key] for r in rows]
            return f"{statistics.mean(values):.{digits}f}, {p90(values):.{digits}f}"

        print(
            f"| {name} | {len(records)} | {sum(r['candidates_gold'] for r in cut)} | "
            f"{sum(r['picked_gold'] for r in whole)} / {sum(r['picked_gold'] for r in cut)}, "
            f"{sum(diffs):+.0f} [{low * len(diffs):+.0f}, {high * len(diffs):+.0f}] | "
            f"{stat(whole, 'chars', 0)} / {stat(cut, 'chars', 0)} | {stat(whole, 'seconds', 2)} / {stat(cut, 'seconds', 2)} | "
            f"{100 * statistics.mean(r['f1'] for r in whole):.1f} / {100 * statistics.mean(r['f1'] for r in cut):.1f} |",
            flush=True,
        )
        print(f"  ({name}: {time.perf_counter() - started:.0f} s)", file=sys.stderr)
    decide.JUDGED_CHARS = window


if __name__ == "__main__":
    main()
