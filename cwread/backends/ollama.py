"""Ollama through its official Python client on the native `/api/chat` endpoint.

`options.num_ctx` is always sent (Ollama's default window silently truncates long prompts),
with temperature, seed, num_predict (each agent's own) and stop; thinking is off; `stream` is
false. When a request carries a JSON schema it goes in `format` (structured output) and the
JSON reply is turned back into the `<reason>/<answer>` text the parser reads, unless the model
was trained to write the tags itself: a model with an ADAPTER, or tagged `:trained`.

Ollama serves one request at a time unless its server runs with OLLAMA_NUM_PARALLEL, so
that (when set here too) or `--workers` sizes the calls sent at once.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from cwread.backends import DEFAULT_NUM_CTX, Capabilities, Generation, GenerationRequest
from cwread.backends.logprobs import reply_scores, token_dicts
from cwread.backends.provider import (
    DEFAULT_MODELS,
    AutoClaim,
    BackendSettings,
    Built,
    ModelRef,
    Provider,
    models_said,
    places_said,
)
from cwread.backends.transport import (
    DeadlinePassed,
    ReplyTooLarge,
    bound_reply,
    call_timeout,
    new_timeout,
    timeout_message,
    too_slow_message,
    within,
)
from cwread.errors import InputError, ModelError

OLLAMA_TOP_LOGPROBS = 20  # the most alternatives a token the server gives


@dataclass(frozen=True)
class OllamaSettings:
    """Ollama's own settings: `host` (OLLAMA_HOST, else the client's default) and `parallel`,
    the calls its server serves at once (OLLAMA_NUM_PARALLEL, the server's own setting
    mirrored here, else one). Its environment is read here and nowhere else."""

    host: str | None = None
    parallel: int | None = None

    def resolved(self) -> OllamaSettings:
        try:
            parallel = max(1, int(os.environ.get("OLLAMA_NUM_PARALLEL", "1")))
        except ValueError:
            parallel = 1
        return OllamaSettings(
            host=self.host or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST,
            parallel=self.parallel or parallel,
        )

    def refuse(self, backend: str) -> None:
        """Nothing to refuse: the host is also where `auto` looks for Ollama."""


LONGEST_REPLY = 512  # tokens: above the most an agent asks for (the Interpreter's 480)
DEFAULT_HOST = "http://127.0.0.1:11434"  # the ollama client's default when OLLAMA_HOST is unset


def modelfile_hint(model: str) -> str:
    if model.startswith("cwread-"):
        agent = model.removeprefix("cwread-")
        return (
            f"create it with `ollama create {model} -f modelfiles/{agent}.Modelfile` "
            "(`cwread modelfiles --out modelfiles` writes the Modelfiles)"
        )
    return f"pull it with `ollama pull {model}`"


class OllamaBackend:
    name = "ollama"

    def __init__(
        self,
        model: str,
        host: str | None = None,
        num_ctx: int = DEFAULT_NUM_CTX,
        timeout: float | None = None,
        concurrency: int | None = None,
        structured: bool | None = None,
        client=None,
        **client_kwargs,
    ) -> None:
        self.model = model
        self.host = host or DEFAULT_HOST
        # Ollama holds no grammar (a JSON schema instead) and says nothing of the model's size
        self.capabilities = Capabilities(context=num_ctx, parallel=concurrency or 1, logprobs=True)
        self._structured = structured  # None: decided on the first call, by whether it was trained
        try:  # the client parses the address, and importing it makes one from OLLAMA_HOST
            import ollama

            # the client takes one timeout for every call: None gives the longest call's, a full
            # context and the longest reply an agent asks for
            self.timeout = timeout or call_timeout(num_ctx, LONGEST_REPLY)
            self._client = client or ollama.Client(
                host=self.host,
                timeout=new_timeout(self.timeout),
                event_hooks={"response": [bound_reply]},  # a reply of a few MB at most
                **client_kwargs,
            )
        except ValueError as exc:  # a port out of range, a broken IPv6 address
            raise InputError(
                f"OLLAMA_HOST={self.host} is not a usable address ({exc}); give one like http://127.0.0.1:11434"
            ) from None

    @property
    def structured(self) -> bool:
        if self._structured is None:
            self._structured = not self.trained()
        return self._structured

    def trained(self) -> bool:
        """Whether the model was trained to write cwread's tags: tagged `:trained`, or built
        with an ADAPTER (a LoRA from `python -m training export`). The name is no sign: the
        Modelfiles create the untrained base as `cwread-finder` too."""
        if self.model.partition(":")[2].endswith("trained"):
            return True
        try:
            shown = within(self.timeout, lambda: self._client.show(self.model))
        except Exception as exc:
            raise self._errors(exc) from exc
        modelfile = getattr(shown, "modelfile", None) or ""
        return any(line.upper().startswith("ADAPTER ") for line in modelfile.splitlines())

    def _errors(self, exc: BaseException) -> ModelError:
        import httpx
        import ollama

        if isinstance(exc, ollama.ResponseError):
            if exc.status_code == 404 or "not found" in str(exc.error).lower():
                return ModelError(f"Ollama has no model {self.model!r}: {modelfile_hint(self.model)}")
            return ModelError(f"Ollama failed on {self.model!r} (HTTP {exc.status_code}): {exc.error}")
        if isinstance(exc, DeadlinePassed):
            return ModelError(too_slow_message(f"Ollama at {self.host} ({self.model})", self.timeout))
        if isinstance(exc, ReplyTooLarge):
            return ModelError(f"Ollama ({self.model}): {exc}")
        if isinstance(exc, httpx.TimeoutException):
            return ModelError(timeout_message(f"Ollama at {self.host} ({self.model})", self.timeout))
        if isinstance(exc, (ConnectionError, httpx.TransportError)):
            return ModelError(
                f"Ollama is not reachable at {self.host}: start it with `ollama serve`, "
                "set OLLAMA_HOST, or use the embedded backend"
            )
        return ModelError(f"Ollama call failed: {type(exc).__name__}: {exc}")

    def generate(self, request: GenerationRequest) -> Generation:
        options = {
            "num_ctx": self.capabilities.context,
            "temperature": request.temperature,
            "seed": request.seed,
            "num_predict": request.max_tokens,
        }
        if request.stop:
            options["stop"] = list(request.stop)
        if request.repeat_penalty != 1.0:
            options["repeat_penalty"] = request.repeat_penalty
        use_schema = self.structured and request.schema is not None
        # Ollama 0.12.11+ gives log-probabilities (at most 20 alternatives); older servers ignore it
        scoring = {}
        if request.logprobs:
            scoring = {"logprobs": True, "top_logprobs": OLLAMA_TOP_LOGPROBS if request.label_scores else 1}
        t0 = time.perf_counter()
        try:
            response = within(
                self.timeout,
                lambda: self._client.chat(
                    model=self.model,
                    messages=[{"role": role, "content": content} for role, content in request.messages],
                    options=options,
                    format=request.schema if use_schema else None,
                    think=False,
                    stream=False,
                    **scoring,
                ),
            )
        except Exception as exc:  # mapped to one actionable message
            raise self._errors(exc) from exc
        text = response.message.content or ""
        tokens = token_dicts(getattr(response, "logprobs", None)) if request.logprobs else []
        return Generation(
            text=text,
            structured=use_schema,
            prompt_tokens=int(response.prompt_eval_count or 0),
            completion_tokens=int(response.eval_count or 0),
            seconds=time.perf_counter() - t0,
            **reply_scores(tokens, request),
            prefill_tokens=int(response.prompt_eval_count or 0),  # Ollama counts only what it read
            prefill_seconds=(response.prompt_eval_duration or 0) / 1e9,
            decode_seconds=(response.eval_duration or 0) / 1e9,
        )

    def available_models(self) -> set[str]:
        """Names the server has (with and without the `:latest` tag); ModelError if unreachable."""
        try:
            listed = within(self.timeout, self._client.list)
        except Exception as exc:
            raise self._errors(exc) from exc
        names: set[str] = set()
        for m in listed.models:
            name = m.model or ""
            names.add(name)
            names.add(name.removesuffix(":latest"))
        return names

    def verify(self) -> None:
        return None  # Ollama listed the model: it serves it

    def warm(self, notice=None, decisions_only: bool = False) -> None:
        return None  # Ollama loads the model on the first call, in its own process

    def count_tokens(self, text: str) -> int:
        from cwread.text.tokens import count_tokens

        return count_tokens(text)


def _build(settings: BackendSettings, wanted: dict[str, ModelRef]) -> Built:
    """An Ollama backend for each agent in `wanted`, at its host (`ollama:MODEL@URL`, else
    OLLAMA_HOST); ModelError when a server lacks the model."""
    if settings.constraint == "grammar":
        raise InputError("Ollama takes no grammar: the constraint must be auto, json or none")
    own = settings.section(OllamaSettings)
    kwargs = {
        "num_ctx": settings.num_ctx or DEFAULT_NUM_CTX,
        "timeout": settings.timeout,
        "structured": {"json": True, "none": False}.get(settings.constraint or "auto"),
        "concurrency": settings.workers or own.parallel,
    }
    backends: dict[str, OllamaBackend] = {}
    served: dict[str, set[str]] = {}  # host -> the models it has, asked once
    for role, ref in wanted.items():
        backend = OllamaBackend(ref.model_for(role), host=ref.url or own.host, **kwargs)
        if backend.host not in served:
            served[backend.host] = backend.available_models()
        if backend.model not in served[backend.host]:
            raise ModelError(f"Ollama at {backend.host} has no model {backend.model!r}: {modelfile_hint(backend.model)}")
        backends[role] = backend
    where = places_said({role: b.host for role, b in backends.items()})
    return Built(backends, f"ollama {where} ({models_said(backends)})")


def _notes(backend) -> list[str]:
    return [
        f"Ollama serves one call at a time unless its server runs with OLLAMA_NUM_PARALLEL=N; "
        f"cwread sends {backend.capabilities.parallel} Finder call(s) at once (set OLLAMA_NUM_PARALLEL "
        "here to the server's value, or set workers)"
    ]


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def refused_here(host: str | None) -> bool:
    """Whether nothing listens at a loopback address: a TCP connect refused at once. Then the
    Ollama client, a third of a second to import on every run, need not be made. Any other
    outcome (another machine, a timeout, an address the client reads otherwise) says nothing."""
    text = (host or "").strip() or DEFAULT_HOST
    scheme, sep, _ = text.partition("://")
    if not sep:  # the client's own reading: no scheme is http on Ollama's port
        text, default_port = "http://" + text, 11434
    elif scheme in ("http", "https"):
        default_port = 80 if scheme == "http" else 443
    else:
        return False
    import socket  # here: a run that asks no server loads none

    try:
        parts = urlsplit(text)
        name, port = parts.hostname or "127.0.0.1", parts.port or default_port
    except ValueError:
        return False
    if name not in LOOPBACK:
        return False
    try:
        with socket.create_connection((name, port), timeout=0.5):
            return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


def _auto(settings: BackendSettings, wanted: dict[str, ModelRef]) -> AutoClaim:
    """`auto` runs the agents on Ollama when its server answers and serves their models."""
    host = settings.section(OllamaSettings).host
    if refused_here(host):
        return AutoClaim(False, f"; no Ollama server answers at {host}")
    try:
        have = OllamaBackend(DEFAULT_MODELS["finder"], host=host, timeout=2.0).available_models()
    except ModelError:
        return AutoClaim(False, f"; no Ollama server answers at {host}")
    missing = [m for m in (ref.model_for(role) for role, ref in wanted.items()) if m not in have]
    if missing:
        return AutoClaim(False, f"; Ollama runs but lacks {', '.join(missing)}")
    return AutoClaim(True)


PROVIDER = Provider(
    "ollama",
    "an Ollama server",
    _build,
    OllamaSettings,
    adapter_hint="with Ollama, put the adapter in a Modelfile (ADAPTER) and name it as the Finder's model",
    notes=_notes,
    auto=_auto,
    auto_order=30,
)
