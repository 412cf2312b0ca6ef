"""Where gold evidence falls, change by change: the novel-evidence work (#40) as an ablation.

No model: retrieval, segments and the packet the pipeline packs when no Finder filters (the
embedded default's path), on each dev set with gold paragraphs. Each row adds one change to
the row above it; the last is the landed default (`cwread eval DATA -m retrieval`):

- before: BM25 and the dense ranking fused, the focused budget, N_E capping the packet;
- + context: a paragraph's BM25 counts its neighbours' matches (lexical.CONTEXT_WIDTH);
- + sections: the BM25 of the section around a paragraph joins the fusion (SECTION_WEIGHT);
- + auto budget: fitted to the book (segments.fit_budget), B_c alone bounding a packet no
  Finder filtered. bm25-rag: the top BM25 paragraphs whole under the same B_c (the baseline).

    python benchmarks/novel_evidence.py [--data FILE.jsonl ...] [--out results/novel_evidence.md]
"""

from __future__ import annotations

import argparse
import contextlib
import time
from pathlib import Path
from unittest import mock

from cwread import api
from cwread.eval import metrics
from cwread.eval.dataset import load_records
from cwread.records.stages import Verdict
from cwread.retrieval import fusion, lexical
from cwread.retrieval.segments import make_budget
from cwread.run.packing import pack, pack_ranked

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data"
DATA = [
    SHARED / "novelqa" / "novelqa.jsonl",
    REPO / "benchmarks" / "data" / "hound.jsonl",
    REPO / "benchmarks" / "data" / "moonstone.jsonl",
    SHARED / "fairytale" / "fairytale.jsonl",
]
STEPS = ("before", "+ context", "+ sections", "+ auto budget")


@contextlib.contextmanager
def step(name: str):
    """The retrieval as it stood at `name` (module constants patched for the run)."""
    index = STEPS.index(name)
    with (
        mock.patch.object(lexical, "CONTEXT_WIDTH", lexical.CONTEXT_WIDTH if index >= 1 else 0),
        mock.patch.object(fusion, "SECTION_WEIGHT", fusion.SECTION_WEIGHT if index >= 2 else 0.0),
    ):
        yield make_budget("auto" if index >= 3 else "focused"), index >= 3


def measure(path: Path, name: str) -> dict:
    records = [r for r in load_records(str(path)) if r.evidence]
    sessions: dict[str, api.Session] = {}
    stages = {"anchor": [], "read": [], "packet": [], "bm25-rag": []}
    started = time.perf_counter()
    with step(name) as (budget, fitted):
        for record in records:
            session = sessions.get(record.doc) or sessions.setdefault(record.doc, api.open(record.doc))
            found = session.find(record.question, budget)
            gold = record.gold_ids(session.document)
            kept = [Verdict(s, "YES") for s in found.read]
            packet = pack(session.document, kept, found.budget, limit_segments=not fitted)
            scores = session.find(record.question, found.budget, "bm25").paragraph_scores
            ranked = [i + 1 for i in sorted(range(len(scores)), key=lambda i: (-scores[i], i))]
            rag = pack_ranked(session.document, ranked, found.budget, most=4 * found.budget.n_e)
            for stage, ids in (
                ("anchor", {p for s in found.anchor_segments for p in s.ids}),
                ("read", {p for s in found.read for p in s.ids}),
                ("packet", set(packet.ids)),
                ("bm25-rag", set(rag.ids)),
            ):
                stages[stage].append((metrics.recall(gold, ids)[0], len(gold)))
    seconds = (time.perf_counter() - started) / len(records)
    out = {"records": len(records), "gold": sum(g for _, g in stages["anchor"]), "seconds": seconds}
    for stage, pairs in stages.items():
        out[stage] = (sum(h for h, _ in pairs) / out["gold"], metrics.ratio_interval(pairs))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="*", default=[str(p) for p in DATA])
    parser.add_argument("--out", help="also write the table here (Markdown)")
    args = parser.parse_args()
    lines = [
        "| data | records / gold | step | anchors % [95% CI] | read % | packet % | bm25-rag packet % | ms/question |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def cell(value) -> str:
        share, (low, high) = value
        return f"{100 * share:.1f} [{100 * low:.0f}–{100 * high:.0f}]"

    for data in args.data:
        for name in STEPS:
            m = measure(Path(data), name)
            lines.append(
                f"| {Path(data).stem} | {m['records']} / {m['gold']} | {name} | {cell(m['anchor'])} "
                f"| {cell(m['read'])} | {cell(m['packet'])} | {cell(m['bm25-rag'])} | {1000 * m['seconds']:.0f} |"
            )
            print(lines[-1], flush=True)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
