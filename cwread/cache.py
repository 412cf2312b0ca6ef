"""The on-disk cache: plain files (`.npy`, JSON) in directories written atomically.

Every cache entry is a directory holding its files and a `manifest.json` written last, which
lists each file's size and sha256. An entry is used only when its manifest verifies; anything
partial, corrupt or from another format version is removed and rebuilt, never trusted.
An entry is built in a temporary sibling directory and renamed into place, so an interrupted
run leaves no half-written entry behind; the temporary of a run that was killed (no cleanup
runs) is removed by the next write beside it, once it is old enough to be no live writer's.
"""

from __future__ import annotations

import atexit
import errno
import functools
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from cwread.errors import CacheError, CwreadError, InputError

# hashlib and tempfile are imported where they are used: a run that writes no entry (a usage
# error) loads neither (4 ms)

CACHE_FORMAT = 1
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)
_SHORT_WRITE = re.compile(r"\d+ requested and \d+ written")
# a write takes seconds to minutes: a temporary this old was left by a run killed while writing
STALE_TEMPORARY_SECONDS = 3600
_USABLE: dict[str, Path] = {}  # configured root -> the folder used (a temporary one if read-only)


def notice(message: str) -> None:
    """One line on stderr (the core's only message that is not an error: a read-only cache)."""
    print(f"cwread: {message}", file=sys.stderr)


