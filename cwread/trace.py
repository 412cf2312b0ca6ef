"""Versioned JSON documents for `--json` output; the CLI, eval harness and tools read these."""

from __future__ import annotations

from dataclasses import asdict

from cwread import __version__
from cwread.api import FindResult
from cwread.document import Document
from cwread.pipeline import AgentCall, Trace

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


def ask_json(trace: Trace) -> dict:
    """The `cwread ask/verify --json` trace: the answer and every step that led to it."""
    doc = trace.document
    final = trace.final
    interp = trace.interpreter
    return {
        "version": TRACE_VERSION,
        "cwread": __version__,
        "document": document_json(doc),
        "question": trace.question,
        "kind": trace.kind,
        "options": trace.options,
        "answer": trace.answer,
        "reason": trace.reason,
        "citations": trace.citations,
        "cited_paragraphs": [{"id": pid, "text": doc.paragraph(pid).text} for pid in trace.citations],
        "dropped_citations": list(final.dropped) if final else [],
        "packet": [
            {"id": item.id, "text": item.text, "finder_reason": item.reason} for item in trace.packet.items
        ],
        "packet_fallback": trace.packet.fallback,
        "packet_left_out": list(trace.packet.left_out),
        "finder": [
            {
                "start": v.segment.start,
                "end": v.segment.end,
                "source": v.segment.source,
                "decision": v.decision,
                "reason": v.reason,
                "cited": list(v.cited),
                "dropped_citations": list(v.dropped),
                "parsed_first_try": v.parsed_first_try,
                "kept_on_failure": v.kept_on_failure,
                "cached": v.cached,
            }
            for v in trace.verdicts
        ],
        "interpreter": _call_json(interp),
        "self_check": {
            "triggered": trace.self_check_triggered,
            **({"call": _call_json(trace.self_check)} if trace.self_check else {}),
            "changed": bool(
                trace.self_check
                and trace.self_check.answer
                and interp
                and trace.self_check.answer != interp.answer
            ),
        },
        "segments_total": len(trace.segments),
        "budget": asdict(trace.budget),
        "method": trace.method,
        "embedder": trace.embedder,
        "models": trace.models,
        "tokens": trace.tokens(),
        "timings": trace.timings,
    }


def _call_json(call: AgentCall | None) -> dict | None:
    if call is None:
        return None
    return {
        "answer": call.answer,
        "reason": call.reason,
        "raw": call.raw,
        "cited": list(call.cited),
        "dropped_citations": list(call.dropped),
        "parsed_first_try": call.parsed_first_try,
        "problem": call.problem,
        "prompt_tokens": call.prompt_tokens,
        "completion_tokens": call.completion_tokens,
        "seconds": round(call.seconds, 3),
        "cached": call.cached,
    }
