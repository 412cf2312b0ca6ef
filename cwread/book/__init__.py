"""Bytes → text → numbered paragraphs.

How ids are assigned (stable for the same bytes and the same PARSER_VERSION):

1. The bytes are decoded (see `decode_text`) and line endings normalised to "\\n".
2. The text is cut into *blocks*: runs of non-blank lines separated by blank (whitespace-only)
   lines. The lines of a block are joined with single spaces (hard-wrapped prose becomes one
   line; a word hyphenated across a line break is rejoined).
3. Every block of at most `MAX_PARAGRAPH_CHARS` characters is one paragraph. Paragraph ids are
   1-based and count paragraphs in reading order, so for a file without over-long blocks the
   id of a paragraph is exactly its block number, the rule used by `../shared/data`.
4. A longer block (a "wall": a file with no blank lines, or a chapter without breaks) is cut
   into several paragraphs, each with its own id: at lines, when its lines are unwrapped
   paragraphs; at short lines that end a sentence, when it is hard-wrapped prose; and at
   sentence boundaries for whatever is still too long. Ids after a wall shift accordingly;
   every paragraph keeps `block`, the blank-line block it came from, and `line`, the line of
   the file where it starts.
5. A book of several files (a folder: `folder`; an EPUB's chapters: `formats.epub`) is its
   files' paragraphs in order, each file numbered by these rules from 1 and cited as
   `name:N` (see `Document`, `Source`).
6. A PDF has no blank lines: its paragraphs are rebuilt from the lines as set, and its text
   numbered by these rules, each paragraph knowing the page it starts on (`formats.pdf`).

The package: `document` (paragraphs, sources, the book, its labels and quotes of it), `decoding` (bytes read
within bounds and decoded), `paragraphs` (these rules), `formats` (one module a format:
text, HTML, EPUB, PDF), `folder` (what of a folder is read, in what order) and `load`.
"""

import importlib

# what the package offers, by the module that declares it; loaded at first use (PEP 562), so
# that a module of the book (its tiers, its formats' registry) is read without the rest
_DECLARED_IN = {
    "read_bytes": "decoding",
    "readable_size": "decoding",
    **dict.fromkeys(
        ("LABEL", "SOURCE_NAME", "Document", "Evidence", "Forged", "Paragraph", "Quote", "ShownParagraph", "Source"),
        "document",
    ),
    **dict.fromkeys(("NOVEL_PARAGRAPHS", "Tier", "tier_of"), "tier"),
    "document_from_bytes": "load",
    "load_document": "load",
    "parse_paragraphs": "paragraphs",
}


def __getattr__(name: str):
    if name not in _DECLARED_IN:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_DECLARED_IN[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_DECLARED_IN})


__all__ = [
    "LABEL",
    "NOVEL_PARAGRAPHS",
    "SOURCE_NAME",
    "Document",
    "Evidence",
    "Forged",
    "Paragraph",
    "Quote",
    "ShownParagraph",
    "Source",
    "Tier",
    "document_from_bytes",
    "load_document",
    "parse_paragraphs",
    "read_bytes",
    "readable_size",
    "tier_of",
]
