"""The book's cast: the people and places its text names, found from the text alone (no model,
on the CPU) when first asked for, then cached: each one's forms ("Sir Henry Baskerville", "Sir
Henry", "Baskerville"), the descriptions the text sets beside a name ("Stapleton, the
naturalist"; "Barrymore, the butler"), and the paragraphs that mention it. A question that calls
someone by a description ("what did the naturalist catch?") has the name added to the lexical
side of retrieval (the answer's paragraphs use the name, not the description), read from the
paragraphs that hold the question's words alone (`named_in_book`), with no whole cast built.

A name is a run of capitalized words inside a sentence, at least one of which the book writes
capitalized nearly always (a word that opens a sentence counts only where the book capitalizes
it elsewhere too). Forms are one name where one's words hold the other's ("Henry" of "Henry
Baskerville"), a woman's title kept apart ("Mrs. Barrymore" is not Barrymore). A form held by
several names ("Baskerville") is the one named in full most recently before it.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from cwread.book import Document
from cwread.book.chapters import is_heading
from cwread.cache import cache_root, read_entry, write_entry
from cwread.text.descriptions import (
    DESCRIPTION,
    END,
    RELATION,
    TITLE_BEFORE,
    is_description,
    is_relation,
    normalized,
)
from cwread.text.words import STOPWORDS, TITLES, WORD, word_stems

CAST_VERSION = 2  # of the cached cast: a change to how it is built bumps it

FEMALE_TITLES = frozenset(
    {"mrs", "miss", "ms", "madam", "madame", "mme", "mlle", "lady", "queen", "princess"}
)
# capitalized by custom, not as a name
_NOT_NAMES = frozenset(
    {
        "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january",
        "february", "march", "april", "may", "june", "july", "august", "september", "october",
        "november", "december", "god", "heaven", "heavens", "christmas", "easter", "english",
        "french", "german", "american", "british", "scotch", "irish", "italian", "spanish",
        "christian", "oh", "ah", "yes", "no", "mamma", "papa", "dear", "good", "well", "chapter",
    }
)  # fmt: skip
_PLACE_WORDS = frozenset(
    {
        "street", "hall", "house", "road", "lane", "square", "park", "court", "castle", "moor",
        "mire", "tor", "church", "abbey", "station", "hotel", "inn", "manor", "river", "lake",
        "mount", "island", "bay", "hill", "farm", "cottage", "place", "terrace", "gardens",
        "bridge", "town", "city", "village", "county", "valley", "harbour", "harbor", "creek",
        "falls", "fort", "point", "hospital", "college", "school", "club", "wood", "woods",
    }
)  # fmt: skip
_SPEECH = frozenset(
    {
        "said", "says", "cried", "asked", "answered", "replied", "remarked", "whispered",
        "exclaimed", "shouted", "continued", "added", "returned", "observed", "murmured",
    }
)  # fmt: skip
_PLACE_BEFORE = frozenset({"in", "at", "into", "near", "towards", "toward", "through"})
_MALE_TITLES = frozenset({"mr", "sir", "lord", "king", "prince", "monsieur", "messrs", "esq"})
NAME_SHARE = 0.8  # of a word's uses written capitalized for it to be a name's
MIN_MENTIONS = 2  # paragraphs a name is mentioned in, to be of the cast
MOST_DESCRIPTIONS = 6

# capitalized words in a row, one space apart ("Paris--the" is two words, the dash no space)
_CAPITALIZED = r"[A-Z](?:[A-Za-z'’]|-(?=[A-Za-z]))*\.?"
_RUN = re.compile(rf"(?<![\w'’-]){_CAPITALIZED}(?: {_CAPITALIZED})*")
_LOWER = re.compile(r"(?<![\w'’])[a-z][a-z'’-]*")
_PUNCTUATION = "“”‘’\"'.,;:!?()[]—-_"
# what every description pattern holds: a cheap test that spares most paragraphs their sentences
_MAY_DESCRIBE = re.compile(
    r"\w,\s+(?:the|a|an|of|his|her|my|our|their|your|[A-Z][\w-]*['’]s)\s|\s(?:is|was)\s+(?:the|a|an|of)\s"
    r"|(?:his|her|my|our|their|your)\s+[a-z][\w'’-]*(?:\s+[a-z][\w'’-]*){0,2},\s+[A-Z]"
)
_OPENERS = "“\"‘'(—-_[ "
_NAME = rf"(?P<name>(?:{TITLE_BEFORE})*[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*){{0,3}})"
_APPOSITIVE = re.compile(rf"(?<![\w'’])(?=[A-Z]){_NAME},\s+{DESCRIPTION}{END}")
_COPULA = re.compile(rf"(?<![\w'’])(?=[A-Z]){_NAME}\s+(?:is|was)\s+{DESCRIPTION}{END}")
_HAS_RELATION = re.compile(rf"(?<![\w'’])(?=[A-Z]){_NAME},\s+{RELATION}{END}")  # Mrs. Lennox, her aunt,
_RELATION_OF = re.compile(rf"(?<![\w'’]){RELATION},\s+{_NAME}\b")  # my lawyer, Mr. Smith
_NAMED_THEN = re.compile(
    rf"(?<![\w'’])(?=[A-Z]){_NAME}(?:,\s+|\s+(?:is|was)\s+)(?=the\b|a\b|an\b|of\b|his\b|her\b|my\b|our\b|their\b|your\b|[A-Z])"
)
_NAMED_PATTERNS = ((_APPOSITIVE, True), (_COPULA, False), (_HAS_RELATION, True))
_DESCRIBING = (
    (_APPOSITIVE, True),
    (_COPULA, False),
    (_HAS_RELATION, True),
    (_RELATION_OF, True),
)  # appositive?


@dataclass(frozen=True)
class Description:
    """What the text sets beside a name: its words as first said (`said`, "the naturalist"),
    the sentence's span that says it, where (`pid`), and how often the book says it."""

    said: str
    span: str
    pid: int
    times: int


