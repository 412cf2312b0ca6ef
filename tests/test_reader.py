"""The answer reader (cwread.agents.extractive_qa): the shipped model loaded and checked, its span
search, an extractive answer through the real CLI (its words inside a quoted sentence of the
packet, withheld under the threshold with the best evidence labelled), a damaged reader
falling back to the sentence ranker in one line, and (slow lane, torch) a tiny reader trained
in seconds whose ONNX scores match the training framework's."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from cwread.agents.extractive_qa import (
    ExtractiveQaModel,
    ReaderUnavailable,
    best_span,
    load_reader,
    shipped_dir,
)
from cwread.answer.decide import _read_answer
from cwread.cache import file_sha256
from tests.conftest import run

QUESTION = "What did the fishermen give Martha?"


def test_the_shipped_reader_loads_with_its_checksums_and_reads_inside_each_passage():
    reader = load_reader()
    meta = json.loads((shipped_dir() / "reader.json").read_text())
    for name, digest in meta["sha256"].items():
        assert file_sha256(shipped_dir() / name) == digest
    assert reader.threshold == meta["answer_threshold"]
    passages = ["The miller locked the mill at night because thieves had come.", "The bells rang. " * 200, "x"]
    readings = reader.read("Why did the miller lock the mill?", passages)
    assert len(readings) == 3 and all(np.isfinite(r.score) for r in readings)
    for r, text in zip(readings, passages, strict=True):
        assert 0 <= r.start < r.end <= len(text)  # words of the passage, a long one read in windows
    assert readings == reader.read("Why did the miller lock the mill?", passages)
    long_question = "The miller and the baker argued all day. " * 40 + "Why did the miller lock the mill?"
    assert reader.read(long_question, passages[:1])[0].end <= len(passages[0])  # the window still holds the passage


def test_the_best_span_is_within_the_passage_and_scored_against_no_answer():
    start = np.array([5.0, 9.0, 1.0, 0.0, 3.0, 0.5])  # token 0 is [CLS]; 1 a question token
    end = np.array([4.0, 9.0, 0.0, 2.0, 1.0, 6.0])
    context = np.array([False, False, True, True, True, True])
    score, first, last = best_span(start, end, context, longest=30)
    assert (first, last) == (4, 5) and score == pytest.approx(3.0 + 6.0 - (5.0 + 4.0))
    _, first, last = best_span(start, end, context, longest=1)  # one token at most
    assert first == last


def test_a_question_or_the_questions_own_words_are_never_the_readers_answer():
    text = "Where is the key? The key lies under the old stone by the gate."
    paragraph, asked = (7, text), "Where is the key?"

    def at(words: str) -> tuple[int, int]:
        start = text.index(words, 1)
        return start, start + len(words)

    assert _read_answer(asked, paragraph, (0, 17), spans=True) is None  # a question
    assert _read_answer(asked, paragraph, at("the key"), spans=True) is None  # only the question's words
    words, quote = _read_answer(asked, paragraph, at("under the old stone"), spans=True)
    assert words == "under the old stone" and quote.text == "The key lies under the old stone by the gate."
    assert text[quote.start : quote.end] == quote.text
    sentence, _ = _read_answer(asked, paragraph, at("under the old stone"), spans=False)  # a novel's: the sentence
    assert sentence == quote.text


def test_a_damaged_reader_file_is_refused(tmp_path):
    bad = tmp_path / "reader"
    shutil.copytree(shipped_dir(), bad)
    data = bytearray((bad / "model.onnx").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (bad / "model.onnx").write_bytes(bytes(data))
    with pytest.raises(ReaderUnavailable, match="damaged"):
        ExtractiveQaModel(bad)
    (bad / "reader.json").write_text("{not json")
    with pytest.raises(ReaderUnavailable, match=r"no readable reader\.json"):
        ExtractiveQaModel(bad)


def _ask(capsys, story, *flags):
    return run(capsys, "ask", str(story), QUESTION, "--backend", "scripted", "--answer", "extractive", "--json", "--no-cache", *flags)


def test_the_reader_picks_the_words_of_an_extractive_answer_through_the_cli(capsys, story, cache_dir, scripted):
    code, out, err = _ask(capsys, story, "--set", "answer.reader_threshold=-1000")
    assert code == 0, err
    trace = json.loads(out)
    assert trace["plan"]["answer_reader"].startswith("cwread-reader@") and trace["plan"]["reader_threshold"] == -1000
    reading = trace["answer_reading"]
    quote = trace["quotes"][0]
    assert reading["paragraph"] == quote["paragraph"] if "paragraph" in quote else reading["id"] == quote["id"]
    assert reading["answered"] and reading["words"] in quote["quote"] and trace["answer"] == reading["words"].strip()
    assert set(trace["citations"]) <= {item["id"] for item in trace["packet"]}
    assert "answer_reader" in trace["timings"]
    assert scripted.interpreter.requests == []  # an extractive answer: no Interpreter call


def test_under_the_readers_threshold_no_answer_is_shown_and_the_evidence_is_labelled(capsys, story, cache_dir, scripted):
    code, out, _ = _ask(capsys, story, "--set", "answer.reader_threshold=1000")
    trace = json.loads(out)
    assert code == 4 and trace["status"] == "not-determined" and trace["answer"] is None
    assert trace["quotes"] and trace["answer_reading"]["score"] < 1000
    assert "answer reader found no answer" in trace["failure"]
    code, out, _ = run(capsys, "ask", str(story), QUESTION, "--backend", "scripted", "--answer", "extractive",
                       "--set", "answer.reader_threshold=1000", "--no-cache")  # fmt: skip
    assert code == 4 and "Best evidence (not an answer: read it)" in out and "found no answer" in out


@pytest.mark.parametrize("damage", ["missing", "damaged"])
def test_a_missing_or_damaged_reader_falls_back_to_the_sentence_ranker(capsys, story, cache_dir, scripted, tmp_path, monkeypatch, damage):
    folder = tmp_path / "reader"
    if damage == "damaged":
        shutil.copytree(shipped_dir(), folder)
        (folder / "tokenizer.json").write_text("{}")
    monkeypatch.setenv("CWREAD_READER", str(folder))
    load_reader.cache_clear()
    try:
        code, out, err = _ask(capsys, story)
    finally:
        load_reader.cache_clear()
    _, plain, _ = _ask(capsys, story, "--set", "answer.reader=off")
    trace, without = json.loads(out), json.loads(plain)
    assert code in (0, 4) and trace["answer"] == without["answer"]  # the ranker's answer, as with the reader off
    assert trace["plan"]["answer_reader"] is None and trace["plan"]["reader_unavailable"]
    assert "sentence ranker picks" in trace["skipped"]["answer_reader"]
    lines = [line for line in err.splitlines() if "reader" in line]
    assert len(lines) == 1 and "Traceback" not in err


def test_an_unknown_reader_choice_is_one_line_and_exit_2(capsys, story, cache_dir):
    code, _, err = _ask(capsys, story, "--set", "answer.reader=sometimes")
    assert code == 2 and "unknown answer reader" in err and "Traceback" not in err


@pytest.mark.slow
def test_a_tiny_reader_trains_in_seconds_and_its_onnx_scores_match_torch(tmp_path):
    from training import reader as training_reader

    story = "The miller locked the mill at night. Thieves had come twice in the spring. His daughter kept the key."
    rows = []
    for i in range(12):
        rows.append({"source": f"fairytale:s{i % 3}", "question": "Who kept the key?", "passage": story,
                     "answer": "His daughter", "start": story.index("His daughter")})  # fmt: skip
        rows.append({"source": f"fairytale:s{i % 3}", "question": "Who kept the key?", "passage": "The bells rang all day.",
                     "answer": None, "start": None})  # fmt: skip
    summary = training_reader.train(rows, tmp_path / "run", epochs=1.0, batch=4, seed=0)
    assert summary["steps"] == summary["steps_planned"] >= 3 and (tmp_path / "run" / "metrics.jsonl").is_file()
    summary["answer_threshold"] = 0.0
    manifest = training_reader.export(tmp_path / "run" / "model", tmp_path / "reader", summary, "tiny", [story, "Who kept the key? The bells rang all day."])
    assert manifest["vocabulary"] < 30_522 and manifest["answer_threshold"] == 0.0
    shipped = ExtractiveQaModel(tmp_path / "reader")
    assert shipped.threshold == 0.0
    gap = training_reader.parity(tmp_path / "run" / "model", tmp_path / "reader", rows[:4])
    assert gap < 1.0


def test_doctor_says_whether_the_answer_reader_runs(capsys, cache_dir, monkeypatch, tmp_path):
    _, out, _ = run(capsys, "doctor", "--json")
    notes = json.loads(out)["backend"].get("notes", [])
    assert any(n.startswith("answer reader: cwread-reader@") for n in notes), notes
    monkeypatch.setenv("CWREAD_READER", str(tmp_path / "nowhere"))
    load_reader.cache_clear()
    try:
        _, out, _ = run(capsys, "doctor", "--json")
    finally:
        load_reader.cache_clear()
    assert any("no answer reader at" in n and "sentence ranker" in n for n in json.loads(out)["backend"].get("notes", []))