def user_cache_home() -> Path:
    """Where a user's caches live: `$XDG_CACHE_HOME`, else `~/.cache` (cwread's and the model hub's);
    a relative $XDG_CACHE_HOME is ignored, as the XDG spec says (it made a cache in whatever
    folder cwread ran in)."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"


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


def cache_kept() -> bool:
    """Whether what is cached outlives the process: not the temporary folder that stands in for
    a read-only cache."""
    return cache_root() == configured_root()


def _usable(root: Path) -> Path:
    import tempfile
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe_writable(root)
        return root
    except (FileExistsError, NotADirectoryError):
        raise InputError(
            f"the cache folder {root} cannot be made: a file is in the way "
            "(remove it, or set CWREAD_CACHE_DIR to a folder)"
        ) from None
    except OSError as exc:
        if exc.errno in NO_SPACE:
            raise no_space(root) from None
        if exc.errno not in READ_ONLY:
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
    if exc.errno in NO_SPACE or (exc.errno is None and _SHORT_WRITE.search(str(exc))):
        return no_space(root)
    return CacheError(f"cannot write the cache in {root}: {exc.strerror or exc}")


def file_sha256(path: Path) -> str:
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_entry(
    entry: Path, meta_check: Callable[[dict], bool] | None = None, trust_unchanged: bool = False
) -> dict | None:
    """The manifest's `meta` of a verified entry, or None (and the entry removed) if unusable.
    `trust_unchanged`: a file whose size and modification time are those it was written with
    is taken as whole, its checksum not read (a 145 MB model's 0.15-0.25 s of 2 busy cores, on
    every run); `cwread doctor` reads them all."""
    manifest_path = entry / "manifest.json"
    if entry.is_symlink() or not manifest_path.is_file():  # a link may lead anywhere: not ours
        if entry.is_symlink() or entry.exists():
            _remove(entry)
        return None
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if not isinstance(manifest, dict) or manifest.get("format") != CACHE_FORMAT:
            raise ValueError("format")
        restamped = None
        for name, expect in manifest["files"].items():
            path = entry / name
            stat = path.stat()
            if stat.st_size != expect["size"]:
                raise ValueError(name)
            unchanged = trust_unchanged and stat.st_mtime_ns == expect.get("mtime_ns")
            if not unchanged and file_sha256(path) != expect["sha256"]:
                raise ValueError(name)
            if trust_unchanged and not unchanged:  # written before times were kept, or copied
                expect["mtime_ns"] = restamped = stat.st_mtime_ns
        meta = manifest.get("meta", {})
        if meta_check is not None and not meta_check(meta):
            raise ValueError("meta")
        if restamped is not None:
            with suppress(OSError):  # just read whole: the next run reads its time alone
                write_file_atomic(manifest_path, json.dumps(manifest, indent=1))
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


# The temporaries being built now, in any thread: a process that ends while a daemon thread
# still builds one (its main thread failed, say on a full disk) removes them at exit
_BUILDING: set[Path] = set()


@atexit.register
def _remove_unfinished() -> None:
    for tmp in list(_BUILDING):
        _remove(tmp)


def _write_entry(entry: Path, build: Callable[[Path], dict]) -> dict:
    import tempfile

    entry.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(entry.parent)  # a killed run's (240 MB for a decision model) before ours
    whose = f"{_process_space() or 'x'}-{os.getpid()}"  # a process gone is seen so (_abandoned)
    tmp = Path(tempfile.mkdtemp(prefix=f".{entry.name}.tmp-{whose}-", dir=entry.parent))
    _BUILDING.add(tmp)
    try:
        meta = build(tmp)
        files = {}
        for p in sorted(tmp.iterdir()):
            if p.is_file():
                with open(p, "rb") as f:  # on disk before the manifest that vouches for it
                    os.fsync(f.fileno())
                stat = p.stat()  # a rename keeps its modification time: read_entry's trust_unchanged compares it
                files[p.name] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": file_sha256(p)}
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
        _BUILDING.discard(tmp)
        if tmp.exists():
            _remove(tmp)


def remove_stale_temporaries(folder: Path, older_than: float = STALE_TEMPORARY_SECONDS) -> None:
    """Remove the temporaries of entries in `folder` (".KEY.tmp-*") left by runs killed while
    building them (a decision model's is 240 MB): those whose builder, a process of this
    machine, is gone, and any modified `older_than` seconds ago or more (another machine's on a
    shared folder); another process's build in progress is left alone."""
    now = time.time()
    for tmp in folder.glob(".*.tmp-*"):
        with suppress(OSError):
            if _abandoned(tmp.name) or now - tmp.lstat().st_mtime >= older_than:
                _remove(tmp)


@functools.cache
def _process_space() -> str:
    """What names this process's ids: this boot of this machine and its PID namespace (hashed),
    so that a process id is read only where it means the same process; "" where it cannot be
    told (no /proc: a temporary is then removed by age alone)."""
    import hashlib

    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
        space = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return ""
    return hashlib.sha256(f"{boot}:{space}".encode()).hexdigest()[:12]


_TEMPORARY = re.compile(r"\.tmp-(?P<host>[0-9a-f]{12})-(?P<pid>\d+)-[^-]+$")


def _abandoned(name: str) -> bool:
    """Whether the temporary `name` was made by a process of this boot and PID namespace that
    is no longer running (a reused id reads as running: the age rule then removes it)."""
    made = _TEMPORARY.search(name)
    here = _process_space()
    if not here or made is None or made["host"] != here or int(made["pid"]) == os.getpid():
        return False
    try:
        os.kill(int(made["pid"]), 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's process: running
        return False
    return False


def write_file_atomic(path: Path, data: str | bytes, mode: int | None = None) -> None:
    """Write `data` to `path` through a temporary sibling and a rename, so no reader ever
    sees half a file; the temporary is removed if anything fails. The folder must exist.
    `mode`: the new file's permissions (else mkstemp's private 0600)."""
    import tempfile
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


def probe_writable(folder: Path) -> None:
    """OSError unless a file can be made in `folder`: a real try, as access() says yes to root
    on a read-only mount."""
    import tempfile
    fd, probe = tempfile.mkstemp(dir=folder, prefix=".probe-")
    os.close(fd)
    os.unlink(probe)


def remove_entry(entry: Path) -> None:
    """Remove a cache entry found unusable after verification, so it is built again."""
    _remove(entry)


def remove_older_formats(folder: Path, current: int) -> None:
    """Remove the entries of `folder` whose meta says an earlier "format" than `current`: once
    the format is bumped no key leads to them. Entries being written (hidden temporaries) and
    folders without a readable manifest are left alone."""
    for other in folder.iterdir():
        if other.name.startswith("."):  # another process's entry being written
            continue
        try:
            meta = json.loads((other / "manifest.json").read_text(encoding="utf-8")).get("meta", {})
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(meta, dict) and isinstance(meta.get("format"), int) and meta["format"] < current:
            _remove(other)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():  # a link is removed, never what it leads to
        shutil.rmtree(path, ignore_errors=True)
    else:
        with suppress(OSError):
            path.unlink()
