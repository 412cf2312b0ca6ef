"""A process's first model call on the embedded default: its prompt read whole, or from the
state llama.cpp kept after the agent's instructions (cwread/backends/prompt_state.py).

Through the real CLI (`cwread ask --json`, a fresh process each), on a temporary cache: the
first run on a machine (the model prepared, the state kept); then each question with its
calls not cached, `prompts/` emptied before each run ("read whole") or holding the state kept
by another question ("restored": never the question's own, which would hold its whole prompt).
Median wall seconds of --repeats runs, the answer judge's seconds, and the prompt tokens the
run read against those it took from a state.

    python benchmarks/first_call.py [--repeats 5] [--out benchmarks/results/first-call.md]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from prepared_model import ASKS, GIANT, MOONSTONE, cwread, env_for

PRIMER = (GIANT, "What did the children do when they came back to the garden?")  # keeps the state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", help="write the table here too")
    options = parser.parse_args()
    lines: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        env = env_for(cache, "prepared")  # the default: the model prepared for the CPU
        cwread(["index", str(MOONSTONE)], env)
        cwread(["index", str(GIANT)], env)
        first, _ = cwread(["ask", str(PRIMER[0]), PRIMER[1], "--json"], env)
        kept = sorted((cache / "prompts").glob("*.bin"))
        lines += [
            f"The first run on a machine (the model prepared, the Finder's state kept: {len(kept)} file, "
            f"{sum(p.stat().st_size for p in kept) / 2**20:.1f} MiB): {first:.2f} s",
            "",
            "| question | first call | wall s (median) | answer judge s | calls | prompt tokens read / from the state | same answer |",
            "|---|---|---|---|---|---|---|",
        ]
        saved = Path(tmp + "-state")
        shutil.copytree(cache / "prompts", saved)
        for label, book, question in ASKS:
            answers = {}
            for form in ("read whole", "restored"):
                walls, judge, read, cached, calls = [], [], 0, 0, 0
                for _ in range(options.repeats):
                    shutil.rmtree(cache / "calls", ignore_errors=True)
                    shutil.rmtree(cache / "prompts", ignore_errors=True)
                    if form == "restored":
                        shutil.copytree(saved, cache / "prompts")
                    wall, trace = cwread(["ask", str(book), question, "--json"], env)
                    walls.append(wall)
                    judge.append(trace.get("timings", {}).get("answer_judge", 0.0))
                    tokens = trace.get("tokens", {})
                    read, cached = tokens.get("prompt", 0) - tokens.get("prompt_cached", 0), tokens.get("prompt_cached", 0)
                    calls = len((trace.get("answer_judgement") or {}).get("scores") or [])
                    answers[form] = (trace.get("answer"), trace.get("citations"))
                same = "" if form == "read whole" else ("yes" if answers["restored"] == answers["read whole"] else "no")
                lines.append(
                    f"| {label} | {form} | {statistics.median(walls):.2f} | {statistics.median(judge):.2f} | {calls} | "
                    f"{read} / {cached} | {same} |"
                )
                print(lines[-1], flush=True)
        shutil.rmtree(saved, ignore_errors=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if options.out:
        Path(options.out).write_text(
            f"python benchmarks/first_call.py --repeats {options.repeats} ({os.cpu_count()} CPU cores)\n\n{text}", encoding="utf-8"
        )


if __name__ == "__main__":
    main()
