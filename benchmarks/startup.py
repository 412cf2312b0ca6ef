"""How fast cwread starts: `cwread --version`, a usage error and `show`, against a bare
`python -c pass`, each the median of --repeats runs in a fresh process, taken in turn (run it on an idle
machine: the targets are ratios, #91 item 6: --version and a usage error within 5x, show within 8x).

    python benchmarks/startup.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GIANT = str(REPO / "examples" / "the_selfish_giant.txt")
RUNS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "cwread --version": [sys.executable, "-m", "cwread", "--version"],
    "a usage error (cwread ask)": [sys.executable, "-m", "cwread", "ask"],
    "cwread show BOOK 7": [sys.executable, "-m", "cwread", "show", GIANT, "7"],
}
TARGETS = {"cwread --version": 5, "a usage error (cwread ask)": 5, "cwread show BOOK 7": 8}


# as a user's machine runs it: the modules' bytecode written at the first run and read after
# (a shell with PYTHONDONTWRITEBYTECODE set would compile every module of cwread each run)
ENVIRONMENT = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def seconds(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, capture_output=True, check=False, cwd=REPO, env=ENVIRONMENT)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    for command in RUNS.values():
        seconds(command)  # warm the file cache
    times: dict[str, list[float]] = {name: [] for name in RUNS}
    for _ in range(options.repeats):  # the runs taken in turn, so a busy moment weighs on each alike
        for name, command in RUNS.items():
            times[name].append(seconds(command))
    medians = {name: statistics.median(values) for name, values in times.items()}
    bare = medians["python -c pass"]
    print("| run | median s | × python -c pass | target |")
    print("|---|---|---|---|")
    for name, value in medians.items():
        target = f"≤ {TARGETS[name]}×" if name in TARGETS else ""
        print(f"| {name} | {value:.3f} | {value / bare:.1f} | {target} |")


if __name__ == "__main__":
    main()
