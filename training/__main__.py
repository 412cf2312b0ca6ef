"""`python -m training`: build the agents' training data, train them, export them.

python -m training data --source FAIRYTALEQA_DIR [--split train] [--out DIR]   (or $CWREAD_FAIRYTALEQA)
python -m training finder|interpreter --profile cpu-test|cpu-small|gpu [--steps N] [--out DIR]
python -m training export --adapter RUN/adapter --out F.gguf [--modelfile M --base B --family F]
python -m training export --merged RUN/merged --out F.gguf [--modelfile M --family F]
python -m training smoke --source FAIRYTALEQA_DIR --out DIR   (cpu-test end to end: data, SFT, GRPO, merge, GGUF, check)
python -m training base --gguf MODEL.gguf --out DIR   (a llama/qwen2 GGUF as a transformers folder: a base to train)
python -m training scorer --base MODEL.gguf --train ROWS --dev DEV --out DIR --minutes M   (the decision-first Finder: training/decision.py)
python -m training judge-questions --books DIR --gguf MODEL.gguf --out Q.jsonl --per-book N   (a generator writes novel questions)
python -m training judge-data --source FAIRYTALEQA_DIR --questions Q.jsonl --books DIR --out DIR   (pairs.jsonl, DATA_CARD.md)
python -m training judge --data DIR/pairs.jsonl --out RUN [--layers N] [--minutes M]   (train; export to RUN/judge)
python -m training reader --source FAIRYTALEQA_DIR --books DIR --out RUN [--epochs E]   (the answer reader; export to RUN/reader)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from training import data

GPU_DEFAULT_BASE = "Qwen/Qwen3-4B-Instruct-2507"  # the paper's; give --base where no hub is reached


def _no_source() -> int:
    return _fail(f"give --source DIR (FairytaleQA's train/ and val/ CSV folders) or set ${data.SOURCE_ENV}")


def build_data(args: argparse.Namespace) -> int:
    if args.source is None:
        return _no_source()
    source = Path(args.source)
    split_dir = source / args.split
    if not split_dir.is_dir():
        return _fail(f"{split_dir} is not a FairytaleQA split folder")
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
        return _fail(f"{rows_path} not found; build it with `python -m training data`")
    rows = [json.loads(line) for line in rows_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = data.training_order(rows, args.seed, args.max_prompt_chars)
    rows = rows[: args.limit] if args.limit else rows
    profile = train.PROFILES[args.profile]
    warm = profile.warm_start if args.warm_start is None else args.warm_start
    if warm < 0 or warm >= len(rows):
        return _fail(f"--warm-start {warm} must leave examples for GRPO ({len(rows)} in all)")
    if warm and not all(r.get("target") for r in rows[-warm:]):
        return _fail(
            f"{rows_path} has no reference replies (target); rebuild it with `python -m training data`"
        )
    if args.steps == 0 and not warm:
        return _fail("--steps 0 trains nothing without a warm start")
    if args.decision_only and args.steps != 0:
        return _fail("--decision-only is a warm start alone: give --steps 0 (GRPO writes whole replies)")
    if args.lora_layers is not None and args.lora_layers < 1:
        return _fail(f"--lora-layers {args.lora_layers} must be at least 1")
    model, tokenizer = _base_model(args, profile, rows)
    out = Path(args.out)
    sft_adapter = out / "warm-start" / "adapter"
    if warm and args.resume and (sft_adapter / "adapter_config.json").is_file():
        from peft import PeftModel

        print(f"{args.command}: resuming from the warm start's adapter in {sft_adapter}", file=sys.stderr)
        model = PeftModel.from_pretrained(model, str(sft_adapter), is_trainable=True)
        rows = rows[:-warm]
    elif warm:
        # warm-start on examples GRPO will not see
        model = train.warm_start(
            rows[-warm:],
            model,
            tokenizer,
            profile,
            out / "warm-start",
            examples=warm,
            seed=args.seed,
            decision_only=args.decision_only,
            last_layers=args.lora_layers,
            until=args.sft_deadline,
        )
        rows = rows[:-warm]
    if args.steps == 0:
        print(f"{args.command}: warm start only; adapter in {out / 'warm-start' / 'adapter'}")
        return 0
    trainer = train.grpo(
        args.command,
        rows,
        model,
        tokenizer,
        profile,
        out / "run",
        max_steps=args.steps,
        seed=args.seed,
        until=args.deadline,
    )
    merged = None if args.no_merge else train.merge_and_save(trainer, tokenizer, out / "merged")
    log = [json.loads(line) for line in (out / "run" / "metrics.jsonl").read_text().splitlines()]
    rewards = [entry["reward"] for entry in log if "reward" in entry]
    curve = f"reward {rewards[0]:.3f} -> {rewards[-1]:.3f}" if rewards else "no step finished"
    print(
        f"{args.command}: {len(rewards)} steps, {curve}; adapter in {out / 'run' / 'adapter'}"
        + (f", merged model in {merged}" if merged else "")
    )
    return 0


def _base_model(args: argparse.Namespace, profile, rows: list[dict]):
    """The model to train and its tokenizer: --base (a transformers folder or name, or a llama /
    qwen2 GGUF read by training.checkpoints), else the profile's own."""
    from training import train

    if args.base is None and profile.name == "cpu-test":
        texts = [m["content"] for r in rows for m in r["prompt"]]
        return train.tiny_model_and_tokenizer(texts, seed=args.seed)
    if args.base is None and profile.name == "cpu-small":
        return train.smollm2_model_and_tokenizer()
    base = args.base or GPU_DEFAULT_BASE
    dtype = "bfloat16" if profile.bf16 else "float32"
    if base.endswith(".gguf"):
        import torch

        from training.checkpoints import load_gguf

        model, tokenizer = load_gguf(Path(base))
        return model.to(getattr(torch, dtype)), tokenizer
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(base, dtype=dtype), AutoTokenizer.from_pretrained(base)


