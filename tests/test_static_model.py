"""The static embedding model shipped in cwread/data: loads without torch, and is what the
documented script builds."""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cwread.retrieval.embedders import load_static_minilm, static_model_dir

REPO = Path(__file__).resolve().parent.parent


def test_shipped_model_matches_its_manifest():
    folder = static_model_dir()
    meta = json.loads((folder / "meta.json").read_text())
    digest = hashlib.sha256((folder / "embeddings.npy").read_bytes()).hexdigest()
    assert digest == meta["embeddings_sha256"]
    model = load_static_minilm()
    assert model.weights.shape == (meta["vocab"], meta["dims"])
    assert model.fingerprint == f"minilm-static:{digest[:16]}"


def test_a_question_never_imports_torch(tmp_path, story):
    """The core path (read, index, retrieve with the default embedder) runs without torch."""
    code = (
        "import sys\n"
        "from cwread import api\n"
        "from cwread.cli import main\n"
        f"rc = main(['find', {str(story)!r}, 'who kept the lamp?', '--json'])\n"
        "assert rc == 0, rc\n"
        "heavy = sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules)\n"
        "print('HEAVY', heavy)\n"
    )
    env = {"CWREAD_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert "HEAVY []" in done.stdout


@pytest.mark.slow  # distils the MiniLM again (~30 s on 2 cores)
def test_the_build_script_rebuilds_the_shipped_model(tmp_path):
    pytest.importorskip("sentence_transformers")
    out = tmp_path / "static"
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "build_static_model.py"), str(out)], check=True, cwd=REPO
    )
    shipped = json.loads((static_model_dir() / "meta.json").read_text())
    rebuilt = json.loads((out / "meta.json").read_text())
    # Byte for byte only with the same library versions: across transformers/numpy releases the
    # float16 vectors differ in their last bit (2% of entries by one step, every row at cosine
    # 0.9999997 to the shipped one), so the vectors are compared to float16 precision.
    assert {k: v for k, v in rebuilt.items() if k != "embeddings_sha256"} == {
        k: v for k, v in shipped.items() if k != "embeddings_sha256"
    }
    tokenizers = [json.loads(gzip.decompress((folder / "tokenizer.json.gz").read_bytes())) for folder in (out, static_model_dir())]
    assert tokenizers[0] == tokenizers[1]
    ours = np.load(out / "embeddings.npy").astype(np.float32)
    theirs = np.load(static_model_dir() / "embeddings.npy").astype(np.float32)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=4e-3)  # two float16 steps at most
    norms = np.linalg.norm(ours, axis=1) * np.linalg.norm(theirs, axis=1)
    used = norms > 0
    assert ((ours * theirs).sum(axis=1)[used] / norms[used]).min() > 0.99999
