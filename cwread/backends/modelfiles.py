"""The Ollama Modelfiles shipped in the package (`cwread/data/modelfiles`, the same files as
the repository's `modelfiles/`), so a pip install can create the models too."""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path

from cwread.errors import InputError

UNTRAINED = ("finder", "interpreter")  # the default models: cwread-finder, cwread-interpreter


def shipped() -> dict[str, str]:
    """File name -> text of every shipped Modelfile."""
    folder = files("cwread.data") / "modelfiles"
    return {
        entry.name: entry.read_text(encoding="utf-8")
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".Modelfile")
    }


def base_model(text: str) -> str | None:
    """The `FROM` of a Modelfile."""
    m = re.search(r"^FROM\s+(\S+)", text, flags=re.M)
    return m.group(1) if m else None


def setup_commands(folder: str = "modelfiles", agents: tuple[str, ...] = UNTRAINED) -> list[str]:
    """The shell commands that give a fresh Ollama the default cwread models."""
    texts = shipped()
    commands = [f"cwread modelfiles --out {folder}"]
    bases = {base_model(texts[f"{agent}.Modelfile"]) for agent in agents}
    commands += [f"ollama pull {base}" for base in sorted(b for b in bases if b and ":" in b and "/" not in b)]
    commands += [f"ollama create cwread-{agent} -f {folder}/{agent}.Modelfile" for agent in agents]
    return commands


def write_modelfiles(out: Path, overwrite: bool = False) -> list[Path]:
    """Write the shipped Modelfiles into `out`; a different file already there is kept unless
    `overwrite` (an identical one is left as it is)."""
    texts = shipped()
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file; give a folder")
    clashes = [
        name for name, text in texts.items() if (out / name).exists() and (out / name).read_bytes() != text.encode()
    ]
    if clashes and not overwrite:
        raise InputError(
            f"{out} already holds different {', '.join(clashes)}; pass --force to replace them"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for name, text in texts.items():
            target = out / name
            if not target.exists() or target.read_bytes() != text.encode():
                target.write_text(text, encoding="utf-8")
            written.append(target)
    except OSError as exc:
        raise InputError(f"cannot write the Modelfiles into {out}: {exc.strerror or exc}") from None
    return written
