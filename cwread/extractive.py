"""How extractive answers rank the sentences of the evidence against a question.

A question word counts by how rare it is in the book (inverse document frequency over the
book's paragraphs), so "Giant" in a tale about the Giant counts for little and "wall" for
much; the sentence's dense similarity to the question is added at half weight.

Measured on FairytaleQA train (4,347 questions of 120 stories; the dev anthology is made of
val stories), best sentence of each story, token-F1: shared-word count 15.2, this ranking
17.1. SmolLM2-135M's own choice among the top five (P(Yes) that a sentence answers, or the
likelihood of the question given it) was worse than the ranking alone (10-14 on 120
questions), so the small model's quotes get no say in it.

A why-question is answered with the reason clause of the chosen sentence ("..., for he
wished to keep it to himself" -> "for he wished to keep it to himself"), the sentence staying
the quote: on 1,965 why-questions of 200 train stories, token-F1 21.9 -> 24.4.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from cwread.document import Document
from cwread.embedders import Embedder
from cwread.grounding import Rank, content_words

SIMILARITY_WEIGHT = 0.5
_WHY = re.compile(r"\bwhy\b", re.I)
_REASON = re.compile(
    r"\b(?:because|since|for|so that|in order to|that (?:he|she|it|they|we|you|i) (?:might|may|could|would))\b",
    re.I,
)
MIN_REASON_WORDS = 3  # "for him." is no reason: the whole sentence then
_IDF: dict[str, dict[str, float]] = {}  # by the document's fingerprint


def book_idf(document: Document) -> dict[str, float]:
    """Inverse document frequency of each content word over the book's paragraphs."""
    if document.fingerprint not in _IDF:
        counts: Counter[str] = Counter()
        for paragraph in document.paragraphs:
            counts.update(content_words(paragraph.text))
        n = len(document.paragraphs)
        _IDF[document.fingerprint] = {w: math.log((n + 1) / (c + 0.5)) for w, c in counts.items()}
    return _IDF[document.fingerprint]


def sentence_ranker(document: Document, embedder: Embedder | None) -> Rank:
    """Scores for sentences of `document`: the share of the question's weight (idf) their
    words carry, plus SIMILARITY_WEIGHT x cosine similarity where there is an embedder."""
    idf = book_idf(document)

    def rank(question: str, sentences: list[str]) -> list[float]:
        asked = content_words(question)
        total = sum(idf.get(w, 0.0) for w in asked) or 1.0
        scores = [sum(idf.get(w, 0.0) for w in asked & content_words(s)) / total for s in sentences]
        if embedder is None or not sentences:
            return scores
        vectors = embedder.encode([question, *sentences])
        similarity = vectors[1:] @ vectors[0]
        return [s + SIMILARITY_WEIGHT * float(c) for s, c in zip(scores, similarity, strict=True)]

    return rank


def answer_text(question: str, sentence: str) -> str:
    """What an extractive answer says: the sentence, or for a why-question the reason it
    gives, from its connective ("because", "for", "so that"...) to its end."""
    if not _WHY.search(question):
        return sentence
    found = _REASON.search(sentence)
    if found is None or len(sentence[found.start() :].split()) < MIN_REASON_WORDS:
        return sentence
    return sentence[found.start() :].rstrip()
