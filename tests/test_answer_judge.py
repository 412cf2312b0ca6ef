"""An extractive answer judged by a trained Finder (cwread.finder.ParagraphJudge), through the
real CLI on the scripted backend: the answer comes from the paragraph it scores best, none is
given below its threshold (exit 4, the best evidence labelled as evidence), and the trace
carries its scores, calls and time."""

import json

from cwread.backends import Generation, GenerationRequest, TrainedAdapter
from cwread.backends.scripted import ScriptedBackend
from tests.conftest import run

TRAINED = TrainedAdapter("finder-test@1", "decision-first", keep_threshold=-0.5, answer_threshold=-1.0, shipped=True)
SMALL = 135_000_000  # a model too small to write: open answers are extractive


def judging(scores: dict[str, float]):
    """A trained Finder whose score of a paragraph is that of the first word of `scores` it holds."""

    def reply(request: GenerationRequest) -> Generation:
        segment = request.messages[-1][1].split("Question:")[0].lower()
        score = next((v for word, v in scores.items() if word in segment), -3.0)
        return Generation("<answer>YES</answer>" if score >= 0 else "<answer>NO</answer>", label_logprobs=(("YES", score), ("NO", 0.0)))

    return ScriptedBackend(default=reply, model="finder", size=SMALL, trained=TRAINED, logprobs=True)


def test_the_answer_comes_from_the_paragraph_the_finder_scores_best(capsys, story, cache_dir, scripted):
    scripted.finder = judging({"biscuit": 2.0, "medal": -0.5})
    scripted.interpreter = ScriptedBackend(model="interp", size=SMALL)
    code, out, err = run(capsys, "ask", str(story), "Where did Martha keep the silver medal?", "--backend", "scripted", "--json")
    assert code == 0, err
    trace = json.loads(out)
    judged = trace["answer_judgement"]
    assert trace["plan"]["answer_threshold"] == TRAINED.answer_threshold
    assert judged["chosen"] == trace["citations"][0] and "biscuit tin" in trace["quotes"][0]["quote"]
    assert all(q["in_packet"] for q in trace["quotes"])
    assert len(judged["scores"]) == len(scripted.finder.requests) >= 1  # one call a judged paragraph
    assert trace["plan"]["finder_skipped"] and trace["finder"] == []  # the Finder stage itself did not read
    assert "answer_judge" in trace["timings"]


def test_below_the_threshold_there_is_no_answer_and_the_evidence_is_labelled(capsys, story, cache_dir, scripted):
    scripted.finder = judging({})  # every paragraph -3.0, under -1.0
    scripted.interpreter = ScriptedBackend(model="interp", size=SMALL)
    code, out, _err = run(capsys, "ask", str(story), "Where did Martha keep the silver medal?", "--backend", "scripted", "--json")
    assert code == 4
    trace = json.loads(out)
    assert trace["answer"] is None and trace["abstained"] and trace["status"] == "not-determined"
    assert trace["answer_judgement"]["chosen"] is None and trace["quotes"]  # best evidence still shown
    code, out, _err = run(capsys, "ask", str(story), "Where did Martha keep the silver medal?", "--backend", "scripted")
    assert code == 4
    assert "Best evidence (not an answer" in out and "none of the" in out and "under -1.00" in out


def test_without_a_trained_adapter_nothing_is_judged(capsys, story, cache_dir, scripted):
    scripted.finder = ScriptedBackend(default="<answer>YES</answer>", model="finder", size=SMALL)
    scripted.interpreter = ScriptedBackend(model="interp", size=SMALL)
    code, out, err = run(capsys, "ask", str(story), "Where did Martha keep the silver medal?", "--backend", "scripted", "--json")
    assert code == 0, err
    assert json.loads(out)["answer_judgement"] is None and scripted.finder.requests == []
    # an adapter with no answer threshold judges no answer either
    untested = TrainedAdapter("finder-test@0", "decision-first", keep_threshold=-0.5, shipped=True)
    scripted.finder = ScriptedBackend(default="<answer>YES</answer>", model="finder", size=SMALL, trained=untested)
    scripted.interpreter = ScriptedBackend(model="interp", size=SMALL)
    code, out, err = run(capsys, "ask", str(story), "Where did Martha keep the silver medal?", "--backend", "scripted", "--json")
    assert code == 0, err
    trace = json.loads(out)
    assert trace["answer_judgement"] is None and trace["plan"]["answer_threshold"] is None
    assert scripted.finder.requests == []
