"""The Finder as a scorer: its decision-first reply trained and read in one forward pass.

With `--set finder.reply=decision-first` the Finder answers `<answer>YES</answer>` or
`<answer>NO</answer>` and cwread reads its score, ln P(YES) - ln P(NO), at the first token
after `<answer>` (`cwread.backends.label_logprobs`: the log-probabilities of the tokens that
can begin each label, summed). Here the same score is computed for a batch of prompts in one
forward pass (`score_prompts`), and trained (`train`): LoRA on every linear layer, a binary
cross-entropy on that score against the segment's gold label.

Why not GRPO for this reply: a decision-first reply is one choice between two labels, so
GRPO's group of sampled replies only estimates the gradient of the expected decision reward,
p(YES) R_yes + (1 - p(YES)) R_no, which is known exactly from the same forward pass; the
cross-entropy on the score follows that gradient's sign on every example with no sampling, no
reference model and no generation (benchmarks/README.md, the GPU lane's arithmetic).

Plain torch and peft, no trl or datasets: the GPU image has both, and nothing else need travel.
"""

from __future__ import annotations

import collections
import functools
import json
import lzma
import math
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path

LABELS = ("YES", "NO")
ANSWER_OPEN = "<answer>"


def read_jsonl(path: Path) -> list[dict]:
    """Rows of a .jsonl or .jsonl.xz file."""
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_jsonl(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(partial, "wt", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    partial.replace(path)


def prompt_text(tokenizer, messages: list[dict]) -> str:
    """The text llama.cpp reads before the label: the chat-formatted prompt, then `<answer>`
    (which the grammar makes the reply's first tokens)."""
    return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False) + ANSWER_OPEN


@functools.cache  # a scan of the whole vocabulary (151k tokens for Qwen): once per tokenizer
def label_token_ids(tokenizer) -> tuple[list[int], list[int]]:
    """For YES and NO, the vocabulary's tokens that can begin the label ("Y", "YE", "YES"):
    the alternatives whose log-probabilities cwread sums for a label's score."""
    sets: tuple[list[int], list[int]] = ([], [])
    for token_id in range(len(tokenizer)):
        text = tokenizer.decode([token_id])
        for label, ids in zip(LABELS, sets, strict=True):
            if text and label.startswith(text):
                ids.append(token_id)
    if not all(sets):
        raise ValueError("the tokenizer has no token that begins YES or NO")
    return sets


def _batches(lengths: list[int], batch_tokens: int, most: int) -> Iterator[list[int]]:
    """Indices grouped so that each padded batch holds at most `batch_tokens` tokens (and at
    most `most` rows), longest first: similar lengths share a batch, padding stays small."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batch: list[int] = []
    for i in order:
        if (batch and (len(batch) + 1) * lengths[batch[0]] > batch_tokens) or len(batch) >= most:
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


def _label_scores(model, tokenizer, ids: list[list[int]], label_ids, device):
    """The score of each row of token ids: one padded forward pass, read at each row's last
    token. The padding is on the right, so every position attends to at least one real token:
    left padding gives the pad positions nothing to attend to, and a fully masked attention
    row is where NaNs come from on a GPU, through the backward pass into every weight."""
    import torch

    width = max(len(x) for x in ids)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    input_ids = torch.full((len(ids), width), pad, dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for row, x in enumerate(ids):
        input_ids[row, : len(x)] = torch.tensor(x)
        mask[row, : len(x)] = 1
    input_ids, mask = input_ids.to(device), mask.to(device)
    last = torch.tensor([len(x) - 1 for x in ids], device=device)
    # the decoder's hidden states, and the head only at the positions read (the logits of
    # every position would be rows x width x vocabulary)
    hidden = model.get_decoder()(input_ids=input_ids, attention_mask=mask, use_cache=False).last_hidden_state
    picked = hidden[torch.arange(len(ids), device=device), last]
    logprobs = torch.log_softmax(model.get_output_embeddings()(picked).float(), dim=-1)
    yes = torch.logsumexp(logprobs[:, label_ids[0]], dim=-1)
    no = torch.logsumexp(logprobs[:, label_ids[1]], dim=-1)
    return yes - no


def encode(tokenizer, rows: list[dict], max_tokens: int | None = None) -> list[list[int]]:
    ids = [
        tokenizer(prompt_text(tokenizer, r["prompt"]), add_special_tokens=False)["input_ids"] for r in rows
    ]
    return [x[-max_tokens:] if max_tokens else x for x in ids]


def score_prompts(model, tokenizer, rows: list[dict], batch_tokens: int = 16384, device=None) -> list[float]:
    """ln P(YES) - ln P(NO) after `<answer>` for each row's `prompt` (chat messages)."""
    import torch

    device = device or next(model.parameters()).device
    label_ids = label_token_ids(tokenizer)
    ids = encode(tokenizer, rows)
    scores = [0.0] * len(rows)
    model.eval()
    queue = collections.deque(_batches([len(x) for x in ids], batch_tokens, 256))
    out_of_memory = _oom_type()
    with torch.no_grad(), _autocast(device):
        while queue:
            batch = queue.popleft()
            try:
                values = _label_scores(model, tokenizer, [ids[i] for i in batch], label_ids, device)
            except out_of_memory as exc:
                batch_tokens = _halved(batch_tokens, batch, ids, exc)
                queue = collections.deque(_resplit([batch, *queue], ids, batch_tokens, 256))
                continue
            for i, value in zip(batch, values.tolist(), strict=True):
                scores[i] = round(value, 4)
    return scores


class _NoOOM(Exception):
    """Stands for torch's out-of-memory error where torch is not imported yet."""


def _oom_type() -> type[BaseException]:
    try:
        import torch
    except ImportError:
        return _NoOOM
    return getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError


MIN_BATCH_TOKENS = 1024  # halving stops here: a batch this small that does not fit is a real fault


def _halved(batch_tokens: int, batch: list[int], ids: list[list[int]], exc: BaseException) -> int:
    """The token budget of a batch after an out-of-memory error: half, its memory freed first
    (with expandable segments, freed blocks serve the smaller batches)."""
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    smaller = batch_tokens // 2
    if smaller < MIN_BATCH_TOKENS or (len(batch) == 1 and len(ids[batch[0]]) <= smaller):
        raise exc
    print(f"out of memory at {batch_tokens} tokens a batch: {smaller} now", flush=True)
    return smaller


def _resplit(batches: list[list[int]], ids: list[list[int]], batch_tokens: int, most: int) -> list[list[int]]:
    """The same rows in the same order of batches, each cut to hold at most `batch_tokens`."""
    out: list[list[int]] = []
    for batch in batches:
        lengths = [len(ids[i]) for i in batch]
        out += [[batch[j] for j in part] for part in _batches(lengths, batch_tokens, most)]
    return out


def _autocast(device):
    import contextlib

    import torch

    if getattr(device, "type", str(device)) == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def add_lora(model, r: int = 16, alpha: int = 32):
    """LoRA on every linear layer of the blocks (no head: it exports as a GGUF adapter)."""
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(
        r=r, lora_alpha=alpha, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM"
    )
    return get_peft_model(model, config)


NON_FINITE_STOP = 8  # non-finite steps in a row that stop a training: it has diverged


def train(
    model,
    tokenizer,
    rows: list[dict],
    out_dir: Path,
    until: float,
    learning_rate: float = 2e-4,
    batch_tokens: int = 32768,
    most_rows: int = 64,
    warmup_steps: int = 20,
    epochs: int = 2,
    seed: int = 0,
    max_tokens: int = 2048,
    log: Callable[[str], None] = print,
) -> dict:
    """Train `model` (already carrying its LoRA: `add_lora`) on rows with `prompt` and `label`
    until the rows run out (`epochs` passes) or the wall clock reaches `until`, after the batch in
    progress. Every step is appended to out_dir/metrics.jsonl as it happens. Returns what was
    done: steps, examples, the stop's reason."""
    import torch

    device = next(model.parameters()).device
    label_ids = label_token_ids(tokenizer)
    ids = encode(tokenizer, rows, max_tokens)
    targets = [1.0 if r["label"] == "YES" else 0.0 for r in rows]
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=learning_rate, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup_steps))
    out_dir.mkdir(parents=True, exist_ok=True)
    metrics = out_dir / "metrics.jsonl"
    metrics.write_text("", encoding="utf-8")
    rng = random.Random(seed)
    step, seen, began, stop = 0, 0, time.time(), "the rows ran out"
    halvings, peak, skipped, in_a_row = 0, None, 0, 0
    out_of_memory = _oom_type()
    cuda = torch.cuda.is_available() and getattr(device, "type", str(device)) == "cuda"
    model.train()
    for epoch in range(epochs):
        queue = collections.deque(_epoch_batches(ids, rng, batch_tokens, most_rows))
        while queue:
            batch = queue.popleft()
            if time.time() >= until:
                stop = "its deadline"
                break
            try:
                with _autocast(device):
                    scores = _label_scores(model, tokenizer, [ids[i] for i in batch], label_ids, device)
                target = torch.tensor([targets[i] for i in batch], device=device)
                loss = torch.nn.functional.binary_cross_entropy_with_logits(scores.float(), target)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
            except out_of_memory as exc:  # the batch is halved, and every one after it this epoch
                optimizer.zero_grad(set_to_none=True)
                scores = target = loss = None
                batch_tokens = _halved(batch_tokens, batch, ids, exc)
                queue = collections.deque(_resplit([batch, *queue], ids, batch_tokens, most_rows))
                halvings += 1
                continue
            norm = torch.nn.utils.clip_grad_norm_(params, 1.0)
            if not (torch.isfinite(loss) and torch.isfinite(norm)):
                # one non-finite gradient, clipped, turns every weight it touches into NaN:
                # the step is not taken, and a run of them stops the training
                optimizer.zero_grad(set_to_none=True)
                skipped += 1
                in_a_row += 1
                log(f"after step {step}: a non-finite loss or gradient, not taken ({skipped} so far)")
                if in_a_row >= NON_FINITE_STOP:
                    stop = f"{in_a_row} non-finite steps in a row"
                    break
                continue
            in_a_row = 0
            optimizer.step()
            schedule.step()
            step += 1
            seen += len(batch)
            entry = {
                "step": step,
                "epoch": epoch,
                "examples": seen,
                "loss": round(loss.item(), 5),
                "accuracy": round(((scores > 0).float() == target).float().mean().item(), 4),
                "lr": schedule.get_last_lr()[0],
                "grad_norm": round(norm.item(), 4),  # before clipping: a divergence shows here first
                "seconds": round(time.time() - began, 2),
            }
            if cuda and peak is None and (time.time() - began >= 60 or not queue):
                peak = round(torch.cuda.max_memory_allocated() / 2**30, 2)  # the first minute's
                entry["peak_memory_gib"] = peak
            with open(metrics, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")
            if step % 20 == 0:
                log(f"step {step}: {seen} examples, loss {loss.item():.4f}, {time.time() - began:.0f} s")
        if stop != "the rows ran out":
            break
    model.eval()
    return {
        "steps": step,
        "examples": seen,
        "rows": len(rows),
        "stopped_by": stop,
        "seconds": round(time.time() - began, 1),
        "batch_tokens": batch_tokens,  # at the end: halved once per out-of-memory error
        "oom_halvings": halvings,
        "non_finite_skipped": skipped,  # steps not taken: their loss or gradient was not finite
        "first_minute_peak_gib": peak,  # CUDA's peak memory allocated in the first minute
    }


def _epoch_batches(ids: list[list[int]], rng: random.Random, batch_tokens: int, most: int) -> list[list[int]]:
    """One pass in batches of similar lengths, drawn within windows of 1024 shuffled rows
    (little padding, and every window still mixes the whole set), the batches shuffled."""
    order = list(range(len(ids)))
    rng.shuffle(order)
    batches = [
        [window[i] for i in batch]
        for start in range(0, len(order), 1024)
        for window in [order[start : start + 1024]]
        for batch in _batches([len(ids[i]) for i in window], batch_tokens, most)
    ]
    rng.shuffle(batches)
    return batches


def lora_movement(model) -> dict:
    """How far the LoRA moved the weights it adapts: per adapted matrix, ||B A s|| / ||W||
    (s = alpha / r), summarised (mean, max), and the largest change of one weight."""
    import torch

    ratios, largest = [], 0.0
    with torch.no_grad():
        for module in model.modules():
            if not hasattr(module, "lora_A") or "default" not in getattr(module, "lora_A", {}):
                continue
            a = module.lora_A["default"].weight.float()
            b = module.lora_B["default"].weight.float()
            delta = (b @ a) * module.scaling["default"]
            base = module.base_layer.weight.float()
            ratios.append((delta.norm() / base.norm().clamp(min=1e-12)).item())
            largest = max(largest, delta.abs().max().item())
    if not ratios:
        return {"matrices": 0}
    return {
        "matrices": len(ratios),
        "mean_relative": sum(ratios) / len(ratios),
        "max_relative": max(ratios),
        "largest_weight_change": largest,
    }


def threshold_for_recall(scores: list[float], labels: list[bool], recall: float) -> float | None:
    """The highest score threshold that keeps at least `recall` of the gold-bearing rows (None
    when a score is not finite: a diverged training's NaNs measure nothing)."""
    if not all(math.isfinite(s) for s in scores):
        return None
    gold = sorted((s for s, g in zip(scores, labels, strict=True) if g), reverse=True)
    if not gold:
        return None
    keep = max(1, math.ceil(recall * len(gold)))
    return gold[keep - 1]


def auc(scores: list[float], labels: list[bool]) -> float | None:
    """The probability that a gold-bearing row outscores one without gold (ties count half;
    None when a score is not finite)."""
    if not all(math.isfinite(s) for s in scores):
        return None
    pos = [s for s, g in zip(scores, labels, strict=True) if g]
    neg = [s for s, g in zip(scores, labels, strict=True) if not g]
    if not pos or not neg:
        return None
    ranked = sorted([(s, 1) for s in pos] + [(s, 0) for s in neg])
    rank_sum, i = 0.0, 0
    while i < len(ranked):  # average ranks over ties
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        average = (i + j + 1) / 2
        rank_sum += average * sum(flag for _, flag in ranked[i:j])
        i = j
    return (rank_sum - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


RECALL_TARGET = 0.9  # the keep threshold keeps this share of held-out gold segments: recall first


def dev_prompts(dev: list[dict]) -> list[dict]:
    """Every segment of every dev record, in order, as a row with its prompt."""
    return [segment for record in dev for segment in record["segments"]]


def write_scores(dev: list[dict], out: Path, **columns: list[float]) -> None:
    """scores.jsonl: per dev record, its dev set, each segment's gold flag (in the order the
    pipeline reads them: the retriever's ranking) and each model's scores."""
    rows, at = [], 0
    for record in dev:
        n = len(record["segments"])
        row = {"id": record["id"], "set": record.get("set", "fairytale"), "gold": [s["gold"] for s in record["segments"]]}
        row.update({name: values[at : at + n] for name, values in columns.items()})
        rows.append(row)
        at += n
    write_jsonl(rows, out / "scores.jsonl")


def run(
    base: Path,
    train_file: Path,
    dev_file: Path,
    out: Path,
    until: float,
    family: str,
    val_rows: int = 512,
    learning_rate: float = 2e-4,
    epochs: int = 2,
    limit: int | None = None,
    log: Callable[[str], None] = print,
) -> dict:
    """The whole run for one base model, each result written as soon as it exists, so a run
    cut at any point leaves what it finished: the base's scores on the dev segments and on
    held-out training rows, training until what must follow still fits before `until`, the
    trained scores, a keep threshold from the held-out rows, the adapter as a GGUF LoRA with
    its Modelfile, and train.json (what was done, how far the weights moved, the timings)."""
    import torch

    from training import export
    from training.checkpoints import load_gguf, read_gguf_heads

    began = time.time()
    out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    report: dict = {"base": base.name, "device": "cuda" if torch.cuda.is_available() else "cpu"}

    def save_report(stage: str) -> None:
        report.update(stage=stage, timings=timings, seconds=round(time.time() - began, 1))
        (out / "train.json.partial").write_text(json.dumps(report, indent=1), encoding="utf-8")
        (out / "train.json.partial").replace(out / "train.json")
        log(f"{stage} ({time.time() - began:.0f} s)")

    t = time.time()
    model, tokenizer = load_gguf(base)
    model.to(report["device"])
    timings["load"] = round(time.time() - t, 1)
    rows = read_jsonl(train_file)
    rows = rows[: limit + val_rows] if limit else rows
    held_out, rows = rows[-val_rows:], rows[:-val_rows]
    dev = read_jsonl(dev_file)
    segments = dev_prompts(dev)
    report.update(
        train_rows=len(rows), held_out_rows=len(held_out), dev_records=len(dev), dev_segments=len(segments)
    )
    held_labels = [r["label"] == "YES" for r in held_out]

    t = time.time()
    base_dev = score_prompts(model, tokenizer, segments)
    base_held = score_prompts(model, tokenizer, held_out)
    timings["score"] = round(time.time() - t, 1)
    write_scores(dev, out, base=base_dev)
    report["held_out"] = {"labels": held_labels, "base": base_held}
    report["base_auc"] = auc(base_held, held_labels)
    save_report("the base is scored")

    model = add_lora(model)
    # what must follow training: scoring again, saving, the export (and a margin)
    train_until = until - 1.5 * timings["score"] - 45
    # activations per token grow with the width: ~0.4 MB for the 135M, ~1.9 MB for the 1.5B
    batch_tokens = 32768 if model.config.hidden_size <= 1024 else 16384
    t = time.time()
    report["training"] = train(
        model,
        tokenizer,
        rows,
        out,
        train_until,
        learning_rate=learning_rate,
        epochs=epochs,
        batch_tokens=batch_tokens,
        log=log,
    )
    timings["train"] = round(time.time() - t, 1)
    report["movement"] = lora_movement(model)
    model.save_pretrained(str(out / "adapter"))
    save_report("trained")
    # scored merged, at the base's speed: with the adapter unmerged, the first lease's trained
    # scoring of the 135M had not finished in 200 s where the base took 60 s (the export reads
    # the saved adapter)
    model = model.merge_and_unload()

    t = time.time()
    trained_dev = score_prompts(model, tokenizer, segments)
    trained_held = score_prompts(model, tokenizer, held_out)
    timings["score_trained"] = round(time.time() - t, 1)
    write_scores(dev, out, base=base_dev, trained=trained_dev)
    report["held_out"]["trained"] = trained_held
    report["trained_auc"] = auc(trained_held, held_labels)
    report["keep_threshold"] = {
        "recall_target": RECALL_TARGET,
        "trained": threshold_for_recall(trained_held, held_labels, RECALL_TARGET),
        "base": threshold_for_recall(base_held, held_labels, RECALL_TARGET),
    }
    save_report("the trained Finder is scored")

    t = time.time()
    heads = read_gguf_heads(base)
    adapter = export.export_lora_gguf(
        out / "adapter", out / "finder-lora.gguf", heads["n_head"], heads["n_head_kv"], arch=heads["arch"]
    )
    (out / "finder.Modelfile").write_text(
        export.modelfile(f"./{base.name}", family, adapter=f"./{adapter.name}"), encoding="utf-8"
    )
    timings["export"] = round(time.time() - t, 1)
    report["adapter_bytes"] = adapter.stat().st_size
    save_report("exported")
    return report
