"""Contract tests of the Ollama backend: the real `ollama` client over httpx.MockTransport."""

import json
import os
import socket

import httpx
import pytest

from cwread.agents.finder import finder_request, parse_finder_reply
from cwread.agents.interpreter import parse_reply
from cwread.agents.shared import json_reply_to_tags
from cwread.backends import GenerationRequest
from cwread.backends import ollama as ollama_provider
from cwread.backends.ollama import OllamaBackend, refused_here
from cwread.backends.select import BackendSettings, select_backends
from cwread.errors import ModelError
from cwread.records.question import Question


def chat_response(content: str) -> dict:
    return {
        "model": "m",
        "created_at": "2026-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": content},
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 42,
        "eval_count": 7,
    }


def show_response(modelfile: str) -> dict:
    return {"modelfile": modelfile, "parameters": "", "template": "", "model_info": {}}


def backend_with(handler, model="qwen3:4b", **kw) -> OllamaBackend:
    """A backend on `handler`; `/api/show` answers for an untrained base unless `handler` does."""

    def routed(request):
        reply = handler(request)
        if request.url.path == "/api/show" and reply.status_code == 200 and b"modelfile" not in reply.content:
            return httpx.Response(200, json=show_response("FROM qwen3:4b-instruct"))
        return reply

    return OllamaBackend(model, host="http://ollama.test:11434", transport=httpx.MockTransport(routed), **kw)


def test_chat_request_body_is_the_native_api_with_explicit_context():
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/show":
            return httpx.Response(200, json=show_response("FROM qwen3:4b-instruct"))
        seen["path"] = request.url.path
        seen["body"] = json.loads(request.content)
        return httpx.Response(200, json=chat_response('{"reason": "[3] clue", "answer": "YES"}'))

    backend = backend_with(handler, num_ctx=16384)
    request = finder_request(Question("Who?", "open"), 3, 3, "[3] text")
    generation = backend.generate(request)
    body = seen["body"]
    assert seen["path"] == "/api/chat"
    assert body["model"] == "qwen3:4b"
    assert body["stream"] is False and body["think"] is False
    assert body["options"]["num_ctx"] == 16384
    assert body["options"]["temperature"] == 0 and body["options"]["seed"] == 0
    assert body["options"]["num_predict"] == request.max_tokens
    assert body["format"] == request.schema  # structured output for an untrained model
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    # the reply is the schema's JSON, marked so, and the agents read it as tags
    assert generation.structured and json_reply_to_tags(generation.text) == "<reason>[3] clue</reason>\n<answer>YES</answer>"
    assert (generation.prompt_tokens, generation.completion_tokens) == (42, 7)
    assert parse_finder_reply(json_reply_to_tags(generation.text)).answer == "YES"


def _show_and_chat(modelfile: str, seen: dict):
    def handler(request):
        if request.url.path == "/api/show":
            seen["shown"] = True
            return httpx.Response(200, json=show_response(modelfile))
        seen["body"] = json.loads(request.content)
        return httpx.Response(200, json=chat_response("<reason>x</reason>\n<answer>NO</answer>"))

    return handler


def test_an_untrained_base_named_cwread_still_gets_structured_output():
    seen = {}
    backend = backend_with(_show_and_chat("FROM qwen3:4b-instruct\nPARAMETER temperature 0", seen), model="cwread-finder")
    request = finder_request(Question("q", "open"), 1, 1, "[1] a")
    backend.generate(request)
    assert seen["body"]["format"] == request.schema


def test_models_with_an_adapter_write_tags_without_format():
    seen = {}
    backend = backend_with(_show_and_chat("FROM /m/base.gguf\nADAPTER /m/finder.lora.gguf", seen), model="cwread-finder")
    text = backend.generate(finder_request(Question("q", "open"), 1, 1, "[1] a")).text
    assert "format" not in seen["body"]
    assert text.endswith("<answer>NO</answer>")


