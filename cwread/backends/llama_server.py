"""llama.cpp in-process (xllamacpp): a server per model file and adapter, shared by the backends
that load the same, with its kept prompt states (cwread.backends.prompt_state)."""

from __future__ import annotations

import os
import threading
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from cwread.backends import GenerationRequest
from cwread.backends.embedded_files import gguf_header
from cwread.backends.prompt_state import PromptStates, loaded_identity, state_key
from cwread.cache import cache_kept, cache_root
from cwread.errors import CwreadError, ModelError

_SERVERS: dict[tuple[str, int, str], LlamaServer] = {}  # shared: one a model file, context and adapter
_USERS: dict[tuple[str, int, str], set[int]] = {}  # of each server: the backends (ids) that loaded it
_SERVERS_LOCK = threading.Lock()
CLOSE_WAIT = 30.0  # seconds a server's call in progress is waited for before the server is closed
EXIT_WAIT = 5.0  # the same at the process's exit


SLOT_PROMPT_SIMILARITY = 0.9


PROMPT_STATES = "prompts"  # the cache's folder of kept prompt states (prompt_state.py)


@dataclass(frozen=True)
class LlamaServer:
    """A llama.cpp server in this process (`server`, called directly, until `close`). It also
    listens on a loopback port, which answers its `api_key` alone: no other process can use
    the model; `states` keeps its first prompt's state for the next process (None: not kept),
    under `identity`, what the model loaded was; `lock` is held by each call, whichever backend
    makes it (a state kept must be the slot's own)."""

    held: list = field(repr=False, compare=False)  # the xllamacpp server; empty once closed
    api_key: str = field(repr=False)
    states: PromptStates | None
    identity: str
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def server(self):
        if not self.held:
            raise ModelError("the embedded model was closed (its session was closed)")
        return self.held[0]

    def close(self, wait: float = CLOSE_WAIT) -> bool:
        """Stop the server (its threads and its port) once no call holds it, waiting up to
        `wait` seconds for one in progress; False where one still held it (left running)."""
        if not self.lock.acquire(timeout=wait):
            return False
        try:
            # the last reference: xllamacpp's destructor stops and joins the server's threads
            # here, while the interpreter runs (at its finalisation they ended in std::terminate)
            self.held.clear()
        finally:
            self.lock.release()
        return True


def new_server(path: Path, n_ctx: int, threads: int, lora: Path | None = None, states: Path | None = None) -> LlamaServer:
    """A llama.cpp server in this process for the GGUF `path` (and a LoRA adapter GGUF);
    `states`: the folder its prompt states are kept in."""
    # Without PASSIVE, idle OpenMP threads spin and 2 busy cores ran 3x slower.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import xllamacpp
    except ImportError:
        raise ModelError("the embedded backend needs xllamacpp: pip install xllamacpp") from None
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_ctx = n_ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.verbosity = -1
    params.warmup = False
    # llama.cpp's fit_params probes a GPU's free memory with a trial load (dummy allocations) to
    # size the layers it takes: work for nothing where there is none, with the context cwread
    # gives. Off, the default model loads in 0.30 s against 0.45, the GIL held throughout
    if hasattr(params, "fit_params"):  # builds before llama.cpp had it size nothing
        params.fit_params = has_gpu(xllamacpp)
    # A new prompt goes on in the slot's state only when it shares 90% of it; else that state is
    # kept in the host-memory prompt cache and the best match loaded from it. At llama.cpp's
    # 0.1, a Finder prompt sharing just the instructions with the last one went on in place,
    # so a follow-up read a segment read before in full (the 1.5B: 0.98 of the first read,
    # 0.15 at 0.9; benchmarks/follow_up_cache.py)
    params.slot_prompt_similarity = SLOT_PROMPT_SIMILARITY
    if lora is not None:
        adapter = xllamacpp.CommonAdapterLoraInfo()
        adapter.path = str(lora)
        adapter.scale = 1.0
        params.lora_adapters = [adapter]
    # the server's HTTP port (loopback, chosen by the system) takes this process's key alone
    import secrets  # here: loaded where a server starts, not by every run (3 ms)

    api_key = secrets.token_hex(16)
    params.api_keys = [api_key]
    identity = ""
    if states is not None:
        params.slot_save_path = f"{states}{os.sep}"  # llama.cpp joins it to a file name as a string
        with suppress(OSError):  # what is loaded, as it is now (a file replaced later is another model)
            identity = loaded_identity(getattr(xllamacpp, "__version__", "?"), [path, *([lora] if lora else [])], n_ctx)
    try:
        server = xllamacpp.Server(params)
    except Exception as exc:
        what = f"{path} with the adapter {lora}" if lora else str(path)
        raise ModelError(f"llama.cpp cannot load {what}: {exc}") from exc
    kept = PromptStates(states, server.listening_address, api_key) if identity and server.listening_address else None
    return LlamaServer([server], api_key, kept, identity)


