"""Building a book's cast from its text (see cwread.retrieval.cast), and keeping it: names are
runs of capitalized words, gathered into members by their forms, each with its mentions and
the descriptions set beside it; a book's cast is cached with its paragraphs (`book_cast`)."""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from cwread.book import Document
from cwread.book.chapters import is_heading
from cwread.cache import cache_root, read_entry, write_entry
from cwread.retrieval.cast import (
    FEMALE_TITLES,
    MIN_MENTIONS,
    Cast,
    CastMember,
    Description,
    _bare,
    _form_key,
    _hold,
    _kept,
    _possessive,
    _tally,
)
from cwread.retrieval.descriptions import descriptions_in, last_word
from cwread.text.words import NOT_NAMES, STOPWORDS, TITLES

CAST_VERSION = 7  # of the cached cast: a change to how it is built bumps it (4: a story ends at its last "THE END"; "Home" ends a place; 6: "she" read for "Mrs."; 7: a description, a relative clause and a verb after a name that is an object: the next clause's subject)

# an office: a form of the name it stands in ("the Sergeant" of "Sergeant Cuff"), alone no member ("the Coroner")
_ROLES = frozenset(
    {
        "coroner", "inspector", "superintendent", "sergeant", "constable", "detective", "magistrate",
        "judge", "vicar", "rector", "doctor", "professor", "president", "commissioner", "governor",
        "mayor", "chairman", "secretary", "matron",
    }
)  # fmt: skip
# words capitalized before a name that are no part of it: kin and calls ("Uncle Charlie", "Poor Sir
# Charles"); any other capitalized word inside a sentence is the name's ("New York", "Turpey Street")
_BEFORE_NAMES = frozenset(
    {
        "uncle", "aunt", "cousin", "brother", "sister", "father", "mother", "grandfather",
        "grandmother", "granny", "poor", "old", "young", "master", "honourable", "honorable",
    }
)  # fmt: skip
_PLACE_WORDS = frozenset(
    {
        "street", "hall", "house", "road", "lane", "square", "park", "court", "castle", "moor",
        "mire", "tor", "church", "abbey", "station", "hotel", "inn", "manor", "river", "lake",
        "mount", "island", "bay", "hill", "farm", "cottage", "place", "terrace", "gardens",
        "bridge", "town", "city", "village", "county", "valley", "harbour", "harbor", "creek",
        "falls", "fort", "point", "hospital", "college", "school", "club", "wood", "woods", "yard", "avenue",
        "cross", "arms", "home",
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
_UNMARRIED = frozenset({"miss", "mademoiselle", "mlle"})  # "Miss Rachel" of "Rachel Verinder"
NAME_SHARE = 0.8  # of a word's uses written capitalized for it to be a name's

# capitalized words in a row, one space apart ("Paris--the" is two words, the dash no space)
_CAPITALIZED = r"[A-Z](?:[A-Za-z'’]|-(?=[A-Za-z]))*\.?"
_RUN = re.compile(rf"(?<![\w'’-]){_CAPITALIZED}(?: {_CAPITALIZED})*")
_LOWER = re.compile(r"(?<![\w'’])[a-z][a-z'’-]*")
_OPENERS = "“\"‘'(—-_[ "
_PUNCTUATION = "“”‘’\"'.,;:!?()[]—-_"


@dataclass
class _Form:
    key: tuple[str, ...]  # its words, titles left out
    female: str  # a woman's title as the key keeps it ("miss", "mrs"), else ""
    times: int = 0
    person: int = 0  # uses that say a person: a title, a verb of speech beside it
    place: int = 0  # uses after "in", "at", "near"...
    male: bool = False  # given a man's title ("Mr.", "Sir")
    titled: bool = False  # given any title but a woman's ("Dr.", "Captain" too)
    she: bool = False  # an untitled full name the text's pronouns say is a woman's (`_said_she`)


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
    forms: dict[tuple[tuple[str, ...], str], _Form] = {}
    uses: list[tuple[int, tuple[tuple[str, ...], str], str]] = []  # pid, form, as written
    for pid, words, opens, before, after in runs:
        found = _name_in(words, opens, name_words, lower)
        if found is None:
            continue
        titles, key = found
        female = next((t.lower().rstrip(".") for t in titles if t.lower().rstrip(".") in FEMALE_TITLES), "")
        form = forms.setdefault((key, female), _Form(key, female))
        form.times += 1
        form.male = form.male or any(t.lower().rstrip(".") in _MALE_TITLES for t in titles)
        form.titled = form.titled or any(t.lower().rstrip(".") not in FEMALE_TITLES for t in titles)
        form.person += (
            any(t.lower() not in ("st", "st.") for t in titles) or before in _SPEECH or after in _SPEECH
        )
        form.place += before in _PLACE_BEFORE
        uses.append((pid, (key, female), " ".join((*titles, *key))))
    _said_she(forms, uses, read)
    return _grouped(forms, uses, read)


_SHE = re.compile(r"\b(?:she|her|hers|herself)\b", re.I)
_HE = re.compile(r"\b(?:he|him|his|himself)\b", re.I)
SHE_LEAST = 3  # "she"/"her" in the paragraphs a full name alone is named in, at least
SHE_CHANCE = 0.01  # and so many of them, against the book's own share of "she", by chance at most


def _said_she(
    forms: dict[tuple[tuple[str, ...], str], _Form],
    uses: list[tuple[int, tuple[tuple[str, ...], str], str]],
    read: list[tuple[int, str]],
) -> None:
    """Mark the untitled full names (two words or more, no title but a woman's, no place's) that
    the paragraphs naming them and no one else speak of as "she" far more than the book does: a
    one-sided binomial test against the book's share of "she" among "she" and "he" (SHE_CHANCE).
    A heroine's "she" fills the paragraphs that name only the men she meets, so the book's share
    is the bar, not an even one ("Don Jones" in *Missy*: 4 of 4, where the book says "she" 78% of
    the time). Marked: "Mary Cavendish", whom "Mr. Cavendish" is not, and "Mrs. Cavendish" may be."""
    said = {pid: (len(_SHE.findall(text)), len(_HE.findall(text))) for pid, text in read}
    share = sum(s for s, _ in said.values()) / max(1, sum(s + h for s, h in said.values()))
    named: dict[int, set[tuple[str, ...]]] = defaultdict(set)
    for pid, (key, _), _ in uses:
        named[pid].add(key)
    she: Counter[tuple[str, ...]] = Counter()
    he: Counter[tuple[str, ...]] = Counter()
    for pid, keys in named.items():
        if len(keys) == 1:
            (key,) = keys
            she[key] += said[pid][0]
            he[key] += said[pid][1]
    for (key, female), form in forms.items():
        form.she = (
            len(key) > 1
            and not female
            and not form.titled
            and not _placed(form)
            and she[key] >= SHE_LEAST
            and _chance_of_as_many(she[key], she[key] + he[key], share) <= SHE_CHANCE
        )


def _chance_of_as_many(hits: int, tries: int, share: float) -> float:
    """The chance of `hits` or more in `tries`, each a hit with chance `share` (a binomial tail)."""
    return sum(math.comb(tries, k) * share**k * (1 - share) ** (tries - k) for k in range(hits, tries + 1))


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
    return closed[-1:] == "." and last_word(closed, len(closed) - 1).lower() not in TITLES


def _shouted(word: str) -> bool:
    return len(word) > 1 and word.rstrip(".").isupper()


def _may_name(word: str) -> bool:
    low = word.lower()
    return (
        len(word) > 1
        and not low.startswith(("i'", "i’"))
        and low not in STOPWORDS
        and low not in TITLES
        and low not in NOT_NAMES
    )


def _before_name(word: str) -> bool:
    """Whether a capitalized word before a name is no part of it (see _BEFORE_NAMES)."""
    low = word.lower()
    return low in _BEFORE_NAMES or low in NOT_NAMES or low in STOPWORDS or low.startswith(("i'", "i’"))


def _name_in(
    words: list[str], opens: bool, name_words: set[str], lower: Counter[str]
) -> tuple[list[str], tuple[str, ...]] | None:
    """A run's titles and its name's words, or None where it holds no name: the words that
    open a sentence and are no name's ("Then Holmes") and function words are dropped, and
    words after the name that the text writes in lower case too (`lower`: a headline's
    "Dangerously Ill"); a rare one stays ("Sir John Morland" is not "Sir John")."""
    bare = [_bare(w) for w in words]
    start, end = 0, len(bare)
    titles: list[str] = []
    while start < end:  # titles taken, and the words before the name that are none of it
        word = bare[start]
        if word.lower() in TITLES:
            titles.append(words[start])  # as written: "Mr.", "Sir"
        elif word in name_words or not ((opens and not titles) or _before_name(word)):
            break  # "New York" and "Medical Directory" whole
        start += 1  # "Then Holmes", "Would Mr. Luker", "November Katrine", "Uncle Charlie"
    while end > start and bare[end - 1] not in name_words and bare[end - 1].lower() not in _PLACE_WORDS:
        if not lower[bare[end - 1].lower()]:
            break  # "Morland", named once
        end -= 1  # "Mr. Ravenel Dangerously Ill", a headline
    key = tuple(bare[start:end])
    if not key or not any(w in name_words for w in key) or any(w.lower() in STOPWORDS for w in key):
        return None
    if all(w.lower() in _PLACE_WORDS for w in key):
        return None  # "the Hall", "Street" of a street named once: a place's word, no name
    if len(key) > 4:
        return None  # a title of a work, a heading in a sentence: no name
    return titles, key


def _grouped(
    forms: dict[tuple[tuple[str, ...], str], _Form],
    uses: list[tuple[int, tuple[tuple[str, ...], str], str]],
    read: list[tuple[int, str]],
) -> Cast:
    """Forms gathered into members (see the module's docstring), with their mentions and
    descriptions."""
    said: Counter[tuple[str, ...]] = Counter()  # a name's uses, whatever the title
    for form in forms.values():
        said[form.key] += form.times
    # longest names first, the most used first; a name's forms together, a woman's title first
    # ("Laura Lyons" then joins "Mrs. Laura Lyons", and "Lyons" with her)
    order = sorted(forms.values(), key=lambda f: (-len(f.key), -said[f.key], f.key, not f.female))
    owners: dict[tuple[tuple[str, ...], str], list[int]] = {}  # a form's members (indexes into heads)
    heads: list[_Form] = []
    holding: dict[str, set[int]] = defaultdict(set)  # a word -> the heads whose name holds it
    joined: dict[int, set[str]] = defaultdict(set)  # a head -> the sexes its joined forms' titles say
    unmarried = {f.key[-1] for f in forms.values() if f.female in _UNMARRIED}  # "Miss Bennet": a daughter
    for form in order:
        within = (
            set.intersection(*(holding[w] for w in form.key))
            if all(w in holding for w in form.key)
            else set()
        )
        holders = sorted(i for i in within if _may_join(form, heads[i], joined[i]) and not _placed(heads[i]))
        if not holders and form.female == "mrs" and len(form.key) == 1 and form.key[0] not in unmarried:
            holders = _wife(form, heads, within, joined)
        if len(form.key) > 1 and len(holders) > 1:
            holders = holders[:1]
        if holders:
            owners[(form.key, form.female)] = holders
            for i in holders:  # "Miss Lloyd" joined: "Mr. Sherman" (her father) may not
                joined[i] |= {"female"} if form.female else {"male"} if form.male else set()
                if not form.female and not form.male and heads[i].female and form.key == heads[i].key:
                    joined[i].add("untitled")
        elif len(form.key) == 1 and form.key[0].lower() in _ROLES:
            owners[(form.key, form.female)] = []  # no name of its own
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
        if not holders:
            continue
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


def _wife(form: _Form, heads: list[_Form], within: set[int], joined: dict[int, set[str]]) -> list[int]:
    """The one head "Mrs. Surname" (`form`) is a form of, as a list, where the surname's heads
    (`within`) that may be a woman's are one full name the text calls "she" ("Mary Cavendish");
    else none ("Jane Bennet" and "Elizabeth Bennet": whose is "Mrs. Bennet"?)."""
    maybe = [
        i
        for i in within
        if len(heads[i].key) > 1
        and heads[i].key[-1] == form.key[0]
        and not heads[i].female
        and not heads[i].male
        and "male" not in joined[i]
        and not _placed(heads[i])
    ]
    return maybe if len(maybe) == 1 and heads[maybe[0]].she else []


def _may_join(form: _Form, head: _Form, joined: set[str]) -> bool:
    """Whether `form` may be a form of `head`'s name: the same woman's title or none, or "Miss
    Rachel" of a full name no man's title is given ("Rachel Verinder"; "Lady Verinder" is her
    mother, "Mrs. Barrymore" not Barrymore); never a man's title where a woman's joined it
    (`joined`: what the titles of the forms joined so far say) or on a name the text calls
    "she" (`_said_she`), nor the other way round."""
    if form.male and (head.female or head.she or "female" in joined):
        return False
    if form.female == head.female:
        return True
    if not form.female and len(form.key) > 1 and form.key == head.key:
        return True  # "Laura Lyons" of "Mrs. Laura Lyons": her full name, without her title
    if not form.female and "untitled" in joined:
        return True  # "Louise" of "Miss Louise Briggs", who is "Louise Briggs" too
    return (
        form.female in _UNMARRIED
        and not head.female
        and len(head.key) > 1
        and not head.male
        and "male" not in joined
    )


def _placed(form: _Form) -> bool:
    """Whether a name is a place's by its words: a place word last ("Baker Street"), or a
    saint's name inside it ("Styles St Mary", whose "Mary" is no one's form)."""
    return form.key[-1].lower() in _PLACE_WORDS or any(w.lower().rstrip(".") == "st" for w in form.key[1:])


def _described(members: list[CastMember], read: list[tuple[int, str]]) -> list[CastMember]:
    """The members with the descriptions the text sets beside their names (`_kept`)."""
    by_form: dict[tuple[str, ...], CastMember] = {}
    for member in reversed(members):  # the most mentioned member wins a form two share
        for form in member.forms:
            by_form[_form_key(form)] = member
    found: dict[str, dict[str, list]] = defaultdict(dict)  # a member's name -> its descriptions (_tally)
    for pid, text in read:
        for name, said, span, appositive in descriptions_in(text, lambda name: _form_key(name) in by_form):
            _tally(found[by_form[_form_key(name)].name], said, span, pid, appositive)
    return [
        CastMember(member.name, member.kind, member.forms, member.mentions, _kept(found.get(member.name, {})))
        for member in members
    ]


# ---------------------------------------------------------------- cached per book


_HELD: dict[str, Cast] = {}  # by fingerprint: a session asks many questions of one book


def book_cast(document: Document) -> Cast:
    """`document`'s cast, held, from the cache entry of its paragraphs, or built (and cached)."""
    return _hold(_HELD, document.fingerprint, lambda: _cached_cast(document))


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
