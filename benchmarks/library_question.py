"""A question over a whole library (`find LIBRARY QUESTION --library`), as a reader asks it: a
fresh process a question, its seconds and peak memory, and where the answer ranks.

    python benchmarks/library_question.py novels LIBRARY [--before] [--library-url URL]
    python benchmarks/library_question.py generated [--books 1000] [--mb 400]

- novels: LIBRARY is a folder of novels (the 51 of `data/library50.txt`, fetched from their
  GITenberg repositories; not copied here) holding the five books questions were written for
  (`data/colonel.jsonl`, `katrine.jsonl`, `logschool.jsonl`, `hound.jsonl`, `moonstone.jsonl`:
  their open questions). Each question is asked twice: first with a fresh cache (the library's
  index already built, the candidate books' own indexes not), then again (they are). Per
  question: whether its book was among those searched, and whether a gold paragraph of it is in
  the first three passages. `--before`: also the folder read as one book (`find LIBRARY Q`, one
  process, its indexes built once), on the first ten questions. `--library-url`: the library's
  index on that PostgreSQL server (cwread.library.postgres), not this machine's SQLite file.
- generated: `--books` generated books (benchmarks/library_scale.py's generator); the library's
  index built, then one question with no candidate book indexed, the same again, and another.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from library_scale import REPO, cwread, generate

DATA = Path(__file__).resolve().parent / "data"
# each question set's book, as the library names it
BOOKS = {
    "colonel": "the-little-colonel-s-hero.txt",
    "katrine": "katrine--a-novel.txt",
    "logschool": "the-log-school-house-on-the-columbia.txt",
    "hound": "the_hound_of_the_baskervilles.txt",
    "moonstone": "the_moonstone.txt",
}


def questions() -> list[dict]:
    out = []
    for name, book in BOOKS.items():
        for line in (DATA / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record["kind"] == "open" and record.get("evidence"):
                out.append({**record, "book": book})
    return out


def ask(cache: Path, library: Path, record: dict, shared: tuple[str, ...] = ()) -> dict:
    seconds, peak, out = cwread(REPO, cache, "find", str(library), record["question"], "--library", "--json", *shared)
    data = json.loads(out)
    gold = set(record["evidence"])
    first3 = data["passages"][:3]
    return {
        "id": record["id"],
        "seconds": round(seconds, 2),
        "peak_mib": round(peak),
        "book_searched": record["book"] in [c["book"] for c in data["searched"]],
        "gold_in_first_3": any(
            p["book"] == record["book"] and gold & set(range(p["start"], p["end"] + 1)) for p in first3
        ),
        "book_in_first_3": any(p["book"] == record["book"] for p in first3),
        "built": sum(bool(c["index_built"]) for c in data["searched"]),
    }


def novels(library: Path, before: bool, url: str | None = None) -> None:
    asked = questions()
    shared = ("--library-url", url) if url else ()
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        seconds, _, _ = cwread(REPO, cache, "search", str(library), "the", *shared)  # the library's index, once
        where = "on PostgreSQL" if url else "in SQLite"
        print(f"{len(list(library.iterdir()))} books; the library's index built {where} in {seconds:.1f} s\n")
        runs = {"first (candidate books indexed on the way)": [ask(cache, library, r, shared) for r in asked]}
        runs["again (indexes kept)"] = [ask(cache, library, r, shared) for r in asked]
    print(
        "| run | questions | book searched | its passage in the first 3 | gold in the first 3 | median s | most s | peak MiB |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, rows in runs.items():
        n = len(rows)
        searched = sum(r["book_searched"] for r in rows)
        book = sum(r["book_in_first_3"] for r in rows)
        gold = sum(r["gold_in_first_3"] for r in rows)
        print(
            f"| {name} | {n} | {searched} ({100 * searched / n:.0f}%) | {book} ({100 * book / n:.0f}%) | "
            f"{gold} ({100 * gold / n:.0f}%) | "
            f"{statistics.median(r['seconds'] for r in rows):.2f} | {max(r['seconds'] for r in rows):.2f} | "
            f"{max(r['peak_mib'] for r in rows)} |"
        )
    for name in BOOKS:
        rows = [r for r in runs["again (indexes kept)"] if r["id"].startswith(name[:4])]
        print(f"- {name}: gold in the first 3 for {sum(r['gold_in_first_3'] for r in rows)} of {len(rows)}")
    print("\nrows:", json.dumps(runs["again (indexes kept)"]))
    if before:
        with tempfile.TemporaryDirectory() as tmp:
            cache = Path(tmp) / "cache"
            took = []
            for record in asked[:10]:
                seconds, peak, _ = cwread(REPO, cache, "find", str(library), record["question"], "--json")
                took.append((seconds, peak))
            print(
                f"\nbefore (the folder read as one book): first question {took[0][0]:.1f} s "
                f"(its indexes built), then a median of {statistics.median(s for s, _ in took[1:]):.1f} s; "
                f"peak {max(p for _, p in took):.0f} MiB"
            )


def generated(books: int, megabytes: int) -> None:
    with tempfile.TemporaryDirectory(dir=REPO.parent) as tmp:
        library, cache = Path(tmp) / "library", Path(tmp) / "cache"
        total = generate(library, books, megabytes)
        print(f"{books} books, {total / 1e6:.0f} MB\n")
        print("| step | seconds | peak MiB |")
        print("|---|---|---|")
        seconds, peak, _ = cwread(REPO, cache, "search", str(library), "the")
        print(f"| the library's index built (a search) | {seconds:.2f} | {peak:.0f} |")
        for step, question in (
            (
                "a question, no candidate book indexed",
                "Why did the doctor examine the footprints near the gate?",
            ),
            ("the same question again", "Why did the doctor examine the footprints near the gate?"),
            ("another question", "Who hid the diamond in the quicksand?"),
        ):
            seconds, peak, out = cwread(REPO, cache, "find", str(library), question, "--library", "--json")
            built = sum(bool(c["index_built"]) for c in json.loads(out)["searched"])
            print(f"| {step} ({built} books indexed on the way) | {seconds:.2f} | {peak:.0f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    on_novels = sub.add_parser("novels")
    on_novels.add_argument("library", type=Path)
    on_novels.add_argument("--before", action="store_true")
    on_novels.add_argument("--library-url", help="the library's index on this PostgreSQL server")
    on_generated = sub.add_parser("generated")
    on_generated.add_argument("--books", type=int, default=1000)
    on_generated.add_argument("--mb", type=int, default=400)
    args = parser.parse_args()
    if args.mode == "novels":
        novels(args.library, args.before, args.library_url)
    else:
        generated(args.books, args.mb)


if __name__ == "__main__":
    main()
