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

import re
from dataclasses import dataclass

from cwread.book import Document
from cwread.book.chapters import is_heading
from cwread.retrieval.descriptions import (
    descriptions_in,
    normalized,
)
from cwread.text.words import NOT_NAMES, STOPWORDS, TITLES, WORD, without_possessive, word_stems

FEMALE_TITLES = frozenset(
    {"mrs", "miss", "ms", "madam", "madame", "mme", "mlle", "mademoiselle", "lady", "queen", "princess"}
)
MOST_DESCRIPTIONS = 6
MIN_MENTIONS = 2  # paragraphs a name is mentioned in, to be of the cast


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

    def read_upto(self, document: Document, last: int) -> Cast:
        """The cast as a reader who has read to paragraph `last` knows it: the members mentioned
        by then, each with its mentions, descriptions and forms (its name too) from those
        paragraphs alone, the most mentioned first. (A description's `times` counts the book's.)"""
        known = []
        for member in self.members:
            mentions = tuple(pid for pid in member.mentions if pid <= last)
            if not mentions:
                continue
            read = " ".join(document.paragraph(pid).text for pid in mentions)
            forms = tuple(f for f in member.forms if f in read) or member.forms[:1]
            name = member.name if member.name in read else forms[0]
            descriptions = tuple(d for d in member.descriptions if d.pid <= last)
            known.append(CastMember(name, member.kind, forms, mentions, descriptions))
        known.sort(key=lambda m: -len(m.mentions))  # stable: the book's order on a tie
        return Cast(tuple(known))

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
        question, a relation's with its every other word and someone named in it ("the younger
        brother of Sir Charles", not "his brother"), of one member only or matching more of its
        words than any other's.
        A place beside a name ("of Merripit House") says where, not who."""
        lowered = {w.lower() for w in WORD.findall(question)}
        stems = set(word_stems([w for w in lowered if w not in STOPWORDS]))
        best: dict[str, tuple[float, int, CastMember, Description]] = {}
        tied: set[str] = set()
        for member in self.members:
            if member.words.endswith(("'s", "’s")):
                continue  # a shop's or a house's name ("Coot's, the Cash Chemists"), no one's
            own = [w for w in map(str.lower, WORD.findall(member.words)) if w not in TITLES and w not in STOPWORDS]
            if any(w.lower() in lowered for w in member.words.split()) or any(s in stems for s in word_stems(own)):
                continue  # named already ("Everards" of "Colonel Everard's house")
            for d in member.descriptions:
                head = description_head(d.said)
                if head is None or word_stems([head])[0] not in stems:
                    continue
                score = _overlap(d.said, stems)
                if _unasked_mark(d.said, head, stems):
                    continue  # "the second mate" is not whoever "his two mates" are
                if head in KIN and (score < 1.0 or len(_content(d.said)) < 2):
                    # "the farmer's wife" is not whoever's wife a question asks of, nor is "his
                    # mother" (someone's) the mother of whom a question asks ("Eloise gave her
                    # mother"), nor "his uncle" the one it names ("Uncle Charlie")
                    continue
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
        "companion", "companions",
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
# where, after a description's noun ("the fat little boy next door", "the man upstairs"); before
# it, a word of it ("the upstairs maid", "the next heir")
_WHERE_AFTER = frozenset(
    {
        "next", "across", "opposite", "over", "upstairs", "downstairs", "below", "above", "beyond",
        "behind", "outside", "inside", "nearby", "abroad", "there", "here", "yonder",
    }
)  # fmt: skip
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
    cut = next(
        (i for i, w in enumerate(words) if w in _PREPOSITIONS or (i > 1 and w in _WHERE_AFTER)), len(words)
    )
    kept = [w for w in words[:cut] if w and w not in STOPWORDS]
    head = kept[-1] if kept else None
    return None if head is None or head in _GENERIC or head.endswith(("'s", "’s")) else head


# words that say which of its kind a description's noun is ("the second mate", "the head
# gardener"): one the question does not say names another of that kind ("his two mates")
_RANKS = frozenset(
    {
        "first", "second", "third", "fourth", "fifth", "chief", "head", "under", "assistant",
        "deputy", "elder", "younger", "eldest", "youngest", "senior", "junior", "old", "young",
        "other", "late", "former",
    }
)  # fmt: skip


def _unasked_mark(said: str, head: str, stems: set[str]) -> bool:
    """Whether a description says which of its kind it is in a word the question does not
    ("second" of "the second mate", asked of "his two mates"); "majestic" of "the majestic
    black cat" says no such thing."""
    marks = [w for w in re.findall(r"[\w'’-]+", said.lower()) if w in _RANKS and w != head]
    return any(s not in stems for s in word_stems(marks))