@dataclass(frozen=True)
class CastMember:
    """A person or place the book names: `name` (its fullest form, with the title it is most
    often given), `kind` ("person", "place" or "name" where the text does not tell), its
    `forms` as written, most used first, the paragraphs mentioning it, and its descriptions
    (said most often first)."""

    name: str
    kind: str
    forms: tuple[str, ...]
    mentions: tuple[int, ...]
    descriptions: tuple[Description, ...] = ()

    @property
    def words(self) -> str:
        """The words of its forms, each once, titles left out: what retrieval looks for."""
        seen: dict[str, None] = {}
        for form in self.forms:
            for word in form.split():
                if word.lower().rstrip(".") not in TITLES:
                    seen.setdefault(word, None)
        return " ".join(seen)


@dataclass(frozen=True)
class Named:
    """A description in a question that the cast takes for a name: whom, and the description
    of theirs that the question's words match."""

    member: CastMember
    description: Description


@dataclass(frozen=True)
class Cast:
    """A book's cast, the most mentioned first."""

    members: tuple[CastMember, ...]

    def lookup(self, query: str) -> list[CastMember]:
        """The members `query` names (a form's words) or describes (a description's words),
        best first: a name's match before a description's."""
        words = [w.lower() for w in WORD.findall(query) if w.lower() not in TITLES]
        if not words:
            return []
        wanted = set(words)
        by_name = [m for m in self.members if wanted <= {w.lower() for w in m.words.split()}]
        stems = set(word_stems([w for w in words if w not in STOPWORDS]))
        scored = []
        for member in self.members:
            if member in by_name:
                continue
            best = max((_overlap(d.said, stems) for d in member.descriptions), default=0.0)
            if best > 0:
                scored.append((-best, member))
        scored.sort(key=lambda pair: pair[0])  # stable: the most mentioned first on a tie
        return by_name + [m for _, m in scored]

    def meetings(self, member: CastMember) -> list[tuple[CastMember, list[int]]]:
        """The other members mentioned in the same paragraphs as `member`, the most such
        paragraphs first, each with them (where two names meet: a scene of theirs)."""
        own = set(member.mentions)
        met = [
            (other, sorted(own.intersection(other.mentions))) for other in self.members if other is not member
        ]
        met = [(other, shared) for other, shared in met if shared]
        met.sort(key=lambda pair: -len(pair[1]))
        return met

    def named_in(self, question: str) -> list[Named]:
        """The members a question calls by a description and not by name ("the naturalist"
        for Stapleton): a description whose head ("naturalist", "lawyer", "brother") is in the
        question, a relation's with its every other word ("the younger brother of Sir Charles",
        not "his brother"), of one member only or matching more of its words than any other's.
        A place beside a name ("of Merripit House") says where, not who."""
        lowered = {w.lower() for w in WORD.findall(question)}
        stems = set(word_stems([w for w in lowered if w not in STOPWORDS]))
        best: dict[str, tuple[float, int, CastMember, Description]] = {}
        tied: set[str] = set()
        for member in self.members:
            if any(w.lower() in lowered for w in member.words.split()):
                continue  # named already
            for d in member.descriptions:
                head = description_head(d.said)
                if head is None or word_stems([head])[0] not in stems:
                    continue
                score = _overlap(d.said, stems)
                if head in KIN and score < 1.0 and len(_content(d.said)) > 1:
                    continue  # "the farmer's wife" is not whoever's wife a question asks of
                key = (score, d.times)
                held = best.get(head)
                if held is None or key > held[:2]:
                    best[head] = (*key, member, d)
                    tied.discard(head)
                elif key == held[:2] and held[2] is not member:
                    tied.add(head)
        out: dict[int, Named] = {}
        for head, (_, _, member, d) in best.items():
            if head not in tied:
                out.setdefault(id(member), Named(member, d))
        return list(out.values())


