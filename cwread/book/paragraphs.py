"""Text → numbered paragraphs, by the rules of the package's docstring."""

from __future__ import annotations

import hashlib
import re

from cwread.book.document import Paragraph

PARSER_VERSION = 1
MAX_PARAGRAPH_CHARS = 4000
PIECE_TARGET_CHARS = 1200
# where a sentence ends: its mark, any closing quotes or brackets, then space (grounding's
# quotes and the splitting of over-long paragraphs cut at the same places)
SENTENCE_END = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+")
_ENDS_SENTENCE = re.compile(r"[.!?:][\"'\u201d\u2019)\]]*$")
_HYPHEN_END = re.compile(r"[^\W\d_]-$")


def parse_paragraphs(text: str, first: int = 1) -> tuple[Paragraph, ...]:
    """Number the paragraphs of `text` by the rules in this module's docstring, from `first`
    (a file's paragraphs after those of the files before it in a book)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    paragraphs: list[Paragraph] = []
    block_lines: list[str] = []
    block_start = 0
    block_no = 0

    def flush() -> None:
        nonlocal block_no
        if not block_lines:
            return
        block_no += 1
        for offset, piece in _split_block(block_lines):
            paragraphs.append(Paragraph(first + len(paragraphs), piece, block_no, block_start + offset))
        block_lines.clear()

    for lineno, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            if not block_lines:
                block_start = lineno
            block_lines.append(line)
        else:
            flush()
    flush()
    return tuple(paragraphs)


def _join_lines(lines: list[str]) -> str:
    parts: list[str] = []
    for raw in lines:
        line = " ".join(raw.split())
        # endswith first: the pattern runs on the few lines that end in a hyphen, not on all
        if parts and parts[-1].endswith("-") and line[:1].islower() and _HYPHEN_END.search(parts[-1]):
            parts[-1] = parts[-1][:-1] + line  # a word hyphenated across the line break
        else:
            parts.append(line)
    return " ".join(parts)


def _split_block(lines: list[str]) -> list[tuple[int, str]]:
    """(line offset within the block, paragraph text) for one blank-line block."""
    joined = _join_lines(lines)
    if len(joined) <= MAX_PARAGRAPH_CHARS:
        return [(0, joined)]
    lengths = sorted(len(line.rstrip()) for line in lines)
    width = lengths[int(len(lengths) * 0.9)] if lengths else 0
    units: list[tuple[int, list[str]]] = []
    if width > 120:  # unwrapped: every line is already a paragraph
        units = [(i, [line]) for i, line in enumerate(lines)]
    else:  # hard-wrapped: a short line that ends a sentence ends a paragraph
        current: list[str] = []
        start = 0
        for i, line in enumerate(lines):
            if not current:
                start = i
            current.append(line)
            stripped = line.rstrip()
            if len(stripped) < 0.8 * width and _ENDS_SENTENCE.search(stripped):
                units.append((start, current))
                current = []
        if current:
            units.append((start, current))
    pieces: list[tuple[int, str]] = []
    for offset, unit_lines in units:
        unit = _join_lines(unit_lines)
        if len(unit) <= MAX_PARAGRAPH_CHARS:
            pieces.append((offset, unit))
        else:
            pieces.extend((offset, chunk) for chunk in _sentence_chunks(unit))
    return pieces


def _sentence_chunks(text: str) -> list[str]:
    """Cut `text` at sentence ends into chunks near PIECE_TARGET_CHARS (hard cut if no end)."""
    sentences = [s for s in SENTENCE_END.split(text) if s]
    chunks: list[str] = []
    current = ""
    for sentence in sentences:
        # one endless sentence: cut at a space, walking an offset (slicing off the rest at each
        # cut copied it again: a 20 MB line with no sentence end took 9 s)
        start = 0
        while len(sentence) - start > MAX_PARAGRAPH_CHARS:
            space = sentence.rfind(" ", start, start + PIECE_TARGET_CHARS)
            cut = space + 1 if space != -1 else start + PIECE_TARGET_CHARS
            if current:
                chunks.append(current)
                current = ""
            chunks.append(sentence[start:cut].rstrip())
            start = cut
        sentence = sentence[start:] if start else sentence
        if current and len(current) + 1 + len(sentence) > PIECE_TARGET_CHARS:
            chunks.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}" if current else sentence
    if current:
        chunks.append(current)
    return chunks


def fingerprint(paragraphs: tuple[Paragraph, ...]) -> str:
    """A hash of the paragraph texts and the parser version: the cache key of a document."""
    h = hashlib.sha256(f"cwread-paragraphs-v{PARSER_VERSION}\n".encode())
    for p in paragraphs:
        h.update(p.text.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()
