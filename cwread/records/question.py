"""What is asked: a question, its options or a claim, read and checked once; and the kinds of
question, each an `AnswerForm` in one registry (`FORMS`): how it is put to a model, which
answers it takes and how a reply's answer is read, what a label says for the support check.
A new kind is one such form and one `register` line."""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from cwread.errors import InputError


class QuestionKind(StrEnum):
    """The kinds cwread comes with: options to choose from, a claim to judge, or free text.
    A registered kind's name is a plain string beside them."""

    MCQ = "mcq"
    CLAIM = "claim"
    OPEN = "open"


MAX_QUESTION_CHARS = 4000  # a question with its options: about 1,000 tokens of an 8k context


@dataclass(frozen=True)
class Hints:
    """What a reader adds to a question for retrieval: `also`, words to look for beside the
    question's (the book's own for what it says otherwise, "motor garage"); `near`, the id of a
    paragraph found already, whose neighbourhood ranks first; `upto`, the last paragraph the
    reader has read: nothing after it is found, read or quoted (no spoilers)."""

    also: str = ""
    near: int | None = None
    upto: int | None = None


NO_HINTS = Hints()


@dataclass(frozen=True)
class Question:
    """What is asked: free text ("open"), options to choose from ("mcq"), a claim to judge, or
    a registered kind's question.

    Built and validated once by `cwread.api.make_question`; prompts, parser, pipeline and
    eval take it whole. `options` is empty unless the kind is "mcq".
    """

    text: str
    kind: str  # a QuestionKind, or a registered kind's name
    options: dict[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", form_of(self.kind).kind)  # a kind given as its text is checked here

    @property
    def form(self) -> AnswerForm:
        """How this kind of question is asked and answered."""
        return FORMS[self.kind]

    @property
    def is_open(self) -> bool:
        """Free text: answered in words, not with a label."""
        return self.form.labels(self) is None

    @property
    def labels(self) -> list[str] | None:
        return list(self.options) if self.options else None


@dataclass(frozen=True)
class AnswerForm:
    """A kind of question. `block`: the question as a prompt shows it; `hint`: what the
    Interpreter writes in its <answer> tag; `labels`: the answers it takes, as written (None:
    free words); `spellings`: every spelling of a label a reply may use (a grammar allows
    them, the parser reads them back); `normalise`: a reply's answer → its label (None:
    unusable); `answer_words`: an answer as the support check reads it; `about`: what a label
    says, whose words its quotes must carry; `self_checked`: τ(q) always names it; `verdict`:
    the answer is a verdict (TRUE or FALSE), and `false_label` the one a script exits 1 on;
    `title`: what a view heads such a question with (the kind itself where none is given);
    `chosen`: what a view calls the model's answer to it ("The model's verdict")."""

    kind: str
    block: Callable[[Question], str]
    hint: str
    labels: Callable[[Question], list[str] | None]
    spellings: Callable[[list[str]], list[str]] = lambda labels: labels
    normalise: Callable[[str, list[str]], str | None] = lambda raw, labels: raw.strip(" .") or None
    answer_words: Callable[[Question, str], str] = lambda question, answer: f"Answer: {answer}"
    about: Callable[[Question, str], str] = lambda question, label: question.text
    self_checked: bool = False
    verdict: bool = False
    false_label: str | None = None
    title: str | None = None
    chosen: str = "words"


FORMS: dict[str, AnswerForm] = {}


def register(form: AnswerForm) -> None:
    FORMS[form.kind] = form


def form_of(kind: str) -> AnswerForm:
    """The registered form of `kind` (InputError for a kind no form is registered for)."""
    if kind not in FORMS:
        raise InputError(f"unknown question kind {kind!r}; cwread knows: {', '.join(FORMS)}")
    return FORMS[kind]


def normalise_true_false(raw: str, labels: list[str] | None = None) -> str | None:
    m = re.match(r"\W*(true|false|yes|no)\b", raw, re.I)
    if not m:
        return None
    return {"true": "TRUE", "yes": "TRUE", "false": "FALSE", "no": "FALSE"}[m.group(1).lower()]


def normalise_letter(raw: str, labels: list[str]) -> str | None:
    m = re.match(r"\W*(?:option\s+)?\(?([A-Za-z])\)?(?:[\s.):,-]|$)", raw, re.I)
    if m and m.group(1).upper() in labels:
        return m.group(1).upper()
    return None


def _question_block(question: Question) -> str:
    lines = [f"Question: {question.text}"]
    if question.options:
        lines += ["Options:", *(f"({label}) {text}" for label, text in question.options.items())]
    return "\n".join(lines)


# Answers may be written the way small models prefer ("Yes", "(B)", "true"); the parser
# normalises them. Forcing one casing pushed SmolLM2 onto tokens it rated very unlikely.
register(
    AnswerForm(
        QuestionKind.MCQ,
        block=_question_block,
        hint="the letter of the best-supported option",
        labels=lambda question: list(question.options or "ABCD"),
        spellings=lambda labels: [s for label in labels for s in (label, f"({label})", label.lower())],
        normalise=normalise_letter,
        answer_words=lambda question, answer: (
            f"Answer: ({answer}) {question.options.get(answer, '')}".rstrip()
        ),
        about=lambda question, label: question.options.get(label, ""),
        title="multiple choice",
        chosen="choice",
    )
)
register(
    AnswerForm(
        QuestionKind.CLAIM,
        block=lambda question: f"Claim to verify (TRUE or FALSE): {question.text}",
        hint="TRUE or FALSE",
        labels=lambda question: ["TRUE", "FALSE"],
        spellings=lambda labels: ["TRUE", "FALSE", "True", "False", "true", "false"],
        normalise=normalise_true_false,
        answer_words=lambda question, answer: (
            f"Answer: {answer}: " + ("the claim holds" if answer == "TRUE" else "the claim does not hold")
        ),
        self_checked=True,
        verdict=True,
        false_label="FALSE",
        title="claim",
        chosen="verdict",
    )
)
register(
    AnswerForm(
        QuestionKind.OPEN,
        block=_question_block,
        hint="a short answer in a few words or one sentence",
        labels=lambda question: None,
        title="question",
    )
)


def parse_options(raw: list[str] | None) -> dict[str, str]:
    """Answer options from "A=text" strings (or bare texts, lettered A, B, C... in order)."""
    options: dict[str, str] = {}
    lettered = [re.fullmatch(r"\s*\(?([A-Za-z])\)?\s*[=:)]\s*(.*)", item, flags=re.S) for item in raw or []]
    for item in raw or []:
        if re.match(r"\s*[=:]", item):
            raise InputError(f'option needs LETTER=TEXT: {item!r} has no letter (e.g. -o "A=text")')
    if any(lettered) and not all(lettered):
        bare = next(item for item, m in zip(raw or [], lettered, strict=True) if not m)
        raise InputError(
            f'option needs LETTER=TEXT: {bare!r} has no letter while other options do (e.g. -o "A=text")'
        )
    for item, m in zip(raw or [], lettered, strict=True):
        if m:
            label, text = m.group(1).upper(), m.group(2).strip()
        else:
            label = next((c for c in string.ascii_uppercase if c not in options), None)
            text = item.strip()
            if label is None:
                raise InputError("too many options: at most 26")
        if not text:
            raise InputError(f'option {label} is empty: write it as -o "{label}=text"')
        if label in options:
            raise InputError(f"option {label} is given twice")
        options[label] = text
    if len(options) == 1:
        (label, text), given = next(iter(options.items())), (raw or [""])[0]
        raise InputError(
            f'a multiple-choice question needs at least two options; one was given, {given!r} (as option {label}: '
            f'{text!r}): give each as "A=text", "B=text"'
        )
    return dict(sorted(options.items()))


_UNDECODED = re.compile("[\ud800-\udfff]")


def make_question(
    text: str,
    options: list[str] | dict[str, str] | None = None,
    *,
    claim: bool = False,
    kind: str | None = None,
) -> Question:
    """A validated Question: "claim" to verify, "mcq" with options ("A=text" strings or a
    dict), a registered `kind`'s, else "open". InputError for an empty text or bad options."""
    text = (text or "").strip()
    what = "claim" if claim else "question"
    if not text:
        raise InputError(f"the {what} is empty")
    parsed = {} if claim else dict(options) if isinstance(options, dict) else parse_options(options)
    for given in (text, *parsed.values()):
        if _UNDECODED.search(given):  # bytes that were not text, kept as lone surrogates
            raise InputError(f"the {what} holds bytes that are not text in its encoding; give it as UTF-8")
    size = len(text) + sum(len(v) for v in parsed.values())
    if size > MAX_QUESTION_CHARS:  # it goes to the model with every segment: refuse before any call
        raise InputError(
            f"the {what}{' and its options run' if parsed else ' runs'} to {size:,} characters; cwread takes "
            f"up to {MAX_QUESTION_CHARS:,} (it is sent with every segment the Finder reads)"
        )
    if claim or kind == QuestionKind.CLAIM:
        if parsed:
            raise InputError("a claim takes no options")
        return Question(text, QuestionKind.CLAIM)
    if kind == QuestionKind.MCQ and not parsed:
        raise InputError('a multiple-choice question needs its options: -o "A=text" -o "B=text"')
    if kind is not None and kind != QuestionKind.MCQ:
        if parsed:
            raise InputError(f"a question of kind {kind!r} takes no options")
        return Question(text, kind)
    return Question(text, QuestionKind.MCQ, parsed) if parsed else Question(text, QuestionKind.OPEN)


_LEADS_ON = re.compile(r"^\W*(and|but|so|then|also|what about|how about|what else)\b", re.I)
_REFERS_BACK = re.compile(
    r"\b(he|she|it|they|him|her|them|his|hers|its|their|theirs|this|that|these|those|there|then)\b", re.I
)
_NAME = re.compile(r"(?<!^)(?<![.?!]\s)\b[A-Z][a-z]+")


def leans_on_previous(question: Question) -> bool:
    """Whether a question reads as a follow-up: it opens with "and", "but", "what about"...,
    or it refers back (she, it, that...) without naming anyone (no capitalised word after
    its first), as in "why did she hide it?"."""
    text = question.text.strip()
    if _LEADS_ON.search(text):
        return True
    return bool(_REFERS_BACK.search(text)) and not _NAME.search(text)


# a question answered yes or no ("Did Stapleton die?"); not one that offers a choice ("Was it
# the butler or the cook?"), which a sentence of the book can answer
_YES_OR_NO = re.compile(
    r"^\s*(?:did|does|do|is|was|were|are|has|have|had|can|could|will|would|should|shall|may|might|must)\s+\S",
    re.IGNORECASE,
)


def asks_yes_or_no(question: Question) -> bool:
    """Whether an open question is answered yes or no: a claim put as a question."""
    text = question.text
    return question.is_open and bool(_YES_OR_NO.match(text)) and not re.search(r"\bor\b", text, re.IGNORECASE)
