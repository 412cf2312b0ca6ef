"""BM25 over paragraphs with bm25s: English stop words removed, Snowball-stemmed."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import numpy as np

LEXICAL_VERSION = 1


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def tokenize(texts: list[str]) -> list[list[str]]:
    """Lower-cased, stop-word-free, stemmed tokens (the same for paragraphs and queries)."""
    import bm25s

    return bm25s.tokenize(
        texts, stopwords="en", stemmer=_stemmer(), return_ids=False, show_progress=False
    )


def build_index(texts: list[str]):
    """A bm25s index over `texts` (one document per paragraph)."""
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(tokenize(texts), show_progress=False)
    return retriever


def save_index(retriever, directory: Path) -> None:
    retriever.save(str(directory), show_progress=False)  # plain .npy + JSON, no pickle


def load_index(directory: Path):
    import bm25s

    os.environ.setdefault("TQDM_DISABLE", "1")
    return bm25s.BM25.load(str(directory), mmap=False)


def scores(retriever, query: str, n_docs: int) -> np.ndarray:
    """BM25 score of every paragraph for `query` (zeros when no query term is in the index)."""
    tokens = [t for t in tokenize([query])[0] if t in retriever.vocab_dict]
    if not tokens:
        return np.zeros(n_docs, dtype=np.float32)
    return np.asarray(retriever.get_scores(tokens), dtype=np.float32)
