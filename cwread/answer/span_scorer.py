"""The words of a quoted sentence that answer the question: a span reader.

An extractive answer used to be a whole sentence, while answers are mostly a few words: a
name for who, a place for where, a cause for why, the object of the question's verb for
what. This reader proposes spans of the ranking's best sentences (the sentence, its clauses,
a name, a prepositional phrase, what follows or precedes the question's words in a clause,
a reason) and scores each with a linear model over answer-type features, fit on FairytaleQA
train to the token-F1 a user would get (`python training/span_scorer.py`, which writes
`cwread/data/span-reader.json`). The answer is always words of the book, inside the quoted
sentence, and scoring them is pure Python: about 4 ms a question on 2 cores.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from cwread.book.grounding import content_words
from cwread.text.words import STOPWORDS, TITLES, word_stems

MAX_SENTENCES = 5  # of the ranking's best, whose spans compete
MAX_PHRASE_WORDS = 10  # a name or a prepositional phrase is short

_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*|--|—|–|[^\w\s]", re.U)
_CLAUSE_PUNCT = frozenset({",", ";", ":", "--", "—", "–", "(", ")", "!", "?", ".", '"', "“", "”"})
_PREPOSITIONS = frozenset({"in", "into", "at", "on", "under", "beneath", "behind", "inside", "near", "by", "to", "from", "across", "through", "over", "beside", "within", "among", "towards", "toward", "upon", "onto", "out"})
_TIME_WORDS = frozenset(
    ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "morning", "evening", "night", "afternoon", "noon", "midnight", "dawn", "day", "days", "week", "weeks", "month", "months", "year", "years", "o'clock", "hour", "hours", "minute", "minutes", "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december", "spring", "summer", "autumn", "winter", "yesterday", "tomorrow", "today", "ago", "later", "before", "after", "when", "while", "once"]
)
_NUMBER_WORDS = frozenset(
    ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "twenty", "thirty", "forty", "fifty", "hundred", "thousand", "first", "second", "third", "fourth", "fifth", "half", "dozen", "many", "several", "few"]
)
_REASON_WORDS = frozenset({"because", "since", "so", "for", "order", "that", "as", "to"})
# Where a reason starts. "for" before an object pronoun names who, not why ("for them--and had
# one stolen"); before anything else it may give the reason ("for he wished", "for fear of the
# wolf"). On FairytaleQA train's why-questions: this 25.0 token-F1, any "for" 24.9, "for" before
# a subject only 24.1. (cwread.answer.extractive's reason rule cuts at it too.)
REASON = re.compile(
    r"\b(?:because|since|for(?! (?:them|him|her|me|us)\b)|so that|in order to"
    r"|that (?:he|she|it|they|we|you|i) (?:might|may|could|would))\b",
    re.I,
)
_FEELINGS = frozenset(
    ["happy", "sad", "glad", "angry", "afraid", "frightened", "scared", "sorry", "joyful", "delighted", "pleased", "proud", "ashamed", "jealous", "worried", "anxious", "surprised", "astonished", "amazed", "curious", "lonely", "grateful", "thankful", "upset", "furious", "terrified", "excited", "disappointed", "unhappy", "miserable", "content", "relieved", "nervous"]
)
_RELATIVES = frozenset({"that", "which", "who", "whom", "whose", "where", "when", "and", "but", "or"})
_PRONOUNS = frozenset({"he", "she", "it", "they", "him", "her", "them", "i", "you", "we", "us", "me", "his", "its", "their"})

def question_kind(question: str) -> str:
    """What a question asks for, from the first question word of its last sentence that has
    one ("Mr. Mace sold ... Who really bought it?"; "Why was he sad when ...?" asks why)."""
    q = question.lower()
    asking = [s for s in re.split(r"(?<=[.?!])\s+", q) if _WH.search(s)]
    if not asking:
        return "other"
    q = asking[-1]
    first = _WH.search(q)
    word, rest = first.group(1), q[first.start() :]
    if word == "how":
        if re.match(r"how (?:many|much|long|old|far|often)\b", rest):
            return "how-many"
        if re.search(r"\b(?:feel|felt|react|reacted)\b", rest):
            return "how-feel"
        return "how"
    if word in ("what", "which") and re.match(r"\w+ (?:day|time|year|evening|night|morning|month|date|hour)\b", rest):
        return "when"
    if word == "whom":
        return "who"
    if word == "what" and re.search(r"^what (?:did|does|do|will|would|could|had|has) .*\b(?:do|did|done)\b|^what happen", rest):
        return "what-do"
    return word


_WH = re.compile(r"\b(who|whom|whose|where|when|why|how|what|which)\b")


@dataclass(frozen=True)
class Span:
    """A candidate answer: `start`/`end` within its sentence, of `kind`, from the sentence
    ranked `rank` (0: best)."""

    start: int
    end: int
    kind: str
    rank: int


def _tokens(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _after_title(tokens: list[tuple[str, int, int]], k: int) -> bool:
    """Whether token k is the full stop of a title or an initial ("Mr.", "J.")."""
    if tokens[k][0] != "." or k == 0:
        return False
    before = tokens[k - 1][0]
    return before.lower() in TITLES or (len(before) == 1 and before.isupper())


def _is_word(token: str) -> bool:
    return token[0].isalnum()


def _stem(word: str) -> str:
    return word_stems([word.lower()])[0]


def spans(question: str, sentence: str, rank: int) -> list[Span]:
    """The candidate answers in `sentence` (rank: its place in the ranking)."""
    tokens = _tokens(sentence)
    if not tokens:
        return []
    asked = _question_stems(question)
    out: dict[tuple[int, int], str] = {(tokens[0][1], tokens[-1][2]): "sentence"}

    def add(i: int, j: int, kind: str) -> None:
        """Tokens i..j (inclusive), trimmed of punctuation at either end, if they say
        something: a word the question does not, and no title cut from its name."""
        while i <= j and not _is_word(tokens[i][0]):
            i += 1
        while j >= i and not _is_word(tokens[j][0]):
            j -= 1
        if i > j or (tokens[j][0].lower() in TITLES and j + 1 < len(tokens) and tokens[j + 1][0] == "."):
            return
        words = [t for t, _, _ in tokens[i : j + 1] if _is_word(t) and t.lower() not in STOPWORDS]
        if kind != "sentence" and not any(_stem(w) not in asked for w in words):
            return
        out.setdefault((tokens[i][1], tokens[j][2]), kind)

    # clauses, and within each what precedes and follows the question's words
    clause_start = 0
    for k, (tok, _, _) in enumerate([*tokens, (".", 0, 0)]):
        if k < len(tokens) and (tok not in _CLAUSE_PUNCT or _after_title(tokens, k)):
            continue
        if k > clause_start:
            add(clause_start, k - 1, "clause")
            hits = [
                n for n in range(clause_start, k)
                if _is_word(tokens[n][0]) and tokens[n][0].lower() not in STOPWORDS and _stem(tokens[n][0]) in asked
            ]
            if hits:
                if hits[-1] + 1 < k:
                    add(hits[-1] + 1, k - 1, "after")
                if hits[0] > clause_start:
                    add(clause_start, hits[0] - 1, "before")
        clause_start = k + 1
    # names: runs of capitalised words (a title and "of" may join them)
    n = 0
    while n < len(tokens):
        tok = tokens[n][0]
        if _is_word(tok) and tok[0].isupper() and (tok.lower() not in STOPWORDS or tok.lower() in TITLES):
            m = n
            while m + 1 < len(tokens) and m - n < MAX_PHRASE_WORDS and (
                (_is_word(tokens[m + 1][0]) and tokens[m + 1][0][0].isupper())
                or (tokens[m + 1][0] == "." and tokens[m][0].lower() in TITLES)
                or (tokens[m + 1][0].lower() == "of" and m + 2 < len(tokens) and tokens[m + 2][0][:1].isupper())
            ):
                m += 1
            # "the" before a name belongs to it ("the great Sorcerer" is found as "before")
            add(n, m, "name")
            n = m + 1
        else:
            n += 1
    # prepositional phrases, to the clause's end or MAX_PHRASE_WORDS
    for n, (tok, _, _) in enumerate(tokens):
        if tok.lower() in _PREPOSITIONS:
            m = n + 1
            while m < len(tokens) and tokens[m][0] not in _CLAUSE_PUNCT and m - n <= MAX_PHRASE_WORDS:
                m += 1
            if m - 1 > n:
                add(n, m - 1, "phrase")
    if question_kind(question) == "how-feel":  # "sad": one word of the sentence may be the answer
        for n, (tok, _, _) in enumerate(tokens):
            if _is_word(tok) and tok.lower() not in STOPWORDS and _stem(tok) not in asked:
                add(n, n, "word")
    found = REASON.search(sentence)
    if found is not None:
        first = next((k for k, t in enumerate(tokens) if t[1] >= found.start()), None)
        if first is not None:
            add(first, len(tokens) - 1, "reason")
    return [Span(s, e, kind, rank) for (s, e), kind in out.items()]


@lru_cache(maxsize=256)  # asked of every span of a question's sentences
def _question_stems(question: str) -> frozenset[str]:
    return frozenset(content_words(question))


def features(question: str, kind: str, sentence: str, span: Span, score: float, top: float) -> dict[str, float]:
    """The span's features (named, so the model's weights say what they weigh); `score`:
    its sentence's ranking score, `top` the best sentence's."""
    gap = top - score
    text = sentence[span.start : span.end]
    words = [t for t, _, _ in _tokens(text) if _is_word(t)]
    lower = [w.lower() for w in words]
    content = [w for w in lower if w not in STOPWORDS]
    asked = _question_stems(question)
    stems = word_stems(content) if content else []
    in_question = sum(s in asked for s in stems)
    new = len(stems) - in_question
    length = len(words)
    sentence_words = sum(1 for t, _, _ in _tokens(sentence) if _is_word(t))
    capitalised_new = sum(
        1 for w, s in zip(words, word_stems(lower), strict=True) if w[0].isupper() and w.lower() not in STOPWORDS and s not in asked
    )
    f = {
        "bias": 1.0,
        f"q:{kind}": 1.0,
        f"s:{span.kind}": 1.0,
        f"q:{kind}|s:{span.kind}": 1.0,
        f"rank:{min(span.rank, 3)}": 1.0,
        f"s:{span.kind}|rank:{min(span.rank, 1)}": 1.0,
        f"q:{kind}|length:{_length_bin(length)}": 1.0,
        f"s:{span.kind}|ends-sentence": float(span.end >= len(sentence.rstrip(" .!?\"'”’"))),
        "gap": gap,
        "log-length": math.log1p(length),
        f"q:{kind}|log-length": math.log1p(length),
        "share-of-sentence": length / max(1, sentence_words),
        "asked-share": in_question / max(1, len(stems)),
        f"q:{kind}|asked-share": in_question / max(1, len(stems)),
        "asked-count": min(in_question, 4) / 4,
        "new-count": min(new, 8) / 8,
        "no-new-word": float(new == 0),
        f"q:{kind}|name": float(capitalised_new > 0),
        f"q:{kind}|time": float(any(w in _TIME_WORDS for w in lower)),
        f"q:{kind}|number": float(any(w in _NUMBER_WORDS or w.isdigit() for w in lower)),
        f"q:{kind}|feeling": float(any(w in _FEELINGS for w in lower)),
        f"q:{kind}|reason-word": float(any(w in _REASON_WORDS for w in lower[:2])),
        f"q:{kind}|pronoun-only": float(bool(lower) and all(w in _PRONOUNS for w in lower)),
        f"q:{kind}|starts-sentence": float(span.start == 0),
        f"s:{span.kind}|score": score,
        f"s:{span.kind}|top-score": top,
        f"s:{span.kind}|log-sentence-length": math.log1p(sentence_words),
        "starts-function-word": float(bool(lower) and lower[0] in STOPWORDS),
        f"q:{kind}|starts-pronoun": float(bool(lower) and lower[0] in _PRONOUNS),
        f"q:{kind}|starts-relative": float(bool(lower) and lower[0] in _RELATIVES),
        "ends-function-word": float(bool(lower) and lower[-1] in STOPWORDS),
    }
    return f


def _length_bin(words: int) -> str:
    return next(label for top, label in ((1, "1"), (2, "2"), (4, "3-4"), (8, "5-8"), (15, "9-15")) if words <= top) if words <= 15 else "16+"


@dataclass(frozen=True)
class SpanModel:
    """Weights of the span reader's features (a missing feature weighs 0)."""

    weights: dict[str, float]
    version: int

    def score(self, f: dict[str, float]) -> float:
        return sum(self.weights.get(name, 0.0) * value for name, value in f.items())


@lru_cache(maxsize=1)
def shipped_model() -> SpanModel | None:
    """The weights fit on FairytaleQA train that ship in cwread/data (see `read_model`)."""
    return read_model(resources.files("cwread.data").joinpath("span-reader.json"))


def read_model(path) -> SpanModel | None:
    """The span reader's weights in the JSON file at `path`, or None where it is missing or
    unreadable: an extractive answer is then its best sentence, as the plan says."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        weights = {str(k): float(v) for k, v in data["weights"].items()}
        return SpanModel(weights, int(data.get("version", 1)))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        return None


def best_span(
    question: str, sentences: list[tuple[str, float]], model: SpanModel
) -> tuple[int, int, int] | None:
    """The best answer among the spans of `sentences` ((text, ranking score), best first):
    (index of its sentence, start, end), or None when there are no sentences."""
    if not sentences:
        return None
    kind = question_kind(question)
    top = sentences[0][1]
    best: tuple[float, int, int, int] | None = None
    for index, (text, score) in enumerate(sentences[:MAX_SENTENCES]):
        for span in spans(question, text, index):
            value = model.score(features(question, kind, text, span, score, top))
            if best is None or value > best[0]:
                best = (value, index, span.start, span.end)
    return None if best is None else best[1:]
