"""How a benchmark gives its table: printed, and written to `--out` when one is given."""

from __future__ import annotations

from pathlib import Path


def publish(lines: list[str], out: str | None) -> None:
    text = "\n".join(lines) + "\n"
    print(text)
    if out:
        Path(out).write_text(text, encoding="utf-8")
