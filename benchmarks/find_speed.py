"""Cold vs warm `cwread find` on the shared novels, through the real CLI (start-up included).

cold: the document's caches are empty (the static embedding model, built once per machine,
is already there; its one-time build is timed separately). warm: everything cached.

    python benchmarks/find_speed.py [--embedder minilm-static] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NOVELS = REPO.parent / "shared" / "data" / "novels"
QUESTION = "Who was seen near the house on the night of the crime, and why?"


def run_find(book: Path, env: dict, embedder: str) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "cwread", "find", str(book), QUESTION, "--json", "--embedder", embedder],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"find failed on {book.name}: {proc.stderr.strip()}")
    json.loads(proc.stdout)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", default="minilm-static")
    parser.add_argument("--repeat", type=int, default=3, help="warm runs to average")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="cwread-bench-"))
    env = dict(os.environ, CWREAD_CACHE_DIR=str(root))
    try:
        t0 = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-c",
                f"from cwread.retrieval.embedders import load_embedder as load; load({args.embedder!r})",
            ],
            check=True,
            env=env,
        )
        print(f"one-time model setup ({args.embedder}): {time.perf_counter() - t0:.1f} s")
        print(f"{'novel':40s} {'words':>7s} {'paras':>6s} {'cold s':>7s} {'warm s':>7s} {'cold/warm':>9s}")
        for book in sorted(NOVELS.glob("*.txt")):
            shutil.rmtree(root / "docs", ignore_errors=True)
            words = len(book.read_text(encoding="utf-8-sig").split())
            from cwread.book import load_document

            paras = len(load_document(str(book)))
            cold = run_find(book, env, args.embedder)
            warm = min(run_find(book, env, args.embedder) for _ in range(args.repeat))
            print(f"{book.stem:40s} {words:7d} {paras:6d} {cold:7.2f} {warm:7.2f} {cold / warm:9.1f}x")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
