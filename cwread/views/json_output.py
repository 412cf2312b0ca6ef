"""The JSON shape of every command's `--json` output, beside the trace, under one version.

Pure functions from the records of a run (`cwread.records`) to JSON-ready dicts; the CLI,
the eval harness and other tools read these documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

from cwread import __version__
from cwread.book import Document, Paragraph
from cwread.library.catalog import Chapter, Found, Hit
from cwread.library_question import LibraryFound
from cwread.plan import Plan
from cwread.records import (
    AgentCall,
    AnswerReading,
    DoctorReport,
    FindResult,
    Forged,
    GroundedReply,
    IndexReport,
    ParagraphJudgement,
    Quote,
    SupportCheck,
    Trace,
    Verdict,
)
from cwread.retrieval.cast import CastMember, Named
from cwread.retrieval.segments import Segment
from cwread.views.terminal import redact_credentials

# 2: paragraphs are named by `id` (a number in a single file, "ch03:12" in a book of several
# files) with `source` and `paragraph`; a segment's anchor/window is its `kind`
TRACE_VERSION = 2


def document_json(document: Document) -> dict:
    data = {
        "path": document.path,
        "sha256": document.sha256,
        "paragraphs": len(document),
        "encoding": document.encoding,
    }
    if document.sources:
        data["sources"] = [{"name": s.name, "path": s.path, "paragraphs": len(s)} for s in document.sources]
    if document.skipped:
        data["skipped"] = list(document.skipped)
    return data


def label_json(label: str) -> int | str:
    """A label as JSON gives it: a number in a single file, "ch03:12" in a book of files."""
    return int(label) if label.isdigit() else label


def id_json(document: Document, pid: int) -> int | str:
    return document.public_id(pid)


def ref_json(document: Document, pid: int) -> dict:
    """Where paragraph `pid` is: its `id` as cited, its `source` (None in a single file), its
    `paragraph` number in that source, the `chapter` the text heads it under (None: none;
    cwread.book.chapters), and the `page` it starts on in a book with pages."""
    source, number = document.ref(pid)
    chapter = document.chapter(pid)
    place = {
        "id": id_json(document, pid),
        "source": source,
        "paragraph": number,
        "chapter": chapter.title if chapter is not None else None,
    }
    page = document.page(pid)
    return place if page is None else {**place, "page": page}


def chapter_json(chapter: Chapter) -> dict:
    """A contents entry: its source, its paragraphs as `show` takes them, its pages and heading."""
    return {
        "source": chapter.name,
        "paragraphs": chapter.span,
        "first": chapter.first,
        "last": chapter.last,
        "pages": list(chapter.pages) if chapter.pages else None,
        "heading": chapter.heading,
        "wrapping": chapter.wrapping,
    }


def contents_json(document: Document, chapters: list[Chapter]) -> dict:
    """`cwread contents --json`: the book and its contents."""
    return {
        "version": TRACE_VERSION,
        "document": document_json(document),
        "contents": [chapter_json(c) for c in chapters],
    }


def show_json(document: Document, paragraphs: list[Paragraph]) -> dict:
    """`cwread show --json`: the named paragraphs with their ids, blocks and lines."""
    return {
        "version": TRACE_VERSION,
        "document": document_json(document),
        "paragraphs": [
            {
                **ref_json(document, p.id),
                "block": p.block,
                "line": p.line,
                "text": p.text,
                "wrapping": document.wrapping(
                    p.id
                ),  # "front matter", "back matter", "contents", "illustration" or None
            }
            for p in paragraphs
        ],
    }


def index_json(document: Document, report: IndexReport) -> dict:
    """`cwread index --json`: what was built, how long it took, where the cache is."""
    return {
        "version": TRACE_VERSION,
        "document": document_json(document),
        "embedder": report.embedder,
        "built": list(report.built),
        "seconds": round(report.seconds, 3),
        "cache_dir": report.cache_dir,
    }


def doctor_json(report: DoctorReport) -> dict:
    """`cwread doctor --json`: the backend (or why none runs) and the embedder."""
    if report.ok:
        backend = {"ok": True, "finder": report.finder, "interpreter": report.interpreter, "why": report.why}
    else:
        backend = {"ok": False, "error": report.backend_error}
    if report.notes:
        backend["notes"] = list(report.notes)
    return {
        "version": TRACE_VERSION,
        "cache": report.cache,
        "backend": backend,
        "embedder": {"default": report.embedder, "installed": report.embedder_built},
        "advice": list(report.advice),
    }


def eval_json(meta: dict, summary: dict) -> dict:
    """`cwread eval --json`: the run's settings and the per-method summary."""
    return {"version": TRACE_VERSION, **meta, **summary}


