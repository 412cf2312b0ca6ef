"""Plain text for a reader that is not at a terminal (an AI assistant through the CLI or MCP, a
script): no boxes and no run statistics, each paragraph as `[N] text`, wrapped at a width where
one is given, within a character budget that ends with one line naming what was left out."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence

from cwread.book import Document, Paragraph
from cwread.book.chapters import Chapter, is_heading
from cwread.library.catalog import Hit
from cwread.library_question import LibraryFound
from cwread.records import FindResult
from cwread.retrieval.cast import Cast, CastMember
from cwread.retrieval.segments import Segment
from cwread.text.sentences import sentences
from cwread.text.words import STOPWORDS, WORD, word_stems
from cwread.views.json_output import about_line
from cwread.views.terminal import printable


def wrapped(text: str, width: int | None) -> list[str]:
    """`text` as lines of at most `width` columns (None: one line)."""
    if width is None:
        return [text]
    return textwrap.wrap(text, width, break_on_hyphens=False) or [""]


def _size(lines: list[str]) -> int:
    return sum(len(line) + 1 for line in lines)


def _within(blocks: Iterable[list[str]], max_chars: int | None, used: int = 0) -> tuple[list[str], list[int]]:
    """Whole blocks of lines, in order, while they fit in `max_chars` characters (None: no bound)
    beside the `used` ones before them, the first always; once one is left out, so are the rest.
    The lines kept, and the indexes of the blocks left out."""
    kept: list[str] = []
    left: list[int] = []
    for index, block in enumerate(blocks):
        if left or (max_chars is not None and kept and used + _size(block) > max_chars):
            left.append(index)
            continue
        kept += block
        used += _size(block)
    return kept, left


REPLIES = 3  # paragraphs of dialogue printed after a passage that ends in dialogue
SCENE_PARAGRAPHS = 40  # of a passage widened to its scene, at most (centred on the passage)
_SPEAKS = ("“", '"', "‘", "'")


def _speech(text: str) -> bool:
    return text.lstrip(" _*([").startswith(_SPEAKS)


def scene_break(text: str) -> bool:
    """Whether a paragraph bounds a scene: a chapter heading, or a line with no letters ("* * *")."""
    return is_heading(text) or not any(c.isalpha() for c in text)


def printed_span(document: Document, segment: Segment, expand: int | str | None = None) -> tuple[int, int]:
    """The paragraphs a reader is shown for a passage: the passage, widened by `expand`:
    "replies", the speech that follows a passage ending in dialogue (up to REPLIES paragraphs:
    the answer is often the next speaker's line); a number, as many paragraphs on each side;
    "scene", out to the scene's bounds (a heading or a break line, SCENE_PARAGRAPHS at most).
    Never past the passage's file or story. (By default none: on the dev novels' first calls
    the replies printed no more gold and 1,300 more characters; see benchmarks/README.md.)"""
    first, last = document.story(segment.start)
    start, end = segment.start, segment.end
    if expand is None:
        return start, end
    if expand == "replies":
        while end < last and end - segment.end < REPLIES and _speech(document.paragraph(end).text):
            if not _speech(document.paragraph(end + 1).text):
                break
            end += 1
    elif expand == "scene":
        while (
            start > first
            and not scene_break(document.paragraph(start - 1).text)
            and segment.end - start < SCENE_PARAGRAPHS // 2
        ):
            start -= 1
        while (
            end < last
            and not scene_break(document.paragraph(end + 1).text)
            and end - start < SCENE_PARAGRAPHS
        ):
            end += 1
    else:
        start, end = max(first, start - int(expand)), min(last, end + int(expand))
    return start, end


SCENE_GAP = 2  # paragraphs between two passages printed as one scene


def _same_scene(document: Document, shown: list[int], ids: list[int]) -> bool:
    """Whether passage `ids` sits within SCENE_GAP paragraphs of the `shown` ones, in their
    chapter and file, with no scene break between."""
    if ids[0] > shown[-1] + SCENE_GAP + 1 or ids[-1] < shown[0] - SCENE_GAP - 1:
        return False
    if document.chapter(ids[0]) != document.chapter(shown[0]) or document.file_span(
        ids[0]
    ) != document.file_span(shown[0]):
        return False
    low, high = (shown[-1], ids[0]) if ids[0] > shown[-1] else (ids[-1], shown[0])
    return not any(scene_break(document.paragraph(pid).text) for pid in range(low + 1, high))


def _spans_label(document: Document, ids: list[int]) -> str:
    """Ids as runs: "954-960, 963-965"."""
    runs: list[list[int]] = []
    for pid in ids:
        if runs and pid == runs[-1][-1] + 1:
            runs[-1].append(pid)
        else:
            runs.append([pid])
    return ", ".join(document.span_label(r[0], r[-1]) for r in runs)


def _passages_within(
    titles: list[str], blocks: list[list[str]], max_chars: int | None, used: int, width: int | None
) -> list[str]:
    """Whole passages in rank order while they fit in `max_chars` beside the `used` characters
    before them, then one line naming, by their `titles`, those left out."""
    kept, left = _within(blocks, max_chars, used)
    if left:
        named = "; ".join(titles[i] for i in left)
        kept += ["", *wrapped(f"Left out past {max_chars:,} characters (--max-chars): {named}.", width)]
    return kept


def _passage_block(document: Document, title: str, ids: Iterable[int], width: int | None) -> list[str]:
    """A passage as printed: a blank line, its head line, then each paragraph as `[N] text`."""
    lines = ["", *wrapped(title, width)]
    for pid in ids:
        lines += wrapped(f"[{document.label(pid)}] {printable(document.paragraph(pid).text)}", width)
    return lines


def find_lines(
    result: FindResult,
    limit: int,
    max_chars: int | None,
    absent: list[str],
    width: int | None,
    expand: int | str | None = None,
) -> list[str]:
    """`find`'s passages as a reader reads them: a head line a passage (its rank, span and
    chapter), then its paragraphs, widened as `expand` says (`printed_span`), each paragraph
    printed once; whole passages, best first (the first `limit`, 0: all), up to `max_chars`
    characters (None: no bound), then one line naming those left out; `absent`: the question's
    words that no paragraph holds, said first."""
    doc = result.document
    segments = result.segments if not limit else result.segments[:limit]
    heads = [
        f"{printable(doc.path)}: {len(doc):,} paragraphs; the {len(segments)} passages that fit best, best first."
    ]
    heads += question_notes(result, absent)
    out = [line for head in heads for line in wrapped(head, width)]
    groups: list[tuple[list[int], list[int]]] = []  # (ranks, ids): passages of one scene together
    chapters: list[Chapter | None] = []  # of each group: its first passage's
    taken: set[int] = set()
    for rank, s in enumerate(segments, start=1):
        start, end = printed_span(doc, s, expand)
        ids = [pid for pid in range(start, end + 1) if pid not in taken]
        if not ids:
            continue  # all shown with a passage before it
        taken.update(ids)
        near = next((g for g in groups if _same_scene(doc, g[1], ids)), None)
        if near is None:
            groups.append(([rank], ids))
            chapters.append(result.chapter_of(s))
        else:  # beside a passage printed before: with it, in the story's order, the gap filled
            near[0].append(rank)
            joined = sorted(near[1] + ids)
            gap = [pid for pid in range(joined[0], joined[-1] + 1) if pid not in taken]
            taken.update(gap)
            near[1][:] = sorted(joined + gap)
    titles = [
        f"{'+'.join(f'#{r}' for r in ranks)} [{_spans_label(doc, ids)}]"
        + (f" {printable(chapter.title)}" if chapter else "")
        for (ranks, ids), chapter in zip(groups, chapters, strict=True)
    ]
    blocks = [_passage_block(doc, title, ids, width) for title, (_, ids) in zip(titles, groups, strict=True)]
    return out + _passages_within(titles, blocks, max_chars, _size(out), width)


def paragraph_lines(
    document: Document, paragraphs: list[Paragraph], max_chars: int | None, width: int | None
) -> list[str]:
    """Paragraphs as `[N] text`, a blank line between, each under its chapter where that changes,
    up to `max_chars` characters (the first always), then one line naming those left out."""
    blocks: list[list[str]] = []
    chapter = None
    for p in paragraphs:
        block = [""] if blocks else []
        now = document.chapter(p.id)
        if now is not None and now != chapter:
            block += wrapped(f"({printable(now.title)})", width)
        wrapping = document.wrapping(p.id)
        block += wrapped(
            f"[{document.label(p.id)}] {printable(p.text)}" + (f"  ({wrapping})" if wrapping else ""), width
        )
        blocks.append(block)
        chapter = now
    out, left = _within(blocks, max_chars)
    if left:
        first, last = paragraphs[left[0]].id, paragraphs[left[-1]].id
        span = document.span_label(first, last) if len(left) > 1 else document.label(first)
        out += [
            "",
            *wrapped(f"Left out past {max_chars:,} characters: {len(left)} paragraphs, {span}.", width),
        ]
    return out


def search_lines(hits: Sequence[Hit], max_chars: int | None, used: int = 0) -> list[str]:
    """A library search's hits, each its book and id, then its whole paragraph, up to `max_chars`
    characters beside the `used` ones before them (the first always), then one line naming those
    left out."""
    heads = [f"{hit.book} [{hit.label}]{about_line(hit.about)}" for hit in hits]
    out, left = _within(
        (["", head, hit.text] for head, hit in zip(heads, hits, strict=True)), max_chars, used
    )
    if left:
        out += ["", f"Left out past {max_chars:,} characters: {'; '.join(heads[i] for i in left)}."]
    return out


def question_notes(result: FindResult, absent: list[str]) -> list[str]:
    """What the reader should know of how the question was read: its words no paragraph holds
    (`absent`), and the descriptions the book's cast took for names, with where the book says so."""
    doc = result.document
    notes = [f"No paragraph holds: {', '.join(absent)} (say it otherwise)."] if absent else []
    for n in result.named:
        notes.append(
            f'Looked for {printable(n.member.words)} too: the book says "{printable(n.description.span)}" '
            f"[{doc.label(n.description.pid)}]."
        )
    return notes


