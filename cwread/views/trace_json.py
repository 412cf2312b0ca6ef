"""The JSON of an answered question: the trace that `ask --json`, chat and MCP print and the eval rows
read (the plan, the Finder's verdicts, the packet, the calls, the answer and its support); the
book's and the finder's JSON is cwread.views.json_output's."""

from __future__ import annotations

from dataclasses import asdict

from cwread import __version__
from cwread.book import Document
from cwread.records.plan import Plan
from cwread.records.stages import (
    AgentCall,
    AnswerReading,
    GroundedReply,
    ParagraphJudgement,
    SupportCheck,
    Verdict,
)
from cwread.records.trace import Trace
from cwread.views import wording
from cwread.views.json_output import (
    TRACE_VERSION,
    document_json,
    forged_json,
    id_json,
    label_json,
    named_json,
    quotes_json,
    ref_json,
    segment_json,
)


def judgement_json(doc, judgement: ParagraphJudgement | None) -> dict | None:
    """The trained Finder's scores of an extractive answer's candidate paragraphs (None: not judged)."""
    if judgement is None:
        return None
    window = {pid: (start, end) for pid, start, end in judgement.windows}
    return {
        "threshold": judgement.threshold,
        # "read": the characters [start, end) of a long paragraph the Finder read (its sentences
        # around the one most like the question); absent where it read the paragraph whole
        "scores": [
            {
                **ref_json(doc, pid),
                "score": round(score, 4),
                **({"read": list(window[pid])} if pid in window else {}),
            }
            for pid, score in judgement.scores
        ],
        "chosen": None if judgement.chosen is None else id_json(doc, judgement.chosen),
        # candidates not judged: one before them scored sure (finder.SURE), so they could not change the choice
        "unjudged": [id_json(doc, pid) for pid in judgement.unjudged],
        "seconds": round(sum(c.seconds for c in judgement.calls), 3),
        "cached": all(c.cached for c in judgement.calls),
        # what computed the scores, where the model has more than one way (the embedded one)
        "runtime": sorted({c.runtime for c in judgement.calls if c.runtime}),
    }


def reading_json(doc, reading: AnswerReading | None) -> dict | None:
    """The answer reader's reading of the paragraph an extractive answer comes from (None: not read)."""
    if reading is None:
        return None
    text = doc.paragraph(reading.paragraph).text
    return {
        "reader": reading.reader,
        **ref_json(doc, reading.paragraph),
        "words": text[reading.start : reading.end],
        "start": reading.start,
        "end": reading.end,
        "score": reading.score,
        "threshold": reading.threshold,
        "answered": reading.answered,  # its words are the answer (else the sentence ranker's are)
        "seconds": reading.seconds,
    }


def answer_json(trace: Trace, face: wording.Face = wording.CLI) -> dict:
    """The answer of a trace as every writer gives it (`ask --json`, chat's JSON lines, the MCP
    tools, the eval rows): the question, the outcome (status, answer, why none stands), its
    quotes and citations."""
    doc = trace.document
    outcome = trace.outcome
    packed = set(trace.packet.ids)
    return {
        "question": trace.question.text,
        "kind": trace.question.kind,
        "options": trace.question.options,
        "answer": trace.answer,
        "verdict": trace.answer if trace.question.form.verdict else None,
        "status": trace.status,  # answered, no-verdict, not-determined or unparseable
        "failure": wording.failure(trace, face),  # why cwread stands behind no answer (None: it stands behind one)
        "answer_mode": outcome.mode,
        "answer_kind": outcome.shown,  # model-words, quoted-words, or None when none is shown
        "model_answer": outcome.model_answer,
        "supported": outcome.supported,
        "support_check": support_json(outcome.check),
        "answer_judgement": judgement_json(doc, outcome.judgement),
        "answer_reading": reading_json(doc, outcome.reading),
        # a "Who is X?" answered by the packet's description of X (None: not such an answer)
        "description": None if outcome.description is None else asdict(outcome.description),
        # not said: what the question asked for, and the words that fit it best, which hold none
        "asked_for": None if outcome.asked_for is None else {**asdict(outcome.asked_for), "declined": outcome.declined},
        "abstained": outcome.withheld,
        # the answer's quotes are the packet's; an abstention's best evidence may come from what was read
        "quotes": [
            {**q, "in_packet": quote.id in packed}
            for q, quote in zip(quotes_json(doc, outcome.quotes), outcome.quotes, strict=True)
        ],
        "citations": [id_json(doc, pid) for pid in trace.citations],
        "cited_paragraphs": [
            {**ref_json(doc, pid), "text": doc.paragraph(pid).text} for pid in trace.citations
        ],
    }


