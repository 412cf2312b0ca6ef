"""The eval harness: metrics on hand-made values, methods on the scripted backend, resume."""

import json
import re

import pytest

from cwread.api import open_document
from cwread.backends.scripted import ScriptedBackend
from cwread.backends.select import Selection
from cwread.cli import main
from cwread.errors import InputError
from cwread.eval import dataset, metrics, run
from cwread.eval import report as eval_report
from cwread.eval import rows as rows_module
from cwread.eval import summary as eval_summary
from cwread.eval.methods import METHODS, EvalContext
from cwread.records.question import Question
from cwread.retrieval.segments import make_budget
from cwread.settings import FinderSettings
from tests.conftest import EVAL_RECORDS, write_records
from tests.scripted_replies import finder_reply, smart_interpreter

# ---- metrics ---------------------------------------------------------------------------


def test_token_f1():
    assert metrics.token_f1("The silver medal.", "silver medal") == 1.0
    assert metrics.token_f1("a biscuit tin", "in a tin under the bed") == pytest.approx(
        2 * 0.5 * (1 / 4) / (0.5 + 0.25)
    )
    assert metrics.token_f1("", "") == 1.0 and metrics.token_f1("x", "") == 0.0
    assert metrics.token_f1("dog", "cat") == 0.0


def test_rouge_l():
    assert metrics.rouge_l("the cat sat on the mat", "cat sat mat") == pytest.approx(2 * 1.0 * 0.75 / 1.75)
    assert metrics.rouge_l("x y z", "z y x") == pytest.approx(1 / 3)
    assert metrics.rouge_l("", "x") == 0.0


def test_best_over_references_and_missing_prediction():
    assert metrics.best_over_references(metrics.token_f1, "tin", ["box", "a tin"]) == 1.0
    assert metrics.best_over_references(metrics.token_f1, None, ["tin"]) == 0.0


def test_wilson_interval_known_values():
    lo, hi = metrics.wilson_interval(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-3) and hi == pytest.approx(0.9433, abs=1e-3)
    assert metrics.wilson_interval(0, 0) == (0.0, 1.0)
    assert metrics.wilson_interval(0, 5)[0] == 0.0


def test_bootstrap_is_deterministic_and_brackets_the_mean():
    values = [0.0, 0.5, 1.0, 1.0, 0.25]
    a = metrics.bootstrap_interval(values)
    assert a == metrics.bootstrap_interval(values)
    assert a[0] <= sum(values) / len(values) <= a[1]


def test_pair_accuracy_needs_both_members_right():
    rows = [
        {"pair": 1, "correct": True},
        {"pair": 1, "correct": True},
        {"pair": 2, "correct": True},
        {"pair": 2, "correct": False},
        {"pair": 3, "correct": True},  # incomplete pair: not counted
        {"correct": True},
    ]
    assert metrics.pair_accuracy(rows) == (1, 2)


def test_constant_baselines_and_ties():
    base = metrics.constant_baselines(["A", "B", "A", "B"])
    assert base == {"always A": 0.5, "always B": 0.5, "majority": 0.5}
    assert metrics.answer_distribution(["A", None, "A"]) == {"A": 2, "none": 1}


# ---- records ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line,message",
    [
        ("{not json", "not JSON"),
        ('{"id": "x", "doc": "docs/s.txt", "kind": "mcq"}', "no 'question'"),
        ('{"id": "x", "doc": "docs/s.txt", "kind": "essay", "question": "q"}', "kind. must be"),
        ('{"id": "x", "doc": "docs/s.txt", "kind": "mcq", "question": "q"}', "needs options"),
        ('{"id": "x", "doc": "docs/none.txt", "kind": "open", "question": "q"}', "not found"),
        ('{"id": "x", "doc": "docs/s.txt", "kind": "open", "question": "q", "hops": 0}', "'hops' must be"),
        ('{"id": "x", "doc": "docs/s.txt", "kind": "open", "question": "q", "hops": "2"}', "'hops' must be"),
        # a gold no answer can match: "always MAYBE 100.0%" in the baselines
        ('{"id": "x", "doc": "docs/s.txt", "kind": "claim", "question": "q", "answer": "maybe"}', "TRUE or FALSE"),
        (
            '{"id": "x", "doc": "docs/s.txt", "kind": "mcq", "question": "q", "options": {"A": "a", "B": "b"}, "answer": "Z"}',
            r"one of the options' labels \(A, B\)",
        ),
    ],
)
def test_bad_records_are_refused_with_their_line(tmp_path, line, message):
    path = write_records(tmp_path, [])
    (tmp_path / "data.jsonl").write_text(line + "\n")
    with pytest.raises(InputError, match=message):
        dataset.load_records(path)


