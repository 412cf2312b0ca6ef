"""Model backends behind one narrow interface.

A backend serves one model: `generate(request)` returns its text for a chat request (greedy
by default), `capabilities` says what the model is and can do (context, parallel slots,
log-probabilities, size, adapter, identity for the call cache), `count_tokens` measures text with the
model's own tokenizer where the backend offers one (else tiktoken's cl100k), and `verify`
checks that the model loads (for `doctor`). Implementations: `openai` (an OpenAI-compatible
server: llama-server, vLLM, LM Studio), `ollama` (its native API), `embedded` (llama.cpp
in-process), `scripted` (tests and demos); `callcache.CachedBackend` wraps any of them.
"""

from __future__ import annotations

import contextvars
import math
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from cwread.errors import Interrupted

T = TypeVar("T")

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


CONNECT_TIMEOUT = 5.0  # seconds to reach a server: a local one answers at once


def call_timeout(prompt_tokens: int, max_tokens: int) -> float:
    """Seconds one model call may take when no --timeout (CWREAD_TIMEOUT) is set: 30 s, plus
    the prompt read at 100 tokens/s and the reply written at 10 tokens/s, a slow CPU server's
    pace; a server that hangs is reported in under a minute for a Finder call."""
    return 30.0 + prompt_tokens / 100 + max_tokens / 10


def new_timeout(seconds: float):
    """An HTTP timeout of `seconds` for a whole call, but only CONNECT_TIMEOUT to reach the server."""
    import httpx

    return httpx.Timeout(seconds, connect=CONNECT_TIMEOUT)


MAX_REPLY_BYTES = 8 * 2**20  # a server's reply to one call, at most: the longest real one is a few KB


class ReplyTooLarge(Exception):
    """A server's reply ran past MAX_REPLY_BYTES: read no further (a 300 MB reply once cost
    6-8 GB to parse)."""

    def __init__(self) -> None:
        super().__init__(f"it sent a reply of more than {MAX_REPLY_BYTES // 2**20} MiB to one call; refused")


def bound_reply(response) -> None:
    """An httpx response hook: the body is read through a counter that stops at MAX_REPLY_BYTES
    (ReplyTooLarge), and one that says it is larger is refused before it is read."""
    import httpx

    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_REPLY_BYTES:
        response.close()
        raise ReplyTooLarge()
    inner = response.stream

    class Bounded(httpx.SyncByteStream):
        def __iter__(self):
            read = 0
            for chunk in inner:
                read += len(chunk)
                if read > MAX_REPLY_BYTES:
                    raise ReplyTooLarge()
                yield chunk

        def close(self) -> None:
            inner.close()

    response.stream = Bounded()


def bounded_http_client(timeout: float):
    """An httpx client for a model server: `timeout` a call (new_timeout), its replies bounded
    (bound_reply)."""
    import httpx

    return httpx.Client(timeout=new_timeout(timeout), event_hooks={"response": [bound_reply]})


DEADLINE_GRACE = 1.0  # seconds past a call's timeout before its deadline ends the wait


# The cancellation of the run this thread works for (an MCP client that cancels or goes away):
# set, a model call being waited for ends at once with Interrupted, and an embedded generation
# stops at its next token. Threads a run starts take it with them (contextvars.copy_context).
_CANCEL: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("cwread_cancel", default=None)


@contextmanager
def cancellable(event: threading.Event) -> Iterator[None]:
    """Within the block, model calls end at once when `event` is set."""
    token = _CANCEL.set(event)
    try:
        yield
    finally:
        _CANCEL.reset(token)


def cancel_event() -> threading.Event | None:
    """The cancellation of the run this thread works for, if it can be cancelled."""
    return _CANCEL.get()


# Set by the CLI's Ctrl-C handler (`cli.entry`): a KeyboardInterrupt raised inside a C call
# (llama.cpp loading a model) can be swallowed there, and the wait for the next call would
# then never end; the wait looks here too.
INTERRUPTED = threading.Event()

CANCEL_POLL = 0.2  # seconds between looks at a cancellation (or Ctrl-C) while a call is out


class DeadlinePassed(Exception):
    """A call ran past its whole-call deadline (see `within`)."""


