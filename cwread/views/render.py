"""What the CLI shows: Rich views on stdout, progress and notices on stderr, JSON documents.

Takes the records of a run (`cwread.records`) and the JSON shapes (`cwread.views.json_output`); knows
nothing of options or exit codes.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from cwread.agents.finder import JudgeFinder
from cwread.backends.select import READER_ROUTES
from cwread.book import Document, Paragraph
from cwread.errors import CwreadError, OutputError
from cwread.library.catalog import Chapter, Found
from cwread.plan import AnswerMode, SupportMethod
from cwread.progress import Progress
from cwread.records import (
    NO_SENTENCE,
    NOT_DETERMINED,
    SURE,
    UNREAD,
    DoctorReport,
    FindResult,
    IndexReport,
    Shown,
    Status,
    SupportCheck,
    Trace,
)
from cwread.retrieval.cast import Cast, CastMember
from cwread.views import reading
from cwread.views.json_output import about_line, book_path, error_json
from cwread.views.terminal import one_line, printable

_STAGES = {
    "bm25": "Building the lexical index",
    "reading books": "Reading the books of the library",
    "candidate books": "Searching the books that match best",
    "embed": "Embedding paragraphs",
    "finder": "Finder reading segments",
    "interpreter": "Interpreter answering",
    "self-check": "Interpreter self-checking",
    "support check": "Checking the answer against its quotes",
}


_width: int | None = None  # --width; None: the terminal's, and no wrapping into a pipe


def set_width(width: int | None) -> None:
    """Wrap at `width` columns (0: never); None: the terminal's width, unwrapped off a terminal."""
    global _width
    _width = width


class ReaderGone(Exception):
    """The reader of our stdout went away (`| head`): not an OSError, so that click does not
    turn it into exit 1; the CLI exits 0, as `cat` does."""


class _Console(Console):
    """A Rich console whose failures to write are cwread's: a reader that went away (`| head`)
    is no error (exit 0, as `cat` does); any other failure (a full disk) is one line, exit 3."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise ReaderGone

    def _check_buffer(self) -> None:
        try:
            super()._check_buffer()
        except OSError as exc:
            self.quiet = True
            raise output_error(exc) from None


def output_error(exc: OSError) -> OutputError:
    return OutputError(f"cannot write the output: {exc.strerror or exc}")


UNWRAPPED = 100_000  # columns of a view into a pipe or file (or --width 0): nothing wraps


def _console(file, lines: bool) -> Console:
    if _width:
        return _Console(file=file, highlight=False, width=_width)
    console = _Console(file=file, highlight=False)
    if _width == 0 or not console.is_terminal:
        # Lines of text into a pipe or file stay one line each, unpadded, so `grep` finds a
        # sentence of a paragraph; a view's panels fit their text, never wrapped at 80
        console.soft_wrap = lines
        if not lines:
            console = _Console(file=file, highlight=False, width=UNWRAPPED)
    return console


def _panel(console: Console, body, **options) -> Panel:
    """A panel as wide as the console, or as its text where nothing wraps."""
    return Panel(body, expand=console.width < UNWRAPPED, **options)


def stdout(lines: bool = False) -> Console:
    """The console for views; `lines`: plain lines of text, unwrapped off a terminal."""
    return _console(sys.stdout, lines)


def stderr() -> Console:
    return _console(sys.stderr, lines=True)


def notice(line: str) -> None:
    """One line of information on stderr, e.g. which backend runs."""
    stderr().print(f"cwread: {one_line(line)}", highlight=False, markup=False)


def help_view(text: str) -> None:
    """A help text of cwread's own (chat's commands), one line of it a line of stdout."""
    console = stdout(lines=True)
    for line in text.splitlines():
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def notice_once(line: str) -> None:
    """`notice`, but once on this machine (per cache folder) for the same line: which backend
    runs, and what a small model changes, are said the first time and when they change, not
    on every answer (the trace and `cwread doctor` always say them)."""
    if _first_time_here(line):
        notice(line)


def _first_time_here(line: str) -> bool:
    """Whether `line` is said for the first time on this machine (per cache folder); marks it
    said."""
    import hashlib

    from cwread.cache import cache_root

    try:
        seen = cache_root() / "notices" / hashlib.sha256(line.encode()).hexdigest()[:24]
        if seen.exists():
            return False
        seen.parent.mkdir(parents=True, exist_ok=True)
        seen.touch()
    except (OSError, CwreadError):  # a cache that cannot keep it: said every time
        pass
    return True


_json_printed = False


def begin_run() -> None:
    """Forget the last run's settings (the CLI may run several times in one process)."""
    global _json_printed, _width
    _json_printed, _width = False, None
    _NOTES_SAID.clear()