def test_duplicate_ids_are_refused(tmp_path):
    path = write_records(tmp_path, [EVAL_RECORDS[1], EVAL_RECORDS[1]])
    with pytest.raises(InputError, match="duplicate"):
        dataset.load_records(path)


# ---- methods on the scripted backend ---------------------------------------------------------


@pytest.fixture
def ctx(cache_dir):
    finder = ScriptedBackend(default=finder_reply, model="f")
    interpreter = ScriptedBackend(default=smart_interpreter, model="i")
    return EvalContext(Selection(finder, interpreter, "scripted"), make_budget("focused"), "minilm-static")


@pytest.mark.parametrize("method", METHODS)
def test_every_method_runs_and_scores(tmp_path, ctx, method, eval_data, request):
    if method == "judge":  # the judge's folder as a face reads it from CWREAD_JUDGE
        ctx.finding = FinderSettings(judge_folder=str(request.getfixturevalue("tiny_judge")))
    records = dataset.load_records(eval_data)
    rows = [run.run_record(r, method, ctx) for r in records]
    assert [r["method"] for r in rows] == [method] * 4
    if method == "retrieval":
        assert rows[0]["evidence_anchor_hits"] == 1 and "answer" not in rows[0]
        # the packet the pipeline packs with no Finder to filter: the whole short story fits
        assert rows[0]["evidence_packet_hits"] == 1 and rows[0]["packet_paragraphs"] == 4
        assert rows[0]["question_type"] == "mcq" and rows[0]["hops"] == 1
        return
    if method == "finder":
        assert "answer" not in rows[0] and rows[0]["finder_calls"] > 0
        return
    if method == "judge":  # no model call: the judge's packet, beside the rank's
        assert "answer" not in rows[0] and rows[0]["evidence_anchor_hits"] == 1
        assert rows[0]["evidence_packet_hits"] == 1 and 0 < rows[0]["packet_paragraphs"] <= 4
        return
    if method in ("extractive", "ranked-extractive"):  # no model: open questions get the best sentence
        assert [r["answer"] for r in rows[:3]] == [None, None, None]
        if method == "extractive":
            assert rows[3]["answer"] == "Her cat Admiral slept on the lamp."
        else:  # the words the span reader cuts from it, as the pipeline answers in a short text
            assert "Admiral" in rows[3]["answer"] and rows[3]["answer"] in "Her cat Admiral slept on the lamp."
        assert rows[3]["supported"]
        assert rows[3]["quotes_verbatim"] == rows[3]["quotes_shown"] == 1 and rows[3]["model_calls"] == 0
        return
    assert all(r["parsed"] for r in rows)
    assert all(r["quotes_verbatim"] == r["quotes_shown"] for r in rows)
    # the model's own quotes, as a support check reads them: each in the paragraph it names
    document = open_document(records[0].doc)
    quoted = [q for r in rows for q in r["model_quotes"]]
    assert bool(quoted) is (method != "closed-book")
    assert all(text in document.paragraph(document.id_of(str(pid))).text for pid, text in quoted)
    if method == "closed-book":
        assert all(r["packet_paragraphs"] == 0 for r in rows)
        assert rows[0]["answer"] == "A"  # no evidence: the scripted model falls back to A
    else:
        assert rows[0]["answer"] == "B" and rows[0]["correct"] is True
        assert rows[3]["f1"] == 1.0 and rows[3]["rouge_l"] == 1.0
    if method in ("pipeline", "no-self-check"):
        assert rows[0]["finder_calls"] > 0
    else:
        assert rows[0]["finder_calls"] == 0
    assert rows[1]["self_checked"] is (method in ("pipeline", "no-finder"))
    assert rows[1]["cached_calls"] == 0  # the scripted backend is not cached
    assert rows[1]["model_calls"] == rows[1]["finder_calls"] + 1 + rows[1]["self_checked"]
    if method == "direct":
        assert rows[0]["packet_paragraphs"] == 4  # the whole short text fits


