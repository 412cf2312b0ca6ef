"""The judge (cwread.agents.cross_encoder): the shipped model loaded and checked, the Finder it makes through
the real CLI, a damaged or missing judge falling back to the rank, and (slow lane, torch) a
tiny judge trained in seconds whose ONNX scores match the training framework's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from cwread.agents.cross_encoder import Judge, JudgeUnavailable, load_judge, passage_windows, shipped_dir
from cwread.cache import file_sha256
from tests.conftest import TINY_JUDGE as TINY
from tests.conftest import run


def test_a_judge_loads_with_its_checksums_and_scores_every_passage(tiny_judge):
    judge = load_judge(str(tiny_judge))
    meta = json.loads((TINY / "judge.json").read_text())
    for name, digest in meta["sha256"].items():
        assert file_sha256(TINY / name) == digest
    assert judge.info.version == meta["version"] == "tiny-test"
    passages = ["The miller locked the mill at night.", "The bells rang. " * 80, "x"]  # one cut in windows
    scores = judge.score("Why did the miller lock the mill?", passages)
    assert scores.shape == (3,) and np.all(np.isfinite(scores))
    assert np.array_equal(scores, judge.score("Why did the miller lock the mill?", passages))


def test_without_a_judge_installed_the_message_says_how_to_get_one(monkeypatch):
    monkeypatch.delenv("CWREAD_JUDGE", raising=False)
    load_judge.cache_clear()
    if (shipped_dir() / "judge.json").is_file():
        pytest.skip("a judge ships with this install")
    with pytest.raises(JudgeUnavailable, match="CWREAD_JUDGE"):
        load_judge()


def test_long_passages_are_scored_by_windows_of_sentences():
    sentence = "The rain fell on the quiet town all through the night. "
    text = sentence * 40  # about 440 words
    windows = passage_windows(text)
    assert len(windows) > 1
    assert all(len(w.split()) <= 100 for w in windows)
    assert " ".join(windows) == text.strip()


def test_a_damaged_judge_file_is_refused(tmp_path):
    bad = tmp_path / "judge"
    shutil.copytree(TINY, bad)
    data = bytearray((bad / "model.onnx").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (bad / "model.onnx").write_bytes(bytes(data))
    with pytest.raises(JudgeUnavailable, match="damaged"):
        Judge(bad)
    (bad / "judge.json").write_text("{not json")
    with pytest.raises(JudgeUnavailable, match=r"no readable judge\.json"):
        Judge(bad)


def _quoted_in_book(trace: dict, book: Path) -> None:
    text = book.read_text(encoding="utf-8")
    for verdict in trace["finder"]:
        for quote in verdict["quotes"]:
            assert " ".join(quote["quote"].split()) in " ".join(text.split())


def test_the_judge_reads_as_finder_through_the_cli(capsys, story, cache_dir, scripted, tiny_judge):
    code, out, err = run(
        capsys, "ask", str(story), "What did the fishermen give Martha?", "--backend", "scripted",
        "--finder", "judge", "--answer", "extractive", "--json", "--no-cache",
    )  # fmt: skip
    assert code in (0, 4), err
    trace = json.loads(out)
    assert trace["plan"]["finder"] == "judge"
    assert trace["models"]["finder"] == "judge:cwread-judge@tiny-test"
    assert scripted.finder.requests == []  # no model call
    verdicts = trace["finder"]
    assert verdicts and all(v["score"] is not None for v in verdicts)
    assert all(v["quotes"] for v in verdicts)  # each judged segment quotes its clue, kept or not
    kept = {p for v in verdicts if v["decision"] == "YES" for p in range(v["start"], v["end"] + 1)}
    assert {item["id"] for item in trace["packet"]} <= kept or not kept
    _quoted_in_book(trace, story)
    assert set(trace["citations"]) <= {item["id"] for item in trace["packet"]}
    assert "finder" in trace["timings"]


@pytest.mark.parametrize("damage", ["missing", "damaged"])
def test_a_missing_or_damaged_judge_falls_back_to_the_rank(capsys, story, cache_dir, scripted, tmp_path, monkeypatch, damage):
    folder = tmp_path / "judge"
    if damage == "damaged":
        shutil.copytree(TINY, folder)
        (folder / "tokenizer.json").write_text("{}")
    monkeypatch.setenv("CWREAD_JUDGE", str(folder))
    load_judge.cache_clear()
    try:
        code, out, err = run(
            capsys, "ask", str(story), "What did the fishermen give Martha?", "--backend", "scripted",
            "--finder", "judge", "--answer", "extractive", "--json", "--no-cache",
        )  # fmt: skip
    finally:
        load_judge.cache_clear()
    assert code in (0, 4)
    trace = json.loads(out)
    assert trace["plan"]["evidence"] == "all-read"
    assert "retriever's rank" in trace["skipped"]["finder"]
    assert trace["plan"]["judge_unavailable"]
    lines = [line for line in err.splitlines() if "judge" in line]
    assert len(lines) == 1 and "rank fills the packet" in lines[0]


def test_eval_measures_the_judges_packet_beside_the_rank(capsys, cache_dir, tmp_path, tiny_judge):
    from tests.conftest import write_records

    data = write_records(tmp_path)
    rows_file = tmp_path / "rows.jsonl"
    code, _, err = run(capsys, "eval", data, "-m", "retrieval", "-m", "judge", "--out", str(rows_file))
    assert code == 0, err
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()]
    judged = [r for r in rows if r["method"] == "judge" and "evidence_packet_hits" in r]
    assert judged and {r["method"] for r in rows} == {"retrieval", "judge"}


# ---- the recipe (slow lane: torch, sentence-transformers) -----------------------------------


@pytest.mark.slow
def test_a_tiny_judge_trains_in_seconds_and_its_onnx_scores_match_torch(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("onnx")
    from training import judge as recipe

    rows = []
    for i in range(24):
        q = f"Who kept the key of room {i}?"
        rows.append({"question": q, "passage": f"The porter kept the key of room {i} in his coat.", "label": 1, "source": f"s:{i % 6}"})
        rows.append({"question": q, "passage": "The river ran grey under the bridge all winter.", "label": 0, "source": f"s:{i % 6}"})
    summary = recipe.train(rows, tmp_path / "run", layers=1, epochs=1, batch=8, max_length=64)
    assert summary["held_out_rows"] > 0 and summary["rows"] + summary["held_out_rows"] == len(rows)
    metrics = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert metrics, "training logged nothing"
    manifest = recipe.export(tmp_path / "run" / "model", tmp_path / "judge", summary, "test", quantize=False)
    assert set(manifest["sha256"]) == {"model.onnx", "tokenizer.json"}
    pairs = [(r["question"], r["passage"]) for r in rows[:10]]
    assert recipe.parity(tmp_path / "run" / "model", tmp_path / "judge", pairs) < 1e-4
    # the int8 export: a quarter of the size, finite scores
    recipe.export(tmp_path / "run" / "model", tmp_path / "judge8", summary, "test", quantize=True)
    assert (tmp_path / "judge8" / "model.onnx").stat().st_size < 0.5 * (tmp_path / "judge" / "model.onnx").stat().st_size
    assert np.all(np.isfinite(Judge(tmp_path / "judge8").score_pairs(pairs)))


def test_auc_and_the_keep_threshold():
    from training.judge import auc, keep_threshold

    assert auc([3, 2, 1, 0], [1, 1, 0, 0]) == 1.0
    assert auc([0, 1, 2, 3], [1, 1, 0, 0]) == 0.0
    assert auc([1, 1], [1, 0]) == 0.5
    assert auc([float("nan"), 1], [1, 0]) is None
    assert keep_threshold([5, 4, 3, 2, 1, 0], [1, 1, 1, 1, 1, 0], recall=0.8) == 2
