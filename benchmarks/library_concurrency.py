"""The library's index under concurrency, on a new library each time: N processes searching at
once (`cwread search`), then M threads sharing one Library (as the MCP server's calls do), each
looking for the word that one book alone holds. Prints the right answers of each and the time.

    python benchmarks/library_concurrency.py [--books 6] [--processes 3] [--threads 12]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HOUND = REPO / "examples" / "the_hound_of_the_baskervilles.txt"


def shelf(folder: Path, books: int) -> None:
    paragraphs = HOUND.read_text(encoding="utf-8").split("\n\n")
    for i in range(1, books + 1):
        text = [*paragraphs[:200], f"The word of this copy is zyzzyva{i}.", *paragraphs[200:]]
        (folder / f"hound{i}.txt").write_text("\n\n".join(text), encoding="utf-8")


def processes(folder: Path, books: int, count: int) -> tuple[int, float]:
    env = {**os.environ, "CWREAD_CACHE_DIR": tempfile.mkdtemp(prefix="cwread-conc-")}
    start = time.perf_counter()
    running = [
        (i % books + 1, subprocess.Popen(
            [sys.executable, "-m", "cwread", "search", str(folder), f"zyzzyva{i % books + 1}", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        ))
        for i in range(count)
    ]  # fmt: skip
    right = 0
    for number, proc in running:
        out, _ = proc.communicate()
        right += proc.returncode == 0 and [h["book"] for h in json.loads(out)["hits"]] == [f"hound{number}.txt"]
    return right, time.perf_counter() - start


def threads(folder: Path, books: int, count: int) -> tuple[int, float]:
    os.environ["CWREAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="cwread-conc-")
    from cwread.library.catalog import Library

    library = Library((folder,))
    right: list[bool] = []

    def go(i: int) -> None:
        number = i % books + 1
        try:
            right.append([h.book for h in library.search(f"zyzzyva{number}", 5).hits] == [f"hound{number}.txt"])
        except Exception:  # a failure is a wrong answer
            right.append(False)

    start = time.perf_counter()
    started = [threading.Thread(target=go, args=(i,)) for i in range(count)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()
    return sum(right), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--books", type=int, default=6)
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--threads", type=int, default=12)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shelf(folder, args.books)
        right, seconds = processes(folder, args.books, args.processes)
        print(f"{args.processes} processes at once on a new library of {args.books} books: {right} of {args.processes} right, {seconds:.1f} s")
        right, seconds = threads(folder, args.books, args.threads)
        print(f"{args.threads} threads at once on a new library of {args.books} books: {right} of {args.threads} right, {seconds:.1f} s")


if __name__ == "__main__":
    main()
