"""The evidence packet: kept segments → paragraphs in narrative order, under budgets.

Pure functions. Priority: segments in the Finder's reading order (best retrieval rank first),
at most N_E of them; within that, first each segment's core (the paragraphs its Finder
reason cited, with their neighbours, or the whole segment when nothing was cited), then the
rest of each segment, while the B_c character budget lasts. A final check against the
Interpreter's context drops the lowest-priority paragraphs until the prompt fits.

Baselines pack without a Finder: `pack_segments` (segments whole), `pack_ranked` (a
retriever's top paragraphs) and `packet_of` (exactly the paragraphs given).
"""

from __future__ import annotations

from collections.abc import Callable

from cwread.book import Document, Evidence, ShownParagraph
from cwread.records.stages import Packet, PacketItem, Verdict
from cwread.retrieval.segments import Budget, Segment


def pack(
    document: Document,
    verdicts: list[Verdict],
    budget: Budget,
    fits: Callable[[Evidence], bool] | None = None,
    limit_segments: bool = True,
) -> Packet:
    """Build the packet from Finder verdicts given in reading order (see module doc); with
    `limit_segments` False (no Finder chose them) N_E does not apply, B_c alone bounds it."""
    most = budget.n_e if limit_segments else None
    kept = [v for v in verdicts if v.kept][:most]
    fallback = not kept
    if fallback:
        kept = verdicts[:most]
    return _pack_kept(document, kept, fallback, budget, fits)


def pack_segments(
    document: Document,
    segments: list[Segment],
    budget: Budget,
    fits: Callable[[Evidence], bool] | None = None,
) -> Packet:
    """Pack `segments` as if each were kept with nothing cited (no Finder ran): all of them,
    in the order given, under B_c and the context check."""
    kept = [Verdict(segment, "YES") for segment in segments]
    return _pack_kept(document, kept, False, budget, fits)


def _pack_kept(
    document: Document,
    kept: list[Verdict],
    fallback: bool,
    budget: Budget,
    fits: Callable[[Evidence], bool] | None,
) -> Packet:
    cores: list[int] = []
    rest: list[int] = []
    reason_of: dict[int, str] = {}
    for v in kept:
        seg_ids = list(v.segment.ids)
        if v.reply.cited:
            core = []
            for pid in v.reply.cited:
                first, last = document.file_span(pid)  # a neighbour in another file is not context
                core += [q for q in (pid - 1, pid, pid + 1) if first <= q <= last]
        else:
            core = seg_ids
        cores += core
        rest += seg_ids
        for pid in core + seg_ids:
            reason_of.setdefault(pid, v.reply.reason)

    chosen: list[int] = []
    truncated: set[int] = set()
    used = 0
    for pid in cores + rest:
        if pid in chosen:
            continue
        length = len(document.paragraph(pid).text)
        if used + length <= budget.b_c:
            chosen.append(pid)
            used += length
        elif not chosen:  # a single paragraph longer than the whole budget: keep its start
            chosen.append(pid)
            truncated.add(pid)
            used = budget.b_c

    def items_for(ids: list[int]) -> list[PacketItem]:
        out = []
        for pid in sorted(ids):
            text = document.paragraph(pid).text
            if pid in truncated:
                text = text[: budget.b_c]
            out.append(PacketItem(pid, text, reason_of.get(pid, ""), pid in truncated, _label(document, pid)))
        return out

    chosen = _fitting(chosen, lambda ids: [ShownParagraph(i.id, i.text, i.label) for i in items_for(ids)], fits)
    considered = sorted(set(cores + rest))
    return Packet(
        items=tuple(items_for(chosen)),
        fallback=fallback,
        segments=tuple((v.segment.start, v.segment.end) for v in kept),
        left_out=tuple(pid for pid in considered if pid not in chosen),
    )


def pack_ranked(
    document: Document,
    ranked: list[int],
    budget: Budget,
    fits: Callable[[Evidence], bool] | None = None,
    most: int | None = None,
) -> Packet:
    """Paragraphs in priority order (a retriever's ranking), each taken whole while B_c lasts
    (one that would overspend it is passed over), at most `most`, then the lowest-priority
    ones dropped until `fits`; in story order, with no Finder reasons."""
    chosen: list[int] = []
    used = 0
    for pid in ranked:
        length = len(document.paragraph(pid).text)
        if used + length > budget.b_c:
            continue
        chosen.append(pid)
        used += length
        if most is not None and len(chosen) >= most:
            break
    return packet_of(document, _fitting(chosen, document.shown, fits))


def packet_of(document: Document, ids: list[int]) -> Packet:
    """A packet of exactly these paragraphs, in story order, with no Finder reasons."""
    return Packet(
        items=tuple(
            PacketItem(pid, document.paragraph(pid).text, "", label=_label(document, pid)) for pid in sorted(ids)
        )
    )


def _label(document: Document, pid: int) -> str:
    return document.label(pid) if document.sources else ""


def _fitting(
    chosen: list[int], evidence_of: Callable[[list[int]], Evidence], fits: Callable[[Evidence], bool] | None
) -> list[int]:
    """`chosen` (in priority order) less its lowest-priority paragraphs until `fits` its evidence."""
    chosen = list(chosen)
    if fits is not None:
        while chosen and not fits(evidence_of(chosen)):
            chosen.pop()
    return chosen
