"""Who someone is, in the book's own words: "Who is Barrymore?" answered by the description the
packet attaches to the name ("Barrymore, the butler"), no model asked.

A reader new to a novel asks who a character is more than anything. The sentence most like
such a question is one that names the character doing something ("Barrymore looked
surprised"), which is no answer; the answer is the phrase set beside the name: an appositive
("Barrymore, the butler") or a copula ("Stapleton is a naturalist"). Each such description in
the packet is counted, and the one said most often wins (the earliest on a tie): a passing
phrase is said once, a character's role again and again. ("The butler, Barrymore" was tried and
dropped: "By the way, Dr. Mortimer" and "a seat, Sir Henry" are no descriptions.)
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from cwread.book import Evidence, Quote
from cwread.retrieval.descriptions import DESCRIPTION, END, TITLE_BEFORE, is_description, normalized
from cwread.text.sentences import sentence_spans
from cwread.text.words import STOPWORDS, TITLES

# who or what a name is ("Who is Barrymore?", "What is the Grimpen Mire?", "Tell me about
# Selden."), or where they live
_WHO_IS = re.compile(
    r"^\s*(?:(?:who|what)\s+(?:is|was|'s)|tell\s+me\s+about|describe)\s+(?:the\s+)?(?P<name>[^?!]+?)\s*[?.!]*\s*$",
    re.IGNORECASE,
)
_WHERE_LIVES = re.compile(r"^\s*where\s+(?:does|did)\s+(?P<name>[^?]+?)\s+live\s*\?*\s*$", re.IGNORECASE)
_NAME_WORD = re.compile(r"^(?:[A-Z][\w'’-]*\.?)$")
MOST_NAME_WORDS = 4
DESCRIBING_ANCHORS = 3  # paragraphs describing a who-is question's name that retrieval anchors


@dataclass(frozen=True)
class Described:
    """How the packet describes the one a "Who is X?" question names (`described`):
    the name, the description chosen ("butler", its words without articles), the sentences that
    say it, and those that describe the name at all."""

    name: str
    said: str
    times: int
    descriptions: int


@dataclass(frozen=True)
class Asked:
    """A question about a name: who or what it is, or, `where`, where it lives (then only a
    place beside the name answers: "Mr. Frankland, of Lafter Hall")."""

    name: str
    where: bool = False


def asked(question: str) -> Asked | None:
    """What a question asks of a name ("Who is Dr. Mortimer?", "Where does Frankland live?"),
    or None when it asks something else ("Who was in the chariot?", "Who killed Sir Charles?")."""
    for pattern, where in ((_WHO_IS, False), (_WHERE_LIVES, True)):
        found = pattern.match(question)
        if found is None:
            continue
        words = found["name"].split()
        if not 1 <= len(words) <= MOST_NAME_WORDS or not all(_NAME_WORD.match(w) for w in words):
            return None
        if all(w.lower().rstrip(".") in TITLES or w.lower() in STOPWORDS for w in words):
            return None  # "Who is He?": no name
        return Asked(" ".join(words), where)
    return None


def asked_name(question: str) -> str | None:
    """The name `question` asks about (see `asked`), or None."""
    found = asked(question)
    return found.name if found else None


def _own_words(name: str) -> list[str]:
    """A name's words that are no title ("Charlotte", "Lucas" of "Miss Charlotte Lucas")."""
    words = [w for w in name.split() if w.lower().rstrip(".") not in TITLES]
    return words or name.split()


def _named(name: str) -> str:
    """The name as the text writes it (a regex): whole, with any title ("Miss Charlotte Lucas"),
    or by its first word where it has two ("Charlotte"); with the title asked, where one was
    ("Madame Defarge" is not Defarge); never beside another name ("Lady Lucas" is not Charlotte
    Lucas, "John Reed" not St. John)."""
    own = _own_words(name)
    titles = [w for w in name.split() if w not in own]
    forms = [r"\s+".join(map(re.escape, own))]
    if len(own) > 1:
        forms.append(re.escape(own[0]) + r"(?!\s+[A-Z])")
    title = (
        r"\s+".join(re.escape(t.rstrip(".")) + r"\.?" for t in titles) + r"\s+"
        if titles
        else f"(?:{TITLE_BEFORE})*"
    )
    return rf"\b(?P<name>{title}(?:{'|'.join(forms)}))\b"


