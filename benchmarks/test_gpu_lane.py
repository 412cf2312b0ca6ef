"""The GPU lane (benchmarks/gpu_lane.py): its plan fits the device's limits, its kit travels in
parts and each phase comes back whole, a lost machine is noticed and the next call is the
right one, its summary ships a trained Finder only when it wins at the same keep rate, and
the decision-first scorer reads the score cwread reads. The slow rehearsal plays every call.

Beside the lane's script, not among the product's tests (it reads the git tree's size and runs
the lane's shell script): `python -m pytest benchmarks/test_gpu_lane.py` before a lease."""

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, SHARED_DATA

sys.path.insert(0, str(REPO / "benchmarks"))
import gpu_lane
import lane_summary


def test_the_plan_as_committed_fits_the_device_limits():
    """What the issue asks of the plan: Phase A in at most 5 calls (what a 15-minute lease
    trains: 4 until the answer reader, 7.7 MiB, joined the tree, at about 40 s a call), every
    call under 64 MiB with the real work tree; Phase B in at most 49 (28 until the trained
    Finder adapter, 9.3 MiB, joined the tree, 36 until the reader did, 48 until the sixth
    lease's reports did: B needs a longer lease than today's 15 minutes either way)."""
    done = subprocess.run(
        ["bash", str(REPO / "benchmarks" / "gpu_lane.sh"), "plan", "--json", "--kit", "/nonexistent"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["estimated"] and plan["fits"]
    assert plan["phases"]["a"]["calls"] <= 5
    assert plan["phases"]["b"]["calls"] <= 49 and len(plan["calls"]) <= 49
    assert all(c["total_bytes"] < 64 * 2**20 for c in plan["calls"])
    assert plan["tree_bytes"] == gpu_lane.tree_bytes()
    # the parts are as large as the limit allows beside the tree (with its margin)
    assert plan["part_bytes"] == 64 * 2**20 - plan["tree_bytes"] - gpu_lane.MARGIN_BYTES
    first = plan["calls"][0]
    assert first["command"].startswith("bash benchmarks/gpu_lane.sh call 01 --budget-s")
    assert first["carry"] == ["lane-kit/calls/01"]
    assert plan["calls"][-1]["command"].endswith("--follow") and not plan["calls"][-1]["carry"]


def stage_folder(tmp_path: Path) -> Path:
    stage = tmp_path / "stage"
    for name, size in (("base", 300_000), ("a", 700_000), ("b", 1_100_000)):
        (stage / name).mkdir(parents=True)
        (stage / name / "blob").write_bytes(bytes(range(256)) * (size // 256))
    return stage


def test_each_phase_unpacks_once_its_bytes_arrived_and_a_damaged_part_is_refused(tmp_path):
    stage = stage_folder(tmp_path)
    kit = tmp_path / "kit"
    manifest = gpu_lane.cut_stream(stage, kit, part_bytes=256 * 1024)
    assert len(manifest["parts"]) == math.ceil(manifest["stream_bytes"] / (256 * 1024))
    machine = gpu_lane.Machine(tmp_path / "lane")
    machine.create(1800, "gpu", [])
    unpacked = []
    for part in manifest["parts"]:
        carried = kit / "calls" / f"{part['call']:02d}"
        if part["call"] == 2:  # damaged on the way: refused, and carried again
            good = (carried / "part").read_bytes()
            (carried / "part").write_bytes(b"x" + good[1:])
            assert gpu_lane.receive(machine, carried, manifest) == ["part 02 arrived damaged"]
            (carried / "part").write_bytes(good)
        assert gpu_lane.receive(machine, carried, manifest) == []
        for name in ("a", "b"):  # the base has no wheels here: only the phases' unpacking is checked
            if gpu_lane.phase_bytes(
                machine, manifest, next(p for p in manifest["phases"] if p["name"] == name)
            ):
                unpacked.append((part["call"], name))
        machine.state["unpacked"].setdefault("base", 0)  # skip the base's install
        gpu_lane.unpack_ready(machine, manifest)
    ends = {p["name"]: p["end"] for p in manifest["phases"]}
    first_call = {name: min(c for c, n in unpacked if n == name) for name in ("a", "b")}
    for name in ("a", "b"):  # a phase is whole in the call that carries its last byte
        assert first_call[name] == math.ceil(ends[name] / (256 * 1024))
        assert (machine.kit / name / "blob").read_bytes() == (stage / name / "blob").read_bytes()


def plan_for_test():
    manifest = gpu_lane.estimated_manifest(18 * 2**20)
    return gpu_lane.make_plan(manifest, 18 * 2**20, gpu_lane.TIMINGS["gpu"])


def test_after_a_lost_machine_next_starts_again_or_stops_by_the_time_left():
    plan = plan_for_test()
    assert gpu_lane.decide_next(plan, [], None)["call"] == 1
    # the first call's deadlines count from the lease's own budget (15 minutes, say)
    assert "--budget-s 900" in gpu_lane.decide_next(plan, [], 900)["command"]
    # a transfer for Phase B at the round trip the calls measured (20 s)
    assert gpu_lane.decide_next(plan, [{"call": 3, "began": 100.0}, {"call": 4, "began": 120.0}], 1500)["call"] == 5
    lost = {"call": 5, "lost": True}
    again = gpu_lane.decide_next(plan, [{"call": 4}, lost], 1500)
    assert again["call"] == 1 and "--budget-s 1500" in again["command"] and "--skip" not in again["command"]
    # Phase A's reports came home: a new start skips it (a CEO's 45 minutes may allow one);
    # in what a developer's 30 minutes leave, Phase B's ~24 transfers do not fit: stop
    home = {"call": 9, "phases": {"a": {"status": "done"}}}
    again = gpu_lane.decide_next(plan, [home, {"call": 10, "lost": True}], 2000)
    assert again["call"] == 1 and again["command"].endswith("--skip a")
    stop = gpu_lane.decide_next(plan, [home, {"call": 10, "lost": True}], 1400)
    assert (
        stop["action"] == "stop" and "1400 s" in stop["why"] and "Phase A's reports are home" in stop["why"]
    )
    assert gpu_lane.decide_next(plan, [{"call": 26, "finished": True}], 100)["action"] == "stop"
    # past the plan's last call, while Phase B runs: another follow call, if one can come back
    beyond = gpu_lane.decide_next(plan, [{"call": len(plan["calls"])}], 500)
    assert beyond["call"] == len(plan["calls"]) + 1 and beyond["command"].endswith("--follow")
    assert gpu_lane.decide_next(plan, [{"call": len(plan["calls"])}], 60)["action"] == "stop"


def test_a_new_kit_moves_the_last_lease_s_returns_aside_so_next_starts_at_call_1(tmp_path):
    kit = tmp_path / "lane-kit"
    (kit / "returned" / "05").mkdir(parents=True)
    (kit / "returned" / "05" / "call.json").write_text(json.dumps({"call": 5, "finished": True}))
    assert gpu_lane.decide_next(plan_for_test(), gpu_lane.returned_calls(kit), 900)["action"] == "stop"
    moved = gpu_lane.archive_returns(kit)
    assert moved is not None and (moved / "05" / "call.json").is_file()
    assert gpu_lane.decide_next(plan_for_test(), gpu_lane.returned_calls(kit), 900)["call"] == 1
    assert gpu_lane.archive_returns(kit) is None


def test_a_call_on_a_fresh_machine_says_lost_and_still_returns_a_record(tmp_path):
    out = tmp_path / "out"
    code = gpu_lane.main(
        ["call", "05", "--lane", str(tmp_path / "lane"), "--out", str(out), "--kit-dir", str(tmp_path)]
    )
    assert code == gpu_lane.LOST
    call = json.loads((out / "call.json").read_text())
    assert call["lost"] and call["call"] == 5


def scores_rows(trained_better: bool, n: int = 60) -> list[dict]:
    """Records of 8 segments, gold at reading position 5: the retriever ranks it low; the
    trained Finder scores it highest (or like the untrained one, which ranks it last)."""
    rows = []
    for i in range(n):
        gold = [j == 5 for j in range(8)]
        base = [float(8 - j) for j in range(8)]
        trained = [3.0 if g else -1.0 - j / 10 for j, g in enumerate(gold)] if trained_better else list(base)
        rows.append({"id": f"r{i}", "gold": gold, "base": base, "trained": trained})
    return rows


@pytest.mark.parametrize("trained_better", [True, False])
def test_a_trained_finder_ships_only_when_it_beats_both_at_the_same_keep_rate(trained_better):
    comparison = lane_summary.compare_at_keep_rate(scores_rows(trained_better), threshold=2.0)
    ok, reasons = lane_summary.ships(comparison)
    assert ok == trained_better
    if trained_better:  # it keeps one segment per record, the gold one; rank's first holds none
        assert comparison["kept"] == 60 and comparison["trained"] == 60 and comparison["rank"] == 0
        assert comparison["minus_rank_ci"][0] > 0
    else:
        assert any("untrained" in r for r in reasons)


@pytest.mark.parametrize("trained_better", [True, False])
def test_the_verdict_is_taken_at_k_1_or_2_with_paired_intervals(trained_better):
    rows = scores_rows(trained_better)
    ok, reasons = lane_summary.ships_at_k(rows)
    assert ok == trained_better
    first = lane_summary.compare_at_k(rows, 1)
    if trained_better:  # its first segment is the gold one; the rank's first never is
        assert (first["trained"], first["rank"]) == (60, 0) and first["minus_rank_ci"][0] > 0
    else:
        assert first["minus_untrained"] == 0 and len(reasons) == 2 and reasons[0].startswith("at k = 1")


def in_set(rows: list[dict], name: str) -> list[dict]:
    return [{**r, "id": f"{name}-{r['id']}", "set": name} for r in rows]


def test_the_verdict_is_taken_on_the_dev_novel_and_not_lost_on_fairytale():
    better, same = scores_rows(True), scores_rows(False)
    assert lane_summary.ships_at_k(in_set(better, "novelqa") + in_set(same, "fairytale")) == (True, [])
    # better on fairytale alone: the novel, where a Finder can win, decides
    ok, reasons = lane_summary.ships_at_k(in_set(same, "novelqa") + in_set(better, "fairytale"))
    assert not ok and reasons[0].startswith("at k = 1 on the dev novel")
    # better on the novel, worse on fairytale (the gold the rank and the base put first, it puts last)
    worse = [{**r, "gold": [j == 0 for j in range(8)], "trained": [-5.0] + [1.0] * 7} for r in scores_rows(True)]
    ok, reasons = lane_summary.ships_at_k(in_set(better, "novelqa") + in_set(worse, "fairytale"))
    assert not ok and "loses to the untrained Finder and the retriever's ranking on fairytale dev" in reasons[0]


def test_the_summary_gives_a_table_for_each_dev_set(tmp_path):
    root = tmp_path / "lane"
    (root / "phase-a").mkdir(parents=True)
    (root / "state.json").write_text(json.dumps({"t0": 0, "budget": 1800, "timing": "gpu", "calls": [1, 2, 3]}))
    (root / "status-a.json").write_text(json.dumps({"status": "done"}))
    rows = in_set(scores_rows(False, 6), "fairytale") + in_set(scores_rows(True, 50), "novelqa")
    (root / "phase-a" / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "phase-a" / "train.json").write_text(
        json.dumps(
            {"stage": "exported", "base_auc": 0.5, "held_out_rows": 10, "keep_threshold": {"trained": 2.0, "recall_target": 0.9}}
        )
    )
    text = lane_summary.summary_markdown(root)
    assert "Fairytale dev: 6 records, 48 segments" in text and "The dev novel: 50 records, 400 segments" in text
    assert text.index("Fairytale dev:") < text.index("The dev novel:")
    assert "**Verdict: the trained Finder ships.**" in text


def test_the_dev_rows_name_their_set_and_a_novel_s_are_cut_to_its_first_segments(tmp_path):
    from training import data

    paragraphs = [f"On day {i} the miller counted {i} sacks of flour by the river." for i in range(1, 121)]
    paragraphs[70] = "The silver medal was kept in a biscuit tin under the miller's bed."
    (tmp_path / "book.txt").write_text("\n\n".join(paragraphs), encoding="utf-8")
    record = {"id": "q1", "doc": "book.txt", "kind": "open", "question": "Where was the silver medal kept?",
              "answer": "in a biscuit tin", "evidence": [71]}
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps(record) + "\n", encoding="utf-8")
    (whole,) = data.finder_dev_set(records)
    (cut,) = data.finder_dev_set(records, name="novelqa", most_segments=2)
    assert whole["set"] == "fairytale" and cut["set"] == "novelqa" and len(whole["segments"]) > 2
    assert cut["segments"] == whole["segments"][:2] and any(s["gold"] for s in cut["segments"])


def test_the_summary_of_a_lane_cut_after_the_base_was_scored_says_so(tmp_path):
    root = tmp_path / "lane"
    (root / "phase-a").mkdir(parents=True)
    (root / "state.json").write_text(
        json.dumps({"t0": 0, "budget": 1800, "timing": "gpu", "calls": [1, 2, 3]})
    )
    (root / "status-a.json").write_text(json.dumps({"status": "running"}))
    rows = [{k: v for k, v in r.items() if k != "trained"} for r in scores_rows(True, 5)]
    (root / "phase-a" / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "phase-a" / "train.json").write_text(
        json.dumps({"stage": "the base is scored", "base_auc": 0.5, "held_out_rows": 10})
    )
    text = lane_summary.summary_markdown(root)
    assert "Status: running; its last stage: the base is scored" in text
    assert "The trained Finder is not scored yet." in text and "Verdict" not in text
    assert "| 1 | 0 | 0 |" in text  # top 1: the untrained and the rank hold no gold


def test_the_summary_leaves_out_scores_that_are_not_finite(tmp_path):
    """A training that diverged scores NaN, which sorts like the retriever's rank: the summary
    must not show that as a trained Finder equal to the rank, nor give a verdict."""
    root = tmp_path / "lane"
    (root / "phase-a").mkdir(parents=True)
    (root / "state.json").write_text(json.dumps({"t0": 0, "budget": 900, "timing": "gpu", "calls": [1, 2, 3, 4]}))
    (root / "status-a.json").write_text(json.dumps({"status": "failed"}))
    rows = [{**r, "trained": [float("nan")] * 8} for r in scores_rows(True, 5)]
    (root / "phase-a" / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "phase-a" / "train.json").write_text(
        json.dumps({"stage": "trained", "base_auc": 0.5, "held_out_rows": 10, "keep_threshold": {"trained": 2.0, "recall_target": 0.9}})
    )
    text = lane_summary.summary_markdown(root)
    assert "not finite on 5 of 5 records" in text and "Verdict" not in text
    assert "| k | untrained | rank |" in text and "| k | trained |" not in text


@pytest.mark.slow  # torch: the dev install's (the fast lane runs without it)
def test_the_scorer_reads_the_score_of_one_unpadded_forward_pass_in_any_batch():
    """Padding: a prompt's score is the same alone and beside longer ones, and it is
    ln P(YES) - ln P(NO) summed over the tokens that begin each label."""
    torch = pytest.importorskip("torch")
    from training import decision, train

    texts = ["<answer>YES</answer>", "<answer>NO</answer>", "a question about the wolf", "short"]
    model, tokenizer = train.tiny_model_and_tokenizer(texts * 4, vocab_size=300, family="qwen2")
    rows = [
        {"prompt": [{"role": "user", "content": "short"}]},
        {"prompt": [{"role": "user", "content": "a question about the wolf " * 6}]},
        {"prompt": [{"role": "user", "content": "a question"}]},
    ]
    together = decision.score_prompts(model, tokenizer, rows)
    alone = [decision.score_prompts(model, tokenizer, [row])[0] for row in rows]
    assert together == pytest.approx(alone, abs=1e-3)
    yes, no = decision.label_token_ids(tokenizer)
    ids = tokenizer(decision.prompt_text(tokenizer, rows[1]["prompt"]), add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logprobs = torch.log_softmax(model(torch.tensor([ids])).logits[0, -1], dim=-1)
    expected = (torch.logsumexp(logprobs[yes], 0) - torch.logsumexp(logprobs[no], 0)).item()
    assert together[1] == pytest.approx(expected, abs=1e-3)


@pytest.mark.slow  # torch: the dev install's (the fast lane runs without it)
def test_the_scorer_pads_on_the_right_so_no_position_attends_to_nothing():
    """A pad on the left attends to no real token: its attention row is fully masked, and on
    a GPU that gives NaNs the backward pass carries into every weight (the lane's first Phase
    A went to NaN at step 61). Every row of a batch begins with real tokens."""
    pytest.importorskip("torch")
    from training import decision, train

    texts = ["<answer>YES</answer>", "<answer>NO</answer>", "a question about the wolf", "short"]
    model, tokenizer = train.tiny_model_and_tokenizer(texts * 4, vocab_size=300, family="llama")
    masks = []
    model.get_decoder().register_forward_pre_hook(
        lambda _module, _args, kwargs: masks.append(kwargs["attention_mask"]), with_kwargs=True
    )
    rows = [{"prompt": [{"role": "user", "content": "a question about the wolf " * n}]} for n in (1, 6)]
    decision.score_prompts(model, tokenizer, rows)
    assert masks and bool(masks[0][:, 0].all()) and not bool(masks[0].all())


@pytest.mark.slow  # torch: the dev install's (the fast lane runs without it)
def test_a_non_finite_step_is_not_taken_and_a_run_of_them_stops_the_training(tmp_path, monkeypatch):
    """One batch whose loss is NaN leaves the weights finite and the training going; a model
    that gives nothing but NaN stops after a few steps, and says why."""
    torch = pytest.importorskip("torch")
    from training import decision, train

    texts = ["<answer>YES</answer>", "<answer>NO</answer>", "a question about the wolf", "short"]
    model, tokenizer = train.tiny_model_and_tokenizer(texts * 4, vocab_size=300, family="qwen2")
    rows = [
        {"prompt": [{"role": "user", "content": "a question about the wolf " * (1 + i % 5)}], "label": "YES" if i % 2 else "NO"}
        for i in range(24)
    ]
    model = decision.add_lora(model, r=2, alpha=4)
    real = decision._label_scores
    calls = []

    def nan_once(model, tokenizer, ids, label_ids, device):
        calls.append(len(ids))
        scores = real(model, tokenizer, ids, label_ids, device)
        return scores * float("nan") if len(calls) == 2 else scores

    monkeypatch.setattr(decision, "_label_scores", nan_once)
    done = decision.train(model, tokenizer, rows, tmp_path, time.time() + 120, batch_tokens=400, epochs=1, log=lambda _: None)
    assert done["non_finite_skipped"] == 1 and done["stopped_by"] == "the rows ran out"
    steps = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(steps) == done["steps"] and all(math.isfinite(s["grad_norm"]) for s in steps)
    assert done["examples"] == len(rows) - calls[1]
    assert all(torch.isfinite(p).all() for p in model.parameters())
    assert decision.lora_movement(model)["mean_relative"] > 0

    monkeypatch.setattr(decision, "_label_scores", lambda *a: real(*a) * float("nan"))
    done = decision.train(model, tokenizer, rows, tmp_path, time.time() + 120, most_rows=2, epochs=1, log=lambda _: None)
    assert done["steps"] == 0 and done["stopped_by"] == f"{decision.NON_FINITE_STOP} non-finite steps in a row"
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_threshold_and_auc():
    from training import decision

    scores = [3.0, 2.0, 1.0, 0.5, -1.0, -2.0]
    labels = [True, False, True, False, True, False]
    assert decision.threshold_for_recall(scores, labels, 0.6) == 1.0  # keeps 2 of the 3 gold
    assert decision.threshold_for_recall(scores, labels, 1.0) == -1.0
    assert decision.auc(scores, labels) == pytest.approx(6 / 9)
    assert decision.auc([1.0, 1.0], [True, False]) == 0.5
    # a diverged training's NaNs measure nothing: no AUC, no threshold
    assert decision.auc([float("nan"), 1.0], [True, False]) is None
    assert decision.threshold_for_recall([float("nan"), 1.0], [True, False], 0.9) is None


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED_DATA / "fairytaleqa").is_dir(), reason="FairytaleQA not present")
def test_the_rehearsal_plays_every_call_on_this_cpu(tmp_path):
    """The kit (tiny models, the real wheel set), the calls in order into a fresh venv that
    stands in for the GPU image, a machine lost between two transfers and the new start,
    both phases trained, scored and exported; every call after training began brought a
    SUMMARY.md home."""
    pytest.importorskip("peft")
    done = subprocess.run(
        ["bash", str(REPO / "benchmarks" / "gpu_lane.sh"), "--rehearse", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    calls = sorted(p.name for p in (tmp_path / "calls").iterdir())
    assert any(name.endswith(".2") for name in calls)  # the sequence after the lost machine
    lost = [json.loads((tmp_path / "calls" / n / "call.json").read_text()) for n in calls]
    assert sum(bool(c.get("lost")) for c in lost) == 1
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert all(c["total_bytes"] < 64 * 2**20 for c in plan["calls"])
    last = sorted((tmp_path / "calls").iterdir(), key=lambda p: p.stat().st_mtime)[-1]
    summary = (last / "SUMMARY.md").read_text()
    assert summary.count("**Verdict: the trained Finder") == 2  # both phases measured and decided
    assert (last / "results-a.tar.gz").is_file() and (last / "results-b.tar.gz").is_file()
    # what `got` does with a call's return: the reports into benchmarks/results-like folders
    into = tmp_path / "results"
    assert (
        gpu_lane.main(
            [
                "got",
                last.name.split(".")[0],
                "--from",
                str(last),
                "--kit",
                str(tmp_path / "kit"),
                "--into",
                str(into),
            ]
        )
        == 0
    )
    assert (into / "lane-SUMMARY.md").is_file() and (into / "lane-a" / "scores.jsonl").is_file()
    assert not list(into.rglob("*.gguf"))  # adapters stay in lane-kit/returned
    assert list((tmp_path / "kit" / "returned").rglob("finder-lora.gguf"))


def test_the_deadlines_stay_within_the_machines_hold_and_follow_the_time_left(tmp_path):
    machine = gpu_lane.Machine(tmp_path / "lane")
    t = gpu_lane.TIMINGS["gpu"]
    machine.create(2700.0, "gpu", [])  # a CEO's budget: the machine is still held 30 minutes
    t0 = machine.state["t0"]
    assert machine.state["device_end"] == pytest.approx(t0 - t.start + t.machine_hold - t.round_trip)
    assert machine.state["a_until"] <= machine.state["device_end"]
    # the start took longer than planned: the status says less is left; the deadlines follow it
    gpu_lane.reanchor(machine, 900.0)
    assert machine.state["device_end"] <= time.time() + 900.0 - t.round_trip + 1
    before = machine.state["device_end"]
    gpu_lane.reanchor(machine, 5000.0)  # never later than planned
    assert machine.state["device_end"] == before


def test_next_stops_on_a_machine_that_cannot_train_resends_a_damaged_part_and_stops_sending_what_b_cannot_use():
    plan = plan_for_test()
    assert gpu_lane.cannot_train({"pip": 0, "cuda": False}, "gpu") == "torch sees no CUDA device: training would run on the CPU"
    assert gpu_lane.cannot_train({"pip": 0, "import_error": ["ModuleNotFoundError: peft"]}, "gpu").startswith("an import failed")
    assert gpu_lane.cannot_train({"pip": 0, "cuda": True}, "gpu") is None
    assert gpu_lane.cannot_train({"pip": 0, "cuda": False}, "rehearsal") is None
    stop = gpu_lane.decide_next(plan, [{"call": 1, "stop": "torch sees no CUDA device"}], 1500)
    assert stop["action"] == "stop" and "cannot train" in stop["why"]
    again = gpu_lane.decide_next(plan, [{"call": 3, "problems": ["part 3: damaged"]}], 1500)
    assert again["action"] == "call" and again["call"] == 3 and "sending it again" in again["why"]
    damaged = [{"call": 3, "problems": ["part 3: damaged"]}] * 3
    assert gpu_lane.decide_next(plan, damaged, 1500)["action"] == "stop"
    # a call after the first re-anchors the deadlines on the time the status gives
    assert gpu_lane.decide_next(plan, [{"call": 1}], 1500)["command"].endswith("--budget-left 1500")
    b_first = plan["phases"]["a"]["transfer_calls"] + 1
    late = gpu_lane.decide_next(plan, [{"call": b_first - 1}], 400)
    assert late["action"] == "call" and late["call"] == b_first and "Phase B's" in late["why"]
    assert late["carry"] == [] and late["command"].endswith("--follow --budget-left 400 --skip b")


@pytest.mark.slow  # torch: the dev install's (the fast lane runs without it)
def test_out_of_memory_halves_the_batch_and_training_goes_on(tmp_path, monkeypatch):
    """A batch over the memory (simulated: over 600 tokens) is halved, it and every batch
    after it; scoring gives the same scores; one row that cannot fit is a real fault."""
    pytest.importorskip("torch")
    from training import decision, train

    texts = ["<answer>YES</answer>", "<answer>NO</answer>", "a question about the wolf", "short"]
    model, tokenizer = train.tiny_model_and_tokenizer(texts * 4, vocab_size=300, family="qwen2")
    rows = [
        {"prompt": [{"role": "user", "content": "a question about the wolf " * (1 + i % 5)}], "label": "YES" if i % 2 else "NO"}
        for i in range(24)
    ]
    expected = decision.score_prompts(model, tokenizer, rows)
    real = decision._label_scores
    oom = decision._oom_type()

    def scores_within(model, tokenizer, ids, label_ids, device):
        if len(ids) * max(map(len, ids)) > 600:
            raise oom("CUDA out of memory (simulated)")
        return real(model, tokenizer, ids, label_ids, device)

    monkeypatch.setattr(decision, "_label_scores", scores_within)
    monkeypatch.setattr(decision, "MIN_BATCH_TOKENS", 64)
    assert decision.score_prompts(model, tokenizer, rows, batch_tokens=4096) == pytest.approx(expected, abs=1e-3)
    model = decision.add_lora(model, r=2, alpha=4)
    done = decision.train(model, tokenizer, rows, tmp_path, time.time() + 120, batch_tokens=4096, epochs=1, log=lambda _: None)
    assert done["examples"] == len(rows) and done["oom_halvings"] >= 1 and done["batch_tokens"] <= 600
    monkeypatch.setattr(decision, "MIN_BATCH_TOKENS", 2048)
    with pytest.raises(oom):
        decision.score_prompts(model, tokenizer, rows, batch_tokens=4096)
