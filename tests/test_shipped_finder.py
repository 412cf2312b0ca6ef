"""The trained Finder adapter cwread ships (cwread/data/finder/, from the GPU lane's Phase A):
checked by its checksum, loaded on the default model's Finder, left unread by auto and read
with --finder on as it was trained (decision-first, its keep threshold), and scoring in
llama.cpp as it scored in transformers on the GPU."""

import json
import shutil
from pathlib import Path

import pytest

from cwread.backends import embedded, embedded_files
from tests.conftest import EXAMPLES, REPO, SHARED_DATA, default_model_installed, run

LANE_A = REPO / "benchmarks" / "results" / "lane-a"


pytestmark = pytest.mark.skipif(
    not default_model_installed(), reason="embedded model not installed (see the README's install)"
)


@pytest.fixture
def fresh_shipped(monkeypatch):
    """shipped_finder() read again (it is cached for the process), the environment unset."""
    monkeypatch.delenv("CWREAD_FINDER_LORA", raising=False)
    monkeypatch.delenv("CWREAD_GGUF", raising=False)
    embedded_files.shipped_finder.cache_clear()
    yield
    embedded_files.shipped_finder.cache_clear()


def test_the_shipped_adapter_is_checked_and_carries_what_the_lane_chose(fresh_shipped):
    shipped = embedded_files.shipped_finder()
    assert shipped is not None and shipped.path.is_file()
    manifest = json.loads((embedded_files.shipped_finder_dir() / embedded_files.SHIPPED_FINDER_MANIFEST).read_text())
    from cwread.cache import file_sha256

    assert file_sha256(shipped.path) == manifest["adapter"]["sha256"]
    lane = json.loads((LANE_A / "train.json").read_text())
    assert shipped.trained.keep_threshold == pytest.approx(lane["keep_threshold"]["trained"])
    assert shipped.trained.reply == "decision-first" and shipped.trained.shipped
    assert lane["adapter_bytes"] == shipped.path.stat().st_size  # the file the lane exported