def build_base(args: argparse.Namespace) -> int:
    from training.checkpoints import save_gguf_as_transformers

    gguf = Path(args.gguf)
    if not gguf.is_file():
        return _fail(f"{gguf} not found")
    try:
        out = save_gguf_as_transformers(gguf, Path(args.out), dtype=args.dtype)
    except (ValueError, OSError) as exc:
        return _fail(f"cannot read {gguf}: {exc}")
    print(f"{gguf.name} -> {out} ({args.dtype})")
    return 0


def _fail(message: str) -> int:
    print(f"training: error: {message}", file=sys.stderr)
    return 2


def run_scorer(args: argparse.Namespace) -> int:
    import time

    from training import decision

    for name in ("base", "train", "dev"):
        if not Path(getattr(args, name)).is_file():
            return _fail(f"--{name} {getattr(args, name)} not found")
    until = args.until if args.until is not None else time.time() + 60 * args.minutes
    report = decision.run(
        Path(args.base),
        Path(args.train),
        Path(args.dev),
        Path(args.out),
        until,
        args.family,
        val_rows=args.held_out,
        learning_rate=args.lr,
        epochs=args.epochs,
        limit=args.limit,
        log=lambda line: print(f"scorer: {line}", file=sys.stderr, flush=True),
    )
    done = report["training"]
    print(
        f"scorer: {done['examples']} examples in {done['steps']} steps (stopped by {done['stopped_by']}); "
        f"held-out AUC {report['base_auc']:.3f} -> {report['trained_auc']:.3f}; adapter {Path(args.out) / 'finder-lora.gguf'}"
    )
    return 0


def run_export(args: argparse.Namespace) -> int:
    import os

    from cwread.errors import CwreadError
    from training import export

    out = Path(args.out)
    # Modelfile paths are relative to the Modelfile's folder (Ollama resolves them from there)
    here = Path(args.modelfile).resolve().parent if args.modelfile else out.resolve().parent
    try:
        if args.adapter:
            from training.checkpoints import read_gguf_heads

            if args.base_gguf:
                base = Path(args.base_gguf)
            else:
                from cwread.backends.embedded_files import default_gguf

                base = default_gguf()
            heads = read_gguf_heads(base)
            export.export_lora_gguf(
                Path(args.adapter), out, heads["n_head"], heads["n_head_kv"], arch=heads["arch"]
            )
            from_line = args.base or str(base.resolve())
            adapter_line = "./" + os.path.relpath(out.resolve(), here)
        else:
            export.export_merged_gguf(
                Path(args.merged), out, outtype=args.outtype, pre_tokenizer=args.pre_tokenizer
            )
            from_line, adapter_line = "./" + os.path.relpath(out.resolve(), here), None
        print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")
        if args.modelfile:
            from cwread.cache import write_file_atomic

            text = export.modelfile(
                from_line, args.family, adapter=adapter_line, num_ctx=args.num_ctx, agent=args.agent
            )
            write_file_atomic(Path(args.modelfile), text)
            print(f"wrote {args.modelfile}")
    except (export.ExportError, CwreadError, OSError, ValueError, KeyError) as exc:
        return _fail(str(exc))
    return 0


