"""A path (a file, a folder, or standard input) read into a `Document`: each file by its
format (see `formats`), a large file's reading cached by its bytes, a folder's
files joined into one book of sources."""

from __future__ import annotations

import hashlib
import json
import re
from contextlib import suppress
from dataclasses import replace
from pathlib import Path

from cwread.book.decoding import max_bytes_from_env, read_bytes, readable_size
from cwread.book.document import Document, Paragraph, Source
from cwread.book.formats import Part, Reading, format_for
from cwread.book.formats.registry import source_name
from cwread.book.paragraphs import PARSER_VERSION
from cwread.errors import InputError


def load_document(
    path: str, encoding: str | None = None, max_bytes: int | None = None, within: tuple[Path, ...] = ()
) -> Document:
    """Read `path` (a file, a folder, or "-" for stdin) into a Document; InputError on
    anything unusable. A Calibre book folder (one with a metadata.opf) is read from its best
    format (cwread.book.calibre). `within`: folders a file must be opened inside (see `read_bytes`; a
    folder's files are always held to the folder)."""
    if max_bytes is None:
        max_bytes = max_bytes_from_env()
    if path != "-" and Path(path).is_dir():
        from cwread.book import calibre

        chosen = calibre.best_format(Path(path)) if (Path(path) / calibre.OPF).is_file() else None
        if chosen is None:
            return _load_folder(Path(path), encoding, max_bytes)
        path = str(chosen)  # a Calibre book folder is its book in its best format, not its files together
        within = within or (chosen.parent.resolve(),)
    data = read_bytes(path, max_bytes, within)
    name = "standard input" if path == "-" else path
    return document_from_bytes(data, name, encoding, max_bytes)


def document_from_bytes(
    data: bytes, name: str, encoding: str | None = None, max_bytes: int | None = None
) -> Document:
    """Build a Document from raw bytes (the core of `load_document`), read by
    their format: a plain text, an HTML file, a PDF, or an EPUB (each chapter a source,
    cited by its file's name; `max_bytes` bounds what it expands to)."""
    sha256 = hashlib.sha256(data).hexdigest()
    reading = _read_file(data, sha256, name, encoding, max_bytes or max_bytes_from_env())
    parts = reading.parts
    if len(parts) == 1 and not parts[0].name:
        if not parts[0].texts:
            raise InputError(f"{name} is empty (only whitespace)")
        return Document(
            path=name,
            sha256=sha256,
            encoding=reading.encoding,
            paragraphs=parts[0].paragraphs(),
            fingerprint=parts[0].fingerprint,
            replaced=reading.replaced,
            headings=frozenset(parts[0].headings),
        )
    return _assemble(
        name, sha256, reading.encoding, list(parts), reading.replaced, ()
    )


def _read_file(data: bytes, sha256: str, name: str, encoding: str | None, max_bytes: int) -> Reading:
    """One file's bytes (`sha256`: their hash, which its callers need too) read by its
    format. A large file's reading is cached by its bytes (a 50 MB folder's parse
    took 1.2 s of a 3 s question; a PDF's reading, longer)."""
    if not data.strip():
        raise InputError(f"{name} is empty")
    book_format = format_for(data, name)
    if book_format.cached_from is None or len(data) < book_format.cached_from:
        return book_format.read(data, name, encoding, max_bytes)
    from cwread.cache import cache_root, read_entry, remove_entry, write_entry
    from cwread.errors import CacheError

    key = f"{sha256}-{_slug(encoding or 'detect')}-v{PARSER_VERSION}-{book_format.name}{book_format.version}"
    entry = cache_root() / "texts" / key[:2] / key
    if read_entry(entry) is not None:
        try:
            return _reading_from_json(json.loads((entry / "parsed.json").read_text(encoding="utf-8")), name)
        except (OSError, ValueError, KeyError, TypeError):
            remove_entry(entry)
    reading = book_format.read(data, name, encoding, max_bytes)

    def build(tmp: Path) -> dict:
        body = {
            "used": reading.encoding,
            "replaced": reading.replaced,
            "parts": [_part_json(p) for p in reading.parts],
        }
        # ASCII: a file name that is not UTF-8 (held as surrogates) is kept as \udcXX escapes
        (tmp / "parsed.json").write_text(json.dumps(body), encoding="utf-8")
        return {"parser": PARSER_VERSION}

    with suppress(CacheError):  # a cache that cannot be written costs the next read the parse
        write_entry(entry, build)
    return reading


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:40]


def _part_json(part: Part) -> dict:
    return {
        "name": part.name,
        "path": part.path,
        "fingerprint": part.fingerprint,
        "texts": part.texts,
        "blocks": part.blocks,
        "lines": part.lines,
        "pages": part.pages,
        "headings": part.headings,
    }


def _reading_from_json(body: dict, name: str) -> Reading:
    parts = []
    for raw in body["parts"]:
        texts, blocks, lines = tuple(raw["texts"]), tuple(raw["blocks"]), tuple(raw["lines"])
        pages = tuple(raw.get("pages") or ())
        if not len(texts) == len(blocks) == len(lines) or (pages and len(pages) != len(texts)):
            raise ValueError("a damaged parse")
        path = raw["path"] if raw["name"] else name
        headings = tuple(raw.get("headings") or ())
        parts.append(Part(raw["name"], path, texts, blocks, lines, raw["fingerprint"], pages, headings))
    return Reading(tuple(parts), str(body["used"]), int(body["replaced"]))


def _assemble(
    path: str, sha256: str, encoding: str, parts: list[Part], replaced: int, skipped: tuple[str, ...]
) -> Document:
    """One book of several sources, numbered through in their order (see `Document`)."""
    paragraphs: list[Paragraph] = []
    sources: list[Source] = []
    headings: set[int] = set()
    for part in parts:
        if not part.texts:
            continue
        first = len(paragraphs) + 1
        paragraphs.extend(part.paragraphs(first))
        headings.update(first - 1 + number for number in part.headings)
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
        headings=frozenset(headings),
    )


def _load_folder(root: Path, encoding: str | None, max_bytes: int) -> Document:
    """A folder as one book (see `folder`): each readable file a source, in order."""
    from cwread.book import folder

    listing = folder.list_folder(root)
    real_root = root.resolve()
    if listing.total_bytes > max_bytes:
        raise InputError(
            f"{root} holds {readable_size(listing.total_bytes)} of files; cwread reads books up to "
            f"{readable_size(max_bytes)} (raise the limit with CWREAD_MAX_BYTES)"
        )
    parts: list[Part] = []
    skipped = list(listing.skipped)
    named: dict[str, str] = {}
    digest = hashlib.sha256(b"cwread-folder-v1\n")
    encodings: dict[str, None] = {}
    replaced = 0
    left = max_bytes
    for rel in listing.files:
        try:
            data = read_bytes(str(root / rel), left, (real_root,))
            sha256 = hashlib.sha256(data).hexdigest()
            reading = _read_file(data, sha256, rel, encoding, left)
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
        for part in reading.parts:
            name = f"{stem}/{part.name}" if part.name else stem
            parts.append(replace(part, name=name, path=f"{rel}/{part.path}" if part.name else rel))
        digest.update(f"{rel}\x00{sha256}\n".encode())
        encodings[reading.encoding] = None
        replaced += reading.replaced
    if not parts:
        why = f": {'; '.join(skipped[:3])}{'; ...' if len(skipped) > 3 else ''}" if skipped else ""
        raise InputError(f"{root} holds no readable text{why}")
    return _assemble(str(root), digest.hexdigest(), ", ".join(encodings), parts, replaced, tuple(skipped))
