"""Options shared by several commands, declared once: single options as `Annotated` types, and the
groups of output, question, evaluation and find (the settings' are cwread.cli.settings_groups).
Lists of choices are read from their registries, so help cannot drift from them."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from cwread.cli.option_groups import listed, opt, option, option_group, second_panel
from cwread.environment import MIN_WIDTH
from cwread.errors import InputError
from cwread.eval import METHOD_NAMES as EVAL_METHODS
from cwread.library import MOST_BOOKS
from cwread.records.question import FORMS, make_question
from cwread.retrieval import DEFAULT_EMBEDDER
from cwread.retrieval import METHODS as RETRIEVALS
from cwread.views import FIND_CHARS, MAP_CANDIDATES, READER_CHARS, TERMINAL_LINES
from cwread.views.help import FORMAT_NAMES

IN_OUT = "Input and output"  # the second panels (--help-all; cwread.views.help)
RANKING = "Ranking"
LIBRARIES = "Libraries"

Book = Annotated[
    str,
    typer.Argument(
        help=f"A {FORMAT_NAMES} file, a folder of them (one book, or a shelf of books), or - "
        "(standard input).",
        show_default=False, metavar="BOOK",
    ),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print exactly one JSON document on stdout; all else on stderr.", metavar="")]
JsonLinesFlag = Annotated[bool, typer.Option("--json", help="One JSON trace a line on stdout, for one question a line in; all else on stderr.", metavar="")]
DebugFlag = Annotated[
    bool,
    typer.Option("--debug", help="Show tracebacks on errors.", metavar="", **second_panel(IN_OUT)),
]
EmbedderOpt = Annotated[
    str,
    typer.Option(
        envvar="CWREAD_EMBEDDER", **second_panel(RANKING), metavar="NAME",
        help=f"Dense model: {DEFAULT_EMBEDDER} (fast default), minilm (full MiniLM, slower), none "
        "(BM25 only), or the path of a sentence-transformers model (e.g. BGE-M3 on a GPU).",
    ),
]
RetrievalOpt = Annotated[
    str,
    typer.Option(
        "--retrieval",
        help=f"How paragraphs are ranked: {listed(RETRIEVALS)} (fused: BM25 and the dense model, "
        "by reciprocal rank).",
        **second_panel(RANKING),
        metavar="|".join(RETRIEVALS),
    ),
]
LibraryUrlOpt = Annotated[str | None, typer.Option(
    "--library-url", envvar="CWREAD_LIBRARY_URL", metavar="URL", show_default=False, **second_panel(LIBRARIES),
    help="A library's index on a PostgreSQL server, shared by a team: postgresql://USER@HOST/DATABASE[?library=NAME] "
    "(NAME: the folder's name unless given); else this machine's [env: CWREAD_LIBRARY_URL].")]
TraceOpt = Annotated[str | None, typer.Option("--trace", help="Also write the JSON trace to this file.")]


@dataclass(frozen=True)
class Output:
    """How a command that reads a book reads it and prints: --json, --encoding, --width, and for
    those that print what a reader asked for (show, search, contents, cast) --max-chars."""

    json_out: bool
    encoding: str | None
    width: int | None
    max_chars: int | None = None


OUTPUT_OPTIONS: dict[str, tuple[Any, Any]] = {
    "json_out": (JsonFlag, False),
    "encoding": option(
        str | None,
        "Force the text encoding (default: detect UTF-8/UTF-16 marks, else UTF-8, cp1252, latin-1).",
        **second_panel(IN_OUT),
    ),
    "width": option(
        int | None,
        f"Wrap output at this many columns ({MIN_WIDTH} or more); 0 never wraps. Default: the terminal's "
        "width, and no wrapping when output goes to a pipe or file.",
        None, "--width", envvar="CWREAD_WIDTH", show_default=False, **second_panel(IN_OUT),
    ),
}
output_options = option_group("output", OUTPUT_OPTIONS, Output)
MaxCharsOpt = opt(int, "Print up to this many characters (show, search, contents: into a pipe), then a line naming what is left out; 0: no bound.",
                  "--max-chars", min=0, **second_panel(IN_OUT))  # fmt: skip
chat_output_options = option_group("output", {**OUTPUT_OPTIONS, "json_out": (JsonLinesFlag, False)}, Output)
bounded_output_options = option_group("output", {**OUTPUT_OPTIONS, "max_chars": (MaxCharsOpt, READER_CHARS)}, Output)


UPTO_HELP = "Where you have read to (1200, ch03:12, or a chapter: ch12): nothing past it is used."
UptoOpt = Annotated[str | None, typer.Option("--upto", help=UPTO_HELP, show_default=False, metavar="ID")]


@dataclass(frozen=True)
class Reading:
    """What `ask` and `verify` take of the reader beyond the question: where they have read to
    (`upto`: nothing past it is found, read or quoted) and the file the JSON trace is also
    written to (`trace`)."""

    upto: str | None
    trace: str | None


READING_OPTIONS: dict[str, tuple[Any, Any]] = {
    "upto": (UptoOpt, None),
    "trace": (TraceOpt, None),
}
reading_options = option_group("reading", READING_OPTIONS, Reading)


QUESTION_OPTIONS: dict[str, tuple[Any, Any]] = {
    "question": (Annotated[str, typer.Argument(help="The question.", show_default=False, metavar="QUESTION")], inspect.Parameter.empty),
    "option": option(
        list[str] | None, "An answer option (repeat for B, C, ...).", None, "-o", "--option", metavar="A=TEXT"
    ),
    "kind": option(
        str | None,
        f"The kind of question, where it is not open (or mcq, given -o): one of {listed(FORMS)} "
        "(claim: as `cwread verify`).",
        None, "--kind", show_default=False, metavar="|".join(FORMS), **second_panel("Question kind"),
    ),
}
# the question, its options (-o) and its kind, validated into a Question before any work
question_options = option_group(
    "asked", QUESTION_OPTIONS, lambda question, option, kind: make_question(question, option, kind=kind)
)


EVALUATION_OPTIONS: dict[str, tuple[Any, Any]] = {
    "method": option(list[str] | None, f"{listed(EVAL_METHODS)} (repeat; default: all).", None, "--method", "-m"),
    "limit": option(int | None, "Only the first N records."),
    "spread": option(bool, "With --limit: N records evenly spaced through the file, not the first N.", False, "--spread"),
    "out": option(str | None, "Write a row per record and method to this new JSONL file (one begun: --resume)."),
    "resume": option(bool, "Skip records already in --out.", False, "--resume"),
    "report": option(str | None, "Write a Markdown report here."),
    "permute_options": option(
        bool, "Ask each multiple-choice question once per option rotation; right only if all are.", False,
        "--permute-options",
    ),
}
# what `cwread eval` runs, as EvalOptions' fields (the rest come from the shared groups)
evaluation_options = option_group(
    "evaluation", EVALUATION_OPTIONS, lambda method, **v: {"methods": tuple(method or ()), **v}
)


LIBRARY_PASSAGES = 12  # passages find --library prints at most (within --max-chars): from several books


@dataclass(frozen=True)
class FindShape:
    """What `find` is asked beyond the question: where to look (`also`, words beside the
    question's; `near`, a paragraph as `show` takes it; `library`, a folder of books, at most
    `books_opened` searched) and how to print (`limit` passages, `max_chars`, `expand`, the
    `compact` map, `plain` text)."""

    limit: int | None
    max_chars: int | None
    also: str
    expand: int | str | None
    near: str | None
    upto: str | None
    library: bool | None  # None: as the folder reads (cwread.library.catalog.shelving)
    books_opened: int
    library_url: str | None
    compact: bool
    plain: bool

    def printed_chars(self, default: int) -> int | None:
        """The characters of plain text printed at most (None: no bound)."""
        return default if self.max_chars is None else (self.max_chars or None)


def _find_shape(one_book: bool, **values) -> FindShape:
    from cwread import api

    library = shelf_chosen(values["library"], one_book)
    return FindShape(**{**values, "library": library, "expand": api.expansion(values["expand"])})


ONE_BOOK_HELP = "A folder is one book of chapters, whatever it reads as."


def shelf_chosen(library: bool, one_book: bool) -> bool | None:
    """Whether the user chose a folder's reading: True (--library), False (--one-book), or None
    (as it reads); InputError for both."""
    if library and one_book:
        raise InputError("--library and --one-book contradict each other; give one")
    return True if library else False if one_book else None


FIND_OPTIONS: dict[str, tuple[Any, Any]] = {
    "limit": option(
        int | None, "Passages to print, 0: all.  [default: the anchor segments]", show_default=False, metavar="N", min=0
    ),
    "max_chars": option(
        int | None,
        "Print whole passages, best first, up to this many characters, then the rest a line each; "
        f"0: no bound.  [default: {FIND_CHARS:,}; {TERMINAL_LINES} lines on a terminal]",
        None, "--max-chars", min=0, show_default=False, metavar="N",
    ),
    "also": option(
        str, "Words to look for beside the question's, as the book may put it (\"motor garage\").", "", "--also",
        show_default=False, metavar="WORDS",
    ),
    "expand": option(
        str | None, "Widen each passage: replies (the speech that follows), scene, or N paragraphs each side.",
        None, "--expand", show_default=False, metavar="replies|scene|N",
    ),
    "near": option(
        str | None, "A paragraph found already (1200, ch03:12): the passages within 100 paragraphs of it first.",
        None, "--near", show_default=False, metavar="ID",
    ),
    "upto": option(str | None, UPTO_HELP, None, "--upto", show_default=False, metavar="ID"),
    "library": option(
        bool,
        "BOOK is a folder of books or a Calibre library: search the books its index matches best, "
        "their passages ranked together.  [default: as the folder reads, said on stderr]",
        False, "--library", show_default=False,
    ),
    "one_book": option(bool, ONE_BOOK_HELP, False, "--one-book", show_default=False, **second_panel(LIBRARIES)),
    "books_opened": option(
        int, "With --library: the candidate books searched at most.", MOST_BOOKS, "--books-opened", min=1,
        **second_panel(LIBRARIES),
    ),
    "library_url": (LibraryUrlOpt, None),
    "compact": option(
        bool,
        "One line a candidate paragraph (rank, id, chapter, the part that best matches, the "
        f"question's words marked *so*; {MAP_CANDIDATES} lines, or --limit): pick, then show.",
        False, "--map",
    ),
    "plain": option(bool, "Plain text, as into a pipe or file, on a terminal too.", False, "--plain", **second_panel(IN_OUT)),
}
find_options = option_group("shape", FIND_OPTIONS, _find_shape)
