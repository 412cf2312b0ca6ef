"""Benchmark records: loading and validating JSONL, even sampling, option rotations."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from cwread.book import SOURCE_NAME, Document
from cwread.errors import InputError
from cwread.records.question import FORMS, Question


@dataclass(frozen=True)
class Record:
    """One benchmark question with its gold answer(s) and evidence (format in the data README)."""

    id: str
    doc: str  # the document's resolved path
    question: Question
    answer: object = None  # the gold answer as the file gives it
    answers: tuple[str, ...] = ()  # alternative references for open questions
    # gold paragraphs as the file names them: ids, or "ch03:12" in a book of several files
    evidence: tuple[int | str, ...] = ()
    pair: object = None  # claims that form a pair share this
    hops: int = 1  # 2: the answer ties paragraphs far apart (the data's `hops`)

    def gold_ids(self, document: Document) -> list[int]:
        """The gold paragraphs' ids in `document`; InputError for one the book does not have."""
        ids = []
        for label in self.evidence:
            pid = document.id_of(str(label))
            if pid is None:
                raise InputError(f"record {self.id}: its evidence {label!r} is not a paragraph of {document.path}")
            ids.append(pid)
        return ids

    @property
    def kind(self) -> str:
        return self.question.kind

    @property
    def gold_label(self) -> str:
        """The gold answer as an upper-case label ("" when there is none)."""
        return str(self.answer if self.answer is not None else "").upper()


def load_records(path: str) -> list[Record]:
    """Records from a JSONL file (format in ../shared/data/README.md), validated: anything
    unusable is an InputError naming the file, the line and the field."""
    source = Path(path)
    if source.is_dir():
        raise InputError(f"{path} is a folder: give the records' JSONL file")
    if not source.exists():
        raise InputError(f"{path}: no such file")
    if not source.is_file():
        raise InputError(f"{path} is not a regular file: give the records' JSONL file")
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    records = []
    seen = set()
    for lineno, raw_line in enumerate(data.splitlines(), start=1):
        where = f"{path}:{lineno}"
        try:
            line = raw_line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{where}: not UTF-8 (byte {exc.start + 1} of the line); save the file as UTF-8") from None
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: not JSON ({exc.msg})") from None
        record = _record(raw, where, source)
        if record.id in seen:
            raise InputError(f"{where}: duplicate id {record.id!r}")
        seen.add(record.id)
        records.append(record)
    if not records:
        raise InputError(f"{path} holds no records")
    return records


def _record(raw: object, where: str, source: Path) -> Record:
    if not isinstance(raw, dict):
        raise InputError(f"{where}: a record is a JSON object, not {json.dumps(raw)[:40]}")
    for key in ("id", "doc", "kind", "question"):
        if key not in raw:
            raise InputError(f"{where}: record has no {key!r}")

    def field(key: str, ok: bool, want: str) -> None:
        if not ok:
            raise InputError(f"{where}: {key!r} must be {want}, not {json.dumps(raw[key])[:40]}")

    field("id", isinstance(raw["id"], (str, int)) and not isinstance(raw["id"], bool), "a string or a number")
    field("doc", isinstance(raw["doc"], str) and raw["doc"].strip() != "", "a file path")
    kind = raw["kind"]
    field("kind", kind in FORMS, f"one of {', '.join(FORMS)}")
    field("question", isinstance(raw["question"], str) and raw["question"].strip() != "", "a non-empty string")
    options: dict[str, str] = {}
    if kind == "mcq":
        if not raw.get("options"):
            raise InputError(f"{where}: an mcq record needs options")
        field(
            "options",
            isinstance(raw["options"], dict)
            and len(raw["options"]) >= 2
            and all(isinstance(v, str) and v.strip() for v in raw["options"].values()),
            'an object of at least two labelled texts ({"A": "...", "B": "..."})',
        )
        options = {str(k): v for k, v in raw["options"].items()}
    if raw.get("answer") is not None and kind in ("claim", "mcq"):  # a gold no answer can match scored 100% for "always it"
        label = str(raw["answer"]).upper()
        if kind == "claim":
            field("answer", label in ("TRUE", "FALSE"), "TRUE or FALSE for a claim")
        else:
            field("answer", label in {k.upper() for k in options}, f"one of the options' labels ({', '.join(options)})")
    evidence = raw.get("evidence") or []
    if evidence:
        ids_ok = isinstance(evidence, list) and all(_paragraph_id(g) is not None for g in evidence)
        field("evidence", ids_ok, 'a list of paragraph ids (positive integers, or "FILE:N" in a folder)')
    answers = raw.get("answers") or []
    if answers:
        field("answers", isinstance(answers, list) and all(isinstance(a, str) for a in answers), "a list of strings")
    if "hops" in raw:
        hops = raw["hops"]
        field("hops", isinstance(hops, int) and not isinstance(hops, bool) and hops >= 1, "a positive integer")
    doc = (source.parent / raw["doc"]).resolve()
    if not (doc.is_file() or doc.is_dir()):
        raise InputError(f"{where}: document {raw['doc']} not found")
    return Record(
        id=str(raw["id"]),
        doc=str(doc),
        question=Question(raw["question"], kind, options),
        answer=raw.get("answer"),
        answers=tuple(answers),
        evidence=tuple(_paragraph_id(g) for g in evidence),
        pair=raw.get("pair"),
        hops=raw.get("hops", 1),
    )


def _paragraph_id(value: object) -> int | str | None:
    """A paragraph id from a JSON number or a string of digits, or a "FILE:N" label; None if
    it is none of these."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if isinstance(value, str) and value.strip().isdigit() and int(value) > 0:
        return int(value)
    if isinstance(value, str) and re.fullmatch(rf"{SOURCE_NAME}\s*:\s*[1-9]\d*", value.strip()):
        return "".join(value.split())
    return None


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