def find_json(result: FindResult, limit: int | None) -> dict:
    """The `cwread find --json` document: ranked segments, the first `limit` with their text."""
    doc = result.document
    shown = result.segments if not limit else result.segments[:limit]
    return {
        "version": TRACE_VERSION,
        "cwread": __version__,
        "document": document_json(doc),
        "question": result.question.text,
        "options": result.question.options,
        "method": result.method,
        "embedder": result.embedder,
        "budget": asdict(result.budget),
        "anchors": [id_json(doc, a) for a in result.anchors],
        "index_built": list(result.built),
        "named": named_json(doc, result.named),
        "total_segments": len(result.segments),
        "segments": [
            {
                "rank": rank,
                **segment_json(doc, s),
                "score": round(s.score, 6),
                "anchors": [id_json(doc, a) for a in s.anchors],
                "read": rank <= result.budget.read,
                "text": doc.span_text(s.start, s.end),
            }
            for rank, s in enumerate(shown, start=1)
        ],
        "timings": result.timings,
    }


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


def answer_json(trace: Trace) -> dict:
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
        "failure": trace.failure(),  # why cwread stands behind no answer (None: it stands behind one)
        "answer_mode": outcome.mode,
        "answer_kind": outcome.shown,  # model-words, quoted-words, or None when none is shown
        "model_answer": outcome.model_answer,
        "supported": outcome.supported,
        "support_check": support_json(outcome.check),
        "answer_judgement": judgement_json(doc, outcome.judgement),
        "answer_reading": reading_json(doc, outcome.reading),
        # a "Who is X?" answered by the packet's description of X (None: not such an answer)
        "description": None if outcome.description is None else asdict(outcome.description),
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