# who someone is to another: such a description names someone only with its every word
KIN = frozenset(
    {
        "mother", "father", "son", "daughter", "brother", "sister", "aunt", "uncle", "cousin",
        "nephew", "niece", "husband", "wife", "grandfather", "grandmother", "grandson",
        "granddaughter", "friend", "widow", "child", "parents", "children", "sweetheart", "lover",
        "fiance", "fiancé", "fiancée", "sons", "daughters", "brothers", "sisters", "friends",
    }
)  # fmt: skip
# where a description's head ends: a preposition or a relative ("the man who escaped")
_PREPOSITIONS = frozenset(
    {
        "of",
        "at",
        "in",
        "from",
        "to",
        "with",
        "for",
        "on",
        "near",
        "by",
        "who",
        "whom",
        "whose",
        "which",
        "that",
    }
)
# heads that say nothing of whom ("the man", "a fellow")
_GENERIC = frozenset(
    {
        "man",
        "woman",
        "men",
        "women",
        "one",
        "fellow",
        "person",
        "gentleman",
        "lady",
        "girl",
        "boy",
        "creature",
        "people",
    }
)


def description_head(said: str) -> str | None:
    """The noun a description is about: its last word before a preposition ("banker" of "the
    banker at Frizinghall", "brother" of "the younger brother of Sir Charles"), a possessive's
    owner passed ("butler" of "Sir Charles's butler"); None for a place ("of Lafter Hall")."""
    words = [w.strip('.,;:!?"“”‘’()').lower() for w in said.split()]  # "kitchen-maid" whole: no maid
    if not words or words[0] in _PREPOSITIONS:
        return None
    cut = next((i for i, w in enumerate(words) if w in _PREPOSITIONS), len(words))
    kept = [w for w in words[:cut] if w and w not in STOPWORDS]
    head = kept[-1] if kept else None
    return None if head is None or head in _GENERIC or head.endswith(("'s", "’s")) else head


def _content(said: str) -> list[str]:
    return [w for w in normalized(said).split() if w not in STOPWORDS and w.rstrip("'’s") not in TITLES]


def _overlap(said: str, stems: set[str]) -> float:
    """The share of a description's content words that are among `stems` (a question's)."""
    words = _content(said)
    if not words:
        return 0.0
    return sum(s in stems for s in word_stems(words)) / len(words)


# ---------------------------------------------------------------- building


@dataclass
class _Form:
    key: tuple[str, ...]  # its words, titles left out
    female: str  # a woman's title as the key keeps it ("miss", "mrs"), else ""
    times: int = 0
    titles: Counter = None  # type: ignore[assignment]
    person: int = 0  # uses that say a person: a title, a verb of speech beside it
    place: int = 0  # uses after "in", "at", "near"...
    male: bool = False  # given a man's title ("Mr.", "Sir")

    def __post_init__(self) -> None:
        self.titles = Counter()

    @property
    def shown(self) -> str:
        title = self.titles.most_common(1)[0][0] if self.titles else ""
        return f"{title} {' '.join(self.key)}".strip()


