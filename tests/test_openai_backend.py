"""Contract tests of the OpenAI-compatible backend: the real `openai` client over
httpx.MockTransport playing llama-server and vLLM; one slow test against a real llama.cpp
server (the embedded model served over HTTP by xllamacpp)."""

import json
import math
import socket
import time
from pathlib import Path

import httpx
import pytest

from cwread.agents.finder import finder_request, parse_finder_reply
from cwread.agents.interpreter import interpreter_request
from cwread.agents.shared import json_reply_to_tags
from cwread.backends import openai_compat
from cwread.backends.openai_compat import OpenAIBackend, OpenAISettings
from cwread.backends.select import BackendSettings, select_backends
from cwread.errors import InputError, ModelError
from cwread.records.question import Question
from tests.conftest import loopback_server, run

URL = "http://server.test:8080/v1"
_REAL_CLIENT = httpx.Client


def _mock_client(handler):
    return _REAL_CLIENT(transport=httpx.MockTransport(handler))


def completion(content: str) -> dict:
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49},
    }


def fake_server(owned_by: str, reply: str, seen: dict, models=("qwen2.5-1.5b",), slots=8, n_ctx=65536 // 8):
    def handler(request: httpx.Request) -> httpx.Response:
        seen.setdefault("paths", []).append(request.url.path)
        seen["auth"] = request.headers.get("authorization")
        if request.url.path == "/v1/models":
            data = [{"id": m, "object": "model", "created": 0, "owned_by": owned_by} for m in models]
            if owned_by == "llamacpp":
                for entry in data:
                    entry["meta"] = {"n_params": 1_543_714_304, "n_ctx": n_ctx}
            return httpx.Response(200, json={"object": "list", "data": data})
        if request.url.path == "/props":
            if owned_by != "llamacpp":
                return httpx.Response(404)
            return httpx.Response(
                200, json={"total_slots": slots, "default_generation_settings": {"n_ctx": n_ctx}}
            )
        if request.url.path == "/v1/chat/completions":
            seen["body"] = json.loads(request.content)
            return httpx.Response(200, json=completion(reply))
        return httpx.Response(404, json={"error": {"message": "no such route"}})

    return handler


def backend(handler, model="qwen2.5-1.5b", **kw) -> OpenAIBackend:
    return OpenAIBackend(model, URL, http_client=httpx.Client(transport=httpx.MockTransport(handler)), **kw)


def finder_call():
    return finder_request(Question("Where is the key?", "open"), 3, 3, "[3] The key is under the mat.")


def test_llama_server_gets_the_grammar_and_sizes_calls_to_its_slots():
    seen: dict = {}
    b = backend(
        fake_server(
            "llamacpp", '<reason>[3] "The key is under the mat."</reason>\n<answer>YES</answer>', seen
        )
    )
    assert (b.constraint, b.capabilities.parallel, b.capabilities.context, b.capabilities.size) == (
        "grammar",
        8,
        8192,
        1543714304,
    )
    request = finder_call()
    reply = b.generate(request)
    body = seen["body"]
    assert body["grammar"] == request.grammar and "response_format" not in body
    assert body["max_tokens"] == request.max_tokens and body["temperature"] == 0 and body["seed"] == 0
    assert body["model"] == "qwen2.5-1.5b" and body["cache_prompt"] is True
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert parse_finder_reply(reply.text).answer == "YES"
    assert (reply.prompt_tokens, reply.completion_tokens) == (42, 7)


def test_other_servers_get_the_json_schema_and_their_reply_becomes_tags():
    seen: dict = {}
    reply = json.dumps({"quotes": [{"id": 3, "quote": "The key is under the mat."}], "answer": "YES"})
    b = backend(fake_server("vllm", reply, seen), api_key="sk-test")
    assert (b.constraint, b.capabilities.parallel, b.capabilities.context) == ("json", 4, 8192)
    request = finder_call()
    generation = b.generate(request)
    body = seen["body"]
    assert body["response_format"]["json_schema"]["schema"] == request.schema and "grammar" not in body
    assert generation.structured and json_reply_to_tags(generation.text) == '<reason>[3] "The key is under the mat."</reason>\n<answer>YES</answer>'
    assert seen["auth"] == "Bearer sk-test"
    assert "/props" not in seen["paths"]  # only llama.cpp servers are asked for their slots


def test_flags_override_what_the_server_says():
    seen: dict = {}
    b = backend(fake_server("llamacpp", "x", seen), constraint="none", concurrency=2, num_ctx=4096)
    assert (b.constraint, b.capabilities.parallel, b.capabilities.context) == ("none", 2, 4096)
    b.generate(finder_call())
    assert "grammar" not in seen["body"] and "response_format" not in seen["body"]


def test_the_repeat_penalty_goes_in_each_servers_own_field():
    request = interpreter_request(Question("Why?", "open"), [(1, "A.")])
    assert request.repeat_penalty != 1.0
    for owned_by, field in (("llamacpp", "repeat_penalty"), ("vllm", "repetition_penalty")):
        seen: dict = {}
        backend(fake_server(owned_by, "<reason>x</reason><answer>y</answer>", seen)).generate(request)
        assert seen["body"][field] == request.repeat_penalty


def test_a_single_model_server_serves_whatever_name_was_asked(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", URL)
    seen: dict = {}
    handler = fake_server("llamacpp", "x", seen, models=("/models/qwen2.5-coder-1.5b-q4_k_m.gguf",))

    monkeypatch.setattr(openai_compat, "new_http_client", lambda timeout: _mock_client(handler))
    selection = select_backends(BackendSettings(backend="auto"))
    assert selection.finder.name == "openai" and selection.finder is selection.interpreter
    assert selection.finder.model == "/models/qwen2.5-coder-1.5b-q4_k_m.gguf"
    assert "grammar constraint, 8 calls at once" in selection.why


def test_a_server_with_several_models_must_be_told_which(monkeypatch):
    seen: dict = {}
    handler = fake_server("vllm", "x", seen, models=("a", "b"))
    monkeypatch.setattr(openai_compat, "new_http_client", lambda timeout: _mock_client(handler))
    with pytest.raises(ModelError, match=r"has no model 'cwread-finder'; it serves a, b"):
        select_backends(BackendSettings(backend="openai", own=(OpenAISettings(base_url=URL),)))


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (401, r"refused the key \(HTTP 401\): set OPENAI_API_KEY"),
        (404, r"has no model 'qwen2.5-1.5b' \(HTTP 404\)"),
        (400, r"refused the request \(HTTP 400\): the request exceeds the available context size"),
    ],
)
def test_http_errors_become_one_line(status, message):
    def handler(request):
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"object": "list", "data": []})
        error = {"message": "the request exceeds the available context size", "type": "x"}
        return httpx.Response(status, json={"error": error})

    b = backend(handler)
    with pytest.raises(ModelError, match=message):
        b.generate(finder_call())


