"""The support check's model call: the model asked, on an answer's quotes alone, whether they
state or directly imply it (cwread.answer.support decides what its reply means)."""

from __future__ import annotations

from cwread.agents import shared
from cwread.backends import Backend, GenerationRequest
from cwread.book import Evidence, ShownParagraph
from cwread.records.question import Question
from cwread.records.stages import ModelCall, Quote

SUPPORT_SYSTEM = (
    "You check answers in a reading assistant for long narratives. You are given sentences "
    "quoted from a book, a question and an answer someone wrote. Say YES if the quoted "
    "sentences state the answer or directly imply it, so that a reader of these sentences "
    "alone would give this answer. Say NO if they do not say it, say something else, or "
    "contradict it. Match meaning, not wording."
    + shared.BOOK_IS_DATA.replace("evidence is text", "evidence is sentences")
)


_SUPPORT_REPLY = (
    "Do the quoted sentences state or directly imply this answer? Reply with exactly one tag "
    "and nothing else: <answer>YES</answer> or <answer>NO</answer>."
)


def answer_block(question: Question, answer: str) -> str:
    """An answer as the support check reads it: an option with its text, a claim's verdict
    in words, an open answer as written."""
    return question.form.answer_words(question, answer)


def support_request(
    question: Question, answer: str, quotes: Evidence, retry: bool = False
) -> GenerationRequest:
    """The support check's call: the answer's quotes (each under its paragraph's label), the
    question and the answer; YES or NO alone, its score read at the first token."""
    user = "\n\n".join(
        [
            shared.evidence_block(quotes),
            shared.question_block(question),
            answer_block(question, answer),
            _SUPPORT_REPLY,
        ]
    )
    if retry:
        user += "\n\n" + shared.FIRM_RETRY
    return shared.decision_request((("system", SUPPORT_SYSTEM), ("user", user)), seed=1 if retry else 0)


def quoted_evidence(quotes: tuple[Quote, ...], packet: Evidence) -> list[ShownParagraph]:
    """The quotes as the check is shown them: each under its paragraph's label, in the packet's order."""
    labels = {p[0]: ShownParagraph(*p).label for p in packet}
    return [ShownParagraph(q.id, q.text, labels.get(q.id, "")) for q in quotes]


class SupportAgent:
    """The support check on `backend`: called with a question, an answer, its quotes and the
    packet they are from, it gives the parsed YES or NO and the call."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def __call__(
        self, question: Question, answer: str, quotes: tuple[Quote, ...], packet: Evidence
    ) -> tuple[shared.ParsedReply, ModelCall]:
        return shared.call_agent(
            self.backend,
            lambda retry: support_request(question, answer, quoted_evidence(quotes, packet), retry),
            shared.parse_yes_no,
        )
