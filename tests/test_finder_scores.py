"""The Finder's score: its log-odds of YES over NO at the answer, where the backend gives
log-probabilities; carried through the call cache, the verdicts, the trace and the eval."""

import json
import math

import pytest

from cwread.api import Selection
from cwread.backends import Generation, GenerationRequest
from cwread.backends.callcache import CachedBackend
from cwread.backends.logprobs import label_logprobs
from cwread.backends.scripted import ScriptedBackend
from cwread.cli import main
from cwread.eval import dataset, run
from cwread.eval import report as eval_report
from cwread.eval import summary as eval_summary
from cwread.eval.run import EvalContext
from cwread.retrieval.segments import make_budget
from cwread.settings import FinderSettings
from tests.scripted_replies import finder_reply, smart_interpreter


def entry(token: str, tops: list[tuple[str, float]] = ()) -> dict:
    return {"token": token, "logprob": -0.1, "top_logprobs": [{"token": t, "logprob": lp} for t, lp in tops]}


def test_labels_sum_the_tokens_that_could_begin_them():
    tokens = [entry('<reason>[1] "A."</reason>\n<'), entry("answer"), entry(">")]
    tokens += [
        entry("Y", [("Y", -1.0), ("YES", -3.0), ("Yes", -0.5), (" Y", -0.7), ("N", -2.0), ("NO", -2.5)])
    ]
    tokens += [entry("ES"), entry("</answer>")]
    scores = dict(label_logprobs(tokens, ("YES", "NO")))
    # "Yes" and " Y" cannot begin YES under the grammar; "Y" and "YES" can
    assert scores["YES"] == pytest.approx(math.log(math.exp(-1.0) + math.exp(-3.0)))
    assert scores["NO"] == pytest.approx(math.log(math.exp(-2.0) + math.exp(-2.5)))


def test_json_replies_and_missing_labels():
    tokens = [entry('{"quotes": [], "answer": "'), entry("NO", [("NO", -0.1), ("N", -2.0), ("maybe", -6.0)])]
    scores = dict(label_logprobs(tokens, ("YES", "NO")))
    assert scores["YES"] == -6.0  # not among the alternatives: the lowest listed, an upper bound
    assert scores["NO"] == pytest.approx(math.log(math.exp(-0.1) + math.exp(-2.0)))
    assert label_logprobs([entry("no answer tag at all")], ("YES", "NO")) == ()


def test_the_call_cache_keeps_scores_and_old_keys():
    plain = GenerationRequest(messages=(("user", "hi"),))
    assert "label_scores" not in plain.cache_key_fields()  # calls cached before scores still hit
    scored = GenerationRequest(messages=(("user", "hi"),), label_scores=("YES", "NO"))
    assert scored.cache_key_fields()["label_scores"] == ["YES", "NO"]


def test_cached_scores_come_back_as_they_went(tmp_path):
    reply = Generation("<reason>x</reason><answer>YES</answer>", label_logprobs=(("YES", -0.5), ("NO", -1.5)))
    inner = ScriptedBackend([reply])
    cached = CachedBackend(inner, tmp_path)
    request = GenerationRequest(messages=(("user", "hi"),), label_scores=("YES", "NO"))
    first = cached.generate(request)
    again = cached.generate(request)
    assert again.cached and again.label_logprobs == first.label_logprobs == (("YES", -0.5), ("NO", -1.5))


def scored_finder(request: GenerationRequest) -> Generation:
    """Keeps every segment (a Finder with a YES bias) but scores the medal's segments higher."""
    text = finder_reply(request)
    medal = "medal" in request.messages[-1][1].split("Question:")[0].lower()
    return Generation(
        text.replace("<answer>NO</answer>", "<answer>YES</answer>"),
        label_logprobs=(("YES", -0.1 if medal else -0.6), ("NO", -2.5 if medal else -0.9)),
    )


