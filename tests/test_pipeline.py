"""Packing and the whole pipeline on the scripted backend."""

import re
from dataclasses import replace

import pytest

from cwread import api
from cwread.agents.finder import GenerativeFinder, read_segments
from cwread.agents.interpreter import prompt_fits
from cwread.answer.extractive import sentence_ranker
from cwread.backends import GenerationRequest
from cwread.backends.callcache import CachedBackend
from cwread.backends.scripted import ScriptedBackend
from cwread.backends.select import Selection
from cwread.book import document_from_bytes
from cwread.errors import ModelError
from cwread.records.question import Question
from cwread.records.stages import GroundedReply, Quote, Verdict
from cwread.retrieval.embedders import load_embedder
from cwread.retrieval.segments import Budget, Segment
from cwread.run.packing import pack
from cwread.run.pipeline import run
from cwread.run.planning import plan_run
from cwread.settings import AnswerSettings, RunSettings
from tests.scripted_replies import finder_reply


def doc_of(n: int, length: int = 50):
    text = "\n\n".join(f"Paragraph {i} " + "x" * (length - 12) for i in range(1, n + 1))
    return document_from_bytes(text.encode(), "d")


def verdict(start, end, decision="YES", cited=(), reason="r"):
    quotes = tuple(Quote(pid, "", 0, 0) for pid in cited)  # a clue quoted from each cited paragraph
    return Verdict(Segment(start, end, "anchor", 1.0), decision, GroundedReply(reason, quotes=quotes))


def budget(**kw):
    values = {"preset": "t", "anchors": 4, "read": 10, "n_e": 5, "p_r": 2, "p_w": 5, "b_c": 13000}
    values.update(kw)
    return Budget(**values)


def test_packet_is_kept_segments_in_narrative_order():
    doc = doc_of(30)
    packet = pack(doc, [verdict(20, 22), verdict(3, 5, "NO"), verdict(8, 9)], budget())
    assert packet.ids == [8, 9, 20, 21, 22]
    assert not packet.fallback
    assert packet.segments == ((20, 22), (8, 9))


def test_n_e_caps_segments_in_reading_order():
    doc = doc_of(30)
    packet = pack(doc, [verdict(20, 20), verdict(3, 3), verdict(8, 8)], budget(n_e=2))
    assert packet.ids == [3, 20]


def test_with_no_finder_to_filter_b_c_alone_bounds_the_packet():
    doc = doc_of(30)  # 50 characters a paragraph
    read = [verdict(20, 20), verdict(3, 3), verdict(8, 8), verdict(12, 12)]
    assert pack(doc, read, budget(n_e=2, b_c=160), limit_segments=False).ids == [3, 8, 20]
    assert pack(doc, read, budget(n_e=2, b_c=160)).ids == [3, 20]


def test_cited_paragraphs_and_neighbours_come_first_under_the_char_budget():
    doc = doc_of(30, length=100)
    # segment 10-16 cites 13: core is 12-14; only ~4 paragraphs fit
    packet = pack(doc, [verdict(10, 16, cited=[13])], budget(b_c=420))
    # the core (12-14) first, then the segment from its start while the budget lasts
    assert packet.ids == [10, 12, 13, 14]
    assert packet.chars <= 420
    assert set(packet.left_out) == set(range(10, 17)) - set(packet.ids)


def test_nothing_kept_falls_back_to_the_top_segments():
    doc = doc_of(10)
    packet = pack(doc, [verdict(4, 5, "NO"), verdict(1, 2, "NO")], budget(n_e=1))
    assert packet.fallback and packet.ids == [4, 5]


def test_token_check_drops_lowest_priority_paragraphs():
    doc = doc_of(30)
    packet = pack(doc, [verdict(1, 3), verdict(20, 22)], budget(), fits=lambda ev: len(ev) <= 4)
    assert packet.ids == [1, 2, 3, 20]


def test_prompt_fits_uses_the_backend_context():
    request = GenerationRequest(messages=(("user", "word " * 100),), max_tokens=50)
    assert prompt_fits(ScriptedBackend(context=1000), request)
    assert not prompt_fits(ScriptedBackend(context=150), request)


def scripted_selection(interpreter_replies, finder=finder_reply):
    finder_backend = ScriptedBackend(default=finder, model="finder")
    interpreter_backend = ScriptedBackend(interpreter_replies, model="interpreter")
    return Selection(finder_backend, interpreter_backend, "backend: scripted")


