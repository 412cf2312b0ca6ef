"""Words as cwread reads them: one word pattern (and one for an index's terms), the function words no search or check counts,
the titles that stand before a name, and word stems (irregular forms taken to their base)."""

from __future__ import annotations

import re
from functools import lru_cache

# a word: letters and digits, with inner apostrophes ("didn't", "O'Brien")
WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
# a run of letters alone: a name's words ("Henry's" names Henry), a word's case
LETTERS = re.compile(r"[^\W\d_]+")
# an index term: two word characters or more, an apostrophe between two (scikit-learn's token
# pattern, which bm25s.tokenize uses; SQLite FTS5's unicode61 tokenizer splits words alike): what
# the lexical indexes hold (BM25 over a book, FTS5 over a library) and a query is matched by
TERM = re.compile(r"(?u)\b\w\w+\b")

# Titles before a name (lower case): not names themselves, and a sentence does not end at one
# written short with its full stop ("Dr. Mortimer"). ABBREVIATED are those written so.
TITLES = frozenset(
    {
        "mr", "mrs", "ms", "miss", "madam", "madame", "mme", "mlle", "mademoiselle", "monsieur", "messrs", "dr",
        "st", "sir", "lady", "lord", "king", "queen", "prince", "princess", "captain", "capt",
        "colonel", "col", "rev", "prof", "sgt", "esq",
    }
)  # fmt: skip
# capitalized by custom, not as a name (a cast's members, a question's description read as a name)
NOT_NAMES = frozenset(
    {
        "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january",
        "february", "march", "april", "may", "june", "july", "august", "september", "october",
        "november", "december", "god", "heaven", "heavens", "christmas", "easter", "english",
        "french", "german", "american", "british", "scotch", "irish", "italian", "spanish",
        "christian", "oh", "ah", "yes", "no", "mamma", "papa", "dear", "good", "well", "chapter",
        "jove", "african", "esquimau", "belgian", "russian", "englishman", "englishmen", "frenchman",
        "dutch", "swiss", "austrian", "prussian", "egyptian", "chinese", "japanese", "neolithic",
        "belgians", "russians", "germans", "americans", "italians", "frenchmen", "polish", "jew", "jews",
    }
)  # fmt: skip
ABBREVIATED = ("Mr", "Mrs", "Ms", "Dr", "St", "Messrs", "Mme", "Mlle", "Capt", "Col", "Rev", "Prof", "Sgt", "Esq")


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
def stemmer():
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
    return stemmer().stemWords([IRREGULAR.get(w, w) for w in words])


def without_possessive(word: str) -> str:
    """A word without its possessive ending ("Holmes's" -> "Holmes", "Giants’" -> "Giants")."""
    return word[:-2] if word.endswith(("'s", "’s")) else word.rstrip("'’")


def counted(count: int, noun: str, nouns: str = "") -> str:
    """A count and its noun, agreed: "1 book", "2 books", "1,500 paragraphs" (`nouns`: the
    plural where it is not the noun and s)."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"
