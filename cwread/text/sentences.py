"""Sentences as a reader sees them (Punkt's, mended for dialogue), and the spans a quote may
be: sentences, or clauses of very long ones."""

from __future__ import annotations

import re
from functools import lru_cache

from cwread.text.words import ABBREVIATED

MAX_QUOTE_CHARS = 240  # longer sentences are offered as clauses, so a quote stays short
_CLAUSE_END = re.compile(r"(?<=[,;:])\s+")


@lru_cache(maxsize=1)
def _punkt():
    import punkt

    return punkt.PunktSentenceTokenizer(punkt.load_model("english"))


# Punkt's two misses in dialogue-heavy novels, mended after it: a title it ends a sentence at
# ("asked Dr. | Mortimer"), and "!" or "?" before a lower-case continuation ("“Nay!” |
# answered the child"): measured on passages of the dev novels (benchmarks/README.md, "Figures the code rests on").
_TITLE_END = re.compile(rf"\b(?:{'|'.join(ABBREVIATED)})\.[\"'\u201d\u2019]?$")
_OPENS_LOWER = re.compile(r"[\"'\u201c\u2018(\[_\u2014-]*[a-z]")


@lru_cache(maxsize=16384)  # a session asks of the same paragraphs again (2.7 MB/s on 2 cores)
def sentences(text: str) -> tuple[tuple[int, int], ...]:
    """(start, end) of each sentence of `text` as a reader sees them: Punkt's, a closing quote
    mark kept with the sentence it closes, joined where Punkt ends one at a title or before a
    lower-case continuation."""
    out: list[tuple[int, int]] = []
    for start, end in _punkt().span_tokenize(text):
        if out and (_OPENS_LOWER.match(text, start) or _TITLE_END.search(text, out[-1][0], out[-1][1])):
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return tuple(out)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text` (see `sentences`), clauses for sentences over
    MAX_QUOTE_CHARS."""
    spans: list[tuple[int, int]] = []
    for start, end in sentences(text):
        if end - start <= MAX_QUOTE_CHARS:
            spans.append((start, end))
            continue
        for c_start, c_end in _split(text, start, end, _CLAUSE_END):
            while c_end - c_start > MAX_QUOTE_CHARS:  # no clause break: cut at a space
                cut = text.rfind(" ", c_start, c_start + MAX_QUOTE_CHARS)
                cut = cut if cut > c_start else c_start + MAX_QUOTE_CHARS
                spans.append((c_start, cut))
                c_start = cut + 1 if text[cut : cut + 1] == " " else cut
            if c_end > c_start:
                spans.append((c_start, c_end))
    return spans


def _split(text: str, start: int, end: int, boundary: re.Pattern) -> list[tuple[int, int]]:
    spans = []
    pos = start
    for m in boundary.finditer(text, start, end):
        if m.start() > pos:
            spans.append((pos, m.start()))
        pos = m.end()
    if end > pos and text[pos:end].strip():
        spans.append((pos, end))
    return [(s, e) for s, e in spans if text[s:e].strip()]
