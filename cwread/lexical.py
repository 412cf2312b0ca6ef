"""BM25 over paragraphs with bm25s: English stop words removed, Snowball-stemmed."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import numpy as np

LEXICAL_VERSION = 2

# bm25s's English list has 33 words and keeps pronouns and question words ("she", "did",
# "what"), which in a question match half a novel. This is a fuller function-word list.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "ought",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "shall",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "upon",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "us",
        "also",
        "may",
        "might",
        "must",
        "let",
        "said",
        "says",
        "say",
        "tell",
        "told",
    ]
)


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def tokenize(texts: list[str]) -> list[list[str]]:
    """Lower-cased, stop-word-free, stemmed tokens (the same for paragraphs and queries)."""
    import bm25s

    return bm25s.tokenize(
        texts, stopwords=sorted(STOPWORDS), stemmer=_stemmer(), return_ids=False, show_progress=False
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
