"""The default model's decisions on ONNX Runtime (cwread/backends/onnx_decisions.py): the same
prompt tokens as llama.cpp, scores within a small distance of llama.cpp's, the default ask
run without loading llama.cpp at all, and every fault left to llama.cpp with one line."""

import os
import statistics

import numpy as np
import pytest

from cwread import api
from cwread.agents.finder import finder_request
from cwread.backends import embedded, embedded_files
from cwread.backends.embedded import EmbeddedBackend, EmbeddedSettings
from cwread.backends.llama_server import new_server
from cwread.backends.logprobs import label_logprobs
from cwread.backends.onnx_decisions import (
    CHATML_SYSTEM,
    DecisionScorer,
    decision_entry,
    render_chatml,
    write_decision_model,
)
from cwread.records.question import Question
from tests.conftest import EXAMPLES, default_model_installed, run

needs_model = pytest.mark.skipif(not default_model_installed(), reason="the embedded model is not installed (see the README)")


def test_the_chat_is_rendered_as_the_models_template_renders_it():
    asked = (("system", "Judge."), ("user", "Is it?"))
    assert render_chatml(asked, "<answer>") == (
        "<|im_start|>system\nJudge.<|im_end|>\n<|im_start|>user\nIs it?<|im_end|>\n<|im_start|>assistant\n<answer>"
    )
    # a conversation with no system message of its own gets the template's
    assert render_chatml((("user", "Is it?"),), "").startswith(
        f"<|im_start|>system\n{CHATML_SYSTEM}<|im_end|>\n"
    )


def test_the_switch_is_read_once_and_a_bad_value_is_an_input_error(monkeypatch, capsys):
    monkeypatch.setenv("CWREAD_ONNX_DECISIONS", "0")
    assert EmbeddedSettings().resolved().decisions is False
    monkeypatch.setenv("CWREAD_ONNX_DECISIONS", "perhaps")
    code, _, err = run(capsys, "ask", str(EXAMPLES / "the_selfish_giant.txt"), "Why?")
    assert code == 2 and "CWREAD_ONNX_DECISIONS" in err and "Traceback" not in err


def test_entries_an_earlier_format_wrote_are_removed_once_a_new_one_is_written(tmp_path):
    """Each is a 236 MB entry no key leads to any more; the current format's entries, and one
    another process is writing, stay."""
    from cwread.backends.onnx_decisions import DECISIONS_FORMAT
    from cwread.cache import remove_older_formats, write_entry

    def entry(name: str, format: int) -> None:
        write_entry(tmp_path / name, lambda tmp: (tmp / "decisions.onnx").write_bytes(b"x") and {"format": format})

    entry("old", DECISIONS_FORMAT - 1)
    entry("current", DECISIONS_FORMAT)
    (tmp_path / ".being-written.tmp-1").mkdir()
    (tmp_path / "stray").mkdir()  # no manifest: not ours to judge
    remove_older_formats(tmp_path, DECISIONS_FORMAT)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".being-written.tmp-1", "current", "stray"]


def _finder_graph():
    """The cache entry of the Finder's decision graph (the base model's may be there too)."""
    return decision_entry(embedded_files.default_gguf(), embedded_files.shipped_finder().path)


def _decision_prompts(count: int) -> list:
    paragraphs = [
        p for p in (EXAMPLES / "the_hound_of_the_baskervilles.txt").read_text().split("\n\n") if len(p) > 250
    ]
    asked = ["Who killed Sir Charles?", "Why did the man hide the letter?", "Where was the dog kept?"]
    step = len(paragraphs) // count
    return [
        finder_request(
            Question(asked[i % 3], "open"),
            1,
            1,
            text[:600],
            False,
            paragraphs=[(1, text[:600])],
            decision_first=True,
        )
        for i, text in enumerate(paragraphs[::step][:count])
    ]


