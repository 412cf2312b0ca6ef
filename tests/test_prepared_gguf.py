"""The default model prepared for the CPU: Q8_0 matrices, the Finder adapter merged in, built
once into the cache and left for the shipped files on any fault (tiny GGUFs made here; the real
model's scores beside the shipped files' are in test_embedded's slow lane)."""

from __future__ import annotations

import gguf
import numpy as np
import pytest
from gguf.quants import dequantize, quantize

from cwread.backends import embedded
from cwread.backends.embedded import EmbeddedBackend
from cwread.backends.prepared_gguf import PREPARED_FILE, lora_deltas, prepared_entry, prepared_model, write_prepared

Q = gguf.GGMLQuantizationType
RANK, ALPHA = 4, 8.0


def _base(path, rng) -> dict[str, np.ndarray]:
    """A llama-shaped GGUF: one Q4_1 matrix, Q8_0 embeddings, an F32 norm; its weights as read."""
    w = gguf.GGUFWriter(path, arch="llama")
    w.add_block_count(1)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_1)
    w.add_string("tokenizer.ggml.model", "gpt2")
    matrix = quantize(rng.normal(size=(48, 64)).astype(np.float32), Q.Q4_1)
    embeddings = quantize(rng.normal(size=(10, 64)).astype(np.float32), Q.Q8_0)
    w.add_tensor("token_embd.weight", embeddings, raw_dtype=Q.Q8_0)
    w.add_tensor("blk.0.attn_q.weight", matrix, raw_dtype=Q.Q4_1)
    w.add_tensor("blk.0.attn_norm.weight", np.ones(64, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return {"blk.0.attn_q.weight": dequantize(matrix, Q.Q4_1), "token_embd.weight": embeddings}


def _adapter(path, rng, target="blk.0.attn_q.weight", alpha: float | None = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    w = gguf.GGUFWriter(path, arch="llama")
    w.add_string("general.type", "adapter")
    w.add_string("adapter.type", "lora")
    if alpha is not None:
        w.add_float32("adapter.lora.alpha", alpha)
    down = rng.normal(scale=0.1, size=(RANK, 64)).astype(np.float32)  # A: rank x in
    up = rng.normal(scale=0.1, size=(48, RANK)).astype(np.float32)  # B: out x rank
    w.add_tensor(f"{target}.lora_a", down.astype(np.float16))
    w.add_tensor(f"{target}.lora_b", up.astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return down.astype(np.float16).astype(np.float32), up.astype(np.float16).astype(np.float32)


def _tensors(path) -> dict:
    return {t.name: t for t in gguf.GGUFReader(path).tensors}


def test_the_adapter_is_merged_at_llama_cpps_scale_and_matrices_become_q8_0(tmp_path):
    rng = np.random.default_rng(0)
    weights = _base(tmp_path / "base.gguf", rng)
    down, up = _adapter(tmp_path / "lora.gguf", rng)
    meta = write_prepared(tmp_path / "base.gguf", tmp_path / "lora.gguf", tmp_path / "out.gguf")
    assert meta["merged"] == 1 and meta["label"] == "q8_0+merged"
    out = _tensors(tmp_path / "out.gguf")
    q = out["blk.0.attn_q.weight"]
    assert q.tensor_type == Q.Q8_0
    expected = weights["blk.0.attn_q.weight"] + (ALPHA / RANK) * (up @ down)
    merged = dequantize(q.data, Q.Q8_0)
    # Q8_0's rounding: half a step of each block's largest weight / 127
    assert np.abs(merged - expected).max() <= np.abs(expected).max() / 127
    assert np.abs(merged - weights["blk.0.attn_q.weight"]).max() > 0.01  # the adapter is in it
    # the embeddings' table and the norm are copied as they were
    assert out["token_embd.weight"].tensor_type == Q.Q8_0
    assert np.array_equal(np.asarray(out["token_embd.weight"].data), weights["token_embd.weight"])
    assert out["blk.0.attn_norm.weight"].tensor_type == Q.F32
    fields = gguf.GGUFReader(tmp_path / "out.gguf").fields
    assert fields["general.file_type"].contents() == gguf.LlamaFileType.MOSTLY_Q8_0
    assert fields["tokenizer.ggml.model"].contents() == "gpt2"


def test_without_an_adapter_the_model_is_only_re_encoded(tmp_path):
    rng = np.random.default_rng(1)
    weights = _base(tmp_path / "base.gguf", rng)
    meta = write_prepared(tmp_path / "base.gguf", None, tmp_path / "out.gguf")
    assert meta["label"] == "q8_0" and meta["merged"] == 0
    q = _tensors(tmp_path / "out.gguf")["blk.0.attn_q.weight"]
    original = weights["blk.0.attn_q.weight"]
    assert np.abs(dequantize(q.data, Q.Q8_0) - original).max() <= np.abs(original).max() / 127


def test_an_adapter_without_alpha_scales_by_one(tmp_path):
    rng = np.random.default_rng(2)
    down, up = _adapter(tmp_path / "lora.gguf", rng, alpha=None)
    delta = lora_deltas(tmp_path / "lora.gguf")["blk.0.attn_q.weight"]
    assert np.allclose(delta, up @ down, atol=1e-6)


def test_an_adapter_for_another_model_is_refused(tmp_path):
    rng = np.random.default_rng(3)
    _base(tmp_path / "base.gguf", rng)
    _adapter(tmp_path / "lora.gguf", rng, target="blk.7.attn_q.weight")
    with pytest.raises(ValueError, match="lacks"):
        write_prepared(tmp_path / "base.gguf", tmp_path / "lora.gguf", tmp_path / "out.gguf")
    with pytest.raises(ValueError, match="not an adapter"):
        lora_deltas(tmp_path / "base.gguf")


def test_built_once_into_the_cache_and_rebuilt_when_damaged(tmp_path, monkeypatch):
    monkeypatch.setenv("CWREAD_CACHE_DIR", str(tmp_path / "cache"))
    rng = np.random.default_rng(4)
    _base(tmp_path / "base.gguf", rng)
    _adapter(tmp_path / "lora.gguf", rng)
    said: list[str] = []
    first = prepared_model(tmp_path / "base.gguf", tmp_path / "lora.gguf", said.append)
    assert len(said) == 1 and "once" in said[0] and first.label == "q8_0+merged"
    assert first.path == prepared_entry(tmp_path / "base.gguf", tmp_path / "lora.gguf") / PREPARED_FILE
    again = prepared_model(tmp_path / "base.gguf", tmp_path / "lora.gguf", said.append)
    assert again == first and len(said) == 1  # read from the cache, not built
    with open(first.path, "r+b") as f:  # a damaged entry is not trusted: built again
        f.truncate(100)
    rebuilt = prepared_model(tmp_path / "base.gguf", tmp_path / "lora.gguf", said.append)
    assert len(said) == 2 and rebuilt.path.stat().st_size > 100
    # another adapter is another entry; the base alone another still
    _adapter(tmp_path / "lora2.gguf", np.random.default_rng(5))
    other = prepared_model(tmp_path / "base.gguf", tmp_path / "lora2.gguf", said.append)
    alone = prepared_model(tmp_path / "base.gguf", None, said.append)
    assert len({first.path, other.path, alone.path}) == 3 and alone.label == "q8_0"


def test_a_model_that_cannot_be_prepared_runs_as_shipped_with_one_line(tmp_path, monkeypatch, capsys):
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 64)  # not a model gguf can read
    backend = EmbeddedBackend(model, prepare=True)
    assert backend._files() == (model, None)
    assert backend.prepared is None
    said = capsys.readouterr().err.strip().splitlines()
    assert "preparing" in said[0]  # said before the seconds it takes
    assert len(said) == 2 and "could not be prepared" in said[1] and "runs as shipped" in said[1]
    backend._files()  # decided once for the backend
    assert capsys.readouterr().err == ""


def test_prepared_files_are_what_llama_cpp_loads(tmp_path, monkeypatch):
    model, lora = tmp_path / "model.gguf", tmp_path / "lora.gguf"
    model.write_bytes(b"GGUF")
    lora.write_bytes(b"GGUF")
    made = tmp_path / "prepared.gguf"
    monkeypatch.setattr(embedded, "prepared_model", lambda m, a, say: embedded_prepared(made))
    backend = EmbeddedBackend(model, lora=lora, prepare=True)
    assert backend._files() == (made, None) and backend.prepared == "q8_0+merged"
    assert "|prepared" in backend.capabilities.identity  # its calls are cached apart
    plain = EmbeddedBackend(model, lora=lora)
    assert plain._files() == (model, lora) and "|prepared" not in plain.capabilities.identity


def embedded_prepared(path):
    from cwread.backends.prepared_gguf import PreparedModel

    return PreparedModel(path, "q8_0+merged")


def test_only_the_default_model_and_its_shipped_adapter_are_prepared(tmp_path, monkeypatch):
    from cwread.backends.provider import BackendSettings, ModelRef

    mine = tmp_path / "mine.gguf"
    mine.write_bytes(b"GGUF")
    monkeypatch.setattr(embedded, "default_gguf", lambda: mine)
    monkeypatch.setattr(embedded, "shipped_finder", lambda: None)
    wanted = {"finder": ModelRef(), "interpreter": ModelRef()}

    def built(**own):
        settings = BackendSettings(backend="embedded", own=(embedded.EmbeddedSettings(**own),)).resolved()
        return embedded.PROVIDER.build(settings, wanted).backends

    assert all(b._prepare for b in built().values())  # the default model
    assert not any(b._prepare for b in built(gguf=str(mine)).values())  # a GGUF the user names
    lora = built(finder_lora=str(mine))  # a user's adapter: neither merged nor re-encoded
    assert not lora["finder"]._prepare and lora["interpreter"]._prepare
    monkeypatch.setenv("CWREAD_PREPARE_GGUF", "0")
    assert not any(b._prepare for b in built().values())
