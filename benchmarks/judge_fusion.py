"""The judge's scores fused with the retriever's rank, at the same B_c: does the pair pack more
gold than the rank alone where the judge alone packs less?

    python benchmarks/judge_fusion.py --judge RUN/judge [--out results/judge-fusion.md]

For each record of the dev novels (Styles, and the Hound and Moonstone sets of data/): the
segments the default reads, every paragraph of them scored by the judge (not only the first
30,000 words the Finder reads, so the judge is at its best), and each segment scored two ways:
its best paragraph's score, and its best window's over the segment's text joined (a line of
dialogue then reads with the lines around it). Each order below is packed whole by
cwread.run.packing.pack_segments under the record's B_c, as the default packs:
- rank: the retriever's order (the default);
- judge: the segments by their judge score, best first;
- fused (w, k): reciprocal-rank fusion, 1/(k + rank place) + w/(k + judge place);
- rank first (f): the rank's segments while they fill f of B_c, the judge's order after.
Gold paragraphs in the packet, with the paired gain against the rank (records resampled whole).

Then the judge as a served Finder's pre-filter (#55: the LLM reads fewer segments): the share of
the gold read that stays in the segments kept when a served Finder skips the given share of
them, the rest dropped by the rank's order (the last-ranked go) or by the judge's.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_recall import paired_gain

from cwread.agents.cross_encoder import Judge
from cwread.book.load import load_document
from cwread.eval.dataset import load_records
from cwread.run.packing import pack_segments
from cwread.run.session import Session

HERE = Path(__file__).resolve().parent
SETS = {
    "styles": HERE.parent.parent / "shared" / "data" / "novelqa" / "novelqa.jsonl",
    "hound": HERE / "data" / "hound.jsonl",
    "moonstone": HERE / "data" / "moonstone.jsonl",
}
FUSED = [(0.25, 10), (0.25, 60), (0.5, 10), (0.5, 60), (1.0, 10), (1.0, 60)]
RANK_FIRST = [0.5, 0.7, 0.85]


def scored_records(judge: Judge) -> list[dict]:
    """Per record: its set, gold ids, the segments read (in rank order) and both judge scores."""
    out = []
    for name, path in SETS.items():
        sessions: dict[str, Session] = {}
        for record in load_records(str(path)):
            session = sessions.setdefault(record.doc, Session(load_document(record.doc)))
            document = session.document
            gold = record.gold_ids(document)
            if not gold:
                continue
            found = session.find(record.question)
            asked = " ".join([record.question.text, *record.question.options.values()])
            ids = list(dict.fromkeys(p for s in found.read for p in s.ids))
            by_paragraph = dict(zip(ids, judge.score(asked, [document.paragraph(p).text for p in ids]).tolist(), strict=True))
            joined = ["\n".join(document.paragraph(p).text for p in s.ids) for s in found.read]
            out.append(
                {
                    "set": name,
                    "gold": set(gold),
                    "document": document,
                    "budget": found.budget,
                    "segments": list(found.read),
                    "paragraph": [max(by_paragraph[p] for p in s.ids) for s in found.read],
                    "window": judge.score(asked, joined).tolist(),
                }
            )
            print(f"{name} {record.id}: {len(ids)} paragraphs scored", file=sys.stderr, flush=True)
    return out


def order_of(record: dict, policy: str, score: str, w: float = 0.5, k: int = 60, f: float = 0.5) -> list[int]:
    """The segments' indexes in the order `policy` packs them."""
    n = len(record["segments"])
    judged = sorted(range(n), key=lambda i: -record[score][i])
    if policy == "rank":
        return list(range(n))
    if policy == "judge":
        return judged
    if policy == "fused":
        place = {i: at for at, i in enumerate(judged)}
        return sorted(range(n), key=lambda i: -(1 / (k + i) + w / (k + place[i])))
    first, used = [], 0
    for i, segment in enumerate(record["segments"]):  # rank first, while it fills f of B_c
        size = sum(len(record["document"].paragraph(p).text) for p in segment.ids)
        if used + size > f * record["budget"].b_c:
            break
        first.append(i)
        used += size
    return first + [i for i in judged if i not in first]


