"""What a question asks for, where its words say so (a colour, a count, a time, a name), and
whether an answer holds such a thing: a reader asks "What colour was the Giant's hat?" of a
text that never says, and the sentence that fits the question best ("He was a very selfish
Giant") is no answer to it.

Measured on questions the text never answers, beside those it does (benchmarks/README.md,
"Questions the text never answers"): on the train tales this check declined 70 of 97 such
questions against 10 before and withheld 1 of 105 answerable ones. Why- and how-questions
ask for no kind of word, and are left to the scores.
"""

from __future__ import annotations

import re

from cwread.records.stages import AskedFor
from cwread.text.words import WORD, without_possessive, word_stems

COLOURS = frozenset(
    [
        "red", "blue", "green", "yellow", "white", "black", "brown", "grey", "gray", "golden", "gold",
        "silver", "silvery", "purple", "pink", "orange", "scarlet", "crimson", "violet", "rosy", "rose",
        "azure", "amber", "ivory", "snowy", "snow-white", "blood-red", "coal-black", "dark", "fair", "pale",
        "bright", "russet", "tawny", "chestnut", "auburn", "copper", "emerald", "ruby", "sapphire", "dun",
        "bay", "dappled", "piebald", "flaxen", "jet", "milk-white", "lilac", "lavender"
    ]
)  # fmt: skip
NUMBERS = frozenset(
    [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
        "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty",
        "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred", "thousand",
        "million", "dozen", "score", "once", "twice", "thrice", "half"
    ]
)  # fmt: skip
ORDINALS = frozenset(
    [
        "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
        "eleventh", "twelfth", "last"
    ]
)  # fmt: skip
MONTHS = frozenset(
    [
        "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
        "november", "december"
    ]
)  # fmt: skip
DAYS = frozenset(
    [
        "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "sabbath",
        "christmas", "easter", "midsummer", "yesterday", "tomorrow", "today"
    ]
)  # fmt: skip
SEASONS = frozenset(
    [
        "spring", "summer", "autumn", "fall", "winter", "harvest", "midsummer", "midwinter"
    ]
)  # fmt: skip
HOURS = frozenset(
    [
        "morning", "evening", "night", "noon", "midnight", "dawn", "dusk", "sunrise", "sunset", "afternoon",
        "daybreak", "twilight", "o'clock", "midday", "nightfall"
    ]
)  # fmt: skip
# the words that answer "what <unit>": "what month" a month's name, "what year" a number
TIME_WORDS = {
    "month": MONTHS,
    "day": DAYS | ORDINALS | MONTHS,
    "date": DAYS | ORDINALS | MONTHS,
    "season": SEASONS | MONTHS,
    "year": NUMBERS | ORDINALS,
    "week": DAYS | ORDINALS | NUMBERS,
    "time": HOURS | DAYS | SEASONS | MONTHS,
    "hour": HOURS | NUMBERS,
}
NEAR_COUNT = 3  # words after a number within which the thing counted stands ("three tall sons")

# each read where the question's own question word stands ("How did the saint feel when the
# church made rapid progress and how much..." asks how he felt, not how much)
_WH = re.compile(r"\b(?:what|which|how|who|whom|whose|where|when|why)\b")
_COLOUR = re.compile(r"(?:what|which) (?:shade of )?colou?rs?\b")
_COUNT = re.compile(r"how (?:many|much) (\w+)")
_NUMBER = re.compile(
    r"how (?:many|much|old|long|far|often|tall|big|high|deep|wide|heavy)\b|what (?:age|number)\b"
)
_TIME = re.compile(r"(?:what|which) (month|day|year|season|time|hour|date|week)\b")
_PLACE = re.compile(
    r"(?:what|which) (?:town|city|country|village|kingdom|land|street|island|county|province|realm|castle|"
    r"church|forest|river|mountain)\b"
)
_NAME = re.compile(
    r"what (?:was|is|were|are) (?:the|his|her|their|its|this|that) (?:\w+ )?names?\b"
    r"|what (?:was|is|were|are) .{0,80}?['’]s? names?\b"
    r"|what (?:was|is|were|are) .{0,80}\b(?:called|named)\b|(?:by )?what name\b|what (?:was|is) the title\b"
)


def asked_for(question: str) -> AskedFor | None:
    """What `question` asks for where its words say ("what colour", "how many men", "in what
    month", "in which town", "what was the name of"); None for a question that asks for no
    kind of word (why, how, what happened)."""
    q = question.lower()
    asking = [part for part in re.split(r"(?<=[.?!])\s+", q) if _WH.search(part)]
    if not asking:
        return None
    rest = asking[-1][_WH.search(asking[-1]).start() :]  # from the question word of its last question
    if _COLOUR.match(rest):
        return AskedFor("colour")
    counted = _COUNT.match(rest)
    if counted:
        return AskedFor("count", counted.group(1))
    if _NUMBER.match(rest):
        return AskedFor("number")
    unit = _TIME.match(rest)
    if unit:
        return AskedFor("time", unit.group(1))
    if _PLACE.match(rest):
        return AskedFor("place name")
    if _NAME.match(rest):
        return AskedFor("name")
    return None


def holds(
    asked: AskedFor, question: str, answer: str, sentence: str, lowercase_words: frozenset[str]
) -> bool:
    """Whether `answer` (from `sentence`) holds what was `asked` for: a colour word; a number
    (for a count, beside the thing counted, in its sentence); a word of the time asked (a
    month's name for "what month"); a name, a word the question does not hold and the book
    never writes in lower case (`lowercase_words`: "Two months" is no name, "Gemdelovely" is)."""
    words = WORD.findall(answer)
    lower = {w.lower() for w in words}
    if asked.kind == "colour":
        return bool(lower & COLOURS)  # "blood-red" is two words, "red" one of them
    if asked.kind in ("count", "number"):
        if not (lower & NUMBERS or any(w[0].isdigit() for w in words)):
            return False
        if asked.kind == "number" or asked.detail is None:
            return True
        counted = word_stems([asked.detail.lower()])[0]
        said = [w.lower() for w in WORD.findall(sentence)]
        return any(
            (word in NUMBERS or word[0].isdigit()) and counted in word_stems(said[i + 1 : i + 1 + NEAR_COUNT])
            for i, word in enumerate(said)
        )
    if asked.kind == "time":
        wanted = TIME_WORDS.get(asked.detail or "time", HOURS)
        return bool(lower & wanted) or any(w[0].isdigit() for w in words)
    asked_words = {without_possessive(w.lower()) for w in WORD.findall(question)}  # "the Giant's wife" asks of Giant
    return any(
        w[0].isupper() and w.lower() not in lowercase_words and without_possessive(w.lower()) not in asked_words
        for w in words
    )