def _content(said: str) -> list[str]:
    return [w for w in normalized(said).split() if w not in STOPWORDS and w.rstrip("'’s") not in TITLES]


def _overlap(said: str, stems: set[str]) -> float:
    """The share of a description's content words that are among `stems` (a question's)."""
    words = _content(said)
    if not words:
        return 0.0
    return sum(s in stems for s in word_stems(words)) / len(words)


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


def named_in_book(document: Document, question: str, upto: int | None = None) -> list[Named]:
    """Whom a question calls by a description (Cast.named_in), read from the paragraphs that
    hold one of the question's words alone: each name described there is a member, so no cast
    of the whole book is built (a question costs a scan of the book's text for its words, and
    the book's indexing nothing). `upto`: the reader's limit; nothing past it is read."""
    stems = {
        s
        for s in word_stems([w.lower() for w in WORD.findall(question)])
        if s not in STOPWORDS and len(s) > 2
    }
    if not stems:
        return []
    found: dict[tuple[str, ...], tuple[str, dict[str, list]]] = {}
    story = _story(document) if upto is None else [p for p in _story(document) if p[0] <= upto]
    for pid, text, lowered in story:
        if not any(stem in lowered for stem in stems):
            continue
        for name, said, span, appositive in descriptions_in(text, _a_name):
            name = _unopened(name)
            _, tally = found.setdefault(_form_key(name), (name, {}))
            _tally(tally, said, span, pid, appositive)
    members = [
        CastMember(name, "name", (name,), (), _kept(tally))
        for name, tally in found.values()
        if len(name.split()) > 1 or _named_inside(story, name)
    ]
    return Cast(tuple(m for m in members if m.descriptions)).named_in(question)


_STORIES: dict[str, list[tuple[int, str, str]]] = {}  # by fingerprint: a session asks again


def _story(document: Document) -> list[tuple[int, str, str]]:
    """The paragraphs a cast is read from, each with its text in lower case: the story's,
    headings left out (held for the next question of the same book)."""
    skip = document.unread
    return _hold(
        _STORIES,
        document.fingerprint,
        lambda: [
            (p.id, p.text, p.text.lower())
            for p in document.paragraphs
            if p.id not in skip and not is_heading(p.text)
        ],
    )


def _a_name(name: str) -> bool:
    """Whether words before a description name someone: a word of them no function word ("I",
    "This" open sentences) nor one capitalized by custom ("On Tuesday, the 17th July")."""
    return any(
        (low := w.lower().rstrip(".")) not in STOPWORDS and low not in TITLES and low not in NOT_NAMES
        for w in name.split()
    )


def _named_inside(story: list[tuple[int, str, str]], word: str) -> bool:
    """Whether the story writes a one-word name capitalized inside a sentence too, after a word
    in lower case ("said Candy"): a word only ever opening one ("Underneath, a telegram from
    Washington stated...") is none."""
    inside = re.compile(rf"[a-z,;] {re.escape(word)}\b")
    return any(inside.search(text) for _, text, _ in story)


def _unopened(name: str) -> str:
    """A name without the function words that open its sentence ("Then Poppylinda, the
    majestic black cat": Poppylinda)."""
    words = name.split()
    while (
        len(words) > 1
        and words[0].lower().rstrip(".") in STOPWORDS
        and words[0].lower().rstrip(".") not in TITLES
    ):
        words.pop(0)
    return " ".join(words)


def _possessive(word: str) -> bool:
    return word.endswith(("'s", "’s"))


def _bare(word: str) -> str:
    """A word without its possessive or full stop ("Holmes's" -> "Holmes")."""
    return without_possessive(word.rstrip("."))


def _form_key(form: str) -> tuple[str, ...]:
    """A form's words as a lookup key: titles dropped but a woman's ("Mrs. Barrymore" is not
    Barrymore)."""
    words = [_bare(w) for w in form.split()]
    female = next((w.lower() for w in words if w.lower() in FEMALE_TITLES), "")
    return (*(w for w in words if w.lower() not in TITLES), female)


HELD_BOOKS = 8  # books whose cast and story a process holds


def _hold(held: dict, fingerprint: str, make):
    """What `held` keeps for a book, made where it has none; HELD_BOOKS books at most, the
    first held let go first."""
    if fingerprint not in held:
        if len(held) >= HELD_BOOKS:
            held.pop(next(iter(held)))
        held[fingerprint] = make()
    return held[fingerprint]
