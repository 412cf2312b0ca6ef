"""What the CLI shows: Rich views on stdout, progress and notices on stderr, JSON documents.

Takes the records of a run (`cwread.records`) and the JSON shapes (`cwread.views.json_output`); knows
nothing of options or exit codes.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from cwread.text.words import TERM, counted
from cwread.views import TERMINAL_LINES, reading
from cwread.views.console import notice, panel, stderr, stdout, width, without_measurements
from cwread.views.json_output import about_line, book_path
from cwread.views.terminal import one_line, printable

if TYPE_CHECKING:  # the records a view takes: their modules load with the run, not with `show`
    from cwread.book import Document, Paragraph
    from cwread.library.catalog import Found, LibraryIndexed
    from cwread.library.contents import ContentsEntry
    from cwread.records.stages import FindResult
    from cwread.records.trace import DoctorReport, IndexReport
    from cwread.retrieval.cast import Cast, CastMember
    from cwread.retrieval.passages import Passage
    from cwread.run.library_question import LibraryFound


def paragraph_tag(document: Document, pid: int) -> str:
    """How a paragraph is named before its text: "[12] ", or "[12] p. 37 " in a book with pages."""
    page = document.page(pid)
    return f"[{document.label(pid)}] " if page is None else f"[{document.label(pid)}] p. {page} "


def _paragraph_line(document: Document, pid: int, text: str) -> Text:
    line = Text()
    line.append(paragraph_tag(document, pid), style="bold cyan")
    line.append(printable(text))
    return line


def _within(out: Console, items: list[tuple[list[Text], str, list[int]]], max_chars: int | None, noun: str,
            span_label=None) -> None:  # fmt: skip
    """Each item's lines (an item: its lines, its name, its paragraphs' ids), into a pipe only
    while within `max_chars` characters (the first always), then one line naming those left
    out (by their span where `span_label` is given): a reader in a pipe gets bounded text."""
    used = 0
    for at, (lines, _, _) in enumerate(items):
        used += sum(len(line.plain) + 1 for line in lines)
        if max_chars and not out.is_terminal and used > max_chars:
            if at == 0:  # alone past the bound: its lines while within, the one that crosses cut inside
                _print_cut(out, lines, max_chars)
                at = 1
            left = [reading.Block([], [], name, pids=pids) for _, name, pids in items[at:]]
            ids = [pid for block in left for pid in block.pids]
            running = span_label is not None and ids == list(range(ids[0], ids[0] + len(ids))) if ids else False  # a span names them
            for said in reading.left_out_lines(left, max_chars, noun, span_label, spans=running)[1:]:
                out.print(said, highlight=False, markup=False, soft_wrap=True)
            return
        for line in lines:
            out.print(line)


def _print_cut(out: Console, lines: list[Text], room: int) -> None:
    """`lines` while within `room` characters; the one that crosses it cut at a word, its id
    ("[12] ") kept, with " …" and a line saying how much of it was printed (as reading's cut)."""
    for line in lines:
        text = line.plain
        if len(text) + 1 <= room:
            out.print(line)
            room -= len(text) + 1
            continue
        opening = opened.group() if (opened := reading.ID_OPENING.match(text)) else ""
        kept = text[: max(len(opening), room - 2)].rsplit(" ", 1)[0].rstrip()
        kept = kept if len(kept) >= len(opening.rstrip()) else opening.rstrip()
        out.print(Text.assemble(line[: len(kept)], " …"))
        shown = max(len(kept) - len(opening), 0)
        out.print(f"(cut at {shown:,} of its {len(text) - len(opening):,} characters, within --max-chars)", highlight=False, markup=False, soft_wrap=True)
        return


def show_view(document: Document, paragraphs: list[Paragraph], max_chars: int | None = None) -> None:
    items = []
    for p in paragraphs:
        line = _paragraph_line(document, p.id, p.text)
        wrapping = document.wrapping(p.id)
        if wrapping:  # a Project Gutenberg header or licence, its front matter, contents or a caption: never retrieved or quoted
            line.append(f"  ({wrapping})", style="dim")
        items.append(([line, Text()], document.label(p.id), [p.id]))
    _within(stdout(lines=True), items, max_chars, "paragraphs", document.span_label)


SEARCH_TEXT_CHARS = 600  # of a hit's paragraph shown on a terminal (a context paragraph's: half)


def search_view(found: Found, root: str = ".", max_chars: int | None = None) -> None:
    """A search's hits, each headed by its book's path and its paragraph as `show` takes them
    (`root`: the library's folder as the user named it), the words matched highlighted on a
    terminal; context paragraphs dim."""
    out = stdout()
    skipped = f"; {len(found.skipped)} left out" if found.skipped else ""
    out.print(
        Text(
            f"{counted(len(found.hits), 'paragraph')} of {counted(found.books, 'book')} "
            f"({counted(found.paragraphs, 'paragraph')}"
            f"{skipped}) for: {one_line(found.query)}",
            style="dim",
        )
    )
    matched = _matcher(found.query) if out.is_terminal else None
    # a terminal scans hits cut short; a reader in a pipe gets whole paragraphs (a hit cut
    # before its matched clause was no use to an assistant)
    most = SEARCH_TEXT_CHARS if out.is_terminal else 1_000_000
    items = []
    for hit in found.hits:
        wide = len(hit.before) + len(hit.after)
        head = Text()
        named = f"{shlex.quote(printable(book_path(root, hit.book)))} {hit.label}"
        head.append(named, style="bold cyan")
        head.append(
            (f"  p. {hit.page}" if hit.page is not None else "")
            + f"  score {hit.score:.2f}"
            + printable(about_line(hit.about)),
            style="dim",
        )
        if max_chars and not out.is_terminal:  # the context that fits beside its head, its text and a note
            hit = _nearest_context(hit, max_chars - len(head.plain) - len(hit.text) - 100)
        lines = [Text(), head, *(_search_text(label, text, most // 2, matched, "dim") for label, text in hit.before)]
        lines.append(_search_text(hit.label if hit.before or hit.after else "", hit.text, most, matched))
        lines += [_search_text(label, text, most // 2, matched, "dim") for label, text in hit.after]
        if len(hit.before) + len(hit.after) < wide:
            kept = f"{counted(len(hit.before), 'paragraph')} before it and {len(hit.after):,} after"
            lines.append(Text(f"(its context cut to {kept}, within {max_chars:,} characters: --max-chars)"))
        items.append((lines, named, []))
    _within(out, items, max_chars, "hits")
    for line in found.skipped[:5]:
        notice(f"not searched: {line}")


def _nearest_context(hit, room: int):
    """`hit` with as many paragraphs of its context on each side, nearest first, as fit in
    `room` characters (`-C 999999` into a pipe printed the book around its first hit)."""
    k = 0
    while k < max(len(hit.before), len(hit.after)):
        ring = [*([hit.before[-k - 1]] if k < len(hit.before) else []), *hit.after[k : k + 1]]
        cost = sum(len(text) + 8 for _, text in ring)  # 8: a paragraph's label and line
        if cost > room:
            break
        room, k = room - cost, k + 1
    return replace(hit, before=hit.before[len(hit.before) - min(k, len(hit.before)) :], after=hit.after[:k])


def _search_text(label: str, text: str, most: int, matched, style: str = "") -> Text:
    """A paragraph of a search, cut at `most` characters, its matched words highlighted
    (`matched`: None off a terminal), under its label where context surrounds it."""
    text = printable(text if len(text) <= most else text[: most - 1].rstrip() + "…")
    line = Text(text, style=style)
    if matched is not None:
        for m in TERM.finditer(text):
            if matched(m.group(0)):
                line.stylize("bold red", m.start(), m.end())
    if label:
        line = Text.assemble((f"[{label}] ", "cyan"), line)
    return line



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


def _reader_width(out: Console) -> int | None:
    """Where a reader's text wraps: at --width (0: never); else on a terminal at its width, and
    into a pipe or file never: a paragraph is one line that opens with its id, as grep reads it."""
    if width() == 0:
        return None
    return width() or (out.width if out.is_terminal else None)


def _print_lines(lines: list[str]) -> None:
    out = stdout(lines=True)
    for line in lines:
        out.print(line, highlight=False, markup=False, soft_wrap=True)


def find_text_view(
    result: FindResult, passages: Sequence[Passage], limit: int, max_chars: int | None
) -> None:
    """`find` for a reader in a pipe (an AI assistant, a script): see cwread.views.reading.find_lines."""
    _print_lines(reading.find_lines(result, passages, limit, max_chars, _reader_width(stdout(lines=True))))


def library_find_view(
    found: LibraryFound, passages: Sequence[Passage], max_chars: int | None, lined: bool = False
) -> None:
    """`find --library`: see cwread.views.reading.library_find_lines."""
    width = _reader_width(stdout(lines=True))
    _print_lines(reading.library_find_lines(found, passages, max_chars, width, lined=lined))


def cast_view(
    document: Document, cast: Cast, members: list[CastMember], detailed: bool, max_chars: int | None
) -> None:
    """`cast`: see cwread.views.reading.cast_lines."""
    _print_lines(
        reading.cast_lines(document, cast, members, detailed, max_chars, _reader_width(stdout(lines=True)))
    )


def map_view(result: FindResult, count: int, max_chars: int | None) -> None:
    """`find --map`: see cwread.views.reading.map_lines."""
    _print_lines(reading.map_lines(result, count, _reader_width(stdout(lines=True)), max_chars))


def find_view(
    result: FindResult, passages: Sequence[Passage], limit: int, max_chars: int | None = None
) -> None:
    """`find` on a terminal: the question, then each passage in a box headed by its rank, span and
    chapter, the paragraphs retrieval ranked high in bold; whole passages best first within
    TERMINAL_LINES lines (`max_chars`: within so many characters of text instead; 0, no bound),
    the first cut around its best paragraph where it alone is longer, then one line naming those
    left out."""
    out = stdout()
    doc = result.document
    head = Text.assemble(
        ("Question: ", "bold"),
        printable(result.question.text),
        "\n",
        *[(f"  ({k}) {printable(v)}\n") for k, v in result.question.options.items()],
        (
            f"{printable(doc.path)}: {counted(len(doc), 'paragraph')}; "
            f"{reading.fitting(reading.considered(result, limit))}.",
            "dim",
        ),
    )
    notes = [Text(note, style="dim") for note in reading.question_notes(result, absent=False)]
    most_lines = TERMINAL_LINES if max_chars is None else None
    bound = f"{most_lines} lines" if most_lines else f"{max_chars:,} characters"
    lines = sum(_height(out, t) for t in (head, *notes))
    chars = 0

    def left_out(rest: Sequence[Passage]) -> list[Text]:
        if not rest:
            return []
        named = reading.named_list([reading.passage_title(p) for p in rest])
        line = f"Left out past {bound} (--max-chars 0 prints them all): {len(rest)} passages: {named}."
        return [Text(line, style="dim")]

    def cut_note(passage: Passage, ids: Sequence[int]) -> list[Text]:
        dropped = [pid for pid in passage.ids if pid not in ids]
        return [
            Text(f"(more of this passage: show {reading.runs_label(dropped, doc.span_label)})", style="dim")
        ]

    def fits(box: Panel, ids: Sequence[int], after: list[Text]) -> bool:
        """Whether `box` (of paragraphs `ids`) and the lines `after` it keep within the bound."""
        height = _height(out, box) + sum(_height(out, t) for t in after)
        return (most_lines is None or lines + height <= most_lines) and (
            not max_chars or chars + sum(len(doc.paragraph(pid).text) for pid in ids) <= max_chars
        )

    out.print(head)
    for note in notes:
        out.print(note)
    stop = len(passages)  # the first passage that does not fit
    for index, passage in enumerate(passages):
        box = _passage_box(out, passage, passage.ids)
        if not fits(box, passage.ids, left_out(passages[index + 1 :])):
            stop = index
            break
        out.print(box)
        lines += _height(out, box)
        chars += sum(len(doc.paragraph(pid).text) for pid in passage.ids)
    after = left_out(passages[stop:])
    if stop == 0 and passages:  # the first is printed whatever its length: around its best paragraph
        first, ids, rest = passages[0], passages[0].ids, left_out(passages[1:])

        def cut_fits(low: int, high: int) -> bool:
            part = ids[low : high + 1]
            return fits(_passage_box(out, first, part), part, cut_note(first, part) + rest)

        low, high = reading.grown(len(ids), ids.index(first.best), cut_fits)
        out.print(_passage_box(out, first, ids[low : high + 1]))
        after = cut_note(first, ids[low : high + 1]) + rest
    for line in after:
        out.print(line)


def _height(out: Console, renderable) -> int:
    """The lines `renderable` takes on `out`."""
    return len(out.render_lines(renderable, out.options, pad=False))


def _passage_box(out: Console, passage: Passage, ids: Sequence[int]) -> Panel:
    """A passage's paragraphs `ids` in a box headed by its rank, span and chapter."""
    doc = passage.document
    body = Text()
    for pid in ids:
        body.append(paragraph_tag(doc, pid), style="bold cyan")
        body.append(printable(doc.paragraph(pid).text), style="bold" if pid in passage.anchors else "")
        if pid != ids[-1]:
            body.append("\n\n")
    shown = replace(passage, ids=tuple(ids)) if tuple(ids) != passage.ids else passage
    # a Text, not markup: "[ch03:1-5]" would be read as a style tag and vanish
    return panel(
        out,
        body,
        title=Text(reading.passage_title(shown)),
        title_align="left",
        border_style="cyan" if passage.origin == "anchor" else "dim",
    )


def contents_view(chapters: list[ContentsEntry], max_chars: int | None = None) -> None:
    """A book's contents, a line an entry: its paragraphs as `show` takes them, then its heading."""
    items = []
    for chapter in chapters:
        line = Text()
        line.append(chapter.span, style="bold cyan")
        if chapter.pages:
            first, last = chapter.pages
            line.append(f"  p. {first}" + (f"-{last}" if last != first else ""), style="dim")
        line.append(f"  {printable(chapter.heading)}")
        if chapter.wrapping:
            line.append(f"  ({chapter.wrapping})", style="dim")
        items.append(([line], chapter.span, []))
    _within(stdout(lines=True), items, max_chars, "chapters")


def index_view(document: Document, report: IndexReport) -> None:
    what = ", ".join(report.built) if report.built else "nothing (already cached)"
    stderr().print(
        f"{one_line(document.path)}: {counted(report.paragraphs, 'paragraph')}; built {what} in {report.seconds:.1f} s; "
        f"cache {one_line(report.cache_dir)}",
        markup=False,
    )


def library_index_view(built: LibraryIndexed) -> None:
    for line in built.unread:
        notice(f"left out: {line}")
    stderr().print(
        one_line(f"{built.where}: {counted(built.books, 'book')}, {counted(built.paragraphs, 'paragraph')}; {built.read:,} read now"),
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
    held = (
        "; ".join(f"{key} = {value}" for key, value in report.settings)
        or "none set (cwread config set KEY VALUE)"
    )
    out.print(Text(f"settings {one_line(report.settings_file)}: {one_line(held)}"))
    if report.advice:
        out.print()
        for line in report.advice:
            out.print(Text(printable(line)))


def config_view(path, shown: dict[str, str], takes: dict[str, str]) -> None:
    """The settings file's path, what it sets (as shown: a key never), and what it takes."""
    out = stdout(lines=True)
    out.print(f"{printable(str(path))}{'' if path.exists() else ' (none yet)'}", highlight=False, markup=False)
    for key, value in shown.items():
        out.print(printable(f"{key} = {value}"), highlight=False, markup=False)
    listed = ", ".join(f"{key} ({name})" for key, name in takes.items())
    out.print(f"takes: {listed}, and the stages' settings (cwread ask --help-all, --set)", highlight=False, markup=False)


def modelfiles_view(written) -> None:
    """The Modelfiles written, a path a line."""
    out = stdout(lines=True)
    for path in written:
        out.print(printable(str(path)), markup=False, highlight=False)
