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
5. A book of several files (a folder: cwread.folder; an EPUB's chapters: cwread.ebook) is its
   files' paragraphs in order, each file numbered by these rules from 1 and cited as
   `name:N` (see `Document`, `Source`).
"""

from __future__ import annotations

import bisect
import difflib
import hashlib
import json
import re
import stat
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

from cwread.errors import InputError
from cwread.folder import opened_inside

PARSER_VERSION = 1
MAX_PARAGRAPH_CHARS = 4000
PIECE_TARGET_CHARS = 1200
DEFAULT_MAX_BYTES = 64 * 1024 * 1024

_BINARY_SIGNATURES = {
    b"%PDF": "a PDF; convert it to plain text first (e.g. `pdftotext FILE out.txt`)",
    b"PK\x03\x04": "a ZIP archive but not an EPUB (a DOCX?); convert it to plain text first",
    b"\x1f\x8b": "gzip-compressed; decompress it first (`gunzip`)",
    b"\x7fELF": "a program, not a text",
    b"\x89PNG": "an image, not a text",
    b"\xff\xd8\xff": "an image, not a text",
}
# where a sentence ends: its mark, any closing quotes or brackets, then space (grounding's
# quotes and the splitting of over-long paragraphs cut at the same places)
SENTENCE_END = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+")
_ENDS_SENTENCE = re.compile(r"[.!?:][\"'\u201d\u2019)\]]*$")
_HYPHEN_END = re.compile(r"[^\W\d_]-$")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")  # category Cc but the whitespace ones


@dataclass(frozen=True)
class Paragraph:
    """One numbered paragraph: `id` is what users and models cite as [id]."""

    id: int
    text: str
    block: int
    line: int


class Passage(NamedTuple):
    """A paragraph's id, the text an agent is shown of it (a packet may cut a long one) and
    the label it is shown under ("" for its id: see `Document.label`)."""

    id: int
    text: str
    label: str = ""

    @property
    def shown_id(self) -> str:
        return self.label or str(self.id)


Evidence = Sequence[Passage]  # what an agent is shown, in the order it is shown


@dataclass(frozen=True)
class Source:
    """One file of a book of several (a folder's file, an EPUB's chapter): its paragraphs are
    first..last of the book, cited as `name:N` with N counted from 1 within the file.

    `name` is short and stable: the file's path in the folder without its suffix, or the
    chapter's file in the EPUB (see `source_name`); `path` says where it was read."""

    name: str
    path: str
    first: int
    last: int
    fingerprint: str  # its paragraphs' hash: the key of its cached embeddings

    def __len__(self) -> int:
        return self.last - self.first + 1


# a source's name: letters, digits and _ . - / (never ":", brackets or spaces, so `[name:N]`
# reads back unambiguously); a label is `N` in a single file, `name:N` in a book of sources
MAX_NAME = 100  # characters of a source's name: a longer path keeps its end
SOURCE_NAME = rf"[\w.\-/]{{1,{MAX_NAME}}}"
# possessive and bounded: a hostile "[1-1-1-...x" in the book took 0.2 s a paragraph to read
# past, backtracking
LABEL = rf"(?:{SOURCE_NAME}+\s*+:\s*+)?\d++"
_UNSAFE_NAME = re.compile(r"[^\w.\-/]+")


def source_name(relative: str) -> str:
    """The citation name of a file at `relative` (a "/"-separated path): the path without
    its suffixes of markup or text, characters that cannot stand in `[name:N]` as "_"."""
    stem = relative
    while True:
        base, dot, suffix = stem.rpartition(".")
        if dot and base and "/" not in suffix and suffix.lower() in TEXT_SUFFIXES:
            stem = base
        else:
            break
    return _safe_name(stem)


def _safe_name(text: str) -> str:
    return _UNSAFE_NAME.sub("_", text).strip("_/")[-MAX_NAME:].lstrip("_/") or "_"


TEXT_SUFFIXES = {"txt", "text", "md", "markdown", "rst", "html", "htm", "xhtml", "xml", "epub"}


@dataclass(frozen=True)
class Document:
    """A text read into numbered paragraphs: a file, or a book of several files (a folder,
    an EPUB's chapters) read as one, in order.

    `Paragraph.id` is the paragraph's place in the whole book (1-based), what segments,
    packets and quotes hold. Users and models see its *label*: the id itself in a single
    file; `source:N` in a book of `sources`. `sha256` hashes the raw bytes (of a folder: its
    files' names and hashes); `fingerprint` hashes the paragraphs (and the parser version,
    and the sources' names), so caches follow the content the retrieval actually sees.
    """

    path: str
    sha256: str
    encoding: str
    paragraphs: tuple[Paragraph, ...]
    fingerprint: str
    replaced: int = 0  # invalid bytes replaced by U+FFFD while decoding (see `decode`)
    sources: tuple[Source, ...] = ()  # none for a single file
    skipped: tuple[str, ...] = ()  # files of a folder left out, each "name: why"

    def __len__(self) -> int:
        return len(self.paragraphs)

    def paragraph(self, pid: int) -> Paragraph:
        """The paragraph with id `pid` (1-based); InputError when out of range."""
        if not 1 <= pid <= len(self.paragraphs):
            raise InputError(
                f"paragraph {pid} is out of range: {self.path} has "
                f"{len(self.paragraphs)} paragraphs (1-{len(self.paragraphs)})"
            )
        return self.paragraphs[pid - 1]

    def source(self, pid: int) -> Source | None:
        """The file paragraph `pid` is in (None in a single file)."""
        if not self.sources:
            return None
        at = bisect.bisect_right(self._firsts, pid) - 1
        return self.sources[max(at, 0)]

    def label(self, pid: int) -> str:
        """What users and models call paragraph `pid`: "12", or "ch03:12" in a book of sources."""
        source = self.source(pid)
        return str(pid) if source is None else f"{source.name}:{pid - source.first + 1}"

    def public_id(self, pid: int) -> int | str:
        """Paragraph `pid` as JSON names it: its number in a single file, "ch03:12" otherwise."""
        return pid if not self.sources else self.label(pid)

    def ref(self, pid: int) -> tuple[str | None, int]:
        """(source name, number within it) of paragraph `pid`; (None, pid) in a single file."""
        source = self.source(pid)
        return (None, pid) if source is None else (source.name, pid - source.first + 1)

    def file_span(self, pid: int) -> tuple[int, int]:
        """The first and last ids of the file paragraph `pid` is in."""
        source = self.source(pid)
        return (1, len(self.paragraphs)) if source is None else (source.first, source.last)

    def id_of(self, label: str) -> int | None:
        """The id a label names ("12", "ch03:12", spaces allowed around ":"), None if none."""
        name, _, number = label.replace(" ", "").rpartition(":")
        if not number.isdigit():
            return None
        n = int(number)
        if not self.sources:
            return n if not name and 1 <= n <= len(self.paragraphs) else None
        source = self._by_name.get(name)
        return source.first + n - 1 if source is not None and 1 <= n <= len(source) else None

    def passages(self, ids) -> list[Passage]:
        """The paragraphs `ids`, in the order given, as an agent is shown them."""
        return [Passage(pid, self.paragraph(pid).text, self.label(pid)) for pid in ids]

    def span_text(self, start: int, end: int) -> str:
        """Paragraphs start..end (inclusive) as `[label] text` lines, the form models are shown."""
        return "\n\n".join(f"[{self.label(p.id)}] {p.text}" for p in self.paragraphs[start - 1 : end])

    def span_label(self, start: int, end: int) -> str:
        """Paragraphs start..end as users read them: "12-20", "ch03:12-20", or "ch03:40-ch04:2"."""
        first, last = self.label(start), self.label(end)
        if start == end:
            return first
        if self.source(start) == self.source(end):
            return f"{first}-{last.rpartition(':')[2]}"
        return f"{first}-{last}"

    @cached_property
    def _firsts(self) -> list[int]:
        return [s.first for s in self.sources]

    @cached_property
    def _by_name(self) -> dict[str, Source]:
        return {s.name: s for s in self.sources}

    def parse_spec(self, spec: str) -> list[int]:
        """Ids named by "12", "10-14" or "3,7,10-12"; in a book of sources "ch03:12",
        "ch03:12-20", "ch03:40-ch04:2" or "ch03" (the whole file). InputError if invalid."""
        ids: list[int] = []
        for part in spec.strip().split(","):
            part = part.strip()
            ids.extend(self._parse_part(part))
        return ids

    def _parse_part(self, part: str) -> list[int]:
        if self.sources and part.replace(" ", "") in self._by_name:
            source = self._by_name[part.replace(" ", "")]
            return list(range(source.first, source.last + 1))
        m = re.fullmatch(rf"\s*(?:({SOURCE_NAME})\s*:\s*)?(\d+)\s*(?:-\s*(?:({SOURCE_NAME})\s*:\s*)?(\d+))?\s*", part)
        if not part or not m:
            example = "ch03:12, ch03:12-20 or ch03" if self.sources else "N, N-M or a comma list like 3,7,10-12"
            raise InputError(f"bad paragraph range {part!r}: use {example}")
        first_name, lo_n, last_name, hi_n = m.groups()
        lo = self._resolve(first_name, int(lo_n))
        hi = lo if hi_n is None else self._resolve(last_name or first_name, int(hi_n))
        if lo > hi:
            raise InputError(f"bad paragraph range {part!r}: the start is after the end")
        return list(range(lo, hi + 1))

    def _resolve(self, name: str | None, number: int) -> int:
        count = len(self.paragraphs)
        if not self.sources:
            if name is not None:
                raise InputError(f"{self.path} is a single file: name its paragraphs by number alone (1-{count})")
            if not 1 <= number <= count:
                raise InputError(f"paragraph {number} is out of range: the text has {count} paragraphs (1-{count})")
            return number
        if name is None:
            names = ", ".join(s.name for s in self.sources[:3]) + (", ..." if len(self.sources) > 3 else "")
            raise InputError(
                f"paragraph {number} needs its file: {self.sources[0].name}:{number}, say "
                f"({self.path} holds {len(self.sources)} files: {names})"
            )
        source = self._by_name.get(name)
        if source is None:
            close = difflib.get_close_matches(name, list(self._by_name), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise InputError(f"{self.path} has no file named {name!r}{hint}")
        if not 1 <= number <= len(source):
            raise InputError(
                f"paragraph {name}:{number} is out of range: {source.path} has {len(source)} paragraphs (1-{len(source)})"
            )
        return source.first + number - 1


def read_bytes(path: str, max_bytes: int = DEFAULT_MAX_BYTES, within: tuple[Path, ...] = ()) -> bytes:
    """The bytes of `path` ("-" reads stdin), or InputError naming what is wrong. With
    `within`, the file as opened must lie inside one of those folders: checked on the open
    handle, so a path swapped for a link after an earlier check is refused, never read."""
    if path == "-":
        import sys

        if sys.stdin is None or sys.stdin.closed:  # e.g. `cwread find - Q <&-`
            raise InputError("standard input is closed; give a file, or pipe the text in")
        try:
            data = sys.stdin.buffer.read(max_bytes + 1)
        except (OSError, ValueError) as exc:
            raise InputError(f"standard input cannot be read ({exc})") from None
        if len(data) > max_bytes:
            raise InputError(
                f"standard input holds more than {readable_size(max_bytes)}, the most cwread reads "
                "(raise the limit with CWREAD_MAX_BYTES)"
            )
        return data
    p = Path(path)
    if not p.exists():
        raise InputError(f"{path}: no such file")
    if p.is_dir():
        raise InputError(f"{path} is a directory; give a text file")
    try:
        mode = p.stat().st_mode
        if not stat.S_ISREG(mode):  # a FIFO would block, a device never ends
            what = "a pipe" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a file"
            raise InputError(
                f"{path} is {what}, not a regular file; pipe its text to standard input and give - "
                "as the book (e.g. `... | cwread show - 1`)"
            )
        with open(p, "rb") as f:  # bounded: a file may grow after its size was read
            if within and not opened_inside(f.fileno(), p, within):
                raise InputError(f"{path} leads out of the folders it may be read from; refused")
            data = f.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise InputError(_too_big(path, max(len(data), p.stat().st_size), max_bytes))
        return data
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _too_big(what: str, size: int, limit: int) -> str:
    return (
        f"{what} is {readable_size(size)}; cwread reads texts up to {readable_size(limit)} "
        "(raise the limit with CWREAD_MAX_BYTES)"
    )


def readable_size(n: int) -> str:
    """Bytes in the largest unit that keeps the number at least 1 (1000 bytes, 4.0 KiB, 12 MiB)."""
    if n < 1024:
        return f"{n} bytes"
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if n < 10 else f"{n:.0f} {unit}"
    return f"{n:.0f} GiB"


def decode_text(data: bytes, encoding: str | None = None, name: str = "input") -> tuple[str, str]:
    """Decode `data` to text; returns (text, encoding used). See `decode`."""
    text, used, _ = decode(data, encoding, name)
    return text, used


def decode(data: bytes, encoding: str | None = None, name: str = "input") -> tuple[str, str, int]:
    """Decode `data` to text; returns (text, encoding used, bytes replaced as invalid).

    With `encoding` given it is used strictly. Otherwise: a UTF-32/UTF-16/UTF-8 byte-order
    mark decides; UTF-16 without a mark is recognised by its zero bytes; then UTF-8 (a few
    invalid bytes among valid UTF-8 are replaced by U+FFFD and counted), then cp1252, then
    latin-1. Binary data is refused with a message saying what it looks like, whichever
    encoding was used (UTF-16 read as ASCII is all NUL bytes).
    """
    replaced = 0
    if encoding:
        try:
            text, used = data.decode(encoding), encoding
        except LookupError:
            raise InputError(f"unknown encoding {encoding!r}") from None
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{name} is not valid {encoding} (byte {exc.start}); try another --encoding"
            ) from None
    else:
        text, used, replaced = _guess_decode(data, name)
    _refuse_binary(text, name, encoding)
    return text, used, replaced


def _guess_decode(data: bytes, name: str) -> tuple[str, str, int]:
    boms = [
        (b"\xff\xfe\x00\x00", "utf-32-le"),
        (b"\x00\x00\xfe\xff", "utf-32-be"),
        (b"\xef\xbb\xbf", "utf-8-sig"),
        (b"\xff\xfe", "utf-16-le"),
        (b"\xfe\xff", "utf-16-be"),
    ]
    for bom, enc in boms:
        if data.startswith(bom):
            try:
                return data[len(bom) :].decode(enc.replace("-sig", "")), enc, 0
            except UnicodeDecodeError:
                raise InputError(f"{name} starts with a {enc} mark but is not valid {enc}") from None
    for sig, what in _BINARY_SIGNATURES.items():
        if data.startswith(sig):
            raise InputError(f"{name} looks like {what}")
    if b"\x00" in data[:4096]:
        enc = _utf16_without_bom(data)
        if enc is None:
            raise InputError(f"{name} looks like a binary file, not a text")
        try:
            return data.decode(enc), enc, 0
        except UnicodeDecodeError:
            raise InputError(f"{name} looks like a binary file, not a text") from None
    try:
        return data.decode("utf-8"), "utf-8", 0
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8", errors="replace")
    invalid = text.count("\ufffd") - data.count("\ufffd".encode())
    valid = sum(1 for ch in text if ord(ch) > 0x7F) - invalid
    # A cp1252 or latin-1 text is almost never valid UTF-8 by accident: when most of the
    # non-ASCII bytes form valid UTF-8, the few others are damage, not another encoding.
    if valid > invalid:
        return text, "utf-8", invalid
    for enc in ("cp1252", "latin-1"):
        try:
            return data.decode(enc), enc, 0
        except UnicodeDecodeError:
            continue
    raise AssertionError("latin-1 decodes any bytes")


def _utf16_without_bom(data: bytes) -> str | None:
    """'utf-16-le'/'utf-16-be' when zero bytes sit on one parity as in ASCII-heavy UTF-16."""
    sample = data[:4096]
    half = max(1, len(sample) // 2)
    even_zero = sample[0::2].count(0) / half
    odd_zero = sample[1::2].count(0) / half
    if odd_zero > 0.3 and even_zero < 0.05:
        return "utf-16-le"
    if even_zero > 0.3 and odd_zero < 0.05:
        return "utf-16-be"
    return None


def _refuse_binary(text: str, name: str, forced: str | None = None) -> None:
    sample = text[:65536]
    if not sample:
        return
    control = len(_CONTROL.findall(sample))
    if control / len(sample) > 0.01:
        if forced:
            raise InputError(
                f"{name} read as {forced} is full of control bytes (NUL, ...), as a binary file is; "
                "try another --encoding, or none to have it detected"
            )
        raise InputError(f"{name} looks like a binary file, not a text")


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


def load_document(
    path: str, encoding: str | None = None, max_bytes: int | None = None, within: tuple[Path, ...] = ()
) -> Document:
    """Read `path` (a file, a folder, or "-" for stdin) into a Document; InputError on
    anything unusable. `within`: folders a file must be opened inside (see `read_bytes`; a
    folder's files are always held to the folder)."""
    if max_bytes is None:
        max_bytes = _max_bytes_from_env()
    if path != "-" and Path(path).is_dir():
        return _load_folder(Path(path), encoding, max_bytes)
    data = read_bytes(path, max_bytes, within)
    name = "standard input" if path == "-" else path
    return document_from_bytes(data, name, encoding, max_bytes)


@dataclass(frozen=True)
class _Part:
    """One file's paragraphs, numbered from 1, before they join a book: its citation name
    ("" for a single file), where it was read, and its paragraphs' fingerprint."""

    name: str
    path: str
    texts: tuple[str, ...]
    blocks: tuple[int, ...]
    lines: tuple[int, ...]
    fingerprint: str

    def paragraphs(self, first: int = 1) -> tuple[Paragraph, ...]:
        """Its paragraphs, numbered from `first` (made once per book: 125,000 took 0.3 s)."""
        return tuple(map(Paragraph, range(first, first + len(self.texts)), self.texts, self.blocks, self.lines))


def document_from_bytes(
    data: bytes, name: str, encoding: str | None = None, max_bytes: int | None = None
) -> Document:
    """Build a Document from raw bytes (the core of `load_document`): a plain text, an HTML
    file, or an EPUB (cwread.ebook: each chapter a source, cited by its file's name;
    `max_bytes` bounds what it expands to)."""
    parts, used, replaced = _file_parts(data, name, encoding, max_bytes or _max_bytes_from_env())
    if len(parts) == 1 and not parts[0].name:
        if not parts[0].texts:
            raise InputError(f"{name} is empty (only whitespace)")
        return Document(
            path=name,
            sha256=hashlib.sha256(data).hexdigest(),
            encoding=used,
            paragraphs=parts[0].paragraphs(),
            fingerprint=parts[0].fingerprint,
            replaced=replaced,
        )
    return _assemble(name, hashlib.sha256(data).hexdigest(), used, parts, replaced, ())


PARSED_CACHE_BYTES = 64 * 1024  # a smaller file parses about as fast as its cache entry is read


def _file_parts(data: bytes, name: str, encoding: str | None, max_bytes: int) -> tuple[list[_Part], str, int]:
    """(parts, encoding used, bytes replaced) of one file's bytes: one part named "" for a
    plain or HTML file, one per chapter for an EPUB. A large text or HTML file's parse is
    cached by its bytes (a 50 MB folder's took 1.2 s of a 3 s question)."""
    from cwread import ebook

    if len(data) < PARSED_CACHE_BYTES or ebook.is_epub(data, name):  # nothing of an EPUB reaches the disk
        return _parse_file(data, name, encoding, max_bytes)
    from cwread.cache import cache_root, read_entry, remove_entry, write_entry
    from cwread.errors import CacheError

    key = f"{hashlib.sha256(data).hexdigest()}-{_slug(encoding or 'detect')}-v{PARSER_VERSION}"
    entry = cache_root() / "texts" / key[:2] / key
    if read_entry(entry) is not None:
        try:
            return _parts_from_json(json.loads((entry / "parsed.json").read_text(encoding="utf-8")), name)
        except (OSError, ValueError, KeyError, TypeError):
            remove_entry(entry)
    parts, used, replaced = _parse_file(data, name, encoding, max_bytes)

    def build(tmp: Path) -> dict:
        body = {"used": used, "replaced": replaced, "parts": [_part_json(p) for p in parts]}
        (tmp / "parsed.json").write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
        return {"parser": PARSER_VERSION}

    with suppress(CacheError):  # a cache that cannot be written costs the next read the parse
        write_entry(entry, build)
    return parts, used, replaced


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:40]


def _part_json(part: _Part) -> dict:
    return {
        "name": part.name,
        "path": part.path,
        "fingerprint": part.fingerprint,
        "texts": part.texts,
        "blocks": part.blocks,
        "lines": part.lines,
    }


def _parts_from_json(body: dict, name: str) -> tuple[list[_Part], str, int]:
    parts = []
    for raw in body["parts"]:
        texts, blocks, lines = tuple(raw["texts"]), tuple(raw["blocks"]), tuple(raw["lines"])
        if not len(texts) == len(blocks) == len(lines):
            raise ValueError("a damaged parse")
        path = raw["path"] if raw["name"] else name
        parts.append(_Part(raw["name"], path, texts, blocks, lines, raw["fingerprint"]))
    return parts, str(body["used"]), int(body["replaced"])


def _parse_file(data: bytes, name: str, encoding: str | None, max_bytes: int) -> tuple[list[_Part], str, int]:
    from cwread import ebook

    if not data.strip():
        raise InputError(f"{name} is empty")
    if ebook.is_epub(data, name):
        chapters = ebook.epub_chapters(data, name, max_bytes, lambda raw, where: decode(raw, None, where)[0])
        names = _chapter_names([path for path, _ in chapters])
        return [_part(n, path, text) for n, (path, text) in zip(names, chapters, strict=True)], "epub", 0
    text, used, replaced = decode(data, encoding, name)
    if ebook.looks_like_html(text, name):
        text, used = ebook.html_text(text), f"html ({used})"
    return [_part("", name, text)], used, replaced


def _part(name: str, path: str, text: str) -> _Part:
    paragraphs = parse_paragraphs(text)
    return _Part(
        name,
        path,
        tuple(p.text for p in paragraphs),
        tuple(p.block for p in paragraphs),
        tuple(p.line for p in paragraphs),
        fingerprint(paragraphs),
    )


def _chapter_names(paths: list[str]) -> list[str]:
    """Citation names of an EPUB's chapters: each file's name without its suffix, or, where
    two share one, its path in the package (with the suffix, where even that is shared)."""
    names = [source_name(p.rsplit("/", 1)[-1]) for p in paths]
    for stage in (source_name, _safe_name):
        shared = {n for n in names if names.count(n) > 1}
        names = [stage(p) if n in shared else n for p, n in zip(paths, names, strict=True)]
    if len(set(names)) < len(names):
        raise InputError(f"two chapters would both be cited as {next(n for n in names if names.count(n) > 1)}:N")
    return names


def _assemble(
    path: str, sha256: str, encoding: str, parts: list[_Part], replaced: int, skipped: tuple[str, ...]
) -> Document:
    """One book of several sources, numbered through in their order (see `Document`)."""
    paragraphs: list[Paragraph] = []
    sources: list[Source] = []
    for part in parts:
        if not part.texts:
            continue
        first = len(paragraphs) + 1
        paragraphs.extend(part.paragraphs(first))
        sources.append(Source(part.name, part.path, first, len(paragraphs), part.fingerprint))
    if not paragraphs:
        raise InputError(f"{path} is empty (only whitespace)")
    book = hashlib.sha256(f"cwread-book-v{PARSER_VERSION}\n".encode())
    for source in sources:
        book.update(f"{source.name}\x00{source.fingerprint}\n".encode())
    return Document(
        path=path,
        sha256=sha256,
        encoding=encoding,
        paragraphs=tuple(paragraphs),
        fingerprint=book.hexdigest(),
        replaced=replaced,
        sources=tuple(sources),
        skipped=skipped,
    )


def _load_folder(root: Path, encoding: str | None, max_bytes: int) -> Document:
    """A folder as one book (see cwread.folder): each readable file a source, in order."""
    from cwread import folder

    listing = folder.list_folder(root)
    real_root = root.resolve()
    if listing.total_bytes > max_bytes:
        raise InputError(
            f"{root} holds {readable_size(listing.total_bytes)} of files; cwread reads books up to "
            f"{readable_size(max_bytes)} (raise the limit with CWREAD_MAX_BYTES)"
        )
    parts: list[_Part] = []
    skipped = list(listing.skipped)
    named: dict[str, str] = {}
    digest = hashlib.sha256(b"cwread-folder-v1\n")
    encodings: dict[str, None] = {}
    replaced = 0
    left = max_bytes
    for rel in listing.files:
        try:
            data = read_bytes(str(root / rel), left, (real_root,))
            own, used, bad = _file_parts(data, rel, encoding, left)
        except InputError as exc:
            skipped.append(str(exc))
            continue
        left -= len(data)
        stem = source_name(rel)
        if stem in named:
            raise InputError(
                f"{root}: {named[stem]} and {rel} would both be cited as {stem}:N; rename one of them"
            )
        named[stem] = rel
        for part in own:
            name = f"{stem}/{part.name}" if part.name else stem
            parts.append(replace(part, name=name, path=f"{rel}/{part.path}" if part.name else rel))
        digest.update(f"{rel}\x00{hashlib.sha256(data).hexdigest()}\n".encode())
        encodings[used] = None
        replaced += bad
    if not parts:
        why = f": {'; '.join(skipped[:3])}{'; ...' if len(skipped) > 3 else ''}" if skipped else ""
        raise InputError(f"{root} holds no readable text{why}")
    return _assemble(str(root), digest.hexdigest(), ", ".join(encodings), parts, replaced, tuple(skipped))


def _max_bytes_from_env() -> int:
    from cwread.settings import env_positive

    return env_positive("CWREAD_MAX_BYTES", int) or DEFAULT_MAX_BYTES
