"""A reader's answer (#77, item 2): which of a model's open answers each support rule shows, on
the dev novels and the tales, with a model that writes.

Runs `cwread eval -m pipeline` with the given GGUF on the embedded backend (the Finder off: on 2
CPU cores a writing model's Finder reads for minutes a question; packets of B_c 5,000
characters, a 4,096-token context), once per rule: containment (every content word of the
answer quoted, the default) and quoted answers (`--quoted-answers`: its quotes verbatim, in the
packet and naming whom it names). The second run of a set costs seconds: its model calls come from the
call cache. Prints, per set and rule, the table of `passages.py`: shown, gold quoted among
shown with its 95% Wilson interval, wrong shown (shown, quoting no gold: an exit 0 a script
would trust), token-F1 over shown and over all (withheld: 0), gold among the passages given
instead on a novel; then the model's own words with every one shown, for scale.

    python benchmarks/reader_answer.py --gguf MODEL.gguf [--out DIR [--reuse]] [--tales 40]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from extractive_dev import SETS, open_record_list
from passages import header, line, share

from cwread.eval.metrics import best_over_references, token_f1

NOVELS = ("novelqa", "hound", "moonstone")
BUDGET = ("--finder", "off", "--set", "budget.b_c=5000", "--num-ctx", "4096")
RULES = {
    "containment (default)": (),
    "quoted answers (`--set answer.quoted_answers=on`)": ("--set", "answer.quoted_answers=on"),
}


def rows_of(records: Path, out: Path, gguf: str, flags: tuple[str, ...], reuse: bool) -> dict[str, dict]:
    if not (reuse and out.is_file()):
        out.unlink(missing_ok=True)
        env = {**os.environ, "OLLAMA_HOST": "http://127.0.0.1:9"}  # the embedded backend, whatever serves here
        subprocess.run(
            [sys.executable, "-m", "cwread", "eval", str(records), "-m", "pipeline", "--gguf", gguf, *BUDGET,
             *flags, "--out", str(out)],
            check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    return {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}


def all_shown(name: str, records: list[dict], rows: dict[str, dict]) -> str:
    """The model's own words, every one shown: its F1, and its quotes' gold."""
    by_id = {r["id"]: r for r in records}
    words = [r for r in rows.values() if r.get("model_answer")]
    gold = sum(
        1 for r in words if {pid for pid, _ in r.get("model_quotes") or ()} & set(by_id[r["id"]].get("evidence") or ())
    )
    f1 = [best_over_references(token_f1, r["model_answer"], by_id[r["id"]]["answers"]) for r in words]
    over_shown = f"{100 * sum(f1) / len(f1):.1f}" if f1 else "–"
    return (
        f"| {name} | {len(rows)} | the model's words, all shown (for scale) | {len(words)} | "
        f"{share(gold, len(words))} | {len(words) - gold} | {over_shown} | {100 * sum(f1) / len(rows):.1f} | – |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", required=True, help="the model that writes (e.g. Qwen2.5-Coder-1.5B Q4_K_M)")
    parser.add_argument("--out", type=Path, default=None, help="keep the rows here")
    parser.add_argument("--reuse", action="store_true", help="read the rows kept in --out rather than run again")
    parser.add_argument("--tales", type=int, default=40, help="fairytale questions, evenly spaced (of 200)")
    args = parser.parse_args()
    print(header("rule", "gold among the passages given"))
    with tempfile.TemporaryDirectory() as tmp:
        work = args.out or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for name in ("fairytale", *NOVELS):
            records = open_record_list(SETS[name])
            if name == "fairytale":
                records = [records[i * len(records) // args.tales] for i in range(args.tales)]
            source = work / f"{name}-open.jsonl"
            source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
            for i, (label, flags) in enumerate(RULES.items()):
                rows = rows_of(source, work / f"{name}-reader-{i}.rows.jsonl", args.gguf, flags, args.reuse)
                print(line(name, label, rows), flush=True)
            print(all_shown(name, records, rows), flush=True)


if __name__ == "__main__":
    main()
