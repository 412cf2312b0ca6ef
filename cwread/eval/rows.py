"""From traces to rows: the JSON-ready fields scored for one record and method. Pure."""

from __future__ import annotations

import re

from cwread.eval import metrics
from cwread.eval.dataset import Record
from cwread.records.stages import FindResult, Verdict
from cwread.records.trace import Trace
from cwread.views import trace_json


def base_fields(record: Record, method: str) -> dict:
    row: dict = {"id": record.id, "method": method, "kind": record.kind, "gold": record.answer}
    if record.pair is not None:
        row["pair"] = record.pair
    return row


# an open question's type is its first question word (whom → who, which → what)
QUESTION_WORDS = {"who": "who", "whom": "who", "whose": "who", "where": "where", "when": "when", "why": "why",
                  "how": "how", "what": "what", "which": "what"}  # fmt: skip


def question_type(record: Record) -> str:
    """who, where, when, why, how, what or other for an open question; else its kind (claim, mcq)."""
    if record.kind != "open":
        return record.kind
    for word in re.findall(r"[a-z]+", record.question.text.lower()):
        if word in QUESTION_WORDS:
            return QUESTION_WORDS[word]
    return "other"


def evidence_fields(record: Record, found: FindResult, trace: Trace | None = None) -> dict:
    """Gold evidence paragraphs inside anchor segments, segments read, segments the Finder
    kept (or, without a Finder, passed on) and the packet; the question's type and hops, by
    which the report breaks recall down."""
    gold = record.gold_ids(found.document)
    if not gold:
        return {}
    anchors = found.anchor_segments
    out: dict = {
        "question_type": question_type(record),
        "hops": record.hops,
        "evidence_gold": len(gold),
        "evidence_anchor_hits": metrics.recall(gold, {p for s in anchors for p in s.ids})[0],
        "evidence_read_hits": metrics.recall(gold, {p for s in found.read for p in s.ids})[0],
    }
    if trace is not None:
        out["cited"] = len(trace.citations)
        out["cited_gold"] = len(set(trace.citations) & set(gold))
        kept = kept_paragraphs(trace)
        if kept is not None:
            out["evidence_yes_hits"] = metrics.recall(gold, kept)[0]
        out["evidence_packet_hits"] = metrics.recall(gold, set(trace.packet.ids))[0]
    return out


def kept_paragraphs(trace: Trace) -> set[int] | None:
    """Paragraphs of the segments the Finder said YES to; without a Finder, those of the
    segments the packet was drawn from whole (no-finder); None when neither applies."""
    if trace.verdicts:
        return {p for v in trace.verdicts if v.kept for p in v.segment.ids}
    if trace.packet.segments:
        return {p for start, end in trace.packet.segments for p in range(start, end + 1)}
    return None


def score_fields(record: Record, answer: str | None) -> dict:
    if record.kind == "open":
        refs = list(record.answers) or [str(record.answer or "")]
        return {
            "f1": metrics.best_over_references(metrics.token_f1, answer, refs),
            "rouge_l": metrics.best_over_references(metrics.rouge_l, answer, refs),
        }
    gold = record.gold_label
    return {"correct": None if not gold else answer == gold}


def verdict_counts(verdicts: tuple[Verdict, ...]) -> dict:
    return {
        "finder_calls": len(verdicts),
        "finder_parsed_first_try": sum(v.reply.parsed_first_try for v in verdicts),
        "finder_yes": sum(v.kept for v in verdicts),
    }


def trace_fields(trace: Trace) -> dict:
    final = trace.final
    outcome = trace.outcome
    calls = trace.model_calls
    check = outcome.check
    answer = trace_json.answer_json(trace)  # the fields every JSON writer shares, as they give them
    return {
        **{key: answer[key] for key in ("answer", "status", "model_answer", "supported", "abstained", "answer_kind", "citations")},
        # the final reply's quotes, verbatim, as [paragraph, text]: what a support check reads
        "model_quotes": [[trace.document.public_id(q.id), q.text] for q in final.reply.quotes] if final else [],
        "parsed": outcome.parsed,
        "support_method": check.method if check else None,
        "support_score": check.score if check else None,
        "support_quoted_share": check.quoted_share if check else None,
        "support_weight_share": check.weight_share if check else None,
        # the trained Finder's best score of an extractive answer's paragraphs (None: not judged)
        "answer_judge_score": round(outcome.judgement.best[1], 4) if outcome.judgement and outcome.judgement.best else None,
        # the answer reader's score of the words it picked (None: not read)
        "answer_reader_score": outcome.reading.score if outcome.reading else None,
        # the final answer's mean token log-probability, where the backend gave it
        "answer_logprob": final.reply.call.answer_logprob if final else None,
        "parsed_first_try": bool(trace.interpreter and trace.interpreter.reply.parsed_first_try),
        "invalid_citations": list(final.reply.dropped) if final else [],  # labels as the model wrote them
        # every quote shown is re-read from the book: fidelity must be 100%
        "quotes_shown": len(outcome.quotes),
        "quotes_verbatim": sum(
            trace.document.paragraph(q.id).text[q.start : q.end] == q.text for q in outcome.quotes
        ),
        "quotes_dropped": sum(len(c.reply.forged) for c in trace.agent_calls),
        **verdict_counts(trace.verdicts),
        "self_checked": trace.self_check is not None,
        "prompt_tokens": trace.tokens()["prompt"],
        "packet_paragraphs": len(trace.packet.items),
        # calls answered by the call cache (e.g. shared with an earlier method): they cost ~0 s
        "model_calls": len(calls),
        "cached_calls": sum(c.cached for c in calls),
    }


