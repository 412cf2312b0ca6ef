"""Failures the user can act on. The CLI maps each type to an exit code in one place."""


class CwreadError(Exception):
    """Base class: the message is one line that names the cause and the way out.

    `quiet`: the command already told the user (or was asked to print nothing), so only the
    exit code is left to give. `kind` names the failure in JSON errors (CLI and MCP alike)."""

    kind = "usage"

    def __init__(self, message: str = "", *, quiet: bool = False) -> None:
        super().__init__(message)
        self.quiet = quiet


class InputError(CwreadError):
    """The user's input cannot be used: a missing or unreadable file, a bad option."""

    kind = "input"


class ModelError(CwreadError):
    """A model or backend is missing, broken or unreachable."""

    kind = "model"


class AnswerError(CwreadError):
    """A model answered, but no usable answer could be parsed from it."""

    kind = "answer"


class Interrupted(CwreadError):
    """The user stopped a run (Ctrl-C); the message says what was kept."""

    kind = "interrupted"


class CacheError(CwreadError):
    """The cache cannot be written (e.g. the disk is full); the message names the folder."""

    kind = "cache"


class OutputError(CwreadError):
    """Standard output cannot be written (e.g. the disk is full)."""

    kind = "output"
