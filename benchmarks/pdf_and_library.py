"""PDF books and library search, timed as a user meets them (the CLI in a fresh process,
a fresh cache).

    python benchmarks/pdf_and_library.py pdf [NOVEL.txt ...]      # needs LibreOffice
    python benchmarks/pdf_and_library.py library [--books 50] [--mb 150]

- pdf: each novel set as a PDF by LibreOffice (benchmarks/pdf_books.py), then `cwread index`
  on the text and on the PDF, each with an empty cache (the median of 3); and the share of the text's
  paragraphs the PDF reads to exactly (quotes and spaces normalised).
- library: a folder of `--books` books of about `--mb` MB in all (the dev novels and tales,
  each book a different mix), then `cwread search` three times: the first builds the index,
  the next two read it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.library_scale import generate  # noqa: E402
from benchmarks.pdf_books import libreoffice  # noqa: E402
from cwread.book import load_document  # noqa: E402

NOVELS = REPO.parent / "shared" / "data" / "novels"


def timed(*args: str, cache: Path) -> float:
    env = {**os.environ, "CWREAD_CACHE_DIR": str(cache)}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "cwread", *args], check=True, env=env, capture_output=True)
    return time.perf_counter() - started


def fresh(*args: str, tmp: Path, runs: int = 3) -> float:
    """The median of `runs` timings, each with an empty cache."""
    times = sorted(timed(*args, cache=tmp / f"cache-{time.monotonic_ns()}") for _ in range(runs))
    return times[len(times) // 2]


def plain(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).translate(str.maketrans("“”‘’", "\"\"''")).split())


def pdf_rows(novels: list[Path]) -> None:
    print("| novel | pages | paragraphs (text / PDF) | same paragraphs | index .txt (s) | index .pdf (s) | ratio |")
    print("|---|---|---|---|---|---|---|")
    for novel in novels:
        with tempfile.TemporaryDirectory() as tmp:
            pdf = Path(tmp) / f"{novel.stem}.pdf"
            libreoffice(novel, pdf, novel.stem.replace("_", " ").title(), 1)
            text_s = fresh("index", str(novel), tmp=Path(tmp))
            pdf_s = fresh("index", str(pdf), tmp=Path(tmp))
            os.environ["CWREAD_CACHE_DIR"] = str(Path(tmp) / "cache-read")
            text, book = load_document(str(novel)), load_document(str(pdf))
            read = {plain(p.text) for p in book.paragraphs}
            same = sum(plain(p.text) in read for p in text.paragraphs) / len(text)
            pages = book.paragraphs[-1].page
            print(
                f"| {novel.stem} | {pages} | {len(text):,} / {len(book):,} | {same:.1%} | {text_s:.1f} | "
                f"{pdf_s:.1f} | {pdf_s / text_s:.2f} |"
            )


def library_rows(books: int, megabytes: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "library"
        total = generate(root, books, megabytes)
        cache = Path(tmp) / "cache"
        query = "the doctor examined the footprints near the gate"
        first = timed("search", str(root), query, cache=cache)
        warm = [timed("search", str(root), query, cache=cache) for _ in range(2)]
        print("| books | MB | first search, index built (s) | search after (s) |")
        print("|---|---|---|---|")
        print(f"| {books} | {total / 1e6:.0f} | {first:.1f} | {max(warm):.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["pdf", "library"])
    parser.add_argument("novels", nargs="*", type=Path)
    parser.add_argument("--books", type=int, default=50)
    parser.add_argument("--mb", type=int, default=150)
    args = parser.parse_args()
    if args.what == "pdf":
        pdf_rows(args.novels or sorted(NOVELS.glob("*.txt")))
    else:
        library_rows(args.books, args.mb)


if __name__ == "__main__":
    main()
