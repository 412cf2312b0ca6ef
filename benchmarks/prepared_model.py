"""The embedded model as shipped (Q4_1, the Finder adapter loaded beside it) against the model
prepared for the CPU (Q8_0, the adapter merged in; cwread/backends/prepared_gguf.py).

1. Preparing: the seconds to build each prepared file, once per machine.
2. Reading: llama.cpp's prompt rate on the Finder's decision prompts for paragraphs of the
   README's book and The Moonstone (the calls that judge an answer's paragraph), each form in
   its own process, prompt cache off, median of the calls after a first.
3. End to end: `cwread ask --json` wall seconds on the README example and two Moonstone
   questions, the index and the prepared files built beforehand, the call cache emptied before
   each run; CWREAD_PREPARE_GGUF=0 runs the shipped files. Median of --repeats runs.

    python benchmarks/prepared_model.py [--repeats 3] [--out benchmarks/results/prepared-model.md]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MOONSTONE = REPO.parent / "shared" / "data" / "novels" / "the_moonstone.txt"
GIANT = REPO / "examples" / "the_selfish_giant.txt"
ASKS = [
    ("README example", GIANT, "Why did the Giant build a high wall round his garden?"),
    ("Moonstone, 1st question", MOONSTONE, "Who took the Moonstone from Rachel's cabinet?"),
    ("Moonstone, 2nd question", MOONSTONE, "Why did Rosanna Spearman hide the nightgown?"),
]
FORMS = ("shipped", "prepared")

RATE_PROBE = r"""
import json, statistics, sys
from cwread import api
from cwread.agents import finder
from cwread.backends import embedded, embedded_files
shipped = embedded_files.shipped_finder()
backend = embedded.EmbeddedBackend(lora=shipped.path, trained=shipped.trained, prepare=sys.argv[1] == "prepared")
rates = []
for book, question, ids in json.loads(sys.argv[2]):
    doc, asked = api.open_document(book), api.make_question(question)
    for pid in ids:
        text = doc.paragraph(pid).text
        request = finder.finder_request(asked, pid, pid, text, paragraphs=[(pid, text)], decision_first=True)
        reply = backend.generate(request)  # no call cache here; llama.cpp's prompt cache counts apart
        rates.append((reply.prefill_tokens, reply.prefill_seconds))
tokens = [t for t, _ in rates[1:]]
print(json.dumps({"prepared": backend.prepared, "tokens": statistics.median(tokens),
                  "rate": statistics.median(t / s for t, s in rates[1:] if s)}))
"""


def env_for(cache: Path, form: str) -> dict:
    return {**os.environ, "CWREAD_CACHE_DIR": str(cache), "CWREAD_BACKEND": "embedded",
            "CWREAD_PREPARE_GGUF": "1" if form == "prepared" else "0"}


def cwread(args: list[str], env: dict) -> tuple[float, dict]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "cwread", *args], capture_output=True, env=env, check=False, cwd=REPO)
    wall = time.perf_counter() - t0
    return wall, (json.loads(proc.stdout) if proc.stdout.strip().startswith(b"{") else {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", help="write the tables here too")
    options = parser.parse_args()
    lines: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        # 1. preparing, with the index of each book built first (its seconds apart)
        for _, book, _ in ASKS[:2]:
            cwread(["index", str(book)], env_for(cache, "shipped"))
        t0 = time.perf_counter()
        cwread(["ask", str(GIANT), ASKS[0][2], "--json"], env_for(cache, "prepared"))
        first = time.perf_counter() - t0
        shutil.rmtree(cache / "calls", ignore_errors=True)
        again, _ = cwread(["ask", str(GIANT), ASKS[0][2], "--json"], env_for(cache, "prepared"))
        lines += [
            "Preparing (once per machine; the Finder's merged model):",
            f"- the README example's first run {first:.1f} s, the next, its call not cached, {again:.1f} s: "
            f"about {first - again:.1f} s to prepare",
            "",
        ]
        # 2. reading
        probes = json.dumps([[str(GIANT), ASKS[0][2], [3, 7, 9, 16, 18, 20]], [str(MOONSTONE), ASKS[2][2], [400, 1200, 2400]]])
        lines += ["| form | prompt tokens (median) | prompt tokens/s (median) |", "|---|---|---|"]
        for form in FORMS:
            proc = subprocess.run([sys.executable, "-c", RATE_PROBE, form, probes], capture_output=True, text=True,
                                  env=env_for(cache, form), check=True, cwd=REPO)
            rate = json.loads(proc.stdout.strip().splitlines()[-1])
            label = f"prepared ({rate['prepared']})" if form == "prepared" else "as shipped (Q4_1 + LoRA)"
            lines.append(f"| {label} | {rate['tokens']:.0f} | {rate['rate']:.0f} |")
        print("\n".join(lines), flush=True)
        # 3. end to end
        lines += ["", "| question | form | wall s (median) | answer judge s | model calls | same answer |", "|---|---|---|---|---|---|"]
        for label, book, question in ASKS:
            answers = {}
            for form in FORMS:
                walls, judge, calls = [], [], 0
                for _ in range(options.repeats):
                    shutil.rmtree(cache / "calls", ignore_errors=True)
                    wall, trace = cwread(["ask", str(book), question, "--json"], env_for(cache, form))
                    walls.append(wall)
                    judge.append(trace.get("timings", {}).get("answer_judge", 0.0))
                    calls = len((trace.get("answer_judgement") or {}).get("scores") or [])
                    answers[form] = (trace.get("answer"), trace.get("citations"))
                same = "" if form == "shipped" else ("yes" if answers["prepared"] == answers["shipped"] else "no")
                lines.append(f"| {label} | {form} | {statistics.median(walls):.2f} | {statistics.median(judge):.2f} | {calls} | {same} |")
                print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if options.out:
        Path(options.out).write_text(
            f"python benchmarks/prepared_model.py --repeats {options.repeats} ({os.cpu_count()} CPU cores)\n\n{text}"
        )
    print(text)


if __name__ == "__main__":
    main()
