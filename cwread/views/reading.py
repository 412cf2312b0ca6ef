"""Plain text for a reader that is not at a terminal (an AI assistant through the CLI or MCP, a
script): no boxes and no run statistics, each paragraph as `[N] text`, wrapped at a width where
one is given, within a character budget that ends with one line naming what was left out."""

from __future__ import annotations

import textwrap

from cwread.book import Document, Paragraph
from cwread.book.chapters import is_heading
from cwread.records import FindResult
from cwread.text.sentences import sentences
from cwread.text.words import STOPWORDS, WORD, word_stems
from cwread.views.terminal import printable


def wrapped(text: str, width: int | None) -> list[str]:
    """`text` as lines of at most `width` columns (None: one line)."""
    if width is None:
        return [text]
    return textwrap.wrap(text, width, break_on_hyphens=False) or [""]


def _size(lines: list[str]) -> int:
    return sum(len(line) + 1 for line in lines)


def find_lines(
    result: FindResult, limit: int, max_chars: int | None, absent: list[str], width: int | None
) -> list[str]:
    """`find`'s passages as a reader reads them: a head line a passage (its rank, span and
    chapter), then its paragraphs; whole passages, best first (the first `limit`, 0: all), up to
    `max_chars` characters (None: no bound), then one line naming those left out; `absent`: the
    question's words that no paragraph holds, said first."""
    doc = result.document
    segments = result.segments if not limit else result.segments[:limit]
    heads = [f"{printable(doc.path)}: {len(doc):,} paragraphs; the {len(segments)} passages that fit best, best first."]
    if absent:
        heads.append(f"No paragraph holds: {', '.join(absent)} (say it otherwise).")
    out = [line for head in heads for line in wrapped(head, width)]
    used = _size(out)
    left: list[str] = []
    for rank, s in enumerate(segments, start=1):
        chapter = doc.chapter(s.anchors[0] if s.anchors else s.start)
        head = f"#{rank} [{doc.span_label(s.start, s.end)}]" + (f" {printable(chapter.title)}" if chapter else "")
        block = ["", *wrapped(head, width)]
        for pid in s.ids:
            block += wrapped(f"[{doc.label(pid)}] {printable(doc.paragraph(pid).text)}", width)
        if left or (max_chars is not None and used + _size(block) > max_chars and rank > 1):
            left.append(head)  # whole passages in rank order: once one is left out, so are the rest
            continue
        out += block
        used += _size(block)
    if left:
        out += ["", *wrapped(f"Left out past {max_chars:,} characters (--max-chars): {'; '.join(left)}.", width)]
    return out


def paragraph_lines(document: Document, paragraphs: list[Paragraph], max_chars: int | None, width: int | None) -> list[str]:
    """Paragraphs as `[N] text`, a blank line between, each under its chapter where that changes,
    up to `max_chars` characters (the first always), then one line naming those left out."""
    out: list[str] = []
    used, chapter = 0, None
    left: list[Paragraph] = []
    for p in paragraphs:
        block = [] if not out else [""]
        now = document.chapter(p.id)
        if now is not None and now != chapter:
            block += wrapped(f"({printable(now.title)})", width)
        wrapping = document.wrapping(p.id)
        block += wrapped(f"[{document.label(p.id)}] {printable(p.text)}" + (f"  ({wrapping})" if wrapping else ""), width)
        if left or (max_chars is not None and out and used + _size(block) > max_chars):
            left.append(p)
            continue
        out += block
        used += _size(block)
        chapter = now
    if left:
        span = document.span_label(left[0].id, left[-1].id) if len(left) > 1 else document.label(left[0].id)
        out += ["", *wrapped(f"Left out past {max_chars:,} characters: {len(left)} paragraphs, {span}.", width)]
    return out


MAP_LINE_CHARS = 320  # of a candidate's line: its id, chapter and best-matching sentence (most whole)


def map_lines(result: FindResult, count: int, absent: list[str], width: int | None) -> list[str]:
    """A map of the candidates, one line each, for a reader to pick from and `show`: the `count`
    paragraphs the retrieval ranks best (outside front and back matter), each with its rank, id,
    chapter and the sentence of it that shares most of the question's words, those words marked
    *so*; `absent`: the question's words that no paragraph holds, said first."""
    doc = result.document
    asked = set(word_stems([w for w in map(str.lower, WORD.findall(result.question.text)) if w not in STOPWORDS]))
    scores = result.paragraph_scores
    ranked = sorted(
        (pid for pid in range(1, len(scores) + 1) if not doc.wrapping(pid) and not is_heading(doc.paragraph(pid).text)),
        key=lambda pid: -scores[pid - 1],
    )
    heads = [f"{printable(doc.path)}: {len(doc):,} paragraphs; the {min(count, len(ranked))} that fit best, best first (show N for one whole)."]
    if absent:
        heads.append(f"No paragraph holds: {', '.join(absent)} (say it otherwise).")
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
    return WORD.sub(lambda m: f"*{m.group(0)}*" if word_stems([m.group(0).lower()])[0] in asked else m.group(0), text)
