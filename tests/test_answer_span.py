"""The span reader: what a question asks for, the spans a sentence offers, the shipped weights,
and where the pipeline uses it (a short text) and where not (a novel, a why-question)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cwread.answer import extractive, span_scorer
from cwread.answer.span_scorer import Span, question_kind, spans
from tests.conftest import run


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Who killed Sir Charles Baskerville?", "who"),
        ("Whom does Poirot unmask?", "who"),
        ("Mr. Mace sold strychnine on Monday. Who really bought it?", "who"),
        ("Why was Assipattle sad when his sister left?", "why"),
        ("Where did she keep the silver medal?", "where"),
        ("On which evening was the dose meant to be taken?", "when"),
        ("When did the Giant come back?", "when"),
        ("How many geese did she keep?", "how-many"),
        ("How did everyone feel about the fate of the Princess?", "how-feel"),
        ("How did the strychnine become a fatal dose?", "how"),
        ("What did the Giant do when he saw the children?", "what-do"),
        ("What did the fishermen notice?", "what"),
        ("Tell me about the lamp.", "other"),
    ],
)
def test_what_a_question_asks_for(question, kind):
    assert question_kind(question) == kind


def _texts(question: str, sentence: str) -> dict[str, str]:
    return {sentence[s.start : s.end]: s.kind for s in spans(question, sentence, 0)}


def test_a_title_neither_ends_a_clause_nor_is_cut_from_its_name():
    sentence = "It is understood that the next of kin is Mr. Henry Baskerville, the son of his younger brother."
    found = _texts("Who is the next of kin?", sentence)
    assert "Mr. Henry Baskerville" in found
    assert not any(text.endswith(("Mr", "Mr.")) for text in found)
    assert "the son of his younger brother" in found  # a clause


def test_every_span_is_in_its_sentence_and_says_something_the_question_does_not():
    question = "What did Assipattle find down at the water's edge?"
    sentence = "Down at the water's edge, Assipattle found the King's boat, and he pushed it out to sea."
    found = spans(question, sentence, 2)
    assert found and all(isinstance(s, Span) and s.rank == 2 for s in found)
    assert {s.kind for s in found} >= {"sentence", "clause", "after", "name", "phrase"}
    for s in found:
        text = sentence[s.start : s.end]
        if s.kind != "sentence":  # the sentence is quoted whole; a part is cut at words
            assert text == text.strip(" ,.")
            assert any(w.lower() not in {"down", "at", "the", "water's", "edge", "assipattle", "find"} for w in text.split())
    assert "the King's boat" in {sentence[s.start : s.end] for s in found}


def test_a_feeling_question_is_offered_single_words():
    found = _texts("How did the Giant feel?", "The Giant felt very sad, and he wept.")
    assert found.get("sad") == "word"


def test_the_shipped_weights_load_and_a_missing_or_bad_file_is_none(tmp_path):
    model = span_scorer.shipped_model()
    assert model is not None and len(model.weights) > 50
    assert span_scorer.read_model(tmp_path / "absent.json") is None
    bad = tmp_path / "bad.json"
    bad.write_text('{"weights": {"bias": "heavy"}}', encoding="utf-8")
    assert span_scorer.read_model(bad) is None
    bad.write_bytes(b"\xff\xfe{")
    assert span_scorer.read_model(bad) is None


def test_a_where_question_is_answered_with_the_place_not_the_sentence():
    sentence = "The fishermen of the harbour later gave her a silver medal, which she kept in a biscuit tin under her bed."
    found = extractive.best_answer("Where did she keep the silver medal?", [(5, sentence)], rank=None)
    assert found is not None
    text, quote = found
    assert quote.text == sentence and text in sentence and "biscuit tin" in text and len(text) < len(sentence) / 2
    # without spans the sentence, as before
    assert extractive.best_answer("Where did she keep the silver medal?", [(5, sentence)], None, spans=False)[0] == sentence


def test_a_why_question_keeps_its_reason_rule():
    paragraph = "The Giant came home. He wanted the garden for himself alone. So he built a wall, and put up a notice-board."
    text, _ = extractive.best_answer("Why did the Giant build a wall?", [(7, paragraph)], rank=None)
    assert text.startswith("He wanted the garden for himself alone.")


def test_a_novel_gets_the_sentence_and_the_trace_says_why(capsys, tmp_path, cache_dir, scripted):
    filler = [f"Day {i} passed quietly at the mill by the river." for i in range(1, 1001)]
    book = tmp_path / "novel.txt"
    book.write_text(
        "\n\n".join(["The fishermen of the harbour gave her a silver medal, which she kept in a biscuit tin under her bed.", *filler]),
        encoding="utf-8",
    )
    code, out, _ = run(
        capsys, "ask", str(book), "Where did she keep the silver medal?", "--backend", "scripted", "--answer", "extractive", "--json"
    )
    trace = json.loads(out)
    assert code == 0 and trace["plan"]["extract"] == "sentence"
    assert trace["answer"] == trace["quotes"][0]["quote"] and "fishermen" in trace["answer"]
    assert "in a novel (over 1,000 paragraphs)" in trace["skipped"]["spans"]
    # a short text: the span reader's words
    short = tmp_path / "short.txt"
    short.write_text("\n\n".join(book.read_text(encoding="utf-8").split("\n\n")[:20]), encoding="utf-8")
    code, out, _ = run(
        capsys, "ask", str(short), "Where did she keep the silver medal?", "--backend", "scripted", "--answer", "extractive", "--json"
    )
    trace = json.loads(out)
    assert code == 0 and trace["plan"]["extract"] == "span" and "spans" not in trace["skipped"]
    assert "biscuit tin" in trace["answer"] and trace["answer"] != trace["quotes"][0]["quote"]


def test_the_view_says_the_answer_is_words_quoted_from_the_text(capsys, story, cache_dir, scripted):
    code, out, _ = run(capsys, "ask", str(story), "Where did she keep the silver medal?", "--backend", "scripted", "--answer", "extractive")
    assert code == 0 and "(words quoted from the text)" in " ".join(out.split())


def test_the_fit_puts_its_weight_on_the_feature_that_marks_the_best_span():
    from training.span_scorer import fit

    rng = np.random.default_rng(0)
    groups = []
    for _ in range(40):
        good = int(rng.integers(0, 5))
        feats = [{"bias": 1.0, "noise": float(rng.normal()), "marked": float(i == good)} for i in range(5)]
        groups.append((feats, np.array([1.0 if i == good else 0.1 for i in range(5)])))
    w = fit(groups, ["bias", "marked", "noise"], l2=1e-4, steps=200)
    assert w[1] > 1.0 and abs(w[2]) < w[1] / 4


def test_the_next_of_kin_is_a_name_not_a_sentence_cut_at_its_title(capsys, cache_dir, scripted, monkeypatch):
    text = b"It is understood that the next of kin is Mr. Henry Baskerville, the son of his younger brother.\n"
    code, out, err = run(capsys, "ask", "-", "Who is the next of kin?", "--backend", "scripted", "--answer", "extractive", "--json", stdin=text, monkeypatch=monkeypatch)
    trace = json.loads(out)
    assert code == 0, err
    assert trace["answer"] == "Mr. Henry Baskerville" and trace["answer_kind"] == "quoted-words"
    assert trace["quotes"][0]["quote"] == text.decode().strip()
