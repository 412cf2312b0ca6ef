"""One default `find` in a pipe, as a reader (an AI assistant) first calls it, on every dev novel
question: is a gold paragraph printed, how many characters, the widest line. This checkout, and
with `--before REV` that revision's (a git worktree), paired.

A gold paragraph counts as printed whole when its id opens a line of the output as `[N]` (inside
a box's border too); by its line when a passage past the bound is given a line that quotes it
(`#9 [1199-1205] Chapter 12, at [1200]: ...`); the best passage holds gold when the first
passage printed has a gold paragraph.

    python benchmarks/find_one_call.py [--before REV] [--out FILE] [--find-args "--max-chars 3500"]
        [--sets lower,hotel,shroud --books DIR]

`--sets` measures other question sets of benchmarks/data (the reading benchmark's), their books
read from `--books` (they are not copied here: benchmarks/data/README.md names their sources).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from extractive_dev import REPO, SETS, open_record_list

NOVELS = ("novelqa", "hound", "moonstone")
PRINTED = re.compile(r"^\W*\[(\d+)\]")
LINED = re.compile(r"^#\d+\S* \[[^\]]*\].*?, at \[(\d+)\]: ")
HEAD = re.compile(r"^#\d+")


def find_output(checkout: Path, book: str, question: str, extra: tuple[str, ...] = ()) -> str:
    """What `cwread find BOOK QUESTION [extra]` prints into a pipe, run from `checkout`'s source."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    env.pop("CWREAD_WIDTH", None)
    done = subprocess.run(
        [sys.executable, "-c", "from cwread.cli import entry; entry()", "find", book, question, *extra],
        cwd=checkout, env=env, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"find failed on {question!r}: {done.stderr.strip()}")
    return done.stdout


def printed_ids(output: str) -> set[int]:
    return {int(m.group(1)) for line in output.splitlines() if (m := PRINTED.match(line))}


def lined_ids(output: str) -> set[int]:
    return {int(m.group(1)) for line in output.splitlines() if (m := LINED.match(line))}


def first_passage_ids(output: str) -> set[int]:
    """The ids printed under the first passage's head line."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if HEAD.match(line)), len(lines))
    ids = set()
    for line in lines[start + 1 :]:
        if HEAD.match(line) or not line.strip():
            break
        if m := PRINTED.match(line):
            ids.add(int(m.group(1)))
    return ids


def measure(
    checkout: Path, extra: tuple[str, ...] = (), sets: tuple[str, ...] = NOVELS, books: Path | None = None
) -> list[dict]:
    rows = []
    for name in sets:
        source = SETS.get(name, REPO / "benchmarks" / "data" / f"{name}.jsonl")
        for record in open_record_list(source):
            book = str(books / Path(record["doc"]).name) if books else record["doc"]
            output = find_output(checkout, book, record["question"], extra)
            gold = set(record.get("evidence") or [])
            rows.append(
                {
                    "set": name,
                    "id": record["id"],
                    "gold_printed": bool(gold & printed_ids(output)),
                    "gold_lined": bool(gold & (printed_ids(output) | lined_ids(output))),
                    "best_holds": bool(gold & first_passage_ids(output)),
                    "chars": len(output),
                    "widest": max((len(line) for line in output.splitlines()), default=0),
                }
            )
    return rows


def summary(label: str, rows: list[dict], sets: tuple[str, ...] = NOVELS) -> list[str]:
    lines = []
    for name in (*sets, "all"):
        part = [r for r in rows if name in ("all", r["set"])]
        gold = sum(r["gold_printed"] for r in part)
        lined = sum(r.get("gold_lined", r["gold_printed"]) for r in part)
        best = sum(r.get("best_holds", False) for r in part)
        lines.append(
            f"| {label} | {name} | {len(part)} | {gold} ({100 * gold / len(part):.0f}%) | "
            f"{lined} ({100 * lined / len(part):.0f}%) | {best} ({100 * best / len(part):.0f}%) | "
            f"{statistics.median(r['chars'] for r in part):,.0f} | {max(r['chars'] for r in part):,} | "
            f"{max(r['widest'] for r in part):,} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=None, help="a revision to measure as well, paired")
    parser.add_argument("--out", type=Path, default=None, help="write the rows here (JSON Lines)")
    parser.add_argument("--find-args", default="", help="more of find's options, as one string (--max-chars 3500)")
    parser.add_argument("--sets", default=",".join(NOVELS), help="question sets (names in benchmarks/data or the dev sets)")
    parser.add_argument("--books", type=Path, default=None, help="the folder of the sets' books, where not the records' paths")
    args = parser.parse_args()
    extra = tuple(args.find_args.split())
    sets = tuple(args.sets.split(","))
    unknown = [name for name in sets if name not in SETS and not (REPO / "benchmarks" / "data" / f"{name}.jsonl").exists()]
    if unknown:
        raise SystemExit(f"no question set {', '.join(unknown)}: name the dev sets or files of benchmarks/data")
    args.books = args.books.resolve() if args.books else None  # a --before checkout runs elsewhere
    runs = {"now": measure(REPO, extra, sets, args.books)}
    if args.before:
        with tempfile.TemporaryDirectory() as tmp:
            tree = Path(tmp) / "before"
            subprocess.run(["git", "worktree", "add", "--detach", str(tree), args.before], cwd=REPO, check=True, capture_output=True)
            try:
                runs = {"before": measure(tree, extra, sets, args.books), **runs}
            finally:
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO, check=False, capture_output=True)
    print(
        "| run | set | questions | gold printed whole | whole or by its line | best passage holds it "
        "| median characters | most characters | widest line |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for label, rows in runs.items():
        print("\n".join(summary(label, rows, sets)))
    if args.out:
        args.out.write_text("".join(json.dumps({"run": k, **r}) + "\n" for k, rows in runs.items() for r in rows))


if __name__ == "__main__":
    main()
