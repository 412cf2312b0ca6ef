"""OpenAI-compatible chat completions through the `openai` client: llama.cpp's llama-server,
vLLM, LM Studio, llamafile, Ollama's /v1.

Base URL and key follow the client's conventions (`OPENAI_BASE_URL`, `OPENAI_API_KEY`); a
local server needs no key. What the server is decides the output constraint: a llama.cpp
server (models `owned_by` "llamacpp") takes cwread's GBNF grammar in `grammar`, so a quote can
only be a sentence of its paragraph; any other gets the JSON schema in `response_format` and
its reply is checked after the fact. llama-server's `/props` also gives its parallel slots
(calls worth running at once) and the context of one slot.
"""

from __future__ import annotations

import os
import time
import urllib.parse
from dataclasses import dataclass

from cwread.backends import DEFAULT_NUM_CTX, Capabilities, Generation, GenerationRequest, llamacpp_timings
from cwread.backends.logprobs import TOP_LOGPROBS, reply_scores, token_dicts
from cwread.backends.provider import (
    AutoClaim,
    BackendSettings,
    Built,
    ModelRef,
    Provider,
    described,
    models_said,
    places_said,
)
from cwread.backends.transport import (
    DeadlinePassed,
    ReplyTooLarge,
    bounded_http_client,
    call_timeout,
    new_timeout,
    timeout_message,
    too_slow_message,
    within,
)
from cwread.errors import InputError, ModelError, keep_secret

DEFAULT_CONCURRENCY = 4  # servers that do not say how many calls they serve at once
NO_KEY = "no-key"  # local servers ignore the key; the client insists on one
INFO_TIMEOUT = 10.0  # seconds for the server's model list and /props


def json_schema_format(schema: dict) -> dict:
    """An OpenAI-style `response_format` for cwread's reply schema."""
    return {"type": "json_schema", "json_schema": {"name": "cwread_reply", "schema": schema}}


@dataclass(frozen=True)
class ServerInfo:
    """What an OpenAI-compatible server says about itself (None where it does not say)."""

    models: tuple[str, ...]
    owned_by: str  # of the first model: "llamacpp" for llama.cpp's server, "vllm", ...
    slots: int | None = None  # parallel slots (llama-server)
    context: int | None = None  # tokens one slot holds (llama-server)
    params: int | None = None  # model parameters (llama-server)

    @property
    def llamacpp(self) -> bool:
        return self.owned_by == "llamacpp"


@dataclass(frozen=True)
class OpenAISettings:
    """An OpenAI-compatible server's own settings: `base_url` (OPENAI_BASE_URL), a second
    server for the Finder alone, `finder_base_url` (CWREAD_FINDER_BASE_URL: llama-server
    serves one model, so a trained Finder is a server of its own with --lora), and `api_key`
    (OPENAI_API_KEY; local servers need none). Its environment is read here and nowhere else."""

    base_url: str | None = described(
        None, "OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 for llama-server [env: OPENAI_BASE_URL]."
    )
    finder_base_url: str | None = described(
        None,
        "A second server for the Finder alone (a trained Finder: llama-server with --lora); the Interpreter "
        "stays at base_url [env: CWREAD_FINDER_BASE_URL].",
    )
    api_key: str | None = described(None, "Key for that server [env: OPENAI_API_KEY; local servers need none].")

    def resolved(self) -> OpenAISettings:
        api_key = self.api_key or os.environ.get("OPENAI_API_KEY") or None
        keep_secret(api_key)  # never printed: not in a message, the trace or doctor
        return OpenAISettings(
            base_url=self.base_url or os.environ.get("OPENAI_BASE_URL") or None,
            finder_base_url=self.finder_base_url or os.environ.get("CWREAD_FINDER_BASE_URL") or None,
            api_key=api_key,
        )

    def refuse(self, backend: str) -> None:
        """InputError when a setting only this backend takes is given for `backend`."""
        if self.finder_base_url and backend != "openai":
            raise InputError("finder_base_url applies to the openai backend (with base_url for the Interpreter)")


def base_url_from(url: str | None, flag: str = "--base-url") -> str | None:
    """A server's base URL (as OpenAISettings.resolved() gives it, the environment read)
    checked, without a trailing slash."""
    if not url:
        return None
    if not url.startswith(("http://", "https://")):
        raise InputError(f"{flag} must start with http:// or https://, got {url!r}")
    if any(ord(c) < 0x20 or ord(c) == 0x7F or c.isspace() for c in url):
        raise InputError(f"{flag} holds a control character or a space: {url!r}")
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018  (a bad port raises here)
    except ValueError as exc:
        raise InputError(f"{flag} is not a URL ({exc}): {url!r}") from None
    if not parts.hostname:
        raise InputError(f"{flag} names no host: {url!r}")
    return url.rstrip("/")