MAP_LINE_CHARS = 320  # of a candidate's line: its id, chapter and best-matching sentence (most whole)


def map_lines(result: FindResult, count: int, absent: list[str], width: int | None) -> list[str]:
    """A map of the candidates, one line each, for a reader to pick from and `show`: the `count`
    paragraphs the retrieval ranks best (outside front and back matter), each with its rank, id,
    chapter and the sentence of it that shares most of the question's words, those words marked
    *so*; `absent`: the question's words that no paragraph holds, said first."""
    doc = result.document
    asked = set(
        word_stems([w for w in map(str.lower, WORD.findall(result.question.text)) if w not in STOPWORDS])
    )
    scores = result.paragraph_scores
    ranked = sorted(
        (
            pid
            for pid in range(1, len(scores) + 1)
            if not doc.wrapping(pid) and not is_heading(doc.paragraph(pid).text)
        ),
        key=lambda pid: -scores[pid - 1],
    )
    heads = [
        f"{printable(doc.path)}: {len(doc):,} paragraphs; the {min(count, len(ranked))} that fit best, best first (show N for one whole)."
    ]
    heads += question_notes(result, absent)
    out = [line for head in heads for line in wrapped(head, width)]
    for rank, pid in enumerate(ranked[:count], start=1):
        text = doc.paragraph(pid).text
        # whole sentences, not the clauses a quote is cut to: a reader judged a clause too little
        # ("came back to her in her *new* *home*," with the answer in the clause after it)
        spans = sentences(text) or ((0, len(text)),)
        best = max(spans, key=lambda span: len(_stems(text[slice(*span)]) & asked))
        sentence = " ".join(_marked(text[slice(*best)], asked).split())
        chapter = doc.chapter(pid)
        head = f"#{rank} [{doc.label(pid)}]" + (f" ({printable(chapter.title)})" if chapter else "")
        room = MAP_LINE_CHARS - len(head) - 1
        if len(sentence) > room:  # a window that holds the first marked word, cut at words
            mark = max(sentence.find("*"), 0)
            start = max(0, min(mark - room // 4, len(sentence) - room))
            start = sentence.find(" ", start) + 1 if start else 0
            window = sentence[start : start + room - 4].rsplit(" ", 1)[0]
            sentence = ("… " if start else "") + window + " …"
        line = f"{head} {printable(sentence)}"
        out += wrapped(line, width)
    return out


def _stems(text: str) -> set[str]:
    return set(word_stems([w.lower() for w in WORD.findall(text)]))


def _marked(text: str, asked: set[str]) -> str:
    """`text` with each word whose stem the question holds marked *so*."""
    return WORD.sub(
        lambda m: f"*{m.group(0)}*" if word_stems([m.group(0).lower()])[0] in asked else m.group(0), text
    )


CAST_LISTED = 30  # members `cast` lists with no name asked
MEETS = 5  # the names a member is most often mentioned with, shown when it is asked for


def cast_lines(
    document: Document,
    cast: Cast,
    members: list[CastMember],
    detailed: bool,
    max_chars: int | None,
    width: int | None,
) -> list[str]:
    """The book's cast as a reader reads it: a line a member (its name, kind, how many
    paragraphs mention it and the first, its other forms), then the descriptions the text sets
    beside it, each with its paragraph; `detailed` (a name or description asked): also the names
    it is most often mentioned with, and where. Whole members up to `max_chars`, then one line
    naming those left out."""
    blocks, names = [], []
    for member in members:
        first = member.mentions[0]
        chapter = document.chapter(first)
        where = f"first [{document.label(first)}]" + (f" {chapter.title}" if chapter else "")
        others = [f for f in member.forms if f != member.name]
        head = f"{member.name} ({member.kind}; {len(member.mentions):,} paragraphs, {where})"
        block = ["", *wrapped(head + (f"; also {', '.join(others[:6])}" if others else ""), width)]
        for d in member.descriptions:
            block += wrapped(
                f'  "{d.span}" [{document.label(d.pid)}]'
                + (f" (said {d.times} times)" if d.times > 1 else ""),
                width,
            )
        if detailed:
            for other, shared in cast.meetings(member)[:MEETS]:
                ids = ", ".join(document.label(pid) for pid in shared[:4])
                block += wrapped(
                    f"  with {other.name} in {len(shared)} paragraphs: [{ids}]"
                    + (" ..." if len(shared) > 4 else ""),
                    width,
                )
        blocks.append([printable(line) for line in block])
        names.append(member.name)
    out, left = _within(blocks, max_chars)
    if left:
        out += ["", f"Left out past {max_chars:,} characters: {', '.join(names[i] for i in left)}."]
    return out[1:] if out and out[0] == "" else out


def library_find_lines(
    found: LibraryFound, limit: int, max_chars: int | None, width: int | None, expand: int | str | None = None
) -> list[str]:
    """A question over a library as a reader reads it: which books were searched and why, then
    the passages of those books best first (the first `limit`, 0: all), each headed by its rank,
    book (its name as `show` takes it, and its title where its catalogue gives one), span and
    chapter, widened as `expand` says (`printed_span`), each paragraph once; whole passages up
    to `max_chars`, then one line naming those left out."""
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
        heads += [f"{printable(c.name)}: {note}" for note in question_notes(c.found, [])]
    out = [line for head in heads for line in wrapped(head, width)]
    passages = found.passages if not limit else found.passages[:limit]
    titles, blocks = [], []
    taken: set[tuple[int, int]] = set()  # (book, paragraph) printed
    for rank, p in enumerate(passages, start=1):
        candidate = found.candidates[p.book]
        doc, s = candidate.found.document, p.segment
        start, end = printed_span(doc, s, expand)
        ids = [pid for pid in range(start, end + 1) if (p.book, pid) not in taken]
        if not ids:
            continue
        taken.update((p.book, pid) for pid in ids)
        chapter = candidate.found.chapter_of(s)
        titles.append(
            f"#{rank} {printable(candidate.name)} [{_spans_label(doc, ids)}]"
            + (f" {printable(chapter.title)}" if chapter else "")
        )
        blocks.append(_passage_block(doc, titles[-1], ids, width))
    return out + _passages_within(titles, blocks, max_chars, _size(out), width)


def _titled(about: dict) -> str:
    """("Title", Author) where a book's catalogue names them, else nothing."""
    title, author = about.get("title"), about.get("author")
    if not title:
        return ""
    return f' ("{printable(title)}"' + (f", {printable(author)})" if author else ")")
