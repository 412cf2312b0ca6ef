"""How well a Finder tells YES from NO on held-out training examples, teacher-forced.

For each Finder example the model is given the prompt and the reference reason (as
`training.train.decision_example` builds them) and scored at the label: ln P(YES) - ln P(NO),
each label summing the first tokens that could begin it. Reports accuracy at score 0 and the
AUC (the chance a YES example outscores a NO one), with 95% bootstrap intervals, for the base
SmolLM2-135M and, with --adapter, the base with a peft LoRA adapter. The examples are those a
`python -m training finder --warm-start N` run with the same --seed and --max-prompt-chars did
not train on (it trains on the last N of the shuffled rows).

    python benchmarks/finder_decision.py --data training/data --warm-start 1000 \
        --max-prompt-chars 2500 --adapter runs/finder-dec/warm-start/adapter --limit 300
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def label_first_tokens(tokenizer, label: str) -> list[int]:
    """Ids of the vocabulary's tokens that are non-empty prefixes of `label`."""
    return sorted(
        i for i in range(len(tokenizer)) if (t := tokenizer.decode([i])) and label.startswith(t)
    )


def held_out(rows: list[dict], seed: int, max_prompt_chars: int | None, warm_start: int) -> list[dict]:
    """The rows a warm start with these settings did not see (it trains on the last N)."""
    from training.data import training_order

    rows = training_order(rows, seed, max_prompt_chars)
    return rows[:-warm_start] if warm_start else rows


def auc(scores: list[float], labels: list[bool]) -> float:
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def bootstrap(stat, scores, labels, rounds: int = 1000, seed: int = 0) -> tuple[float, float]:
    rng = random.Random(seed)
    n = len(scores)
    values = []
    for _ in range(rounds):
        idx = [rng.randrange(n) for _ in range(n)]
        values.append(stat([scores[i] for i in idx], [labels[i] for i in idx]))
    values.sort()
    return values[int(0.025 * rounds)], values[int(0.975 * rounds) - 1]


def accuracy(scores, labels) -> float:
    return sum((s >= 0) == y for s, y in zip(scores, labels, strict=True)) / len(scores)


def main() -> int:
    import torch

    from training import train

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder with finder.jsonl")
    parser.add_argument("--adapter", help="peft adapter folder (else the base model)")
    parser.add_argument("--warm-start", type=int, default=0, help="the training run's --warm-start")
    parser.add_argument("--max-prompt-chars", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=300)
    args = parser.parse_args()

    rows = [json.loads(line) for line in (Path(args.data) / "finder.jsonl").read_text().splitlines() if line]
    rows = held_out(rows, args.seed, args.max_prompt_chars, args.warm_start)[: args.limit]
    model, tokenizer = train.smollm2_model_and_tokenizer()
    if args.adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, args.adapter)
    model.eval()
    yes_ids, no_ids = label_first_tokens(tokenizer, "YES"), label_first_tokens(tokenizer, "NO")
    scores, labels = [], []
    with torch.no_grad():
        for row in rows:
            prompt = train.decision_example(row, tokenizer)["prompt"]
            ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"]
            logp = torch.log_softmax(model(ids).logits[0, -1].float(), dim=-1)
            score = torch.logsumexp(logp[yes_ids], 0) - torch.logsumexp(logp[no_ids], 0)
            scores.append(float(score))
            labels.append(row["label"] == "YES")
    acc_low, acc_high = bootstrap(accuracy, scores, labels)
    auc_low, auc_high = bootstrap(auc, scores, labels)
    kept = sum(s >= 0 for s in scores) / len(scores)
    print(
        f"{args.adapter or 'base SmolLM2-135M'}: {len(rows)} held-out examples ({sum(labels)} YES); "
        f"accuracy {100 * accuracy(scores, labels):.1f}% [{100 * acc_low:.1f}-{100 * acc_high:.1f}], "
        f"AUC {auc(scores, labels):.3f} [{auc_low:.3f}-{auc_high:.3f}], says YES to {100 * kept:.1f}%"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