def test_verdicts_and_traces_carry_the_score(capsys, story, cache_dir, scripted):
    scripted.finder = ScriptedBackend(default=scored_finder)
    scripted.interpreter = ScriptedBackend(default=smart_interpreter)
    code = main(["ask", str(story), "What did Martha win?", "--backend", "scripted", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    verdicts = json.loads(out)["finder"]
    assert verdicts and all(v["decision"] == "YES" for v in verdicts)
    assert {round(v["score"], 4) for v in verdicts} <= {2.4, 0.3}  # ln P(YES) - ln P(NO)


def test_eval_reports_the_score_as_a_ranking(tmp_path, cache_dir, eval_data):
    """A Finder that keeps everything earns nothing at its own keep rate, but its score can still
    rank gold above what retrieval ranks first: the report shows that apart from the bias."""
    finder = ScriptedBackend(default=scored_finder, model="f")
    ctx = EvalContext(Selection(finder, finder, "scripted"), make_budget("focused"), "minilm-static")
    records = dataset.load_records(eval_data)
    rows = [run.run_record(r, "finder", ctx) for r in records]
    labelled = [r for r in rows if "segments_gold" in r]
    assert all(len(r["finder_scores"]) == len(r["segment_gold"]) == r["finder_calls"] for r in labelled)
    summary = eval_summary.summarize(rows)["methods"]["finder"]["finder"]
    assert summary["keep_rate"] == 1.0 and summary["gold_kept_minus_rank"] == 0
    ranking = summary["score_ranking"]
    assert ranking["records"] == len(labelled)
    for k in eval_summary.SCORE_TOP_K:
        expected = 0
        for r in labelled:
            order = sorted(range(len(r["finder_scores"])), key=lambda i: (-r["finder_scores"][i], i))
            expected += sum(r["segment_gold"][i] for i in order[:k])
        assert ranking[f"top{k}"]["score_gold"] == expected
        assert ranking[f"top{k}"]["rank_gold"] == sum(sum(r["segment_gold"][:k]) for r in labelled)
    text = eval_report.report_markdown(eval_summary.summarize(rows), {})
    assert "as a ranking" in text and "top 1: score / rank / diff" in text


def test_rows_without_scores_report_no_ranking(tmp_path, cache_dir, eval_data):
    finder = ScriptedBackend(default=finder_reply, model="f")  # a plain-text backend: no scores
    ctx = EvalContext(Selection(finder, finder, "scripted"), make_budget("focused"), "minilm-static")
    records = dataset.load_records(eval_data)
    rows = [run.run_record(r, "finder", ctx) for r in records]
    assert all(s is None for r in rows for s in r.get("finder_scores", []))
    assert eval_summary.summarize(rows)["methods"]["finder"]["finder"]["score_ranking"] == {}
    assert "as a ranking" not in eval_report.report_markdown(eval_summary.summarize(rows), {})


def test_an_unreadable_reply_kept_for_recall_has_no_score():
    from cwread.agents.finder import GenerativeFinder
    from cwread.book import document_from_bytes
    from cwread.records.question import Question
    from cwread.retrieval.segments import Segment

    doc = document_from_bytes(b"The key is under the mat.\n\nThe door is red.", "t")
    garbled = Generation("no tags at all", label_logprobs=(("YES", -0.1), ("NO", -3.0)))
    verdict = GenerativeFinder(ScriptedBackend([garbled, garbled])).decide_one(
        doc,
        Segment(1, 1, "anchor", 1.0),
        Question("Where is the key?", "open"),
    )
    assert verdict.kept_on_failure and verdict.decision == "YES" and verdict.score is None
    read = Generation(
        '<reason>[1] "The key is under the mat."</reason><answer>NO</answer>',
        label_logprobs=(("YES", -2.0), ("NO", -0.5)),
    )
    verdict = GenerativeFinder(ScriptedBackend([read])).decide_one(
        doc, Segment(1, 1, "anchor", 1.0), Question("Where is the key?", "open")
    )
    assert verdict.decision == "NO" and verdict.score == pytest.approx(-1.5)


def test_a_keep_threshold_turns_scores_into_decisions(capsys, story, cache_dir, scripted):
    """finder.keep_threshold: a scored verdict keeps its segment when its score reaches the threshold,
    whatever its label; the label alone decides without one."""
    scripted.finder = ScriptedBackend(default=scored_finder)
    scripted.interpreter = ScriptedBackend(default=smart_interpreter)
    one_paragraph_segments = ["--set", "budget.p_r=0", "--set", "budget.p_w=1"]
    question = [
        "ask",
        str(story),
        "What did Martha win?",
        "--backend",
        "scripted",
        "--json",
        *one_paragraph_segments,
    ]
    code = main([*question, "--set", "finder.keep_threshold=1.0"])
    out, err = capsys.readouterr()
    assert code == 0, err
    trace = json.loads(out)
    assert trace["plan"]["keep_threshold"] == 1.0 and "keep_threshold" not in trace["budget"]
    verdicts = trace["finder"]
    assert len(verdicts) == 6  # one segment a paragraph
    assert {v["decision"] for v in verdicts if v["score"] > 1.0} == {"YES"}
    assert {v["decision"] for v in verdicts if v["score"] < 1.0} == {"NO"}
    packet = {p["id"] for p in trace["packet"]}
    assert 5 in packet and packet <= {4, 5, 6}  # the medal's paragraph (and the packing's neighbours)
    code = main(question)  # without a threshold the scripted Finder's YES bias keeps all six
    out, _ = capsys.readouterr()
    assert {v["decision"] for v in json.loads(out)["finder"]} == {"YES"}


@pytest.mark.parametrize("value", ["nan", "inf", "x"])
def test_a_keep_threshold_must_be_a_finite_number(capsys, story, value):
    code = main(["ask", str(story), "What did Martha win?", "--set", f"finder.keep_threshold={value}"])
    _, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err and err.strip().count("\n") <= 3, err


def test_eval_applies_the_keep_threshold(tmp_path, cache_dir, eval_data):
    finder = ScriptedBackend(default=scored_finder, model="f")
    budget = make_budget("focused", p_r=0, p_w=1)  # a segment a paragraph
    finding = FinderSettings(keep_threshold=1.0)
    ctx = EvalContext(Selection(finder, finder, "scripted"), budget, "minilm-static", finding=finding)
    records = dataset.load_records(eval_data)
    rows = [run.run_record(r, "finder", ctx) for r in records]
    assert rows and all(
        row["finder_yes"] == sum(s > 1.0 for s in row["finder_scores"])
        for row in rows
        if "finder_scores" in row
    )
    assert sum(row["finder_yes"] for row in rows) < sum(row["finder_calls"] for row in rows)


def test_the_eval_report_names_a_keep_threshold(capsys, tmp_path, cache_dir, scripted, eval_data):
    scripted.finder = ScriptedBackend(default=scored_finder)
    data = eval_data
    report = tmp_path / "r.md"
    args = ["eval", data, "-m", "finder", "--backend", "scripted", "--report", str(report), "--no-cache"]
    assert main([*args, "--set", "finder.keep_threshold=-0.5"]) == 0
    assert "B_c 13000, keep threshold -0.5)" in report.read_text()
    assert main(args) == 0
    assert "keep threshold" not in report.read_text()


def test_a_decision_first_clue_from_a_schema_server_is_read_as_its_quote():
    """A server that keeps the reply format with a JSON schema (Ollama's format, a json
    constraint) replies JSON to the clue asked after a YES too: its quote is the clue."""
    from cwread.agents.finder import GenerativeFinder
    from cwread.book import document_from_bytes
    from cwread.records.question import Question
    from cwread.retrieval.segments import Segment

    doc = document_from_bytes(b"The key is under the mat.\n\nThe door is red.", "t")
    decision = Generation('{"quotes": [], "answer": "YES"}', structured=True)
    clue = Generation(json.dumps({"quotes": [{"id": 1, "quote": "The key is under the mat."}]}), structured=True)
    verdict = GenerativeFinder(ScriptedBackend([decision, clue]), reply="decision-first").decide_one(
        doc, Segment(1, 2, "anchor", 1.0), Question("Where is the key?", "open")
    )
    assert verdict.decision == "YES" and [q.text.rstrip(".") for q in verdict.reply.quotes] == ["The key is under the mat"]
    assert verdict.reply.cited == (1,) and "{" not in verdict.reply.call.raw.splitlines()[-1]
