"""Failures the user can act on. The CLI maps each type to an exit code in one place."""


class CwreadError(Exception):
    """Base class: the message is one line that names the cause and the way out."""


class InputError(CwreadError):
    """The user's input cannot be used: a missing or unreadable file, a bad option."""


class ModelError(CwreadError):
    """A model or backend is missing, broken or unreachable."""


class AnswerError(CwreadError):
    """A model answered, but no usable answer could be parsed from it."""
