"""Benchmark records: loading and validating JSONL, even sampling, option rotations."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from cwread.api import KINDS, Question
from cwread.errors import InputError


@dataclass(frozen=True)
class Record:
    """One benchmark question with its gold answer(s) and evidence (format in the data README)."""

    id: str
    doc: str  # the document's resolved path
    question: Question
    answer: object = None  # the gold answer as the file gives it
    answers: tuple[str, ...] = ()  # alternative references for open questions
    evidence: tuple[int, ...] = ()  # gold paragraph ids
    pair: object = None  # claims that form a pair share this

    @property
    def kind(self) -> str:
        return self.question.kind

    @property
    def gold_label(self) -> str:
        """The gold answer as an upper-case label ("" when there is none)."""
        return str(self.answer if self.answer is not None else "").upper()


def load_records(path: str) -> list[Record]:
    """Records from a JSONL file (format in ../shared/data/README.md), validated."""
    source = Path(path)
    if not source.is_file():
        raise InputError(f"{path}: no such file")
    records = []
    seen = set()
    for lineno, line in enumerate(source.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{lineno}: not JSON ({exc.msg})") from None
        for key in ("id", "doc", "kind", "question"):
            if key not in raw:
                raise InputError(f"{path}:{lineno}: record has no {key!r}")
        kind = raw["kind"]
        if kind not in KINDS:
            raise InputError(f"{path}:{lineno}: kind must be one of {', '.join(KINDS)}")
        if kind == "mcq" and not raw.get("options"):
            raise InputError(f"{path}:{lineno}: an mcq record needs options")
        if raw["id"] in seen:
            raise InputError(f"{path}:{lineno}: duplicate id {raw['id']!r}")
        seen.add(raw["id"])
        doc = (source.parent / raw["doc"]).resolve()
        if not doc.is_file():
            raise InputError(f"{path}:{lineno}: document {raw['doc']} not found")
        options = dict(raw.get("options") or {}) if kind == "mcq" else {}
        records.append(
            Record(
                id=raw["id"],
                doc=str(doc),
                question=Question(raw["question"], kind, options),
                answer=raw.get("answer"),
                answers=tuple(raw.get("answers") or ()),
                evidence=tuple(int(g) for g in raw.get("evidence") or ()),
                pair=raw.get("pair"),
            )
        )
    if not records:
        raise InputError(f"{path} holds no records")
    return records


def spread_sample(records: list, n: int) -> list:
    """`n` records evenly spaced through the file (benchmark files run story by story, so
    the first `n` would cover one or two stories), in file order."""
    if n >= len(records):
        return list(records)
    return [records[(i * len(records)) // n] for i in range(n)]


def rotations(options: dict[str, str]) -> list[tuple[dict[str, str], dict[str, str]]]:
    """Each rotation of the option texts over the same labels, with the map from shown label
    back to original label: ({"A": text of B, ...}, {"A": "B", ...})."""
    labels = list(options)
    out = []
    for r in range(len(labels)):
        back = {labels[i]: labels[(i + r) % len(labels)] for i in range(len(labels))}
        out.append(({shown: options[orig] for shown, orig in back.items()}, back))
    return out
