"""Model backends behind one narrow interface.

A backend serves one model: `generate(request)` returns its text for a chat request (greedy
by default), `context_size` is the window the model runs with, `count_tokens` measures text
with the model's own tokenizer where the backend offers one (else tiktoken's cl100k).
Implementations: `ollama` (native API), `embedded` (llama.cpp in-process), `scripted` (tests).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class GenerationRequest:
    """One chat call. `grammar` is GBNF (llama.cpp); `schema` a JSON schema (Ollama `format`)."""

    messages: tuple[tuple[str, str], ...]  # (role, content)
    max_tokens: int = 256
    temperature: float = 0.0
    seed: int = 0
    stop: tuple[str, ...] = ()
    grammar: str | None = None
    schema: dict | None = field(default=None, hash=False, compare=False)
    repeat_penalty: float = 1.0  # > 1 discourages repeating recent tokens (loops)

    def cache_key_fields(self) -> dict:
        return {
            "messages": [list(m) for m in self.messages],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
            "stop": list(self.stop),
            "grammar": self.grammar,
            "schema": self.schema,
            "repeat_penalty": self.repeat_penalty,
        }


@dataclass(frozen=True)
class Generation:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    cached: bool = False  # answered from cwread's call cache


class Backend(Protocol):
    name: str  # "ollama", "embedded", "scripted"
    model: str
    concurrency: int  # calls worth running at once
    # optional: `small = True` for a model too small to write answers (answers go extractive)

    def generate(self, request: GenerationRequest) -> Generation: ...

    def context_size(self) -> int: ...

    def count_tokens(self, text: str) -> int: ...
