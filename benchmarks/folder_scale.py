"""A folder of 200 files, about 50 MB, read as one book: first index, a question, one file
changed, and peak memory, each step a fresh `cwread` process on the embedded default.

Steps, in order, on one cache:
1. `cwread index FOLDER` from an empty cache (BM25 over the book, every file embedded);
2. `cwread ask FOLDER QUESTION` (the embedded model, its default settings);
3. one file appended to, then `cwread index FOLDER` (BM25 again, that file embedded alone);
4. `cwread ask FOLDER QUESTION` again.
Each line gives the wall time inside cwread (reading the folder and the work), that of the
whole process (Python's start-up and imports too) and its peak resident memory.

    python benchmarks/folder_scale.py [--files 200] [--mb 50] [--out benchmarks/results/folder_scale.txt]
"""

from __future__ import annotations

import argparse
import json
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
QUESTION = "Why did the Giant build a high wall round his garden?"
# the command run in each fresh process: its time and peak memory as the last line of stderr
RUN = """
import resource, sys, time
from cwread.cli import main
t0 = time.perf_counter()
code = main(sys.argv[1:])
print(f"@@ {code} {time.perf_counter() - t0:.2f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr)
"""


def _words() -> list[str]:
    text = (REPO / "examples" / "the_selfish_giant.txt").read_text(encoding="utf-8")
    return [w.strip(".,;:!?\"'") for w in text.split() if w.strip(".,;:!?\"'")]


def make_folder(folder: Path, files: int, total_bytes: int) -> None:
    """`files` chapter files of hard-wrapped paragraphs of random words, `total_bytes` in all;
    one of them holds the example story, so the question has its answer somewhere."""
    rng, words = random.Random(0), _words()
    per_file = total_bytes // files
    story = (REPO / "examples" / "the_selfish_giant.txt").read_text(encoding="utf-8")
    for n in range(1, files + 1):
        with open(folder / f"chapter{n}.txt", "w", encoding="utf-8") as f:
            written = 0
            if n == files // 2:
                f.write(story + "\n\n")
                written += len(story)
            while written < per_file:
                sentences = [" ".join(rng.choice(words) for _ in range(rng.randint(8, 20))).capitalize() + "."
                             for _ in range(rng.randint(3, 8))]  # fmt: skip
                paragraph = " ".join(sentences)
                lines = [paragraph[i : i + 72] for i in range(0, len(paragraph), 72)]
                block = "\n".join(lines) + "\n\n"
                f.write(block)
                written += len(block)


def step(args: list[str], env: dict) -> tuple[float, float, str]:
    """(seconds, peak MB, stdout) of one cwread command in a fresh process."""
    proc = subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True, env=env, check=False)
    marker = [line for line in proc.stderr.splitlines() if line.startswith("@@ ")]
    if not marker:
        raise SystemExit(f"{' '.join(args)} failed: {proc.stderr.strip()[-400:]}")
    _, code, seconds, peak_kb = marker[-1].split()
    if int(code) not in (0, 4):
        raise SystemExit(f"{' '.join(args)} exited {code}: {proc.stderr.strip()[-400:]}")
    return float(seconds), int(peak_kb) / 1024, proc.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--mb", type=float, default=50)
    parser.add_argument("--out", help="also write the table here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work) / "book"
        folder.mkdir()
        make_folder(folder, args.files, int(args.mb * 1e6))
        size = sum(p.stat().st_size for p in folder.iterdir())
        env = {**os.environ, "CWREAD_CACHE_DIR": str(Path(work) / "cache"), "CWREAD_MAX_BYTES": str(size + 1_000_000)}
        lines = [
            f"python benchmarks/folder_scale.py --files {args.files} --mb {args.mb:g} ({platform.machine()}, "
            f"{os.cpu_count()} CPUs, Python {platform.python_version()}; each step a fresh cwread process, "
            "on the embedded default)",
            "",
            f"A folder of {args.files} files, {size / 1e6:.1f} MB.",
            "",
            "| step | seconds in cwread | seconds with Python's start-up | peak memory MB | what it did |",
            "|---|---|---|---|---|",
        ]

        def record(name: str, cmd: list[str]) -> dict:
            t0 = time.perf_counter()
            seconds, peak, out = step([*cmd, "--json"], env)
            data = json.loads(out)
            what = (
                f"built {', '.join(data['built']) or 'nothing'}; {data['document']['paragraphs']:,} paragraphs"
                if cmd[0] == "index"
                else f"answer {str(data['answer'])[:60]!r}, cited {data['citations']}; index built "
                f"{', '.join(data['index_built']) or 'nothing'}"
            )
            lines.append(f"| {name} | {seconds:.1f} | {time.perf_counter() - t0:.1f} | {peak:,.0f} | {what} |")
            print(lines[-1], file=sys.stderr)
            return data

        record("first index", ["index", str(folder)])
        record("a question", ["ask", str(folder), QUESTION])
        with open(folder / f"chapter{args.files // 3}.txt", "a", encoding="utf-8") as f:
            f.write("\nA new paragraph, written after the book was indexed.\n")
        record("index after one file changed", ["index", str(folder)])
        record("a question after the change", ["ask", str(folder), QUESTION])
    publish(lines, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
