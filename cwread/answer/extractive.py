"""How extractive answers rank the sentences of the evidence against a question.

A question word counts by how rare it is in the book (inverse document frequency over the
book's paragraphs), so "Giant" in a tale about the Giant counts for little and "wall" for
much; the sentence's dense similarity to the question is added at half weight.

`python benchmarks/extractive_train.py` measures it on FairytaleQA train (4,343 questions of
120 stories; the dev anthology is made of val stories), the best sentence of each story,
token-F1: shared content words 15.9 [15.3-16.4], this ranking 17.8 [17.2-18.3].
SmolLM2-135M's own choice among the top five (P(Yes) that a sentence answers, or the
likelihood of the question given it) was worse than the ranking alone (10-14 against 18 on
120 questions), so an extractive answer asks no model.

A why-question is answered with the reason clause of the chosen sentence ("..., for he
wished to keep it to himself" -> "for he wished to keep it to himself"), the sentence staying
the quote; a chosen sentence that opens with a consequence ("So he built a wall") comes with
the sentence before it, where the cause stands. On the same 1,199 why-questions: 22.2 ->
25.1 (all questions 17.8 -> 18.5). The consequence rule alone barely moved token-F1 (24.5
alone, 23.9 with the sentence before, 121 such questions of 200 stories), but it answers
the why.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Collection
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from cwread.answer import span_scorer
from cwread.book import NOVEL_PARAGRAPHS, Document, Evidence, Tier, grounding
from cwread.book.grounding import Rank, content_words, rank_scores, ranked_sentences, weight_shares
from cwread.cache import cache_root, read_entry, remove_entry, write_entry
from cwread.errors import CacheError
from cwread.records.plan import Extract
from cwread.records.stages import Quote
from cwread.retrieval.embedders import Embedder
from cwread.text.sentences import sentence_spans
from cwread.text.words import STOPWORDS, WORD, word_stems

SIMILARITY_WEIGHT = 0.5
_WHY = re.compile(r"\bwhy\b", re.I)
MIN_REASON_WORDS = 3  # "for him." is no reason: the whole sentence then
_CONSEQUENCE = re.compile(
    r"\W*(?:so|and so|therefore|thus|hence|that is why|this is why|for this reason)\b", re.I
)
def book_idf(document: Document) -> dict[str, float]:
    """Inverse document frequency of each content word over the book's paragraphs (each
    file's counts cached by its content: counting a 50 MB book's words took 3 s)."""
    parts = (
        [(s.fingerprint, document.paragraphs[s.first - 1 : s.last]) for s in document.sources]
        if document.sources
        else [(document.fingerprint, document.paragraphs)]
    )
    counts: Counter[str] = Counter()
    for fingerprint, paragraphs in parts:
        counts.update(_word_counts(fingerprint, paragraphs))
    n = len(document.paragraphs)
    return {w: math.log((n + 1) / (c + 0.5)) for w, c in counts.items()}


def absent_words(document: Document, text: str, upto: int | None = None) -> list[str]:
    """The content words of `text` (a question) that no paragraph of the book holds (up to the
    reader's limit `upto`), in order, each once ("automobile" where the book says "motor"): a
    reader knows to say it otherwise."""
    asked = list(dict.fromkeys(
        w for w in map(str.lower, WORD.findall(text)) if w not in STOPWORDS and len(w) >= 3 and not w.isdigit()
    ))  # fmt: skip
    stems = dict(zip(asked, word_stems(asked), strict=True))
    if upto is None:
        held: Collection[str] = book_idf(document)
    else:  # nothing past the limit is read: a word held only there is absent
        wanted, held = set(stems.values()), set()
        for paragraph in document.paragraphs[:upto]:  # until every word asked is met (0.1 s a novel)
            held |= content_words(paragraph.text) & wanted
            if held == wanted:
                break
    return [word for word in asked if stems[word] not in held]


WORDS_VERSION = 1  # of content_words: its counts are cached under it


def _word_counts(fingerprint: str, paragraphs) -> dict[str, int]:
    """Paragraphs holding each content word, from the cache entry of these paragraphs or
    counted (and cached)."""
    entry = cache_root() / "docs" / fingerprint[:2] / fingerprint / f"words-v{WORDS_VERSION}"
    meta = read_entry(entry, lambda m: m.get("paragraphs") == len(paragraphs))
    if meta is not None:
        try:
            counts = json.loads((entry / "counts.json").read_text(encoding="utf-8"))
            if isinstance(counts, dict) and all(isinstance(v, int) for v in counts.values()):
                return counts
        except (OSError, ValueError):
            pass
        remove_entry(entry)
    counted: Counter[str] = Counter()
    for paragraph in paragraphs:
        counted.update(content_words(paragraph.text))

    def build(tmp: Path) -> dict:
        (tmp / "counts.json").write_text(json.dumps(counted, ensure_ascii=False), encoding="utf-8")
        return {"paragraphs": len(paragraphs)}

    with suppress(CacheError):  # a cache that cannot be written costs the next question the count, no more
        write_entry(entry, build)
    return dict(counted)


@dataclass(frozen=True, eq=False)
class SentenceRanker:
    """Scores for sentences of a book (a grounding.Rank): the share of the question's weight
    (the book's idf, `weights`) their words carry, plus SIMILARITY_WEIGHT x cosine similarity
    where there is an embedder."""

    weights: dict[str, float]
    embedder: Embedder | None

    def __call__(self, question: str, sentences: list[str]) -> list[float]:
        scores = weight_shares(question, sentences, self.weights)
        if self.embedder is None or not sentences:
            return scores
        vectors = self.embedder.encode([question, *sentences])
        similarity = vectors[1:] @ vectors[0]
        return [s + SIMILARITY_WEIGHT * float(c) for s, c in zip(scores, similarity, strict=True)]


def sentence_ranker(document: Document, embedder: Embedder | None) -> SentenceRanker:
    """The ranker of `document`'s sentences. The book's word rarities are counted here, once:
    a reading session keeps the ranker."""
    return SentenceRanker(book_idf(document), embedder)


def asks_why(question: str) -> bool:
    """Whether `question` asks why: its answer is the reason rule's (see `extract_answer`)."""
    return _WHY.search(question) is not None


def whole_sentence_why(tier: Tier | None) -> str | None:
    """Why an extractive answer in a book of `tier` is its best sentence whole rather than the
    span reader's words, or None where the reader cuts it: in a novel the reader, fit on short
    tales, lost to the sentence on the dev novels (benchmarks/README.md, "Figures the code
    rests on")."""
    if tier == Tier.NOVEL:
        return f"in a novel (over {NOVEL_PARAGRAPHS:,} paragraphs) an extractive answer is its best sentence whole"
    if span_scorer.shipped_model() is None:
        return "no span reader weights are installed: an extractive answer is its best sentence whole"
    return None


def extract_kind(tier: Tier | None) -> Extract:
    """How an extractive answer is cut in a book of `tier` (see `whole_sentence_why`)."""
    return Extract.SPAN if whole_sentence_why(tier) is None else Extract.SENTENCE


def best_answer(
    question: str, evidence: Evidence, rank: Rank | None, min_shared: int = 1, spans: bool = True
) -> tuple[str, Quote] | None:
    """The extractive answer from `evidence` and the sentence it is quoted from: with `spans`,
    the span reader's choice among the spans of the sentences `rank` scores best, of those
    sharing `min_shared` question words (see cwread.answer.span_scorer); for a why-question, without
    `spans` or without the reader's weights, the best sentence as `extract_answer` says it.
    None if no sentence shares enough. A question, or a sentence that only restates the
    question, is never the answer (could_answer)."""
    ranked = _answer_sentences(question, evidence, rank, min_shared)
    if not ranked:
        return None
    # A why-question keeps its reason rule: the reader's spans scored about the same on held-out
    # train (25.2 against 24.3) but were often no cause at all ("and put up a notice-board").
    model = span_scorer.shipped_model() if spans and not asks_why(question) else None
    if model is None:
        best = ranked[0][0]
        return extract_answer(question, best, {p[0]: p[1] for p in evidence}[best.id])
    index, start, end = span_scorer.best_span(question, [(q.text, s) for q, s in ranked], model)
    quote = ranked[index][0]
    return quote.text[start:end], quote


def candidate_paragraphs(question: str, evidence: Evidence, rank: Rank | None, most: int) -> list[int]:
    """The paragraphs an extractive answer could come from, best first, `most` at most: those
    holding a sentence that could answer (could_answer) and shares a word of the question, ranked as wholes by `rank` (by the
    question's words they hold, without one). Ranked as wholes, not by their best sentence: a
    novel's answer paragraph seldom repeats the question in one sentence (benchmarks/README.md, "Figures the code rests on")."""
    asked = content_words(question)
    answerable = [
        (pid, text)
        for pid, text, *_ in evidence
        if asked & content_words(text)  # else none of its sentences shares one: not split into them
        and any(_answerable(question, asked, text[start:end]) for start, end in sentence_spans(text))
    ]
    if not answerable:
        return []
    scores = rank_scores(question, [text for _, text in answerable], rank)
    order = sorted(range(len(answerable)), key=lambda i: (-scores[i], i))
    return [answerable[i][0] for i in order[:most]]


def judged_window(question: str, text: str, rank: Rank | None, most: int) -> tuple[int, int]:
    """The part of a candidate paragraph the Finder reads when it judges it, as character
    offsets: the whole paragraph up to `most` characters, else the run of whole sentences
    around the one `rank` puts first (by the question's words without one), widened a
    sentence at a time on either side while it stays within `most`. A sentence longer than
    `most` is read whole."""
    if len(text) <= most:
        return 0, len(text)
    bounds = sentence_spans(text) or [(0, len(text))]
    scores = rank_scores(question, [text[start:end] for start, end in bounds], rank)
    first = last = max(range(len(bounds)), key=lambda i: (scores[i], -i))
    widened = True
    while widened:
        widened = False
        if first > 0 and bounds[last][1] - bounds[first - 1][0] <= most:
            first, widened = first - 1, True
        if last + 1 < len(bounds) and bounds[last + 1][1] - bounds[first][0] <= most:
            last, widened = last + 1, True
    return bounds[first][0], bounds[last][1]


def _answerable(question: str, asked: set[str], sentence: str) -> bool:
    """Whether an answer can be drawn from `sentence` once the Finder vouched for its paragraph:
    it could answer, and shares one of the question's words (`asked`), as best_answer then
    asks. A paragraph without such a sentence ("Ha! Where is Barrymore?") is no candidate: the
    Finder could choose it and no answer would come of it."""
    return could_answer(question, sentence) and bool(asked & content_words(sentence))


def _answer_sentences(question: str, evidence: Evidence, rank: Rank | None, min_shared: int) -> list[tuple[Quote, float]]:
    """The sentences an extractive answer is read from: the best-ranked of those that could
    answer the question, span_scorer.MAX_SENTENCES at most."""
    return ranked_sentences(
        question, evidence, span_scorer.MAX_SENTENCES, min_shared, rank, keep=lambda s: could_answer(question, s)
    )


def could_answer(question: str, sentence: str) -> bool:
    """grounding.could_answer, and for a why-question a consequence that restates it ("So he
    built a wall"): its cause stands in the sentence before (extract_answer)."""
    return grounding.could_answer(question, sentence) or bool(asks_why(question) and _CONSEQUENCE.match(sentence))


def extract_answer(question: str, best: Quote, paragraph: str) -> tuple[str, Quote]:
    """What an extractive answer says, and the quote it rests on, for the sentence `best` of
    `paragraph`: the sentence; for a why-question, the reason it gives, from its connective
    ("because", "for", "so that"...) to its end, or, when it opens with a consequence ("So
    he built a wall"), the sentence before it as well, where the cause stands."""
    if not _WHY.search(question):
        return best.text, best
    found = span_scorer.REASON.search(best.text)
    if found is not None and len(best.text[found.start() :].split()) >= MIN_REASON_WORDS:
        return best.text[found.start() :].rstrip(), best
    if _CONSEQUENCE.match(best.text):
        before = [start for start, end in sentence_spans(paragraph) if end <= best.start]
        if before:
            quote = Quote(best.id, paragraph[before[-1] : best.end], before[-1], best.end)
            return quote.text, quote
    return best.text, best
