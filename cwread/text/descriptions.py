"""What the text sets beside a name to say who or what it is: an appositive ("Barrymore, the
butler") or a copula ("Stapleton is a naturalist"), told from a phrase that addresses the name
("Watson, the game is afoot!") or lists things after it. The answer's who-is question and the
book's cast read descriptions with these patterns.
"""

from __future__ import annotations

import re

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
