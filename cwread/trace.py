"""Versioned JSON documents for `--json` output; the CLI, eval harness and tools read these."""

from __future__ import annotations

from dataclasses import asdict

from cwread import __version__
from cwread.api import FindResult
from cwread.document import Document

TRACE_VERSION = 1


def document_json(document: Document) -> dict:
    return {
        "path": document.path,
        "sha256": document.sha256,
        "paragraphs": len(document),
        "encoding": document.encoding,
    }


def find_json(result: FindResult, limit: int | None) -> dict:
    """The `cwread find --json` document: ranked segments, the first `limit` with their text."""
    doc = result.document
    shown = result.segments if not limit else result.segments[:limit]
    return {
        "version": TRACE_VERSION,
        "cwread": __version__,
        "document": document_json(doc),
        "question": result.question,
        "options": result.options,
        "method": result.method,
        "embedder": result.embedder,
        "budget": asdict(result.budget),
        "anchors": result.anchors,
        "total_segments": len(result.segments),
        "segments": [
            {
                "rank": rank,
                "start": s.start,
                "end": s.end,
                "source": s.source,
                "score": round(s.score, 6),
                "anchors": list(s.anchors),
                "read": rank <= result.budget.read,
                "text": doc.span_text(s.start, s.end),
            }
            for rank, s in enumerate(shown, start=1)
        ],
        "timings": result.timings,
    }
