"""Training data builders: balance, gold placement, and prompts identical to inference."""

import json

import pytest

from cwread.agents import shared
from cwread.agents.finder import FINDER_SYSTEM, parse_finder_reply
from cwread.agents.interpreter import parse_reply
from cwread.records.question import Question
from tests.conftest import SHARED_DATA
from training import data
from training.__main__ import main

VAL = SHARED_DATA / "fairytaleqa" / "val"
pytestmark = pytest.mark.skipif(not VAL.is_dir(), reason="FairytaleQA dev data not present")


@pytest.fixture(scope="module")
def finder():
    return data.finder_examples(VAL)


def test_finder_examples_are_balanced_with_gold_only_in_positives(finder):
    yes = [e for e in finder if e["label"] == "YES"]
    no = [e for e in finder if e["label"] == "NO"]
    assert len(yes) == len(no) > 100
    for e in yes:
        s, t = e["segment"]
        assert e["gold_ids"] and all(s <= g <= t for g in e["gold_ids"])
    assert all(e["gold_ids"] == [] for e in no)


def test_warm_start_targets_follow_the_format_and_the_label(finder):
    from training.rewards import FINDER_FORMAT, FINDER_NO, FINDER_NO_QUALITY, FINDER_YES, finder_score

    for e in finder:
        parsed = parse_finder_reply(e["target"])
        assert parsed.ok and parsed.answer == e["label"], e["target"]
        cited = shared.extract_citations(parsed.reason)
        if e["label"] == "YES":
            assert cited == e["gold_ids"][:1]
            quote = e["target"].split('"', 1)[1].rsplit('"</reason>', 1)[0]
            assert quote in e["prompt"][-1]["content"]  # a sentence of the paragraph as shown
            assert finder_score(e["target"], "YES", e["gold_ids"]) >= FINDER_FORMAT + FINDER_YES
        else:  # the segment's closest sentence, quoted as cwread's grammar makes the Finder do
            start, end = e["segment"]
            assert len(cited) == 1 and start <= cited[0] <= end
            quote = e["target"].split('"', 1)[1].rsplit('"</reason>', 1)[0]
            assert quote in e["prompt"][-1]["content"]
            # one id and a quote: the reward's NO-quality parts for cwread's format
            assert finder_score(e["target"], "NO", []) >= FINDER_FORMAT + FINDER_NO + 2 * FINDER_NO_QUALITY / 3


def test_interpreter_targets_cite_gold_and_score_as_correct():
    from cwread.eval.metrics import token_f1
    from training.rewards import INTERP_FORMAT, interpreter_score

    for e in data.interpreter_examples(VAL)[:200]:
        parsed = parse_reply(e["target"], Question("q", "open"))
        assert parsed.ok and token_f1(parsed.answer, e["answer"]) == 1.0  # the parser trims end punctuation
        assert shared.extract_citations(parsed.reason)[0] in e["gold_ids"]
        score = interpreter_score(
            e["target"], e["answer"], "open", allowed_ids=e["allowed_ids"], evidence=e["evidence"]
        )
        assert score > INTERP_FORMAT + 1.9  # correct (token-F1 1.0 earns 2.0) plus the gated bonuses


def test_finder_prompts_are_cwreads_own(finder):
    e = finder[0]
    s, t = e["segment"]
    user = e["prompt"][-1]["content"]
    assert e["prompt"][0]["content"] == FINDER_SYSTEM
    assert user.startswith(f"Segment (paragraphs {s}-{t}):\n<evidence>\n[{s}] ")


def test_hard_negatives_share_words_with_the_question(finder):
    from cwread.retrieval.lexical import tokenize

    overlaps = []
    for e in (x for x in finder if x["label"] == "NO"):
        user = e["prompt"][-1]["content"]
        segment, question = user.split("\n\nQuestion: ")
        q_terms = set(tokenize([question.split("\n")[0]])[0])
        overlaps.append(bool(q_terms & set(tokenize([segment])[0])))
    assert sum(overlaps) / len(overlaps) > 0.8


def test_interpreter_packets_hold_the_gold_paragraphs():
    examples = data.interpreter_examples(VAL)
    assert examples
    for e in examples[:200]:
        assert set(e["gold_ids"]) <= set(e["allowed_ids"])
        assert e["answer"] == e["answers"][0] and e["kind"] == "open"
        assert all(f"[{pid}]" in e["prompt"][-1]["content"] for pid in e["allowed_ids"])


def test_cli_writes_data_and_card(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("CWREAD_FAIRYTALEQA", raising=False)
    assert main(["data", "--split", "val", "--out", str(tmp_path)]) == 2  # no source: outside the repo
    assert "--source" in capsys.readouterr().err
    source = str(SHARED_DATA / "fairytaleqa")
    assert main(["data", "--split", "val", "--source", source, "--out", str(tmp_path)]) == 0
    rows = [json.loads(line) for line in (tmp_path / "finder.jsonl").read_text().splitlines()]
    assert rows and set(rows[0]) >= {"prompt", "label", "gold_ids"}
    assert "FairytaleQA" in (tmp_path / "DATA_CARD.md").read_text()
    assert (
        main(["data", "--split", "val", "--source", str(tmp_path / "nowhere"), "--out", str(tmp_path)]) == 2
    )


def test_training_order_is_seeded_and_filters_long_prompts():
    rows = [{"prompt": [{"role": "user", "content": "x" * n}], "n": n} for n in range(0, 3000, 100)]
    first, again = data.training_order(rows, seed=3), data.training_order(rows, seed=3)
    assert [r["n"] for r in first] == [r["n"] for r in again] != [r["n"] for r in rows]
    short = data.training_order(rows, seed=3, max_prompt_chars=1000)
    assert [r["n"] for r in short] == [r["n"] for r in first if r["n"] <= 1000]