def build_cast(texts: Sequence[str], skip: frozenset[int] = frozenset()) -> Cast:
    """The cast of a book whose paragraphs are `texts` (ids from 1), leaving out the ids in
    `skip` (front and back matter) and headings."""
    read = [(pid, text) for pid, text in enumerate(texts, 1) if pid not in skip and not is_heading(text)]
    lower: Counter[str] = Counter()
    capital: Counter[str] = Counter()
    runs: list[
        tuple[int, list[str], bool, str, str]
    ] = []  # pid, words, opens a sentence, word before, word after
    for pid, text in read:
        lower.update(_LOWER.findall(text))
        runs += _runs(pid, text, capital)
    name_words = {
        w
        for w, n in capital.items()
        if n >= MIN_MENTIONS and n >= NAME_SHARE * (n + lower[w.lower()]) and _may_name(w)
    }
    forms: dict[tuple[tuple[str, ...], bool], _Form] = {}
    uses: list[tuple[int, tuple[tuple[str, ...], bool], str]] = []  # pid, form, as written
    for pid, words, opens, before, after in runs:
        found = _name_in(words, opens, name_words)
        if found is None:
            continue
        titles, key = found
        female = next((t.lower().rstrip(".") for t in titles if t.lower().rstrip(".") in FEMALE_TITLES), "")
        form = forms.setdefault((key, female), _Form(key, female))
        form.times += 1
        form.male = form.male or any(t.lower().rstrip(".") in _MALE_TITLES for t in titles)
        if titles:
            form.titles[" ".join(titles)] += 1
        form.person += (
            any(t.lower() not in ("st", "st.") for t in titles) or before in _SPEECH or after in _SPEECH
        )
        form.place += before in _PLACE_BEFORE
        uses.append((pid, (key, female), " ".join((*titles, *key))))
    return _grouped(forms, uses, read)


def _runs(pid: int, text: str, capital: Counter[str]) -> list[tuple[int, list[str], bool, str, str]]:
    """The runs of capitalized words in a paragraph, each with whether it opens a sentence (or a
    speech), and the words beside it; `capital` counts the words written so inside a sentence.
    Regular expressions, not a sentence splitter: a novel's cast is built in a fraction of its
    index's time."""
    out = []
    for run in _RUN.finditer(text):
        words = run.group().split(" ")
        if len(words) == 1 and words[0].lower() in STOPWORDS:
            continue  # "The", "He", "I": most runs, and none a name
        opens = _opens(text, run.start())
        start = run.start()
        while words:  # a run ends at a full stop that ends a sentence and at a possessive
            cut = next(
                (
                    k
                    for k, w in enumerate(words[:-1])
                    if _possessive(w) or (w.endswith(".") and w[:-1].lower() not in TITLES)
                ),
                len(words) - 1,
            )
            part, words = words[: cut + 1], words[cut + 1 :]
            ends_sentence = part[-1].endswith(".") and part[-1][:-1].lower() not in TITLES
            part = [w for w in part if not _shouted(w)]
            if part:
                for k, word in enumerate(part):
                    if not (k == 0 and opens):
                        capital[_bare(word)] += 1
                end = start + len(" ".join(part))
                before = text[max(0, start - 24) : start].split()
                after = text[end : end + 24].split()
                out.append(
                    (
                        pid,
                        part,
                        opens,
                        before[-1].strip(_PUNCTUATION).lower() if before else "",
                        after[0].strip(_PUNCTUATION).lower() if after else "",
                    )
                )
                start = end + 1
            opens = ends_sentence
    return out


def _opens(text: str, at: int) -> bool:
    """Whether the word at `at` opens a sentence or a speech: the paragraph's first, after a
    sentence's end (not a title's full stop) or an opening quote, dash or colon."""
    before = text[max(0, at - 40) : at].rstrip()
    if not before:
        return True
    if before[-1] in _OPENERS or before[-1] == ":":
        return True
    closed = before.rstrip("”’\"')]")
    if closed[-1:] in ("!", "?"):
        return True
    return closed[-1:] == "." and _last_word(closed, len(closed) - 1).lower() not in TITLES


