"""Text from outside (a book, a question, a model's reply, a file name) made safe to print.

A book may hold terminal control sequences: `ESC ]52` writes the clipboard, `ESC ]0;` the
window title, `ESC [2J` clears the screen, and the 8-bit CSI (U+009B) does the same without
an ESC. Every C0 and C1 control character but newline and tab, and DEL, is replaced by a
visible stand-in of one character, so character offsets (a quote's highlight) stay right and
the reader still sees that something was there. So is each bidirectional formatting
character (RLO U+202E and its kin, the isolates LRI..PDI, the marks LRM, RLM and ALM): they
reorder what a terminal shows, so that a line can read otherwise than its bytes. JSON output
keeps the text exact: it escapes control characters itself.
"""

from __future__ import annotations

import re

from cwread.errors import hide_secrets, hide_url_passwords

# and lone surrogates: an argument's undecodable byte (\udc9b for 0x9B, a terminal's CSI) is
# written back as that raw byte
BIDI = r"\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidi formatting: it reorders what a terminal shows
_CONTROL = re.compile(rf"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI}\ud800-\udfff]")
_NEWLINE = re.compile(r"[\n\t]")


def _stand_in(match: re.Match) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Unicode control pictures: ESC → ␛, BEL → ␇
    if code == 0x7F:
        return "\u2421"  # ␡
    return "\ufffd"  # C1 controls, bidi formatting and surrogates have no pictures


def printable(text: str) -> str:
    """`text` with every control character but newline and tab, and every bidi formatting
    character, replaced by a visible stand-in of one character (C0 by its control picture,
    DEL by ␡, C1 and bidi by U+FFFD)."""
    return _CONTROL.sub(_stand_in, text)


def defused(value):
    """`value` with every string in it (a dict's values, a list's items, nested) `printable`:
    what leaves cwread as data a client shows (MCP's text and structured content)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {key: defused(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [defused(item) for item in value]
    return value


LINE_HEAD, LINE_TAIL = 600, 360  # of a longer line: a pasted text said back whole is no message


def one_line(text: str) -> str:
    """`printable`, and newlines and tabs as spaces, a URL's password hidden: for a message
    that must stay one line; a line past LINE_HEAD + LINE_TAIL characters keeps its opening
    and its end (where a message says the way out), and says how much it left out between."""
    line = _NEWLINE.sub(" ", printable(redact_credentials(text)))
    if len(line) <= LINE_HEAD + LINE_TAIL + 40:
        return line
    return f"{line[:LINE_HEAD]} … ({len(line) - LINE_HEAD - LINE_TAIL:,} characters left out) … {line[-LINE_TAIL:]}"


def redact_credentials(text: str) -> str:
    """`text` with the password of every URL in it (--base-url http://me:PW@host/v1), and every
    key (cwread.errors.keep_secret), replaced by ***."""
    return hide_secrets(hide_url_passwords(text))
