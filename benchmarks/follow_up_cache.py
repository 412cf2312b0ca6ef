"""What a follow-up costs the Finder when its segments were read by the question before it.

On one reading session (the embedded backend, llama.cpp in-process, its host-memory prompt
cache at its default size), a first question and then a follow-up ("why did she do it?",
retrieved with the first question's words) are asked with the Finder on and cwread's own call
cache off, so every prompt reaches llama.cpp. For the segments both questions read, the table
gives the prompt tokens and the tokens llama.cpp actually read (prefilled) for each question,
and the trace's count of prompt tokens taken from the cache.

    python benchmarks/follow_up_cache.py [--gguf PATH] [--read 6] [--out benchmarks/results/follow_up_cache.txt]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from publish import publish  # benchmarks/, beside this script

REPO = Path(__file__).resolve().parent.parent
MOONSTONE = REPO.parent / "shared" / "data" / "novels" / "the_moonstone.txt"
FIRST = "Why did Rosanna Spearman hide the nightgown?"
FOLLOW_UP = "Why did she hide it?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--book", default=str(MOONSTONE))
    parser.add_argument("--gguf", help="the model (default: the embedded SmolLM2-135M)")
    parser.add_argument("--base-url", help="an OpenAI-compatible server instead (llama-server: serve_gguf.py)")
    parser.add_argument("--read", type=int, default=6, help="segments each question's Finder reads")
    parser.add_argument("--out", help="also write the table here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        os.environ["CWREAD_CACHE_DIR"] = cache
        from cwread import api
        from cwread.backends.embedded import EmbeddedSettings
        from cwread.backends.openai_compat import OpenAISettings
        from cwread.run.session import Conversation

        settings = (
            api.BackendSettings(backend="openai", own=(OpenAISettings(base_url=args.base_url),))
            if args.base_url
            else api.BackendSettings(backend="embedded", own=(EmbeddedSettings(gguf=args.gguf),))
        )
        session = api.open(args.book, api.Settings(api.SessionSettings(backends=settings, use_cache=False)))
        conversation = Conversation(session)
        run = api.RunSettings(
            budget=api.make_budget(read=args.read),
            finding=api.FinderSettings(use="on"),
            answering=api.AnswerSettings(answer_mode="extractive"),
        )
        api.index_document(session.document)
        t0 = time.perf_counter()
        first = conversation.ask(api.make_question(FIRST), run)
        t1 = time.perf_counter()
        second = conversation.ask(api.make_question(FOLLOW_UP), run)
        t2 = time.perf_counter()
    if second.follows is None:
        print("the follow-up was not taken for one", file=sys.stderr)
        return 1
    read_first = {(v.segment.start, v.segment.end): v.reply.call for v in first.verdicts}
    both = [(v.segment, read_first[(v.segment.start, v.segment.end)], v.reply.call) for v in second.verdicts
            if (v.segment.start, v.segment.end) in read_first]
    model = second.models["finder"]
    lines = [
        f"python benchmarks/follow_up_cache.py --read {args.read}{' --gguf ' + Path(args.gguf).name if args.gguf else ''}"
        f"{' --base-url ' + args.base_url if args.base_url else ''} "
        f"({platform.machine()}, {os.cpu_count()} CPUs; {model}; the Finder on, cwread's call cache off)",
        "",
        f"first: {FIRST!r} ({t1 - t0:.1f} s); follow-up: {FOLLOW_UP!r} ({t2 - t1:.1f} s), "
        f"following turn {second.follows.number}",
        f"segments read: {len(first.verdicts)} and {len(second.verdicts)}; read by both: {len(both)}",
        "",
        "| segment | prompt tokens (1st / follow-up) | prefilled by llama.cpp (1st / follow-up) | follow-up / 1st |",
        "|---|---|---|---|",
    ]
    total_first = total_second = 0
    for segment, a, b in both:
        pa, pb = a.prompt_tokens - a.prompt_cached, b.prompt_tokens - b.prompt_cached
        total_first, total_second = total_first + pa, total_second + pb
        lines.append(
            f"| {segment.start}-{segment.end} | {a.prompt_tokens} / {b.prompt_tokens} | {pa} / {pb} | "
            f"{pb / pa:.2f} |" if pa else f"| {segment.start}-{segment.end} | {a.prompt_tokens} / {b.prompt_tokens} | {pa} / {pb} | - |"
        )
    ratio = total_second / total_first if total_first else float("nan")
    lines += [
        "",
        f"segments both read: the follow-up prefilled {total_second:,} tokens against {total_first:,} "
        f"for the first question ({ratio:.2f}; target <= 0.33)",
        f"the follow-up's trace: finder_prompt {second.tokens()['finder_prompt']:,}, "
        f"finder_prompt_cached {second.tokens()['finder_prompt_cached']:,}",
    ]
    publish(lines, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
