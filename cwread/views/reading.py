"""Plain text for a reader that is not at a terminal (an AI assistant through the CLI or MCP, a
script): no boxes and no run statistics, each paragraph as `[N] text`, wrapped at a width where
one is given, within a character budget that ends with one line naming what was left out."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cwread.book.chapters import is_heading
from cwread.retrieval.passages import runs_label
from cwread.text.sentences import sentences
from cwread.text.words import STOPWORDS, WORD, counted, word_stems
from cwread.views import CAST_LISTED, FIND_CHARS, READER_CHARS  # noqa: F401  (read here by the faces)
from cwread.views.json_output import about_line
from cwread.views.terminal import printable

if TYPE_CHECKING:  # the records a view takes: their modules load with the run, not with `show`
    from cwread.book import Document, Paragraph
    from cwread.library.catalog import Hit
    from cwread.records.stages import FindResult
    from cwread.retrieval.cast import Cast, CastMember
    from cwread.retrieval.passages import Passage
    from cwread.run.library_question import LibraryFound


def wrapped(text: str, width: int | None) -> list[str]:
    """`text` as lines of at most `width` columns (None: one line)."""
    if width is None:
        return [text]
    return textwrap.wrap(text, width, break_on_hyphens=False) or [""]


def _size(lines: list[str]) -> int:
    return sum(len(line) + 1 for line in lines)


LINE_MOST = 400  # characters of a head line or a left-out line, whatever it names
NAMED_MOST = 5  # things a left-out line names before "and N more"
OPTION = "--max-chars"  # how the bound is set, as the CLI says it (MCP: max_chars)


def capped(line: str, most: int = LINE_MOST) -> str:
    """`line`, cut at a word to `most` characters with " …" where it is longer."""
    if len(line) <= most:
        return line
    return line[: most - 2].rsplit(" ", 1)[0] + " …"


@dataclass(frozen=True)
class Block:
    """What a bound keeps whole or cuts: `head` lines (kept, each capped), then `body` lines
    (a passage's: one a paragraph, its ids in `pids`); a cut keeps the body lines around
    `best`. `name`: how a left-out line names the block."""

    head: list[str]
    body: list[str]
    name: str
    pids: list[int] = field(default_factory=list)
    best: int = 0
    blank: bool = True  # a blank line before it
    whole: str = ""  # how to read its best line whole where a cut is inside it ("show 22")

    def size(self) -> int:
        return _size([*([""] if self.blank else []), *self.head, *self.body])


def grown(count: int, best: int, fits: Callable[[int, int], bool]) -> tuple[int, int]:
    """The run `low..high` of `count` lines around the `best` one, grown a line at a time, after
    it then before it, while `fits(low, high)` holds (the best alone where no more fits)."""
    low = high = best
    grew = True
    while grew:
        grew = False
        for nxt in (high + 1, low - 1):
            if 0 <= nxt < count and fits(min(low, nxt), max(high, nxt)):
                low, high = min(low, nxt), max(high, nxt)
                grew = True
    return low, high


def named_list(names: list[str]) -> str:
    """The first NAMED_MOST of `names`, each capped, then how many more: what a left-out line says."""
    more = f"; and {len(names) - NAMED_MOST:,} more" if len(names) > NAMED_MOST else ""
    return "; ".join(capped(name, 120) for name in names[:NAMED_MOST]) + more


# what opens a line with the place it cites, kept by any cut: "[12] " (a paragraph), "#3 [12] "
# (a map's or a left-out passage's line)
ID_OPENING = re.compile(r"(?:#\d+\S* (?:[^\[\n]* )?)?\[[^\]]+\] ")  # "#1 book.txt [4-11] " on a shelf


def _cut(
    block: Block, room: int, span_label: Callable[[int, int], str] | None, option: str = OPTION
) -> Block:
    """`block` within `room` characters: its head, the body lines around its best, and a line
    naming the paragraphs cut (to `show`); where the best alone is longer than what is left, it
    is cut inside, with "…" and its id."""
    head = [capped(line) for line in block.head]
    left = room - _size(head) - (1 if block.blank else 0) - LINE_MOST
    body = block.body
    low = high = block.best
    used = len(body[low]) + 1 if body else 0
    cut_inside = None
    if body and used > left:  # the best line alone is too long: cut inside it, its id kept
        text = body[low]
        opening = opened.group() if (opened := ID_OPENING.match(text)) else ""
        kept = text[: max(len(opening), left - 2)].rsplit(" ", 1)[0]
        kept = kept if len(kept) >= len(opening) else opening.rstrip()
        cut_inside = (max(len(kept.rstrip()) - len(opening), 0), len(text) - len(opening))  # of its text: not its id
        lines = [kept.rstrip() + " …"]
    else:
        low, high = grown(len(body), block.best, lambda lo, hi: _size(body[lo : hi + 1]) <= left)
        lines = body[low : high + 1]
    notes = []
    if cut_inside is not None:
        kept, whole = cut_inside
        how = f"; {block.whole} for it whole" if block.whole else ""
        notes.append(capped(f"(cut at {kept:,} of its {whole:,} characters, within {option}{how})"))
    dropped = [pid for i, pid in enumerate(block.pids) if not low <= i <= high]
    if dropped and span_label is not None:
        notes.append(
            capped(f"(more of this passage beyond {option}: show {runs_label(dropped, span_label)})")
        )
    elif len(lines) < len(body) and cut_inside is None:
        notes.append(f"({len(body) - len(lines)} more lines of it past {option})")
    return Block(head, [*lines, *notes], block.name, blank=block.blank)


def fit(
    blocks: list[Block],
    max_chars: int | None,
    used: int,
    span_label: Callable[[int, int], str] | None = None,
    option: str = OPTION,
) -> tuple[list[Block], list[Block]]:
    """The blocks printed within `max_chars` characters (None: no bound) beside the `used` ones
    before them, and those left out. The first that does not fit is cut around its best line
    (`_cut`) where it is the first (so that something is printed), else left out, and so are
    the rest: cutting later ones too printed 8% more characters on the dev novels' first
    `find` and no more gold (benchmarks/README.md, "Bounds that bound")."""
    printed: list[Block] = []
    for index, block in enumerate(blocks):
        if max_chars is not None and used + block.size() > max_chars:
            if printed:
                return printed, blocks[index:]
            return [_cut(block, max_chars - used, span_label, option)], blocks[index + 1 :]
        printed.append(block)
        used += block.size()
    return printed, []


def bounded(
    blocks: list[Block],
    max_chars: int | None,
    used: int,
    width: int | None,
    noun: str,
    span_label: Callable[[int, int], str] | None = None,
    option: str = OPTION,
    spans: bool = False,
) -> list[str]:
    """The blocks that `fit`, as lines, then one line naming those left out (`left_out_lines`).
    Whatever the blocks, what is printed is within the bound but for that line and a cut's
    notes."""
    printed, left = fit(blocks, max_chars, used, span_label, option)
    said = left_out_lines(left, max_chars, noun, span_label, option, spans)
    return printed_lines(printed, width) + [
        wrapped_line for line in said for wrapped_line in wrapped(line, width)
    ]


def printed_lines(printed: list[Block], width: int | None) -> list[str]:
    """Blocks as lines, each wrapped at `width`."""
    return [
        wrapped_line
        for block in printed
        for line in ([""] if block.blank else []) + block.head + block.body
        for wrapped_line in wrapped(line, width)
    ]


def left_out_lines(
    left: list[Block],
    max_chars: int | None,
    noun: str,
    span_label: Callable[[int, int], str] | None = None,
    option: str = OPTION,
    spans: bool = False,
) -> list[str]:
    """One capped line naming the blocks `left` out, after a blank one (none: no line): how
    many and the first NAMED_MOST (`spans`: by the span of their paragraphs); unwrapped."""
    if not left:
        return []
    named = named_list([b.name for b in left])
    if spans and span_label is not None:  # paragraphs in order: named by their span
        first, last = left[0].pids[0], left[-1].pids[-1]
        named = span_label(first, last) if first != last else left[0].name
    many = counted(len(left), noun.removesuffix("s"), noun)
    line = f"Left out past {counted(max_chars or 0, 'character')} ({option}): {many}: {named}."
    return ["", capped(line)]


def _passage_block(passage: Passage, title: str) -> Block:
    """A passage as printed: its head line, then each paragraph as `[N] text`; a cut keeps
    those around its best paragraph, and names it as `show` takes it (of a library, the book's
    name before the paragraph's id)."""
    doc = passage.document
    body = [f"[{doc.label(pid)}] {printable(doc.paragraph(pid).text)}" for pid in passage.ids]
    shown = " ".join(filter(None, ["show", printable(passage.book), doc.label(passage.best)]))
    best = passage.ids.index(passage.best)
    return Block([title], body, title, pids=list(passage.ids), best=best, whole=shown)


def passage_title(passage: Passage, chapter_most: int = LINE_MOST) -> str:
    """A passage's head line: its rank(s), book (of a library), span and chapter (capped)."""
    book = f" {printable(passage.book)}" if passage.book else ""
    chapter = f" {capped(printable(passage.chapter.title), chapter_most)}" if passage.chapter else ""
    return f"{passage.rank_label}{book} [{passage.span}]{chapter}"


PASSAGE_LINES = 15  # passages after those printed whole given a line each, at most; the rest are named
CUT_LEAST = 600  # characters left for the best passage cut, or it too is given a line
PASSAGE_PART_CHARS = 160  # of such a line's part of its best paragraph
LINE_CHAPTER_CHARS = 40  # of its chapter's title


def passages_within(
    passages: Sequence[Passage],
    question: str,
    used: int,
    max_chars: int | None,
    width: int | None,
    option: str = OPTION,
) -> list[str]:
    """`passages` within `max_chars` characters beside the `used` ones: the best printed whole,
    then each of the next PASSAGE_LINES as one line (its rank, span and chapter and the part of
    its best paragraph that best matches the question, those words marked: `best_part`), so that
    a reader sees what each holds and shows the one it wants; the lines' room is kept before a
    passage is printed whole, but the best passage has at least half the bound (cut around its
    best paragraph where it is longer); then one line naming the rest. None: every passage
    whole."""
    if not passages:
        return []
    blocks = [_passage_block(p, passage_title(p)) for p in passages]
    if max_chars is None:
        return printed_lines(blocks, width)
    asked = asked_stems(question)
    said = [_passage_line(p, asked) for p in passages]
    head = ["", "The next passages, a line each (show one to read it whole):"]

    def lines_size(start: int) -> int:
        rest = said[start : start + PASSAGE_LINES]
        return _size(head) + _size(rest) if rest else 0

    whole, room = 0, max_chars - used
    while whole < len(blocks) and blocks[whole].size() + lines_size(whole + 1) <= room:
        room -= blocks[whole].size()
        whole += 1
    printed = blocks[:whole]
    if not printed:  # the best passage cut around its best paragraph, not left out: half the
        # room at least, all of it where that is too little for a paragraph's worth
        first_room = max(room - lines_size(1), room // 2)
        span_label = None if passages[0].book else passages[0].document.span_label
        printed = [_cut(blocks[0], first_room if first_room >= CUT_LEAST else room, span_label, option)]
        room -= printed[0].size()
    out = printed_lines(printed, width)
    rest = said[len(printed) :]
    lined = []
    for line in rest[:PASSAGE_LINES]:
        if _size([*head, *lined, line]) > room:
            break
        lined.append(line)
    if lined:
        out += [w for line in [*head, *lined] for w in wrapped(line, width)]
    # named only: a left-out line reads a block's name, not its paragraphs
    named = [Block([], [], passage_title(p, LINE_CHAPTER_CHARS)) for p in passages[len(printed) + len(lined) :]]
    said_out = left_out_lines(named, max_chars, "passages", None, option)
    return out + [w for line in said_out for w in wrapped(line, width)]


def _passage_line(passage: Passage, asked: set[str]) -> str:
    """A passage as one line: its rank, span and chapter, and the part of its paragraph that
    best matches the question (`_line_paragraph`, `best_part`), the question's words marked."""
    pid = _line_paragraph(passage, asked)
    part = " ".join(
        _marked(best_part(passage.document.paragraph(pid).text, asked, PASSAGE_PART_CHARS), asked).split()
    )
    where = f"{passage_title(passage, LINE_CHAPTER_CHARS)}, at [{passage.document.label(pid)}]"
    return capped(f"{where}: {printable(part)}", len(where) + PASSAGE_PART_CHARS + 10)


NOTHING_TO_SEARCH = "none to search (front matter alone, or nothing before the limit)"


def fitting(count: int, noun: str | None = "passage") -> str:
    """"the 11 passages that fit best, best first", "the 1 passage that fits best, ...", "the 8
    that fit best, ..." (`noun` None: a map's candidates), or that there are none."""
    if not count:
        return NOTHING_TO_SEARCH
    things = counted(count, noun) if noun else str(count)
    return f"the {things} that {'fits' if count == 1 else 'fit'} best, best first"


def considered(result: FindResult, limit: int) -> int:
    """How many of a find's segments its first `limit` (0: all) are."""
    return len(result.segments[:limit] if limit else result.segments)


def find_lines(
    result: FindResult,
    passages: Sequence[Passage],
    limit: int,
    max_chars: int | None,
    width: int | None,
    option: str = OPTION,
    name: str | None = None,
) -> list[str]:
    """`find`'s passages as a reader reads them (`FindResult.printed`: its first `limit`
    segments, 0: all, widened, those of one scene joined), within `max_chars` characters
    (`passages_within`; `option` names the bound); the question's words that no paragraph holds
    said first. `name`: the book's, as the reader gave it (None: its path)."""
    doc = result.document
    heads = [
        f"{printable(name or doc.path)}: {counted(len(doc), 'paragraph')}; {fitting(considered(result, limit))}."
    ]
    heads += question_notes(result)
    out = [line for head in heads for line in wrapped(capped(head), width)]
    return out + passages_within(passages, result.question.text, _size(out), max_chars, width, option)


def paragraph_lines(
    document: Document,
    paragraphs: list[Paragraph],
    max_chars: int | None,
    width: int | None,
    option: str = OPTION,
) -> list[str]:
    """Paragraphs as `[N] text`, a blank line between, each under its chapter where that changes,
    up to `max_chars` characters (the first cut inside where it alone is longer), then one line
    naming those left out."""
    blocks: list[Block] = []
    chapter = None
    for p in paragraphs:
        now = document.chapter(p.id)
        head = [f"({printable(now.title)})"] if now is not None and now != chapter else []
        wrapping = document.wrapping(p.id)
        label = document.label(p.id)
        line = f"[{label}] {printable(p.text)}" + (f"  ({wrapping})" if wrapping else "")
        blocks.append(Block(head, [line], label, pids=[p.id], blank=bool(blocks), whole=f"show {label}"))
        chapter = now
    return bounded(blocks, max_chars, 0, width, "paragraphs", document.span_label, option, spans=True)


def search_lines(
    hits: Sequence[Hit], max_chars: int | None, used: int = 0, option: str = OPTION
) -> list[str]:
    """A library search's hits, each its book and id, then its whole paragraph, up to `max_chars`
    characters beside the `used` ones before them (the first cut inside where it alone is
    longer), then one line naming those left out."""
    blocks = []
    for hit in hits:
        head = f"{hit.book} [{hit.label}]{about_line(hit.about)}"
        blocks.append(Block([head], [printable(hit.text)], head, whole=f"show {hit.book} {hit.label}"))
    return bounded(blocks, max_chars, used, None, "paragraphs", None, option)


def question_notes(result: FindResult, absent: bool = True) -> list[str]:
    """What the reader should know of how the question was read: its words no paragraph holds
    (where `absent`: not of one book of several), and the descriptions the book's cast took for
    names, with where the book says so."""
    doc = result.document
    from cwread.answer.extractive import absent_words  # the book's word counts: find's, not show's

    missing = absent_words(doc, result.question.text, result.upto) if absent else []
    said = ["No paragraph holds", " (say it otherwise)"] if result.upto is None else [f"No paragraph up to [{doc.label(result.upto)}] holds", ""]
    notes = [f"{said[0]}: {', '.join(missing)}{said[1]}."] if missing else []
    searched = " ".join([result.question.text, *result.question.options.values(), result.also])
    if not asked_stems(searched):  # "who is he?", "?": nothing for the words to find
        notes.append("The question holds only common words: what follows is found by its sense alone; say whom or what it asks about.")
    for n in result.named:
        notes.append(
            f'Looked for {printable(n.member.words)} too: the book says "{printable(n.description.span)}" '
            f"[{doc.label(n.description.pid)}]."
        )
    return notes


MAP_LINE_CHARS = 320  # of a candidate's line: its id, chapter and best-matching part (most whole)


def map_lines(
    result: FindResult,
    count: int,
    width: int | None,
    max_chars: int | None = None,
    option: str = OPTION,
    name: str | None = None,
) -> list[str]:
    """A map of the candidates, one line each, for a reader to pick from and `show`: the `count`
    paragraphs the retrieval ranks best (outside front and back matter), each with its rank, id,
    chapter and the part of it that best matches the question (`best_part`), its words marked
    *so*, up to `max_chars` characters (then one line naming those left out); the question's
    words that no paragraph holds said first; `name`: the book's, as the reader gave it."""
    doc = result.document
    asked = asked_stems(result.question.text)
    scores = result.paragraph_scores
    ranked = sorted(
        (
            pid
            for pid in range(1, min(len(scores), result.upto or len(scores)) + 1)
            if not doc.wrapping(pid) and not is_heading(doc.paragraph(pid).text)
        ),
        key=lambda pid: -scores[pid - 1],
    )
    shown = min(count, len(ranked))
    heads = [
        f"{printable(name or doc.path)}: {counted(len(doc), 'paragraph')}; {fitting(shown, None)}"
        + (" (show N for one whole)." if shown else ".")
    ]
    heads += question_notes(result)
    out = [line for head in heads for line in wrapped(capped(head), width)]
    lines: list[Block] = []
    for rank, pid in enumerate(ranked[:count], start=1):
        text = doc.paragraph(pid).text
        sentence = " ".join(_marked(best_part(text, asked), asked).split())
        chapter = doc.chapter(pid)
        title = capped(printable(chapter.title), LINE_CHAPTER_CHARS) if chapter else ""
        head = f"#{rank} [{doc.label(pid)}]" + (f" ({title})" if chapter else "")
        size = f" [{len(text):,} characters]" if len(text) >= LONG_PARAGRAPH else ""
        room = MAP_LINE_CHARS - len(head) - 1 - len(size)
        if len(sentence) > room:  # a window that holds the first marked word, cut at words
            mark = max(sentence.find("*"), 0)
            start = max(0, min(mark - room // 4, len(sentence) - room))
            start = sentence.find(" ", start) + 1 if start else 0
            window = sentence[start : start + room - 4].rsplit(" ", 1)[0]
            sentence = ("… " if start else "") + window + " …"
        lines.append(Block([], [f"{head} {printable(sentence)}{size}"], f"#{rank} [{doc.label(pid)}]", blank=False))
    return out + bounded(lines, max_chars, _size(out), width, "candidates", None, option)


# a paragraph whose length its map line gives: what a `show` of it costs (readers of the fourth
# benchmark showed letters of 2,000-3,000 characters unawares and asked to know before)
LONG_PARAGRAPH = 1_000


MAP_PART_CHARS = 140  # of a paragraph's text on its map line: its best sentence and neighbours (200 cost readers 15% more characters for no more answers: benchmarks/README.md)


def best_part(text: str, asked: set[str], chars: int = MAP_PART_CHARS) -> str:
    """The part of `text` that best matches the question's stems `asked`: the sentence that
    holds most of them, then its neighbours while the part stays within `chars` (one that holds
    more of the words first, else the nearer, else the next: an answer tends to follow its
    set-up), so a short line of dialogue comes with what surrounds it. Whole sentences, not the clauses a quote is cut to: a reader
    judged a clause too little ("came back to her in her *new* *home*," with the answer in the
    clause after it)."""
    spans = list(sentences(text) or ((0, len(text)),))
    held = [_stems(text[slice(*span)]) & asked for span in spans]
    best = first = last = max(range(len(spans)), key=lambda i: len(held[i]))
    while True:
        words = set().union(*held[first : last + 1])
        grown = [
            (len(held[i] - words), -abs(i - best), i == last + 1, i)
            for i in (first - 1, last + 1)
            if 0 <= i < len(spans) and spans[max(i, last)][1] - spans[min(i, first)][0] <= chars
        ]
        if not grown:
            return text[spans[first][0] : spans[last][1]]
        *_, i = max(grown)
        first, last = min(first, i), max(last, i)


def _line_paragraph(passage: Passage, asked: set[str]) -> int:
    """The paragraph a passage's line quotes: its best, unless that is a heading (it names the
    chapter, which the line gives already); then the one holding most of the question's words."""
    doc = passage.document
    if not is_heading(doc.paragraph(passage.best).text):
        return passage.best
    told = [pid for pid in passage.ids if not is_heading(doc.paragraph(pid).text)] or [passage.best]
    return max(told, key=lambda pid: len(_stems(doc.paragraph(pid).text) & asked))


def asked_stems(question: str) -> set[str]:
    """The stems of a question's words, stop words aside: what a line marks *so*."""
    return set(word_stems([w for w in map(str.lower, WORD.findall(question)) if w not in STOPWORDS]))


def _stems(text: str) -> set[str]:
    return set(word_stems([w.lower() for w in WORD.findall(text)]))


def _marked(text: str, asked: set[str]) -> str:
    """`text` with each word whose stem the question holds marked *so*."""
    return WORD.sub(
        lambda m: f"*{m.group(0)}*" if word_stems([m.group(0).lower()])[0] in asked else m.group(0), text
    )


MEETS = 5  # the names a member is most often mentioned with, shown when it is asked for


def cast_lines(
    document: Document,
    cast: Cast,
    members: list[CastMember],
    detailed: bool,
    max_chars: int | None,
    width: int | None,
    option: str = OPTION,
) -> list[str]:
    """The book's cast as a reader reads it: a line a member (its name, kind, how many
    paragraphs mention it and the first, its other forms), then the descriptions the text sets
    beside it, each with its paragraph; `detailed` (a name or description asked): also the names
    it is most often mentioned with, and where. Whole members up to `max_chars`, then one line
    naming those left out."""
    blocks = []
    for member in members:
        first = member.mentions[0]
        chapter = document.chapter(first)
        where = f"first [{document.label(first)}]" + (f" {chapter.title}" if chapter else "")
        others = [f for f in member.forms if f != member.name]
        head = f"{member.name} ({member.kind}; {counted(len(member.mentions), 'paragraph')}, {where})"
        body = [
            f'  "{d.span}" [{document.label(d.pid)}]' + (f" (said {d.times} times)" if d.times > 1 else "")
            for d in member.descriptions
        ]
        if detailed:
            for other, shared in cast.meetings(member)[:MEETS]:
                ids = ", ".join(document.label(pid) for pid in shared[:4])
                body.append(
                    f"  with {other.name} in {counted(len(shared), 'paragraph')}: [{ids}]"
                    + (" ..." if len(shared) > 4 else "")
                )
        head += f"; also {', '.join(others[:6])}" if others else ""
        blocks.append(
            Block(
                [printable(head)],
                [printable(line) for line in body],
                printable(member.name),
                blank=bool(blocks),
            )
        )
    return bounded(blocks, max_chars, 0, width, "members", None, option)


def library_find_lines(
    found: LibraryFound,
    passages: Sequence[Passage],
    max_chars: int | None,
    width: int | None,
    option: str = OPTION,
    lined: bool = False,
) -> list[str]:
    """A question over a library as a reader reads it: which books were searched and why, then
    its `passages` (`LibraryFound.printed`), each headed by its rank, book (its name as `show`
    takes it, and its title where its catalogue gives one), span and chapter; whole passages
    up to `max_chars`, then one line naming those left out; `lined` (--map): a line a passage,
    its best paragraph's part that best matches (as a map's lines)."""
    shelf = ", ".join(found.roots)
    if not found.candidates:
        return wrapped(
            f"{shelf}: {found.books:,} books; none holds the question's words (say it otherwise).", width
        )
    searched = "; ".join(
        f"{printable(c.name)}{_titled(c.about)} ({c.hits} of the best-matching paragraphs)"
        for c in found.candidates
    )
    heads = [
        f"{shelf}: {found.books:,} books, {found.matching:,} holding the question's words; searched the "
        f"{len(found.candidates)} that hold them most: {searched}. Passages best first; show BOOK N for more."
    ]
    for c in found.candidates:
        heads += [f"{printable(c.name)}: {note}" for note in question_notes(c.found, absent=False)]
    out = [line for head in heads for line in wrapped(capped(head, 2 * LINE_MOST), width)]
    if lined:
        asked = asked_stems(found.question.text)
        lines = [Block([], [_passage_line(p, asked)], passage_title(p, LINE_CHAPTER_CHARS), blank=False) for p in passages]
        return out + bounded(lines, max_chars, _size(out), width, "passages", None, option)
    return out + passages_within(passages, found.question.text, _size(out), max_chars, width, option)


def _titled(about: dict) -> str:
    """("Title", Author) where a book's catalogue names them, else nothing."""
    title, author = about.get("title"), about.get("author")
    if not title:
        return ""
    return f' ("{printable(title)}"' + (f", {printable(author)})" if author else ")")
