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


def run_training(args: argparse.Namespace) -> int:
    import json

    from training import train

    rows_path = Path(args.data) / f"{args.command}.jsonl"
    if not rows_path.is_file():
        print(
            f"training: error: {rows_path} not found; build it with `python -m training data`",
            file=sys.stderr,
        )
        return 2
    rows = [json.loads(line) for line in rows_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = rows[: args.limit] if args.limit else rows
    profile = train.PROFILES[args.profile]
    if profile.name == "cpu-test":
        texts = [m["content"] for r in rows for m in r["prompt"]]
        model, tokenizer = train.tiny_model_and_tokenizer(texts, seed=args.seed)
    elif profile.name == "cpu-small":
        model, tokenizer = train.smollm2_model_and_tokenizer()
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(args.base, torch_dtype="bfloat16")
        tokenizer = AutoTokenizer.from_pretrained(args.base)
    out = Path(args.out)
    trainer = train.grpo(
        args.command, rows, model, tokenizer, profile, out / "run", max_steps=args.steps, seed=args.seed
    )
    merged = train.merge_and_save(trainer, tokenizer, out / "merged")
    log = (out / "run" / "metrics.jsonl").read_text().splitlines()
    first, last = json.loads(log[0])["reward"], json.loads(log[-1])["reward"]
    print(f"{args.command}: {len(log)} steps, reward {first:.3f} -> {last:.3f}; merged model in {merged}")
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
    for agent in ("finder", "interpreter"):
        t = sub.add_parser(agent, help=f"GRPO + LoRA on {agent}.jsonl, then merge the adapter")
        t.add_argument("--profile", default="cpu-test", choices=["cpu-test", "cpu-small", "gpu"])
        t.add_argument("--data", default="training/data", help="folder with finder.jsonl / interpreter.jsonl")
        t.add_argument("--out", default=f"training/runs/{agent}")
        t.add_argument(
            "--base", default="Qwen/Qwen3-4B-Instruct-2507", help="gpu profile: base model path or name"
        )
        t.add_argument("--steps", type=int, default=None, help="override the profile's max steps")
        t.add_argument("--limit", type=int, default=None, help="use only the first N examples")
        t.add_argument("--seed", type=int, default=0)
        t.set_defaults(run=run_training)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())