def _shouted(word: str) -> bool:
    return len(word) > 1 and word.rstrip(".").isupper()


def _possessive(word: str) -> bool:
    return word.endswith(("'s", "’s"))


def _bare(word: str) -> str:
    """A word without its possessive or full stop ("Holmes's" -> "Holmes")."""
    word = word.rstrip(".")
    return word[:-2] if _possessive(word) else word.rstrip("'’")


def _may_name(word: str) -> bool:
    low = word.lower()
    return (
        len(word) > 1
        and not low.startswith(("i'", "i’"))
        and low not in STOPWORDS
        and low not in TITLES
        and low not in _NOT_NAMES
    )


def _name_in(words: list[str], opens: bool, name_words: set[str]) -> tuple[list[str], tuple[str, ...]] | None:
    """A run's titles and its name's words, or None where it holds no name: the words that
    open a sentence and are no name's ("Then Holmes") and function words are dropped."""
    bare = [_bare(w) for w in words]
    start = 0
    if opens:
        while start < len(bare) and bare[start] not in name_words and bare[start].lower() not in TITLES:
            start += 1
    titles: list[str] = []
    while start < len(bare) and bare[start].lower() in TITLES:
        titles.append(words[start])  # as written: "Mr.", "Sir"
        start += 1
    end = len(bare)
    while start < end and bare[start] not in name_words:
        start += 1  # "November Katrine"
    while end > start and bare[end - 1] not in name_words and bare[end - 1].lower() not in _PLACE_WORDS:
        end -= 1  # "Mr. Ravenel Dangerously Ill", a headline
    key = tuple(bare[start:end])
    if not key or not any(w in name_words for w in key) or any(w.lower() in STOPWORDS for w in key):
        return None
    if len(key) > 4:
        return None  # a title of a work, a heading in a sentence: no name
    return titles, key


def _grouped(
    forms: dict[tuple[tuple[str, ...], bool], _Form],
    uses: list[tuple[int, tuple[tuple[str, ...], bool], str]],
    read: list[tuple[int, str]],
) -> Cast:
    """Forms gathered into members (see the module's docstring), with their mentions and
    descriptions."""
    order = sorted(forms.values(), key=lambda f: (-len(f.key), -f.times, f.key))
    owners: dict[tuple[tuple[str, ...], bool], list[int]] = {}  # a form's members (indexes into heads)
    heads: list[_Form] = []
    holding: dict[str, set[int]] = defaultdict(set)  # a word -> the heads whose name holds it
    joined: dict[int, set[str]] = defaultdict(set)  # a head -> the sexes its joined forms' titles say
    for form in order:
        within = (
            set.intersection(*(holding[w] for w in form.key))
            if all(w in holding for w in form.key)
            else set()
        )
        holders = sorted(i for i in within if _may_join(form, heads[i], joined[i]) and not _placed(heads[i]))
        if len(form.key) > 1 and len(holders) > 1:
            holders = holders[:1]
        if holders:
            owners[(form.key, form.female)] = holders
            for i in holders:  # "Miss Lloyd" joined: "Mr. Sherman" (her father) may not
                joined[i] |= {"female"} if form.female else {"male"} if form.male else set()
        else:
            owners[(form.key, form.female)] = [len(heads)]
            if (
                len(form.key) <= 2 or form.times >= MIN_MENTIONS
            ):  # "Prince Hero Keith MacIntyre" once: no one's
                for w in form.key:
                    holding[w].add(len(heads))
            heads.append(form)
    mentions: dict[int, set[int]] = defaultdict(set)
    member_forms: dict[int, Counter] = defaultdict(Counter)
    last_full: dict[int, int] = {}  # member -> the last use of its own name in full
    for at, (pid, key, written) in enumerate(uses):
        holders = owners[key]
        if len(holders) == 1:
            member = holders[0]
        else:
            member = max(holders, key=lambda i: (last_full.get(i, -1), heads[i].times))
        if key == (heads[member].key, heads[member].female):
            last_full[member] = at
        mentions[member].add(pid)
        member_forms[member][written] += 1
    person: Counter[int] = Counter()
    place: Counter[int] = Counter()
    for key, holders in owners.items():
        for i in holders:
            person[i] += forms[key].person
            place[i] += forms[key].place
    members = []
    for i, head in enumerate(heads):
        if len(mentions[i]) < MIN_MENTIONS:
            continue
        if _placed(head):
            kind = "place"
        elif person[i] and 2 * person[i] >= place[i]:
            kind = "person"
        elif place[i] >= MIN_MENTIONS:
            kind = "place"
        else:
            kind = "name"
        shown = [f for f, _ in member_forms[i].most_common()]
        name = max(
            shown,
            key=lambda f: (
                len([w for w in f.split() if w.lower().rstrip(".") not in TITLES]),
                member_forms[i][f],
            ),
        )
        members.append(CastMember(name, kind, tuple(shown), tuple(sorted(mentions[i]))))
    members.sort(key=lambda m: (-len(m.mentions), m.name))
    return Cast(tuple(_described(members, read)))


