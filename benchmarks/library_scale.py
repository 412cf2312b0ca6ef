"""The library's search index at scale, and its ranking against the BM25 it replaced.

    python benchmarks/library_scale.py scale [--books 2000] [--mb 400] [--before REV]
    python benchmarks/library_scale.py quality --before REV

- scale: a folder of `--books` generated books of about `--mb` MB in all (the dev novels' and
  tales' paragraphs, each book a different mix: a book's words are real, its order is not),
  then `cwread search` in a fresh process each time: the first (the index built), three with
  no change (the slowest), one after a book changed, one after a book added and one removed.
  Seconds and the peak resident memory of each; with --before, the same for REV (a git
  worktree; the steps after a change there rebuild everything).
- quality: the dev novels and FairytaleQA's dev tales as one library; each dev question with
  gold paragraphs searched by its words; the share whose gold paragraph is among the first 1,
  5 and 10 hits, for this checkout and REV, with a paired 95% interval.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
sys.path.insert(0, str(REPO))

WRAPPER = (
    "import json, resource, subprocess, sys, time;"
    "t0 = time.perf_counter();"
    "p = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
    "print(json.dumps([p.returncode, time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,"
    " p.stdout, p.stderr]))"
)


def cwread(tree: Path, cache: Path, *args: str) -> tuple[float, float, str]:
    """(seconds, peak MiB, stdout) of `python -m cwread ARGS` from `tree`, a fresh process."""
    env = {**os.environ, "CWREAD_CACHE_DIR": str(cache), "PYTHONPATH": str(tree)}
    proc = subprocess.run(
        [sys.executable, "-c", WRAPPER, sys.executable, "-m", "cwread", *args],
        cwd=tree, env=env, capture_output=True, text=True, check=True,
    )
    code, seconds, peak, out, err = json.loads(proc.stdout)
    if code != 0:
        raise SystemExit(f"cwread {' '.join(args)} exited {code}: {err[-500:]}")
    return seconds, peak, out


def generate(root: Path, books: int, megabytes: int) -> int:
    sources = [p.read_text(encoding="utf-8-sig") for p in sorted((DATA / "novels").glob("*.txt"))]
    sources += [p.read_text(encoding="utf-8-sig") for p in sorted((DATA / "fairytale" / "docs").glob("*.txt"))]
    blocks = [b for text in sources for b in text.split("\n\n") if b.strip()]
    per_book = megabytes * 2**20 // books
    rng = random.Random(7)
    root.mkdir(parents=True)
    total = 0
    for number in range(books):
        chosen, size = [f"Book {number} of the benchmark library."], 0
        while size < per_book:
            block = rng.choice(blocks)
            chosen.append(block)
            size += len(block) + 2
        text = "\n\n".join(chosen) + "\n"
        (root / f"book{number:04d}.txt").write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
    return total


def worktree(rev: str, where: Path) -> Path:
    subprocess.run(["git", "worktree", "add", "--detach", str(where), rev], cwd=REPO, check=True, capture_output=True)
    return where


def scale(books: int, megabytes: int, before: str | None) -> None:
    with tempfile.TemporaryDirectory(dir=REPO.parent) as tmp:
        work = Path(tmp)
        total = generate(work / "library", books, megabytes)
        trees = [("this checkout", REPO)] + ([(f"before ({before})", worktree(before, work / "before"))] if before else [])
        query = "the doctor examined the footprints near the gate"
        print(f"{books} books, {total / 1e6:.0f} MB\n")
        print("| tree | step | seconds | peak MiB |")
        print("|---|---|---|---|")
        try:
            for name, tree in trees:
                library = work / f"library-{len(name)}"
                shutil.copytree(work / "library", library)
                cache = work / f"cache-{len(name)}"
                def search(tree=tree, cache=cache, library=library):
                    return cwread(tree, cache, "search", str(library), query)

                def unchanged(search=search):
                    return max((search() for _ in range(3)), key=lambda r: r[0])

                def changed(search=search, library=library):
                    path = library / "book0007.txt"
                    path.write_text(path.read_text(encoding="utf-8") + "\n\nA new last paragraph.\n", encoding="utf-8")
                    return search()

                def added_and_removed(search=search, library=library):
                    (library / "book0003.txt").unlink()
                    shutil.copy(library / "book0004.txt", library / "added.txt")
                    return search()

                steps = [
                    ("first search (index built)", search),
                    ("search, nothing changed (slowest of 3)", unchanged),
                    ("one book changed, then a search", changed),
                    ("one added, one removed, then a search", added_and_removed),
                ]
                for step, run in steps:
                    seconds, peak, _ = run()
                    print(f"| {name} | {step} | {seconds:.2f} | {peak:.0f} |", flush=True)
        finally:
            if before:
                subprocess.run(["git", "worktree", "remove", "--force", str(work / "before")], cwd=REPO, check=False)


def dev_questions() -> list[tuple[str, str, set[int]]]:
    """(book file name, question, gold paragraph ids) of the dev sets with gold evidence."""
    rows = []
    for records in [DATA / "novelqa" / "novelqa.jsonl", REPO / "benchmarks" / "data" / "hound.jsonl",
                    REPO / "benchmarks" / "data" / "moonstone.jsonl", DATA / "fairytale" / "fairytale.jsonl"]:
        for line in records.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record.get("evidence") and record.get("question"):
                rows.append((Path(record["doc"]).name, record["question"], set(record["evidence"])))
    return rows


def quality(before: str) -> None:
    from cwread.eval.metrics import bootstrap_interval

    questions = dev_questions()
    with tempfile.TemporaryDirectory(dir=REPO.parent) as tmp:
        work = Path(tmp)
        library = work / "library"
        library.mkdir()
        for name in {q[0] for q in questions}:
            found = [p for p in [DATA / "novels" / name, DATA / "fairytale" / "docs" / name, REPO / "examples" / name] if p.is_file()]
            shutil.copy(found[0], library / name)
        script = (
            "import json, sys\nfrom pathlib import Path\nfrom cwread.library.catalog import Library\n"
            "lib = Library((Path(sys.argv[1]),))\nout = []\n"
            "for book, question in json.load(sys.stdin):\n"
            "    hits = lib.search(question, 10)\n"
            "    out.append([[h.book, h.id] for h in hits.hits])\n"
            "print(json.dumps(out))\n"
        )
        asked = json.dumps([[b, q] for b, q, _ in questions])
        ranks = {}
        trees = [("this checkout", REPO), (f"before ({before})", worktree(before, work / "before"))]
        try:
            for name, tree in trees:
                env = {**os.environ, "CWREAD_CACHE_DIR": str(work / f"cache-{len(name)}"), "PYTHONPATH": str(tree)}
                proc = subprocess.run([sys.executable, "-c", script, str(library)], input=asked, cwd=tree, env=env,
                                      capture_output=True, text=True, check=True)
                hits = json.loads(proc.stdout)
                ranks[name] = [
                    next((i for i, (book, pid) in enumerate(found) if book == q[0] and pid in q[2]), None)
                    for q, found in zip(questions, hits, strict=True)
                ]
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(work / "before")], cwd=REPO, check=False)
        print(f"{len(questions)} dev questions with gold paragraphs, over {len(list(library.iterdir()))} books\n")
        print("| gold among the first | " + " | ".join(name for name, _ in trees) + " | difference [95%] |")
        print("|---|---|---|---|")
        now, was = ranks[trees[0][0]], ranks[trees[1][0]]
        for k in (1, 5, 10):
            a = [1.0 if r is not None and r < k else 0.0 for r in now]
            b = [1.0 if r is not None and r < k else 0.0 for r in was]
            low, high = bootstrap_interval([x - y for x, y in zip(a, b, strict=True)])
            print(f"| {k} | {100 * sum(a) / len(a):.1f}% | {100 * sum(b) / len(b):.1f}% | "
                  f"{100 * (sum(a) - sum(b)) / len(a):+.1f} [{100 * low:+.1f}, {100 * high:+.1f}] |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["scale", "quality"])
    parser.add_argument("--books", type=int, default=2000)
    parser.add_argument("--mb", type=int, default=400)
    parser.add_argument("--before")
    args = parser.parse_args()
    if args.what == "scale":
        scale(args.books, args.mb, args.before)
    else:
        quality(args.before or "HEAD")


if __name__ == "__main__":
    main()
