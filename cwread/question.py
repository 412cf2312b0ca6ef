"""What is asked: a question, its options or a claim, read and checked once."""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from enum import StrEnum

from cwread.errors import InputError


class QuestionKind(StrEnum):
    """What is asked: options to choose from, a claim to judge, or free text."""

    MCQ = "mcq"
    CLAIM = "claim"
    OPEN = "open"


KINDS = tuple(QuestionKind)
MAX_QUESTION_CHARS = 4000  # a question with its options: about 1,000 tokens of an 8k context


@dataclass(frozen=True)
class Question:
    """What is asked: free text ("open"), options to choose from ("mcq"), or a claim to judge.

    Built and validated once by `cwread.api.make_question`; prompts, parser, pipeline and
    eval take it whole. `options` is empty unless the kind is "mcq".
    """

    text: str
    kind: QuestionKind
    options: dict[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", QuestionKind(self.kind))  # a kind given as its text is checked here

    @property
    def is_open(self) -> bool:
        """Free text: answered in words, not with a label."""
        return self.kind == QuestionKind.OPEN

    @property
    def labels(self) -> list[str] | None:
        return list(self.options) if self.options else None


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
        raise InputError("a multiple-choice question needs at least two options")
    return dict(sorted(options.items()))


_UNDECODED = re.compile("[\ud800-\udfff]")


def make_question(
    text: str, options: list[str] | dict[str, str] | None = None, *, claim: bool = False
) -> Question:
    """A validated Question: "claim" to verify, "mcq" with options ("A=text" strings or a
    dict), else "open". InputError for an empty text or bad options."""
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
    if claim:
        return Question(text, QuestionKind.CLAIM)
    return Question(text, QuestionKind.MCQ, parsed) if parsed else Question(text, QuestionKind.OPEN)
