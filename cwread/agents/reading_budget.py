"""How much the Finder reads: a budget in prompt tokens, by default what the model reads in
about FINDER_SECONDS at the rate measured for it on this machine.

On 2 CPU cores a 1.5B model reads about 60 prompt tokens a second, so reading 24 segments
would take a quarter of an hour; a GPU reads thousands, and the segment count caps it first.
The rate is measured on the Finder's own calls (prompt tokens, as cwread counts them, per
second of call), stored per model and machine, and kept while new calls agree with it within
a factor of RATE_DRIFT, so the same question reads the same segments from one run to the next.
"""

from __future__ import annotations

import json
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from cwread.cache import cache_root, write_file_atomic

FINDER_SECONDS = 30.0  # the Finder's share of a question's minute on a slow machine
MIN_MEASURED_TOKENS = 128  # a call reading fewer says more about overheads than about reading
RATE_DRIFT = 2.0  # a stored rate is measured again when calls run this much faster or slower


def rates_path() -> Path:
    return cache_root() / "reading-rates.json"


def rate_key(backend) -> str:
    """Whose rate: the backend and its model (and what tells that model apart: the server's
    address, the GGUF file), on this machine's cores."""
    identity = backend.capabilities.identity
    return f"{backend.name}|{backend.model}|{f'{identity}|' if identity else ''}{os.cpu_count() or 1} cpus"


def reading_note(finder) -> str:
    """What finder.read_tokens=auto gives the Finder on this machine (for `doctor`)."""
    rate = stored_rate(finder)
    if rate is None:
        return (
            f"the Finder's reading rate for {finder.model} is not measured yet: the first question "
            f"measures it (finder.read_tokens=auto reads about {FINDER_SECONDS:.0f} s)"
        )
    return (
        f"the Finder reads {rate:,.0f} prompt tokens/s with {finder.model} on this machine: "
        f"finder.read_tokens=auto reads about {int(rate * FINDER_SECONDS):,} tokens a question"
    )


def _stored() -> dict:
    try:
        data = json.loads(rates_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none yet, or damaged: measured again
        return {}
    return data if isinstance(data, dict) else {}


def stored_rate(backend) -> float | None:
    entry = _stored().get(rate_key(backend))
    try:
        rate = float(entry["tokens_per_second"])
    except (TypeError, KeyError, ValueError):
        return None
    return rate if rate > 0 else None


def store_rate(backend, rate: float) -> None:
    data = _stored()
    data[rate_key(backend)] = {"tokens_per_second": round(rate, 2)}
    try:
        rates_path().parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(rates_path(), json.dumps(data, indent=1, sort_keys=True))
    except OSError:  # a budget measured again next time is no reason to fail the question
        pass


@dataclass
class ReadingBudget:
    """Prompt tokens the Finder may read. `tokens` None with `rate_of` set: auto, known once
    a call is measured (the first segment is always read); with neither: no cap."""

    tokens: int | None = None
    rate_of: object = None  # the Finder backend whose measured rate sets an auto budget
    seconds: float = FINDER_SECONDS
    rate: float | None = None
    _seen: list[float] = field(default_factory=list)
    _first: bool = False  # the rate was first measured in this run, on its first call

    @classmethod
    def auto(cls, backend, seconds: float = FINDER_SECONDS) -> ReadingBudget:
        return cls(rate_of=backend, seconds=seconds, rate=stored_rate(backend))

    def limit(self) -> int | None:
        if self.tokens is not None:
            return self.tokens
        if self.rate is None:
            return None
        return max(1, int(self.seconds * self.rate))

    def observe(self, tokens: int, seconds: float, cached: bool) -> None:
        """A Finder call read `tokens` in `seconds`: an auto budget with no rate takes its own."""
        if self.rate_of is None or self.tokens is not None or cached or seconds <= 0:
            return
        if tokens < MIN_MEASURED_TOKENS:
            return
        self._seen.append(tokens / seconds)
        if self.rate is None:
            self.rate, self._first = tokens / seconds, True
            store_rate(self.rate_of, self.rate)

    def settle(self) -> None:
        """After the Finder, for the next question (this one's budget stays what it was): a
        rate first measured on one call (slow with a model just loaded) is replaced by the
        median of this run's calls, and a stored rate they disagree with past RATE_DRIFT too."""
        if self.rate_of is None or not self._seen or self.rate is None:
            return
        now = statistics.median(self._seen)
        if self._first or not 1 / RATE_DRIFT <= now / self.rate <= RATE_DRIFT:
            store_rate(self.rate_of, now)

    def why(self) -> str:
        if self.tokens is not None:
            return f"finder.read_tokens={self.tokens:,}"
        return (
            f"about {self.seconds:.0f} s of reading at the {self.rate:,.0f} tokens/s measured for "
            f"{self.rate_of.model} on this machine (finder.read_tokens sets another)"
        )
