"""What has been measured about models, in one table, each fact with the measurement it rests
on. Backends say what a model is (its size, whether an adapter is loaded: `Capabilities`);
this table says what follows for cwread, and the plan (cwread.run.pipeline) reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cwread.backends import Backend, Capabilities

SMALL_MODEL_PARAMS = 300_000_000  # below this (or a GGUF below this many bytes) a model is small


@dataclass(frozen=True)
class ModelFact:
    """A measured fact: what it says of a model, when it holds, and the measurement."""

    says: str
    holds: Callable[[Capabilities], bool]
    measured: str


def _small(capabilities: Capabilities) -> bool:
    return capabilities.size is not None and capabilities.size < SMALL_MODEL_PARAMS


JUDGES_AT_CHANCE = "judges at chance"
KEEPS_NEARLY_ALL = "keeps nearly all"
READS_WHEN_ASKED = "reads when asked"

FACTS: dict[str, ModelFact] = {
    JUDGES_AT_CHANCE: ModelFact(
        "too small to write answers or judge options and claims: answers go extractive and "
        "options and claims get no verdict",
        _small,
        "SmolLM2-135M answered 18.8% [7-43] of QuALITY's four-option questions, below chance: "
        "benchmarks/results/quality-embedded.md",
    ),
    KEEPS_NEARLY_ALL: ModelFact(
        "as a Finder keeps nearly every segment it reads, so its calls cannot change the answer",
        # a trained adapter may filter, so it is asked
        lambda capabilities: _small(capabilities) and not capabilities.adapted,
        "it kept 99.7% on FairytaleQA dev: benchmarks/results/fairytale-finder-untrained.md",
    ),
    READS_WHEN_ASKED: ModelFact(
        "with the Finder adapter cwread ships puts more gold first than the retriever but reads about "
        "1-2 s a segment on 2 cores, too slow for every question for what it changes: it reads when asked",
        lambda capabilities: _small(capabilities) and capabilities.trained is not None and capabilities.trained.shipped,
        "gold first in 36 of 48 dev-novel questions against the rank's 28, +8 [+2, +15], "
        "benchmarks/results/lane-SUMMARY.md; reading with it moved token-F1 23.5 to 25.4 on 40 "
        "fairytale dev records, at 34 s a record, benchmarks/README.md; 32 segments of The Moonstone "
        "in its 59 s read budget, 21 as shipped before it ran prepared for the CPU, benchmarks/README.md; "
        "with its decisions off llama.cpp, 0.9 s to judge a Moonstone segment and 3-4 s more to write "
        "a kept one's clue (28 s for 32 segments, none kept; 69 s for 33, 11 kept), benchmarks/README.md",
    ),
}


def holds(fact: str, backend: Backend) -> bool:
    """Whether `fact` (a key of FACTS) holds for the model `backend` serves."""
    return FACTS[fact].holds(backend.capabilities)


def facts_of(backend: Backend) -> tuple[str, ...]:
    """The facts that hold for `backend`'s model, in table order (for `doctor`)."""
    return tuple(name for name, fact in FACTS.items() if fact.holds(backend.capabilities))