def test_open_question_end_to_end(story, cache_dir):
    doc = api.open_document(str(story))
    selection = scripted_selection(
        ["<reason>[5] \"The fishermen of the harbour later gave her a silver medal, which she kept in a biscuit tin under her bed.\"</reason><answer>In a tin</answer>"]
    )
    question = api.make_question("Where did she keep the medal?")
    trace = api.ask(doc, question, api.Settings(api.SessionSettings(use_cache=False)), selection=selection)
    assert trace.question.kind == "open" and trace.answer == "In a tin"
    assert trace.citations == [5]
    assert 5 in trace.packet.ids
    assert [v.decision for v in trace.verdicts].count("YES") == 1
    assert trace.self_check is None and not trace.self_check_triggered
    # the Interpreter saw only packet paragraphs
    evidence = selection.interpreter.requests[0].messages[-1][1].split("Question:")[0]
    assert [int(i) for i in re.findall(r"^\[(\d+)\]", evidence, re.M)] == trace.packet.ids


def test_a_free_form_why_question_skips_its_self_check_unless_asked(story, cache_dir):
    """τ(q) names "why" questions, but a free-form answer's second pass was measured not to earn
    its call (benchmarks/results/self-check-open-qwen15-cpu.md): auto leaves it out and says
    why; asked for, it runs."""
    doc = api.open_document(str(story))
    reply = "<reason>[5] \"The fishermen of the harbour later gave her a silver medal, which she kept in a biscuit tin under her bed.\"</reason><answer>To keep it safe</answer>"
    question = api.make_question("Why did she keep the medal in a tin?")
    generative = AnswerSettings(answer_mode="generative")
    selection = scripted_selection([reply, reply])
    trace = api.ask(doc, question, api.Settings(api.SessionSettings(use_cache=False), api.RunSettings(answering=generative)), selection=selection)
    assert trace.self_check is None and not trace.plan.self_check
    assert "not worth its call for a free-form answer" in trace.skipped["self-check"]
    assert len(selection.interpreter.requests) == 1
    selection = scripted_selection([reply, reply])
    asked = api.RunSettings(answering=replace(generative, self_check=True))
    trace = api.ask(doc, question, api.Settings(api.SessionSettings(use_cache=False), asked), selection=selection)
    assert trace.self_check is not None and "self-check" not in trace.skipped
    assert len(selection.interpreter.requests) == 2


def test_mcq_with_self_check_that_changes_the_answer(story, cache_dir):
    doc = api.open_document(str(story))
    selection = scripted_selection(
        [
            "<reason>[5] \"The fishermen of the harbour later gave her a silver medal, which she kept in a biscuit tin under her bed.\"</reason><answer>A</answer>",
            "<reason>[5] \"The fishermen of the harbour later gave her a silver medal, which she kept in a biscuit tin under her bed.\"</reason><answer>(B)</answer>",
        ]
    )
    trace = api.ask(doc, api.make_question("Why did she keep the medal in a tin?", {"A": "a drawer", "B": "a tin"}), api.Settings(api.SessionSettings(use_cache=False)), selection=selection)
    assert trace.question.kind == "mcq" and trace.self_check_triggered
    assert trace.interpreter.answer == "A" and trace.answer == "B"
    assert "Previous answer: A" in selection.interpreter.requests[1].messages[-1][1]


def test_claim_always_self_checks_and_drops_invalid_citations(story, cache_dir):
    doc = api.open_document(str(story))
    selection = scripted_selection(
        [
            "<reason>[5] \"The fishermen of the harbour later gave her a silver medal, which she kept in a biscuit tin under her bed.\" and [99] \"support it\"</reason><answer>true</answer>",
            "<reason>[5] \"The fishermen of the harbour later gave her a silver medal, which she kept in a biscuit tin under her bed.\"; [77] \"too\"</reason><answer>TRUE</answer>",
        ]
    )
    trace = api.ask(doc, api.make_question("She kept the medal in a biscuit tin.", claim=True), api.Settings(api.SessionSettings(use_cache=False)), selection=selection)
    assert trace.question.kind == "claim" and trace.answer == "TRUE"
    assert trace.citations == [5] and trace.final.reply.dropped == ("77",)
    assert trace.interpreter.reply.dropped == ("99",)
    assert trace.final.reply.forged == (("77", "too"),) and trace.outcome.supported


