"""Where a question's time goes, before and after skipping calls that cannot change the answer.

For each case, `cwread ask`/`verify --json` runs through the real CLI, once as before (the
Finder run whatever it keeps on every segment of the read budget, options and claims judged:
`--finder on --judge-anyway --set finder.read_tokens=none`) and
once as shipped (defaults), each from a cold call cache; the trace's timings give the share
of index, Finder and Interpreter. Cases: the README example (its index cold too); a first and
a second question on The Moonstone once its index is built (embedded default); a claim on the
README example; with `--gguf PATH`, the first Moonstone question on that model (e.g.
Qwen2.5-Coder-1.5B) at the default budget, whose reading rate is measured on its first call
(each run starts from an empty cache).

    python benchmarks/ask_speed.py [--gguf Q15.gguf] [--out benchmarks/results/ask_speed.txt]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MOONSTONE = REPO.parent / "shared" / "data" / "novels" / "the_moonstone.txt"
GIANT = REPO / "examples" / "the_selfish_giant.txt"
BEFORE = ["--finder", "on", "--judge-anyway", "--set", "finder.read_tokens=none"]


def cases(gguf: str | None) -> list[tuple[str, list[str], bool]]:
    """(label, CLI arguments, whether the index is built beforehand)."""
    found = [
        ("README example", ["ask", str(GIANT), "Why did the Giant build a high wall round his garden?"], False),
        ("README book, a claim", ["verify", str(GIANT), "The Giant built a wall round his garden."], True),
        ("Moonstone, 1st question", ["ask", str(MOONSTONE), "Who took the Moonstone from Rachel's cabinet?"], True),
        ("Moonstone, 2nd question", ["ask", str(MOONSTONE), "Why did Rosanna Spearman hide the nightgown?"], True),
    ]
    if gguf:
        found.append(
            ("Moonstone, 1.5B", ["ask", str(MOONSTONE), "Who took the Moonstone from Rachel's cabinet?", "--gguf", gguf], True)
        )
    return found


def run(args: list[str], cache: Path) -> dict:
    env = {**os.environ, "CWREAD_CACHE_DIR": str(cache), "CWREAD_BACKEND": "embedded"}
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "cwread", *args, "--json"], capture_output=True, env=env, check=False, cwd=REPO
    )
    wall = time.perf_counter() - t0
    trace = json.loads(proc.stdout)
    timings = trace.get("timings", {})
    return {
        "exit": proc.returncode,
        "wall": wall,
        "index": timings.get("index", 0.0) + timings.get("retrieve", 0.0),
        "finder": timings.get("finder", 0.0),
        "interpreter": timings.get("interpreter", 0.0) + timings.get("self_check", 0.0),
        "calls": len(trace.get("finder", [])) + (trace.get("interpreter") is not None),
        "answer": trace.get("answer"),
        "citations": trace.get("citations"),
    }


def measure(label: str, args: list[str], indexed: bool, extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        if indexed:  # the index is built once per book; this measures the question
            subprocess.run(
                [sys.executable, "-m", "cwread", "index", args[1]], capture_output=True, check=True,
                env={**os.environ, "CWREAD_CACHE_DIR": str(cache)}, cwd=REPO,
            )
        return {"case": label, **run([*args, *extra], cache)}


def share(row: dict, part: str) -> str:
    total = row["index"] + row["finder"] + row["interpreter"]
    return f"{100 * row[part] / total:.0f}%" if total else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", help="also the first Moonstone question on this GGUF")
    parser.add_argument("--out", help="write the table here too")
    options = parser.parse_args()
    lines = [
        "| case | run | model calls | seconds (wall) | index + retrieval | Finder | packing + Interpreter | answer [cited] | exit |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, args, indexed in cases(options.gguf):
        rows = {name: measure(label, args, indexed, extra) for name, extra in (("before", BEFORE), ("after", []))}
        for name, row in rows.items():
            answer = (row["answer"] or "none")[:40]
            lines.append(
                f"| {label} | {name} | {row['calls']} | {row['wall']:.1f} | {share(row, 'index')} | "
                f"{share(row, 'finder')} | {share(row, 'interpreter')} | {answer} {row['citations']} | {row['exit']} |"
            )
        ratio = rows["before"]["wall"] / max(rows["after"]["wall"], 1e-9)
        lines.append(f"| {label} | before / after | | {ratio:.1f}x | | | | | |")
        print("\n".join(lines[-3:]), flush=True)
    text = "\n".join(lines) + "\n"
    if options.out:
        Path(options.out).write_text(
            f"python benchmarks/ask_speed.py{' --gguf ' + options.gguf if options.gguf else ''} "
            f"({os.cpu_count()} CPU cores)\n\n{text}"
        )
    print(text)


if __name__ == "__main__":
    main()
