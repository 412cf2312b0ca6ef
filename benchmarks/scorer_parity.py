"""Parity of the Finder's score read in transformers (training/decision.py, what the GPU lane
measures with) and in llama.cpp (what cwread runs): ln P(YES) - ln P(NO) after `<answer>` on
the same decision-first prompts, for a GGUF and optionally a LoRA adapter.

    python benchmarks/scorer_parity.py --dev lane-kit/stage/base/dev.jsonl.xz [--gguf F] [-n 12]
    python benchmarks/scorer_parity.py --dev ... --lora finder-lora.gguf --scores benchmarks/results/lane-a/scores.jsonl

With --scores, the transformers side is the lane's own (the `trained` column the GPU wrote, or
--column base), so an adapter that came home is checked without training anything here.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cwread.agents import shared
from cwread.backends.embedded import EmbeddedBackend
from cwread.backends.embedded_files import default_gguf
from training import decision
from training.checkpoints import load_gguf


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dev", required=True, help="dev segments (training.data.finder_dev_set), .jsonl[.xz]"
    )
    parser.add_argument("--gguf", default=None, help="default: the embedded SmolLM2")
    parser.add_argument("--lora", default=None, help="a GGUF LoRA adapter for llama.cpp")
    parser.add_argument(
        "--scores", default=None, help="the lane's scores.jsonl: its column stands for transformers"
    )
    parser.add_argument("--column", default="trained", choices=["trained", "base"])
    parser.add_argument("-n", type=int, default=12, help="segments compared")
    args = parser.parse_args()
    gguf = Path(args.gguf) if args.gguf else default_gguf()
    rows = decision.dev_prompts(decision.read_jsonl(Path(args.dev)))[: args.n]
    t = time.time()
    if args.scores:  # the lane's rows are the dev records in the same order
        ours = [x for row in decision.read_jsonl(Path(args.scores)) for x in row[args.column]][: len(rows)]
    else:
        model, tokenizer = load_gguf(gguf)
        ours = decision.score_prompts(model, tokenizer, rows)
    ours_s = time.time() - t
    backend = EmbeddedBackend(gguf, num_ctx=4096, lora=args.lora)
    theirs, t = [], time.time()
    for row in rows:
        theirs.append(shared.decision_score(backend, row["prompt"]))
    theirs_s = time.time() - t
    gaps = [abs(a - b) for a, b in zip(ours, theirs, strict=True)]
    order = lambda xs: sorted(range(len(xs)), key=lambda i: -xs[i])  # noqa: E731
    print(f"{gguf.name}" + (f" + {Path(args.lora).name}" if args.lora else "") + f": {len(rows)} segments")
    print("transformers: " + " ".join(f"{x:+.3f}" for x in ours) + f"  ({ours_s:.1f} s)")
    print("llama.cpp:    " + " ".join(f"{x:+.3f}" for x in theirs) + f"  ({theirs_s:.1f} s)")
    print(
        f"|difference|: median {statistics.median(gaps):.3f}, max {max(gaps):.3f}; "
        f"same sign {sum((a >= 0) == (b >= 0) for a, b in zip(ours, theirs, strict=True))}/{len(rows)}; "
        f"same top 3 {set(order(ours)[:3]) == set(order(theirs)[:3])}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
