"""An extractive answer judged by a trained Finder (cwread.agents.answer_picker.AnswerPicker), through the
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


def test_judging_stops_at_a_paragraph_it_is_sure_of_and_says_so(capsys, story, cache_dir, scripted):
    """Candidates after one scored finder.SURE are not read (they could not change the choice);
    the trace lists them, the view says how many."""
    from cwread.records.stages import SURE

    scripted.finder = judging({"medal": SURE + 1.0})
    scripted.interpreter = ScriptedBackend(model="interp", size=SMALL)
    code, out, err = run(capsys, "ask", str(story), "Where did Martha keep the silver medal?", "--backend", "scripted", "--json")
    judged = json.loads(out)["answer_judgement"]
    first = judged["scores"][0]
    assert code == 0, err
    assert len(judged["scores"]) == len(scripted.finder.requests) and judged["unjudged"]
    assert first["score"] >= SURE and judged["chosen"] == first["id"]
    code, out, _ = run(capsys, "ask", str(story), "Where did Martha keep the silver medal?", "--backend", "scripted")
    # the view says it in a sentence; how many were left unread, and the scores, are the trace's
    shown = " ".join(out.replace("│", " ").split())
    assert f"[{first['id']}] was judged to answer it" in shown and "left unread" not in shown


def test_candidates_are_paragraphs_ranked_whole_and_never_only_a_restatement():
    """A paragraph whose only sentence restates the question is no candidate; a paragraph that
    holds the answer without repeating the question's words in one sentence is one."""
    from cwread.answer.extractive import candidate_paragraphs

    question = "Who killed Sir Charles Baskerville?"
    evidence = [
        (1, "Sir Charles Baskerville was killed."),
        (2, "Who killed Sir Charles Baskerville? Who killed him?"),
        (3, "It was Stapleton. He set the hound on Sir Charles that night on the moor."),
        (4, "The weather was fine."),
    ]
    found = candidate_paragraphs(question, evidence, None, 5)
    assert 1 not in found and 2 not in found and found[0] == 3


def test_a_paragraph_no_answer_could_be_drawn_from_is_no_candidate():
    """A paragraph whose sentences are a question and words that share none of the question's
    is no candidate: the Finder could choose it, and no answer would come of it."""
    from cwread.answer.extractive import best_answer, candidate_paragraphs

    question = "Who is Barrymore?"
    evidence = [(1, "“Ha! Where is Barrymore?”"), (2, "The weather was fine."), (3, "Barrymore is the butler of the Hall.")]
    found = candidate_paragraphs(question, evidence, None, 5)
    assert found == [3]
    assert best_answer(question, [evidence[2]], None, 1, spans=False)[0] == evidence[2][1]


def test_a_long_paragraph_is_judged_by_its_sentences_around_the_one_most_like_the_question():
    """judged_window: the whole of a short paragraph; of a long one, whole sentences around the
    one that fits the question best, widened on both sides while they fit, never past `most`."""
    from cwread.answer.extractive import judged_window

    question = "Where did Martha hide the silver medal?"
    short = "Martha hid the silver medal in the biscuit tin."
    assert judged_window(question, short, None, 600) == (0, len(short))
    filler = [f"The weather on day {n} was grey and the road was long." for n in range(12)]
    sentences = [*filler[:6], "Martha hid the silver medal in the biscuit tin.", *filler[6:]]
    text = " ".join(sentences)
    start, end = judged_window(question, text, None, 200)
    window = text[start:end]
    assert "biscuit tin" in window and end - start <= 200
    assert window.startswith("The weather") and window.endswith(".")  # whole sentences
    before, after = text[:start], text[end:]
    assert before.count("weather") >= 4 and after.count("weather") >= 4  # widened on both sides, not all
    # a single sentence longer than `most` is read whole
    one = "Martha hid the silver medal " + "very " * 30 + "carefully. It rained."
    start, end = judged_window(question, one, None, 100)
    assert start == 0 and one[start:end].endswith("carefully.")


def test_a_long_candidate_is_judged_by_a_part_of_it_and_the_trace_says_which(capsys, tmp_path, cache_dir, scripted):
    """The Finder reads a long paragraph's window (answer_picker.JUDGED_CHARS), not the whole; the
    answer still comes from the whole paragraph, and `answer_judgement` gives the part read."""
    from cwread.agents.answer_picker import JUDGED_CHARS

    filler = " ".join(f"The weather on day {n} was grey, and the long road ran on past the mill." for n in range(20))
    long_paragraph = f"{filler} Martha hid the silver medal in the biscuit tin. {filler}"
    assert len(long_paragraph) > 2 * JUDGED_CHARS
    book = tmp_path / "book.txt"
    book.write_text(f"The house stood on a hill.\n\n{long_paragraph}\n\nThe end came in the spring.\n", encoding="utf-8")
    scripted.finder = judging({"biscuit": 2.0})
    scripted.interpreter = ScriptedBackend(model="interp", size=SMALL)
    code, out, err = run(capsys, "ask", str(book), "Where did Martha hide the silver medal?", "--backend", "scripted", "--json")
    assert code == 0, err
    trace = json.loads(out)
    (judged,) = [s for s in trace["answer_judgement"]["scores"] if s["id"] == 2]
    start, end = judged["read"]
    assert 0 < start < end < len(long_paragraph) and end - start <= JUDGED_CHARS
    assert "biscuit tin" in long_paragraph[start:end]
    read = [r.messages[-1][1] for r in scripted.finder.requests if "biscuit" in r.messages[-1][1]]
    assert read and all(len(m) < len(long_paragraph) for m in read)  # the call held the window only
    assert trace["citations"] == [2] and "biscuit tin" in trace["quotes"][0]["quote"]
