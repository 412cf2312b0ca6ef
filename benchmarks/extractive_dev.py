"""Open answers of the embedded default on the dev sets, before and after a change, paired.

Runs `cwread eval -m pipeline` on the open records of the fairytale anthology, the dev novel
(novelqa) and the questions written for The Hound and The Moonstone (benchmarks/data), with
this checkout and with the checkout of `--before REV` (a git worktree), and prints token-F1
of each with the paired difference and its 95% bootstrap interval, and what is shown: the
share of questions abstained on, and the share of shown answers that quote a gold paragraph.
No model is asked: the embedded default answers extractively.

    python benchmarks/extractive_dev.py --before HEAD~1 [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from cwread.eval.metrics import bootstrap_interval

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
SETS = {
    "fairytale": DATA / "fairytale" / "fairytale.jsonl",
    "novelqa": DATA / "novelqa" / "novelqa.jsonl",
    "hound": REPO / "benchmarks" / "data" / "hound.jsonl",
    "moonstone": REPO / "benchmarks" / "data" / "moonstone.jsonl",
}


def open_record_list(source: Path) -> list[dict]:
    """The open records of `source`, their documents as absolute paths."""
    records = []
    for line in source.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["kind"] == "open":
            records.append({**record, "doc": str((source.parent / record["doc"]).resolve())})
    return records


def open_records(source: Path, target: Path) -> None:
    """The open records of `source` (open_record_list) written to `target`, one a line."""
    target.write_text("".join(json.dumps(r) + "\n" for r in open_record_list(source)), encoding="utf-8")


def evaluate(checkout: Path, records: Path, rows: Path) -> dict[str, dict]:
    """Each record's row from `cwread eval` run on `checkout`'s source."""
    rows.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    subprocess.run(
        [sys.executable, "-c", "from cwread.cli import entry; entry()", "eval", str(records), "-m", "pipeline", "--out", str(rows),
         "--answer", "extractive"],  # on a novel the default now shows passages (passages.py)
        cwd=checkout, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    return {r["id"]: r for r in map(json.loads, rows.read_text(encoding="utf-8").splitlines())}


def shown(rows: dict[str, dict]) -> str:
    """Abstained %, and of the answers shown, the % quoting a gold paragraph (count)."""
    answered = [r for r in rows.values() if not r["abstained"]]
    gold = sum(1 for r in answered if r.get("cited_gold"))
    share = f"{100 * gold / len(answered):.1f}" if answered else "–"
    return f"{100 * (len(rows) - len(answered)) / len(rows):.1f} | {share} ({gold}/{len(answered)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="HEAD", help="the git revision to compare with")
    parser.add_argument("--out", type=Path, default=None, help="keep the rows here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.out or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        before = Path(tmp) / "before"
        subprocess.run(["git", "worktree", "add", "--detach", str(before), args.before], cwd=REPO, check=True, capture_output=True)
        try:
            print(
                "| set | open | F1 before | F1 after | paired difference | abstained % before | gold-quoted % of shown before "
                "| abstained % after | gold-quoted % of shown after |"
            )
            print("|---|---|---|---|---|---|---|---|---|")
            for name, source in SETS.items():
                records = work / f"{name}-open.jsonl"
                open_records(source, records)
                was = evaluate(before, records, work / f"{name}-before.rows.jsonl")
                now = evaluate(REPO, records, work / f"{name}-after.rows.jsonl")
                diff = [now[k]["f1"] - was[k]["f1"] for k in now]
                low, high = bootstrap_interval(diff)
                mean = lambda v: 100 * sum(v) / len(v)  # noqa: E731
                print(
                    f"| {name} | {len(now)} | {mean([r['f1'] for r in was.values()]):.1f} | "
                    f"{mean([r['f1'] for r in now.values()]):.1f} | "
                    f"{mean(diff):+.1f} [{100 * low:+.1f}, {100 * high:+.1f}] | {shown(was)} | {shown(now)} |"
                )
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=REPO, capture_output=True, check=False)


if __name__ == "__main__":
    main()