def ask_json(trace: Trace, face: wording.Face = wording.CLI) -> dict:
    """The `cwread ask/verify --json` trace: the answer and every step that led to it."""
    doc = trace.document
    final = trace.final
    interp = trace.interpreter
    return {
        "version": TRACE_VERSION,
        "cwread": __version__,
        "document": document_json(doc),
        **answer_json(trace, face),
        "follows": None if trace.follows is None else asdict(trace.follows),
        "plan": plan_json(trace.plan),
        "reason": trace.reason,
        "dropped_citations": [label_json(label) for label in final.reply.dropped] if final else [],
        "dropped_quotes": forged_json(final.reply.forged) if final else [],
        "packet": [
            {**ref_json(doc, item.id), "text": item.text, "finder_reason": item.reason}
            for item in trace.packet.items
        ],
        "packet_fallback": trace.packet.fallback,
        "packet_left_out": [id_json(doc, pid) for pid in trace.packet.left_out],
        "finder": [_verdict_json(doc, v) for v in trace.verdicts],
        "skipped": wording.skipped(trace, face),
        "not_read": None
        if trace.unread is None
        else {
            "segments": [segment_json(doc, s) for s in trace.unread.segments],
            "budget_tokens": trace.unread.budget_tokens,
            "why": trace.unread.why,
        },
        "interpreter": _call_json(doc, interp),
        "self_check": {
            "triggered": trace.self_check_triggered,
            **({"call": _call_json(doc, trace.self_check)} if trace.self_check else {}),
            "changed": bool(
                trace.self_check
                and trace.self_check.answer
                and interp
                and trace.self_check.answer != interp.answer
            ),
        },
        "segments_total": len(trace.segments),
        "index_built": list(trace.found.built),
        "named": named_json(doc, trace.found.named),
        "budget": asdict(trace.budget),
        "method": trace.found.method,
        "embedder": trace.found.embedder,
        "models": trace.models,
        "tokens": trace.tokens(),
        "timings": trace.timings,
    }


def plan_json(plan: Plan | None) -> dict | None:
    """What the run resolved to do before its first call (see cwread.records.plan.Plan)."""
    return None if plan is None else asdict(plan)


def _verdict_json(doc: Document, v: Verdict) -> dict:
    return {
        **segment_json(doc, v.segment),
        "decision": v.decision,
        "score": None if v.score is None else round(v.score, 4),  # ln P(YES) - ln P(NO)
        **_reply_json(doc, v.reply),
        "kept_on_failure": v.kept_on_failure,
        "cached": v.reply.call.cached,
        "runtime": v.reply.call.runtime or None,
    }


def _reply_json(doc: Document, reply: GroundedReply) -> dict:
    """An agent's reply as read: its reason, citations and quotes held to the book, and what
    was dropped."""
    return {
        "reason": reply.reason,
        "cited": [id_json(doc, pid) for pid in reply.cited],
        "quotes": quotes_json(doc, reply.quotes),
        "dropped_quotes": forged_json(reply.forged),
        "dropped_citations": [label_json(label) for label in reply.dropped],
        "parsed_first_try": reply.parsed_first_try,
    }


def support_json(check: SupportCheck | None) -> dict | None:
    """How the support of the model's answer was decided (see cwread.records.stages.SupportCheck)."""
    if check is None:
        return None
    call = check.call
    return {
        "supported": check.supported,
        "method": check.method,
        "why": check.why,
        "score": check.score,  # ln P(YES) - ln P(NO) that the quotes state or imply the answer
        "threshold": check.threshold,
        "unquoted_names": list(check.unquoted),
        "quoted_share": check.quoted_share,  # of an open answer's content words, in its quotes or the question
        "weight_share": check.weight_share,  # of a label's words' weight (idf), in its quotes
        "call": None
        if call is None
        else {
            "raw": call.raw,
            "prompt_tokens": call.prompt_tokens,
            "seconds": round(call.seconds, 3),
            "cached": call.cached,
        },
    }


def _call_json(doc: Document, call: AgentCall | None) -> dict | None:
    if call is None:
        return None
    return {
        "answer": call.answer,
        **_reply_json(doc, call.reply),
        "raw": call.reply.call.raw,
        "problem": call.problem,
        "prompt_tokens": call.reply.call.prompt_tokens,
        "completion_tokens": call.reply.call.completion_tokens,
        "answer_logprob": call.reply.call.answer_logprob,
        "seconds": round(call.reply.call.seconds, 3),
        "cached": call.reply.call.cached,
    }
