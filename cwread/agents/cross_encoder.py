"""The judge: a small cross-encoder, trained here (training/judge.py), that scores how well a
passage holds what a question needs, run with ONNX Runtime (no torch).

It is the Finder's CPU form (cwread.agents.judge_finder.JudgeFinder, `--finder judge`): it scores the
paragraphs a question reads, and their sentences for the clue to quote. A judge is a folder:
an int8 ONNX file, its tokenizer and `judge.json` (its name, version, the sha256 of each file,
the longest input it was trained on, the keep threshold chosen on its held-out data), from
$CWREAD_JUDGE or, once one ships, cwread/data/judge/ (none does yet: the one trained so far did
not beat the retriever's rank on the dev novels). A file whose checksum does not match is
refused (JudgeUnavailable), and the caller falls back to the retriever's rank.

Passages longer than a window (`passage_windows`, the cut its training data was made with)
are scored a window at a time and take their best window's score.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from cwread.cache import file_sha256
from cwread.errors import ModelError
from cwread.text.sentences import sentence_spans

WINDOW_WORDS = 90  # a passage about as long as a long novel paragraph (training's windows too)
BATCH = 32
MANIFEST = "judge.json"


class JudgeUnavailable(ModelError):
    """The judge's files are missing, damaged, or cannot be run here."""


def sentence_windows(text: str, words: int = WINDOW_WORDS) -> list[tuple[int, int, str]]:
    """`text` cut at sentence ends into windows of about `words` words: (first sentence, end
    sentence, text) each (one window when it is shorter; a single longer sentence stays whole,
    the tokenizer truncating it). Training cuts its passages with it too."""
    spans = sentence_spans(text) or [(0, len(text))]
    out: list[tuple[int, int, str]] = []
    start = 0
    while start < len(spans):
        end, count = start, 0
        while end < len(spans):
            size = len(text[spans[end][0] : spans[end][1]].split())
            if end > start and count + size > words:
                break
            count += size
            end += 1
        out.append((start, end, text[spans[start][0] : spans[end - 1][1]]))
        start = end
    return out


def passage_windows(text: str, words: int = WINDOW_WORDS) -> list[str]:
    """The texts of `sentence_windows`."""
    return [window for _, _, window in sentence_windows(text, words)]


@dataclass(frozen=True)
class JudgeInfo:
    """What its judge.json says of a judge: its name, version and base, the longest input it
    was trained on, and the keep threshold chosen on its held-out data."""

    name: str
    version: str
    base: str
    max_length: int
    keep_threshold: float


def shipped_dir() -> Path:
    """The folder of the judge that ships with cwread."""
    from importlib.resources import files

    return Path(str(files("cwread.data") / "judge"))


def open_model_folder(folder: Path, manifest_name: str, what: str, unavailable: type[ModelError], threads: int | None = None):
    """(manifest, ONNX Runtime session, tokenizer) of a model folder cwread trained: its
    manifest names and sums its files (`model`, `tokenizer`, `sha256`); a file missing,
    damaged (its checksum does not match) or that does not load raises `unavailable`."""
    manifest = folder / manifest_name
    try:
        meta = json.loads(manifest.read_text(encoding="utf-8"))
        files = dict(meta["sha256"])
        model_file, tokenizer_file = folder / meta["model"], folder / meta["tokenizer"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise unavailable(f"the {what} in {folder} has no readable {manifest_name} ({_why(e)})") from None
    for name, expected in files.items():
        path = folder / name
        if not path.is_file():
            raise unavailable(f"the {what}'s {name} is missing from {folder}")
        if file_sha256(path) != expected:
            raise unavailable(f"the {what}'s {name} in {folder} is damaged (its checksum does not match)")
    try:
        import onnxruntime as ort
        from tokenizers import Tokenizer
    except ImportError as e:  # pragma: no cover - both are core dependencies
        raise unavailable(f"the {what} needs onnxruntime and tokenizers ({e})") from None
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or max(1, min(4, os.cpu_count() or 1))
    options.inter_op_num_threads = 1
    try:
        session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
    except Exception as e:  # a file that sums right but does not load: built wrong
        raise unavailable(f"the {what} in {folder} cannot be loaded ({_why(e)})") from None
    return meta, session, tokenizer


class Judge:
    """A cross-encoder loaded from `folder` (its judge.json names and sums its files). Safe to
    share between threads (ONNX Runtime sessions are)."""

    def __init__(self, folder: Path, threads: int | None = None) -> None:
        meta, self._session, tokenizer = open_model_folder(folder, MANIFEST, "judge", JudgeUnavailable, threads)
        self.info = JudgeInfo(
            name=str(meta.get("name", "judge")),
            version=str(meta.get("version", "")),
            base=str(meta.get("base", "")),
            max_length=int(meta.get("max_length", 192)),
            keep_threshold=float(meta.get("keep_threshold", 0.0)),
        )
        tokenizer.no_padding()
        tokenizer.enable_truncation(self.info.max_length, strategy="longest_first")
        self._tokenizer = tokenizer
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._lock = threading.Lock()

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """The judge's logit for each (question, passage) pair, as given (no windows): higher
        means the passage holds more of what the question needs."""
        if not pairs:
            return np.zeros(0, dtype=np.float32)
        with self._lock:  # the tokenizer's truncation settings are shared state
            encoded = self._tokenizer.encode_batch([(q, p) for q, p in pairs])
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i].ids))  # little padding
        out = np.zeros(len(encoded), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            chunk = order[start : start + BATCH]
            width = max(len(encoded[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            types = np.zeros_like(ids)
            for row, i in enumerate(chunk):
                e = encoded[i]
                n = len(e.ids)
                ids[row, :n], mask[row, :n], types[row, :n] = e.ids, e.attention_mask, e.type_ids
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            logits = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
            out[chunk] = np.asarray(logits, dtype=np.float32).reshape(len(chunk), -1)[:, 0]
        return out

    def score(self, question: str, passages: Sequence[str]) -> np.ndarray:
        """Each passage's score for `question`: the best of its windows' (passage_windows)."""
        cut = [passage_windows(p) for p in passages]
        flat = [(question, w) for ws in cut for w in ws]
        scores = self.score_pairs(flat)
        out = np.full(len(passages), -np.inf, dtype=np.float32)
        at = 0
        for i, ws in enumerate(cut):
            if ws:
                out[i] = scores[at : at + len(ws)].max()
            at += len(ws)
        return out


def _why(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:160]}" if text else type(error).__name__


@lru_cache(maxsize=4)
def load_judge(folder: str | None = None) -> Judge:
    """The judge in `folder` (default: the one cwread ships; FinderSettings.judge_folder names
    another), loaded once; JudgeUnavailable when it cannot be."""
    where = folder
    if where is None and not (shipped_dir() / MANIFEST).is_file():
        raise JudgeUnavailable(
            "no judge is installed: cwread ships none yet (the one trained so far did not beat the "
            "retriever's rank); train one with `python -m training judge` and set CWREAD_JUDGE to its folder"
        )
    path = Path(where).expanduser() if where else shipped_dir()
    if not path.is_dir():
        raise JudgeUnavailable(f"no judge at {path}")
    return Judge(path)
