"""Who someone is, in the book's own words: "Who is Barrymore?" answered by the description the
packet attaches to the name ("Barrymore, the butler"), no model asked.

A reader new to a novel asks who a character is more than anything. The sentence most like
such a question is one that names the character doing something ("Barrymore looked
surprised"), which is no answer; the answer is the phrase set beside the name: an appositive
("Barrymore, the butler", "the butler, Barrymore") or a copula ("Stapleton is a naturalist").
Each such description in the packet is counted, and the one said most often wins (the earliest
on a tie): a passing phrase ("Holmes, a moment") is said once, a character's role again and
again.
"""

from __future__ import annotations

import re
from collections import Counter

from cwread.book import Evidence
from cwread.records import Description, Quote
from cwread.text.sentences import sentence_spans
from cwread.text.words import ABBREVIATED, STOPWORDS, TITLES

_WHO_IS = re.compile(r"^\s*who\s+(?:is|was|'s)\s+(?P<name>[^?]+?)\s*\?*\s*$", re.IGNORECASE)
_NAME_WORD = re.compile(r"^(?:[A-Z][\w'’-]*\.?)$")
# what opens a description: an article, a possessive pronoun, or a name's possessive ("Sir Charles's")
_OPENS = r"(?:the|a|an|his|her|their|its|my|our|your|(?:[A-Z][\w-]*\s+){0,2}[A-Z][\w-]*['’]s)"
_ABBREVIATED = "|".join(ABBREVIATED)
_WORD = rf"(?:(?:{_ABBREVIATED})\.|(?!(?:{_ABBREVIATED})\.)[\w'’-]+)"  # "the late Mr. Darcy's steward": Mr. ends nothing
_DESCRIPTION = rf"(?P<said>{_OPENS}\s+(?:{_WORD}\s+){{0,6}}?{_WORD})"  # "the Notting Hill murderer"
_END = r"(?=\s*(?P<end>[,.;:!?)\"”—]|’(?!\w)|--|$))"  # ’ closes a speech, or is an apostrophe
# a verb in it makes a clause, not a description ("Watson, the game is afoot!": a vocative)
_VERBS = frozenset(
    ["is", "was", "are", "were", "be", "been", "being", "has", "have", "had", "will", "would", "shall", "should", "can", "could", "may", "might", "must", "do", "does", "did"]
)
_OPENING = "“\"‘'(—-"
MOST_NAME_WORDS = 4


def asked_name(question: str) -> str | None:
    """The name a "Who is X?" question asks about ("Dr. Mortimer"), or None when it asks
    something else ("Who was in the chariot?", "Who killed Sir Charles?")."""
    found = _WHO_IS.match(question)
    if found is None:
        return None
    words = found["name"].split()
    if not 1 <= len(words) <= MOST_NAME_WORDS or not all(_NAME_WORD.match(w) for w in words):
        return None
    if all(w.lower().rstrip(".") in TITLES or w.lower() in STOPWORDS for w in words):
        return None  # "Who is He?": no name
    return " ".join(words)


def _key(name: str) -> str:
    """The word a name is found by: its last that is no title ("Mortimer" of "Dr. Mortimer")."""
    words = [w for w in name.split() if w.lower().rstrip(".") not in TITLES]
    return (words or name.split())[-1]


def _patterns(name: str) -> list[re.Pattern]:
    key = re.escape(_key(name))
    named = rf"(?P<name>(?:[A-Z][\w'’-]*\.?\s+){{0,3}}{key})\b"
    return [
        re.compile(rf"{named},\s+{_DESCRIPTION}{_END}"),  # Barrymore, Sir Charles's butler,
        re.compile(rf"{named}\s+(?:is|was)\s+{_DESCRIPTION}{_END}"),  # Stapleton is a naturalist
    ]


def _a_description(sentence: str, match: re.Match, appositive: bool) -> bool:
    """Whether `match` describes the name rather than addresses it: no verb in the description;
    an appositive not after a comma ("You will observe, Watson, the use of..." addresses
    Watson), and one that opens its sentence or a speech closed by a comma ("Barrymore, the
    butler, is..."; "Watson, the hound!" is a call)."""
    if any(w.lower() in _VERBS for w in match["said"].split()):
        return False
    if not appositive:
        return True
    before = sentence[: match.start()].rstrip()
    if before.endswith(","):
        return False
    return bool(before.rstrip(_OPENING)) or match["end"] == ","


def _norm(said: str) -> str:
    return " ".join(w for w in re.findall(r"[\w'’-]+", said.lower()) if w not in {"the", "a", "an"})


def described(question: str, evidence: Evidence) -> tuple[str, Quote, Description] | None:
    """The answer to a "Who is X?" question from `evidence`: the words that describe X as the
    book puts them beside the name, the sentence they are quoted from, and the Description
    (how often the packet says so); None when the question asks no name or no sentence
    describes it."""
    name = asked_name(question)
    if name is None:
        return None
    patterns = _patterns(name)
    found: list[tuple[str, str, Quote]] = []  # (the description's words, the answer span, its sentence)
    for pid, text, *_ in evidence:
        for start, end in sentence_spans(text):
            sentence = text[start:end]
            for pattern, appositive in zip(patterns, (True, False), strict=True):
                for match in pattern.finditer(sentence):
                    said = _norm(match["said"])
                    if not said or said in STOPWORDS or not _a_description(sentence, match, appositive):
                        continue
                    found.append((said, sentence[match.start() : match.end()], Quote(pid, sentence, start, end)))
    if not found:
        return None
    times = Counter(said for said, _, _ in found)
    best = max(times, key=lambda said: (times[said], -next(i for i, f in enumerate(found) if f[0] == said)))
    said, span, quote = next(f for f in found if f[0] == best)
    return span, quote, Description(name, said, times[best], len(found))
