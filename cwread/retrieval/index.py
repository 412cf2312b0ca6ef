"""A book's indexes, opened once and cached by content under `cache_root()/docs/`, as plain files
written atomically (see `cwread.cache`): BM25 over its paragraphs with their context and over its
sections, per book; the dense vectors per file (and per embedder), so a folder with one file
changed embeds that file alone. `cwread.retrieval.fusion` ranks by them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cwread.book import Document
from cwread.cache import cache_root, read_entry, remove_entry, write_entry
from cwread.errors import CacheError, InputError
from cwread.progress import Progress
from cwread.retrieval import lexical
from cwread.retrieval.embedders import Embedder


@dataclass
class Index:
    """A document with its lexical index and (optionally) its paragraph embeddings."""

    document: Document
    lexical: object
    sections: object  # BM25 over the sections of `section_spans`
    section_spans: np.ndarray  # (first, end) rows of 0-based paragraph indexes, end exclusive
    dense: np.ndarray | None
    embedder: Embedder | None
    built: list[str] = field(default_factory=list)  # parts built now rather than read from cache


def document_cache_dir(document: Document) -> Path:
    fp = document.fingerprint
    return cache_root() / "docs" / fp[:2] / fp


def open_index(document: Document, embedder: Embedder | None, progress: Progress | None = None) -> Index:
    """Load the document's indexes from the cache, building (and caching) what is missing."""
    base = document_cache_dir(document)
    texts = [p.text for p in document.paragraphs]
    built: list[str] = []

    lex_dir = base / f"bm25-v{lexical.LEXICAL_VERSION}"
    sections_dir = base / f"sections-v{lexical.LEXICAL_VERSION}"
    spans = lexical.section_spans([len(t) for t in texts], [s.first for s in document.sources])
    try:
        lexical_index, sections = _lexical_indexes(
            lex_dir, sections_dir, texts, spans, progress, built, document.path
        )
    except (
        OSError,
        ValueError,
        KeyError,
        TypeError,
        AttributeError,
    ):  # whole on disk, yet not an index we can read: built again
        remove_entry(lex_dir)
        remove_entry(sections_dir)
        lexical_index, sections = _lexical_indexes(
            lex_dir, sections_dir, texts, spans, progress, built, document.path
        )

    dense = None
    if embedder is not None:
        if document.sources:  # each file's vectors cached by its own content
            parts = [
                (source.fingerprint, texts[source.first - 1 : source.last]) for source in document.sources
            ]
        else:
            parts = [(document.fingerprint, texts)]
        vectors, fresh = _dense_parts(parts, embedder, progress)
        dense = vectors[0] if len(vectors) == 1 else np.concatenate(vectors)
        if fresh:
            built.append(f"dense ({fresh} of {len(parts)} files)" if document.sources else "dense")
    return Index(document, lexical_index, sections, spans, dense, embedder, built)


def _lexical_indexes(
    lex_dir: Path,
    sections_dir: Path,
    texts: list[str],
    spans: np.ndarray,
    progress: Progress | None,
    built: list[str],
    path: str,
) -> tuple[lexical.StoredIndex, lexical.StoredIndex]:
    """The paragraphs' and the sections' BM25 indexes, read from the cache or built there."""
    n = len(texts)
    paragraphs_ok = read_entry(lex_dir, lambda m: m.get("paragraphs") == n) is not None
    sections_ok = read_entry(sections_dir, lambda m: m.get("spans") == spans.tolist()) is not None
    if not (paragraphs_ok and sections_ok):
        if progress:
            progress("bm25", 0, n)
        tokens = lexical.tokenize(texts)  # once, for both indexes
        if not any(tokens):  # bm25s cannot index a text without a word, and nothing could be found
            raise InputError(
                f"{path} has no word to search: only punctuation, numbers of one digit, single letters "
                'or words as common as "the"'
            )

        def build_lexical(tmp: Path) -> dict:
            lexical.save_index(lexical.build_index(texts, tokens), tmp)
            return {"paragraphs": n}

        def build_sections(tmp: Path) -> dict:
            lexical.save_index(lexical.build_sections(tokens, spans), tmp)
            return {"spans": spans.tolist()}

        if not paragraphs_ok:
            write_entry(lex_dir, build_lexical)
        if not sections_ok:
            write_entry(sections_dir, build_sections)
        built.append("bm25")
        if progress:
            progress("bm25", n, n)
    return lexical.load_index(lex_dir), lexical.load_index(sections_dir)


def _dense_parts(
    parts: list[tuple[str, list[str]]], embedder: Embedder, progress: Progress | None
) -> tuple[list[np.ndarray], int]:
    """The vectors of each (fingerprint, texts) part, read from its cache entry or built (in
    one pass over the parts missing, for one progress bar); and how many were built."""
    folders = [
        cache_root() / "docs" / fp[:2] / fp / f"dense-{_slug(embedder.fingerprint)}" for fp, _ in parts
    ]
    loaded: list[np.ndarray | None] = [
        _cached_vectors(folder, len(texts), embedder)
        for folder, (_, texts) in zip(folders, parts, strict=True)
    ]
    missing = [i for i, v in enumerate(loaded) if v is None]
    total = sum(len(parts[i][1]) for i in missing)
    done = 0
    if missing and progress:
        progress("embed", 0, total)
    for i in missing:
        texts = parts[i][1]

        def report(count: int, _: int, before: int = done) -> None:
            if progress:
                progress("embed", before + count, total)

        def build_dense(tmp: Path, texts=texts, report=report) -> dict:
            vectors = embedder.encode(texts, progress=report)
            np.save(tmp / "embeddings.npy", vectors)
            return {"paragraphs": len(texts), "embedder": embedder.fingerprint, "dims": int(vectors.shape[1])}

        write_entry(folders[i], build_dense)
        loaded[i] = _cached_vectors(folders[i], len(texts), embedder)
        if loaded[i] is None:
            raise CacheError(f"the embeddings cached in {folders[i]} are unusable even when rebuilt")
        done += len(texts)
    return [v for v in loaded if v is not None], len(missing)


def _cached_vectors(folder: Path, rows: int, embedder: Embedder) -> np.ndarray | None:
    """The vectors of a verified cache entry; None (the entry removed if it holds the wrong
    shape) when there are none to use."""
    if (
        read_entry(
            folder, lambda m: m.get("paragraphs") == rows and m.get("embedder") == embedder.fingerprint
        )
        is None
    ):
        return None
    vectors = _load_vectors(folder / "embeddings.npy", rows, embedder.dims)
    if vectors is None:
        remove_entry(folder)
    return vectors


CHECK_ROWS = 65_536  # vectors checked for finiteness at a time (a whole book's check was a copy of it)


def _load_vectors(path: Path, rows: int, dims: int) -> np.ndarray | None:
    """The cached paragraph vectors, memory-mapped, or None unless they are `rows` x `dims`
    finite floats."""
    try:
        vectors = np.load(path, allow_pickle=False, mmap_mode="r")
    except (OSError, ValueError):
        return None
    if vectors.ndim != 2 or vectors.shape != (rows, dims):
        return None
    if not all(np.isfinite(vectors[i : i + CHECK_ROWS]).all() for i in range(0, rows, CHECK_ROWS)):
        return None
    return vectors


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:80]