class OpenAIBackend:
    name = "openai"

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None = None,
        num_ctx: int | None = None,
        timeout: float | None = None,
        concurrency: int | None = None,
        constraint: str = "auto",
        info: ServerInfo | None = None,
        http_client=None,
    ) -> None:
        import openai

        self.base_url = base_url.rstrip("/")
        self.timeout = timeout  # None: scaled to each call's tokens (`call_timeout`)
        self._http = http_client or new_http_client(INFO_TIMEOUT)
        key = api_key or NO_KEY
        # no retries: a server that timed out or refused once does the same again, doubling the wait
        self._client = openai.OpenAI(
            base_url=self.base_url, api_key=key, timeout=INFO_TIMEOUT, max_retries=0, http_client=self._http
        )
        self.model = model
        self.info = info or self.server_info()
        if self.info.llamacpp:
            self.constraint = "grammar" if constraint == "auto" else constraint
        else:
            self.constraint = "json" if constraint == "auto" else constraint
        self.capabilities = Capabilities(
            context=num_ctx or self.info.context or DEFAULT_NUM_CTX,
            parallel=concurrency or self.info.slots or DEFAULT_CONCURRENCY,
            logprobs=True,  # where the server gives them; a reply without them has no score
            size=self.info.params,
            # another server or constraint may answer the same prompt otherwise
            identity=f"{self.base_url}|{self.constraint}",
        )

    def _errors(self, exc: BaseException, waited: float = INFO_TIMEOUT) -> ModelError:
        import openai

        where = f"the server at {self.base_url}"
        if isinstance(exc, DeadlinePassed):
            return ModelError(too_slow_message(where, waited))
        if isinstance(exc, ReplyTooLarge):
            return ModelError(f"{where}: {exc}")
        if isinstance(exc, openai.APITimeoutError):
            return ModelError(timeout_message(where, waited))
        if isinstance(exc, openai.APIConnectionError):
            return ModelError(
                f"no OpenAI-compatible server answers at {self.base_url}: start one (e.g. "
                "`llama-server -m MODEL.gguf --port 8080`), set its address (base_url, OPENAI_BASE_URL), "
                "or use the embedded backend"
            )
        if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
            return ModelError(f"{where} refused the key (HTTP {exc.status_code}): set OPENAI_API_KEY")
        if isinstance(exc, openai.NotFoundError):
            return ModelError(f"{where} has no model {self.model!r} (HTTP 404): {_message(exc)}")
        if isinstance(exc, openai.APIStatusError):
            return ModelError(f"{where} refused the request (HTTP {exc.status_code}): {_message(exc)}")
        return ModelError(f"the call to {where} failed: {type(exc).__name__}: {exc}")

    def server_info(self) -> ServerInfo:
        """The server's models and, from llama-server's `/props`, its slots and context."""
        waited = min(self.timeout or INFO_TIMEOUT, INFO_TIMEOUT)
        try:
            listed = within(waited, self._client.models.list)
        except Exception as exc:
            raise self._errors(exc, waited) from exc
        data = list(getattr(listed, "data", None) or [])
        models = tuple(str(m.id) for m in data)
        owned_by = str(getattr(data[0], "owned_by", "") or "") if data else ""
        meta = (getattr(data[0], "model_extra", None) or {}).get("meta") if data else None
        info = ServerInfo(models, owned_by, params=_int((meta or {}).get("n_params")))
        if not info.llamacpp:
            return info
        props = self._props()
        settings = props.get("default_generation_settings") or {}
        return ServerInfo(
            models,
            owned_by,
            slots=_int(props.get("total_slots")),
            context=_int(settings.get("n_ctx")) or _int((meta or {}).get("n_ctx")),
            params=info.params,
        )

    def _props(self) -> dict:
        root = self.base_url.removesuffix("/v1")
        try:
            reply = within(INFO_TIMEOUT, lambda: self._http.get(f"{root}/props"))
            reply.raise_for_status()
            props = reply.json()
        except Exception:  # an older server, a proxy in front, a slow one: go without its facts
            return {}
        return props if isinstance(props, dict) else {}

    def generate(self, request: GenerationRequest) -> Generation:
        extra: dict = {}
        kwargs: dict = {}
        if self.constraint == "grammar" and request.grammar:
            extra["grammar"] = request.grammar
        elif self.constraint == "json" and request.schema is not None:
            kwargs["response_format"] = json_schema_format(request.schema)
        if request.repeat_penalty != 1.0:  # the field is each server's own
            if self.info.llamacpp:
                extra["repeat_penalty"] = request.repeat_penalty
            elif self.info.owned_by == "vllm":
                extra["repetition_penalty"] = request.repeat_penalty
        if self.info.llamacpp:
            extra["cache_prompt"] = True
        if request.stop:
            kwargs["stop"] = list(request.stop)
        if request.logprobs:
            # the OpenAI API allows 20 alternatives a token; llama.cpp's server takes more
            kwargs["logprobs"] = True
            if request.label_scores:
                kwargs["top_logprobs"] = TOP_LOGPROBS if self.info.llamacpp else 20
        seconds = self.timeout or call_timeout(
            sum(self.count_tokens(content) for _, content in request.messages), request.max_tokens
        )
        t0 = time.perf_counter()
        try:
            response = within(
                seconds,
                lambda: self._client.chat.completions.create(
                    timeout=new_timeout(seconds),
                    model=self.model,
                    messages=[{"role": role, "content": content} for role, content in request.messages],
                    max_tokens=request.max_tokens,
                    temperature=request.temperature,
                    seed=request.seed,
                    extra_body=extra or None,
                    **kwargs,
                ),
            )
        except Exception as exc:  # mapped to one actionable message
            raise self._errors(exc, seconds) from exc
        if not hasattr(response, "choices"):  # a 200 that is no chat completion (an HTML page, say)
            raise ModelError(
                f"the server at {self.base_url} did not answer as an OpenAI-compatible server: its reply "
                f"to a chat call is {type(response).__name__} {str(response)[:80]!r}"
            )
        text = (response.choices[0].message.content or "") if response.choices else ""
        usage = response.usage
        tokens = _tokens(response) if request.logprobs else []
        return Generation(
            text=text,
            structured="response_format" in kwargs,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            seconds=time.perf_counter() - t0,
            **reply_scores(tokens, request),
            # llama-server adds its timings to the reply
            **llamacpp_timings((getattr(response, "model_extra", None) or {}).get("timings")),
        )

    def verify(self) -> None:
        return None  # the server answered /v1/models: it serves the model

    def warm(self, notice=None, decisions_only: bool = False) -> None:
        return None  # the server holds the model

    def count_tokens(self, text: str) -> int:
        from cwread.text.tokens import count_tokens

        return count_tokens(text)


