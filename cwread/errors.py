"""Failures the user can act on, and the exit code of each (the one exit table, which the CLI,
chat and MCP read alike: `error_exit`)."""

import re

EXIT_CLAIM_FALSE = 1  # a claim judged FALSE
EXIT_USAGE = 2
EXIT_NO_ANSWER = 4  # cwread stands behind no answer
EXIT_INTERRUPTED = 130
EXIT_INTERNAL = 70  # sysexits' EX_SOFTWARE: a fault of cwread's own, never the user's


class CwreadError(Exception):
    """Base class: the message is one line that names the cause and the way out.

    `quiet`: the command already told the user (or was asked to print nothing), so only the
    exit code is left to give. `kind` names the failure in JSON errors (CLI and MCP alike)."""

    kind = "usage"
    exit_code = EXIT_USAGE

    def __init__(self, message: str = "", *, quiet: bool = False) -> None:
        super().__init__(message)
        self.quiet = quiet


class InputError(CwreadError):
    """The user's input cannot be used: a missing or unreadable file, a bad option."""

    kind = "input"
    exit_code = EXIT_USAGE


class ModelError(CwreadError):
    """A model or backend is missing, broken or unreachable."""

    kind = "model"
    exit_code = 3


class AnswerError(CwreadError):
    """A model answered, but no usable answer could be parsed from it."""

    kind = "answer"
    exit_code = EXIT_NO_ANSWER


class Interrupted(CwreadError):
    """The user stopped a run (Ctrl-C); the message says what was kept."""

    kind = "interrupted"
    exit_code = EXIT_INTERRUPTED


class CacheError(CwreadError):
    """The cache cannot be written (e.g. the disk is full); the message names the folder."""

    kind = "cache"
    exit_code = 3


class OutputError(CwreadError):
    """Standard output cannot be written (e.g. the disk is full), or a file the user asked for
    (`of_stdout` False: a trace, a report; stdout still takes a JSON error)."""

    kind = "output"
    exit_code = 3

    def __init__(self, message: str = "", *, quiet: bool = False, of_stdout: bool = True) -> None:
        super().__init__(message, quiet=quiet)
        self.of_stdout = of_stdout


def error_exit(exc: CwreadError) -> int:
    """What a failure exits with: its class's code (a subclass keeps its parent's)."""
    return exc.exit_code


_SECRETS: dict[str, str] = {}  # values no text cwread prints may hold (a server's key): what shows instead


def keep_secret(value: str | None) -> None:
    """Mark `value` (an API key) as never to be printed: every message and JSON document
    cwread writes shows *** in its place (cwread.views)."""
    if value and len(value) >= 4:
        _SECRETS[value] = "***"


def url_password(value: str) -> str | None:
    """The password a URL carries (scheme://user:PASSWORD@host, or user:PASSWORD@host as an
    Ollama host may be given), None where it holds none or is no URL. Read by hand, not by
    urlsplit: a password may hold "@" (the host follows the last), and a URL mistyped ("[::1:9")
    still hides its password."""
    text = value.strip()
    _, sep, rest = text.partition("://")
    rest = rest if sep else "" if any(c.isspace() for c in text) else text
    userinfo, at, _ = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0].rpartition("@")
    return (userinfo.partition(":")[2] or None) if at else None


# a URL as it stands in a message (scheme://...), to its next space or the next URL's scheme
_SCHEME = r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://"
_URL = re.compile(rf"{_SCHEME}(?:(?!{_SCHEME})\S)+")
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&\s]*", re.IGNORECASE)


def url_hidden(url: str) -> str:
    """`url` with its password (`url_password`: scheme://user:***@host, user:***@host) and a
    query's password (?password=***) shown as ***."""
    if password := url_password(url):
        url = url.replace(f":{password}@", ":***@", 1)
    return _QUERY_PASSWORD.sub(r"\1***", url) if "://" in url else url


def hide_url_passwords(text: str) -> str:
    """`text` with every scheme://URL in it `url_hidden` (a message may quote one: a server's
    address, a library's)."""
    return _URL.sub(lambda m: url_hidden(m.group(0)), text)


def keep_url_password(value: object) -> None:
    """Mark the password a URL carries (`url_password`) as never to be printed: a server's
    address may hold one, as a key. Its ":PASSWORD@" is what is hidden (":***@"), not every
    place its letters stand ("pass" in "passages", "wall" in a quote)."""
    if isinstance(value, str) and (password := url_password(value)):
        _SECRETS[f":{password}@"] = ":***@"


def hide_secrets(text: str) -> str:
    """`text` with every value marked by `keep_secret` replaced by ***."""
    for secret, shown in _SECRETS.items():
        if secret in text:
            text = text.replace(secret, shown)
    return text
