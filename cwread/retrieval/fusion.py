"""Hybrid retrieval: per query, three rankings fused by reciprocal rank: paragraphs by BM25 with
their context (`lexical.context_scores`), by the BM25 of the section around them, and by the
dense embedder, each read from the book's indexes (cwread.retrieval.index). `bm25` and `dense`
alone are the plain single rankings (baselines, ablations).
"""

from __future__ import annotations

import re

import numpy as np

from cwread.errors import InputError
from cwread.retrieval import METHODS, lexical
from cwread.retrieval.index import Index
from cwread.text.words import STOPWORDS, WORD

RRF_K = 60
# The section ranking's vote against the paragraphs' own (1.0). On the dev novel (48 questions)
# gold in the top 8 paragraphs went from 54% to 62% with it, on 30 questions written for The
# Hound of the Baskervilles from 39% to 44%; on the fairytale anthology from 85% to 89%.
SECTION_WEIGHT = 0.5


def build_queries(question: str, options: dict[str, str] | None = None) -> list[str]:
    """The question, and for multiple choice also the question joined with each option; an
    open question of two parts ("..., and later ...") also each part alone, so that each has
    its passages among the anchors (the whole question ranks by the words of both)."""
    queries = [question]
    for text in (options or {}).values():
        queries.append(f"{question} {text}")
    if not options:
        parts = question_parts(question)
        queries += parts if len(parts) > 1 else []
    return queries


_PART_BREAK = re.compile(
    r"\s*(?:;|,\s+and\s+(?:then\s+|later\s+|afterwards\s+)?|\s+and\s+(?:later|then|afterwards)\s+)", re.I
)
PART_WORDS = 2  # content words a part needs to be asked alone ("..., and why?" is no part)


def question_parts(question: str) -> list[str]:
    """The parts of a question asked in two ("Who took the letter, and why was it never sent?"),
    each with PART_WORDS content words or more; one part where it has no such break."""
    parts = [p.strip(" ,;?") for p in _PART_BREAK.split(question)]
    if len(parts) < 2 or any(
        sum(w.lower() not in STOPWORDS for w in WORD.findall(p)) < PART_WORDS for p in parts
    ):
        return [question]
    return parts


def reciprocal_rank_fusion(
    rankings: list[np.ndarray], n: int, k: int = RRF_K, weights: list[float] | None = None
) -> np.ndarray:
    """Σ w/(k + rank) over rankings; each ranking lists 0-based indexes, best first."""
    fused = np.zeros(n, dtype=np.float64)
    for i, ranking in enumerate(rankings):
        ranking = np.asarray(ranking, dtype=np.int64)
        weight = 1.0 if weights is None else weights[i]
        fused[ranking] += weight / (k + np.arange(1, len(ranking) + 1))
    return fused


def _ranking(scores: np.ndarray, positive_only: bool) -> np.ndarray:
    order = np.argsort(-scores, kind="stable")
    if positive_only:
        order = order[scores[order] > 0]
    return order


def check_method(method: str) -> str:
    """`method` if it is one of METHODS, else InputError (checked before any index is opened)."""
    if method not in METHODS:
        raise InputError(f"unknown retrieval method {method!r}; choose one of: {', '.join(METHODS)}")
    return method


def paragraph_scores(index: Index, queries: list[str], method: str = "fused", also: str = "") -> np.ndarray:
    """A fused relevance score per paragraph (index i is paragraph id i+1); `method` is one of
    METHODS (see `check_method` and the module doc); `also`: words a reader adds to the lexical
    side (the book's own words for what the question says otherwise), the dense side keeping
    the question's."""
    n = len(index.document)
    use_dense = method in ("fused", "dense") and index.dense is not None
    if method == "dense" and not use_dense:
        raise InputError("dense retrieval needs an embedder, not none")
    rankings: list[np.ndarray] = []
    weights: list[float] = []
    lexical_queries = [f"{q} {also}" for q in queries] if also.strip() else queries
    if method == "bm25":
        for q in lexical_queries:
            rankings.append(_ranking(lexical.scores(index.lexical, q, n), positive_only=True))
            weights.append(1.0)
    if method == "fused":
        file_starts = [s.first for s in index.document.sources]
        for q in lexical_queries:
            context = lexical.context_scores(index.lexical, q, n, file_starts)
            sections = lexical.section_scores(index.sections, index.section_spans, q, n)
            rankings += [_ranking(context, positive_only=True), _ranking(sections, positive_only=True)]
            weights += [1.0, SECTION_WEIGHT]
    if use_dense:
        vectors = index.embedder.encode(queries)
        weight = index.embedder.fusion_weight if method == "fused" else 1.0
        for v in vectors:
            rankings.append(_ranking(index.dense @ v, positive_only=False))
            weights.append(weight)
    return reciprocal_rank_fusion(rankings, n, weights=weights)