def has_gpu(xllamacpp) -> bool:
    """Whether llama.cpp sees a GPU (a CUDA or Metal build on a machine with one); True where
    it cannot say, so that llama.cpp sizes what it puts there."""
    try:
        kind = xllamacpp.ggml_backend_dev_type
        gpus = {kind.GGML_BACKEND_DEVICE_TYPE_GPU, kind.GGML_BACKEND_DEVICE_TYPE_IGPU}
        kinds = {device["type"] for device in xllamacpp.get_device_info()}
    except Exception:  # an older or other build: its default
        return True
    return bool(kinds & gpus)


def shared_server(
    path: Path, n_ctx: int, threads: int, lora: Path | None = None, user: object | None = None
) -> LlamaServer:
    """One shared server per (model, context, adapter) for the process, while a `user` (the
    backend that loads it) holds it: `release(user)` closes those no other user holds."""
    key = (str(path), n_ctx, str(lora or ""))
    with _SERVERS_LOCK:
        if key not in _SERVERS:
            _SERVERS[key] = new_server(path, n_ctx, threads, lora, states_folder())
        if user is not None:
            _USERS.setdefault(key, set()).add(id(user))
        return _SERVERS[key]


def release(user: object, wait: float = CLOSE_WAIT) -> None:
    """`user` holds no server any more: each that no other user holds is closed."""
    with _SERVERS_LOCK:
        unused = []
        for key, users in list(_USERS.items()):
            users.discard(id(user))
            if not users:
                del _USERS[key]
                unused.append(_SERVERS.pop(key))
    for server in unused:
        server.close(wait)


def close_servers(wait: float = EXIT_WAIT) -> None:
    """Close every server of the process (at its exit, cwread.backends.embedded.at_exit: a
    script that never closed its session still ends cleanly); one still in a call after
    `wait` seconds is left to the exit."""
    with _SERVERS_LOCK:
        servers = list(_SERVERS.values())
        _SERVERS.clear()
        _USERS.clear()
    for server in servers:
        server.close(wait)


def states_folder() -> Path | None:
    """The cache's folder of prompt states; None where the cache is not kept or not writable."""
    try:
        if not cache_kept():
            return None
        folder = cache_root() / PROMPT_STATES
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # states hold prompts: the book's passages
        return folder
    except (OSError, CwreadError):
        return None


def state_of(loaded: LlamaServer, request: GenerationRequest) -> str | None:
    """The key of the prompt state a server's first call restores or keeps: its model's and
    its system message's (None: not its first call, no states kept, or no system message)."""
    states, messages = loaded.states, request.messages
    if states is None or not states.first or not messages or messages[0][0] != "system":
        return None
    return state_key(loaded.identity, str(messages[0][1]))


def joined_chunks(chunks: list[dict]) -> dict:
    """A streamed chat completion as one reply: its text, the log-probabilities of its tokens,
    usage and timings; an error chunk is raised as the server's refusal."""
    text: list[str] = []
    logprobs: list[dict] = []
    reply: dict = {}
    for chunk in chunks:
        if not isinstance(chunk, dict):
            raise ModelError(f"llama.cpp sent an unreadable reply: {str(chunk)[:200]}")
        if "error" in chunk:
            error = chunk["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise ModelError(f"llama.cpp refused the request: {message}")
        for choice in chunk.get("choices") or []:
            text.append((choice.get("delta") or {}).get("content") or "")
            logprobs.extend((choice.get("logprobs") or {}).get("content") or [])
        for key in ("usage", "timings"):
            if chunk.get(key):
                reply[key] = chunk[key]
    return {**reply, "text": "".join(text), "logprobs": logprobs}


def verify_gguf(path: Path, n_ctx: int, threads: int, lora: Path | None = None) -> str:
    """Check that llama.cpp loads the model (a truncated file does not); returns a summary.
    The server is the one `ask` would use, kept for the process (dropping one can hang)."""
    version, tensors, _ = gguf_header(path)
    try:
        shared_server(path, n_ctx, threads, lora)
    except ModelError:
        size = path.stat().st_size
        raise ModelError(
            f"llama.cpp cannot load {path}: its header names {tensors} tensors but the file "
            f"({size / 2**20:.1f} MiB) does not hold them; it may be truncated or corrupt"
        ) from None
    return f"GGUF v{version}, {tensors} tensors, loads"
