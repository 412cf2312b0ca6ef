"""Bytes in: a file read within bounds, and text decoded from bytes whatever their encoding."""

from __future__ import annotations

import re
import stat
from pathlib import Path

from cwread.book.folder import opened_inside
from cwread.errors import InputError

DEFAULT_MAX_BYTES = 64 * 1024 * 1024

_BINARY_SIGNATURES = {
    b"PK\x03\x04": "a ZIP archive but not an EPUB (a DOCX?); convert it to plain text first",
    b"\x1f\x8b": "gzip-compressed; decompress it first (`gunzip`)",
    b"\x7fELF": "a program, not a text",
    b"\x89PNG": "an image, not a text",
    b"\xff\xd8\xff": "an image, not a text",
}
# category Cc but the whitespace ones and ESC (a text may hold a terminal's colours: shown defused)
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f-\x9f]")


def read_bytes(path: str, max_bytes: int = DEFAULT_MAX_BYTES, within: tuple[Path, ...] = ()) -> bytes:
    """The bytes of `path` ("-" reads stdin), or InputError naming what is wrong. With
    `within`, the file as opened must lie inside one of those folders: checked on the open
    handle, so a path swapped for a link after an earlier check is refused, never read."""
    if path == "-":
        import sys

        if sys.stdin is None or sys.stdin.closed:  # e.g. `cwread find - Q <&-`
            raise InputError("standard input is closed; give a file, or pipe the text in")
        try:
            data = _read_at_most(sys.stdin.buffer, max_bytes + 1)
        except (OSError, ValueError) as exc:
            raise InputError(f"standard input cannot be read ({exc})") from None
        if len(data) > max_bytes:
            raise InputError(
                f"standard input holds more than {readable_size(max_bytes)}, the most cwread reads "
                "(raise the limit with CWREAD_MAX_BYTES)"
            )
        return data
    p = Path(path)
    if not p.exists():
        lost = p.is_symlink()  # a link to nothing, or round in a loop
        raise InputError(f"{path}: a link that leads to no file" if lost else f"{path}: no such file")
    if p.is_dir():
        raise InputError(f"{path} is a directory; give a text file")
    try:
        mode = p.stat().st_mode
        if not stat.S_ISREG(mode):  # a FIFO would block, a device never ends
            what = (
                "a pipe"
                if stat.S_ISFIFO(mode)
                else "a device"
                if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "not a file"
            )
            raise InputError(
                f"{path} is {what}, not a regular file; pipe its text to standard input and give - "
                "as the book (e.g. `... | cwread show - 1`)"
            )
        with open(p, "rb") as f:  # bounded: a file may grow after its size was read
            if within and not opened_inside(f.fileno(), p, within):
                raise InputError(f"{path} leads out of the folders it may be read from; refused")
            data = _read_at_most(f, max_bytes + 1)
        if len(data) > max_bytes:
            raise InputError(_too_big(path, max(len(data), p.stat().st_size), max_bytes))
        return data
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _read_at_most(stream, n: int) -> bytes:
    """Up to `n` bytes of `stream`, a chunk at a time: read(n) sets n bytes aside first, and a
    bound as large as CWREAD_MAX_BYTES may be set is more memory than there is."""
    chunks, left = [], n
    while left > 0 and (chunk := stream.read(min(left, 1 << 24))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _too_big(what: str, size: int, limit: int) -> str:
    return (
        f"{what} is {readable_size(size)}; cwread reads texts up to {readable_size(limit)} "
        "(raise the limit with CWREAD_MAX_BYTES)"
    )


def readable_size(n: int) -> str:
    """Bytes in the largest unit that keeps the number at least 1 (1000 bytes, 4.0 KiB, 12 MiB)."""
    if n < 1024:
        return f"{n} bytes"
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if n < 10 else f"{n:.0f} {unit}"
    return f"{n:.0f} GiB"


def decode_text(data: bytes, encoding: str | None = None, name: str = "input") -> tuple[str, str]:
    """Decode `data` to text; returns (text, encoding used). See `decode`."""
    text, used, _ = decode(data, encoding, name)
    return text, used


def decode(data: bytes, encoding: str | None = None, name: str = "input") -> tuple[str, str, int]:
    """Decode `data` to text; returns (text, encoding used, bytes replaced as invalid).

    With `encoding` given it is used strictly. Otherwise: a UTF-32/UTF-16/UTF-8 byte-order
    mark decides; UTF-16 without a mark is recognised by its zero bytes; then UTF-8 (a few
    invalid bytes among valid UTF-8 are replaced by U+FFFD and counted), then cp1252, then
    latin-1. Binary data is refused with a message saying what it looks like, whichever
    encoding was used (UTF-16 read as ASCII is all NUL bytes).
    """
    replaced = 0
    if encoding:
        try:
            text, used = data.decode(encoding), encoding
        except LookupError:
            raise InputError(f"unknown encoding {encoding!r}") from None
        except UnicodeError as exc:  # a decode error at a byte, or a codec that decodes nothing ("undefined")
            where = f"byte {exc.start}" if isinstance(exc, UnicodeDecodeError) else str(exc)
            raise InputError(f"{name} is not valid {encoding} ({where}); name another encoding") from None
    else:
        text, used, replaced = _guess_decode(data, name)
    _refuse_binary(text, name, encoding)
    return text, used, replaced


def _guess_decode(data: bytes, name: str) -> tuple[str, str, int]:
    boms = [
        (b"\xff\xfe\x00\x00", "utf-32-le"),
        (b"\x00\x00\xfe\xff", "utf-32-be"),
        (b"\xef\xbb\xbf", "utf-8-sig"),
        (b"\xff\xfe", "utf-16-le"),
        (b"\xfe\xff", "utf-16-be"),
    ]
    for bom, enc in boms:
        if data.startswith(bom):
            try:
                return data[len(bom) :].decode(enc.replace("-sig", "")), enc, 0
            except UnicodeDecodeError:
                raise InputError(f"{name} starts with a {enc} mark but is not valid {enc}") from None
    for sig, what in _BINARY_SIGNATURES.items():
        if data.startswith(sig):
            raise InputError(f"{name} looks like {what}")
    head = data[:4096]
    if head.count(b"\x00") * 10 > len(head):  # UTF-16 without a mark, or binary; a stray NUL is neither
        enc = _utf16_without_bom(data)
        if enc is None:
            raise InputError(f"{name} looks like a binary file, not a text")
        try:
            return data.decode(enc), enc, 0
        except UnicodeDecodeError:
            raise InputError(f"{name} looks like a binary file, not a text") from None
    try:
        return data.decode("utf-8"), "utf-8", 0
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8", errors="replace")
    invalid = text.count("\ufffd") - data.count("\ufffd".encode())
    valid = sum(1 for ch in text if ord(ch) > 0x7F) - invalid
    # A cp1252 or latin-1 text is almost never valid UTF-8 by accident: when most of the
    # non-ASCII bytes form valid UTF-8, the few others are damage, not another encoding.
    if valid > invalid:
        return text, "utf-8", invalid
    for enc in ("cp1252", "latin-1"):
        try:
            return data.decode(enc), enc, 0
        except UnicodeDecodeError:
            continue
    raise AssertionError("latin-1 decodes any bytes")


def _utf16_without_bom(data: bytes) -> str | None:
    """'utf-16-le'/'utf-16-be' when zero bytes sit on one parity as in ASCII-heavy UTF-16."""
    sample = data[:4096]
    half = max(1, len(sample) // 2)
    even_zero = sample[0::2].count(0) / half
    odd_zero = sample[1::2].count(0) / half
    if odd_zero > 0.3 and even_zero < 0.05:
        return "utf-16-le"
    if even_zero > 0.3 and odd_zero < 0.05:
        return "utf-16-be"
    return None


def _refuse_binary(text: str, name: str, forced: str | None = None) -> None:
    sample = text[:65536]
    if not sample:
        return
    control = len(_CONTROL.findall(sample))
    if control / len(sample) > 0.01:
        if forced:
            raise InputError(
                f"{name} read as {forced} is full of control bytes (NUL, ...), as a binary file is; "
                "name another encoding, or none to have it detected"
            )
        raise InputError(f"{name} looks like a binary file, not a text")


def max_bytes_from_env() -> int:
    """CWREAD_MAX_BYTES, or the default: the most cwread reads of one book."""
    from cwread.environment import env_positive

    # a bound past what any machine holds is none; past 2**63 no read takes it as a size
    return min(int(env_positive("CWREAD_MAX_BYTES", int) or DEFAULT_MAX_BYTES), 2**62)
