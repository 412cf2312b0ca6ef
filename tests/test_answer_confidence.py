"""The model's confidence in its own open answer: the mean log-probability of its answer's
tokens, asked of the backend for open questions only, carried to the trace and eval rows."""

from __future__ import annotations

import json

import pytest

from cwread.backends import Generation, GenerationRequest
from cwread.backends.callcache import CachedBackend
from cwread.backends.logprobs import answer_logprob
from cwread.backends.scripted import ScriptedBackend
from cwread.cli import main
from tests.scripted_replies import smart_interpreter


def entry(token: str, logprob: float) -> dict:
    return {"token": token, "logprob": logprob, "top_logprobs": []}


def test_the_mean_is_over_the_answers_tokens_alone():
    tokens = [entry('<reason>[1] "She kept', -3.0), entry(' it."</reason>\n<', -2.0), entry("answer>", -0.1)]
    tokens += [entry("In", -0.2), entry(" a", -0.4), entry(" tin", -0.9), entry("</answer>", -5.0)]
    assert answer_logprob(tokens) == pytest.approx((-0.2 - 0.4 - 0.9) / 3)


def test_a_json_answer_ends_at_its_closing_quote():
    tokens = [entry('{"quotes": [], "answer": "', -1.0), entry("A", -0.5), entry(' medal', -1.5), entry('"}', -4.0)]
    assert answer_logprob(tokens) == pytest.approx(-1.0)


def test_no_answer_no_confidence():
    assert answer_logprob([entry("<reason>nothing</reason>", -0.1)]) is None
    assert answer_logprob([entry("<answer>", -0.1), entry("</answer>", -0.1)]) is None
    assert answer_logprob([]) is None


def test_the_call_cache_keeps_the_confidence_and_old_keys(tmp_path):
    plain = GenerationRequest(messages=(("user", "hi"),))
    assert "answer_confidence" not in plain.cache_key_fields()  # calls cached before still hit
    asked = GenerationRequest(messages=(("user", "hi"),), answer_confidence=True)
    assert asked.cache_key_fields()["answer_confidence"] is True
    cached = CachedBackend(ScriptedBackend([Generation("<answer>x</answer>", answer_logprob=-0.25)]), tmp_path)
    first = cached.generate(asked)
    again = cached.generate(asked)
    assert again.cached and again.answer_logprob == first.answer_logprob == -0.25


def confident(request: GenerationRequest) -> Generation:
    return Generation(smart_interpreter(request), answer_logprob=-0.375)


def test_an_open_answer_carries_its_confidence_to_the_trace(capsys, story, cache_dir, scripted):
    scripted.interpreter = ScriptedBackend(default=confident)
    code = main(["ask", str(story), "What did Martha win?", "--backend", "scripted", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["interpreter"]["answer_logprob"] == -0.375
    assert [r.answer_confidence for r in scripted.interpreter.requests] == [True]


def test_a_claim_asks_for_no_confidence(capsys, story, cache_dir, scripted):
    scripted.interpreter = ScriptedBackend(default=confident)
    code = main(
        ["verify", str(story), "Martha won a silver medal.", "--backend", "scripted", "--judge-anyway", "--json"]
    )
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    assert json.loads(out)["interpreter"]["answer_logprob"] is None
    assert scripted.interpreter.requests and not any(r.answer_confidence for r in scripted.interpreter.requests)