def test_a_trained_tag_needs_no_lookup():
    seen = {}
    backend = backend_with(_show_and_chat("FROM x", seen), model="cwread-finder:trained")
    backend.generate(finder_request(Question("q", "open"), 1, 1, "[1] a"))
    assert "format" not in seen["body"] and "shown" not in seen


def test_constraint_none_and_json_override_the_guess(monkeypatch):
    seen = {}
    backend = backend_with(_show_and_chat("FROM x\nADAPTER y", seen), model="m", structured=True)
    request = finder_request(Question("q", "open"), 1, 1, "[1] a")
    backend.generate(request)
    assert seen["body"]["format"] == request.schema and "shown" not in seen


def test_ollama_serves_one_call_at_a_time_unless_told(monkeypatch):
    from cwread.backends.ollama import OllamaSettings

    monkeypatch.delenv("OLLAMA_NUM_PARALLEL", raising=False)
    assert OllamaSettings().resolved().parallel == 1
    assert backend_with(lambda r: httpx.Response(500)).capabilities.parallel == 1
    monkeypatch.setenv("OLLAMA_NUM_PARALLEL", "4")
    assert OllamaSettings().resolved().parallel == 4
    monkeypatch.setenv("OLLAMA_NUM_PARALLEL", "many")
    assert OllamaSettings().resolved().parallel == 1
    assert backend_with(lambda r: httpx.Response(500), concurrency=2).capabilities.parallel == 2


def test_missing_model_names_the_command_that_fixes_it():
    backend = backend_with(
        lambda r: httpx.Response(404, json={"error": "model 'cwread-finder' not found"}),
        model="cwread-finder",
    )
    with pytest.raises(ModelError, match=r"ollama create cwread-finder -f modelfiles/finder.Modelfile"):
        backend.generate(GenerationRequest(messages=(("user", "hi"),)))


def test_connection_refused_is_a_model_error_with_the_way_out():
    def refuse(request):
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(ModelError, match=r"not reachable.*ollama serve"):
        backend_with(refuse).generate(GenerationRequest(messages=(("user", "hi"),)))


def test_timeout_is_a_model_error():
    def slow(request):
        raise httpx.ReadTimeout("timed out", request=request)

    with pytest.raises(ModelError, match=r"did not answer within .* s; raise the timeout setting"):
        backend_with(slow).generate(GenerationRequest(messages=(("user", "hi"),)))


def test_server_error_is_reported():
    backend = backend_with(lambda r: httpx.Response(500, json={"error": "out of memory"}))
    with pytest.raises(ModelError, match="out of memory"):
        backend.generate(GenerationRequest(messages=(("user", "hi"),)))


def test_available_models_lists_tags():
    def handler(request):
        assert request.url.path == "/api/tags"
        return httpx.Response(
            200, json={"models": [{"model": "cwread-finder:latest", "name": "cwread-finder:latest"}]}
        )

    assert "cwread-finder" in backend_with(handler).available_models()


def test_json_reply_conversion_leaves_other_text_alone():
    assert json_reply_to_tags('{"reason": "r", "answer": "B"}') == "<reason>r</reason>\n<answer>B</answer>"
    assert json_reply_to_tags("<reason>r</reason>") == "<reason>r</reason>"
    assert json_reply_to_tags('["x"]') == '["x"]'


def test_json_quotes_become_quote_items_checked_like_any_other():
    from cwread.book import grounding

    reply = '{"quotes": [{"id": 5, "quote": "kept in a biscuit tin"}, {"id": 5, "quote": "in a safe"}], "answer": "TRUE"}'
    tags = json_reply_to_tags(reply)
    assert tags == '<reason>[5] "kept in a biscuit tin" [5] "in a safe"</reason>\n<answer>TRUE</answer>'
    reason = parse_reply(tags, Question("q", "claim")).reason
    quotes, forged = grounding.find_quotes(reason, {5: "She kept it in a biscuit tin."})
    assert [q.text for q in quotes] == ["kept it in a biscuit tin"] or [q.text for q in quotes] == []
    assert forged[-1] == ("5", "in a safe")