def test_finder_method_scores_verdicts_against_gold(tmp_path, ctx, eval_data):
    """The scripted Finder keeps exactly the segments mentioning the medal (paragraph 2)."""
    records = dataset.load_records(eval_data)
    rows = {r["id"]: r for r in (run.run_record(rec, "finder", ctx) for rec in records)}
    for record in records:
        row = rows[record.id]
        read = ctx.find(record).segments[: ctx.budget.read]
        kept = [s for s in read if 2 in s.ids]
        assert row["finder_calls"] == len(read) and row["finder_yes"] == len(kept)
        gold = set(record.evidence)
        if gold:
            assert row["segments_gold"] == sum(bool(gold & set(s.ids)) for s in read)
            assert row["yes_gold"] == sum(bool(gold & set(s.ids)) for s in kept)
            assert row["finder_cited_gold"] == (len(kept) if gold == {2} else 0)
            # the rank baseline keeps the retriever's first k segments, k = the Finder's YES count
            top = read[: len(kept)]
            assert row["rank_yes_gold"] == sum(bool(gold & set(s.ids)) for s in top)
    summary = eval_summary.summarize(list(rows.values()))["methods"]["finder"]["finder"]
    m1, o1 = rows["m1"], rows["o1"]
    assert m1["yes_gold"] == m1["segments_gold"] > 0  # every medal segment kept
    with_gold = m1["segments_gold"] + o1["segments_gold"]
    assert summary["yes_recall"] == pytest.approx((m1["yes_gold"] + o1["yes_gold"]) / with_gold)
    # precision over records with gold evidence only (the claims have none)
    assert summary["precision"] == pytest.approx(
        (m1["yes_gold"] + o1["yes_gold"]) / (m1["finder_yes"] + o1["finder_yes"])
    )
    labelled = [r for r in rows.values() if "segments_gold" in r]
    rank_gold = sum(r["rank_yes_gold"] for r in labelled)
    assert summary["rank_yes_recall"] == pytest.approx(rank_gold / with_gold)
    assert summary["gold_kept_minus_rank"] == sum(r["yes_gold"] for r in labelled) - rank_gold
    low, high = summary["gold_kept_minus_rank_ci"]
    assert low <= summary["gold_kept_minus_rank"] <= high
    report = eval_report.report_markdown(eval_summary.summarize(list(rows.values())), {})
    assert "## The Finder against gold evidence" in report and "rank YES-recall %" in report


def test_spread_sample_covers_the_file_in_order():
    records = [{"id": str(i)} for i in range(10)]
    assert [r["id"] for r in dataset.spread_sample(records, 3)] == ["0", "3", "6"]
    assert dataset.spread_sample(records, 20) == records


def test_direct_truncates_from_the_end(tmp_path, cache_dir):
    long_doc = "\n\n".join(f"Paragraph {i} " + "word " * 60 for i in range(1, 80))
    records = dataset.load_records(write_records(tmp_path, [EVAL_RECORDS[3]], long_doc))
    interpreter = ScriptedBackend(default=smart_interpreter, context=1500)
    ctx = EvalContext(Selection(interpreter, interpreter, "s"), make_budget("focused"), "minilm-static")
    row = run.run_record(records[0], "direct", ctx)
    assert 0 < row["packet_paragraphs"] < 79
    shown = re.findall(r"\[(\d+)\]", interpreter.requests[-1].messages[-1][1])
    assert shown[0] == "1" and int(shown[-1]) == row["packet_paragraphs"]


def test_permuted_options_are_scored_as_a_whole(tmp_path, ctx):
    records = dataset.load_records(write_records(tmp_path, [EVAL_RECORDS[0]]))
    ctx.permute_options = True
    row = run.run_record(records[0], "bm25-rag", ctx)
    assert row["rotation_answers"] == ["B", "B"] and row["correct"] is True
    biased = ScriptedBackend(default="<reason>x</reason><answer>A</answer>")
    ctx.selection = Selection(biased, biased, "s")
    row = run.run_record(records[0], "closed-book", ctx)
    assert row["rotation_answers"] == ["A", "B"] and row["correct"] is False and row["answer"] is None


def test_rotations_map_back_to_original_labels():
    rot = dataset.rotations({"A": "x", "B": "y", "C": "z"})
    assert rot[1] == ({"A": "y", "B": "z", "C": "x"}, {"A": "B", "B": "C", "C": "A"})


def test_run_eval_appends_rows_and_resumes(tmp_path, ctx, eval_data):
    records = dataset.load_records(eval_data)
    out = tmp_path / "rows.jsonl"
    gen = run.run_eval(records, ["closed-book"], ctx, out)
    next(gen)
    gen.close()  # an interrupted run: one row saved
    assert len(out.read_text().splitlines()) == 1
    with pytest.raises(InputError, match="--resume"):
        list(run.run_eval(records, ["closed-book"], ctx, out))
    with open(out, "a") as f:
        f.write('{"id": "torn')  # a torn last line from a killed process
    rest = list(run.run_eval(records, ["closed-book"], ctx, out, resume=True))
    assert [r["id"] for r in rest] == ["c1", "c2", "o1"]
    rows = run.read_rows(out)
    assert sorted(r["id"] for r in rows) == ["c1", "c2", "m1", "o1"]


