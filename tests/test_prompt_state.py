"""llama.cpp's state after an agent's first prompt, kept in the cache: the next process restores
it and reads only what its first prompt adds (cwread/backends/prompt_state.py); the in-process
server's loopback port answers this process alone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from cwread.backends import embedded_files, llama_server
from cwread.backends.prompt_state import PromptStates, loaded_identity, prune, state_key
from cwread.cache import file_sha256
from cwread.errors import ModelError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIANT = os.path.join(REPO, "examples", "the_selfish_giant.txt")
ASKED = "Why did the Giant build a high wall round his garden?"


def test_a_state_is_keyed_by_what_it_was_computed_from(tmp_path):
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF" + bytes(60))
    loaded = loaded_identity("build 1", [model], 2048)  # taken when the server loads
    key = state_key(loaded, "You are the Finder.")
    assert key == state_key(loaded_identity("build 1", [model], 2048), "You are the Finder.")
    assert key != state_key(loaded, "You are the Interpreter.")
    assert key != state_key(loaded_identity("build 2", [model], 2048), "You are the Finder.")
    assert key != state_key(loaded_identity("build 1", [model], 4096), "You are the Finder.")
    model.write_bytes(b"GGUF" + bytes(61))  # another model file at the same path
    assert key != state_key(loaded_identity("build 1", [model], 2048), "You are the Finder.")
    assert key == state_key(loaded, "You are the Finder.")  # the loaded one's key stays its own


def test_a_damaged_state_is_removed_and_a_whole_one_found(tmp_path):
    states = PromptStates(tmp_path, "http://127.0.0.1:9", "key")
    whole = tmp_path / "k1-placeholder.bin"
    whole.write_bytes(b"state")
    named = tmp_path / f"k1-{file_sha256(whole)[:16]}.bin"
    whole.rename(named)
    assert states.kept("k1") == named.name
    other = tmp_path / "k1-zzzzzzzzzzzzzzzz.bin"  # a second process's, kept at the same time
    other.write_bytes(b"its state")
    assert states.kept("k1") == named.name and not other.exists()
    named.write_bytes(b"state, changed on disk")
    assert states.kept("k1") is None
    assert not named.exists()


def test_a_state_that_cannot_be_restored_leaves_the_prompt_to_be_read(tmp_path):
    # nothing listens on the discard port: the restore fails, says only that it restored
    # nothing, and the state goes (the call's own is kept in its place)
    state = tmp_path / "k2-x.bin"
    state.write_bytes(b"state")
    state.rename(tmp_path / f"k2-{file_sha256(state)[:16]}.bin")
    states = PromptStates(tmp_path, "http://127.0.0.1:9", "key")
    assert states.first
    assert states.before_first("k2") is False
    assert list(tmp_path.iterdir()) == []
    assert not states.first and states.before_first("k2") is False  # the first call only
    states.keep("k3")  # nor can it be saved: nothing is left behind
    assert list(tmp_path.iterdir()) == []


def test_the_least_recently_used_states_go_first(tmp_path):
    for age, name in enumerate(["new", "old", "older"]):
        state = tmp_path / f"{name}-0.bin"
        state.write_bytes(b"x" * 100)
        os.utime(state, (1_000_000 - age * 1000, 1_000_000 - age * 1000))
    prune(tmp_path, most=250)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new-0.bin", "old-0.bin"]
    prune(tmp_path, most=250)  # within bounds: nothing more goes
    assert len(list(tmp_path.iterdir())) == 2
    fresh, stale = tmp_path / "k.1.2.tmp", tmp_path / "k.3.4.tmp"  # saves in progress, or died
    fresh.write_bytes(b"x")
    stale.write_bytes(b"x")
    os.utime(stale, (1_000_000, 1_000_000))
    prune(tmp_path, most=250)
    assert fresh.exists() and not stale.exists()


def test_the_first_call_with_a_system_message_is_the_one_a_state_is_for(tmp_path):
    from cwread.backends import GenerationRequest

    states = PromptStates(tmp_path, "http://127.0.0.1:9", "key")
    loaded = llama_server.LlamaServer(held=[], api_key="key", states=states, identity="model 1")
    asked = GenerationRequest(messages=(("system", "You are the Finder."), ("user", "Segment ...")))
    key = llama_server.state_of(loaded, asked)
    assert key == state_key("model 1", "You are the Finder.")
    assert llama_server.state_of(loaded, GenerationRequest(messages=(("user", "Hello"),))) is None
    states.before_first(key)  # the first call made: later ones share the live slot
    assert llama_server.state_of(loaded, asked) is None
    unkept = llama_server.LlamaServer(held=[], api_key="key", states=None, identity="")
    assert llama_server.state_of(unkept, asked) is None


def test_no_states_are_kept_where_the_cache_is_not(monkeypatch, cache_dir):
    assert llama_server.states_folder() == cache_dir / llama_server.PROMPT_STATES
    monkeypatch.setattr(llama_server, "cache_kept", lambda: False)
    assert llama_server.states_folder() is None


def _ask(env: dict) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "cwread", "ask", GIANT, ASKED, "--json"],
        capture_output=True, text=True, env=env, check=False, cwd=REPO, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_the_next_process_reads_only_what_its_first_prompt_adds(cache_dir):
    # the state is llama.cpp's: its decisions are asked of it, not of ONNX Runtime
    env = {**os.environ, "CWREAD_BACKEND": "embedded", "CWREAD_ONNX_DECISIONS": "0"}
    first = _ask(env)
    assert first["tokens"]["prompt_cached"] == 0
    kept = list((cache_dir / llama_server.PROMPT_STATES).glob("*.bin"))
    assert len(kept) == 1
    shutil.rmtree(cache_dir / "calls")  # the call again, not its cached reply
    again = _ask(env)
    # the Finder's instructions (about 200 tokens) and more came from the kept state
    assert again["tokens"]["prompt_cached"] >= 150
    assert again["answer"] == first["answer"]
    assert again["answer_judgement"]["chosen"] == first["answer_judgement"]["chosen"]
    # not bit for bit: the instructions' keys were summed in another batch, as every call after a
    # process's first already reads them (0.08 here); a wrong state would move it by far more
    score = again["answer_judgement"]["scores"][0]["score"]
    assert abs(score - first["answer_judgement"]["scores"][0]["score"]) < 0.25
    assert list((cache_dir / llama_server.PROMPT_STATES).glob("*.bin")) == kept
    assert kept[0].stat().st_mode & 0o077 == 0  # it holds the book's passages: the user's alone


@pytest.mark.slow
def test_the_loopback_port_answers_its_process_alone(tmp_path):
    loaded = llama_server.new_server(embedded_files.default_gguf(), 512, 2, states=tmp_path)
    assert loaded.api_key not in repr(loaded)
    chunks: list = []
    loaded.server.handle_chat_completions(
        {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 2, "stream": True},
        lambda chunk: chunks.append(chunk) or False,
    )
    assert chunks  # called in-process, it needs no key
    body = json.dumps({"filename": "t.bin"}).encode()
    url = f"{loaded.server.listening_address}/slots/0?action=save"
    stranger = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(stranger, timeout=30)
    assert refused.value.code == 401
    assert not (tmp_path / "t.bin").exists()
    owner = urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/json", "Authorization": f"Bearer {loaded.api_key}"}
    )
    with urllib.request.urlopen(owner, timeout=30) as reply:
        assert json.load(reply)["n_saved"] > 0
    assert (tmp_path / "t.bin").is_file()
    address = loaded.server.listening_address
    assert loaded.close()  # closed, its port no longer answers, and a call says why
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{address}/health", timeout=5)
    with pytest.raises(ModelError, match="closed"):
        loaded.server.handle_chat_completions({}, None)
