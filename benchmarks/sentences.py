"""Sentences as a reader sees them: cwread's segmenter against a hand-made gold, and its speed.

`data/sentences.jsonl`: 201 passages of the three dev novels (196 as they stand, 5 marked
`synthetic` where "…" stands in for "..."), chosen to over-represent the hard cases (titles,
initials, "!" or "?" inside dialogue, closing quotes, dashes, ellipses), each split into
sentences by hand. A boundary is where a sentence other than the first starts, counted in
non-whitespace characters; a passage is exact when its boundaries are the gold's. Scores are
over the natural passages. Speed: every paragraph of the three novels, once.

    python benchmarks/sentences.py
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from cwread.book import load_document
from cwread.text import sentences as text_sentences

HERE = Path(__file__).resolve().parent
NOVELS = HERE.parent.parent / "shared" / "data" / "novels"
# the splitter cwread had before Punkt: a mark, closing quotes or brackets, then space
OLD_END = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+")


def old_sentences(text: str) -> list[tuple[int, int]]:
    spans, pos = [], 0
    for m in OLD_END.finditer(text):
        spans.append((pos, m.start()))
        pos = m.end()
    return [(s, e) for s, e in [*spans, (pos, len(text))] if text[s:e].strip()]


def boundaries(text: str, spans: list[tuple[int, int]]) -> set[int]:
    count = [0]
    for ch in text:
        count.append(count[-1] + (not ch.isspace()))
    return {count[s] for s, _ in spans[1:]} - {0, count[-1]}


def gold_boundaries(sentences: list[str]) -> set[int]:
    out, n = set(), 0
    for sentence in sentences[:-1]:
        n += len("".join(sentence.split()))
        out.add(n)
    return out


def main() -> None:
    rows = [
        json.loads(line)
        for line in (HERE / "data" / "sentences.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    rows = [r for r in rows if not r.get("synthetic")]
    paragraphs = [
        p.text for path in sorted(NOVELS.glob("*.txt")) for p in load_document(str(path)).paragraphs
    ]
    megabytes = sum(len(t.encode()) for t in paragraphs) / 1e6
    print(f"{len(rows)} passages; speed over {len(paragraphs):,} paragraphs ({megabytes:.1f} MB)")
    print(f"{'segmenter':28s} {'exact %':>8s} {'P':>6s} {'R':>6s} {'F1':>6s} {'MB/s':>6s}")
    for name, split in (("regex (before)", old_sentences), ("Punkt + 2 rules (now)", text_sentences.sentences)):
        tp = fp = fn = exact = 0
        for r in rows:
            got, want = boundaries(r["text"], split(r["text"])), gold_boundaries(r["sentences"])
            tp, fp, fn, exact = (
                tp + len(got & want),
                fp + len(got - want),
                fn + len(want - got),
                exact + (got == want),
            )
        p, rec = tp / (tp + fp), tp / (tp + fn)
        started = time.perf_counter()
        for text in paragraphs:
            split(text)
        speed = megabytes / (time.perf_counter() - started)
        print(
            f"{name:28s} {100 * exact / len(rows):8.1f} {p:6.3f} {rec:6.3f} {2 * p * rec / (p + rec):6.3f} {speed:6.1f}"
        )


if __name__ == "__main__":
    main()