def test_a_damaged_adapter_is_one_line_and_the_finder_runs_on_the_base_model(fresh_shipped, tmp_path, monkeypatch, capsys):
    from cwread.backends.select import BackendSettings, select_backends

    folder = tmp_path / "finder"
    shutil.copytree(embedded_files.shipped_finder_dir(), folder)
    adapter = folder / "finder-lora.gguf"
    data = bytearray(adapter.read_bytes())
    data[len(data) // 2] ^= 0xFF
    adapter.write_bytes(bytes(data))
    monkeypatch.setattr(embedded_files, "shipped_finder_dir", lambda: folder)
    chosen = select_backends(BackendSettings(backend="embedded"))
    assert chosen.finder is chosen.interpreter and chosen.finder.lora is None
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "damaged" in lines[0] and "base model" in lines[0]


def test_the_default_finder_carries_the_adapter_unless_told_none(fresh_shipped, monkeypatch):
    from cwread.backends.embedded import EmbeddedSettings
    from cwread.backends.select import BackendSettings, select_backends

    chosen = select_backends(BackendSettings(backend="embedded"))
    shipped = embedded_files.shipped_finder()
    assert chosen.finder.lora == shipped.path and chosen.interpreter.lora is None
    assert chosen.finder.capabilities.trained == shipped.trained
    assert shipped.trained.label in chosen.finder.model
    plain = select_backends(BackendSettings(backend="embedded", own=(EmbeddedSettings(finder_lora="none"),)))
    assert plain.finder is plain.interpreter and plain.finder.capabilities.trained is None
    monkeypatch.setenv("CWREAD_FINDER_LORA", "none")
    EmbeddedSettings().resolved().refuse("ollama")  # "none" is no adapter: nothing to refuse on a server


@pytest.mark.slow
def test_auto_leaves_the_shipped_finder_unread_and_judges_the_answer_with_it(fresh_shipped, capsys, cache_dir, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    code, out, _ = run(capsys, "ask", str(EXAMPLES / "the_selfish_giant.txt"), "Why did the Giant build a wall?", "--json")
    assert code == 0
    trace = json.loads(out)
    assert trace["plan"]["evidence"] == "all-read" and trace["finder"] == []
    assert "reads when asked" in trace["plan"]["finder_skipped"]
    # the plan says why in no face's words; the CLI's trace says how its reader has it run
    assert "--" not in trace["plan"]["finder_skipped"] and trace["plan"]["skipped_by_choice"] == ["finder"]
    assert trace["skipped"]["finder"].endswith("(--finder on runs it)")
    # the answer's candidate paragraphs are judged by the adapter, at its threshold
    judged = trace["answer_judgement"]
    assert judged["threshold"] == embedded_files.shipped_finder().trained.answer_threshold and judged["scores"]
    assert trace["answer"] is None or judged["chosen"] == trace["citations"][0]


@pytest.mark.slow
def test_finder_on_reads_decision_first_and_keeps_by_the_trained_threshold(fresh_shipped, capsys, cache_dir, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    code, out, _ = run(
        capsys, "ask", str(EXAMPLES / "the_selfish_giant.txt"), "Why did the Giant build a wall?", "--json", "--finder", "on"
    )
    assert code == 0
    trace = json.loads(out)
    threshold = embedded_files.shipped_finder().trained.keep_threshold
    assert trace["plan"]["finder"] == "decision-first" and trace["plan"]["keep_threshold"] == threshold
    assert embedded_files.shipped_finder().trained.label in trace["models"]["finder"]
    verdicts = trace["finder"]
    assert verdicts and all(v["score"] is not None for v in verdicts)
    assert all((v["decision"] == "YES") == (v["score"] >= threshold) for v in verdicts)
    text = (EXAMPLES / "the_selfish_giant.txt").read_text(encoding="utf-8")
    kept = [v for v in verdicts if v["decision"] == "YES"]
    assert kept and all(q["quote"] in " ".join(text.split()) or q["quote"] in text for v in kept for q in v["quotes"])


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED_DATA / "fairytale" / "fairytale.jsonl").is_file(), reason="no dev data beside the repo")
@pytest.mark.parametrize("prepare", [False, True], ids=["as-shipped", "prepared"])
def test_llama_cpp_scores_as_the_lane_scored_in_transformers(fresh_shipped, tmp_path, cache_dir, prepare):
    """The first dev record's first segments: the GPU's trained scores (scores.jsonl) against
    the shipped adapter's in llama.cpp (the same 4-bit weights; llama.cpp's activations are
    8-bit, so close, not equal: on 12 segments median 0.13, at most 0.32), loaded as shipped
    and as it runs by default, merged into the model's weights as Q8_0."""
    from cwread.agents import shared
    from training.data import finder_dev_set

    lane = json.loads((LANE_A / "scores.jsonl").read_text().splitlines()[0])
    with open(SHARED_DATA / "fairytale" / "fairytale.jsonl", encoding="utf-8") as f:
        record = next(line for line in f if json.loads(line).get("id") == lane["id"])
    records = tmp_path / "one.jsonl"
    records.write_text(record)
    # the record's document path is relative to the data file's folder
    doc = json.loads(record)["doc"]
    if not Path(doc).is_absolute():
        (tmp_path / Path(doc).parent).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SHARED_DATA / "fairytale" / doc, tmp_path / doc)
    segments = finder_dev_set(records, most_segments=3)[0]["segments"]
    shipped = embedded_files.shipped_finder()
    backend = embedded.EmbeddedBackend(None, num_ctx=4096, lora=shipped.path, trained=shipped.trained, prepare=prepare)
    for segment, theirs in zip(segments, lane["trained"], strict=False):
        assert shared.decision_score(backend, segment["prompt"]) == pytest.approx(theirs, abs=0.5)
    assert backend.prepared == ("q8_0+merged" if prepare else None)


@pytest.mark.slow
def test_a_decision_decodes_one_token_and_scores_as_the_whole_reply(fresh_shipped):
    """The decision frame given as the assistant turn's start: one token decoded, the reply
    put together, and the score the full decoding gives (within llama.cpp's batching noise)."""
    from dataclasses import replace

    from cwread import api
    from cwread.agents import finder
    from cwread.records.stages import yes_odds

    shipped = embedded_files.shipped_finder()
    backend = embedded.EmbeddedBackend(lora=shipped.path, trained=shipped.trained)
    doc = api.open_document(str(EXAMPLES / "the_selfish_giant.txt"))
    question = api.make_question("Why did the Giant build a high wall round his garden?")
    for pid in (7, 9):
        text = doc.paragraph(pid).text
        framed = finder.finder_request(question, pid, pid, text, paragraphs=[(pid, text)], decision_first=True)
        whole = backend.generate(replace(framed, decision=None))
        short = backend.generate(framed)
        assert short.completion_tokens == 1 and whole.completion_tokens > 1
        assert short.text in ("<answer>YES</answer>", "<answer>NO</answer>") and short.text == whole.text
        assert yes_odds(short.label_logprobs) == pytest.approx(yes_odds(whole.label_logprobs), abs=0.4)
