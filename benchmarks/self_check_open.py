"""Does the Interpreter's second pass earn its call on a free-form answer (or a claim's verdict)?

The method's self-check (τ(q)) re-asks the Interpreter for claims and for questions worded
with negation, cause or inference: "why" questions, most of them free-form. This script pairs
two eval runs of the same records, one whose risky open questions had the second pass and
one without, and prints, per set and pooled: the questions that had the pass, the answers it
changed, the paired token-F1 difference of the model's answers (with its 95% bootstrap
interval) and the model calls each run made.

    python benchmarks/self_check_open.py [--kind open|claim|mcq] DATA ROWS_WITH ROWS_WITHOUT [...]

ROWS_WITH: `cwread eval DATA -m no-finder ... --out ROWS_WITH` at a revision whose auto
self-check ran for risky free-form questions (9fb5c24 and before); ROWS_WITHOUT: the same
command now (auto leaves the pass out for them). With the call cache, the second run asks
the model nothing new.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from answer_support import references_of  # benchmarks/, beside this script

from cwread.eval.metrics import best_over_references, bootstrap_interval, token_f1
from cwread.eval.run import read_rows


def paired(data: str, with_path: str, without_path: str, kind: str = "open") -> dict:
    """The self-checked questions of `kind` in one set: their score differences (token-F1 of
    an open answer, else 1 for a right label), changed answers, calls."""
    references = references_of(data)

    def read(path: str) -> dict[str, dict]:
        return {r["id"]: r for r in read_rows(Path(path)) if r.get("kind") == kind}

    def score(row: dict) -> float:
        if kind == "open":
            return best_over_references(token_f1, row["model_answer"] or "", references[row["id"]])
        return 1.0 if row.get("correct") else 0.0

    checked, plain = read(with_path), read(without_path)
    differences, changed = [], 0
    for key, row in checked.items():
        if not row["self_checked"] or key not in plain:
            continue
        other = plain[key]
        differences.append(score(row) - score(other))
        changed += (row["model_answer"] or "") != (other["model_answer"] or "")
    return {
        "questions": len(checked),
        "differences": differences,
        "changed": changed,
        "calls_with": sum(r["model_calls"] for r in checked.values()),
        "calls_without": sum(plain[k]["model_calls"] for k in checked if k in plain),
    }


def line(name: str, result: dict) -> str:
    d = result["differences"]
    low, high = bootstrap_interval(d) if d else (0.0, 0.0)
    mean = sum(d) / len(d) if d else 0.0
    more = result["calls_with"] / max(1, result["calls_without"]) - 1
    return (
        f"| {name} | {result['questions']} | {len(d)} | {result['changed']} | "
        f"{100 * mean:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}] | "
        f"{result['calls_with']} / {result['calls_without']} (+{100 * more:.0f}%) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("triples", nargs="+", help="DATA ROWS_WITH ROWS_WITHOUT, repeated")
    parser.add_argument("--kind", choices=("open", "claim", "mcq"), default="open", help="the questions compared")
    args = parser.parse_args()
    if len(args.triples) % 3:
        parser.error("give DATA ROWS_WITH ROWS_WITHOUT, repeated")
    results = [
        (Path(args.triples[i]).stem, paired(*args.triples[i : i + 3], kind=args.kind))
        for i in range(0, len(args.triples), 3)
    ]
    measure = "token-F1" if args.kind == "open" else "accuracy"
    print(f"| set | {args.kind} questions | self-checked | answers changed | {measure} with - without, points [95%] | model calls with / without |")
    print("|---|---|---|---|---|---|")
    for name, result in results:
        print(line(name, result))
    if len(results) > 1:
        pooled = {key: sum((r[key] for _, r in results), [] if key == "differences" else 0) for key in results[0][1]}
        print(line("pooled", pooled))


if __name__ == "__main__":
    main()