def test_unparseable_finder_reply_is_retried_then_kept(story, cache_dir):
    doc = api.open_document(str(story))
    finder = ScriptedBackend(default="I think so.", model="finder")
    segs = [Segment(1, 2, "anchor", 1.0), Segment(3, 4, "window", 0.5)]
    verdicts = read_segments(GenerativeFinder(finder), doc, segs, Question("medal", "open"))
    assert all(v.kept_on_failure and v.decision == "YES" and not v.reply.parsed_first_try for v in verdicts)
    assert len(finder.requests) == 4  # one retry each
    assert "could not be read" in finder.requests[1].messages[-1][1]


def test_retry_that_parses_counts_as_not_first_try(story, cache_dir):
    doc = api.open_document(str(story))
    finder = ScriptedBackend(["garbage", '<reason>[2] "Martha Quill kept the lighthouse on Gannet Rock"</reason><answer>YES</answer>'])
    [v] = read_segments(GenerativeFinder(finder), doc, [Segment(1, 2, "anchor", 1.0)], Question("q", "open"))
    assert v.decision == "YES" and not v.kept_on_failure and not v.reply.parsed_first_try and v.reply.cited == (2,)


def test_interpreter_that_never_parses_gives_no_answer(story, cache_dir):
    doc = api.open_document(str(story))
    selection = scripted_selection(["nonsense", "still nonsense"])
    trace = api.ask(doc, api.make_question("Where is the medal?"), api.Settings(api.SessionSettings(use_cache=False)), selection=selection)
    assert trace.answer is None and trace.final.problem == "no <answer> tag"
    assert trace.self_check is None


def test_finder_runs_concurrently_and_keeps_order(story, cache_dir):
    doc = api.open_document(str(story))
    finder = ScriptedBackend(default=finder_reply, concurrency=4)
    segs = [Segment(i, i, "window", 0.0) for i in range(1, 7)]
    seen = []
    verdicts = read_segments(GenerativeFinder(finder), doc, segs, Question("q", "open"), progress=lambda s, d, t: seen.append(d))
    assert [v.segment.start for v in verdicts] == list(range(1, 7))
    assert [v.decision for v in verdicts] == ["NO", "NO", "NO", "NO", "YES", "NO"]
    assert seen[-1] == 6


def test_backend_failure_propagates_as_model_error(story, cache_dir):
    doc = api.open_document(str(story))
    selection = scripted_selection([], finder=ModelError("server down"))
    with pytest.raises(ModelError, match="server down"):
        api.ask(doc, api.make_question("q"), api.Settings(api.SessionSettings(use_cache=False)), selection=selection)


def test_read_budget_limits_finder_calls(story, cache_dir):
    doc = api.open_document(str(story))
    selection = scripted_selection(["<reason>[1] x</reason><answer>x</answer>"])
    api.ask(doc, api.make_question("lamp"), api.Settings(api.SessionSettings(use_cache=False), api.RunSettings(budget=api.make_budget("focused", read=2, anchors=1, p_r=0, p_w=1))), selection=selection)
    assert len(selection.finder.requests) == 2


def test_call_cache_answers_repeated_calls(tmp_path):
    inner = ScriptedBackend(["<reason>a</reason><answer>YES</answer>"])
    cached = CachedBackend(inner, tmp_path)
    request = GenerationRequest(messages=(("user", "hello"),))
    first = cached.generate(request)
    second = cached.generate(request)
    assert not first.cached and second.cached and second.text == first.text
    assert len(inner.requests) == 1 and cached.hits == 1
    other = GenerationRequest(messages=(("user", "hello"),), max_tokens=99)
    with pytest.raises(ModelError):  # a different request is not served from the cache
        cached.generate(other)


def test_direct_pipeline_call_records_models_and_tokens(story, cache_dir):
    doc = api.open_document(str(story))
    finder = ScriptedBackend(default=finder_reply, model="f")
    interp = ScriptedBackend(['<reason>[5] "which she kept in a biscuit tin under her bed"</reason><answer>A</answer>'], model="i")
    found = replace(api.find(doc, Question("Where was the medal?", "mcq", {"A": "a biscuit tin", "B": "y"})), budget=budget())
    selection = Selection(finder, interp, "scripted")
    settings = RunSettings(answering=AnswerSettings(self_check=False))
    rank = sentence_ranker(found.document, load_embedder(found.embedder))
    trace = run(plan_run(found.question, selection, settings, budget=found.budget, rank=rank), found)
    assert trace.models == {"finder": "scripted:f", "interpreter": "scripted:i"}
    assert trace.tokens()["prompt"] > 0 and trace.answer == "A"
