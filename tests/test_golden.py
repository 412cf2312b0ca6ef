"""Golden outputs: every command's `--json` (and the Rich views of show/find/ask) on the scripted
backend, compared field by field with files in tests/golden/. They pin behaviour across
refactors: a change in output must be a deliberate regeneration, never a side effect.

Regenerate (after checking the diff is intended): CWREAD_UPDATE_GOLDEN=1 pytest tests/test_golden.py
Masked: wall-clock fields, temporary paths, cache locations; floats are compared to 4 decimals.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from cwread.backends.scripted import ScriptedBackend
from cwread.cli import main
from cwread.eval.methods import METHODS as EVAL_METHODS
from tests.scripted_replies import smart_interpreter

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("CWREAD_UPDATE_GOLDEN") == "1"
MASKED_KEYS = {"timings", "seconds", "seconds_per_record", "cache_dir", "cache", "path", "data", "date"}
QUESTION = "Where did she keep the medal?"
OPTIONS = ["-o", "A=in a drawer", "-o", "B=in a biscuit tin"]

def normalise(value):
    """Masked keys → "<masked>", floats to 4 decimals, everything else as is (recursively)."""
    if isinstance(value, dict):
        return {k: "<masked>" if k in MASKED_KEYS else normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, float):
        return round(value, 4)
    return value


def check(name: str, data) -> None:
    path = GOLDEN / name
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        text = json.dumps(data, indent=1, ensure_ascii=False) if not isinstance(data, str) else data
        path.write_text(text + ("\n" if not text.endswith("\n") else ""), encoding="utf-8")
        return
    assert path.is_file(), f"no golden file {name}: generate with CWREAD_UPDATE_GOLDEN=1"
    if isinstance(data, str):
        assert data == path.read_text(encoding="utf-8")
        return
    expected = json.loads(path.read_text(encoding="utf-8"))
    _compare(expected, json.loads(json.dumps(data)), name)


def _compare(expected, got, where: str) -> None:
    """Field by field, so a failure names the first field that differs."""
    if isinstance(expected, dict) and isinstance(got, dict):
        assert list(expected) == list(got), f"{where}: keys differ: {list(expected)} != {list(got)}"
        for key in expected:
            _compare(expected[key], got[key], f"{where}.{key}")
    elif isinstance(expected, list) and isinstance(got, list):
        assert len(expected) == len(got), f"{where}: {len(expected)} items expected, got {len(got)}"
        for i, (e, g) in enumerate(zip(expected, got, strict=True)):
            _compare(e, g, f"{where}[{i}]")
    else:
        assert expected == got, f"{where}: expected {expected!r}, got {got!r}"


def run_json(capsys, *args) -> tuple[int, dict]:
    code = main([*args, "--json"])
    out, err = capsys.readouterr()
    assert out, err
    return code, normalise(json.loads(out))


def run_text(capsys, tmp_root: Path, *args) -> tuple[int, str]:
    """The Rich view, run from the book's folder with a relative path: a temporary path's
    length would move the line breaks."""
    book = Path(args[1])
    cwd = os.getcwd()
    os.chdir(book.parent)
    try:
        code = main([args[0], book.name, *args[2:]])
    finally:
        os.chdir(cwd)
    out, _ = capsys.readouterr()
    return code, re.sub(r"\d+\.\d s\b", "<s> s", out)


@pytest.fixture
def agents(scripted):
    # every Interpreter reply comes from the evidence it is shown
    scripted.interpreter = ScriptedBackend(default=smart_interpreter, model="interp")
    return scripted


@pytest.fixture
def book(story):
    """The lighthouse story with filler chapters around it, so retrieval makes several segments."""
    filler = [
        f"Chapter {i}. The gulls wheeled over the rock and the tide came in and went out again, "
        f"as it had on day {i} and every day before it." for i in range(1, 19)
    ]
    paragraphs = story.read_text().split("\n\n")
    text = "\n\n".join(filler[:9] + paragraphs + filler[9:])
    story.write_text(text)
    return story


@pytest.fixture(autouse=True)
def _fixed_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")


def test_show(capsys, story, tmp_path):
    code, data = run_json(capsys, "show", str(story), "2-4")
    assert code == 0
    check("show.json", data)
    code, text = run_text(capsys, tmp_path, "show", str(story), "2,5")
    check("show.txt", text)


def test_index(capsys, story, cache_dir):
    code, data = run_json(capsys, "index", str(story))
    assert code == 0
    check("index.json", data)


@pytest.mark.parametrize("kind", ["open", "mcq"])
def test_find(capsys, book, cache_dir, tmp_path, kind):
    extra = OPTIONS if kind == "mcq" else []
    code, data = run_json(capsys, "find", str(book), QUESTION, *extra, "--limit", "0")
    assert code == 0
    check(f"find-{kind}.json", data)
    code, text = run_text(capsys, tmp_path, "find", str(book), QUESTION, *extra, "--limit", "2")
    check(f"find-{kind}.txt", text)


@pytest.mark.parametrize("kind", ["open", "mcq"])
def test_ask(capsys, book, cache_dir, agents, tmp_path, kind):
    question = "What was the cat called?" if kind == "open" else QUESTION
    extra = OPTIONS if kind == "mcq" else []
    args = ["ask", str(book), question, *extra, "--backend", "scripted", "--no-cache"]
    code, data = run_json(capsys, *args)
    assert code == 0
    check(f"ask-{kind}.json", data)
    code, text = run_text(capsys, tmp_path, *args)
    check(f"ask-{kind}.txt", text)


@pytest.mark.parametrize("claim", ["She kept the medal in a biscuit tin.", "She kept the medal in a drawer."])
def test_verify(capsys, book, cache_dir, agents, claim):
    code, data = run_json(capsys, "verify", str(book), claim, "--backend", "scripted", "--no-cache")
    name = "tin" if "tin" in claim else "drawer"
    check(f"verify-{name}.json", {"exit": code, "trace": data})


def test_doctor(capsys, cache_dir, agents):
    code, data = run_json(capsys, "doctor", "--backend", "scripted")
    assert code == 0
    check("doctor.json", data)


def test_eval_every_method(capsys, tmp_path, cache_dir, agents, eval_data, tiny_judge):
    data_file = eval_data
    rows_file = tmp_path / "rows.jsonl"
    args = ["eval", str(data_file), "--backend", "scripted", "--no-cache", "--out", str(rows_file)]
    for method in EVAL_METHODS:  # every registered method
        args += ["-m", method]
    code, summary = run_json(capsys, *args)
    assert code == 0
    check("eval-summary.json", summary)
    rows = [normalise(json.loads(line)) for line in rows_file.read_text().splitlines()]
    check("eval-rows.json", rows)
    code, permuted = run_json(
        capsys, "eval", str(data_file), "--backend", "scripted", "--no-cache", "-m", "bm25-rag",
        "--permute-options", "--limit", "1",
    )
    check("eval-permuted.json", permuted)
