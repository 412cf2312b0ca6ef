"""How the faces say why cwread stands behind no answer, and what they note of a book opened.
The core records the reason as structure (the trace's status, the outcome's check, judgement
and reading); the terminal, the JSON, chat and MCP word it here, each naming its own way to ask
for a verdict anyway."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a run's records: their modules load with the run, not with `show`
    from cwread.book import Document
    from cwread.records.stages import Outcome
    from cwread.records.trace import Trace

NOT_DETERMINED = "not determined from the text"
NOT_SAID = "the text does not say"
NO_SENTENCE = "no sentence of the packet shares enough of the question"
# a novel's open question on a model too small to read: where the book answers it, not a guess
UNREAD = "no model here reads a novel's passages for an answer"
PASSAGES_SHOWN = "the passages that fit the question best are shown: read them"


@dataclass(frozen=True)
class Face:
    """How a face tells its reader to ask differently: for a verdict anyway (`anyway`), and for
    a stage cwread chose to skip (`runs`: each stage's words, added to why it was skipped)."""

    anyway: str
    runs: Mapping[str, str] = field(default_factory=dict)


# a flag on the command line, a chat started with it, a tool's argument (the tools set no stage)
CLI = Face(
    "pass --judge-anyway", {"finder": " (--finder on runs it)", "self-check": "; --self-check on runs it"}
)
CHAT = Face("start the chat with --judge-anyway", CLI.runs)
MCP = Face("call again with judge_anyway true")


def skipped(trace: Trace, face: Face = CLI) -> dict[str, str]:
    """The stages a run skipped, each with why, and for one cwread chose to skip, how `face`'s
    reader has it run."""
    chosen = trace.plan.skipped_by_choice if trace.plan is not None else ()
    return {stage: why + (face.runs.get(stage, "") if stage in chosen else "") for stage, why in trace.skipped.items()}


def no_verdict(yes_or_no: bool, face: Face = CLI) -> str:
    """Why options or a claim get no verdict, and the two ways to one (`face`'s)."""
    from cwread.records.plan import UNJUDGED, YES_OR_NO_UNJUDGED

    serve = f"the best evidence is shown. Serve a model that reads (cwread doctor says how), or {face.anyway}"
    if yes_or_no:  # a yes-or-no question is a claim put as a question: no sentence of the book is its answer
        return f"{YES_OR_NO_UNJUDGED}; {serve} for the sentence that fits best"
    return f"{UNJUDGED}; {serve}"


def no_sentence_why(outcome: Outcome, label: Callable[[int], str] = str) -> str:
    """Why an extractive answer was withheld: no sentence shared enough of the question, the
    answer reader found none, or the Finder judged none of the best-fitting paragraphs to hold
    the answer (each paragraph named by `label`: Document.label, "ch03:12" in a book of several
    files)."""
    judged, read = outcome.judgement, outcome.reading
    if read is not None and not read.sure:
        return (
            f"the answer reader found no answer in [{label(read.paragraph)}] "
            f"({read.score:+.2f}, under {read.threshold:+.2f})"
        )
    if judged is None or judged.best is None:
        return NO_SENTENCE
    if judged.chosen is not None:  # the paragraph was judged to hold it, yet no sentence of it fits
        return f"no sentence of the paragraph the Finder chose ([{label(judged.chosen)}], {judged.best[1]:+.2f}) fits the question"
    return (
        f"the Finder found none of the {len(judged.scores)} best-fitting paragraphs to hold it "
        f"(best {judged.best[1]:+.2f}, under {judged.threshold:+.2f})"
    )


def not_said_why(outcome: Outcome) -> str:
    """Why the text is taken not to say: what the question asks for, and the best-fitting words,
    which hold none."""
    asked = outcome.asked_for.words if outcome.asked_for is not None else "a kind of answer"
    return f"the question asks for {asked}, and the words of the text that fit it best hold none"


def withheld_why(outcome: Outcome) -> str:
    """Why the model's open answer is not shown: its quotes, as checked."""
    check = f" ({outcome.check.why})" if outcome.check else ""
    return f"the quotes do not support the model's answer {outcome.model_answer!r}{check}"


def failure(trace: Trace, face: Face = CLI) -> str | None:
    """Why cwread stands behind no answer, in one line (None: it stands behind one)."""
    from cwread.records.plan import AnswerMode
    from cwread.records.stages import Status

    outcome = trace.outcome
    status = trace.status
    if status == Status.NO_VERDICT:
        # an open question with no verdict is a yes-or-no one (cwread.records.question.asks_yes_or_no)
        return f"no verdict: {no_verdict(trace.question.is_open, face)}"
    if status == Status.NOT_DETERMINED:
        if outcome.mode == AnswerMode.EXTRACTIVE:
            why = no_sentence_why(outcome, trace.document.label)
        else:
            why = withheld_why(outcome)
        return f"{NOT_DETERMINED}: {why}{'; the best evidence is shown' if outcome.quotes else ''}"
    if status == Status.NOT_SAID:
        return f"{NOT_SAID}: {not_said_why(outcome)}{'; the closest passages are shown' if outcome.quotes else ''}"
    if status == Status.PASSAGES:
        why = UNREAD if outcome.model_answer is None else withheld_why(outcome)
        return f"{why}; {PASSAGES_SHOWN}" if outcome.quotes else f"{why}, and no passage read fits the question"
    if status == Status.UNPARSEABLE:
        return f"no parseable answer after a retry ({trace.final.problem if trace.final else 'no reply'})"
    return None


SKIPPED_NAMED = 5  # files left out of a folder named on the terminal; --json lists them all


def opened_notes(document: Document) -> list[str]:
    """What to say of a book as it is opened: invalid bytes replaced while decoding it, and the
    files of a folder left out."""
    notes = []
    if document.replaced:
        what = f"{document.path} is UTF-8" if not document.sources else f"the files of {document.path} are UTF-8"
        notes.append(
            f"warning: {what} with {document.replaced} invalid byte sequence(s), "
            "shown as \ufffd (--encoding reads it as another encoding)"
        )
    if document.skipped:
        shown = "; ".join(document.skipped[:SKIPPED_NAMED])
        left = len(document.skipped) - SKIPPED_NAMED
        notes.append(f"left out of {document.path}: {shown}" + (f"; and {left} more (--json lists them)" if left > 0 else ""))
    return notes


def shelving(book: str, reading) -> str:
    """How a folder was read (a shelf of books or one book), with the option that reads it the
    other way (cwread.library.catalog.shelving)."""
    if reading.shelf:
        return f"{book}: a shelf of {reading.books} books ({reading.why}); --one-book reads it as one book"
    return f"{book}: one book ({reading.why}); --library reads its files as separate books"


def no_cast(query: str) -> str:
    """Why a cast lists no one: no member matches `query`, or (none given) no name recurs."""
    if query.strip():
        return f"no one in the book's cast is named or described by {query!r}"
    return "the book names no one twice"
