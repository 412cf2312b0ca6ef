"""The JSON shape of every command's `--json` output, beside the trace, under one version.

Pure functions from the records of a run (`cwread.records`) to JSON-ready dicts; the CLI,
the eval harness and other tools read these documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING

from cwread import __version__
from cwread.views.terminal import redact_credentials

if TYPE_CHECKING:  # the records a view takes: their modules load with the run, not with `show`
    from cwread.book import Document, Paragraph
    from cwread.library.catalog import Found, Hit, LibraryIndexed
    from cwread.library.contents import ContentsEntry
    from cwread.records.stages import FindResult, Forged, Quote
    from cwread.records.trace import DoctorReport, IndexReport
    from cwread.retrieval.cast import CastMember, Named
    from cwread.retrieval.passages import Passage
    from cwread.retrieval.segments import Segment
    from cwread.run.library_question import LibraryFound

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


def chapter_json(chapter: ContentsEntry) -> dict:
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


def contents_json(document: Document, chapters: list[ContentsEntry]) -> dict:
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


def library_index_json(built: LibraryIndexed) -> dict:
    """`cwread index FOLDER --library-url URL --json`: what the library's index holds now."""
    return {
        "version": TRACE_VERSION,
        "index": built.where,
        "books": built.books,
        "paragraphs": built.paragraphs,
        "read": built.read,
        "skipped": list(built.unread),
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
        "settings": {"path": report.settings_file, "values": dict(report.settings)},
        "advice": list(report.advice),
    }


def eval_json(meta: dict, summary: dict) -> dict:
    """`cwread eval --json`: the run's settings and the per-method summary."""
    return {"version": TRACE_VERSION, **meta, **summary}


def find_json(result: FindResult, limit: int | None, passages: Sequence[Passage]) -> dict:
    """The `cwread find --json` document: ranked segments, the first `limit` with their text,
    and the `passages` a reader is shown of them (`FindResult.printed`)."""
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
        "passages": [passage_json(p) for p in passages],
        "timings": result.timings,
    }


def passage_json(passage: Passage) -> dict:
    """A passage as printed: its rank (and those of the segments printed with it), book (of a
    library), first and last paragraph and its paragraphs as `show` takes them, the file it
    starts in, the chapter, the page it starts on, why it ranks (kind, score, the paragraphs
    retrieval ranked high) and its best paragraph."""
    doc, first = passage.document, passage.ids[0]
    return {
        "rank": passage.ranks[0],
        "ranks": list(passage.ranks),
        **({"book": passage.book} if passage.book else {}),
        "start": id_json(doc, first),
        "end": id_json(doc, passage.ids[-1]),
        "paragraphs": passage.span,
        "source": doc.ref(first)[0],
        "kind": passage.origin,
        "chapter": passage.chapter.title if passage.chapter else None,
        "page": doc.page(first),
        "score": round(passage.score, 6),
        "anchors": [id_json(doc, a) for a in passage.anchors],
        "best": id_json(doc, passage.best),
    }


def error_json(code: int, kind: str, message: str) -> dict:
    """A failure as every JSON writer gives it (the CLI, chat's JSON lines, MCP's tool errors)."""
    return {
        "version": TRACE_VERSION,
        "error": {"code": code, "kind": kind, "message": redact_credentials(message)},
    }


def library_find_json(found: LibraryFound, passages: Sequence[Passage]) -> dict:
    """`cwread find LIBRARY QUESTION --library --json`: the books searched (why: their share of
    the library's best-matching paragraphs; what was built for them, and how long each took)
    and the `passages` printed (`LibraryFound.printed`), with their text, each with its book."""
    out_passages = [
        {**passage_json(p), "text": p.document.span_text(p.ids[0], p.ids[-1])} for p in passages
    ]
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
        "total_passages": len(found.segments),
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


def segment_json(document: Document, segment: Segment) -> dict:
    """A segment's first and last paragraph as cited, its file, and its kind (anchor or window)."""
    return {
        "start": id_json(document, segment.start),
        "end": id_json(document, segment.end),
        "source": document.ref(segment.start)[0],
        "kind": segment.origin,  # the trace's name for it
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


def modelfiles_json(written) -> dict:
    return {"version": TRACE_VERSION, "written": [str(path) for path in written]}
