"""Which open answers the embedded default shows, per dev set: the rule that shows an extractive
answer on a story and the passages on a novel (AnswerMode.PASSAGES), beside the extractive
answer shown everywhere (the default before it, `--answer extractive`) and the ranker alone
(no model: `--finder-lora none --set answer.reader=off --answer extractive`).

For each set and configuration: the answers shown; how many of them quote a gold paragraph, as
a share with its 95% Wilson interval; the wrong ones shown (shown, quoting no gold: each an exit
0 a script would trust); token-F1 over shown answers and over all questions (a withheld answer
scores 0); and, where passages stand in for an answer, how often a gold paragraph is among them.

    python benchmarks/passages.py [--out DIR [--reuse]]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from answer_threshold import rows_of
from extractive_dev import SETS, open_records

from cwread.eval.metrics import wilson_interval

CONFIGS = {
    "ranker alone (no model)": ("--finder-lora", "none", "--set", "answer.reader=off", "--answer", "extractive"),
    "extractive everywhere (before)": ("--answer", "extractive"),
    "the rule (default)": (),
}


def share(hits: int, n: int) -> str:
    if n == 0:
        return "– (0 shown)"
    low, high = wilson_interval(hits, n)
    return f"{100 * hits / n:.1f}% ({hits}/{n}) [{100 * low:.0f}-{100 * high:.0f}]"


def line(name: str, label: str, rows: dict[str, dict]) -> str:
    shown = [r for r in rows.values() if r["answer"] is not None]
    gold = sum(1 for r in shown if r.get("cited_gold"))
    passages = [r for r in rows.values() if r.get("status") == "passages"]
    among = sum(1 for r in passages if r.get("cited_gold"))
    over_shown = f"{100 * sum(r['f1'] for r in shown) / len(shown):.1f}" if shown else "–"
    return (
        f"| {name} | {len(rows)} | {label} | {len(shown)} | {share(gold, len(shown))} | {len(shown) - gold} | "
        f"{over_shown} | {100 * sum(r['f1'] for r in shown) / len(rows):.1f} | "
        f"{share(among, len(passages)) if passages else '–'} |"
    )


def header(setting: str, passages: str) -> str:
    """The table's head, its third column named `setting` and its last `passages`."""
    return (
        f"| set | questions | {setting} | shown | gold quoted among shown [95%] | wrong shown | "
        f"F1 over shown | F1 over all | {passages} |\n" + "|---" * 9 + "|"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="keep the rows here")
    parser.add_argument("--reuse", action="store_true", help="read the rows kept in --out rather than run again")
    args = parser.parse_args()
    print(header("configuration", "gold among the passages shown"))
    with tempfile.TemporaryDirectory() as tmp:
        work = args.out or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for name, source in SETS.items():
            records = work / f"{name}-open.jsonl"
            open_records(source, records)
            for i, (label, flags) in enumerate(CONFIGS.items()):
                rows = rows_of(records, work / f"{name}-passages-{i}.rows.jsonl", *flags, reuse=args.reuse)
                print(line(name, label, rows), flush=True)


if __name__ == "__main__":
    main()
