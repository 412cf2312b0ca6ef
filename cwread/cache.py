"""The on-disk cache: plain files (`.npy`, JSON) in directories written atomically.

Every cache entry is a directory holding its files and a `manifest.json` written last, which
lists each file's size and sha256. An entry is used only when its manifest verifies; anything
partial, corrupt or from another format version is removed and rebuilt, never trusted.
An entry is built in a temporary sibling directory and renamed into place, so an interrupted
run leaves no half-written entry behind.
"""

from __future__ import annotations

import atexit
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from cwread.errors import CacheError, CwreadError, InputError, OutputError

CACHE_FORMAT = 1
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)
_SHORT_WRITE = re.compile(r"\d+ requested and \d+ written")
_USABLE: dict[str, Path] = {}  # configured root -> the folder used (a temporary one if read-only)


def notice(message: str) -> None:
    """One line on stderr (the core's only message that is not an error: a read-only cache)."""
    print(f"cwread: {message}", file=sys.stderr)


def user_cache_home() -> Path:
    """Where a user's caches live: `$XDG_CACHE_HOME`, else `~/.cache` (cwread's and the model hub's)."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) if xdg else Path.home() / ".cache"


def configured_root() -> Path:
    """`$CWREAD_CACHE_DIR`, else `$XDG_CACHE_HOME/cwread`, else `~/.cache/cwread`."""
    explicit = os.environ.get("CWREAD_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return user_cache_home() / "cwread"


def cache_root() -> Path:
    """The cache folder: the configured one, checked once per process. A read-only one is
    replaced by a temporary folder removed at exit (one warning: nothing is kept); a file in
    the way is an InputError."""
    root = configured_root()
    key = str(root)
    if key not in _USABLE:
        _USABLE[key] = _usable(root)
    return _USABLE[key]


def _usable(root: Path) -> Path:
    try:
        root.mkdir(parents=True, exist_ok=True)
        _probe(root)
        return root
    except (FileExistsError, NotADirectoryError):
        raise InputError(
            f"the cache folder {root} cannot be made: a file is in the way "
            "(remove it, or set CWREAD_CACHE_DIR to a folder)"
        ) from None
    except OSError as exc:
        if exc.errno in _NO_SPACE:
            raise no_space(root) from None
        if exc.errno not in _READ_ONLY:
            raise CacheError(f"the cache folder {root} cannot be used: {exc.strerror or exc}") from None
    temporary = Path(tempfile.mkdtemp(prefix="cwread-cache-"))
    atexit.register(shutil.rmtree, temporary, True)
    notice(f"warning: the cache folder {root} is read-only; running without a cache (set CWREAD_CACHE_DIR to keep one)")
    return temporary


def no_space(root: Path) -> CacheError:
    return CacheError(
        f"no space left for the cache in {root}: free some space, or set CWREAD_CACHE_DIR to a "
        "folder on another disk"
    )


def cache_write_error(exc: OSError, where: Path) -> CwreadError:
    """The one-line error for a failed cache write (disk full, read-only, ...), naming the
    cache folder rather than the entry deep inside it."""
    root = next((r for r in _USABLE.values() if where == r or r in where.parents), where)
    # numpy reports a short write on a full disk as "N requested and M written", with no errno
    if exc.errno in _NO_SPACE or (exc.errno is None and _SHORT_WRITE.search(str(exc))):
        return no_space(root)
    return CacheError(f"cannot write the cache in {root}: {exc.strerror or exc}")


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_entry(entry: Path, meta_check: Callable[[dict], bool] | None = None) -> dict | None:
    """The manifest's `meta` of a verified entry, or None (and the entry removed) if unusable."""
    manifest_path = entry / "manifest.json"
    if entry.is_symlink() or not manifest_path.is_file():  # a link may lead anywhere: not ours
        if entry.is_symlink() or entry.exists():
            _remove(entry)
        return None
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if not isinstance(manifest, dict) or manifest.get("format") != CACHE_FORMAT:
            raise ValueError("format")
        for name, expect in manifest["files"].items():
            path = entry / name
            if path.stat().st_size != expect["size"] or file_sha256(path) != expect["sha256"]:
                raise ValueError(name)
        meta = manifest.get("meta", {})
        if meta_check is not None and not meta_check(meta):
            raise ValueError("meta")
        return meta
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        _remove(entry)
        return None


def write_entry(entry: Path, build: Callable[[Path], dict]) -> dict:
    """Build an entry: `build(tmpdir)` writes its files and returns `meta`; then commit it.

    Returns the meta. If another process committed the same entry meanwhile, theirs is kept.
    A failed write (e.g. a full disk) leaves nothing behind and is a CacheError.
    """
    try:
        return _write_entry(entry, build)
    except OSError as exc:
        raise cache_write_error(exc, entry.parent) from exc


def _write_entry(entry: Path, build: Callable[[Path], dict]) -> dict:
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{entry.name}.tmp-", dir=entry.parent))
    try:
        meta = build(tmp)
        files = {
            p.name: {"size": p.stat().st_size, "sha256": file_sha256(p)}
            for p in sorted(tmp.iterdir())
            if p.is_file()
        }
        manifest = {"format": CACHE_FORMAT, "files": files, "meta": meta}
        with open(tmp / "manifest.json", "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        if entry.exists():
            _remove(entry)
        try:
            os.rename(tmp, entry)
        except OSError:
            if not (entry / "manifest.json").is_file():
                raise
        return meta
    finally:
        if tmp.exists():
            _remove(tmp)


def write_file_atomic(path: Path, data: str | bytes, mode: int | None = None) -> None:
    """Write `data` to `path` through a temporary sibling and a rename, so no reader ever
    sees half a file; the temporary is removed if anything fails. The folder must exist.
    `mode`: the new file's permissions (else mkstemp's private 0600)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            if mode is not None:
                os.fchmod(f.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


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


def check_output_path(path: str, option: str) -> None:
    """Before any work: InputError unless `path` (for the flag `option`) can be written: its
    folder exists and takes a new file, and it is not a folder itself; an open stream it
    names (open_stream) is open for writing."""
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
        _probe(folder)
    except OSError as exc:
        raise InputError(f"cannot write {option} {path}: the folder {folder} is {_why(exc)}") from None
    if target.exists() and not os.access(target, os.W_OK):
        raise InputError(f"cannot write {option} {path}: the file is read-only")


def _probe(folder: Path) -> None:
    """OSError unless a file can be made in `folder`: a real try, as access() says yes to root
    on a read-only mount."""
    fd, probe = tempfile.mkstemp(dir=folder, prefix=".probe-")
    os.close(fd)
    os.unlink(probe)


def _why(exc: OSError) -> str:
    if exc.errno in _NO_SPACE:
        return "full"
    if exc.errno in _READ_ONLY:
        return "read-only"
    return f"not writable ({exc.strerror or exc})"


def write_output_file(path: str, text: str, option: str) -> None:
    """Write a file the user asked for (`option` names the flag) atomically, replacing one
    that is there and keeping its permissions (a new file gets the umask's); InputError if it
    cannot be written."""
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
        raise InputError(f"cannot write {option} {path}: {exc.strerror or exc}") from None


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
        raise OutputError(f"cannot write {option} {path}: {exc.strerror or exc}") from None


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
        raise OutputError(f"cannot write {option} {path}: {exc.strerror or exc}") from None


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


def remove_entry(entry: Path) -> None:
    """Remove a cache entry found unusable after verification, so it is built again."""
    _remove(entry)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():  # a link is removed, never what it leads to
        shutil.rmtree(path, ignore_errors=True)
    else:
        with suppress(OSError):
            path.unlink()
