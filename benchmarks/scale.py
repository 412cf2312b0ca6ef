"""Reading and indexing texts that stretch the parser: time and peak memory, each in a fresh process.

Cases: one line with no sentence end of 6, 20 and 60 MB (cut into pieces at spaces), and
100,000 and 1,000,000 tiny paragraphs. Each runs `cwread index` (BM25 and the default dense
model) from an empty cache in its own process, which reports its peak resident memory.

    python benchmarks/scale.py [--cases line6,line20,line60,tiny100k,tiny1m] [--out benchmarks/results/scale.txt]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from publish import publish  # benchmarks/, beside this script

REPO = Path(__file__).resolve().parent.parent
CASES = {
    "line6": ("one line, 6 MB", lambda f: _one_line(f, 6_000_000)),
    "line20": ("one line, 20 MB", lambda f: _one_line(f, 20_000_000)),
    "line60": ("one line, 60 MB", lambda f: _one_line(f, 60_000_000)),
    "tiny100k": ("100,000 tiny paragraphs", lambda f: _tiny(f, 100_000)),
    "tiny1m": ("1,000,000 tiny paragraphs", lambda f: _tiny(f, 1_000_000)),
}
INDEX = """
import resource, sys, time
from cwread import api
t0 = time.perf_counter()
report = api.index_document(api.open_document(sys.argv[1]))
print(report.paragraphs, round(time.perf_counter() - t0, 2), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _words() -> list[str]:
    text = (REPO / "examples" / "the_selfish_giant.txt").read_text(encoding="utf-8")
    return [w.strip(".,;:!?\"'") for w in text.split() if w.strip(".,;:!?\"'")]


def _one_line(path: Path, size: int) -> None:
    rng, words = random.Random(0), _words()
    with open(path, "w", encoding="utf-8") as f:
        written = 0
        while written < size:
            chunk = " ".join(rng.choice(words) for _ in range(10_000)) + " "
            f.write(chunk)
            written += len(chunk)
        f.write("\n")


def _tiny(path: Path, paragraphs: int) -> None:
    rng, words = random.Random(0), _words()
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(paragraphs):
            f.write(" ".join(rng.choice(words) for _ in range(3)) + ".\n\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--out", help="also write the table here")
    args = parser.parse_args()
    lines = [
        f"python benchmarks/scale.py ({platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}; cwread index from an empty cache, a fresh process each)",
        "",
        "| text | size MB | paragraphs | seconds (read + index) | peak memory MB |",
        "|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as work:
        for name in args.cases.split(","):
            label, make = CASES[name]
            path = Path(work) / f"{name}.txt"
            make(path)
            env = {**os.environ, "CWREAD_CACHE_DIR": str(Path(work) / f"cache-{name}")}
            t0 = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-c", INDEX, str(path)], capture_output=True, text=True, env=env, check=False
            )
            if proc.returncode != 0:
                lines.append(f"| {label} | {path.stat().st_size / 1e6:.0f} | failed: {proc.stderr.strip()[-200:]} | | |")
                continue
            paragraphs, seconds, peak_kb = proc.stdout.split()
            lines.append(
                f"| {label} | {path.stat().st_size / 1e6:.0f} | {int(paragraphs):,} | {float(seconds):.1f} | "
                f"{int(peak_kb) / 1024:,.0f} |"
            )
            print(lines[-1], f"({time.perf_counter() - t0:.0f} s with start-up)", file=sys.stderr)
            path.unlink()
    publish(lines, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
