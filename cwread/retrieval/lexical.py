"""BM25 with bm25s, English stop words removed, Snowball-stemmed: over paragraphs, and over
sections (runs of paragraphs of about SECTION_CHARS characters) for the part of a book a
question is about.

bm25s builds and saves the index (its weights: plain .npy arrays and JSON); a question reads the
saved index as `StoredIndex`, with numpy alone. Importing bm25s pulls in scipy, about 0.35 s of
every question on 2 cores; the words are split here as bm25s splits them (`tokenize`, checked
against bm25s.tokenize in the tests), so the index and the question always agree.

A novel's answer is often a short line of dialogue whose speaker and subject are named in the
paragraphs around it, so a paragraph's *context score* counts its neighbours' matches too,
discounted by distance (see `context_scores`).
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cwread.text.words import STOPWORDS, TERM, stemmer

LEXICAL_VERSION = 3
# A paragraph's context: CONTEXT_WIDTH neighbours each side, a match d paragraphs away counting
# CONTEXT_DECAY**d. On the dev novel (48 questions) gold paragraphs in the top 32 went from 65%
# to 75% with it; the fairytale anthology's top 8, from 84% to 85%.
CONTEXT_WIDTH = 2
CONTEXT_DECAY = 0.5
# Sections overlap by half, so a passage is never split between two: each paragraph is scored
# by the best section that holds it.
SECTION_CHARS = 4000


def tokenize(texts: list[str]) -> list[list[str]]:
    """Lower-cased, stop-word-free, stemmed tokens (the same for paragraphs and queries), as
    bm25s.tokenize(texts, stopwords, stemmer, return_ids=False) gives them."""
    words = [[w for w in TERM.findall(text.lower()) if w not in STOPWORDS] for text in texts]
    unique = list(dict.fromkeys(w for doc in words for w in doc))
    stems = dict(zip(unique, stemmer().stemWords(unique), strict=True))
    return [[stems[w] for w in doc] for doc in words]


def build_index(texts: list[str], tokens: list[list[str]] | None = None):
    """A bm25s index over `texts` (one document each), or over their `tokens` if given."""
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(tokens if tokens is not None else tokenize(texts), show_progress=False)
    return retriever


def section_spans(
    lengths: list[int], file_starts: Sequence[int] = (), chars: int = SECTION_CHARS
) -> np.ndarray:
    """Sections as rows (first, end) of 0-based paragraph indexes, end exclusive: runs of about
    `chars` characters, each starting halfway through the last, none crossing into the next file
    (`file_starts`: the 1-based first id of each file of a book of several)."""
    n = len(lengths)
    bounds = sorted({0, *(f - 1 for f in file_starts if 1 < f <= n), n})
    spans: list[tuple[int, int]] = []
    for lo, hi in itertools.pairwise(bounds):
        start = lo
        while start < hi:
            end, size = start, 0
            while end < hi and (size < chars or end == start):
                size += lengths[end]
                end += 1
            spans.append((start, end))
            if end >= hi:
                break
            half, middle = 0, start
            while middle < end - 1 and half < size / 2:
                half += lengths[middle]
                middle += 1
            start = max(middle, start + 1)
    return np.asarray(spans, dtype=np.int64).reshape(-1, 2)


def build_sections(tokens: list[list[str]], spans: np.ndarray):
    """A bm25s index over sections, from the paragraphs' tokens (nothing is tokenised twice)."""
    joined = [[t for i in range(first, end) for t in tokens[i]] for first, end in spans.tolist()]
    return build_index([], joined)


def save_index(retriever, directory: Path) -> None:
    retriever.save(str(directory), show_progress=False)  # plain .npy + JSON, no pickle


class StoredIndex:
    """A saved bm25s index read back with numpy: each term's column of precomputed BM25 weights
    (compressed sparse columns), summed over a query's terms as bm25s.BM25.get_scores sums them."""

    # bm25s's variants that keep a score for documents without the term: not read here
    _NONOCCURRENCE = "nonoccurrence_array.index.npy"

    def __init__(self, directory: Path) -> None:
        params = json.loads((directory / "params.index.json").read_text(encoding="utf-8"))
        if (directory / self._NONOCCURRENCE).exists():
            raise ValueError(f"{directory}: a BM25 variant with non-occurrence scores")
        self.num_docs = int(params["num_docs"])
        self.data = np.load(directory / "data.csc.index.npy", allow_pickle=False)
        self.indices = np.load(directory / "indices.csc.index.npy", allow_pickle=False)
        self.indptr = np.load(directory / "indptr.csc.index.npy", allow_pickle=False)
        vocab = json.loads((directory / "vocab.index.json").read_text(encoding="utf-8"))
        columns = len(self.indptr) - 1
        # bm25s lists the empty word without a column of its own; no query term is empty
        self.vocab_dict: dict[str, int] = {t: i for t, i in vocab.items() if t}
        if any(not 0 <= i < columns for i in self.vocab_dict.values()) or len(self.data) != len(self.indices):
            raise ValueError(f"{directory}: the index's arrays do not match its vocabulary")
        if len(self.indices) and (self.indices.min() < 0 or self.indices.max() >= self.num_docs):
            raise ValueError(f"{directory}: the index names documents it does not have")

    def get_scores(self, terms: list[str]) -> np.ndarray:
        out = np.zeros(self.num_docs, dtype=np.float32)
        for term in terms:  # a term asked twice counts twice, as in bm25s
            column = self.vocab_dict[term]
            start, end = self.indptr[column], self.indptr[column + 1]
            np.add.at(out, self.indices[start:end], self.data[start:end])
        return out


