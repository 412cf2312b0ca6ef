"""The answer's view on a terminal or into a pipe: the answer or verdict with its quotes, or why none
is given and where the book answers it, the evidence packed, the notes on the run."""

from __future__ import annotations

import re

from rich.console import Console
from rich.text import Text

from cwread.agents.judge_finder import JudgeFinder
from cwread.backends.select import READER_ROUTES
from cwread.records.plan import AnswerMode, SupportMethod
from cwread.records.stages import Shown, Status, SupportCheck
from cwread.records.trace import Trace
from cwread.retrieval.passages import quoted_passages
from cwread.views import console, reading, wording
from cwread.views.console import (
    NOTES_SAID,
    first_time_here,
    panel,
    stderr,
    stdout,
    width,
    without_measurements,
)
from cwread.views.render import paragraph_tag
from cwread.views.terminal import one_line, printable

# stages skipped by what the model or the book is, the same for every question: their notes are
# said once on a machine, as notice_once says which backend runs (the trace always says them)
_SAID_ONCE_HERE = ("finder", "spans")


def _support_line(check: SupportCheck) -> str:
    """How the support check decided, in words ("checked by the model against its quotes: the
    quotes support it (score +2.10, threshold +0.00)")."""
    how = {
        "model": "checked by the model against its quotes",
        "confidence": "checked against its quotes and the model's confidence",
        "quotes": "its quotes checked in the book and the packet",
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
            if outcome.description is not None:
                said = outcome.description
                head.append(
                    f"\nHow the text describes {printable(said.name)}, beside the name ("
                    + (
                        "the only description the passages read give"
                        if said.descriptions == 1
                        else f"{said.times} of the {said.descriptions} descriptions the passages read give"
                    )
                    + "); no model asked.",
                    style="dim",
                )
            else:
                head.append(f"\n{_how_found(trace)}", style="dim")
        elif outcome.check is not None and outcome.supported:
            head.append(f"\nThe model's {question.form.chosen}; {_without_scores(_support_line(outcome.check))}.", style="dim")
    elif status == Status.NO_VERDICT:
        head.append("no verdict", style="bold yellow")
        read = (
            ": read the evidence below"
            if outcome.quotes
            else "; no passage read shares a word with what was asked"
        )
        head.append(f"\n{trace.skipped.get('interpreter', '')}{read}.", style="dim")
        console.reader_routes(READER_ROUTES)  # on stderr, once a run
    elif status == Status.PASSAGES:
        head.append("none given", style="bold yellow")
        judged = outcome.judgement is not None and outcome.judgement.scores
        order = "in the order they were judged to hold the answer" if judged else "best-fitting first"
        where = (
            f"below is where the book answers it, {order}"
            if outcome.quotes
            else "no passage read fits the question"
        )
        if outcome.model_answer is None:  # no model read them: how to get one that does
            head.append(f"\n{wording.UNREAD[0].upper()}{wording.UNREAD[1:]}: {where}.", style="dim")
            console.reader_routes(READER_ROUTES)  # on stderr, once a run
        else:  # the model read them, and its answer is said below with why it is not shown
            head.append(f"\n{where[0].upper()}{where[1:]}.", style="dim")
    elif status == Status.NOT_SAID:
        head.append(wording.NOT_SAID, style="bold yellow")
        why = wording.not_said_why(outcome)
        declined = f" ({printable(repr(outcome.declined))})" if outcome.declined else ""
        closest = ": the closest passages are below" if outcome.quotes else ""
        head.append(f"\n{why[0].upper()}{why[1:]}{declined}{closest}.", style="dim")
    elif status == Status.NOT_DETERMINED:
        head.append(wording.NOT_DETERMINED, style="bold yellow")
        if outcome.mode == AnswerMode.EXTRACTIVE:
            why = wording.no_sentence_why(outcome, doc.label)
            head.append(
                f"\n{why[0].upper()}{why[1:]}{' to answer it' if why == wording.NO_SENTENCE else ''}.", style="dim"
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
            panel(
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
        heading = (
            "Evidence"
            if outcome.supported
            else "The closest passages (the text does not say)"
            if status == Status.NOT_SAID
            else "Best evidence (not an answer: read it)"
        )
        out.print(Text(heading, style="bold"))
        by_paragraph: dict[int, list[tuple[int, int]]] = {}
        for q in outcome.quotes:
            by_paragraph.setdefault(q.id, []).append((q.start, q.end))
        packed = set(trace.packet.ids)
        for pid, spans in by_paragraph.items():
            tag = paragraph_tag(doc, pid)
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
    for stage, why in wording.skipped(trace).items():
        if stage != "interpreter" or status != Status.NO_VERDICT:  # that one is said above
            label = {
                "reading": "Not read",
                "judging": "Not judged",
                "answer_judge": "No paragraph judged for the answer",
            }.get(stage, f"{stage.capitalize()} skipped")
            # the measurement a skip rests on is the trace's and doctor's to give, not every answer's
            line = f"cwread: {label}: {printable(without_measurements(why))}"
            if line in NOTES_SAID:  # a chat's next answer skips the same stage for the same reason
                continue
            NOTES_SAID.add(line)
            if stage not in _SAID_ONCE_HERE or first_time_here(line):
                notes.print(Text(line, style="dim"))
    if console.statistics_wanted():  # the run's statistics: the trace's, and --debug's on stderr
        notes.print(Text(printable(_statistics_line(trace)), style="dim"))


def _statistics_line(trace: Trace) -> str:
    """What the run did, in numbers: segments kept, the packet, calls, tokens, seconds."""
    doc = trace.document
    kept = sum(v.kept for v in trace.verdicts)
    finder = (
        "no segment judged (every one read kept)"
        if "finder" in trace.skipped
        else f"{'Judge' if trace.plan and trace.plan.finder == JudgeFinder.reply else 'Finder'} kept {kept} of {len(trace.verdicts)} segments"
    )
    tokens = trace.tokens()
    forged = sum(len(c.reply.forged) for c in trace.agent_calls)
    ids = ", ".join(map(doc.label, trace.packet.ids[:12])) + ("…" if len(trace.packet.items) > 12 else "")
    return (
        f"cwread: {finder}; packet {len(trace.packet.items)} paragraphs ({ids})"
        f"{' (fallback: nothing kept)' if trace.packet.fallback else ''}"
        f"{'' if trace.model_calls else '; no model call'}; {'self-checked' if trace.self_check else 'no self-check'}; "
        f"{f'{forged} quote(s) not in the text dropped; ' if forged else ''}"
        f"{tokens['prompt']} prompt tokens; {trace.timings.get('total', 0):.1f} s"
    )


_SCORES = re.compile(r" ?\([^()]*(?:score|threshold|needed)[^()]*\)")


def _without_scores(why: str) -> str:
    """`why` without its parentheses of scores and thresholds: the trace's and --debug's."""
    return _SCORES.sub("", why)


def _how_found(trace: Trace) -> str:
    """How words quoted from the text were found, in one plain sentence (scores and thresholds
    are the trace's and --debug's)."""
    outcome, doc = trace.outcome, trace.document
    judged, read = outcome.judgement, outcome.reading
    where = f"[{doc.label(read.paragraph if read is not None else outcome.quotes[0].id)}]" if (
        read is not None or outcome.quotes
    ) else "the passages"
    chose = (
        f"Of the passages that fit the question best, {where} was judged to answer it"
        if judged is not None and judged.best is not None
        else f"{where} fits the question best of the passages read"
    )
    if read is not None and read.answered:
        return f"{chose}, and a small reading model pointed at these words in it (the book's, not a model's)."
    return f"{chose}; its sentence is given, in the book's words."


def _print_wrapped(out: Console, text: Text) -> None:
    """`text` on a terminal as Rich wraps it; into a pipe as plain lines, a line a paragraph (so
    grep finds a sentence), wrapped only at --width."""
    if out.is_terminal:
        out.print(text)
        return
    plain = stdout(lines=True)
    for line in text.plain.splitlines() or [""]:
        for part in reading.wrapped(line, width() or None):
            plain.print(part, highlight=False, markup=False, soft_wrap=True)


def _passages_view(out: Console, trace: Trace) -> None:
    """Where the book answers a question no model read for an answer: each passage headed by
    its rank, id and chapter (and page), then its text, "…" where it is a part of its paragraph."""
    doc = trace.document
    for passage in quoted_passages(doc, trace.outcome.quotes):
        quote, chapter, page = passage.excerpt, passage.chapter, doc.page(passage.best)
        head = Text()
        head.append(f"{passage.rank_label} [{passage.span}]", style="bold cyan")
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