def within(seconds: float | None, call: Callable[[], T]) -> T:
    """`call()`, given at most `seconds` (plus DEADLINE_GRACE) in all (None: no deadline). An
    HTTP client's timeouts bound each read, so a server that sends its headers and then a byte
    a second outlasts them; here the call runs on a daemon thread, and past the deadline
    DeadlinePassed is raised while the call is left to end on its own (its next read fails or
    times out). Ctrl-C while waiting interrupts at once, as it cannot inside a C call."""
    outcome: dict[str, object] = {}
    finished = threading.Event()

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the waiting thread as it is
            outcome["error"] = exc
        finally:
            finished.set()

    threading.Thread(target=run, daemon=True, name="cwread-call").start()
    cancel = _CANCEL.get()
    limit = None if seconds is None else time.monotonic() + seconds + DEADLINE_GRACE
    while True:
        # never one long wait: a Ctrl-C that the kernel hands to another thread (llama.cpp's)
        # reaches Python only when the main thread wakes, so it wakes every CANCEL_POLL
        step = CANCEL_POLL
        if limit is not None:
            left = limit - time.monotonic()
            if left <= 0:
                raise DeadlinePassed(seconds)
            step = min(step, left)
        if finished.wait(step):
            break
        if INTERRUPTED.is_set():
            raise KeyboardInterrupt
        if cancel is not None and cancel.is_set():
            raise Interrupted("cancelled: the model call was left to end on its own")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


def too_slow_message(where: str, seconds: float) -> str:
    return (
        f"{where} answered but did not finish its reply within {seconds:.0f} s (the server is too slow); "
        "raise --timeout (CWREAD_TIMEOUT) if it is only slow, or use a faster server or a smaller model"
    )


def timeout_message(where: str, seconds: float) -> str:
    return (
        f"{where} did not answer within {seconds:.0f} s; raise --timeout (CWREAD_TIMEOUT) if it is "
        "only slow, or use a faster server or a smaller model"
    )


TOP_LOGPROBS = 200  # alternatives asked per token: enough to hold each label's first token
_ANSWER_OPENS = re.compile(r'(<answer>|"answer"\s*:\s*")\s*$')


def token_dicts(entries) -> list[dict]:
    """Client objects with .token/.logprob/.top_logprobs (openai's, ollama's) as plain dicts."""
    return [
        {
            "token": e.token,
            "logprob": e.logprob,
            "top_logprobs": [{"token": a.token, "logprob": a.logprob} for a in (e.top_logprobs or [])],
        }
        for e in entries or []
    ]


_ANSWER_STARTS = re.compile(r'<answer>\s*|"answer"\s*:\s*"')
_ANSWER_ENDS = {"<": re.compile(r"</answer>"), '"': re.compile(r'(?<!\\)"')}  # by how it opened


def answer_logprob(tokens: list[dict]) -> float | None:
    """The mean log-probability of the tokens of the reply's answer (after `<answer>` up to
    `</answer>`, or the JSON string after `"answer": "`), from an OpenAI-style logprobs list:
    how sure the model was of its words. None when the reply has no answer or no token of it
    came with a log-probability."""
    text, starts = "", []
    for entry in tokens:
        starts.append(len(text))
        text += entry.get("token") or ""
    opened = _ANSWER_STARTS.search(text)
    if opened is None:
        return None
    closed = _ANSWER_ENDS[opened.group(0)[0]].search(text, opened.end())
    end = closed.start() if closed else len(text)
    inside = [
        float(entry["logprob"])
        for entry, start, nxt in zip(tokens, starts, [*starts[1:], len(text)], strict=True)
        if nxt > opened.end() and start < end and entry.get("logprob") is not None and text[start:nxt].strip()
    ]
    return round(sum(inside) / len(inside), 4) if inside else None


def reply_scores(tokens: list[dict], request: GenerationRequest) -> dict:
    """Generation's score fields for what `request` asked, from its reply's OpenAI-style
    token log-probabilities: its labels' and its answer's."""
    return {
        "label_logprobs": label_logprobs(tokens, request.label_scores) if request.label_scores else (),
        "answer_logprob": answer_logprob(tokens) if request.answer_confidence else None,
    }


def label_logprobs(tokens: list[dict], labels: tuple[str, ...]) -> tuple[tuple[str, float], ...]:
    """Each label's log-probability at the first token of the reply's answer (after `<answer>`,
    or `"answer": "` in JSON), from an OpenAI-style logprobs list: [{"token", "top_logprobs":
    [{"token", "logprob"}]}]. The alternatives are the model's own, before any grammar, so a
    label sums the tokens that could begin it ("Y", "YE", "YES"); a label with none among them
    gets the lowest listed log-probability, an upper bound. () when the reply has no answer."""
    text = ""
    for entry in tokens:
        if _ANSWER_OPENS.search(text):
            options = [(t["token"], float(t["logprob"])) for t in entry.get("top_logprobs") or []]
            options = options or [(entry["token"], float(entry["logprob"]))]
            floor = min(lp for _, lp in options)
            scored = []
            for label in labels:
                starts = [lp for tok, lp in options if tok and label.startswith(tok)]
                if not starts:
                    total = floor
                else:
                    top = max(starts)  # log-sum-exp, exact for a single token
                    total = top + math.log(sum(math.exp(lp - top) for lp in starts))
                scored.append((label, total))
            return tuple(scored)
        text += entry["token"]
    return ()


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