def load_index(directory: Path) -> StoredIndex:
    return StoredIndex(directory)


def _terms(retriever: StoredIndex, query: str) -> list[str]:
    return [t for t in tokenize([query])[0] if t in retriever.vocab_dict]


def scores(retriever: StoredIndex, query: str, n_docs: int) -> np.ndarray:
    """BM25 score of every paragraph for `query` (zeros when no query term is in the index)."""
    tokens = _terms(retriever, query)
    if not tokens:
        return np.zeros(n_docs, dtype=np.float32)
    return np.asarray(retriever.get_scores(tokens), dtype=np.float32)


def context_scores(retriever: StoredIndex, query: str, n_docs: int, file_starts: Sequence[int] = ()) -> np.ndarray:
    """Each paragraph's BM25 score with its context: for every query term, the best of the
    paragraph's own score and its neighbours' (CONTEXT_WIDTH each side, within its file),
    discounted by CONTEXT_DECAY per paragraph of distance; summed over the terms. A paragraph
    that names one thing the question asks about, beside one that names the other, outscores
    either alone."""
    total = np.zeros(n_docs, dtype=np.float32)
    same_file = np.ones(n_docs, dtype=bool)  # same_file[i]: paragraphs i-1 and i share a file
    same_file[[f - 1 for f in file_starts if 1 < f <= n_docs]] = False
    reach = [same_file.copy()]  # reach[d-1][i]: paragraphs i-d and i share a file
    for d in range(2, CONTEXT_WIDTH + 1):
        reach.append(reach[-1] & np.roll(same_file, d - 1))
    for term, count in Counter(_terms(retriever, query)).items():
        own = np.asarray(retriever.get_scores([term]), dtype=np.float32)
        pooled = own.copy()
        for d in range(1, CONTEXT_WIDTH + 1):
            weight = CONTEXT_DECAY**d
            ok = reach[d - 1][d:]
            pooled[d:] = np.where(ok, np.maximum(pooled[d:], weight * own[:-d]), pooled[d:])
            pooled[:-d] = np.where(ok, np.maximum(pooled[:-d], weight * own[d:]), pooled[:-d])
        total += count * pooled
    return total


def section_scores(retriever: StoredIndex, spans: np.ndarray, query: str, n_docs: int) -> np.ndarray:
    """Each paragraph's score as the best BM25 score of a section that holds it."""
    out = np.zeros(n_docs, dtype=np.float32)
    tokens = _terms(retriever, query)
    if not tokens or len(spans) == 0:
        return out
    best = np.asarray(retriever.get_scores(tokens), dtype=np.float32)
    for (first, end), score in zip(spans.tolist(), best.tolist(), strict=True):
        if score > 0:
            np.maximum(out[first:end], score, out=out[first:end])
    return out


# A number in a question ("milestone number 5005", "in 1887") is a word the answer's paragraph
# holds as it is: its neighbours (5004, 500) share its look and its dense vector, and ranked by
# fusion alone they came first and the chapter asked for never did.
_NUMBER = re.compile(r"(?<![\w.,])\d+(?:,\d{3})*(?![\w]|[.,]\d)")


def numbers_asked(question: str) -> list[str]:
    """The numbers a question writes in digits, as words ("1,000" as "1000")."""
    return list(dict.fromkeys(m.group().replace(",", "") for m in _NUMBER.finditer(question)))


def numbers_held(texts: Sequence[str], numbers: Sequence[str]) -> list[frozenset[str]]:
    """For each text, which of `numbers` it holds as whole words (5005 is not 15005, 500 or
    5005.5; "5,005" is 5005)."""
    wanted = frozenset(numbers)
    return [frozenset(m.group().replace(",", "") for m in _NUMBER.finditer(text)) & wanted for text in texts]
