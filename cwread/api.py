"""The public API: what the CLI and scripts call. No terminal knowledge here.

    from cwread import api

    book = api.open("novel.txt")  # a reading session: the book held open
    trace = book.ask(api.make_question("Why was the doll pushed?"))
    print(trace.answer, trace.citations)  # None when the text does not determine one

`ask` and `find` are one-call conveniences over a session. Layers below: session → pipeline
(one question through the method) → finder/interpreter/agents/packing → backends →
document/segments/retrieval → cache/errors. The records a run returns are in
`cwread.records`; the eval harness (`cwread.eval`) builds on the pipeline's stages.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from cwread.book import Document, Paragraph, load_document
from cwread.environment import read_settings_file, settings_path, shown_setting
from cwread.errors import InputError, ModelError
from cwread.plugins import load_plugins
from cwread.progress import Progress
from cwread.records.plan import Plan
from cwread.records.question import MAX_QUESTION_CHARS, NO_HINTS, Hints, Question, make_question
from cwread.retrieval import DEFAULT_EMBEDDER
from cwread.retrieval.segments import Budget, make_budget
from cwread.settings import AnswerSettings, FinderSettings, RunSettings, SessionSettings, Settings, with_knobs

if TYPE_CHECKING:
    from cwread.backends.select import BackendSettings, Selection
    from cwread.library.catalog import Found, LibraryIndexed, Shelving, Within
    from cwread.library.contents import ContentsEntry
    from cwread.records.stages import FindResult
    from cwread.records.trace import DoctorReport, IndexReport, Trace
    from cwread.retrieval.cast import Cast, CastMember
    from cwread.run.library_question import LibraryAnswer, LibraryFound
    from cwread.run.session import Session

# Loaded when first used, so a command imports only what it uses (`show` reads no model, no index):
# the names the API gives from the modules that hold them.
_LAZY = {
    "BackendSettings": "cwread.backends.select",
    "Selection": "cwread.backends.select",
    "Within": "cwread.library.catalog",
    "FindResult": "cwread.records.stages",
    "Trace": "cwread.records.trace",
    "Session": "cwread.run.session",
    "load_embedder": "cwread.retrieval.embedders",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


load_plugins()  # formats, backends and kinds other packages add (cwread.plugins)

__all__ = [
    "AnswerSettings",
    "BackendSettings",
    "Budget",
    "Document",
    "FindResult",
    "FinderSettings",
    "Hints",
    "Plan",
    "Question",
    "RunSettings",
    "Selection",
    "Session",
    "SessionSettings",
    "Settings",
    "Trace",
    "Within",
    "ask",
    "ask_library",
    "cast",
    "doctor",
    "find",
    "find_library",
    "index_document",
    "index_library",
    "make_budget",
    "make_question",
    "open",
    "open_document",
    "search_library",
    "show",
    "with_knobs",
]


def open(
    book: str | Document,
    settings: Settings | None = None,
    *,
    encoding: str | None = None,
    selection: Selection | None = None,
) -> Session:
    """A reading session on `book` (a path, "-" for stdin, or a Document already read): ask it
    as many questions as you like; nothing is read, indexed, loaded or selected twice. The
    session is opened as `settings.session` says (its dense model, backends and call cache),
    the backends selected from them unless given (a `selection`)."""
    from cwread.run.session import Session

    document = book if isinstance(book, Document) else load_document(book, encoding=encoding)
    return Session(document, _resolved((settings or Settings()).session), selection=selection)


def open_document(path: str, encoding: str | None = None) -> Document:
    """Read a book (a text, HTML, EPUB or PDF file, a folder of them, or "-" for stdin) into
    numbered paragraphs."""
    return load_document(path, encoding=encoding)


def absent_words(document: Document, text: str) -> list[str]:
    """The content words of `text` that no paragraph of `document` holds (say them otherwise)."""
    from cwread.answer.extractive import absent_words as absent

    return absent(document, text)


def contents(document: Document) -> list[ContentsEntry]:
    """A book's contents: the chapters its text heads, within each of its files, each with its
    paragraph range (cwread.library.catalog.contents_of)."""
    from cwread.library.contents import contents_of

    return contents_of(document)


def cast(document: Document, query: str = "", upto: int | None = None) -> tuple[Cast, list[CastMember]]:
    """A book's cast (cwread.retrieval.cast: the people and places its text names, their forms,
    descriptions and mentions, built once and cached), and its members `query` names or
    describes, best first (no query: all, the most mentioned first); `upto`: as known to a
    reader who has read to that paragraph (Cast.read_upto)."""
    from cwread.retrieval.cast_build import book_cast

    _within_question_size(query, "name or description")
    shelving = read_as(document.path)
    if shelving is not None and shelving.shelf:  # one cast of several books merges their people
        raise InputError(
            f"{document.path} is a shelf of {shelving.books} books: a cast is one book's people; give one of its files"
        )
    whole = book_cast(document)
    if upto is not None:
        whole = whole.read_upto(document, upto)
    return whole, (whole.lookup(query) if query.strip() else list(whole.members))


_NTH_CHAPTER = re.compile(r"^(?:ch|chap|chapter)\s*\.?\s*(\d+)$", re.I)


def _within_question_size(words: str, what: str) -> None:
    """InputError where `words` (a search's, a cast's name) run past what a question may (a
    100,000-character one was searched for, and said back whole)."""
    if len(words) > MAX_QUESTION_CHARS:
        raise InputError(f"the {what} runs to {len(words):,} characters; cwread takes up to {MAX_QUESTION_CHARS:,}")


def check_setting(key: str, value: str) -> None:
    """InputError where `value` cannot be `key`'s, checked as a run would read it, before the
    settings file takes it: a stage's knob, the backend's, the constraint's or the embedder's
    name (written unchecked, every later `ask` failed on it)."""
    from cwread.backends.provider import checked_constraint
    from cwread.backends.select import check_backend
    from cwread.environment import is_stage_key
    from cwread.retrieval.embedders import check_embedder

    if is_stage_key(key):
        with_knobs(RunSettings(), {key: value})
    checks = {"backend": check_backend, "constraint": checked_constraint, "embedder": check_embedder}
    if key in checks:
        checks[key](value)  # the very check a run makes of it


def reading_limit(document: Document, upto: str) -> int:
    """The last paragraph a reader has read, as they say it: a paragraph as `show` takes it
    ("1200", "ch03:12"), a file of a book of files ("ch03": to its end), or the N-th chapter of
    its contents ("ch12", "chapter 12": to that chapter's end); InputError otherwise."""
    from cwread.library.contents import contents_of

    said = upto.strip()
    try:
        ids = document.parse_spec(said)
    except InputError:
        ids = []
    if ids:
        return max(ids)
    nth = _NTH_CHAPTER.match(said)
    listed = [c for c in contents_of(document) if c.wrapping is None]
    # the chapters the text heads, where it heads any (not what comes before the first); else its files
    chapters = [c for c in listed if document.chapter(c.first) is not None] or listed
    numbered = [c for c in chapters if nth is not None and _heading_number(c.heading) == int(nth.group(1))]
    if numbered:  # "ch7" is the chapter headed VII, whatever comes before it
        return numbered[0].last
    if nth is None or not 1 <= int(nth.group(1)) <= len(chapters):
        raise InputError(
            f"the reading limit {upto!r}: give a paragraph (1200, ch03:12) or a chapter of the {len(chapters)} "
            "the contents list (ch12)"
        )
    return chapters[int(nth.group(1)) - 1].last


_HEADING_NUMBER = re.compile(r"^(?:chapter|chap\.?|ch\.?)?\s*([ivxlcdm]+|\d+)\b\.?", re.I)
_ROMAN = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}


