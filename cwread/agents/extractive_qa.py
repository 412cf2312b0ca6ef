"""The answer reader: a small extractive question-answering model, trained here
(training/reader.py), that reads a question and a paragraph and points at the words that
answer it, or at none, run with ONNX Runtime (no torch).

A reader is a folder: a 4-bit ONNX file (start and end logits per token), its tokenizer and
`reader.json` (name, version, the sha256 of each file, the window it was trained with), from
$CWREAD_READER or cwread/data/reader/. A file whose checksum does not match is refused
(ReaderUnavailable) and the caller answers without it.

Each paragraph is read in windows of `max_length` tokens (question and paragraph together)
that overlap by `stride`; its reading is its best window's. The score is the best span's
start + end logits less the [CLS] token's, the model's "not in this passage": above 0 it
points at words rather than at none.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from cwread.agents.cross_encoder import open_model_folder
from cwread.errors import ModelError
from cwread.records.stages import AnswerReading

MANIFEST = "reader.json"
BATCH = 16
QUESTION_WORDS = 60  # read of a question at most (about 80 of a window's 256 tokens)


class ReaderUnavailable(ModelError):
    """The reader's files are missing, damaged, or cannot be run here."""


@dataclass(frozen=True)
class Reading:
    """What the reader found in one passage: its score (above 0: words rather than none) and
    the words it points at, as character offsets into the passage."""

    score: float
    start: int
    end: int


def best_span(start: np.ndarray, end: np.ndarray, context: np.ndarray, longest: int) -> tuple[float, int, int]:
    """(score, first, last): the best start + end logits over spans of the passage's tokens
    (`context` marks them) of at most `longest` tokens, less the [CLS] token's. Training
    measures its held-out answers with it too."""
    s = np.where(context, start, -np.inf)
    e = np.where(context, end, -np.inf)
    n = len(s)
    allowed = np.triu(np.ones((n, n), dtype=bool)) & ~np.triu(np.ones((n, n), dtype=bool), k=longest)
    pair = np.where(allowed, s[:, None] + e[None, :], -np.inf)
    first, last = np.unravel_index(int(np.argmax(pair)), pair.shape)
    return float(pair[first, last] - (start[0] + end[0])), int(first), int(last)


def shipped_dir() -> Path:
    """The folder of the reader that ships with cwread."""
    from importlib.resources import files

    return Path(str(files("cwread.data") / "reader"))


class ExtractiveQaModel:
    """An extractive reader loaded from `folder` (its reader.json names and sums its files).
    Safe to share between threads."""

    def __init__(self, folder: Path, threads: int | None = None) -> None:
        meta, self._session, tokenizer = open_model_folder(folder, MANIFEST, "reader", ReaderUnavailable, threads)
        self.name = f"{meta.get('name', 'reader')}@{meta.get('version', '')}"
        self.max_length = int(meta.get("max_length", 256))
        self.stride = int(meta.get("stride", 64))
        self.longest = int(meta.get("max_answer_tokens", 30))
        self.threshold = float(meta.get("answer_threshold", -1000.0))
        tokenizer.no_padding()
        tokenizer.enable_truncation(self.max_length, stride=self.stride, strategy="only_second")
        self._tokenizer = tokenizer
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._lock = threading.Lock()

    def read(self, question: str, passages: Sequence[str]) -> list[Reading]:
        """Each passage's reading for `question`: its best window's span."""
        if not passages:
            return []
        # a question longer than the window leaves no room for the passage: its last words ask
        question = " ".join(question.split()[-QUESTION_WORDS:])
        with self._lock:  # the tokenizer's truncation settings are shared state
            encoded = self._tokenizer.encode_batch([(question, p) for p in passages])
        windows = [(i, w) for i, e in enumerate(encoded) for w in (e, *e.overflowing)]
        best: dict[int, Reading] = {}
        for at in range(0, len(windows), BATCH):
            chunk = windows[at : at + BATCH]
            width = max(len(w.ids) for _, w in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask, types = np.zeros_like(ids), np.zeros_like(ids)
            for row, (_, w) in enumerate(chunk):
                n = len(w.ids)
                ids[row, :n], mask[row, :n], types[row, :n] = w.ids, w.attention_mask, w.type_ids
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            starts, ends = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})
            for row, (i, w) in enumerate(chunk):
                n = len(w.ids)
                context = np.array([s == 1 for s in w.sequence_ids])
                score, first, last = best_span(starts[row, :n], ends[row, :n], context, self.longest)
                reading = Reading(score, w.offsets[first][0], w.offsets[last][1])
                if i not in best or score > best[i].score:
                    best[i] = reading
        return [best[i] for i in range(len(passages))]


@dataclass(frozen=True)
class AnswerReader:
    """The reader as an extractive answer uses it: its words are shown where its score reaches
    `threshold` (the reader's own, chosen on dev data, unless one was asked)."""

    reader: ExtractiveQaModel
    threshold: float

    def __call__(self, question: str, paragraph: int, text: str) -> AnswerReading:
        """The reading of paragraph `paragraph` (its `text`), as the trace records it."""
        began = time.perf_counter()
        found = self.reader.read(question, [text])[0]
        return AnswerReading(
            reader=self.reader.name, paragraph=paragraph, start=found.start, end=found.end,
            score=round(found.score, 4), threshold=self.threshold, seconds=round(time.perf_counter() - began, 4),
        )  # fmt: skip


@lru_cache(maxsize=4)
def load_reader(folder: str | None = None) -> ExtractiveQaModel:
    """The reader in `folder` (default: the one cwread ships; AnswerSettings.reader_folder names
    another), loaded once; ReaderUnavailable when it cannot be."""
    path = Path(folder).expanduser() if folder else shipped_dir()
    if not (path / MANIFEST).is_file():
        raise ReaderUnavailable(f"no answer reader at {path}")
    return ExtractiveQaModel(path)
