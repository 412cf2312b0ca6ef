"""Evidence recall of retrieval on the fairytale anthology: BM25 alone, dense alone, fused.

For every record with gold `evidence` paragraphs, counts the share of gold ids that fall
inside anchor segments, and inside the segments the Finder reads (the `read` budget), at a
preset (default: focused). No model calls: retrieval and segmentation only.

    python benchmarks/retrieval_recall.py [--preset focused] [--embedder minilm-static]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from cwread import api
from cwread.retrieval.segments import make_budget

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "fairytale" / "fairytale.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--preset", default="focused")
    parser.add_argument("--embedder", default="minilm-static")
    args = parser.parse_args()

    data = Path(args.data)
    records = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines() if line.strip()]
    records = [r for r in records if r.get("evidence")]
    budget = make_budget(args.preset)
    docs: dict[str, object] = {}
    print(
        f"{len(records)} records, preset {budget.preset} (anchors {budget.anchors}, read {budget.read}, "
        f"p_r {budget.p_r}, p_w {budget.p_w}), embedder {args.embedder}"
    )
    print(
        f"{'method':8s} {'anchor recall':>14s} {'read recall':>12s} {'records all-in-anchors':>23s} {'s/query':>8s}"
    )
    results = {}
    for method in ("bm25", "dense", "fused"):
        gold = in_anchor = in_read = complete = 0
        t0 = time.perf_counter()
        for r in records:
            path = str((data.parent / r["doc"]).resolve())
            doc = docs.get(path) or docs.setdefault(path, api.open_document(path))
            question = api.make_question(r["question"], r.get("options") if r["kind"] == "mcq" else None)
            result = api.find(doc, question, api.Settings(api.SessionSettings(args.embedder), api.RunSettings(budget, method)))
            anchors = [s for s in result.segments if s.origin == "anchor"]
            read = result.segments[: budget.read]
            hits_a = sum(any(pid in s for s in anchors) for pid in r["evidence"])
            hits_r = sum(any(pid in s for s in read) for pid in r["evidence"])
            gold += len(r["evidence"])
            in_anchor += hits_a
            in_read += hits_r
            complete += hits_a == len(r["evidence"])
        per_query = (time.perf_counter() - t0) / len(records)
        results[method] = in_anchor / gold
        print(
            f"{method:8s} {in_anchor / gold:14.3f} {in_read / gold:12.3f} {complete / len(records):23.3f} {per_query:8.3f}"
        )
    print(
        f"fused/bm25 anchor recall ratio: {results['fused'] / results['bm25']:.2f}; "
        f"fused/dense: {results['fused'] / results['dense']:.2f}"
    )


if __name__ == "__main__":
    main()
