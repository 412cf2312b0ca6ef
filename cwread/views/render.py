"""What the CLI shows: Rich views on stdout, progress and notices on stderr, JSON documents.

Takes the records of a run (`cwread.records`) and the JSON shapes (`cwread.views.json_output`); knows
nothing of options or exit codes.
"""

from __future__ import annotations

import re
import shlex

from rich.console import Console
from rich.text import Text

from cwread.book import Document, Paragraph
from cwread.library.catalog import Found
from cwread.library.contents import Chapter
from cwread.records import FindResult
from cwread.retrieval.cast import Cast, CastMember
from cwread.trace import DoctorReport, IndexReport
from cwread.views import reading
from cwread.views.console import notice, panel, stderr, stdout, width, without_measurements
from cwread.views.json_output import about_line, book_path
from cwread.views.terminal import one_line, printable


def paragraph_tag(document: Document, pid: int) -> str:
    """How a paragraph is named before its text: "[12] ", or "[12] p. 37 " in a book with pages."""
    page = document.page(pid)
    return f"[{document.label(pid)}] " if page is None else f"[{document.label(pid)}] p. {page} "


def _paragraph_line(document: Document, pid: int, text: str) -> Text:
    line = Text()
    line.append(paragraph_tag(document, pid), style="bold cyan")
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
    if width() == 0:
        return None
    return width() or (out.width if out.is_terminal else READER_WIDTH)


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


def map_view(result: FindResult, count: int, absent: list[str], max_chars: int | None) -> None:
    """`find --map`: see cwread.views.reading.map_lines."""
    out = stdout(lines=True)
    for line in reading.map_lines(result, count, absent, _reader_width(out), max_chars):
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
            body.append(paragraph_tag(doc, pid), style="bold cyan")
            body.append(printable(p.text), style=style)
            if pid != ids[-1]:
                body.append("\n\n")
        # a Text, not markup: "[ch03:1-5]" would be read as a style tag and vanish
        title = Text(f"#{rank} {s.origin} [{doc.span_label(ids[0], ids[-1])}]  score {s.score:.4f}")
        out.print(
            panel(
                out,
                body,
                title=title,
                title_align="left",
                border_style="cyan" if s.origin == "anchor" else "dim",
            )
        )


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