def _llama_score(server, request) -> tuple[float, int]:
    messages = [{"role": r, "content": c} for r, c in request.messages] + [
        {"role": "assistant", "content": request.decision.opens}
    ]
    body = {"messages": messages, "max_tokens": 1, "temperature": 0, "cache_prompt": False, "stream": True,
            "stream_options": {"include_usage": True}, "logprobs": True, "top_logprobs": 200,
            "grammar": request.decision.grammar}  # fmt: skip
    chunks = []
    server.server.handle_chat_completions(body, lambda chunk: chunks.append(chunk) or False)
    tokens = [
        t
        for c in chunks
        for ch in c.get("choices") or []
        for t in ((ch.get("logprobs") or {}).get("content") or [])
    ]
    scores = dict(label_logprobs([{"token": request.decision.opens, "logprob": 0.0}, *tokens], ("YES", "NO")))
    return scores["YES"] - scores["NO"], [c["usage"]["prompt_tokens"] for c in chunks if c.get("usage")][-1]


@needs_model
@pytest.mark.slow
def test_scores_come_within_a_small_distance_of_llama_cpps_on_the_same_tokens(tmp_path, cache_dir):
    backend = EmbeddedBackend(lora=embedded_files.shipped_finder().path, prepare=True, decisions=True)
    prepared, _ = backend._files()
    assert backend.prepared == "q8_0+merged"
    write_decision_model(embedded_files.default_gguf(), tmp_path, embedded_files.shipped_finder().path)
    scorer = DecisionScorer(tmp_path, os.cpu_count() or 1)
    server = new_server(prepared, 4096, os.cpu_count() or 1)
    gaps = []
    for request in _decision_prompts(8):
        top, count, _ = scorer.top_tokens(request.messages, request.decision.opens)
        ours = dict(
            label_logprobs(
                [{"token": "<answer>", "logprob": 0.0}, {**top[0], "top_logprobs": top}], ("YES", "NO")
            )
        )
        theirs, their_count = _llama_score(server, request)
        assert count == their_count  # the same template, the same tokens
        gaps.append(abs(ours["YES"] - ours["NO"] - theirs))
    # llama.cpp's own scores are about 0.12 from the float model's (benchmarks/README.md)
    assert max(gaps) < 0.8 and statistics.mean(gaps) < 0.35, gaps


@needs_model
@pytest.mark.slow
def test_the_default_ask_decides_on_onnx_runtime_and_never_loads_llama_cpp(cache_dir, monkeypatch):
    monkeypatch.delenv("CWREAD_ONNX_DECISIONS", raising=False)
    loaded = []
    monkeypatch.setattr(
        embedded, "shared_server", lambda *a, **k: loaded.append(a) or pytest.fail("llama.cpp loaded")
    )
    book = api.open(str(EXAMPLES / "the_selfish_giant.txt"))
    trace = book.ask(api.make_question("Why did the Giant build a high wall round his garden?"))
    judgement = trace.outcome.judgement
    assert trace.answer and judgement is not None and judgement.scores and not loaded
    assert all(call.prompt_tokens > 0 for call in judgement.calls)
    assert {call.runtime for call in judgement.calls} == {embedded.ONNX_INT8}  # the trace says what decided