def _may_join(form: _Form, head: _Form, joined: set[str]) -> bool:
    """Whether `form` may be a form of `head`'s name: the same woman's title or none, or "Miss
    Rachel" of a full name no man's title is given ("Rachel Verinder"; "Lady Verinder" is her
    mother, "Mrs. Barrymore" not Barrymore); never a man's title where a woman's joined it
    (`joined`: what the titles of the forms joined so far say), nor the other way round."""
    if form.male and (head.female or "female" in joined):
        return False
    if form.female == head.female:
        return True
    return (
        form.female == "miss"
        and not head.female
        and len(head.key) > 1
        and not head.male
        and "male" not in joined
    )


def _placed(form: _Form) -> bool:
    return form.key[-1].lower() in _PLACE_WORDS


def _described(members: list[CastMember], read: list[tuple[int, str]]) -> list[CastMember]:
    """The members with the descriptions the text sets beside their names (`_kept`)."""
    by_form: dict[tuple[str, ...], CastMember] = {}
    for member in reversed(members):  # the most mentioned member wins a form two share
        for form in member.forms:
            by_form[_form_key(form)] = member
    found: dict[str, dict[str, list]] = defaultdict(dict)  # a member's name -> its descriptions (_tally)
    for pid, text in read:
        for name, said, span, appositive in _descriptions_in(text, lambda name: _form_key(name) in by_form):
            _tally(found[by_form[_form_key(name)].name], said, span, pid, appositive)
    return [
        CastMember(member.name, member.kind, member.forms, member.mentions, _kept(found.get(member.name, {})))
        for member in members
    ]


def _tally(found: dict[str, list], said: str, span: str, pid: int, appositive: bool) -> None:
    """Count one saying of a description in `found` (its words without articles -> [the span
    first said, its paragraph, times said, said as an appositive, its words as first said])."""
    entry = found.setdefault(normalized(said), [span, pid, 0, False, said])
    entry[2] += 1
    entry[3] = entry[3] or appositive


def _kept(found: dict[str, list]) -> tuple[Description, ...]:
    """The descriptions tallied that say who someone is, said most often first: an appositive,
    or a copula said more than once (describe's rule: "Arthur was the first" says what someone
    was at a moment)."""
    kept = [
        Description(said, span, pid, times)
        for span, pid, times, appositive, said in found.values()
        if appositive or times > 1
    ]
    kept.sort(key=lambda d: (-d.times, d.pid))
    return tuple(kept[:MOST_DESCRIPTIONS])


def _descriptions_in(text: str, wanted=lambda name: True):
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


def named_in_book(document: Document, question: str) -> list[Named]:
    """Whom a question calls by a description (Cast.named_in), read from the paragraphs that
    hold one of the question's words alone: each name described there is a member, so no cast
    of the whole book is built (a question costs a scan of the book's text for its words, and
    the book's indexing nothing)."""
    stems = {
        s
        for s in word_stems([w.lower() for w in WORD.findall(question)])
        if s not in STOPWORDS and len(s) > 2
    }
    if not stems:
        return []
    found: dict[tuple[str, ...], tuple[str, dict[str, list]]] = {}
    for pid, text, lowered in _story(document):
        if not any(stem in lowered for stem in stems):
            continue
        for name, said, span, appositive in _descriptions_in(text, _a_name):
            _, tally = found.setdefault(_form_key(name), (name, {}))
            _tally(tally, said, span, pid, appositive)
    members = [CastMember(name, "name", (name,), (), _kept(tally)) for name, tally in found.values()]
    return Cast(tuple(m for m in members if m.descriptions)).named_in(question)


