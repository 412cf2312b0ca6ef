"""The book's cast (cwread/retrieval/cast.py): what the whole cast (`cwread cast`) costs beside a
novel's index, what it finds, what reading a question's descriptions costs (`find`, `ask`: from
the paragraphs holding its words, no whole cast), and which dev novel questions it reads a name
into (with the question's gold ids, to check by hand whether the name is the one meant).

    python benchmarks/cast.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from extractive_dev import SETS, open_record_list

from cwread.book import load_document
from cwread.retrieval.cast import named_in_book
from cwread.retrieval.cast_build import build_cast
from cwread.retrieval.embedders import load_embedder
from cwread.retrieval.index import open_index

NOVELS = ("novelqa", "hound", "moonstone")


def seconds(work, times: int = 3) -> float:
    took = []
    for _ in range(times):
        t0 = time.perf_counter()
        work()
        took.append(time.perf_counter() - t0)
    return statistics.median(took)


def main() -> None:
    import os

    books = {}
    for name in NOVELS:
        for record in open_record_list(SETS[name]):
            books.setdefault(record["doc"], []).append(record)
    embedder = load_embedder("minilm-static")
    print("| book | paragraphs | index (bm25 + dense) | cast | share | members | with a description |")
    print("|---|---|---|---|---|---|---|")
    casts = {}
    for path in books:
        document = load_document(path)

        def index(document=document) -> None:
            with tempfile.TemporaryDirectory() as cache:
                os.environ["CWREAD_CACHE_DIR"] = cache
                open_index(document, embedder)

        texts = [p.text for p in document.paragraphs]
        index_s = seconds(index)
        cast_s = seconds(lambda texts=texts, skip=document.unread: build_cast(texts, skip))
        cast = casts[path] = build_cast(texts, document.unread)
        described = sum(bool(m.descriptions) for m in cast.members)
        print(
            f"| {Path(path).name} | {len(document):,} | {index_s:.2f} s | {cast_s:.2f} s | "
            f"{100 * cast_s / index_s:.0f}% | {len(cast.members)} | {described} |"
        )
    print()
    total = named = 0
    took = []
    documents = {path: load_document(path) for path in books}
    for path, records in books.items():
        for record in records:
            total += 1
            t0 = time.perf_counter()
            found = named_in_book(documents[path], record["question"])
            took.append(time.perf_counter() - t0)
            if found:
                named += 1
                said = "; ".join(f"{n.description.said!r} -> {n.member.name}" for n in found)
                print(f"- {record['id']}: {said} (gold {record.get('evidence')})")
    print(f"\n{named} of {total} dev novel questions had a name read into them")
    print(
        f"reading a question's descriptions: median {1000 * statistics.median(took):.0f} ms, most {1000 * max(took):.0f} ms"
    )


if __name__ == "__main__":
    main()
