"""Model backends behind one narrow interface.

A backend serves one model: `generate(request)` returns its text for a chat request (greedy
by default), `capabilities` says what the model is and can do (context, parallel slots,
log-probabilities, size, adapter, identity for the call cache), `count_tokens` measures text with the
model's own tokenizer where the backend offers one (else tiktoken's cl100k), and `verify`
checks that the model loads (for `doctor`). Implementations: `openai` (an OpenAI-compatible
server: llama-server, vLLM, LM Studio), `ollama` (its native API), `embedded` (llama.cpp
in-process), `scripted` (tests and demos); `callcache.CachedBackend` wraps any of them.
What their calls share is `transport` (timeouts, bounds, cancellation); what a reply's
log-probabilities say, `logprobs`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

DEFAULT_NUM_CTX = 8192  # tokens of context when neither the user nor the server gives one


@dataclass(frozen=True)
class TrainedAdapter:
    """A trained Finder adapter loaded on a model, with what its training fixed: the reply it
    was trained on (its Finder's default) and the keep threshold chosen on its held-out
    training rows; `answer_threshold`: the score under which none of an extractive answer's
    paragraphs is taken to hold the answer (chosen on dev data; None: it judges no answer);
    `shipped`: the one cwread ships (cwread/data/finder/)."""

    label: str  # NAME@VERSION
    reply: str
    keep_threshold: float
    answer_threshold: float | None = None
    shipped: bool = False


@dataclass(frozen=True)
class Capabilities:
    """What a backend's model is and can do, each field read by something: the pipeline's
    packing and Finder, the reading budget, the call cache, and the table of what has been
    measured about models (cwread.agents.model_facts), so nothing probes a backend for its own."""

    context: int = DEFAULT_NUM_CTX  # tokens the model runs with (packing)
    parallel: int = 1  # calls worth sending at once, the server's slots (the Finder)
    logprobs: bool = False  # label log-probabilities come with a reply (the scoring Finder)
    # the model's parameters where the server says (a GGUF's bytes in-process); None: unknown
    size: int | None = None
    adapted: bool = False  # a trained adapter is loaded on the model
    trained: TrainedAdapter | None = None  # that adapter, where what it was trained for is known
    identity: str = ""  # what, beyond backend and model name, tells its replies apart (call cache)


@dataclass(frozen=True)
class Decision:
    """A reply that is `opens`, one label (its score read at its first token), then `closes`
    ("<answer>YES</answer>"): a backend that can continue an assistant turn writes only the
    label's first token, after `opens` given as the turn's start, and puts the reply together
    (the same scores, at an eighth of the decoding: benchmarks/README.md, "Answers from the trained Finder")."""

    opens: str
    closes: str
    grammar: str  # GBNF of the label alone (its spellings)


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
    # labels whose log-probabilities the reply's answer should come with, where the backend can
    # give them (the Finder's YES/NO: a score to rank or threshold, not only a label)
    label_scores: tuple[str, ...] = ()
    # the mean log-probability of the reply's answer's tokens should come with it, where the
    # backend can give it (the model's confidence in an open answer, cwread.answer.support)
    answer_confidence: bool = False
    # the reply is a decision (label_scores' labels) in a fixed frame: see Decision
    decision: Decision | None = None

    @property
    def logprobs(self) -> bool:
        """Whether the reply's token log-probabilities are wanted."""
        return bool(self.label_scores) or self.answer_confidence

    def cache_key_fields(self) -> dict:
        extra = {"label_scores": list(self.label_scores)} if self.label_scores else {}
        if self.answer_confidence:
            extra["answer_confidence"] = True
        if self.decision is not None:  # a reply put together from one token: its own entries
            extra["decision"] = [self.decision.opens, self.decision.closes, self.decision.grammar]
        return {
            **extra,
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
    # the text is the reply schema's JSON (a request's `schema`), for the agents to read as tags
    structured: bool = False
    # (label, log-probability) at the answer, for a request's label_scores; () where not given
    label_logprobs: tuple[tuple[str, float], ...] = ()
    # the mean log-probability per token of the reply's answer, for a request's
    # answer_confidence; None where not given or the reply has no answer
    answer_logprob: float | None = None
    # where the server's time went, as it reports it (0: not reported): prompt tokens it
    # processed (a prompt-cache hit is not processed), and seconds reading and writing
    prefill_tokens: int = 0
    prefill_seconds: float = 0.0
    decode_seconds: float = 0.0
    # what computed the reply inside a backend that has more than one way ("llama.cpp", "ONNX
    # Runtime (int8)" for the embedded model's decisions); "" where the backend has one
    runtime: str = ""

    def __post_init__(self) -> None:  # the call cache reads them back as JSON lists
        object.__setattr__(self, "label_logprobs", tuple((str(k), float(v)) for k, v in self.label_logprobs))


def llamacpp_timings(timings) -> dict:
    """Generation's time fields from llama.cpp's `timings` ({} where the reply has none)."""
    if not isinstance(timings, dict):
        return {}
    try:
        return {
            "prefill_tokens": int(timings.get("prompt_n") or 0),
            "prefill_seconds": float(timings.get("prompt_ms") or 0) / 1000,
            "decode_seconds": float(timings.get("predicted_ms") or 0) / 1000,
        }
    except (TypeError, ValueError):
        return {}


def label(backend: Backend) -> str:
    """How a backend and its model are named in traces, reports and `doctor`: "name:model"."""
    return f"{backend.name}:{backend.model}"


class Backend(Protocol):
    name: str  # "openai", "ollama", "embedded", "scripted"
    model: str

    @property
    def capabilities(self) -> Capabilities: ...

    def generate(self, request: GenerationRequest) -> Generation: ...

    def count_tokens(self, text: str) -> int: ...

    def verify(self) -> str | None:
        """What loading the model once says (for `doctor`); None where serving it is the check."""
        ...

    def warm(self, notice: Callable[[str], None] | None = None, decisions_only: bool = False) -> None:
        """Start loading the model in the background where a call would wait for it (in-process),
        so that the first call waits less; nothing where a server holds it. `notice` hears
        what takes seconds the first time (none: nothing said, as with --quiet);
        `decisions_only`: the run asks it for decisions alone (GenerationRequest.decision)."""
        ...