def test_no_server_and_no_address_are_clear_errors(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(InputError, match="needs the server's address"):
        select_backends(BackendSettings(backend="openai"))
    with pytest.raises(InputError, match="must start with http"):
        select_backends(BackendSettings(backend="openai", own=(OpenAISettings(base_url="localhost:8080"),)))
    with pytest.raises(ModelError, match=r"no OpenAI-compatible server answers at http://127.0.0.1:9/v1"):
        select_backends(
            BackendSettings(
                backend="openai", own=(OpenAISettings(base_url="http://127.0.0.1:9/v1"),), timeout=2
            )
        )


def test_cli_without_a_server_exits_3_in_one_line(capsys, story, cache_dir):
    code, out, err = run(capsys, "ask", str(story), "What?", "--base-url", "http://127.0.0.1:9/v1")
    assert code == 3 and out == ""
    assert err.splitlines()[-1].startswith("cwread: error: no OpenAI-compatible server answers")
    assert "Traceback" not in err


def test_a_urls_password_is_never_shown(capsys, story, cache_dir):
    url = "http://reader:Pa55w0rd@127.0.0.1:9/v1"
    code, out, err = run(capsys, "ask", str(story), "What?", "--base-url", url, "--json")
    assert code == 3 and "Pa55w0rd" not in out + err
    assert "reader:***@127.0.0.1:9" in err and "reader:***@" in json.loads(out)["error"]["message"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_ask_through_a_real_llama_server(capsys, cache_dir):
    """The embedded model served over HTTP by llama.cpp (xllamacpp): grammar, slots, the lot."""
    import xllamacpp

    from cwread.backends.embedded_files import default_gguf

    params = xllamacpp.CommonParams()
    params.model.path = str(default_gguf())
    params.n_ctx = 16384
    params.n_parallel = 2
    params.verbosity = -1
    params.warmup = False
    params.port = _free_port()
    params.hostnames = ["127.0.0.1"]
    server = xllamacpp.Server(params)
    url = f"http://127.0.0.1:{params.port}/v1"
    for _ in range(50):
        try:
            if httpx.get(f"http://127.0.0.1:{params.port}/health").status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.2)
    book = Path(__file__).parent.parent / "examples" / "the_selfish_giant.txt"
    code, out, err = run(
        capsys, "ask", str(book), "What did the Giant put up?", "--base-url", url, "--json", "--set", "budget.read=3"
    )
    assert code in (0, 4), err
    data = json.loads(out)
    assert data["models"]["finder"].startswith("openai:")
    assert "grammar constraint, 2 calls at once" in err.replace("\n", "")
    assert all(v["parsed_first_try"] for v in data["finder"])  # the grammar held
    assert all(isinstance(v["score"], float) for v in data["finder"])  # logprobs came through
    for quote in data["quotes"]:  # every quote shown is in the book
        assert quote["quote"] in " ".join(book.read_text(encoding="utf-8").split())
    del server


def test_doctor_names_the_server_and_its_parallel_calls(capsys, cache_dir, monkeypatch):
    seen: dict = {}
    handler = fake_server("llamacpp", "x", seen, slots=4)
    monkeypatch.setattr(openai_compat, "new_http_client", lambda timeout: _mock_client(handler))
    code, out, err = run(capsys, "doctor", "--json", "--base-url", URL)
    assert code == 0, err
    backend = json.loads(out)["backend"]
    assert backend["finder"] == "openai:qwen2.5-1.5b" and f"server at {URL}" in backend["why"]
    assert backend["notes"][:2] == [
        "the server takes 4 calls at once; cwread sends as many (the workers setting changes it)",
        "the Finder's reading rate for qwen2.5-1.5b is not measured yet: the first question "
        "measures it (finder.read_tokens=auto reads about 30 s)",
    ]
    assert backend["notes"][2].startswith("answer reader: ") and len(backend["notes"]) == 3


def test_stop_strings_and_plain_requests_follow_the_chat_completions_shape():
    from cwread.backends import GenerationRequest

    seen: dict = {}
    b = backend(fake_server("vllm", "plain text", seen))
    request = GenerationRequest(
        messages=(("user", "hi"),), max_tokens=12, temperature=0.5, seed=7, stop=("</answer>",)
    )
    assert b.generate(request).text == "plain text"  # no schema asked: the text as it came
    body = seen["body"]
    assert body == {
        "model": "qwen2.5-1.5b",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 12,
        "temperature": 0.5,
        "seed": 7,
        "stop": ["</answer>"],
    }


def _with_logprobs(body: dict, tokens: list[tuple[str, list[tuple[str, float]]]]) -> dict:
    """A completion whose choice carries OpenAI-shaped logprobs for `tokens`."""
    body["choices"][0]["logprobs"] = {
        "content": [
            {
                "token": tok,
                "logprob": tops[0][1] if tops else -0.1,
                "bytes": None,
                "top_logprobs": [{"token": t, "logprob": lp, "bytes": None} for t, lp in tops],
            }
            for tok, tops in tokens
        ]
    }
    return body


@pytest.mark.parametrize("owned_by, asked", [("llamacpp", 200), ("vllm", 20)])
def test_the_finder_asks_for_its_labels_log_probabilities(owned_by, asked):
    """logprobs/top_logprobs as the OpenAI reference has them (vLLM's default cap is 20; llama.cpp
    takes more); the reply's first answer token gives the labels' log-probabilities."""
    seen: dict = {}
    text = '<reason>[3] "The key is under the mat."</reason>\n<answer>YES</answer>'
    tokens = [
        ('<reason>[3] "The key is under the mat."</reason>\n', []),
        ("<", []),
        ("answer", []),
        (">", []),
    ]
    tokens += [("Y", [("Y", -0.2), ("N", -2.0), ("NO", -3.0), ("Yes", -0.1)]), ("ES", []), ("</answer>", [])]

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/chat/completions":
            seen["body"] = json.loads(request.content)
            return httpx.Response(200, json=_with_logprobs(completion(text), tokens))
        return fake_server(owned_by, text, {})(request)

    reply = backend(handler).generate(finder_call())
    assert seen["body"]["logprobs"] is True and seen["body"]["top_logprobs"] == asked
    scores = dict(reply.label_logprobs)
    assert scores["YES"] == pytest.approx(-0.2)  # "Yes" is no prefix of YES: the grammar bars it
    assert scores["NO"] == pytest.approx(math.log(math.exp(-2.0) + math.exp(-3.0)))
    # a claim's answer asks for none
    backend(handler).generate(interpreter_request(Question("It is.", "claim"), [(1, "A.")]))
    assert "logprobs" not in seen["body"] and "top_logprobs" not in seen["body"]
    # an open answer asks for its tokens' log-probabilities alone: its words' mean comes back
    reply = backend(handler).generate(interpreter_request(Question("Why?", "open"), [(1, "A.")]))
    assert seen["body"]["logprobs"] is True and "top_logprobs" not in seen["body"]
    assert reply.answer_logprob == pytest.approx((-0.2 - 0.1) / 2)  # "Y" and "ES", not the tags


def test_a_server_without_logprobs_gives_no_scores():
    seen: dict = {}
    reply = backend(
        fake_server("llamacpp", '<reason>[3] "The key is under the mat."</reason>\n<answer>NO</answer>', seen)
    )
    assert reply.generate(finder_call()).label_logprobs == ()


def servers_by_host(monkeypatch) -> list[str]:
    """Every server answers as one llama-server; the list fills with the host of each chat call."""
    hosts: list[str] = []
    inner = fake_server("llamacpp", "<reason>[3] the mat</reason>\n<answer>YES</answer>", {})

    def handler(request):
        if request.url.path == "/v1/chat/completions":
            hosts.append(request.url.host)
        return inner(request)

    monkeypatch.setattr(openai_compat, "new_http_client", lambda timeout: _mock_client(handler))
    return hosts


def test_the_finder_can_have_a_server_of_its_own(monkeypatch):
    """A trained Finder served as base + adapter by a second llama-server; the Interpreter's
    calls stay with the base model's server."""
    hosts = servers_by_host(monkeypatch)
    settings = BackendSettings(
        backend="openai", own=(OpenAISettings(base_url=URL, finder_base_url="http://finder.test:8081/v1/"),)
    )
    selection = select_backends(settings.resolved())
    assert selection.finder is not selection.interpreter
    assert "Finder at http://finder.test:8081/v1, Interpreter at http://server.test:8080/v1" in selection.why
    selection.finder.generate(finder_call())
    selection.interpreter.generate(finder_call())
    assert hosts == ["finder.test", "server.test"]
    with pytest.raises(InputError, match="--finder-base-url must start with http"):
        select_backends(
            BackendSettings(
                backend="openai", own=(OpenAISettings(base_url=URL, finder_base_url="finder:8081"),)
            )
        )
    with pytest.raises(InputError, match="finder_base_url applies to the openai backend"):
        select_backends(
            BackendSettings(
                backend="embedded", own=(OpenAISettings(finder_base_url="http://finder.test:8081/v1"),)
            )
        )


def test_each_agent_can_name_its_own_server_in_its_model(monkeypatch):
    """`openai:MODEL@URL` runs that agent there, whatever --backend the other agent has."""
    hosts = servers_by_host(monkeypatch)
    settings = BackendSettings(
        backend="openai",
        finder_model="openai:qwen2.5-1.5b@http://finder.test:8081/v1",
        own=(OpenAISettings(base_url=URL),),
    )
    selection = select_backends(settings)
    assert "Finder at http://finder.test:8081/v1, Interpreter at http://server.test:8080/v1" in selection.why
    selection.finder.generate(finder_call())
    selection.interpreter.generate(finder_call())
    assert hosts == ["finder.test", "server.test"]
    # both agents at one server with one model: one backend, so one call cache
    both = select_backends(
        BackendSettings(
            finder_model=f"openai:qwen2.5-1.5b@{URL}", interpreter_model=f"openai:qwen2.5-1.5b@{URL}"
        )
    )
    assert both.finder is both.interpreter and "at http://server.test:8080/v1 (qwen2.5-1.5b, qwen2.5-1.5b" in both.why
    with pytest.raises(InputError, match="must start with http"):
        select_backends(BackendSettings(finder_model="openai:qwen@ftp://finder.test/v1", own=(OpenAISettings(base_url=URL),)))


@pytest.mark.parametrize(
    "url",
    ["http://a\r\nb/v1", "http://[::1", "http://\x1bevil/v1", "http://:80/v1", "http://h:99999/v1"],
)
def test_a_bad_base_url_is_a_usage_error_not_a_bug(capsys, story, cache_dir, url):
    code, _out, err = run(capsys, "ask", str(story), "What?", "--base-url", url)
    assert code == 2 and "--base-url" in err and "internal error" not in err


def test_an_html_page_for_a_chat_reply_is_a_server_fault(capsys, story, cache_dir):
    """A loopback server that lists a model but answers a chat call with a 200 HTML page."""
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        def _send(self, status, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path.endswith("/models"):
                self._send(200, json.dumps({"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "x"}]}).encode(), "application/json")
            else:
                self._send(404, b"{}", "application/json")

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self._send(200, b"<html><body>Welcome to nginx</body></html>", "text/html")

        def log_message(self, *args):
            pass

    with loopback_server(Handler) as address:
        code, _out, err = run(
            capsys, "ask", str(story), "What did the fishermen give her?", "--base-url", f"{address}/v1", "--no-cache"
        )
    assert code == 3 and "did not answer as an OpenAI-compatible server" in err and "internal error" not in err


def huge_reply_handler(megabytes: int, chunked: bool):
    """A server that lists a model and answers every POST with a reply of `megabytes`."""
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            listed = {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "x"}]}
            if self.path.startswith("/api/tags"):  # Ollama's list
                listed = {"models": [{"name": "m:latest", "model": "m:latest"}]}
            body = json.dumps(listed).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            head, block = b'{"choices":[{"message":{"content":"', b"a" * 2**20
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(len(head) + megabytes * len(block) + 4))
            self.end_headers()
            try:
                for part in [head, *([block] * megabytes), b'"}}]}']:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part) if chunked else part)
                if chunked:
                    self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):  # the client stopped reading: as it should
                pass

        def log_message(self, *args):
            pass

    return Handler


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "content-length"])
def test_a_huge_reply_is_refused_once_past_its_bound(capsys, story, cache_dir, chunked):
    """64 MB for one call, sent as fast as the loopback goes: refused past 8 MiB, exit 3."""
    with loopback_server(huge_reply_handler(64, chunked)) as address:
        code, _out, err = run(
            capsys, "ask", str(story), "What did the fishermen give her?", "--base-url", f"{address}/v1", "--no-cache"
        )
    assert code == 3 and "sent a reply of more than 8 MiB to one call; refused" in err and "internal error" not in err


def test_a_huge_reply_from_ollama_is_refused_too(capsys, story, cache_dir, monkeypatch):
    with loopback_server(huge_reply_handler(64, chunked=True)) as address:
        monkeypatch.setenv("OLLAMA_HOST", address)
        code, _out, err = run(capsys, "ask", str(story), "What did the fishermen give her?", "--backend", "ollama", "--finder-model", "m", "--interpreter-model", "m", "--no-cache")
    assert code == 3 and "sent a reply of more than 8 MiB to one call; refused" in err and "internal error" not in err
