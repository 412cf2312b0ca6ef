"""benchmarks/finder_threshold.py: a keep threshold picked on one half of the books, scored on the other."""

import importlib.util
import json
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "finder_threshold.py"
_spec = importlib.util.spec_from_file_location("finder_threshold", _PATH)
finder_threshold = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(finder_threshold)


def _row(record_id, gold, scores):
    return {"id": record_id, "method": "finder", "segment_gold": gold, "finder_scores": scores}


def test_the_picked_threshold_is_the_most_selective_that_keeps_the_recall():
    rows = [
        _row("a-1", [True, False, False], [0.9, 0.5, -1.0]),
        _row("b-1", [False, True, False], [0.2, 0.4, 0.3]),
        _row("c-1", [False, False, True], [0.8, 0.0, -0.5]),
    ]
    # gold scores 0.9, 0.4, -0.5: two of three need t <= 0.4, all three t <= -0.5
    assert finder_threshold.pick_threshold(rows, 0.6) == 0.4
    assert finder_threshold.pick_threshold(rows, 0.85) == -0.5


def test_keep_counts_set_the_finder_against_the_retrievers_top_k():
    rows = [_row("a-1", [False, True, False], [-1.0, 0.5, 0.7])]
    # t = 0.5 keeps segments 2 and 3 (one gold); the rank baseline's top 2 holds the same gold
    assert finder_threshold.keep_counts(rows, 0.5) == [(2, 1, 1)]
    # t = 0.6 keeps segment 3 only (no gold); the rank baseline's top 1 holds none either
    assert finder_threshold.keep_counts(rows, 0.6) == [(1, 0, 0)]


def test_folds_keep_each_book_on_one_side():
    rows = [_row(f"{book}-{n}", [True], [0.0]) for book in ("alpha", "beta", "gamma") for n in (1, 2)]
    first, second = finder_threshold.folds(rows)
    assert {finder_threshold.book_of(r) for r in first} == {"alpha", "gamma"}
    assert {finder_threshold.book_of(r) for r in second} == {"beta"}


def test_the_script_reports_held_out_folds(tmp_path, capsys):
    rows = [
        _row(f"{book}-{n}", [True, False, False, False], [s, s - 1.0, s - 2.0, s - 0.5])
        for book, s in (("alpha", 1.0), ("beta", 0.0), ("gamma", 0.5), ("delta", -0.5))
        for n in (1, 2)
    ]
    rows.append({"id": "alpha-9", "method": "pipeline"})  # not a Finder row: skipped
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert finder_threshold.main([str(path), "--recall", "1.0"]) == 0
    out = capsys.readouterr().out
    assert "| both folds, held out | 8 | 8 |" in out
    assert "In-sample sweep" in out


@pytest.mark.parametrize("content", [None, ""])
def test_missing_or_empty_rows_are_one_line_and_exit_2(tmp_path, capsys, content):
    path = tmp_path / "rows.jsonl"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert finder_threshold.main([str(path)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