_C1_AND_DEL = re.compile(r"[\x7f-\x9f]")


def json_text(data: dict, indent: int | None = 2) -> str:
    """`data` as JSON (indented, or on one line with `indent` None), every control character
    escaped: JSON escapes C0 itself, and DEL and C1 (U+009B is a terminal's CSI) are escaped
    here, so the text stays exact."""
    dumped = json.dumps(data, ensure_ascii=False, indent=indent)
    return _C1_AND_DEL.sub(lambda m: f"\\u{ord(m.group()):04x}", dumped)


def print_json(data: dict, one_line: bool = False) -> None:
    """`data` on stdout as JSON; `one_line`: a line of JSON Lines."""
    global _json_printed
    _json_printed = True
    try:
        sys.stdout.write(json_text(data, None if one_line else 2) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        raise ReaderGone from None
    except OSError as exc:
        raise output_error(exc) from None


def print_json_error(code: int, kind: str, message: str) -> None:
    """With --json, a failure is a JSON document too, unless the run already printed its one."""
    if not _json_printed:
        print_json(error_json(code, kind, message))


@contextmanager
def progress(quiet: bool = False) -> Iterator[Progress | None]:
    """A progress callback for the core: a Rich bar on a terminal, one line per stage otherwise."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bar

    console = stderr()
    if quiet:
        yield None
        return
    if not console.is_terminal:
        seen: set[str] = set()

        def plain(stage: str, done: int, total: int) -> None:
            if stage not in seen:
                seen.add(stage)
                print(f"cwread: {_STAGES.get(stage, stage).lower()} ({total} items)", file=sys.stderr)

        yield plain
        return
    bar = Bar(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    tasks: dict[str, int] = {}

    def update(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(_STAGES.get(stage, stage), total=total)
        bar.update(tasks[stage], completed=done, total=total)

    with bar:
        yield update


def _tag(document: Document, pid: int) -> str:
    """How a paragraph is named before its text: "[12] ", or "[12] p. 37 " in a book with pages."""
    page = document.page(pid)
    return f"[{document.label(pid)}] " if page is None else f"[{document.label(pid)}] p. {page} "


def _paragraph_line(document: Document, pid: int, text: str) -> Text:
    line = Text()
    line.append(_tag(document, pid), style="bold cyan")
    line.append(printable(text))
    return line


def show_view(document: Document, paragraphs: list[Paragraph]) -> None:
    out = stdout(lines=True)
    for p in paragraphs:
        line = _paragraph_line(document, p.id, p.text)
        wrapping = document.wrapping(p.id)
        if wrapping:  # a Project Gutenberg header or licence, its front matter, contents or a caption: never retrieved or quoted
            line.append(f"  ({wrapping})", style="dim")
        out.print(line)
        out.print()


SEARCH_TEXT_CHARS = 600  # of a hit's paragraph shown on a terminal (a context paragraph's: half)


def search_view(found: Found, root: str = ".") -> None:
    """A search's hits, each headed by its book's path and its paragraph as `show` takes them
    (`root`: the library's folder as the user named it), the words matched highlighted on a
    terminal; context paragraphs dim."""
    out = stdout()
    skipped = f"; {len(found.skipped)} left out" if found.skipped else ""
    out.print(
        Text(
            f"{len(found.hits)} paragraphs of {found.books} books ({found.paragraphs:,} paragraphs"
            f"{skipped}) for: {one_line(found.query)}",
            style="dim",
        )
    )
    matched = _matcher(found.query) if out.is_terminal else None
    # a terminal scans hits cut short; a reader in a pipe gets whole paragraphs (a hit cut
    # before its matched clause was no use to an assistant)
    most = SEARCH_TEXT_CHARS if out.is_terminal else 1_000_000
    for hit in found.hits:
        out.print()
        head = Text()
        head.append(f"{shlex.quote(printable(book_path(root, hit.book)))} {hit.label}", style="bold cyan")
        head.append(
            (f"  p. {hit.page}" if hit.page is not None else "")
            + f"  score {hit.score:.2f}"
            + printable(about_line(hit.about)),
            style="dim",
        )
        out.print(head)
        for label, text in hit.before:
            out.print(_search_text(label, text, most // 2, matched, "dim"))
        out.print(_search_text(hit.label if hit.before or hit.after else "", hit.text, most, matched))
        for label, text in hit.after:
            out.print(_search_text(label, text, most // 2, matched, "dim"))
    for line in found.skipped[:5]:
        notice(f"not searched: {line}")


def _search_text(label: str, text: str, most: int, matched, style: str = "") -> Text:
    """A paragraph of a search, cut at `most` characters, its matched words highlighted
    (`matched`: None off a terminal), under its label where context surrounds it."""
    text = printable(text if len(text) <= most else text[: most - 1].rstrip() + "…")
    line = Text(text, style=style)
    if matched is not None:
        for m in _WORD_RE.finditer(text):
            if matched(m.group(0)):
                line.stylize("bold red", m.start(), m.end())
    if label:
        line = Text.assemble((f"[{label}] ", "cyan"), line)
    return line


_WORD_RE = re.compile(r"\w+")


def _matcher(query: str):
    """Whether a word of a paragraph is one the search looked for: its stem is that of one of
    the words the index was asked for (cwread.library.store.query_words)."""
    from cwread.library.store import query_words
    from cwread.text.words import word_stems

    terms = set(word_stems(query_words(query)))
    seen: dict[str, bool] = {}

    def matched(word: str) -> bool:
        key = word.lower()
        if key not in seen:
            seen[key] = word_stems([key])[0] in terms
        return seen[key]

    return matched


READER_WIDTH = 100  # columns of a reader's text into a pipe or file, where no --width is given


def _reader_width(out: Console) -> int | None:
    """Where a reader's text wraps: --width, else the terminal's, else READER_WIDTH; None: never (--width 0)."""
    if _width == 0:
        return None
    return _width or (out.width if out.is_terminal else READER_WIDTH)


def find_text_view(
    result: FindResult, limit: int, max_chars: int | None, absent: list[str], expand: int | str | None = None
) -> None:
    """`find` for a reader in a pipe (an AI assistant, a script): see cwread.views.reading.find_lines."""
    out = stdout(lines=True)
    for line in reading.find_lines(result, limit, max_chars, absent, _reader_width(out), expand):
        out.print(line, highlight=False, markup=False, soft_wrap=True)


def library_find_view(found, limit: int, max_chars: int | None, expand: int | str | None = None) -> None:
    """`find --library`: see cwread.views.reading.library_find_lines."""
    out = stdout(lines=True)
    for line in reading.library_find_lines(found, limit, max_chars, _reader_width(out), expand):
        out.print(line, highlight=False, markup=False, soft_wrap=True)


def cast_view(
    document: Document, cast: Cast, members: list[CastMember], detailed: bool, max_chars: int | None
) -> None:
    """`cast`: see cwread.views.reading.cast_lines."""
    out = stdout(lines=True)
    for line in reading.cast_lines(document, cast, members, detailed, max_chars, _reader_width(out)):
        out.print(line, highlight=False, markup=False, soft_wrap=True)


def map_view(result: FindResult, count: int, absent: list[str]) -> None:
    """`find --map`: see cwread.views.reading.map_lines."""
    out = stdout(lines=True)
    for line in reading.map_lines(result, count, absent, _reader_width(out)):
        out.print(line, highlight=False, markup=False, soft_wrap=True)


def find_view(result: FindResult, limit: int, expand: int | str | None = None) -> None:
    out = stdout()
    doc = result.document
    segments = result.segments if not limit else result.segments[:limit]
    out.print(
        Text.assemble(
            ("Question: ", "bold"),
            printable(result.question.text),
            "\n",
            *[(f"  ({k}) {printable(v)}\n") for k, v in result.question.options.items()],
            (f"{printable(doc.path)}: {len(doc)} paragraphs, {len(result.segments)} segments; ", "dim"),
            (f"showing {len(segments)} (Finder reads {result.budget.read}); ", "dim"),
            (f"anchors {', '.join(map(doc.label, result.anchors))}", "dim"),
        )
    )
    for note in reading.question_notes(result, []):
        out.print(Text(note, style="dim"))
    taken: set[int] = set()
    for rank, s in enumerate(segments, start=1):
        start, end = reading.printed_span(doc, s, expand)
        ids = [pid for pid in range(start, end + 1) if pid not in taken]
        if not ids:
            continue
        taken.update(ids)
        body = Text()
        for pid in ids:
            p = doc.paragraph(pid)
            style = "bold" if pid in s.anchors else ""
            body.append(_tag(doc, pid), style="bold cyan")
            body.append(printable(p.text), style=style)
            if pid != ids[-1]:
                body.append("\n\n")
        # a Text, not markup: "[ch03:1-5]" would be read as a style tag and vanish
        title = Text(f"#{rank} {s.origin} [{doc.span_label(ids[0], ids[-1])}]  score {s.score:.4f}")
        out.print(
            _panel(
                out,
                body,
                title=title,
                title_align="left",
                border_style="cyan" if s.origin == "anchor" else "dim",
            )
        )


_NOTES_SAID: set[str] = set()  # the notes on skipped stages this run (a chat: every answer) has printed
# stages skipped by what the model or the book is, the same for every question: their notes are
# said once on a machine, as notice_once says which backend runs (the trace always says them)
_SAID_ONCE_HERE = ("finder", "spans")


def without_measurements(why: str) -> str:
    """`why` without its parentheses that cite a measurement (" (... benchmarks/...)"), nested
    parentheses and all: the trace and `cwread doctor` give those, not every answer's note."""
    out, depth, start = [], 0, 0
    for i, char in enumerate(why):
        if char == "(":
            if depth == 0:
                out.append(why[start:i])
                start = i
            depth += 1
        elif char == ")" and depth:
            depth -= 1
            if depth == 0:
                group = why[start : i + 1]
                if "benchmarks/" in group:
                    out[-1] = out[-1].rstrip(" ")
                else:
                    out.append(group)
                start = i + 1
    out.append(why[start:])
    return "".join(out)


def _support_line(check: SupportCheck) -> str:
    """How the support check decided, in words ("checked by the model against its quotes: the
    quotes support it (score +2.10, threshold +0.00)")."""
    how = {
        "model": "checked by the model against its quotes",
        "confidence": "checked against its quotes and the model's confidence",
    }.get(check.method, "checked word by word against its quotes")
    if (
        check.weight_share is not None and check.method == SupportMethod.WORDS
    ):  # a label: its why says it whole
        return printable(check.why)
    return f"{how}: {printable(check.why)}"


def answer_view(trace: Trace) -> None:
    """The answer (or "not determined from the text"), then each supporting quote highlighted
    inside its paragraph; the model's own words are shown only where its quotes support them."""
    out = stdout()
    doc = trace.document
    question = trace.question
    outcome = trace.outcome
    head = Text()
    head.append("Answer: ", style="bold")
    status = trace.status
    if status == Status.ANSWERED:
        head.append(printable(trace.answer), style="bold green")
        if trace.answer in question.options:
            head.append(f"  {printable(question.options[trace.answer])}")
        if outcome.shown == Shown.QUOTED_WORDS:
            head.append("  (words quoted from the text)", style="dim")
            judged = outcome.judgement
            if outcome.description is not None:
                said = outcome.description
                head.append(
                    f"\nHow the text describes {printable(said.name)}, beside the name ("
                    + (
                        "the packet's only description"
                        if said.descriptions == 1
                        else f"{said.times} of the {said.descriptions} descriptions the packet gives"
                    )
                    + "); no model asked.",
                    style="dim",
                )
            elif judged is not None and judged.best is not None:
                head.append(
                    f"\nThe Finder judged [{doc.label(judged.best[0])}] the one to answer from "
                    f"({judged.best[1]:+.2f}; {len(judged.scores)} judged"
                    f"{f', {len(judged.unjudged)} more left unread once it scored {SURE:+.0f}' if judged.unjudged else ''}"
                    f", {judged.threshold:+.2f} needed).",
                    style="dim",
                )
            if outcome.reading is not None:
                read = outcome.reading
                what = "picked these words of" if read.answered else "found an answer in"
                head.append(
                    f"\nThe answer reader {what} [{doc.label(read.paragraph)}] ({read.score:+.2f}; {read.threshold:+.2f} needed)"
                    + ("." if read.answered else "; the sentence's words are given."),
                    style="dim",
                )
        elif outcome.check is not None and outcome.supported:
            whose = {"mcq": "The model's choice", "claim": "The model's verdict"}.get(
                question.kind, "The model's words"
            )
            head.append(f"\n{whose}; {_support_line(outcome.check)}.", style="dim")
    elif status == Status.NO_VERDICT:
        head.append("no verdict", style="bold yellow")
        read = (
            ": read the evidence below"
            if outcome.quotes
            else "; no passage read shares a word with what was asked"
        )
        head.append(f"\n{trace.skipped.get('interpreter', '')}{read}.", style="dim")
        for route in READER_ROUTES:
            head.append(f"\n{route}", style="dim")
    elif status == Status.PASSAGES:
        head.append("none given", style="bold yellow")
        judged = outcome.judgement is not None and outcome.judgement.scores
        order = "in the order the Finder judged them to hold the answer" if judged else "best-fitting first"
        where = (
            f"below is where the book answers it, {order}"
            if outcome.quotes
            else "no passage read fits the question"
        )
        head.append(f"\n{UNREAD[0].upper()}{UNREAD[1:]}: {where}.", style="dim")
        for route in READER_ROUTES:
            head.append(f"\n{route}", style="dim")
    elif status == Status.NOT_DETERMINED:
        head.append(NOT_DETERMINED, style="bold yellow")
        if outcome.mode == AnswerMode.EXTRACTIVE:
            why = outcome.no_sentence_why(doc.label)
            head.append(
                f"\n{why[0].upper()}{why[1:]}{' to answer it' if why == NO_SENTENCE else ''}.", style="dim"
            )
    else:
        head.append("(none)", style="bold red")
    # a model answer beside a quoted sentence or none at all: its quotes did not support it
    unbacked = outcome.withheld or (outcome.mode == AnswerMode.EXTRACTIVE and question.is_open)
    if outcome.model_answer and unbacked:
        why = f" ({_support_line(outcome.check)})" if outcome.check else ""
        head.append(
            f"\nThe model answered {printable(repr(outcome.model_answer))}, but its quotes do not say so{why}.",
            style="dim",
        )
    if trace.answer is not None and not outcome.supported:
        if outcome.quotes:
            head.append(
                "\nThe quotes do not bear on this answer: read them before trusting it.", style="yellow"
            )
        else:
            head.append("\nNo quote from the text backs this answer: treat it as a guess.", style="yellow")
    title = question.form.title or question.kind  # a registered kind's own words
    if out.is_terminal:
        out.print(
            _panel(
                out,
                head,
                title=Text(f"{title}: {one_line(question.text)}", overflow="ellipsis", no_wrap=True),
                title_align="left",
                border_style="green",
            )
        )
    else:  # a reader in a pipe: no box padded to the longest line
        _print_wrapped(out, Text(f"{title}: {one_line(question.text)}"))
        _print_wrapped(out, head)
        out.print()
    if status == Status.PASSAGES:
        _passages_view(out, trace)
    elif outcome.quotes:
        heading = "Evidence" if outcome.supported else "Best evidence (not an answer: read it)"
        out.print(Text(heading, style="bold"))
        by_paragraph: dict[int, list[tuple[int, int]]] = {}
        for q in outcome.quotes:
            by_paragraph.setdefault(q.id, []).append((q.start, q.end))
        packed = set(trace.packet.ids)
        for pid, spans in by_paragraph.items():
            tag = _tag(doc, pid)
            line = Text()
            line.append(tag, style="bold cyan")
            line.append(printable(doc.paragraph(pid).text))
            for start, end in spans:
                line.stylize("bold reverse", len(tag) + start, len(tag) + end)
            if pid not in packed:  # best evidence may come from what was read beyond the packet
                line.append("  (read, not in the packet)", style="dim")
            _print_wrapped(out, line)
            out.print()
    notes = stderr()  # what the pipeline left out is a note on the run, not part of the answer
    for stage, why in trace.skipped.items():
        if stage != "interpreter" or status != Status.NO_VERDICT:  # that one is said above
            label = {
                "reading": "Not read",
                "judging": "Not judged",
                "answer_judge": "No paragraph judged for the answer",
            }.get(stage, f"{stage.capitalize()} skipped")
            # the measurement a skip rests on is the trace's and doctor's to give, not every answer's
            line = f"cwread: {label}: {printable(without_measurements(why))}"
            if line in _NOTES_SAID:  # a chat's next answer skips the same stage for the same reason
                continue
            _NOTES_SAID.add(line)
            if stage not in _SAID_ONCE_HERE or _first_time_here(line):
                notes.print(Text(line, style="dim"))
    kept = sum(v.kept for v in trace.verdicts)
    finder_line = (
        "no segment judged (every one read kept)"
        if "finder" in trace.skipped
        else f"{'Judge' if trace.plan and trace.plan.finder == JudgeFinder.reply else 'Finder'} kept {kept} of {len(trace.verdicts)} segments"
    )
    tokens = trace.tokens()
    checked = "self-checked" if trace.self_check else "no self-check"
    forged = sum(len(c.reply.forged) for c in trace.agent_calls)
    _print_wrapped(
        out,
        Text(
            f"{finder_line}; packet {len(trace.packet.items)} "
            f"paragraphs ({', '.join(map(doc.label, trace.packet.ids[:12]))}{'…' if len(trace.packet.items) > 12 else ''})"
            f"{' (fallback: nothing kept)' if trace.packet.fallback else ''}"
            f"{'' if trace.model_calls else '; no model call'}; {checked}; "
            f"{f'{forged} quote(s) not in the text dropped; ' if forged else ''}"
            f"{tokens['prompt']} prompt tokens; {trace.timings.get('total', 0):.1f} s",
            style="dim",
        ),
    )


def _print_wrapped(out: Console, text: Text) -> None:
    """`text` on a terminal as Rich wraps it; into a pipe as plain lines, a line a paragraph (so
    grep finds a sentence), wrapped only at --width."""
    if out.is_terminal:
        out.print(text)
        return
    plain = stdout(lines=True)
    for line in text.plain.splitlines() or [""]:
        for part in reading.wrapped(line, _width or None):
            plain.print(part, highlight=False, markup=False, soft_wrap=True)


def _passages_view(out: Console, trace: Trace) -> None:
    """Where the book answers a question no model read for an answer: each passage headed by
    its rank, id and chapter (and page), then its text, "…" where it is a part of its paragraph."""
    doc = trace.document
    for rank, quote in enumerate(trace.outcome.quotes, start=1):
        chapter = doc.chapter(quote.id)
        page = doc.page(quote.id)
        head = Text()
        head.append(f"#{rank} [{doc.label(quote.id)}]", style="bold cyan")
        head.append(
            (f"  {printable(chapter.title)}" if chapter is not None else "")
            + (f"  p. {page}" if page is not None else ""),
            style="cyan",
        )
        _print_wrapped(out, head)
        whole = len(doc.paragraph(quote.id).text)
        _print_wrapped(
            out,
            Text(
                ("… " if quote.start > 0 else "")
                + printable(quote.text)
                + (" …" if quote.end < whole else "")
            ),
        )
        out.print()


def contents_view(chapters: list[Chapter]) -> None:
    """A book's contents, a line an entry: its paragraphs as `show` takes them, then its heading."""
    out = stdout(lines=True)
    for chapter in chapters:
        line = Text()
        line.append(chapter.span, style="bold cyan")
        if chapter.pages:
            first, last = chapter.pages
            line.append(f"  p. {first}" + (f"-{last}" if last != first else ""), style="dim")
        line.append(f"  {printable(chapter.heading)}")
        if chapter.wrapping:
            line.append(f"  ({chapter.wrapping})", style="dim")
        out.print(line)


def index_view(document: Document, report: IndexReport) -> None:
    what = ", ".join(report.built) if report.built else "nothing (already cached)"
    stderr().print(
        f"{one_line(document.path)}: {report.paragraphs} paragraphs; built {what} in {report.seconds:.1f} s; "
        f"cache {one_line(report.cache_dir)}",
        markup=False,
    )


def doctor_view(report: DoctorReport) -> None:
    out = stdout()
    ok, missing = ("ok", "green"), ("missing", "red")
    if report.ok:
        out.print(Text.assemble(ok, " ", one_line(report.why or "")))
    else:
        out.print(Text.assemble(missing, " ", one_line(report.backend_error or "")))
    for note in report.notes:  # what runs, without the measurements it rests on (the JSON keeps them)
        out.print(Text(f"note {one_line(without_measurements(note))}"))
    out.print(
        Text.assemble(
            ok if report.embedder_built else missing,
            f" embedder {one_line(report.embedder)}",
            "" if report.embedder_built else " (its files are not installed: reinstall cwread)",
        )
    )
    out.print(Text(f"cache {one_line(report.cache)}"))
    if report.advice:
        out.print()
        for line in report.advice:
            out.print(Text(printable(line)))
