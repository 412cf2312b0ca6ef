"""A library's index on PostgreSQL beside the SQLite file (#92), at scale: `--books` generated
books (benchmarks/library_scale.py's generator) and the 51 novels of `data/library50.txt`, in one
folder; each step a fresh `cwread` process, its seconds and peak memory.

    python benchmarks/shared_library.py --novels DIR --library-url URL [--books 10000] [--mb 1000]

For each store: the index built (`cwread index --library-url`; SQLite's by a first search), a
search and a library question (`find --library`), each first and again, one book changed then a
search, and two clients at once (a search and a question started together: the slower's
seconds). The server is whatever URL names (its own settings; say them beside the figures).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from library_scale import REPO, WRAPPER, cwread, generate

QUERY = "the doctor examined the footprints near the gate"
QUESTION = "Why did Sir Henry's boot go missing at the hotel?"


def together(cache: Path, *commands: tuple[str, ...]) -> float:
    """Seconds until every one of `commands` (started at once, fresh processes) has finished."""
    import os

    env = {**os.environ, "CWREAD_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
    start = time.perf_counter()
    running = [
        subprocess.Popen([sys.executable, "-c", WRAPPER, sys.executable, "-m", "cwread", *args], cwd=REPO, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for args in commands
    ]  # fmt: skip
    for proc in running:
        out, err = proc.communicate()
        if proc.returncode != 0 or '[0,' not in out.replace(" ", ""):
            raise SystemExit(f"a client failed: {err[-500:]} {out[-500:]}")
    return time.perf_counter() - start


def measure(name: str, library: Path, cache: Path, shared: tuple[str, ...]) -> None:
    def row(step: str, seconds: float, peak: float | None = None) -> None:
        print(f"| {name} | {step} | {seconds:.2f} | {'' if peak is None else f'{peak:.0f}'} |", flush=True)

    if shared:
        row("index built", *cwread(REPO, cache, "index", str(library), *shared)[:2])
    else:
        row("index built (a first search)", *cwread(REPO, cache, "search", str(library), QUERY)[:2])
    for when in ("first", "again"):
        row(f"a search, {when}", *cwread(REPO, cache, "search", str(library), QUERY, *shared)[:2])
    for when in ("first (its books indexed on the way)", "again"):
        row(f"a library question, {when}", *cwread(REPO, cache, "find", str(library), QUESTION, "--library", "--json", *shared)[:2])
    path = library / "book0007.txt"
    path.write_text(path.read_text(encoding="utf-8") + "\n\nA new last paragraph.\n", encoding="utf-8")
    row("one book changed, then a search", *cwread(REPO, cache, "search", str(library), QUERY, *shared)[:2])
    seconds = together(
        cache, ("search", str(library), QUERY, *shared), ("find", str(library), QUESTION, "--library", *shared)
    )
    row("two clients at once: a search and a question (both done)", seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--novels", type=Path, required=True, help="the 51 novels' folder")
    parser.add_argument("--library-url", required=True)
    parser.add_argument("--books", type=int, default=10_000)
    parser.add_argument("--mb", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=REPO.parent) as tmp:
        work = Path(tmp)
        total = generate(work / "library", args.books, args.mb)
        for novel in sorted(args.novels.glob("*.txt")):
            shutil.copy(novel, work / "library" / novel.name)
            total += novel.stat().st_size
        print(f"{args.books:,} generated books and {len(list(args.novels.glob('*.txt')))} novels, {total / 1e6:.0f} MB\n")
        print("| store | step | seconds | peak MiB |")
        print("|---|---|---|---|")
        for name, shared in (("SQLite", ()), ("PostgreSQL", ("--library-url", args.library_url))):
            library = work / f"library-{name}"
            shutil.copytree(work / "library", library)
            measure(name, library, work / f"cache-{name}", shared)


if __name__ == "__main__":
    main()
