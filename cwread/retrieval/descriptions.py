"""What the text sets beside a name to say who or what it is: an appositive ("Barrymore, the
butler") or a copula ("Stapleton is a naturalist"), told from a phrase that addresses the name
("Watson, the game is afoot!") or lists things after it. The answer's who-is question and the
book's cast read descriptions with these patterns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from cwread.text.words import ABBREVIATED, STOPWORDS, TITLES

# what opens a description: an article, a name's possessive ("Sir Charles's"), or "of" a place
# ("Mr. Frankland, of Lafter Hall"); not "his" ("Mr. Rochester, his foot on the cushion,")
_OPENS = r"(?:the|a|an|of(?=\s+[A-Z])|(?:[A-Z][\w-]*\s+){0,2}[A-Z][\w-]*['’]s)"
_ABBREVIATED = "|".join(ABBREVIATED)
DESCRIPTION_WORD = rf"(?:(?:{_ABBREVIATED})\.|(?!(?:{_ABBREVIATED})\.)[\w'’-]+)"  # "the late Mr. Darcy's steward": Mr. ends nothing
DESCRIPTION = rf"(?P<said>{_OPENS}\s+(?:{DESCRIPTION_WORD}\s+){{0,6}}?{DESCRIPTION_WORD})"  # "the Notting Hill murderer"
END = r"(?=\s*(?P<end>[,.;:!?)\"”—]|’(?!\w)|--|$))"  # ’ closes a speech, or is an apostrophe
# a verb in it makes a clause, not a description ("Watson, the game is afoot!": a vocative)
_VERBS = frozenset(
    {
        "is", "was", "are", "were", "be", "been", "being", "has", "have", "had", "will", "would",
        "shall", "should", "can", "could", "may", "might", "must", "do", "does", "did",
    }
)  # fmt: skip
# a description names no one by pronoun ("Sergeant Cuff, the better I liked him" is a clause)
_PRONOUNS = frozenset({"i", "me", "he", "him", "she", "her", "we", "us", "they", "them", "you", "it"})
# nor is it a time or a measure ("Betteredge, an hour since"; "Mr. Franklin, a little surprised")
_TIMES = frozenset(
    {
        "hour", "hours", "minute", "minutes", "moment", "day", "days", "week", "weeks", "month",
        "months", "year", "years", "time", "while", "morning", "evening", "night", "afternoon",
        "tomorrow", "yesterday", "today", "tonight", "deal",
    }
)  # fmt: skip
_MEASURES = frozenset({"little", "bit", "trifle", "few", "long", "next", "last"})  # "a little", "the next"
# a phrase cut after a degree word's adjective ("Mr. Darcy, a most intimate, confidential friend")
_DEGREE = frozenset({"most", "very", "so", "too", "more", "rather", "quite"})
# a list goes on after it: ", the visit to...", ", Hunter, Joyce", ", and Dr. Livesey were"
_ANOTHER_ITEM = re.compile(r",?\s+(?:(?:the|a|an|and)\s|[A-Z])")
_OPENING = "“\"‘'(—-"
# a name after one of these is its clause's object: a description, a relative clause and a verb
# after it ("thinking about Lucy Walford, the carpenter, who was in charge of the deck, approached
# him") open the next clause, whose subject the description is; with no relative clause the verb
# is most often an earlier subject's ("thoughts of what she would say to Ed Martin, the editor,
# made her feet skim"), and the description stays
_OBJECT_AFTER = frozenset(
    {
        "about", "of", "to", "with", "for", "from", "at", "on", "upon", "towards", "toward", "like",
        "than", "by", "after",
    }
)  # fmt: skip
_RELATIVE_THEN_VERB = re.compile(r",\s+(?:who|which|that)\b[^,;:.!?]*,\s+(?P<verb>[a-z]+)\b")
_VERBS_AFTER = frozenset(
    {
        "said", "came", "went", "was", "had", "took", "gave", "made", "saw", "stood", "sat", "ran",
        "told", "knew", "rose", "began",
    }
)  # fmt: skip
TITLE_BEFORE = "(?:" + "|".join(sorted((t.capitalize() for t in TITLES), key=len, reverse=True)) + r")\.?\s+"


def is_description(sentence: str, match: re.Match, appositive: bool) -> bool:
    """Whether `match` describes the name rather than addresses it: no verb or pronoun in the
    description, which opens with no time or measure;
    an appositive not after a comma ("You will observe, Watson, the use of..." addresses
    Watson), and one that opens its sentence or a speech closed by a comma ("Barrymore, the
    butler, is..."; "Watson, the hound!" is a call)."""
    words = [w.lower() for w in match["said"].split()]
    if any(w in _VERBS or w in _PRONOUNS or w in _TIMES for w in words) or (
        len(words) > 1 and words[1] in _MEASURES
    ):
        return False
    if len(words) > 2 and words[-2] in _DEGREE:
        return False
    before_words = sentence[: match.start()].split()
    if before_words and before_words[-1][:1].isupper() and before_words[-1].rstrip(".").lower() not in TITLES:
        return False  # another name before it: "Lady Lucas", "John Reed" name someone else
    if not appositive:
        return True
    if _ANOTHER_ITEM.match(sentence, match.end()):
        return False  # a list: "the advent of Mr. Collins, the visit to Hunsford, the Derbyshire tour"
    if (
        before_words
        and before_words[-1].lower() in _OBJECT_AFTER
        and (then := _RELATIVE_THEN_VERB.match(sentence, match.end()))
    ):
        verb = then["verb"]
        if verb.endswith("ed") or verb in _VERBS_AFTER:
            return False  # the next clause's subject, not the name's description
    before = sentence[: match.start()].rstrip()
    if before.endswith(","):  # "Her friend, Charlotte Lucas, the eldest daughter, came" is closed
        return match["end"] == ","
    return bool(before.rstrip(_OPENING)) or match["end"] == ","


def normalized(said: str) -> str:
    """A description's words in lower case, without articles and "of" ("naturalist", "sir charles's butler")."""
    return " ".join(w for w in re.findall(r"[\w'’-]+", said.lower()) if w not in {"the", "a", "an", "of"})


# a relation or role given by a possessive ("Mrs. Lennox, her aunt"; "my lawyer, Mr. Smith"):
# three words at most and none a function word, so a clause is no description ("Mr. Rochester,
# his foot on the cushion")
RELATION = r"(?P<said>(?:his|her|my|our|their|your)\s+(?:[a-z][\w'’-]*\s+){0,2}[a-z][\w'’-]*)"


# what a possessive's head must be to say who someone is: kin and roles ("her aunt", "my lawyer"),
# not "my voice, Countess" (a call) or "our gain"
RELATIONS = frozenset(
    {
        "mother", "father", "son", "daughter", "brother", "sister", "aunt", "uncle", "cousin",
        "nephew", "niece", "husband", "wife", "grandfather", "grandmother", "grandson",
        "granddaughter", "friend", "lawyer", "solicitor", "attorney", "doctor", "physician",
        "maid", "servant", "butler", "master", "mistress", "guardian", "ward", "fiance", "fiancé",
        "fiancée", "lover", "partner", "employer", "secretary", "nurse", "teacher", "tutor",
        "pupil", "landlord", "landlady", "neighbour", "neighbor", "housekeeper", "cook",
        "coachman", "valet", "steward", "agent", "clerk", "banker", "governess", "companion",
        "heir", "widow", "child", "sweetheart", "suitor", "rival", "enemy", "colleague",
        "assistant", "patron", "benefactor", "manager", "overseer", "parents", "children",
        "stepmother", "stepfather", "godmother", "godfather", "chum", "comrade", "captain",
        "employee", "boss", "nephews", "brothers", "sisters", "sons", "daughters", "friends",
    }
)  # fmt: skip


def is_relation(said: str) -> bool:
    """Whether a possessive's words name a relation or role (RELATIONS), not a clause or a time."""
    words = said.lower().split()[1:]
    if not words or any(w in STOPWORDS or w in _VERBS or w in _TIMES or w in _MEASURES for w in words):
        return False
    return words[-1] in RELATIONS


# what every description pattern holds: a cheap test that spares most paragraphs their sentences
_MAY_DESCRIBE = re.compile(
    r"\w,\s+(?:the|a|an|of|his|her|my|our|their|your|[A-Z][\w-]*['’]s)\s|\s(?:is|was)\s+(?:the|a|an|of)\s"
    r"|(?:his|her|my|our|their|your)\s+[a-z][\w'’-]*(?:\s+[a-z][\w'’-]*){0,2},\s+[A-Z]"
)
_NAME = rf"(?P<name>(?:{TITLE_BEFORE})*[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*){{0,3}})"
_APPOSITIVE = re.compile(rf"(?<![\w'’])(?=[A-Z]){_NAME},\s+{DESCRIPTION}{END}")
_COPULA = re.compile(rf"(?<![\w'’])(?=[A-Z]){_NAME}\s+(?:is|was)\s+{DESCRIPTION}{END}")
_HAS_RELATION = re.compile(rf"(?<![\w'’])(?=[A-Z]){_NAME},\s+{RELATION}{END}")  # Mrs. Lennox, her aunt,
_RELATION_OF = re.compile(rf"(?<![\w'’]){RELATION},\s+{_NAME}\b")  # my lawyer, Mr. Smith
_NAMED_THEN = re.compile(
    rf"(?<![\w'’])(?=[A-Z]){_NAME}(?:,\s+|\s+(?:is|was)\s+)(?=the\b|a\b|an\b|of\b|his\b|her\b|my\b|our\b|their\b|your\b|[A-Z])"
)
_NAMED_PATTERNS = ((_APPOSITIVE, True), (_COPULA, False), (_HAS_RELATION, True))


def descriptions_in(
    text: str, wanted: Callable[[str], bool] = lambda name: True
) -> Iterator[tuple[str, str, str, bool]]:
    """(name as written, description as said, the span that says it, whether an appositive) of
    each description of a `wanted` name in a paragraph."""
    if "," not in text and " is " not in text and " was " not in text:  # no description possible
        return
    if not _MAY_DESCRIBE.search(text):
        return  # most paragraphs: split into sentences only where a description may be
    spans = None
    # where a name is followed by ", the", " was a"...: one scan finds the places every pattern
    # that opens with a name could match, each then tried there in its sentence
    places = [(m.start(), m["name"], _NAMED_PATTERNS) for m in _NAMED_THEN.finditer(text)]
    places += [(m.start(), m["name"], ((_RELATION_OF, True),)) for m in _RELATION_OF.finditer(text)]
    for at, name, patterns in places:
        if not wanted(name):
            continue
        spans = spans or _sentences(text)  # the sentence it is in, matched again there
        start, end = next(((a, b) for a, b in spans if a <= at < b), (0, len(text)))
        sentence = text[start:end]
        for pattern, appositive in patterns:
            match = pattern.match(sentence, at - start)
            if match is None:
                continue
            if pattern is _APPOSITIVE or pattern is _COPULA:
                if not is_description(sentence, match, appositive):
                    continue
            elif not is_relation(match["said"]):
                continue
            said = " ".join(match["said"].split())
            if normalized(said) and normalized(said) not in STOPWORDS:
                yield match["name"], said, sentence[match.start() : match.end()], appositive


_SENTENCE_END = re.compile(r"[.!?][”’\"')\]]*\s+")


def _sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of a paragraph, cut after ".", "!" or "?" (not a title's full
    stop): a description's sentence, without the sentence splitter's cost."""
    spans, start = [], 0
    for end in _SENTENCE_END.finditer(text):
        if text[end.start()] == "." and last_word(text, end.start()).lower() in TITLES:
            continue
        spans.append((start, end.end()))
        start = end.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def last_word(text: str, at: int) -> str:
    """The word that ends before `at` in `text` ("" where none)."""
    words = text[max(0, at - 16) : at].split()
    return words[-1] if words else ""
