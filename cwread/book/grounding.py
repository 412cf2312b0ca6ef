"""Grounding: quotes that are in the book, answers they support, and a book that cannot speak.

Pure functions over text:
- `neutralise`: what an agent is shown of a paragraph. Tag-like text (`</answer>`) and
  bracketed numbers (`[99999]`) in the book are defused, one character for one, so offsets
  into the shown text are offsets into the book.
- `sentence_spans`: the sentences (or clauses of very long ones) a quote may be.
- `find_quotes`: the `[N] "quote"` items of a reason (`[ch03:12] "quote"` in a book of
  several files), each checked against the paragraph as shown (case, whitespace and quote marks normalised); a quote not there is forged.
- `weight_shares`: how much of a text's word weight (the book's idf) other texts carry.
- `covers`: whether quotes hold every content word of an answer (a label's rule is
  cwread.answer.support's).
- `best_sentence`: the extractive answer (most question words shared, or a given ranking).
- `cut_repetition`: an answer stops where it starts repeating itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

from cwread.book.document import LABEL, Evidence, Forged, Quote
from cwread.text.sentences import sentence_spans
from cwread.text.words import STOPWORDS, WORD, word_stems

_TAG = re.compile(r"<\s*/?\s*[A-Za-z][\w-]*\s*/?\s*>")
_ANSWER_WORD = re.compile(r"\b(?:TRUE|FALSE|YES|NO)\b")
_BRACKETED_NUMBER = re.compile(rf"\[\s*{LABEL}(?:\s*[-–,]\s*{LABEL})*\s*\]")
_ITEM = re.compile(rf'\[\s*({LABEL})\s*\]\s*"(.*?)"(?=\s*(?:[;,]|and|also)?\s*(?:\[\s*{LABEL}\s*\]|$))', re.S)
_QUOTE_MARKS = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "`": "'"})


def neutralise(text: str) -> str:
    """The book's text as an agent sees it: tags, bracketed numbers and cwread's answer words
    in capitals (TRUE, NO) defused, same length."""
    text = _TAG.sub(lambda m: m.group(0).replace("<", "‹").replace(">", "›"), text)
    # a planted "TRUE" beside a defused tag still swayed a small model; lower case reads as prose
    text = _ANSWER_WORD.sub(lambda m: m.group(0).lower(), text)
    return _BRACKETED_NUMBER.sub(lambda m: "(" + m.group(0)[1:-1] + ")", text)


def _normalised(text: str) -> tuple[str, list[int]]:
    """Lower-cased, quote marks straightened, whitespace runs as one space; with the index
    in `text` of every kept character."""
    out: list[str] = []
    index: list[int] = []
    space = False
    for i, ch in enumerate(text.translate(_QUOTE_MARKS).lower()):
        if ch.isspace():
            space = bool(out)
            continue
        if space:
            out.append(" ")
            index.append(i - 1)
            space = False
        out.append(ch)
        index.append(i)
    return "".join(out), index


def locate(quote: str, shown: str) -> tuple[int, int] | None:
    """Where `quote` stands in `shown` (normalised match), as offsets into `shown`."""
    needle, _ = _normalised(quote.strip())
    needle = needle.strip(" .,;:!?\"'")
    if len(needle) < 3:
        return None
    hay, index = _normalised(shown)
    at = hay.find(needle)
    if at < 0:
        return None
    return index[at], index[at + len(needle) - 1] + 1


def find_quotes(
    reason: str,
    shown: dict[int, str],
    book: dict[int, str] | None = None,
    ids: dict[str, int] | None = None,
) -> tuple[tuple[Quote, ...], tuple[Forged, ...]]:
    """The `[N] "quote"` items of `reason` (`[ch03:12] "quote"` in a book of several files):
    (quotes found in the paragraph as shown, with the book's text at those offsets; (label,
    text) of the rest, which are never shown as support). `ids` maps the labels the agent
    was shown to ids (None: each label is its id)."""
    found: list[Quote] = []
    forged: list[Forged] = []
    for m in _ITEM.finditer(reason or ""):
        label, text = "".join(m.group(1).split()), m.group(2)
        pid = ids.get(label) if ids is not None else int(label) if label.isdigit() else None
        span = locate(text, shown[pid]) if pid in shown else None
        if span is None:
            forged.append((label, text))
            continue
        source = (book or shown)[pid]
        quote = Quote(pid, source[span[0] : span[1]], span[0], span[1])
        if quote not in found:
            found.append(quote)
    return tuple(found), tuple(forged)


def content_words(text: str) -> set[str]:
    """Lower-cased words that carry content (function words removed), stemmed, irregular
    forms taken to their base ("built" -> "build")."""
    return set(word_stems([w for w in WORD.findall((text or "").lower()) if w not in STOPWORDS]))


def covers(answer: str, quotes: Iterable[Quote]) -> bool:
    """Whether `quotes` back an open answer: there is one, and every content word of the
    answer appears in them."""
    quotes = list(quotes)
    if not quotes:
        return False
    return content_words(answer) <= content_words(" ".join(q.text for q in quotes))


Weights = Mapping[str, float]  # a content word's weight in the book (its idf); one it lacks weighs 0


def weight_shares(about: str, texts: list[str], weights: Weights | None = None) -> list[float]:
    """For each of `texts`, the share of `about`'s content-word weight its words carry (each
    word weighing 1 without `weights`); 0 for each when `about` weighs nothing."""
    asked = content_words(about)
    weigh = (lambda w: 1.0) if weights is None else (lambda w: weights.get(w, 0.0))
    total = sum(weigh(w) for w in asked)
    if not total:
        return [0.0] * len(texts)
    return [sum(weigh(w) for w in asked & content_words(text)) / total for text in texts]


Rank = Callable[[str, list[str]], list[float]]  # (question, sentences) -> a score for each


def best_sentence(
    question: str, evidence: Evidence, min_shared: int = 1, rank: Rank | None = None
) -> Quote | None:
    """The best sentence of `evidence` for the question (see `best_sentences`); None if none
    shares `min_shared` or more of its content words."""
    found = best_sentences(question, evidence, 1, min_shared, rank)
    return found[0] if found else None


def best_sentences(
    question: str,
    evidence: Evidence,
    k: int,
    min_shared: int = 1,
    rank: Rank | None = None,
) -> list[Quote]:
    """The `k` distinct sentences of `evidence` that share at least `min_shared` content words
    with the question, best first, earlier first on ties. Best: the most words shared, or the
    highest score of `rank` where one is given."""
    return [quote for quote, _ in ranked_sentences(question, evidence, k, min_shared, rank)]


def could_answer(question: str, sentence: str) -> bool:
    """Whether `sentence` could be the answer to `question`: not itself a question ("What did
    Selden say?"), and saying some content word the question does not (a sentence that only
    restates the question answers nothing)."""
    if (
        sentence.rstrip().rstrip(_CLOSERS).endswith("?")
        or _ASKED_ALOUD.search(sentence)
        or _ASKED_THEN_HOW.match(sentence)
        or _ASKED_UNMARKED.match(sentence)
    ):
        return False
    return bool(content_words(sentence) - content_words(question))


_CLOSERS = "\"'”’)]»* "  # what may close a sentence after its mark
# a question spoken, then only who said it: "“Where is Rosanna Spearman?” asked Sergeant Cuff."
_ASKED_ALOUD = re.compile(r"\?[\"'”’]\s*(?:[\w.’'-]+\s+){0,3}[\w.’'-]+[.!]?[\"'”’)]*\s*$")
# a question spoken, then who asked it and how: "“What?” cried Poirot, in apparently lively
# astonishment." The narration says how it was asked, not what answers it, unless a new clause
# follows ("“What?” he said, and then Barrymore told him the whole truth")
_SPEECH_VERB = (
    r"(?:said|says|asked|asks|cried|cries|exclaimed|inquired|enquired|demanded|replied|returned|"
    r"repeated|whispered|shouted|called|answered|added|continued|murmured|muttered|began|observed|"
    r"remarked|resumed|interposed|interrupted|pursued|rejoined|retorted|urged|persisted|insisted|"
    r"suggested|echoed|gasped|sobbed|groaned|roared|thundered|screamed|faltered|stammered|went on)"
)
_ASKED_THEN_HOW = re.compile(
    r"^[\s(]*[“\"‘'][^“”\"]*\?[”\"’']\s*(?:[\w.’'-]+\s+){0,3}?" + _SPEECH_VERB
    + r"\b(?!.*(?:[;:]|\b(?:and|but|then|while|because|whereupon|who|which)\b))"  # one sentence: to its end
)
# a question put without its mark, as some authors write one: "Did Rosanna Spearman show you the
# nightgown." An auxiliary, then who or what it asks about. A name or "the ..." only after an
# auxiliary that opens no command and is no first name ("Do the work", "Have a seat", "May
# Welland smiled"); none of those that open a condition ("Had I known", "Were it not", "Should you");
# not an exclamation, nor an aside ("Do you know, my friend, I remembered ..."); one with a mark
# in it is a question asked and answered in one sentence ("'Is there a raven?' ... 'I am that raven'")
_PERSON = r"(?:I|you|he|she|it|we|they|there)\b"
_ADDRESSED = r"(?:I|you|he|she|we|they)\b"  # not "Do it at once", "Have it your way"
_ASKED_UNMARKED = re.compile(
    r"^[\"'“‘(\s]*(?:"
    r"(?:Did|Does|Is|Are|Was|Has|Can|Could|Would(?!\s+that\b))\s+"  # not a wish: "Would that I had"
    rf"(?:{_PERSON}|(?:the|a|an|this|that|these|those|my|your|his|her|its|our|their)\b|[A-Z][\w’'-]+\b)"
    rf"|(?:Do|Have|May|Might|Will|Must|Shall)\s+{_ADDRESSED}"
    r")(?!\s*[,;—-]|\s+\w+\s*,)(?!.*!\s*[\"'”’]*\s*$)(?!.*\?)"  # not "Do you know, my friend, I ..."
)


def rank_scores(question: str, texts: list[str], rank: Rank | None) -> list[float]:
    """`rank`'s scores of `texts` for `question`; without one, how many of the question's
    content words each holds."""
    if rank is not None:
        return rank(question, texts)
    asked = content_words(question)
    return [len(asked & content_words(text)) for text in texts]


def ranked_sentences(
    question: str,
    evidence: Evidence,
    k: int,
    min_shared: int = 1,
    rank: Rank | None = None,
    keep: Callable[[str], bool] | None = None,
) -> list[tuple[Quote, float]]:
    """`best_sentences` with the score each was ranked by; `keep`: of the sentences it keeps."""
    asked = content_words(question)
    candidates: list[Quote] = []
    shared: list[int] = []
    seen: set[tuple[int, str]] = set()  # by text: a quote's offsets are its own, not the paragraph's
    for pid, text, *_ in evidence:
        # a sentence's words are its paragraph's: a paragraph sharing too few is not split into
        # sentences (the segmenter's time, 0.1-0.3 s over the hundreds of paragraphs a novel reads)
        if len(asked & content_words(text)) < max(1, min_shared):
            continue
        for start, end in sentence_spans(text):
            if keep is not None and not keep(text[start:end]):
                continue
            count = len(asked & content_words(text[start:end]))
            if count >= max(1, min_shared) and (pid, text[start:end]) not in seen:
                seen.add((pid, text[start:end]))
                candidates.append(Quote(pid, text[start:end], start, end))
                shared.append(count)
    if not candidates:
        return []
    scores = rank(question, [q.text for q in candidates]) if rank else shared
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
    return [(candidates[i], float(scores[i])) for i in order[:k]]


def answer_support_needed(question: str) -> int:
    """Question words an extractive answer must share to be presented: two (one for a
    question with a single content word). A title that names the hero is not an answer."""
    return min(2, len(content_words(question)))


def cut_repetition(text: str) -> str:
    """`text` up to where it starts repeating: a sentence said before, or a run of six words
    said before, ends it."""
    kept: list[str] = []
    seen: set[str] = set()
    for sentence in re.split(r"(?<=[.!?])\s+", text.strip()):
        key = " ".join(WORD.findall(sentence.lower()))
        if key and key in seen:
            break
        seen.add(key)
        kept.append(sentence)
    words = " ".join(kept).split(" ")
    grams: set[tuple[str, ...]] = set()
    for i in range(len(words) - 5):
        gram = tuple(w.lower().strip(".,;:!?") for w in words[i : i + 6])
        if gram in grams:
            return " ".join(words[:i]).rstrip(" ,;:")
        grams.add(gram)
    return " ".join(words)
