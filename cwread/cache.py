"""The on-disk cache: plain files (`.npy`, JSON) in directories written atomically.

Every cache entry is a directory holding its files and a `manifest.json` written last, which
lists each file's size and sha256. An entry is used only when its manifest verifies; anything
partial, corrupt or from another format version is removed and rebuilt, never trusted.
An entry is built in a temporary sibling directory and renamed into place, so an interrupted
run leaves no half-written entry behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from cwread.errors import InputError

CACHE_FORMAT = 1


def cache_root() -> Path:
    """`$CWREAD_CACHE_DIR`, else `$XDG_CACHE_HOME/cwread`, else `~/.cache/cwread`."""
    explicit = os.environ.get("CWREAD_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "cwread"


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_entry(entry: Path, meta_check: Callable[[dict], bool] | None = None) -> dict | None:
    """The manifest's `meta` of a verified entry, or None (and the entry removed) if unusable."""
    manifest_path = entry / "manifest.json"
    if not manifest_path.is_file():
        if entry.exists():
            _remove(entry)
        return None
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if manifest.get("format") != CACHE_FORMAT:
            raise ValueError("format")
        for name, expect in manifest["files"].items():
            path = entry / name
            if path.stat().st_size != expect["size"] or file_sha256(path) != expect["sha256"]:
                raise ValueError(name)
        meta = manifest.get("meta", {})
        if meta_check is not None and not meta_check(meta):
            raise ValueError("meta")
        return meta
    except (OSError, ValueError, KeyError, TypeError):
        _remove(entry)
        return None


def write_entry(entry: Path, build: Callable[[Path], dict]) -> dict:
    """Build an entry: `build(tmpdir)` writes its files and returns `meta`; then commit it.

    Returns the meta. If another process committed the same entry meanwhile, theirs is kept.
    """
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


def write_file_atomic(path: Path, data: str | bytes) -> None:
    """Write `data` to `path` through a temporary sibling and a rename, so no reader ever
    sees half a file; the temporary is removed if anything fails. The folder must exist."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def write_output_file(path: str, text: str, option: str) -> None:
    """Write a file the user asked for (`option` names the flag) atomically; InputError if it
    cannot be written."""
    try:
        write_file_atomic(Path(path), text)
    except OSError as exc:
        raise InputError(f"cannot write {option} {path}: {exc.strerror or exc}") from None


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with suppress(OSError):
            path.unlink()