_STORIES: dict[str, list[tuple[int, str, str]]] = {}  # by fingerprint: a session asks again


def _story(document: Document) -> list[tuple[int, str, str]]:
    """The paragraphs a cast is read from, each with its text in lower case: the story's,
    headings left out (held for the next question of the same book)."""
    held = _STORIES.get(document.fingerprint)
    if held is None:
        if len(_STORIES) >= HELD_CASTS:
            _STORIES.pop(next(iter(_STORIES)))
        skip = document.unread
        held = _STORIES[document.fingerprint] = [
            (p.id, p.text, p.text.lower())
            for p in document.paragraphs
            if p.id not in skip and not is_heading(p.text)
        ]
    return held


def _a_name(name: str) -> bool:
    """Whether words before a description name someone: a word of them no function word ("I",
    "This" open sentences)."""
    return any(
        w.lower().rstrip(".") not in STOPWORDS and w.lower().rstrip(".") not in TITLES for w in name.split()
    )


_SENTENCE_END = re.compile(r"[.!?][”’\"')\]]*\s+")


def _sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of a paragraph, cut after ".", "!" or "?" (not a title's full
    stop): a description's sentence, without the sentence splitter's cost."""
    spans, start = [], 0
    for end in _SENTENCE_END.finditer(text):
        if text[end.start()] == "." and _last_word(text, end.start()).lower() in TITLES:
            continue
        spans.append((start, end.end()))
        start = end.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def _last_word(text: str, at: int) -> str:
    words = text[max(0, at - 16) : at].split()
    return words[-1] if words else ""


def _form_key(form: str) -> tuple[str, ...]:
    """A form's words as a lookup key: titles dropped but a woman's ("Mrs. Barrymore" is not
    Barrymore)."""
    words = [_bare(w) for w in form.split()]
    female = next((w.lower() for w in words if w.lower() in FEMALE_TITLES), "")
    return (*(w for w in words if w.lower() not in TITLES), female)


# ---------------------------------------------------------------- cached per book


_HELD: dict[str, Cast] = {}  # by fingerprint: a session asks many questions of one book
HELD_CASTS = 8


def book_cast(document: Document) -> Cast:
    """`document`'s cast, held, from the cache entry of its paragraphs, or built (and cached)."""
    held = _HELD.get(document.fingerprint)
    if held is None:
        if len(_HELD) >= HELD_CASTS:
            _HELD.pop(next(iter(_HELD)))
        held = _HELD[document.fingerprint] = _cached_cast(document)
    return held


def _cached_cast(document: Document) -> Cast:
    entry = cache_root() / "docs" / document.fingerprint[:2] / document.fingerprint / f"cast-v{CAST_VERSION}"
    if read_entry(entry, lambda m: m.get("paragraphs") == len(document)) is not None:
        try:
            return cast_from_json(json.loads((entry / "cast.json").read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            pass  # unreadable: built again below
    cast = build_cast([p.text for p in document.paragraphs], document.unread)

    def write(tmp) -> dict:
        (tmp / "cast.json").write_text(json.dumps(cast_to_json(cast)), encoding="utf-8")
        return {"paragraphs": len(document)}

    write_entry(entry, write)
    return cast


def cast_to_json(cast: Cast) -> list[dict]:
    return [
        {
            "name": m.name,
            "kind": m.kind,
            "forms": list(m.forms),
            "mentions": list(m.mentions),
            "descriptions": [[d.said, d.span, d.pid, d.times] for d in m.descriptions],
        }
        for m in cast.members
    ]


def cast_from_json(data: list[dict]) -> Cast:
    return Cast(
        tuple(
            CastMember(
                str(m["name"]),
                str(m["kind"]),
                tuple(map(str, m["forms"])),
                tuple(int(p) for p in m["mentions"]),
                tuple(Description(str(s), str(span), int(p), int(t)) for s, span, p, t in m["descriptions"]),
            )
            for m in data
        )
    )
