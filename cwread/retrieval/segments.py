"""Segments as in the paper: anchor spans around retrieved paragraphs, local windows over the rest.

Pure functions over paragraph lengths and fused scores, so they are easy to test and reuse.

- An *anchor segment* is a top-scoring paragraph with `p_r` neighbours around it (`p_r // 2`
  before, the rest after); anchor spans that overlap are merged while they fit the segment
  character cap.
- Every paragraph not in an anchor segment falls in a *window* of at most `p_w` consecutive
  paragraphs (and the same character cap), so the whole narrative is covered and recall does
  not hinge on retrieval.
- In a book of several files, no segment crosses from one file into the next.
- Segments are ranked: anchors by score, then windows by their best paragraph's score. The
  Finder reads them in that order, up to the `read` budget.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, fields, replace

from cwread.book import NOVEL_PARAGRAPHS, Tier, tier_of
from cwread.errors import InputError

SEGMENT_CHAR_CAP = 6000


@dataclass(frozen=True)
class Budget:
    """Retrieval and packing budgets: the paper's N_E, P_r, P_w, B_c plus how much retrieval
    feeds the Finder.

    anchors: paragraphs taken as retrieval anchors; read: segments the Finder judges at most;
    n_e: evidence segments packed at most, of those a Finder kept (with no Finder to filter,
    B_c alone bounds the packet); b_c: characters packed at most. `preset` names the values:
    a fixed preset, or for "auto" the tier `fit_budget` chose for the book ("story", "novel");
    `why` says how they were chosen, `fixed` which ones the user set. How the Finder reads and
    replies is its own record (cwread.settings.FinderSettings).
    """

    preset: str
    anchors: int
    read: int
    n_e: int
    p_r: int
    p_w: int
    b_c: int
    why: str = ""
    fixed: tuple[str, ...] = ()


# the values a preset sets and a user may override, as Budget declares them
BUDGET_VALUES = tuple(f.name for f in fields(Budget) if f.name not in ("preset", "why", "fixed"))

PRESETS: dict[str, Budget] = {
    "focused": Budget("focused", anchors=8, read=24, n_e=5, p_r=2, p_w=5, b_c=13000),
    "broad": Budget("broad", anchors=16, read=48, n_e=10, p_r=4, p_w=6, b_c=15000),
}
AUTO = "auto"  # budgets that follow the book and the Interpreter's context: fit_budget
DEFAULT_PRESET = AUTO
PRESET_CHOICES = (AUTO, *PRESETS)

# a novel's values (the paper's NoCha setting has N_E 10, P_w 8, B_c 16,000); anchors and reading grow
# with it (fit_budget)
NOVEL = {"n_e": 10, "p_r": 3, "p_w": 8, "b_c": 16000}
# The evidence may take this share of the Interpreter's context, at about this many
# characters a token (the packet is also cut to fit exactly, paragraph by paragraph).
EVIDENCE_SHARE = 0.6
CHARS_PER_TOKEN = 3.5


def make_budget(
    preset: str = DEFAULT_PRESET,
    *,
    anchors: int | None = None,
    read: int | None = None,
    n_e: int | None = None,
    p_r: int | None = None,
    p_w: int | None = None,
    b_c: int | None = None,
) -> Budget:
    """A preset with single values overridden (None leaves the preset's value). "auto" holds
    the focused values until `fit_budget` fits it to a book; the overrides stay as given."""
    if preset not in PRESET_CHOICES:
        raise InputError(f"unknown preset {preset!r}; choose one of: {', '.join(PRESET_CHOICES)}")
    budget = replace(PRESETS["focused"], preset=AUTO) if preset == AUTO else PRESETS[preset]
    given = locals()
    changes = {k: given[k] for k in BUDGET_VALUES if given[k] is not None}
    for key, value in changes.items():
        minimum = 0 if key == "p_r" else 1
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise InputError(f"budget {key} must be an integer ≥ {minimum}, not {value!r}")
    return replace(budget, **changes, fixed=tuple(changes))


def fit_budget(budget: Budget, lengths: Sequence[int], context_tokens: int | None = None) -> Budget:
    """An "auto" budget fitted to a book of paragraphs of `lengths` characters and to an
    Interpreter of `context_tokens` (None: not known yet), with `why` saying how; values the
    user set stay. Any other budget is returned as it is.

    A story (up to NOVEL_PARAGRAPHS paragraphs) gets the focused values. A novel gets NOVEL,
    anchors growing with the square root of its length (8 for 400 paragraphs, 20 for 2,500,
    40 at most) and as many segments read as one for every 20 paragraphs (24 to 160: a Finder
    that runs reads them in rank order within its token budget). B_c is cut to EVIDENCE_SHARE
    of the Interpreter's context."""
    set_by_you = f"; set by you: {', '.join(budget.fixed)}" if budget.fixed else ""
    if budget.preset != AUTO:
        return budget if budget.why else replace(budget, why=f"the {budget.preset} preset{set_by_you}")
    n = len(lengths)
    focused = PRESETS["focused"]
    values = {k: getattr(focused, k) for k in BUDGET_VALUES}
    tier = tier_of(n)
    if tier == Tier.NOVEL:
        values.update(NOVEL)
        values["anchors"] = min(40, max(8, round(8 * math.sqrt(n / 400))))
        values["read"] = min(160, max(24, round(n / 20)))
        why = f"a novel of {n:,} paragraphs (over {NOVEL_PARAGRAPHS:,}): anchors and reading grow with it"
    else:
        why = f"a text of {n:,} paragraphs (up to {NOVEL_PARAGRAPHS:,}): the focused values"
    if context_tokens:
        room = int(context_tokens * EVIDENCE_SHARE * CHARS_PER_TOKEN) // 100 * 100
        if room < values["b_c"]:
            values["b_c"] = room
            why += f"; B_c cut to {room:,} characters for the Interpreter's {context_tokens:,}-token context"
    values.update({k: getattr(budget, k) for k in budget.fixed})
    why += set_by_you
    return replace(budget, preset=str(tier), why=why, **values)


@dataclass(frozen=True)
class Segment:
    """Paragraphs start..end (inclusive, 1-based ids) judged together by the Finder."""

    start: int
    end: int
    origin: str  # "anchor" (around a retrieval anchor) or "window" (a local window)
    score: float
    anchors: tuple[int, ...] = ()

    @property
    def ids(self) -> range:
        return range(self.start, self.end + 1)

    def __contains__(self, pid: int) -> bool:
        return self.start <= pid <= self.end


def build_segments(
    lengths: list[int],
    scores: list[float],
    budget: Budget,
    file_starts: Sequence[int] = (),
    left_out: Collection[int] = (),
) -> list[Segment]:
    """Ranked segments covering every paragraph of the story once. `lengths[i]`/`scores[i]`
    are for id i+1; `file_starts`: the first id of each file of a book of several
    (ascending), where segments end: none crosses from one file into the next; the ids
    `left_out` are in no segment (what is not the story: each file's Project Gutenberg header
    and licence, a table of contents, a caption; Document.unread)."""
    n = len(lengths)
    left_out = frozenset(left_out)
    # a paragraph left out bounds the segments beside it, as a file's end does
    bounds = (*left_out, *(pid + 1 for pid in left_out))
    starts = sorted({1, *(f for f in file_starts if f > 1), *(b for b in bounds if 1 < b <= n)})

    def file_of(pid: int) -> tuple[int, int]:
        at = bisect.bisect_right(starts, pid) - 1
        return starts[at], (starts[at + 1] - 1 if at + 1 < len(starts) else n)

    if n == 0:
        return []
    if len(scores) != n:
        raise ValueError("lengths and scores differ in length")
    inside = [i for i in range(n) if i + 1 not in left_out]
    order = sorted(inside, key=lambda i: (-scores[i], i))
    anchor_ids = sorted(i + 1 for i in order[: min(budget.anchors, len(inside))])

    spans: list[Segment] = []
    for a in anchor_ids:
        start, end = _anchor_span(a, file_of(a), lengths, budget.p_r)
        span = Segment(start, end, "anchor", scores[a - 1], (a,))
        prev = spans[-1] if spans else None
        if prev is None or start > prev.end:
            spans.append(span)
            continue
        merged_end = max(end, prev.end)
        if _chars(lengths, prev.start, merged_end) > SEGMENT_CHAR_CAP:
            merged_end = prev.end  # too long to grow: keep prev, the rest starts after it
        spans[-1] = Segment(
            prev.start,
            merged_end,
            "anchor",
            max(prev.score, span.score),
            prev.anchors + ((a,) if a <= merged_end else ()),
        )
        if a > merged_end:
            spans.append(Segment(merged_end + 1, end, "anchor", span.score, (a,)))

    covered = [pid == 0 or pid in left_out for pid in range(n + 1)]  # in no segment
    for s in spans:
        for pid in s.ids:
            covered[pid] = True
    windows: list[Segment] = []
    pid = 1
    while pid <= n:
        if covered[pid]:
            pid += 1
            continue
        start = pid
        chars = lengths[pid - 1]
        last = file_of(start)[1]
        while (
            pid + 1 <= last
            and not covered[pid + 1]
            and pid + 1 - start < budget.p_w
            and chars + lengths[pid] <= SEGMENT_CHAR_CAP
        ):
            pid += 1
            chars += lengths[pid - 1]
        windows.append(Segment(start, pid, "window", max(scores[start - 1 : pid])))
        pid += 1

    spans.sort(key=lambda s: (-s.score, s.start))
    windows.sort(key=lambda s: (-s.score, s.start))
    return spans + windows


def _anchor_span(a: int, file: tuple[int, int], lengths: list[int], p_r: int) -> tuple[int, int]:
    start = max(file[0], a - p_r // 2)
    end = min(file[1], a + (p_r - p_r // 2))
    # too long for one Finder call: drop the neighbour farthest from the anchor
    while _chars(lengths, start, end) > SEGMENT_CHAR_CAP and start < end:
        if a - start >= end - a:
            start += 1
        else:
            end -= 1
    return start, end


def _chars(lengths: list[int], start: int, end: int) -> int:
    return sum(lengths[start - 1 : end])
