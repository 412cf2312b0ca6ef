"""`python -m training`: build the agents' training data (and, with trl, train them).

python -m training data [--split train] [--source ../shared/data/fairytaleqa] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from training import data


def build_data(args: argparse.Namespace) -> int:
    source = Path(args.source)
    split_dir = source / args.split
    if not split_dir.is_dir():
        print(f"training: error: {split_dir} is not a FairytaleQA split folder", file=sys.stderr)
        return 2
    finder = data.finder_examples(split_dir, seed=args.seed)
    interpreter = data.interpreter_examples(split_dir, seed=args.seed)
    out = Path(args.out)
    data.write_jsonl(finder, out / "finder.jsonl")
    data.write_jsonl(interpreter, out / "interpreter.jsonl")
    (out / "DATA_CARD.md").write_text(
        data.data_card(finder, interpreter, args.split, source), encoding="utf-8"
    )
    print(f"{len(finder)} Finder and {len(interpreter)} Interpreter examples in {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("data", help="build finder.jsonl, interpreter.jsonl and a data card")
    p.add_argument("--split", default="train", choices=["train", "val"])
    p.add_argument("--source", default=str(data.DEFAULT_SOURCE))
    p.add_argument("--out", default="training/data")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=build_data)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())