def _heading_number(heading: str) -> int | None:
    """The number a chapter's heading gives it ("CHAPTER VII. THE CHAPEL": 7, "12": 12), else None."""
    found = _HEADING_NUMBER.match(heading.strip())
    if found is None:
        return None
    word = found.group(1).lower()
    if word.isdigit():
        return int(word)
    values = [_ROMAN[c] for c in word]
    return sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))


def paragraph_id(document: Document, label: str) -> int:
    """The id of the one paragraph `label` names ("957", "ch03:12"); InputError otherwise."""
    ids = document.parse_spec(label)
    if len(ids) != 1:
        raise InputError(f"{label!r} names {len(ids)} paragraphs; give one (as show takes it: 957, ch03:12)")
    return ids[0]


EXPANSIONS = ("replies", "scene")  # besides a number of paragraphs each way


def expansion(value: str | None) -> int | str | None:
    """How a reader asked a passage widened: "replies", "scene", or a number of paragraphs on
    each side (cwread.retrieval.passages.printed_span); InputError otherwise."""
    if value is None or value in EXPANSIONS:
        return value
    if value.isdigit():
        return int(value)
    raise InputError(f"--expand takes replies, scene or a number of paragraphs, not {value!r}")


def show(document: Document, spec: str, notes: list[str] | None = None, around: int = 0) -> list[Paragraph]:
    """The paragraphs named by `spec`: "12", "10-14", "10-", "10+4" or "3,7,10-12", or "all"; in a
    book of several files "ch03:12", "ch03:12-20" or "ch03" (InputError if invalid); a range
    past the end stops there, said in `notes` where given. `around`: each with as many
    paragraphs of its file before and after it, every paragraph once, in the book's order."""
    ids = document.parse_spec(spec, notes)
    if around:
        near = set()
        for pid in ids:
            first, last = document.file_span(pid)
            near.update(range(max(first, pid - around), min(last, pid + around) + 1))
        ids = sorted(near)
    return [document.paragraph(pid) for pid in ids]