def run_smoke(args: argparse.Namespace) -> int:
    """cpu-test end to end on real cwread prompts; exits 1 if llama.cpp and transformers
    disagree on the exported model's greedy continuation."""
    from dataclasses import replace

    from training import export, train

    if args.source is None:
        return _no_source()
    split_dir = Path(args.source) / args.split
    if not split_dir.is_dir():
        return _fail(f"{split_dir} is not a FairytaleQA split folder")
    out = Path(args.out)
    rows = data.training_order(data.finder_examples(split_dir, seed=args.seed), args.seed)[:64]
    data.write_jsonl(rows, out / "data" / "finder.jsonl")
    texts = [m["content"] for r in rows for m in r["prompt"]] + [r["target"] for r in rows]
    model, tokenizer = train.tiny_model_and_tokenizer(texts, seed=args.seed)
    profile = replace(train.PROFILES["cpu-test"], max_completion_length=16)
    model = train.warm_start(rows[:16], model, tokenizer, profile, out / "warm-start", examples=16)
    trainer = train.grpo("finder", rows[16:], model, tokenizer, profile, out / "run", max_steps=args.steps)
    merged = train.merge_and_save(trainer, tokenizer, out / "merged")
    try:
        gguf = export.export_merged_gguf(merged, out / "finder-cpu-test.gguf", pre_tokenizer="gpt-2")
    except export.ExportError as exc:
        return _fail(str(exc))
    (out / "Modelfile").write_text(export.modelfile(f"./{gguf.name}", "chatml"), encoding="utf-8")
    prompt = tokenizer.apply_chat_template(rows[0]["prompt"], add_generation_prompt=True, tokenize=False)
    ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    from transformers import AutoModelForCausalLM

    reloaded = AutoModelForCausalLM.from_pretrained(str(merged))
    expected = export.token_bytes(tokenizer, export.transformers_greedy(reloaded, ids, 24))
    got = export.llama_cpp_greedy(gguf, ids, 24)
    same = expected == got
    print(
        f"smoke: data {len(rows)} rows, warm start + {args.steps} GRPO steps, merged, {gguf} ({gguf.stat().st_size / 1e6:.1f} MB)"
    )
    print(f"smoke: greedy continuation, transformers == llama.cpp: {same}")
    return 0 if same else 1


def run_judge_questions(args: argparse.Namespace) -> int:
    from training import judge_data

    books = sorted(Path(args.books).glob("*.txt"))
    if not books:
        return _fail(f"no .txt books in {args.books}")
    n = judge_data.generate_questions(books, Path(args.gguf), Path(args.out), args.per_book, args.seed)
    print(f"{n} questions written to {args.out}")
    return 0


def run_judge_data(args: argparse.Namespace) -> int:
    from training import judge, judge_data

    if args.source is None:
        return _no_source()
    rows = list(judge_data.fairytale_pairs(Path(args.source) / "train", args.seed))
    if args.questions:
        novel = list(judge_data.novel_pairs(Path(args.questions), Path(args.books), args.seed))
        rows += novel * args.novel_weight  # few, and the domain the judge serves: seen more often
    out = Path(args.out)
    n = judge.write_rows(rows, out / "pairs.jsonl")
    (out / "DATA_CARD.md").write_text(judge_data.data_card(rows, args), encoding="utf-8")
    print(f"{n} pairs in {out / 'pairs.jsonl'}")
    return 0


def run_judge(args: argparse.Namespace) -> int:
    from training import judge

    rows = judge.read_rows(Path(args.data))
    out = Path(args.out)
    summary = judge.train(
        rows, out, layers=args.layers, epochs=args.epochs, batch=args.batch, lr=args.lr,
        max_length=args.max_length, minutes=args.minutes, seed=args.seed,
    )  # fmt: skip
    print(json.dumps(summary, indent=2))
    manifest = judge.export(out / "model", out / "judge", summary, args.version)
    held = [r for r in rows if r["source"] in set(summary["held_out_sources"])][:64]
    gap = judge.parity(out / "model", out / "judge", [(r["question"], r["passage"]) for r in held])
    print(f"exported to {out / 'judge'} ({manifest['sha256']['model.onnx'][:12]}...); int8 vs torch: largest gap {gap:.3f}")
    return 0


