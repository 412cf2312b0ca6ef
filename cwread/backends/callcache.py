"""A cache of model calls: the same model, prompt and options give the stored reply.

Keyed by backend, model identity and every request field; one small JSON file per call under
`cache_root()/calls/`, written atomically. Greedy decoding makes a stored reply the reply.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

from cwread.backends import Backend, Capabilities, Generation, GenerationRequest
from cwread.cache import cache_root, cache_write_error, remove_entry, write_file_atomic

CALL_CACHE_VERSION = 1


class CachedBackend:
    """Wraps a backend; `generate` answers from the cache when it can."""

    def __init__(self, inner: Backend, directory: Path | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.directory = directory or cache_root() / "calls"
        self.hits = 0

    def _key(self, request: GenerationRequest) -> str:
        identity = {
            "v": CALL_CACHE_VERSION,
            "backend": self.inner.name,
            "model": self.inner.model,
            "model_id": self.capabilities.identity or None,
            "num_ctx": self.capabilities.context,
            **request.cache_key_fields(),
        }
        return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()

    def generate(self, request: GenerationRequest) -> Generation:
        key = self._key(request)
        path = self.directory / key[:2] / f"{key}.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            generation = Generation(**{**data, "cached": True, "seconds": 0.0})
            if not isinstance(generation.text, str):
                raise TypeError("text")
            self.hits += 1
            return generation
        except FileNotFoundError:
            pass
        except (OSError, ValueError, TypeError, AttributeError):  # damaged: asked again, then replaced
            remove_entry(path)
        generation = self.inner.generate(request)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_file_atomic(path, json.dumps({k: v for k, v in asdict(generation).items() if k != "cached"}))
        except OSError as exc:
            raise cache_write_error(exc, self.directory) from exc
        return generation

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    def verify(self) -> str | None:
        return self.inner.verify()

    def warm(self, notice=None, decisions_only: bool = False) -> None:
        self.inner.warm(notice, decisions_only)

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)