def index_document(
    document: Document, embedder: str = DEFAULT_EMBEDDER, progress: Progress | None = None
) -> IndexReport:
    """Build (or verify) the cached indexes of `document`, and the word counts its extractive
    answers weigh question words by."""

    from cwread.answer.extractive import book_idf
    from cwread.records.trace import IndexReport
    from cwread.retrieval.embedders import load_embedder
    from cwread.retrieval.index import document_cache_dir, open_index

    t0 = time.perf_counter()
    index = open_index(document, load_embedder(embedder), progress)
    book_idf(document)
    return IndexReport(
        paragraphs=len(document),
        built=tuple(index.built),
        seconds=time.perf_counter() - t0,
        cache_dir=str(document_cache_dir(document)),
        embedder=embedder,
    )


def find(
    document: Document,
    question: Question,
    settings: Settings | None = None,
    *,
    progress: Progress | None = None,
    hints: Hints = NO_HINTS,
) -> FindResult:
    """Retrieve and segment, in one call: Session.find on a session opened with `settings`,
    by its run's budget and retrieval ("fused", "bm25" or "dense"), with what the reader adds
    (`hints`: words for the lexical side, a paragraph whose neighbourhood ranks first)."""
    from cwread.run.session import Session

    settings = settings or Settings()
    return Session(document, settings.session).find(
        question, settings.run.budget, settings.run.retrieval, progress, hints=hints
    )


def read_as(book: str) -> Shelving | None:
    """How a book named on the command line is read where nothing says: a folder as a shelf of
    books or as one book (cwread.library.catalog.shelving); None for anything but a folder."""
    path = Path(book).expanduser()
    if book == "-" or not path.is_dir():
        return None
    from cwread.library.catalog import shelving  # here: a file's find loads no library (10 ms)

    return shelving(path)


def find_library(
    roots: tuple[Path, ...],
    question: Question,
    settings: Settings | None = None,
    *,
    progress: Progress | None = None,
    notice: Callable[[str], None] | None = None,
    hints: Hints = NO_HINTS,
    most_books: int | None = None,
) -> LibraryFound:
    """A question over the library under `roots`: the books its index matches best (at most
    `most_books`) searched as `find` searches one, their passages ranked together
    (cwread.run.library_question). Each book's indexes are built when first needed and kept."""
    from cwread.library.catalog import Library
    from cwread.run.library_question import MOST_BOOKS, find_in_library, session_opener

    settings = settings or Settings()
    library = Library(roots, notice, settings.session.library_url)
    return find_in_library(
        library,
        question,
        session_opener(library, settings.session),
        settings.run.budget,
        settings.run.retrieval,
        progress,
        hints=hints,
        most_books=MOST_BOOKS if most_books is None else most_books,
    )


def _resolved(session: SessionSettings) -> SessionSettings:
    """A session's settings with the environment read into its backends (the API is a face,
    as the CLI is: BackendSettings.resolved)."""
    return replace(session, backends=session.backends.resolved())


def ask_library(
    roots: tuple[Path, ...],
    question: Question,
    settings: Settings | None = None,
    *,
    progress: Progress | None = None,
    notice: Callable[[str], None] | None = None,
) -> LibraryAnswer:
    """`question` answered from the book under `roots` whose passages fit it best, of those the
    library's index matches best (see `find_library`): the passages found and the answering
    book's trace (None where no book holds the question's words)."""
    from cwread.library.catalog import Library
    from cwread.run.library_question import ask_in_library, session_opener

    settings = settings or Settings()
    library = Library(roots, notice, settings.session.library_url)
    return ask_in_library(
        library, question, session_opener(library, _resolved(settings.session)), settings.run, progress, notice
    )


def ask(
    document: Document,
    question: Question,
    settings: Settings | None = None,
    *,
    selection: Selection | None = None,
    progress: Progress | None = None,
    notice: Callable[[str], None] | None = None,
    hints: Hints = NO_HINTS,
) -> Trace:
    """Answer one question (or verify a claim) about `document` with quoted paragraphs, in
    one call: `open` (the session's settings), then Session.ask (the run's: what each stage
    is asked for; `hints`: what the reader adds, its reading limit say)."""
    settings = settings or Settings()
    session = open(document, settings, selection=selection)
    return session.ask(question, settings.run, progress=progress, notice=notice, hints=hints)