def test_question_types_are_the_first_question_word():
    def typed(text: str, kind: str = "open") -> str:
        return rows_module.question_type(dataset.Record("x", "d", Question(text, kind)))

    assert typed("Why did the Giant build a wall?") == "why"
    assert typed("On 17 July, which came first: the quarrel or the will?") == "what"
    assert typed("Strychnine acts in an hour, yet she fell ill at five. Why the delay?") == "why"
    assert typed("To whom did she give the key?") == "who"
    assert typed("Name the ship.") == "other"
    assert typed("The medal was in a tin.", "claim") == "claim"


def test_recall_is_broken_down_by_type_and_hops_with_intervals():
    def row(rid, qtype, hops, anchor, packet, gold=2):
        return {
            "id": rid, "method": "retrieval", "kind": "open", "gold": "x", "question_type": qtype,
            "hops": hops, "evidence_gold": gold, "evidence_anchor_hits": anchor, "evidence_read_hits": anchor,
            "evidence_packet_hits": packet,
        }  # fmt: skip

    rows = [
        row("1", "why", 2, 2, 1),
        row("2", "why", 1, 0, 0),
        row("3", "who", 1, 2, 2),
        {"id": "4", "method": "retrieval", "kind": "open"},
    ]
    by = eval_summary.summarize(rows)["methods"]["retrieval"]["evidence_recall_by"]
    assert set(by) == {"all", "type why", "type who", "hops 1", "hops 2"}
    assert by["all"]["records"] == 3 and by["all"]["gold"] == 6  # the record without gold is not counted
    assert by["all"]["anchor"] == pytest.approx(4 / 6) and by["all"]["packet"] == pytest.approx(3 / 6)
    assert by["type why"]["packet"] == pytest.approx(1 / 4) and by["hops 2"]["anchor"] == 1.0
    low, high = by["all"]["anchor_ci"]
    assert 0 <= low <= 4 / 6 <= high <= 1 and high - low > 0.2  # three records: a wide interval
    assert "yes" not in by["all"]  # no stage that no row reports
    report = eval_report.report_markdown(eval_summary.summarize(rows), {})
    assert (
        "## Evidence recall by question type and hops" in report
        and "| retrieval | type why | 2 | 4 |" in report
    )


def test_ratio_interval_resamples_whole_records():
    assert metrics.ratio_interval([]) == (0.0, 0.0)
    assert metrics.ratio_interval([(3, 3), (2, 2)]) == (1.0, 1.0)
    low, high = metrics.ratio_interval([(0, 10), (1, 1)])
    assert low == 0.0 and high == 1.0  # a record drawn alone decides the whole ratio


def test_summary_from_hand_made_rows():
    rows = [
        {
            "id": "1",
            "method": "m",
            "kind": "mcq",
            "gold": "B",
            "answer": "B",
            "correct": True,
            "parsed": True,
            "parsed_first_try": True,
            "citations": [3],
            "invalid_citations": [9],
            "finder_calls": 2,
            "finder_parsed_first_try": 1,
            "prompt_tokens": 100,
            "seconds": 2.0,
            "evidence_gold": 2,
            "evidence_anchor_hits": 2,
            "evidence_packet_hits": 1,
        },
        {
            "id": "2",
            "method": "m",
            "kind": "mcq",
            "gold": "A",
            "answer": None,
            "correct": False,
            "parsed": False,
            "parsed_first_try": False,
            "citations": [],
            "invalid_citations": [],
            "finder_calls": 2,
            "finder_parsed_first_try": 2,
            "prompt_tokens": 300,
            "seconds": 4.0,
        },
        {
            "id": "3",
            "method": "m",
            "kind": "open",
            "gold": "x",
            "answer": "x",
            "f1": 0.5,
            "rouge_l": 0.25,
            "parsed": True,
            "parsed_first_try": False,
            "citations": [1],
            "invalid_citations": [],
            "seconds": 0.0,
        },
    ]
    e = eval_summary.summarize(rows)["methods"]["m"]
    assert e["records"] == 3 and e["accuracy"] == 0.5 and e["scored"] == 2
    assert e["citation_validity"] == pytest.approx(2 / 3)
    assert e["cite_share"] == 1.0  # both answered rows cite
    assert e["format_first_try"] == pytest.approx(1 / 3) and e["format_after_retry"] == pytest.approx(2 / 3)
    assert e["finder_format_first_try"] == 0.75 and e["finder_calls_per_record"] == pytest.approx(4 / 3)
    assert e["evidence_recall"] == {"anchor": 1.0, "packet": 0.5}
    assert e["f1"] == 0.5 and e["answer_distribution"] == {"B": 1, "none": 1}
    summary = eval_summary.summarize(rows)
    assert summary["baselines"]["mcq"]["majority"] == 0.5
    report = eval_report.report_markdown(summary, {"data": "d.jsonl", "models": "x"})
    assert "| m | 3 | 50.0 [" in report and "baselines (mcq)" in report


