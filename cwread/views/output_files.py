"""The files a user asks for (`--trace`, `--report`, `--out`, chat's `/save`): checked before
any work, written atomically, or into the open stream a path names (/dev/stdout)."""

from __future__ import annotations

import fcntl
import os
import re
import sys
from pathlib import Path

from cwread.cache import NO_SPACE, READ_ONLY, probe_writable, write_file_atomic
from cwread.errors import InputError, OutputError


def open_stream(path: str) -> int | None:
    """The file descriptor `path` names when it is one of this process's open streams
    (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N, or a link to one), else None:
    such a path is written into, where the shell opened it, never replaced."""
    named = os.path.abspath(path)
    for _ in range(8):  # a few links deep
        stream = _STREAM.fullmatch(named)
        if stream:
            word, number = stream.group(1), stream.group(2) or stream.group(3)
            return {"stdin": 0, "stdout": 1, "stderr": 2}[word] if word else int(number)
        if not os.path.islink(named):
            return None
        try:
            named = os.path.join(os.path.dirname(named), os.readlink(named))
        except OSError:
            return None
        named = os.path.normpath(named)
    return None


_STREAM = re.compile(rf"/dev/(stdin|stdout|stderr)|/dev/fd/(\d+)|/proc/(?:self|{os.getpid()})/fd/(\d+)")


def check_output_path(path: str | None, option: str, book: str | None = None, replaces: bool = True) -> None:
    """Before any work, so that finished work is never lost: InputError unless `path` (for the
    flag `option`; None: nothing to check) can be written: its folder exists and takes a new
    file, it is not a folder itself, nor the `book` read; an open stream it names (open_stream)
    is open for writing."""
    if path is None:
        return
    if book not in (None, "-") and (harm := _harm_to_book(Path(path), Path(book))):
        raise InputError(f"{option} would {harm}; give another file name")
    fd = open_stream(path)
    if fd is not None:
        try:
            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        except OSError:
            raise InputError(f"cannot write {option} {path}: file descriptor {fd} is not open") from None
        if flags & os.O_ACCMODE == os.O_RDONLY:
            raise InputError(f"cannot write {option} {path}: file descriptor {fd} is open for reading only")
        return
    target = _written(Path(path))
    folder = target.parent
    if target.is_dir():
        raise InputError(f"{option} {path} is a folder; give a file name")
    if target.exists() and not target.is_file():  # a device or a pipe is written as it is
        if not os.access(target, os.W_OK):
            raise InputError(f"cannot write {option} {path}: permission denied")
        return
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise InputError(f"cannot write {option} {path}: the folder {folder} {what}")
    try:
        probe_writable(folder)
    except OSError as exc:
        raise InputError(f"cannot write {option} {path}: the folder {folder} is {_why(exc)}") from None
    if target.exists() and not os.access(target, os.W_OK):
        raise InputError(f"cannot write {option} {path}: the file is read-only")
    if replaces and target.is_file() and not _written_by_cwread(target):  # a user's own file: never replaced
        raise InputError(f"{option} {path} is a file cwread did not write; give another name, or remove it first")


# how what cwread writes opens: a trace (or a JSON Lines file of them), an eval report
_CWREADS = re.compile(rb'\{\s*"version":\s*\d+,\s*"cwread":\s*"|# cwread eval: ')


def _written_by_cwread(path: Path) -> bool:
    """Whether the file at `path` is empty or one cwread wrote, as it opens: one a later run
    may replace."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError:
        return True  # the write itself says what is wrong
    return not head or bool(_CWREADS.match(head))


def _harm_to_book(path: Path, book: Path) -> str | None:
    """What writing `path` would do to the `book` read: overwrite it, or write into its folder
    (a folder read as one book reads every text file in it, whatever its name; a shelf, every
    book's): None, nothing."""
    try:
        target, root = path.resolve(), book.resolve()
    except (OSError, RuntimeError):  # a link loop: the write itself says what is wrong
        return None
    if target == root:
        return "overwrite the book itself"
    if root.is_dir() and target.is_relative_to(root):
        return f"write {target.relative_to(root)} into the book's folder, where it is read as the book's"
    return None


def _why(exc: OSError) -> str:
    if exc.errno in NO_SPACE:
        return "full"
    if exc.errno in READ_ONLY:
        return "read-only"
    return f"not writable ({exc.strerror or exc})"


def write_output_file(path: str, text: str, option: str) -> None:
    """Write a file the user asked for (`option` names the flag) atomically, replacing one
    that is there and keeping its permissions (a new file gets the umask's); OutputError (exit
    3, as stdout's) if it cannot be written: the path was checked before any work
    (check_output_path), so what fails now is the disk or the stream."""
    fd = open_stream(path)
    if fd is not None:  # /dev/stdout and the like: into the stream, as the shell's > or >> opened it
        _write_stream(fd, text, option, path)
        return
    target = _written(Path(path))
    try:
        if target.exists() and not target.is_file():  # /dev/null, a pipe: never replaced by a file
            with open(target, "w", encoding="utf-8") as f:
                f.write(text)
            return
        mode = target.stat().st_mode & 0o7777 if target.is_file() else 0o666 & ~_umask()
        write_file_atomic(target, text, mode)
    except OSError as exc:
        raise OutputError(f"cannot write {option} {path}: {exc.strerror or exc}", of_stdout=False) from None


def output_failure(path: str, text: str, option: str) -> OutputError | None:
    """`write_output_file`, its failure returned rather than raised: a run writes the file it
    was asked for before it prints (a reader that leaves, `| head`, ends the run), and says a
    failure after (a full disk loses no answer)."""
    try:
        write_output_file(path, text, option)
    except OutputError as exc:
        return exc
    return None


def append_output_file(path: str, text: str, option: str) -> None:
    """Append `text` to a file the user asked for (`option` names the flag), or write it into
    the open stream the path names (open_stream); OutputError if it cannot be written."""
    fd = open_stream(path)
    if fd is not None:
        _write_stream(fd, text, option, path)
        return
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise OutputError(f"cannot write {option} {path}: {exc.strerror or exc}", of_stdout=False) from None


def _write_stream(fd: int, text: str, option: str, path: str) -> None:
    """Write `text` into the open descriptor `fd` (stdout and stderr through Python's streams,
    so it comes after what they hold)."""
    stream = {1: sys.stdout, 2: sys.stderr}.get(fd)
    try:
        if stream is not None:
            stream.write(text)
            stream.flush()
            return
        data = text.encode("utf-8")
        while data:
            data = data[os.write(fd, data) :]
    except OSError as exc:
        raise OutputError(f"cannot write {option} {path}: {exc.strerror or exc}", of_stdout=False) from None


def _written(path: Path) -> Path:
    """Where writing `path` lands: a symbolic link's target (the link stays a link), else the path."""
    if path.is_symlink():
        try:
            return path.resolve(strict=False)
        except (OSError, RuntimeError):  # a loop of links: written as given, and refused there
            return path
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
