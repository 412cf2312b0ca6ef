"""A folder read as one book: which of its files are read, in what order, and what is left out.

- Its files are read in natural name order (`ch2` before `ch10`), subfolders by their path,
  or in the order of its index file (`ORDER_FILE`: one path per line, `#` comments), the
  files it does not list after those it does, in natural order.
- Hidden files and folders (`.git`, `.DS_Store`) are not part of the book.
- Symbolic links are not followed out of the folder; a link to a file inside it is read
  where its target is, once.
- A file that is not a book (an image, a program, a damaged PDF) is skipped and named, as is an
  empty one; a folder with no text at all is refused.
- The files' total size is bounded (CWREAD_MAX_BYTES, as for one file), checked before
  any is read.
- A file whose name is not UTF-8 is named and left out: a citation, an index and JSON need
  the name as text.
- Each file is cited by its path without its suffix (`ch03`, `letters/1851-04`); two files
  that would be cited alike (`ch1.txt`, `ch1.md`) are refused, since either name would do.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from cwread.errors import InputError

ORDER_FILE = ".cwread-order"
MAX_FILES = 10_000
MAX_DEPTH = 64  # folders within folders: far beyond a book's, far below Python's recursion limit
_DIGITS = re.compile(r"(\d+)")


@dataclass(frozen=True)
class Listing:
    """The files of a folder to read, in the book's order, and those left out ("path: why")."""

    files: tuple[str, ...]  # paths relative to the folder, "/"-separated
    skipped: tuple[str, ...]
    total_bytes: int


def natural_key(relative: str) -> tuple:
    """Sort key of a relative path: by folder, then name, numbers compared as numbers."""
    return tuple(
        tuple(
            (0, int(chunk), "") if chunk.isdigit() else (1, 0, chunk.casefold())
            for chunk in _DIGITS.split(part)
            if chunk
        )
        for part in relative.split("/")
    )


def name_not_utf8(name: str) -> str | None:
    """Where a file's name is not UTF-8 (Python holds its bytes as surrogates): the name as it
    can be printed (each such byte as U+FFFD); else None."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return None


NOT_UTF8 = "a name that is not UTF-8; rename it to read it"


def list_folder(root: Path) -> Listing:
    """What to read of the folder `root` (see module doc); InputError for an unusable one."""
    try:
        real_root = root.resolve(strict=True)
    except OSError as exc:
        raise InputError(f"{root}: cannot read the folder ({exc.strerror or exc})") from None
    files: list[str] = []
    skipped: list[str] = []
    linked: list[tuple[str, str]] = []  # (link, target) of links to files inside the folder
    total = 0

    def refuse_walk(exc: OSError) -> None:
        skipped.append(
            f"{_relative(Path(exc.filename or root), root)}: cannot be read ({exc.strerror or exc})"
        )

    for folder, dirs, names in os.walk(root, onerror=refuse_walk):
        here = Path(folder)
        kept_dirs = []
        for d in sorted(dirs):
            path = here / d
            if d.startswith("."):
                continue
            if len(path.relative_to(root).parts) > MAX_DEPTH:  # os.walk recurses: bounded here
                skipped.append(f"{_relative(path, root)}: nested deeper than {MAX_DEPTH} folders, not read")
                continue
            if path.is_symlink():
                skipped.append(f"{_relative(path, root)}: a link to a folder, not followed")
                continue
            kept_dirs.append(d)
        dirs[:] = kept_dirs
        for n in names:
            if n.startswith("."):
                continue
            path = here / n
            rel = _relative(path, root)
            if shown := name_not_utf8(rel):
                skipped.append(f"{shown}: {NOT_UTF8}")
                continue
            if path.is_symlink():
                try:
                    target = path.resolve(strict=True)
                except (OSError, RuntimeError):
                    skipped.append(f"{rel}: a broken link")
                    continue
                if not target.is_relative_to(real_root):
                    skipped.append(f"{rel}: a link out of the folder, not followed")
                    continue
                linked.append((rel, target.relative_to(real_root).as_posix()))
                continue
            try:
                st = path.stat()
            except OSError as exc:
                skipped.append(f"{rel}: cannot be read ({exc.strerror or exc})")
                continue
            if not path.is_file():
                skipped.append(f"{rel}: not a regular file")
                continue
            files.append(rel)
            total += st.st_size
            if len(files) > MAX_FILES:
                raise InputError(f"{root} holds more than {MAX_FILES:,} files; give a folder of fewer")
    read = set(files)
    for link, target in linked:
        if target in read:
            skipped.append(f"{link}: a link to {target}, read there")
        elif any(part.startswith(".") for part in target.split("/")):
            skipped.append(f"{link}: a link to a hidden file, not followed")
        else:
            try:
                size = (root / link).stat().st_size
            except OSError as exc:  # gone while the folder was listed
                skipped.append(f"{link}: cannot be read ({exc.strerror or exc})")
                continue
            read.add(target)
            files.append(link)
            total += size
    return Listing(tuple(_ordered(root, files, skipped)), tuple(skipped), total)


def opened_inside(fd: int, path: Path, within: tuple[Path, ...]) -> bool:
    """Whether the file open as `fd` lies inside one of `within` (resolved folders): by the
    path the kernel holds for it where there is one (/proc), else by `path` resolved now
    and found to be the same file."""
    held = Path(f"/proc/self/fd/{fd}")
    try:
        if held.exists():
            real = Path(os.readlink(held))
        else:
            real = path.resolve(strict=True)
            opened, found = os.fstat(fd), real.stat()
            if (opened.st_dev, opened.st_ino) != (found.st_dev, found.st_ino):
                return False
    except (OSError, RuntimeError):
        return False
    return any(real.is_relative_to(folder) for folder in within)


def _ordered(root: Path, files: list[str], skipped: list[str]) -> list[str]:
    natural = sorted(files, key=natural_key)
    order_path = root / ORDER_FILE
    if not order_path.is_file():
        return natural
    try:
        with open(order_path, "rb") as f:  # held to the folder on the handle: its lines would be echoed
            if not opened_inside(f.fileno(), order_path, (root.resolve(strict=True),)):
                raise InputError(f"{order_path} links out of the folder; refused")
            lines = f.read().decode("utf-8-sig").splitlines()
    except (OSError, RuntimeError, UnicodeDecodeError) as exc:
        raise InputError(f"{order_path}: cannot be read as UTF-8 text ({exc})") from None
    listed: list[str] = []
    for number, line in enumerate(lines, start=1):
        entry = line.split("#", 1)[0].strip().replace("\\", "/").removeprefix("./")
        if not entry:
            continue
        if entry not in files:
            why = (
                "is not a readable file of the folder"
                if not (root / entry).exists()
                else "is left out (see the files skipped)"
            )
            raise InputError(f"{order_path}, line {number}: {entry!r} {why}")
        if entry in listed:
            raise InputError(f"{order_path}, line {number}: {entry!r} is listed twice")
        listed.append(entry)
    return listed + [f for f in natural if f not in listed]


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()
