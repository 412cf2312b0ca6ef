"""Cost of the Finder on the embedded model: calls, prompt tokens, seconds per question, and the
speed-ups from (a) llama.cpp's prompt cache with the segment text placed before the question,
and (b) cwread's call cache for a repeated question.

Each prompt order runs in a fresh process (so llama.cpp's prompt cache starts empty), asking
two questions over the same segments: the second question's calls can reuse cached segment
prefixes only when the text comes first.

    python benchmarks/ask_speed.py [--read 12] [--novel-read 8]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data"
CASES = [
    (
        "story (~5k words)",
        DATA / "quality" / "docs" / "jaywalker.txt",
        ["What does the main character decide to do at the end?", "Who does the narrator talk to first?"],
    ),
    (
        "novel (62k words)",
        REPO / "examples" / "the_hound_of_the_baskervilles.txt",
        ["Why did Sir Henry lose a boot at the hotel?", "Who was the man with the black beard in the cab?"],
    ),
]


def worker(question_first: bool, reads: list[int]) -> dict:
    from cwread import agents, api
    from cwread.backends.callcache import CachedBackend
    from cwread.backends.embedded import EmbeddedBackend

    backend = EmbeddedBackend()
    out: dict = {}
    for (label, path, questions), read in zip(CASES, reads, strict=True):
        doc = api.open_document(str(path))
        first = api.find(doc, api.make_question(questions[0])).segments[:read]
        rows = []
        for q in questions:
            calls = tokens = 0
            t0 = time.perf_counter()
            for s in first:  # the same segments for both questions
                request = agents.finder_request(
                    api.make_question(q), s.start, s.end, doc.span_text(s.start, s.end), question_first=question_first
                )
                g = backend.generate(request)
                calls += 1
                tokens += g.prompt_tokens
            rows.append({"calls": calls, "prompt_tokens": tokens, "seconds": time.perf_counter() - t0})
        out[label] = rows
    if not question_first:  # the call cache: the same question again, through CachedBackend
        with tempfile.TemporaryDirectory() as tmp:
            cached = CachedBackend(backend, Path(tmp))
            label, path, questions = CASES[0]
            doc = api.open_document(str(path))
            segs = api.find(doc, api.make_question(questions[0])).segments[: reads[0]]
            times = []
            for _ in range(2):
                t0 = time.perf_counter()
                for s in segs:
                    cached.generate(
                        agents.finder_request(api.make_question(questions[0]), s.start, s.end, doc.span_text(s.start, s.end))
                    )
                times.append(time.perf_counter() - t0)
            out["call_cache"] = times
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--read", type=int, default=12, help="segments read on the story")
    parser.add_argument("--novel-read", type=int, default=8, help="segments read on the novel")
    parser.add_argument("--worker", choices=["text-first", "question-first"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    reads = [args.read, args.novel_read]
    if args.worker:
        print(json.dumps(worker(args.worker == "question-first", reads)))
        return
    results = {}
    for order in ("text-first", "question-first"):
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", order, "--read", str(args.read), "--novel-read", str(args.novel_read)],
            capture_output=True, text=True, check=True,
        )
        results[order] = json.loads(proc.stdout.strip().splitlines()[-1])
    print("Finder on the embedded model (SmolLM2-135M, llama.cpp, this machine)")
    print(f"{'text':20s} {'order':15s} {'question':>8s} {'calls':>6s} {'prompt tok':>10s} {'seconds':>8s}")
    for label, _, _ in CASES:
        for order in ("text-first", "question-first"):
            for i, row in enumerate(results[order][label], start=1):
                print(f"{label:20s} {order:15s} {i:8d} {row['calls']:6d} {row['prompt_tokens']:10d} {row['seconds']:8.1f}")
        tf = results["text-first"][label][1]["seconds"]
        qf = results["question-first"][label][1]["seconds"]
        print(f"{label:20s} second question, question-first / text-first: {qf / tf:.1f}x")
    cold, warm = results["text-first"]["call_cache"]
    print(f"call cache, same question again on the story: {cold:.1f} s -> {warm:.3f} s ({cold / max(warm, 1e-3):.0f}x)")


if __name__ == "__main__":
    main()
