"""BM25 with bm25s, English stop words removed, Snowball-stemmed: over paragraphs, and over
sections (runs of paragraphs of about SECTION_CHARS characters) for the part of a book a
question is about.

A novel's answer is often a short line of dialogue whose speaker and subject are named in the
paragraphs around it, so a paragraph's *context score* counts its neighbours' matches too,
discounted by distance (see `context_scores`).
"""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

LEXICAL_VERSION = 3
# A paragraph's context: CONTEXT_WIDTH neighbours each side, a match d paragraphs away counting
# CONTEXT_DECAY**d. On the dev novel (48 questions) gold paragraphs in the top 32 went from 65%
# to 75% with it; the fairytale anthology's top 8, from 84% to 85%.
CONTEXT_WIDTH = 2
CONTEXT_DECAY = 0.5
# Sections overlap by half, so a passage is never split between two: each paragraph is scored
# by the best section that holds it.
SECTION_CHARS = 4000

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


# Irregular English forms and their base word ("built" -> "build"): questions ask "why did he
# build", the story says "he built", and no stemmer joins the two. Ambiguous forms whose other
# sense is common in stories ("rose", "ground", "wound", "lay", "born") are left out.
_IRREGULAR_FORMS = (
    "arise arose arisen / awake awoke awoken / be was were been / bear bore borne / beat beat "
    "beaten / become became become / begin began begun / bend bent bent / bet bet bet / bid bade "
    "bidden / bind bound bound / bite bit bitten / bleed bled bled / blow blew blown / break "
    "broke broken / breed bred bred / bring brought brought / build built built / burn burnt "
    "burnt / burst burst burst / buy bought bought / catch caught caught / choose chose chosen / "
    "cling clung clung / come came come / cost cost cost / creep crept crept / cut cut cut / deal "
    "dealt dealt / dig dug dug / do did done / draw drew drawn / dream dreamt dreamt / drink "
    "drank drunk / drive drove driven / dwell dwelt dwelt / eat ate eaten / fall fell fallen / "
    "feed fed fed / feel felt felt / fight fought fought / find found found / flee fled fled / "
    "fling flung flung / fly flew flown / forbid forbade forbidden / forget forgot forgotten / "
    "forgive forgave forgiven / freeze froze frozen / get got gotten / give gave given / go went "
    "gone / grow grew grown / hang hung hung / have had had / hear heard heard / hide hid hidden "
    "/ hit hit hit / hold held held / hurt hurt hurt / keep kept kept / kneel knelt knelt / know "
    "knew known / lay laid laid / lead led led / lean leant leant / leap leapt leapt / learn "
    "learnt learnt / leave left left / lend lent lent / let let let / lie lain / light lit lit / "
    "lose lost lost / make made made / mean meant meant / meet met met / pay paid paid / put put "
    "put / quit quit quit / read read read / rid rid rid / ride rode ridden / ring rang rung / "
    "rise risen / run ran run / say said said / see saw seen / seek sought sought / sell sold "
    "sold / send sent sent / set set set / sew sewed sewn / shake shook shaken / shed shed shed / "
    "shine shone shone / shoot shot shot / show showed shown / shrink shrank shrunk / shut shut "
    "shut / sing sang sung / sink sank sunk / sit sat sat / slay slew slain / sleep slept slept / "
    "slide slid slid / sling slung slung / slink slunk slunk / smite smote smitten / speak spoke "
    "spoken / speed sped sped / spend spent spent / spin spun spun / spit spat spat / split split "
    "split / spread spread spread / spring sprang sprung / stand stood stood / steal stole stolen "
    "/ stick stuck stuck / sting stung stung / stink stank stunk / stride strode stridden / "
    "strike struck struck / string strung strung / strive strove striven / swear swore sworn / "
    "sweep swept swept / swell swelled swollen / swim swam swum / swing swung swung / take took "
    "taken / teach taught taught / tear tore torn / tell told told / think thought thought / "
    "throw threw thrown / thrust thrust thrust / tread trod trodden / understand understood "
    "understood / wake woke woken / wear wore worn / weave wove woven / weep wept wept / win won "
    "won / wring wrung wrung / write wrote written / child children / man men / woman women / "
    "foot feet / tooth teeth / goose geese / mouse mice / ox oxen"
)
IRREGULAR: dict[str, str] = {
    form: group.split()[0]
    for group in _IRREGULAR_FORMS.split(" / ")
    for form in group.split()[1:]
    if form != group.split()[0]
}


def word_stems(words: list[str]) -> list[str]:
    """Snowball stems of lower-cased words, irregular forms first taken to their base word."""
    return _stemmer().stemWords([IRREGULAR.get(w, w) for w in words])


def tokenize(texts: list[str]) -> list[list[str]]:
    """Lower-cased, stop-word-free, stemmed tokens (the same for paragraphs and queries)."""
    import bm25s

    return bm25s.tokenize(
        texts, stopwords=sorted(STOPWORDS), stemmer=_stemmer(), return_ids=False, show_progress=False
    )


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


def load_index(directory: Path):
    import bm25s

    os.environ.setdefault("TQDM_DISABLE", "1")
    return bm25s.BM25.load(str(directory), mmap=False)


def _terms(retriever, query: str) -> list[str]:
    return [t for t in tokenize([query])[0] if t in retriever.vocab_dict]


def scores(retriever, query: str, n_docs: int) -> np.ndarray:
    """BM25 score of every paragraph for `query` (zeros when no query term is in the index)."""
    tokens = _terms(retriever, query)
    if not tokens:
        return np.zeros(n_docs, dtype=np.float32)
    return np.asarray(retriever.get_scores(tokens), dtype=np.float32)


def context_scores(retriever, query: str, n_docs: int, file_starts: Sequence[int] = ()) -> np.ndarray:
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


def section_scores(retriever, spans: np.ndarray, query: str, n_docs: int) -> np.ndarray:
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