def test_auto_falls_back_to_embedded_when_no_server_answers(monkeypatch):
    pytest.importorskip("xllamacpp")
    from cwread.backends.embedded_files import default_gguf

    try:
        default_gguf()
    except ModelError:
        pytest.skip("embedded model not installed")
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # discard port: nothing listens
    selection = select_backends(BackendSettings(backend="auto"))
    assert selection.finder.name == "embedded" and "no Ollama server answers" in selection.why


def test_a_refused_loopback_address_is_known_without_the_client():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    try:
        assert not refused_here(f"127.0.0.1:{port}")  # something listens: the client must ask
    finally:
        listener.close()
    assert refused_here(f"127.0.0.1:{port}")  # closed now: refused at once
    assert refused_here(f"http://localhost:{port}/")
    # another machine, a scheme the client does not read, a broken address: nothing said
    assert not refused_here("example.invalid:11434")
    assert not refused_here("ftp://127.0.0.1:9")
    assert not refused_here("http://[::1")


def test_auto_makes_no_ollama_client_when_the_port_is_refused(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    monkeypatch.setattr(OllamaBackend, "__init__", lambda *a, **k: pytest.fail("the client was made"))
    claim = ollama_provider.PROVIDER.auto(BackendSettings(backend="auto").resolved(), {})
    assert not claim.claims and "no Ollama server answers at http://127.0.0.1:9" in claim.why


def test_explicit_ollama_without_server_fails_cleanly(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    with pytest.raises(ModelError, match="not reachable"):
        select_backends(BackendSettings(backend="ollama"))


def _live_ollama() -> bool:
    host = os.environ.get("OLLAMA_HOST")
    if not host:
        return False
    try:
        OllamaBackend("x", host=host, timeout=2).available_models()
        return True
    except ModelError:
        return False


@pytest.mark.skipif(not _live_ollama(), reason="no Ollama server answers at OLLAMA_HOST")
def test_live_ollama_generates_parseable_output():
    backend = OllamaBackend("cwread-finder", host=os.environ["OLLAMA_HOST"])
    if "cwread-finder" not in backend.available_models():
        pytest.skip("the Ollama server has no cwread-finder (ollama create cwread-finder -f modelfiles/finder.Modelfile)")
    live = backend
    reply = live.generate(
        finder_request(Question("What is hidden?", "open"), 1, 1, "[1] The key is under the mat.")
    )
    assert parse_finder_reply(reply.text).ok


def test_the_finder_asks_ollama_for_its_labels_log_probabilities():
    """Ollama 0.12.11+ returns `logprobs` beside the message; the Finder's labels are scored
    from the first token of its answer (in the JSON reply of a structured call)."""
    seen = {}
    tokens = [
        {"token": '{"reason": "[3] clue", "answer": "', "logprob": -0.1, "top_logprobs": []},
        {
            "token": "NO",
            "logprob": -0.2,
            "top_logprobs": [{"token": "NO", "logprob": -0.2}, {"token": "YES", "logprob": -1.9}],
        },
        {"token": '"}', "logprob": -0.01, "top_logprobs": []},
    ]

    def handler(request: httpx.Request) -> httpx.Response:
        seen["body"] = json.loads(request.content)
        reply = chat_response('{"reason": "[3] clue", "answer": "NO"}')
        return httpx.Response(200, json={**reply, "logprobs": tokens})

    backend = backend_with(handler)
    generation = backend.generate(finder_request(Question("Who?", "open"), 3, 3, "[3] text"))
    assert seen["body"]["logprobs"] is True and seen["body"]["top_logprobs"] == 20
    assert dict(generation.label_logprobs) == {"YES": -1.9, "NO": -0.2}
    plain = backend.generate(GenerationRequest(messages=(("user", "hi"),)))
    assert "logprobs" not in seen["body"] and plain.label_logprobs == ()
    # an open answer's confidence: its JSON string's tokens alone
    sure = backend.generate(GenerationRequest(messages=(("user", "hi"),), answer_confidence=True))
    assert seen["body"]["logprobs"] is True and seen["body"]["top_logprobs"] == 1
    assert sure.answer_logprob == -0.2 and sure.label_logprobs == ()