def test_the_report_pairs_each_method_with_the_pipeline_on_shared_records():
    def row(method, rid, correct=None, kind="claim", f1=None):
        r = {"id": rid, "method": method, "kind": kind, "gold": "TRUE", "answer": "TRUE", "parsed": True}
        r.update({"correct": correct} if kind != "open" else {"f1": f1, "rouge_l": f1})
        return r

    rows = [row("pipeline", f"c{i}", correct=i < 6) for i in range(10)]  # right on 6 of 10
    rows += [row("bm25-rag", f"c{i}", correct=i < 1) for i in range(10)]  # right on 1, inside the 6
    rows += [row("direct", f"c{i}", correct=i < 6) for i in range(8)]  # same answers, 8 records only
    rows += [row("retrieval", "c0")]  # answers nothing: not paired
    rows += [row("pipeline", "o1", kind="open", f1=0.5), row("extractive", "o1", kind="open", f1=0.25)]
    paired = eval_summary.summarize(rows)["paired"]
    assert set(paired) == {"bm25-rag", "direct", "extractive"}
    bm25 = paired["bm25-rag"]
    assert bm25["records"] == 10 and bm25["pipeline"] == 0.6 and bm25["method"] == 0.1
    assert bm25["difference"] == pytest.approx(0.5)
    low, high = bm25["difference_ci"]
    assert 0 < low <= 0.5 <= high <= 0.8  # five wins and no loss: the paired interval excludes 0
    assert paired["direct"]["records"] == 8 and paired["direct"]["difference_ci"] == (0.0, 0.0)
    assert paired["extractive"]["difference"] == 0.25
    report = eval_report.report_markdown(eval_summary.summarize(rows), {})
    assert "## The pipeline against each method, paired" in report
    assert "| bm25-rag | 10 | 60.0 | 10.0 | +50.0 [" in report


def test_eval_cli_json_report_and_out(capsys, tmp_path, cache_dir, scripted, eval_data):
    scripted.interpreter = ScriptedBackend(default=smart_interpreter)
    data = eval_data
    report = tmp_path / "report.md"
    code = main(
        [
            "eval",
            data,
            "-m",
            "pipeline",
            "-m",
            "retrieval",
            "--backend",
            "scripted",
            "--json",
            "--out",
            str(tmp_path / "rows.jsonl"),
            "--report",
            str(report),
            "--no-cache",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    summary = json.loads(out)
    assert summary["methods"]["pipeline"]["accuracy"] == 1.0
    assert summary["methods"]["pipeline"]["pair_accuracy"] == 1.0
    assert summary["methods"]["retrieval"]["evidence_recall"]["anchor"] == 1.0
    assert "# cwread eval" in report.read_text() and "threshold" not in report.read_text()
    # the support check's thresholds as asked are in the header, beside the rows that used them
    code = main(["eval", data, "-m", "retrieval", "--set", "answer.confidence_threshold=-0.4", "--set", "answer.support_threshold=1.5", "--report", str(report)])
    assert code == 0 and "support threshold 1.5, min confidence -0.4" in report.read_text()
    capsys.readouterr()
    code = main(["eval", data, "-m", "nonsense"])
    assert code == 2 and "unknown method" in capsys.readouterr().err
    # --out is only added to: --resume continues it (its rows are no trace, and were refused as
    # "a file cwread did not write"); a report of another tool is never replaced
    code = main(["eval", data, "-m", "retrieval", "--out", str(tmp_path / "rows.jsonl"), "--resume", "--no-cache"])
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    theirs = tmp_path / "plan.md"
    theirs.write_text("# cwread evaluation: my plan\n")
    code = main(["eval", data, "-m", "retrieval", "--report", str(theirs)])
    assert code == 2 and "is a file cwread did not write" in capsys.readouterr().err
    assert theirs.read_text() == "# cwread evaluation: my plan\n"


def test_the_methods_named_for_the_cli_are_those_defined():
    from cwread.eval import METHOD_NAMES

    assert tuple(METHODS) == METHOD_NAMES
