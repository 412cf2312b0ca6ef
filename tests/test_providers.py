"""Backends as providers: a model named per agent (`provider:model@url`), each provider
building its own agents, and a provider registered by one line (the scripted one, here)."""

import json

import pytest

from cwread.backends import scripted as scripted_backend
from cwread.backends.embedded import EmbeddedBackend, EmbeddedSettings
from cwread.backends.embedded_files import default_gguf
from cwread.backends.provider import ModelRef
from cwread.backends.scripted import ScriptedBackend
from cwread.backends.select import PROVIDERS, BackendSettings, select_backends
from cwread.errors import InputError, ModelError
from tests.conftest import loopback_server, run
from tests.scripted_replies import finder_reply

NAMES = ("embedded", "ollama", "openai")


@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ("openai:qwen2.5@http://127.0.0.1:8080/v1", ModelRef("openai", "qwen2.5", "http://127.0.0.1:8080/v1")),
        ("ollama:qwen2.5:7b", ModelRef("ollama", "qwen2.5:7b")),
        ("qwen2.5:7b", ModelRef(None, "qwen2.5:7b")),  # an Ollama tag, not a provider
        ("cwread-finder", ModelRef(None, "cwread-finder")),
        ("embedded:/models/finder@v2.gguf", ModelRef("embedded", "/models/finder@v2.gguf")),
        ("ollama:@https://gpu.example:11434", ModelRef("ollama", None, "https://gpu.example:11434")),
        ("", ModelRef()),
        (None, ModelRef()),
    ],
)
def test_a_model_names_its_provider_and_server(text, ref):
    assert ModelRef.parse(text, NAMES) == ref


def test_a_registered_provider_is_chosen_by_name_and_its_scripts_by_model(capsys, story, cache_dir, scripted):
    keeper = ScriptedBackend(default=finder_reply, model="keeper")
    scripted_backend.SCRIPTS["keeper"] = keeper
    scripted.interpreter.enqueue('<reason>[5] "which she kept in a biscuit tin"</reason><answer>in a biscuit tin</answer>')
    code, out, err = run(
        capsys, "ask", str(story), "Where did she keep the medal?", "--backend", "scripted",
        "--finder-model", "scripted:keeper", "--no-cache", "--json",
    )
    assert code == 0, err
    assert keeper.requests and not scripted.finder.requests  # the Finder named ran, not the default one
    assert json.loads(out)["models"] == {"finder": "scripted:keeper", "interpreter": "scripted:interp"}
    code, _out, err = run(
        capsys, "ask", str(story), "Where?", "--backend", "scripted", "--finder-model", "scripted:nobody"
    )
    assert code == 3 and "no script named 'nobody'" in err


def test_agents_on_different_providers(scripted):
    """The Finder on the scripted provider, the Interpreter in-process: each built by its own."""
    selection = select_backends(BackendSettings(backend="scripted", interpreter_model=f"embedded:{default_gguf()}"))
    assert selection.finder is scripted.finder
    assert isinstance(selection.interpreter, EmbeddedBackend)
    assert selection.why.startswith("backend: scripted; embedded llama.cpp (Interpreter ")


def test_settings_a_provider_cannot_take_are_refused(scripted, tmp_path):
    adapter = tmp_path / "finder.gguf"
    adapter.write_bytes(b"GGUF")
    with pytest.raises(InputError, match="--finder-lora applies to the embedded backend; with Ollama"):
        select_backends(
            BackendSettings(finder_model="ollama:qwen2.5", own=(EmbeddedSettings(finder_lora=str(adapter)),))
        )
    with pytest.raises(InputError, match="runs in-process"):
        select_backends(BackendSettings(backend="scripted", interpreter_model="embedded:x.gguf@http://h:1/v1"))
    with pytest.raises(InputError, match="unknown backend 'nope'; choose one of: auto, embedded"):
        select_backends(BackendSettings(backend="nope"))
    with pytest.raises(ModelError, match="GGUF model not found"):
        select_backends(BackendSettings(backend="scripted", interpreter_model="embedded:/no/such.gguf"))


def test_every_provider_says_what_it_runs():
    for name, provider in PROVIDERS.items():
        assert provider.name == name and provider.summary


@pytest.fixture
def ollama_server():
    """A local HTTP server that answers Ollama's model list (GET /api/tags) with the models
    a test puts in `served`; its address is `url`."""
    import http.server

    served: list[str] = []

    class Tags(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # http.server calls it by this name
            body = json.dumps({"models": [{"model": f"{name}:latest"} for name in served]}).encode()
            self.send_response(200 if self.path == "/api/tags" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    with loopback_server(Tags) as url:
        yield served, url


def test_auto_takes_ollama_when_it_serves_both_models_else_says_what_it_lacks(monkeypatch, ollama_server):
    served, url = ollama_server
    monkeypatch.setenv("OLLAMA_HOST", url)
    served += ["cwread-finder", "cwread-interpreter"]
    chosen = select_backends(BackendSettings())
    assert (chosen.finder.name, chosen.interpreter.name) == ("ollama", "ollama")
    assert chosen.why == f"backend: ollama at {url} (cwread-finder, cwread-interpreter)"
    served.remove("cwread-interpreter")
    fallback = select_backends(BackendSettings())
    assert fallback.finder.name == "embedded" and fallback.why.endswith("; Ollama runs but lacks cwread-interpreter")
    with pytest.raises(ModelError, match=f"Ollama at {url} has no model 'cwread-interpreter': create it"):
        select_backends(BackendSettings(backend="ollama"))


def test_one_agent_on_an_ollama_server_named_in_its_model(scripted, ollama_server):
    served, url = ollama_server
    served.append("qwen2.5:7b")
    chosen = select_backends(BackendSettings(backend="scripted", interpreter_model=f"ollama:qwen2.5:7b@{url}"))
    assert chosen.finder is scripted.finder
    assert chosen.interpreter.name == "ollama" and chosen.interpreter.model == "qwen2.5:7b"
    assert chosen.why == f"backend: scripted; ollama at {url} (Interpreter qwen2.5:7b)"