def error_json(code: int, kind: str, message: str) -> dict:
    """A failure as every JSON writer gives it (the CLI, chat's JSON lines, MCP's tool errors)."""
    return {
        "version": TRACE_VERSION,
        "error": {"code": code, "kind": kind, "message": redact_credentials(message)},
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
        **answer_json(trace),
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
        "skipped": dict(trace.skipped),
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


def library_find_json(found: LibraryFound, limit: int | None) -> dict:
    """`cwread find LIBRARY QUESTION --library --json`: the books searched (why: their share of
    the library's best-matching paragraphs; what was built for them, and how long each took)
    and the passages ranked together, the first `limit` with their text, each with its book."""
    shown = found.passages if not limit else found.passages[:limit]
    out_passages = []
    for rank, p in enumerate(shown, start=1):
        candidate = found.candidates[p.book]
        doc = candidate.found.document
        chapter = candidate.found.chapter_of(p.segment)
        out_passages.append(
            {
                "rank": rank,
                "book": candidate.name,
                **segment_json(doc, p.segment),
                "chapter": chapter.title if chapter else None,
                "page": doc.page(p.segment.start),
                "score": round(p.score, 6),
                "anchors": [id_json(doc, a) for a in p.segment.anchors],
                "text": doc.span_text(p.segment.start, p.segment.end),
            }
        )
    return {
        "version": TRACE_VERSION,
        "cwread": __version__,
        "library": list(found.roots),
        "question": found.question.text,
        "books": found.books,
        "books_matching": found.matching,
        "library_index_built": found.index_built,
        "searched": [
            {
                "book": c.name,
                **about_json(c.about),
                "score": round(c.score, 4),
                "best_hits": c.hits,
                "paragraphs": len(c.found.document),
                "seconds": c.seconds,
                "index_built": list(c.built),
                "named": named_json(c.found.document, c.found.named),
            }
            for c in found.candidates
        ],
        "skipped": list(found.skipped),
        "total_passages": len(found.passages),
        "passages": out_passages,
        "timings": found.timings,
    }


def cast_json(document: Document, members: Sequence[CastMember], query: str) -> dict:
    """The `cwread cast --json` document: the members asked for (all without a query), each with
    its forms, descriptions (where said) and the paragraphs mentioning it."""
    return {
        "version": TRACE_VERSION,
        "cwread": __version__,
        "document": document_json(document),
        "query": query or None,
        "members": [
            {
                "name": m.name,
                "kind": m.kind,
                "forms": list(m.forms),
                "first": id_json(document, m.mentions[0]),
                "chapter": (c.title if (c := document.chapter(m.mentions[0])) else None),
                "mentions": [id_json(document, pid) for pid in m.mentions],
                "descriptions": [
                    {"description": d.said, "said": d.span, "at": id_json(document, d.pid), "times": d.times}
                    for d in m.descriptions
                ],
            }
            for m in members
        ],
    }


def named_json(document: Document, named: Sequence[Named]) -> list[dict]:
    """The question's descriptions the book's cast took for names (looked for too), each with
    where the book says so."""
    return [
        {
            "description": n.description.said,
            "name": n.member.name,
            "words": n.member.words,
            "said": n.description.span,
            "at": id_json(document, n.description.pid),
        }
        for n in named
    ]


def plan_json(plan: Plan | None) -> dict | None:
    """What the run resolved to do before its first call (see cwread.plan.Plan)."""
    return None if plan is None else asdict(plan)


def segment_json(document: Document, segment: Segment) -> dict:
    """A segment's first and last paragraph as cited, its file, and its kind (anchor or window)."""
    return {
        "start": id_json(document, segment.start),
        "end": id_json(document, segment.end),
        "source": document.ref(segment.start)[0],
        "kind": segment.origin,  # the trace's name for it
    }


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
    """How the support of the model's answer was decided (see cwread.records.SupportCheck)."""
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


def quotes_json(document: Document, quotes: tuple[Quote, ...]) -> list[dict]:
    """Each quote with its paragraph (id, source, number) and character offsets into that
    paragraph's text."""
    return [{**ref_json(document, q.id), "quote": q.text, "start": q.start, "end": q.end} for q in quotes]


def forged_json(forged: tuple[Forged, ...]) -> list[dict]:
    return [{"id": label_json(label), "quote": text} for label, text in forged]


def hit_json(hit: Hit, root: str | None = None) -> dict:
    """A paragraph found in a library, named as `ref_json` names one, with its book (and, given
    the library's folder as the user named it, the book's `path` from there, for `show`)."""
    place = {"book": hit.book, "id": hit.label if hit.source else hit.id, "source": hit.source}
    if root is not None:
        place["path"] = book_path(root, hit.book)
    place["paragraph"] = hit.paragraph
    if hit.page is not None:
        place["page"] = hit.page
    context = {}
    if hit.before or hit.after:

        def ref(label: str) -> int | str:  # as the hit's own id: a number in a single file
            return int(label) if label.isdigit() else label

        context = {
            "before": [{"id": ref(label), "text": text} for label, text in hit.before],
            "after": [{"id": ref(label), "text": text} for label, text in hit.after],
        }
    return {**place, **about_json(hit.about), "score": round(hit.score, 4), "text": hit.text, **context}


def about_json(about: dict) -> dict:
    """What a catalogue (Calibre's OPF) says of a book: its title, author and series, and a
    note where they were read from elsewhere; {} for a book with no catalogue."""
    return {k: about.get(k) for k in ("title", "author", "series", "note")} if about else {}


def about_line(about: dict) -> str:
    """`about` in a few words after a book's name: "  (The Selfish Giant, Oscar Wilde; Tales #2)"."""
    if not about:
        return ""
    series = f"; {about['series']}" if about.get("series") else ""
    return f"  ({about.get('title')}, {about.get('author')}{series})"


def book_path(root: str, name: str) -> str:
    """The path of the library's book `name` as the user would type it: under `root` as they
    named it (a book of another root is named by its absolute path already)."""
    if name.startswith("/") or root in ("", "."):
        return name
    return f"{root.rstrip('/')}/{name}"


def search_json(found: Found, root: str | None = None) -> dict:
    """`cwread search --json`: the hits, best first, and what the library held."""
    return {
        "version": TRACE_VERSION,
        "query": found.query,
        "books": found.books,
        "paragraphs": found.paragraphs,
        "skipped": list(found.skipped),
        "index_built": found.built,
        "hits": [hit_json(hit, root) for hit in found.hits],
    }