def search_library(
    roots: tuple[Path, ...],
    query: str,
    limit: int = 10,
    progress: Progress | None = None,
    *,
    within: Within | None = None,
    context: int = 0,
    notice: Callable[[str], None] | None = None,
    library_url: str | None = None,
) -> Found:
    """The `limit` paragraphs (0: every match) of the books under `roots` that best match
    `query` (BM25, no model call), best first; the library's index built if missing or
    stale, `within` the books and paragraphs it names (Within: a glob of the books' names, a
    reader's limit); `context`: paragraphs shown around each hit; `library_url`: the index on
    a PostgreSQL server (SessionSettings.library_url)."""
    from cwread.library.catalog import EVERYWHERE, Library

    _within_question_size(query, "search")
    library = Library(roots, notice, library_url)
    return library.search(query, limit, progress, within=within or EVERYWHERE, context=context)


def index_library(
    roots: tuple[Path, ...],
    progress: Progress | None = None,
    notice: Callable[[str], None] | None = None,
    library_url: str | None = None,
) -> LibraryIndexed:
    """The index of the library under `roots` brought up to date (each book added or changed
    read and put in, one removed dropped), on the server `library_url` names or in this
    machine's file: what it holds then."""
    from cwread.library.catalog import Library

    return Library(roots, notice, library_url).index(progress)


def _reader_note(folder: str | None) -> str:
    """Whether the answer reader (in `folder`, else the one cwread ships) loads, and what it does."""
    from cwread.agents.extractive_qa import ReaderUnavailable, load_reader

    try:
        reader = load_reader(folder)
    except ReaderUnavailable as e:
        return f"answer reader: {e}; the sentence ranker picks an extractive answer's words"
    return (
        f"answer reader: {reader.name} picks the words of an extractive answer's paragraph, "
        f"none shown under {reader.threshold:+.2f} (answer.reader_threshold sets another; answer.reader=off, none)"
    )


def doctor(
    settings: BackendSettings | None = None, prepare: bool = False, answering: AnswerSettings | None = None
) -> DoctorReport:
    """Which backend, models and embedder `ask` would use, and what is missing; a model the
    first question would prepare (hundreds of MB into the cache) is only said, unless `prepare`;
    `answering`: whose answer reader is looked for (default: the one cwread ships)."""
    from cwread.agents.model_facts import FACTS, facts_of
    from cwread.agents.reading_budget import reading_note
    from cwread.backends import label
    from cwread.backends.select import BackendSettings, model_advice, select_backends, serving_notes
    from cwread.cache import cache_root
    from cwread.records.trace import DoctorReport
    from cwread.retrieval.embedders import static_model_dir
    from cwread.run import planning

    finder = interpreter = why = error = None
    notes: list[str] = []
    selection = None
    try:
        selection = select_backends(settings or BackendSettings())
        finder, interpreter, why = label(selection.finder), label(selection.interpreter), selection.why
        notes = serving_notes(selection)
        if planning.finder_skip_reason("auto", selection.finder) is None:  # else no Finder call is made
            notes.append(reading_note(selection.finder))
        for backend in {id(b): b for b in (selection.finder, selection.interpreter)}.values():
            notes += [
                f"{backend.model}: {FACTS[fact].says} ({FACTS[fact].measured})" for fact in facts_of(backend)
            ]
            # a truncated GGUF passes every check but loading it
            verdict = backend.verify() if prepare or not hasattr(backend, "unprepared") else backend.verify(prepare=False)
            if verdict is not None:
                notes.append(f"{backend.model}: {verdict}")
    except ModelError as exc:  # an input error (a bad setting) still propagates: exit 2
        error = str(exc)
    notes.append(_reader_note((answering or AnswerSettings()).reader_folder))
    plugins = load_plugins()
    if plugins:
        notes.append(f"plug-ins: {', '.join(plugins)}")
    return DoctorReport(
        cache=str(cache_root()),
        finder=finder,
        interpreter=interpreter,
        why=why,
        backend_error=error,
        embedder=DEFAULT_EMBEDDER,
        embedder_built=(static_model_dir() / "embeddings.npy").is_file(),
        notes=tuple(notes),
        advice=tuple(model_advice(selection)),
        settings_file=str(settings_path()),
        settings=tuple((key, shown_setting(key, value)) for key, value in read_settings_file().items()),
    )