def answer_fields(record: Record, found: FindResult, trace: Trace) -> dict:
    """A method that answers: what it did, its score, where the gold evidence went."""
    return {
        **trace_fields(trace),
        **score_fields(record, trace.answer),
        **evidence_fields(record, found, trace),
    }


def rotated_fields(record: Record, found: FindResult, traces: list[Trace], answers: list[str | None]) -> dict:
    """A multiple-choice question asked once per option rotation: right only if every
    rotation's answer (mapped back to the original labels) is the gold one."""
    first = traces[0]
    return {
        **trace_fields(first),
        "rotation_answers": answers,
        "answer": answers[0] if len(set(answers)) == 1 else None,
        "correct": all(a == record.gold_label for a in answers),
        "prompt_tokens": sum(t.tokens()["prompt"] for t in traces),
        "finder_calls": sum(len(t.verdicts) for t in traces),
        **evidence_fields(record, found, first),
    }


def finder_fields(record: Record, found: FindResult, trace: Trace) -> dict:
    """The Finder's verdicts on the read segments against gold evidence: how many segments
    hold gold and were kept (YES-recall), how many kept ones hold gold (precision), and
    whether the ids it cites are gold ones."""
    verdicts = trace.verdicts
    gold = set(record.gold_ids(found.document))
    yes = [v for v in verdicts if v.kept]
    out = {
        **verdict_counts(verdicts),
        "finder_kept_unparsed": sum(v.kept_on_failure for v in verdicts),  # counted as YES (recall first)
        "model_calls": len(verdicts),
        "cached_calls": sum(v.reply.call.cached for v in verdicts),
        "prompt_tokens": sum(v.reply.call.prompt_tokens for v in verdicts),
    }
    if gold:
        out["segments_gold"] = sum(bool(gold & set(v.segment.ids)) for v in verdicts)
        out["yes_gold"] = sum(bool(gold & set(v.segment.ids)) for v in yes)
        # The rank baseline: the retriever's own top-k of the segments read, k = the Finder's
        # YES count. The Finder earns its calls only if it keeps more gold than this.
        ranked = [v.segment for v in verdicts]  # in the order read: the retrieval ranking
        out["rank_yes_gold"] = sum(bool(gold & set(seg.ids)) for seg in ranked[: len(yes)])
        # per segment, in the order read: whether it holds gold, and the Finder's score (its
        # log-odds of YES, where the backend gives them) for the report's score-as-ranking check
        out["segment_gold"] = [bool(gold & set(seg.ids)) for seg in ranked]
        out["finder_scores"] = [v.score for v in verdicts]
        out["finder_cited"] = sum(len(v.reply.cited) for v in yes)
        out["finder_cited_gold"] = sum(len(gold & set(v.reply.cited)) for v in yes)
        out.update(evidence_fields(record, found))
        out["evidence_yes_hits"] = metrics.recall(gold, {p for v in yes for p in v.segment.ids})[0]
    return out


def retrieval_fields(record: Record, found: FindResult, trace: Trace) -> dict:
    """Where gold evidence falls with no model: anchors, segments read, and the packet the
    pipeline packs when no Finder filters (`trace.packet`)."""
    out = evidence_fields(record, found)
    if out:
        gold = record.gold_ids(found.document)
        out["evidence_packet_hits"] = metrics.recall(gold, set(trace.packet.ids))[0]
    return {
        **out,
        "packet_paragraphs": len(trace.packet.items),
        "packet_chars": sum(len(item.text) for item in trace.packet.items),
    }