def new_http_client(timeout: float):
    """The HTTP client under the OpenAI client (also used for llama-server's /props)."""
    return bounded_http_client(timeout)


def _int(value) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def _message(exc) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return str(getattr(exc, "message", exc))


def _tokens(response) -> list[dict]:
    """A chat completion's token log-probabilities as plain dicts, [] where it has none."""
    logprobs = getattr(response.choices[0], "logprobs", None) if response.choices else None
    return token_dicts(getattr(logprobs, "content", None))


def _build(settings: BackendSettings, wanted: dict[str, ModelRef]) -> Built:
    """An OpenAI-compatible backend for each agent in `wanted`, at its server
    (`openai:MODEL@URL`; else the Finder's --finder-base-url; else --base-url), asking each
    server once what it serves; one object where both agents run the same model there."""
    own = settings.section(OpenAISettings)
    base_url = base_url_from(own.base_url)
    finder_url = base_url_from(own.finder_base_url, "--finder-base-url")
    kwargs = {
        "api_key": own.api_key,
        "num_ctx": settings.num_ctx,
        "timeout": settings.timeout,
        "concurrency": settings.workers,
        "constraint": settings.constraint or "auto",
    }
    backends: dict[str, OpenAIBackend] = {}
    infos: dict[str, ServerInfo] = {}
    for role, ref in wanted.items():
        url = base_url_from(ref.url, ref.named()) or (finder_url if role == "finder" else None) or base_url
        if url is None:
            raise InputError(
                "the openai backend needs the server's address: base_url or OPENAI_BASE_URL "
                "(e.g. http://127.0.0.1:8080/v1 for llama-server), or name it in the model "
                "(openai:MODEL@URL)"
            )
        model = ref.model_for(role)
        backend = OpenAIBackend(model, base_url=url, info=infos.get(url), **kwargs)  # asks a server once
        infos[url] = backend.info
        backend.model = served_model(backend.info.models, model, url)
        same = next((b for b in backends.values() if b.base_url == url and b.model == backend.model), None)
        backends[role] = same or backend  # one backend (and one call cache) when both agents get the same model
    first = next(iter(backends.values()))
    where = places_said({role: b.base_url for role, b in backends.items()})
    return Built(
        backends,
        f"openai-compatible server {where} ({models_said(backends)}; {first.constraint} constraint, "
        f"{first.capabilities.parallel} calls at once)",
    )


def served_model(served: tuple[str, ...], wanted: str, base_url: str) -> str:
    """`wanted` if the server lists it (or lists nothing); the one model a single-model
    server serves (llama-server, a vLLM started on one model); else a clear error."""
    if not served or wanted in served:
        return wanted
    if len(served) == 1:
        return served[0]
    raise ModelError(
        f"the server at {base_url} has no model {wanted!r}; it serves {', '.join(served)}: "
        "choose with the finder_model and interpreter_model settings"
    )


def _notes(backend) -> list[str]:
    parallel = backend.capabilities.parallel
    return [f"the server takes {parallel} calls at once; cwread sends as many (the workers setting changes it)"]


def _auto(settings: BackendSettings, wanted: dict[str, ModelRef]) -> AutoClaim:
    """A server the user named comes first."""
    server = settings.section(OpenAISettings)
    return AutoClaim(bool(server.base_url or server.finder_base_url))


PROVIDER = Provider(
    "openai",
    "an OpenAI-compatible server (llama-server, vLLM, LM Studio)",
    _build,
    OpenAISettings,
    adapter_hint="load the adapter in the server (llama-server --lora FILE) instead",
    notes=_notes,
    auto=_auto,
    auto_order=10,
)
