"""The judge's packet beside the rank's, paired, from `cwread eval -m retrieval -m judge --out ROWS`.

    python benchmarks/judge_recall.py NAME=ROWS.jsonl [NAME=ROWS.jsonl ...]

For each set: gold paragraphs in the segments read and in the packet, by the rank (no Finder:
`retrieval`) and by the judge (`judge`), each with its 95% interval (records resampled whole),
and the judge's gain in packet recall with a paired 95% interval (the same records' difference
resampled); then all the sets named together. The same B_c bounds both packets.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from cwread.eval.metrics import ratio_interval
from cwread.eval.run import read_rows


def paired_gain(pairs: list[tuple[int, int, int]], rounds: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """(gain, low, high) in points of recall: Σ(judge − rank hits)/Σgold over (judge hits, rank
    hits, gold) per record, records resampled whole."""
    rng = random.Random(seed)
    total = sum(g for _, _, g in pairs)
    gain = sum(j - r for j, r, _ in pairs) / total
    draws = []
    for _ in range(rounds):
        drawn = [pairs[rng.randrange(len(pairs))] for _ in pairs]
        gold = sum(g for _, _, g in drawn)
        draws.append(sum(j - r for j, r, _ in drawn) / gold if gold else 0.0)
    draws.sort()
    return 100 * gain, 100 * draws[int(0.025 * rounds)], 100 * draws[int(0.975 * rounds) - 1]


def _pct(hits: list[tuple[int, int]]) -> str:
    """Σhits/Σgold in %, with its 95% interval (records resampled whole)."""
    gold = sum(g for _, g in hits)
    lo, hi = ratio_interval(hits)
    return f"{100 * sum(h for h, _ in hits) / gold:.1f} [{100 * lo:.0f}–{100 * hi:.0f}]"


def _paired(rows: list[dict]) -> tuple[list[tuple[int, int, int]], list[tuple[int, int]], str]:
    """(judge hits, rank hits, gold) and (read hits, gold) per record with both methods, and
    the mean packet sizes, rank / judge."""
    by = {(r["id"], r["method"]): r for r in rows if r.get("evidence_gold")}
    ids = sorted({i for i, m in by if m == "judge" and (i, "retrieval") in by})
    pairs = [(by[i, "judge"]["evidence_packet_hits"], by[i, "retrieval"]["evidence_packet_hits"], by[i, "judge"]["evidence_gold"]) for i in ids]
    read = [(by[i, "judge"]["evidence_read_hits"], by[i, "judge"]["evidence_gold"]) for i in ids]
    size = {m: sum(by[i, m]["packet_paragraphs"] for i in ids) / max(1, len(ids)) for m in ("retrieval", "judge")}
    return pairs, read, f"{size['retrieval']:.0f} / {size['judge']:.0f}"


def table(sets: dict[str, list[dict]]) -> str:
    lines = [
        "| set | records / gold | read % | rank packet % | judge packet % | judge − rank (paired 95%) | packet ¶ rank / judge |",
        "|---|---|---|---|---|---|---|",
    ]
    every: list[tuple[int, int, int]] = []
    for name, rows in [*sets.items(), ("together", None)]:
        if rows is None:
            pairs, read_text, sizes = every, "–", ""
        else:
            pairs, read, sizes = _paired(rows)
            read_text = _pct(read)
            every += pairs
        gain, lo, hi = paired_gain(pairs)
        lines.append(
            f"| {name} | {len(pairs)} / {sum(g for _, _, g in pairs)} | {read_text} | {_pct([(r, g) for _, r, g in pairs])} | "
            f"{_pct([(j, g) for j, _, g in pairs])} | {gain:+.1f} [{lo:+.1f}, {hi:+.1f}] | {sizes} |"
        )
    return "\n".join(lines)


def main() -> None:
    sets = {}
    for arg in sys.argv[1:]:
        name, _, path = arg.partition("=")
        sets[name] = read_rows(Path(path))
    if not sets:
        raise SystemExit(__doc__)
    print(table(sets))


if __name__ == "__main__":
    main()