@needs_model
@pytest.mark.slow
def test_a_damaged_decision_graph_is_one_line_and_llama_cpp_decides(cache_dir, monkeypatch, capsys):
    monkeypatch.delenv("CWREAD_ONNX_DECISIONS", raising=False)
    backend = EmbeddedBackend(lora=embedded_files.shipped_finder().path, prepare=True, decisions=True)
    assert backend._decision_scorer() is not None  # written into the cache
    folder = _finder_graph()
    graph = folder / "decisions.onnx"
    stat = graph.stat()
    graph.write_bytes(b"\0" * stat.st_size)  # the same size and time: taken as whole, then refused
    os.utime(graph, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    capsys.readouterr()
    code, _, err = run(
        capsys, "ask", str(EXAMPLES / "the_selfish_giant.txt"), "Why did the Giant build a wall?"
    )
    lines = err.strip().splitlines()
    assert code in (0, 4) and "Traceback" not in err
    said = [line for line in lines if "ONNX Runtime" in line]
    assert len(said) == 1 and "llama.cpp makes them" in said[0]
    assert not folder.exists()  # written again next time
    backend = EmbeddedBackend(lora=embedded_files.shipped_finder().path, prepare=True, decisions=True)
    assert backend._decision_scorer() is not None


@needs_model
@pytest.mark.slow
def test_doctor_says_where_the_decisions_run(capsys, cache_dir, monkeypatch):
    monkeypatch.delenv("CWREAD_ONNX_DECISIONS", raising=False)
    code, out, _ = run(capsys, "doctor", "--backend", "embedded", "--prepare")
    assert code == 0 and "decisions (YES or NO, scored) run on ONNX Runtime" in " ".join(out.split())
    monkeypatch.setenv("CWREAD_ONNX_DECISIONS", "0")
    code, out, _ = run(capsys, "doctor", "--backend", "embedded", "--prepare")
    assert code == 0 and "ONNX Runtime" not in out


@needs_model
@pytest.mark.slow
def test_the_instructions_are_read_once_and_kept_for_the_next_process(cache_dir, tmp_path):
    backend = EmbeddedBackend(lora=embedded_files.shipped_finder().path, prepare=True, decisions=True)
    scorer = backend._decision_scorer()
    request = _decision_prompts(1)[0]
    states = tmp_path / "states"
    assert scorer is not None
    first = DecisionScorer(_finder_graph(), 1, states)
    whole = DecisionScorer(_finder_graph(), 1)  # keeps nothing on disk
    ours, _, _ = first.top_tokens(request.messages, request.decision.opens)
    kept = list(states.glob("*.npy"))
    assert len(kept) == 1 and kept[0].stat().st_mode & 0o077 == 0  # the user's alone
    # the next process reads the start from the file, and scores as if it had read it whole
    later = DecisionScorer(_finder_graph(), 1, states)
    computed = []
    original = later.session.run
    later.session.run = lambda names, feeds: computed.append(len(feeds["input_ids"])) or original(names, feeds)
    again, count, _ = later.top_tokens(request.messages, request.decision.opens)
    assert len(computed) == 1 and computed[0] < count  # only what follows the instructions
    alone, _, _ = whole.top_tokens(request.messages, request.decision.opens)
    assert [t["token"] for t in again[:5]] == [t["token"] for t in ours[:5]]
    assert abs(again[0]["logprob"] - alone[0]["logprob"]) < 1e-3
    # a damaged file is removed and the start read again
    kept[0].write_bytes(b"not an array")
    damaged = DecisionScorer(_finder_graph(), 1, states)
    fixed, _, _ = damaged.top_tokens(request.messages, request.decision.opens)
    assert abs(fixed[0]["logprob"] - alone[0]["logprob"]) < 1e-3 and np.load(kept[0]).ndim == 4


@needs_model
@pytest.mark.slow
def test_a_decision_that_fails_on_onnx_runtime_is_made_by_llama_cpp(cache_dir, monkeypatch, capsys):
    monkeypatch.delenv("CWREAD_ONNX_DECISIONS", raising=False)

    def fails(self, messages, opens):
        raise RuntimeError("out of memory\nmore detail")

    monkeypatch.setattr(DecisionScorer, "top_tokens", fails)
    code, out, err = run(capsys, "ask", str(EXAMPLES / "the_selfish_giant.txt"), "Why did the Giant build a high wall round his garden?")
    said = [line for line in err.splitlines() if "warning" in line and "ONNX Runtime" in line]
    assert code == 0 and "wall" in out and "Traceback" not in err
    assert len(said) == 1 and "out of memory" in said[0] and "llama.cpp makes them" in said[0]