def run_reader(args: argparse.Namespace) -> int:
    from training import reader

    source = Path(args.source) / "train" if args.source else reader.SOURCE
    if not source.is_dir():
        return _fail(f"{source} is not FairytaleQA's train folder")
    rows = reader.fairytale_examples(source, args.seed)
    out = Path(args.out)
    summary = reader.train(rows, out, epochs=args.epochs, batch=args.batch, lr=args.lr, minutes=args.minutes, seed=args.seed)
    print(json.dumps(summary, indent=2))
    summary["answer_threshold"] = args.answer_threshold
    # the vocabulary kept: the tokens of FairytaleQA train and of the books given (English prose)
    texts = [path.read_text(encoding="utf-8") for path in sorted(source.glob("*.csv"))]
    if args.books:
        from training.judge_data import excluded

        books = [b for b in sorted(Path(args.books).glob("*.txt")) if not excluded(b.name)]
        texts += [b.read_text(encoding="utf-8", errors="replace") for b in books]
    manifest = reader.export(out / "model", out / "reader", summary, args.version, texts)
    held = [r for r in rows if r["source"] in set(summary["held_out_sources"])][:64]
    gap = reader.parity(out / "model", out / "reader", held)
    print(f"exported to {out / 'reader'} ({manifest['sha256']['model.onnx'][:12]}...); 4-bit vs torch: largest score gap {gap:.3f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("data", help="build finder.jsonl, interpreter.jsonl and a data card")
    p.add_argument("--split", default="train", choices=["train", "val"])
    p.add_argument(
        "--source", default=data.default_source(), help=f"FairytaleQA folder (or ${data.SOURCE_ENV})"
    )
    p.add_argument("--out", default="training/data")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=build_data)
    for agent in ("finder", "interpreter"):
        t = sub.add_parser(agent, help=f"GRPO + LoRA on {agent}.jsonl, then merge the adapter")
        t.add_argument("--profile", default="cpu-test", choices=["cpu-test", "cpu-small", "gpu", "rehearsal"])
        t.add_argument("--data", default="training/data", help="folder with finder.jsonl / interpreter.jsonl")
        t.add_argument("--out", default=f"training/runs/{agent}")
        t.add_argument(
            "--base",
            default=None,
            help="base model: a transformers folder or name, or a llama/qwen2 GGUF "
            f"(default: the profile's; gpu: {GPU_DEFAULT_BASE})",
        )
        t.add_argument(
            "--sft-deadline", type=float, default=None, help="end the warm start at this Unix time"
        )
        t.add_argument("--deadline", type=float, default=None, help="end GRPO at this Unix time")
        t.add_argument(
            "--resume",
            action="store_true",
            help="start GRPO from an earlier run's warm-start adapter in --out",
        )
        t.add_argument("--no-merge", action="store_true", help="save the adapter alone (no merged model)")
        t.add_argument(
            "--steps",
            type=int,
            default=None,
            help="override the profile's max steps (0: the warm start only)",
        )
        t.add_argument("--limit", type=int, default=None, help="use only the first N examples")
        t.add_argument("--max-prompt-chars", type=int, default=None, help="skip examples with longer prompts")
        t.add_argument(
            "--warm-start",
            type=int,
            default=None,
            help="reference replies for a format SFT before GRPO (default: the profile's; 0 = none)",
        )
        t.add_argument(
            "--decision-only",
            action="store_true",
            help="the warm start's loss on the YES/NO label alone, its reason given (with --steps 0)",
        )
        t.add_argument(
            "--lora-layers",
            type=int,
            default=None,
            help="LoRA on the last N blocks only (CPU: a faster step)",
        )
        t.add_argument("--seed", type=int, default=0)
        t.set_defaults(run=run_training)
    e = sub.add_parser("export", help="a LoRA adapter or a merged model to GGUF, with a Modelfile")
    source = e.add_mutually_exclusive_group(required=True)
    source.add_argument("--adapter", help="peft adapter folder (RUN/run/adapter): written as a GGUF LoRA")
    source.add_argument("--merged", help="merged model folder (RUN/merged): converted to a full GGUF")
    e.add_argument("--out", required=True, help="the GGUF file to write")
    e.add_argument("--base-gguf", help="the adapter's base GGUF (default: the embedded SmolLM2)")
    e.add_argument("--base", help="FROM line of the Modelfile (default: the base GGUF's path)")
    e.add_argument("--outtype", default="f16", choices=["f32", "f16", "bf16", "q8_0"])
    e.add_argument("--pre-tokenizer", help="llama.cpp pre-tokenizer name for a tokenizer unknown by hash")
    e.add_argument("--modelfile", help="also write an Ollama Modelfile here")
    e.add_argument("--family", default="smollm2", choices=["smollm2", "qwen3", "chatml"])
    e.add_argument("--num-ctx", type=int, default=8192)
    e.add_argument(
        "--agent",
        default="finder",
        choices=["finder", "interpreter"],
        help="whose reply length the Modelfile sets",
    )
    e.set_defaults(run=run_export)
    k = sub.add_parser("smoke", help="cpu-test end to end: data, warm start, GRPO, merge, GGUF, check")
    k.add_argument("--out", required=True)
    k.add_argument(
        "--source", default=data.default_source(), help=f"FairytaleQA folder (or ${data.SOURCE_ENV})"
    )
    k.add_argument("--split", default="val", choices=["train", "val"])
    k.add_argument("--steps", type=int, default=4)
    k.add_argument("--seed", type=int, default=0)
    k.set_defaults(run=run_smoke)
    b = sub.add_parser("base", help="a llama/qwen2 GGUF as a transformers folder (a base to train from)")
    b.add_argument("--gguf", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    b.set_defaults(run=build_base)
    c = sub.add_parser("scorer", help="the decision-first Finder: train its YES/NO score, measure, export")
    c.add_argument("--base", required=True, help="the base model's GGUF (llama or qwen2)")
    c.add_argument("--train", required=True, help="decision-first Finder rows (.jsonl or .jsonl.xz)")
    c.add_argument("--dev", required=True, help="the dev segments (training.data.finder_dev_set)")
    c.add_argument("--out", required=True)
    c.add_argument("--minutes", type=float, default=10.0, help="everything done within this many minutes")
    c.add_argument("--until", type=float, default=None, help="everything done by this Unix time")
    c.add_argument("--family", default="smollm2", choices=["smollm2", "qwen3", "chatml"])
    c.add_argument("--held-out", type=int, default=512, help="training rows kept out: the keep threshold's")
    c.add_argument("--lr", type=float, default=2e-4)
    c.add_argument("--epochs", type=int, default=2)
    c.add_argument("--limit", type=int, default=None, help="train on the first N rows only")
    c.set_defaults(run=run_scorer)
    q = sub.add_parser("judge-questions", help="the judge's novel questions, written by a generator model")
    q.add_argument("--books", required=True, help="a folder of public-domain novels (.txt)")
    q.add_argument("--gguf", required=True, help="the generator (e.g. Qwen2.5-Coder-1.5B-Instruct Q4_K_M)")
    q.add_argument("--out", required=True)
    q.add_argument("--per-book", type=int, default=40)
    q.add_argument("--seed", type=int, default=0)
    q.set_defaults(run=run_judge_questions)
    d = sub.add_parser("judge-data", help="the judge's training pairs and data card")
    d.add_argument("--source", default=data.default_source(), help=f"FairytaleQA folder (or ${data.SOURCE_ENV})")
    d.add_argument("--questions", default=None, help="generated novel questions (judge-questions)")
    d.add_argument("--books", default=None, help="the folder the questions' books are in")
    d.add_argument("--novel-weight", type=int, default=2, help="times each novel pair is repeated")
    d.add_argument("--out", default="training/data/judge")
    d.add_argument("--seed", type=int, default=0)
    d.set_defaults(run=run_judge_data)
    j = sub.add_parser("judge", help="train the judge (a cross-encoder) and export it to ONNX")
    j.add_argument("--data", default="training/data/judge/pairs.jsonl")
    j.add_argument("--out", default="training/runs/judge")
    j.add_argument("--layers", type=int, default=None, help="keep the base's first N layers (faster)")
    j.add_argument("--epochs", type=float, default=1.0)
    j.add_argument("--batch", type=int, default=8, help="questions a step (each with its passages)")
    j.add_argument("--lr", type=float, default=5e-5)
    j.add_argument("--max-length", type=int, default=160)
    j.add_argument("--minutes", type=float, default=None, help="stop training after this long")
    j.add_argument("--version", default="dev")
    j.add_argument("--seed", type=int, default=0)
    j.set_defaults(run=run_judge)
    r = sub.add_parser("reader", help="train the answer reader (extractive QA) and export it to ONNX")
    r.add_argument("--source", default=None, help="FairytaleQA's folder (train/ is read)")
    r.add_argument("--out", default="training/runs/reader")
    r.add_argument("--epochs", type=float, default=2.0)
    r.add_argument("--batch", type=int, default=16, help="windows a step")
    r.add_argument("--lr", type=float, default=5e-5)
    r.add_argument("--minutes", type=float, default=None, help="stop training after this long")
    r.add_argument("--books", default=None, help="a folder of novels (.txt) whose words the reader's vocabulary keeps")
    r.add_argument("--answer-threshold", type=float, default=-6.0,
                   help="the score under which no answer is shown, written to reader.json (choose it on dev data)")  # fmt: skip
    r.add_argument("--version", default="dev")
    r.add_argument("--seed", type=int, default=0)
    r.set_defaults(run=run_reader)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())