def _patterns(name: str) -> list[re.Pattern]:
    """An appositive beside the name, and a copula after it."""
    named = _named(name)
    return [
        re.compile(rf"{named},\s+{DESCRIPTION}{END}"),  # Barrymore, Sir Charles's butler,
        re.compile(rf"{named}\s+(?:is|was)\s+{DESCRIPTION}{END}"),  # Stapleton is a naturalist
    ]


@dataclass(frozen=True)
class _Found:
    said: str  # the description's words, without articles
    span: str  # the answer: the name and its description, as the sentence has them
    quote: Quote  # the sentence
    appositive: bool  # "X, the butler" (else "X was a naturalist")
    place: bool  # "X, of Lafter Hall"


def _descriptions(name: str, evidence: Evidence) -> list[_Found]:
    """Every description of `name` in `evidence`, in its order."""
    first, patterns = _own_words(name)[0], _patterns(name)
    found: list[_Found] = []
    for pid, text, *_ in evidence:
        if first not in text:  # every form of the name holds its first word
            continue
        for start, end in sentence_spans(text):
            sentence = text[start:end]
            for pattern, appositive in zip(patterns, (True, False), strict=True):
                for match in pattern.finditer(sentence):
                    said = normalized(match["said"])
                    if not said or said in STOPWORDS or not is_description(sentence, match, appositive):
                        continue
                    span = sentence[match.start() : match.end()]
                    place = match["said"].startswith("of ")
                    found.append(_Found(said, span, Quote(pid, sentence, start, end), appositive, place))
    return found


def _ranked(found: list[_Found]) -> list[_Found]:
    """The first saying of each description, the one said most often first (the earliest on a
    tie). A copula said once is left out: "Arthur was the first", "Darcy was the superior" say
    what someone was at a moment; an appositive once, or a copula again, says who they are."""
    times = Counter(f.said for f in found)
    appositive = {f.said for f in found if f.appositive}
    first: dict[str, _Found] = {}
    for f in found:
        first.setdefault(f.said, f)  # in order of first saying: the earliest wins a tie (sorted is stable)
    order = sorted(first, key=lambda said: -times[said])
    return [first[said] for said in order if times[said] > 1 or said in appositive]


def _answering(asking: Asked, found: list[_Found]) -> list[_Found]:
    """The descriptions `found` that answer `asking`, best first (`_ranked`): for where someone
    lives, the places beside the name alone."""
    return [f for f in _ranked(found) if f.place or not asking.where]


FIRST_MENTIONS = 2  # where nothing describes a name, its first mentions are read for who it is
MENTION_WORDS = 8  # a paragraph shorter than this is a heading or a line ("Dr. Seward's Diary")


def first_mentions(question: str, evidence: Evidence, most: int = FIRST_MENTIONS) -> list[int]:
    """For "Who is X?", the first paragraphs of `evidence`, in its order, that name X, `most`
    at most, leaving out headings and short lines: a character is often introduced where first
    named ("My name is Jaggers, and I am a lawyer in London")."""
    asking = asked(question)
    if asking is None or asking.where:
        return []
    pattern, first = re.compile(_named(asking.name)), _own_words(asking.name)[0]
    found = []
    for pid, text, *_ in evidence:
        if first in text and len(text.split()) >= MENTION_WORDS and pattern.search(text):
            found.append(pid)
            if len(found) == most:
                break
    return found


def describing_paragraphs(question: str, evidence: Evidence, most: int = DESCRIBING_ANCHORS) -> list[int]:
    """For a "Who is X?" question, the paragraphs of `evidence` (the whole book) where X is
    described, one a description, the one said most often first, `most` at most: retrieval
    makes them anchors, so the packet holds what describes X (a name alone as the query finds
    the paragraphs that use it most, seldom the one that says who it is)."""
    asking = asked(question)
    if asking is None:
        return []
    answering = _answering(asking, _descriptions(asking.name, evidence))
    return list(dict.fromkeys(f.quote.id for f in answering[:most]))


def described(question: str, evidence: Evidence) -> tuple[str, Quote, Described] | None:
    """The answer to a "Who is X?" question from `evidence`: the words that describe X as the
    book puts them beside the name, the sentence they are quoted from, and the Described
    (how often the packet says so); None when the question asks no name or no sentence
    describes it."""
    asking = asked(question)
    if asking is None:
        return None
    found = _descriptions(asking.name, evidence)
    ranked = _answering(asking, found)
    if not ranked:
        return None
    best = ranked[0]
    return (
        best.span,
        best.quote,
        Described(asking.name, best.said, sum(f.said == best.said for f in found), len(found)),
    )
