"""The default `ask` end to end with its decisions on llama.cpp and on ONNX Runtime
(cwread/backends/onnx_decisions.py; CWREAD_ONNX_DECISIONS=0 or 1).

Through the real CLI (`cwread ask --json`, a fresh process each) on a temporary cache, the
prepared model, the index and the decision model built beforehand, and llama.cpp's state after
the Finder's instructions kept (its best case: a process's first call restores it). Each
question with its calls not cached: median wall seconds of --repeats runs, the answer judge's
seconds, its calls and the prompt tokens, and whether both runtimes gave the same answer.

    python benchmarks/decision_runtimes.py [--repeats 5] [--out benchmarks/results/decision-runtimes.md]
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

PRIMER = (GIANT, "What did the children do when they came back to the garden?")  # builds, keeps llama.cpp's state
RUNTIMES = (("llama.cpp", "0"), ("ONNX Runtime", "1"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", help="write the table here too")
    options = parser.parse_args()
    lines = [
        "| question | decisions on | wall s (median) | answer judge s | calls | prompt tokens | same answer |",
        "|---|---|---|---|---|---|---|",
    ]
    firsts = {}
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        for name, switch in RUNTIMES:
            env = {**env_for(cache, "prepared"), "CWREAD_ONNX_DECISIONS": switch}
            firsts[name], _ = cwread(["ask", str(PRIMER[0]), PRIMER[1], "--json"], env)
        cwread(["index", str(MOONSTONE)], env)
        for label, book, question in ASKS:
            answers = {}
            for name, switch in RUNTIMES:
                env = {**env_for(cache, "prepared"), "CWREAD_ONNX_DECISIONS": switch}
                walls, judge = [], []
                for _ in range(options.repeats):
                    shutil.rmtree(cache / "calls", ignore_errors=True)
                    wall, trace = cwread(["ask", str(book), question, "--json"], env)
                    walls.append(wall)
                    judge.append(trace.get("timings", {}).get("answer_judge", 0.0))
                answers[name] = (trace.get("answer"), trace.get("citations"))
                calls = len((trace.get("answer_judgement") or {}).get("scores") or [])
                same = "" if name == RUNTIMES[0][0] else ("yes" if answers[name] == answers[RUNTIMES[0][0]] else "no")
                lines.append(
                    f"| {label} | {name} | {statistics.median(walls):.2f} | {statistics.median(judge):.2f} | {calls} | "
                    f"{trace.get('tokens', {}).get('prompt', 0)} | {same} |"
                )
                print(lines[-1], flush=True)
    head = (
        f"python benchmarks/decision_runtimes.py --repeats {options.repeats} ({os.cpu_count()} CPU cores). The first run on "
        f"a machine, each runtime's files written: llama.cpp {firsts['llama.cpp']:.1f} s (the model prepared), then ONNX "
        f"Runtime {firsts['ONNX Runtime']:.1f} s (its decision model written)."
    )
    text = head + "\n\n" + "\n".join(lines) + "\n"
    print(text)
    if options.out:
        Path(options.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
