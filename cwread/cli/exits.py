"""Exit codes: each failure's, and an answer's, in one place (ask, verify and chat alike)."""

from __future__ import annotations

from cwread.errors import (
    AnswerError,
    CacheError,
    CwreadError,
    InputError,
    Interrupted,
    ModelError,
    OutputError,
)
from cwread.records import Status, Trace

EXIT_CLAIM_FALSE = 1
EXIT_NO_ANSWER = 4
EXIT_CODES: dict[type[CwreadError], int] = {
    InputError: 2,
    ModelError: 3,
    CacheError: 3,
    OutputError: 3,
    AnswerError: EXIT_NO_ANSWER,
    Interrupted: 130,
}
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_INTERNAL = 70  # sysexits' EX_SOFTWARE: a fault of cwread's own, never the user's


def error_exit(exc: CwreadError) -> int:
    """What a failure exits with: its class's code, or its nearest parent's (a usage error when
    none is mapped)."""
    return next((EXIT_CODES[kind] for kind in type(exc).__mro__ if kind in EXIT_CODES), EXIT_USAGE)


def answer_exit(trace: Trace) -> int:
    """What `ask` or `verify` exits with for this trace: 4 when cwread stands behind no
    answer, 1 for a claim judged FALSE, else 0."""
    if trace.status != Status.ANSWERED:
        return EXIT_NO_ANSWER
    false = trace.question.form.false_label
    return EXIT_CLAIM_FALSE if false is not None and trace.answer == false else 0
