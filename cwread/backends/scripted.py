"""A backend with queued replies, for tests and demos (like simonw/llm's mock model).

It is a provider like any other (`PROVIDER`), not registered by cwread itself: a test
registers it (`PROVIDERS["scripted"] = PROVIDER`) and puts a ScriptedBackend under a script's
name in `SCRIPTS`; `--backend scripted` then runs the scripts named "finder" and
"interpreter", and `--finder-model scripted:NAME` the one named NAME.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from cwread.backends import DEFAULT_NUM_CTX, Capabilities, Generation, GenerationRequest, TrainedAdapter
from cwread.backends.provider import BackendSettings, Built, ModelRef, Provider
from cwread.errors import ModelError

Reply = str | Generation | Callable[[GenerationRequest], str | Generation] | BaseException


class ScriptedBackend:
    """Answers each call with the next queued reply (a string, a Generation to give label
    log-probabilities or an answer's mean log-probability too, a function of the request, or
    an exception to raise); records every request it receives. `logprobs`: it says it gives
    label log-probabilities (the scoring Finder, the model's support check), as a test that
    scripts them sets."""

    name = "scripted"

    def __init__(
        self,
        replies: list[Reply] | None = None,
        model: str = "scripted",
        context: int = DEFAULT_NUM_CTX,
        default: Reply | None = None,
        concurrency: int = 1,
        size: int | None = None,
        adapted: bool = False,
        logprobs: bool = False,
        trained: TrainedAdapter | None = None,
    ) -> None:
        self.model = model
        self.concurrency = concurrency
        self.context = context
        self.size = size  # parameters: below 300M, cwread.agents.model_facts takes it for a small model
        self.adapted = adapted or trained is not None
        self.trained = trained  # a trained adapter it stands for (the answer's paragraph judge)
        self.logprobs = logprobs
        self._queue: deque[Reply] = deque(replies or [])
        self._default = default
        self._lock = threading.Lock()
        self.requests: list[GenerationRequest] = []

    def enqueue(self, *replies: Reply) -> ScriptedBackend:
        with self._lock:
            self._queue.extend(replies)
        return self

    def generate(self, request: GenerationRequest) -> Generation:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                reply = self._queue.popleft()
            elif self._default is not None:
                reply = self._default
            else:
                raise ModelError("scripted backend: no reply queued")
        if isinstance(reply, BaseException):
            raise reply
        made = reply(request) if callable(reply) else reply
        given = made if isinstance(made, Generation) else Generation(made)
        prompt = "".join(content for _, content in request.messages)
        return Generation(
            text=given.text,
            structured=given.structured,  # a reply may stand for a server's schema JSON
            prompt_tokens=self.count_tokens(prompt),
            completion_tokens=self.count_tokens(given.text),
            seconds=given.seconds,  # a reply may say how long it "took" (reading budgets)
            label_logprobs=given.label_logprobs if request.label_scores else (),
            answer_logprob=given.answer_logprob if request.answer_confidence else None,
        )

    @property
    def capabilities(self) -> Capabilities:  # from attributes a test may change between calls
        return Capabilities(
            context=self.context,
            parallel=self.concurrency,
            logprobs=self.logprobs,
            size=self.size,
            adapted=self.adapted,
            trained=self.trained,
        )

    def verify(self) -> None:
        return None

    def warm(self, notice=None, decisions_only: bool = False) -> None:
        return None

    def count_tokens(self, text: str) -> int:
        return len(text.split())


SCRIPTS: dict[str, ScriptedBackend] = {}  # by name: what a test put there


def _build(settings: BackendSettings, wanted: dict[str, ModelRef]) -> Built:
    """The script each agent names (by default, the one named after its role)."""
    backends = {}
    for role, ref in wanted.items():
        name = ref.model if ref.provider == "scripted" and ref.model else role
        if name not in SCRIPTS:
            raise ModelError(f"no script named {name!r}")
        backends[role] = SCRIPTS[name]
    return Built(backends, "scripted")


PROVIDER = Provider("scripted", "queued replies, for tests", _build)
