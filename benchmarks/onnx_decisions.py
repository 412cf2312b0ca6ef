"""How close the default model's decisions come on ONNX Runtime and on llama.cpp to the float
model's, and how fast each reads (cwread/backends/onnx_decisions.py).

The default model with the Finder adapter decides on Finder prompts built from
paragraphs of the example novel (600 characters at most, as the Finder judges a candidate),
each asked one of four questions. The float model is run in numpy
(onnx_graph.float_forward: the shipped weights, the adapter merged in; llama.cpp runs them
prepared as Q8_0, ONNX Runtime as cwread writes them); the score is ln P(YES) - ln P(NO) at the reply's first token,
read as cwread reads it (label_logprobs). llama.cpp reads each prompt whole (no prompt cache);
ONNX Runtime as cwread runs it (the instructions' keys kept from the first prompt on).

    python benchmarks/onnx_decisions.py [--prompts 48] [--out results/onnx-decisions.md]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from cwread.agents.finder import finder_request
from cwread.backends.embedded import EmbeddedBackend
from cwread.backends.embedded_files import default_gguf, shipped_finder
from cwread.backends.gguf_file import read_gguf
from cwread.backends.llama_server import new_server
from cwread.backends.logprobs import label_logprobs
from cwread.backends.onnx_decisions import DecisionScorer, _tokenizer, render_chatml, write_decision_model
from cwread.backends.onnx_graph import FLOAT_PARTS, SMOOTHING, float_forward, model_shape, model_weights
from cwread.backends.prepared_gguf import lora_deltas
from cwread.records.question import Question

REPO = Path(__file__).resolve().parent.parent
BOOK = REPO / "examples" / "the_hound_of_the_baskervilles.txt"
ASKED = ("Who killed Sir Charles?", "Why did the man hide the letter?", "What did Holmes find on the moor?", "Where was the dog kept?")
LABELS = ("YES", "NO")


def requests(count: int) -> list:
    paragraphs = [p for p in BOOK.read_text(encoding="utf-8").split("\n\n") if len(p) > 200]
    step = max(1, len(paragraphs) // count)
    return [
        finder_request(Question(ASKED[i % len(ASKED)], "open"), 1, 1, text[:600], False, paragraphs=[(1, text[:600])], decision_first=True)
        for i, text in enumerate(paragraphs[::step][:count])
    ]  # fmt: skip


def score(tokens: list[dict], opens: str) -> float:
    scored = dict(label_logprobs([{"token": opens, "logprob": 0.0}, *tokens], LABELS))
    return scored["YES"] - scored["NO"]


def llama_cpp(server, request) -> tuple[float, int, float]:
    messages = [{"role": r, "content": c} for r, c in request.messages] + [{"role": "assistant", "content": request.decision.opens}]
    body = {"messages": messages, "max_tokens": 1, "temperature": 0, "cache_prompt": False, "stream": True,
            "stream_options": {"include_usage": True}, "logprobs": True, "top_logprobs": 200, "grammar": request.decision.grammar}  # fmt: skip
    chunks: list[dict] = []
    started = time.perf_counter()
    server.server.handle_chat_completions(body, lambda chunk: chunks.append(chunk) or False)
    seconds = time.perf_counter() - started
    tokens = [t for c in chunks for ch in c.get("choices") or [] for t in ((ch.get("logprobs") or {}).get("content") or [])]
    count = [c["usage"]["prompt_tokens"] for c in chunks if c.get("usage")][-1]
    return score(tokens, request.decision.opens), count, seconds


def distances(got: list[float], truth: list[float]) -> str:
    gaps = np.abs(np.array(got) - np.array(truth))
    return f"{gaps.mean():.3f} | {np.median(gaps):.3f} | {gaps.max():.3f} | {np.mean(np.array(got) - np.array(truth)):+.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=48)
    parser.add_argument("--out", help="also write the report here (Markdown)")
    args = parser.parse_args()
    threads = os.cpu_count() or 1
    adapter = shipped_finder().path
    backend = EmbeddedBackend(lora=adapter, prepare=True, decisions=False)
    prepared, _ = backend._files()  # what llama.cpp runs: Q8_0, the adapter merged in
    gguf = read_gguf(default_gguf())  # the float model: the shipped weights, the adapter merged in
    shape = model_shape(gguf)
    weights, tokenizer = model_weights(gguf, shape), _tokenizer(gguf)
    for name, delta in lora_deltas(adapter).items():
        weights[name] = weights[name] + delta
    asked = requests(args.prompts)
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        write_decision_model(default_gguf(), Path(folder), adapter)
        written = time.perf_counter() - started
        started = time.perf_counter()
        scorer = DecisionScorer(Path(folder), threads)
        loaded = time.perf_counter() - started
        server = new_server(prepared, 4096, threads)
        truth, onnx, llama, onnx_s, llama_s, counts = [], [], [], [], [], []
        for request in asked:
            ids = np.array(tokenizer.encode(render_chatml(request.messages, request.decision.opens)).ids, np.int64)
            logprobs = float_forward(weights, shape, ids)
            order = np.argsort(-logprobs)[:200]
            best = [{"token": tokenizer.decode([int(t)], skip_special_tokens=False), "logprob": float(logprobs[t])} for t in order]
            truth.append(score([{**best[0], "top_logprobs": best}], request.decision.opens))
            top, count, seconds = scorer.top_tokens(request.messages, request.decision.opens)
            onnx.append(score([{**top[0], "top_logprobs": top}], request.decision.opens))
            onnx_s.append(seconds)
            theirs, their_count, seconds = llama_cpp(server, request)
            llama.append(theirs)
            llama_s.append(seconds)
            if their_count != count:
                sys.exit(f"the prompt tokens differ: {count} here, {their_count} in llama.cpp")
            counts.append(count)
    tokens = sum(counts)
    lines = [
        f"`python benchmarks/onnx_decisions.py --prompts {args.prompts}` ({threads} CPU threads; SmoothQuant α {SMOOTHING}, "
        f"in float: {', '.join(sorted(FLOAT_PARTS)) or 'none'}). {len(asked)} Finder prompts of {min(counts)}-{max(counts)} tokens "
        f"(the same tokens in both runtimes); the decision model written in {written:.1f} s, loaded in {loaded:.2f} s.",
        "",
        "| runtime | distance from the float model's score: mean | median | max | mean signed | seconds a prompt (median) | prompt tokens/s |",
        "|---|---|---|---|---|---|---|",
        f"| llama.cpp (Q8_0, whole prompts) | {distances(llama, truth)} | {statistics.median(llama_s):.3f} | {tokens / sum(llama_s):.0f} |",
        f"| ONNX Runtime (int8, instructions kept) | {distances(onnx, truth)} | {statistics.median(onnx_s):.3f} | {tokens / sum(onnx_s):.0f} |",
        "",
        f"ONNX Runtime against llama.cpp: {distances(onnx, llama).split(' | ')[0]} mean distance; the same decision (both scores "
        f"on one side of 0) in {sum((a >= 0) == (b >= 0) for a, b in zip(onnx, llama, strict=True))} of {len(asked)}.",
    ]
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