def hits(record: dict, order: list[int]) -> int:
    packet = pack_segments(record["document"], [record["segments"][i] for i in order], record["budget"])
    return len(record["gold"] & set(packet.ids))


def table(records: list[dict]) -> str:
    rows = [("rank (the default)", "rank", "paragraph", {})]
    for score, said in (("paragraph", "best paragraph"), ("window", "best window")):
        rows.append((f"judge alone, {said}", "judge", score, {}))
        rows += [(f"fused w {w}, k {k}, {said}", "fused", score, {"w": w, "k": k}) for w, k in FUSED]
    rows += [(f"rank first ({f:.0%} of B_c), best paragraph", "first", "paragraph", {"f": f}) for f in RANK_FIRST]
    names = list(SETS)
    lines = [
        "| packed by | " + " | ".join(f"{n} %" for n in names) + " | novels together − rank (paired 95%) |",
        "|---|" + "---|" * len(names) + "---|",
    ]
    rank_hits = [hits(r, order_of(r, "rank", "paragraph")) for r in records]
    for label, policy, score, extra in rows:
        got = [hits(r, order_of(r, policy, score, **extra)) for r in records]
        cells = []
        for n in names:
            mine = [(h, len(r["gold"])) for h, r in zip(got, records, strict=True) if r["set"] == n]
            cells.append(f"{100 * sum(h for h, _ in mine) / sum(g for _, g in mine):.1f}")
        gain, lo, hi = paired_gain([(h, b, len(r["gold"])) for h, b, r in zip(got, rank_hits, records, strict=True)])
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {gain:+.1f} [{lo:+.1f}, {hi:+.1f}] |")
    return "\n".join(lines)


def prefilter_table(records: list[dict]) -> str:
    """Gold kept in the segments a served Finder would still read, with a share of them skipped
    by the rank's order, the judge's, or the two fused."""
    lines = [
        "| segments skipped | rank keeps % | judge (best paragraph) | judge (best window) | fused w 0.5, k 60 |",
        "|---|---|---|---|---|",
    ]
    for skipped in (0.25, 0.5, 0.75, 0.9):
        cells, rank_kept = [], []
        for label, policy, score, extra in (
            ("rank", "rank", "paragraph", {}),
            ("judge", "judge", "paragraph", {}),
            ("window", "judge", "window", {}),
            ("fused", "fused", "paragraph", {"w": 0.5, "k": 60}),
        ):
            kept = []
            for r in records:
                read_gold = r["gold"] & {p for s in r["segments"] for p in s.ids}
                order = order_of(r, policy, score, **extra)
                keep = max(1, round(len(order) * (1 - skipped)))
                still = {p for i in order[:keep] for p in r["segments"][i].ids}
                kept.append((len(read_gold & still), len(read_gold)))
            share = 100 * sum(k for k, _ in kept) / max(1, sum(g for _, g in kept))
            if label == "rank":
                rank_kept = kept
                cells.append(f"{share:.1f}")
                continue
            gain, lo, hi = paired_gain([(k, b, g) for (k, g), (b, _) in zip(kept, rank_kept, strict=True)])
            cells.append(f"{share:.1f} ({gain:+.1f} [{lo:+.1f}, {hi:+.1f}])")
        lines.append(f"| {skipped:.0%} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", required=True, help="a judge folder (what `python -m training judge` exports)")
    parser.add_argument("--out", help="write the table here too")
    options = parser.parse_args()
    random.seed(0)
    records = scored_records(Judge(Path(options.judge)))
    text = table(records) + "\n\nAs a served Finder's pre-filter (gold read that stays read):\n\n" + prefilter_table(records)
    print(text)
    if options.out:
        Path(options.out).write_text(
            f"# The judge fused with the rank (python benchmarks/judge_fusion.py --judge {options.judge})\n\n{text}\n",
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
