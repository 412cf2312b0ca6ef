"""Fit the span reader's weights (cwread.answer.span_scorer) on FairytaleQA train, on a CPU in minutes.

Each train story becomes a book (one paragraph per section); each question's sentences are
ranked as an extractive answer ranks them (cwread.answer.extractive), the spans of the best five are
proposed, and a linear model is fit so that the softmax over a question's spans puts its
weight on those with the best token-F1 against the references (the expected F1, with an L2
penalty, by gradient ascent in numpy), on the questions it answers: a why-question keeps
the reason rule (cwread.answer.extractive), so it is neither fit nor scored. Stories are split by name: the model is fit on
`--fit` of them and scored on the rest, the sentence's own F1 beside it with a paired
interval. FairytaleQA's val stories (the dev anthology's) are never read.

    python training/span_scorer.py [--source DIR] [--stories N] [--write]

`--write` refits on every story read and writes cwread/data/span-reader.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

from cwread.answer import extractive, span_scorer
from cwread.book import document_from_bytes, grounding
from cwread.eval.metrics import bootstrap_interval, token_f1
from cwread.retrieval.embedders import load_embedder

SOURCE = Path(__file__).resolve().parents[2] / "shared" / "data" / "fairytaleqa" / "train"
TARGET = Path(__file__).resolve().parents[1] / "cwread" / "data" / "span-reader.json"
ANSWER_COLUMNS = ("answer1", "answer2", "answer3", "answer4", "answer5", "answer6")
VERSION = 1


def train_questions(source: Path, count: int):
    """(story name, its document, its sentence ranker, question, answers) for every question
    of `count` train stories (shuffled by a fixed seed), each story a book of one paragraph a
    section."""
    embedder = load_embedder("minilm-static")
    stories = sorted(source.glob("*-story.csv"))
    random.Random(0).shuffle(stories)
    for path in stories[:count]:
        sections = [" ".join(row["text"].split()) for row in csv.DictReader(path.open(encoding="utf-8"))]
        document = document_from_bytes("\n\n".join(sections).encode(), path.name)
        rank = extractive.sentence_ranker(document, embedder)
        asked = path.with_name(path.name.replace("-story.csv", "-questions.csv"))
        for row in csv.DictReader(asked.open(encoding="utf-8")):
            answers = [row[c] for c in ANSWER_COLUMNS if row.get(c)]
            if answers:
                yield path.name, document, rank, row["question"], answers


def questions_of(source: Path, count: int):
    """(story name, question, answers, [(sentence, ranking score)...]) for the train stories."""
    for story, document, rank, question, answers in train_questions(source, count):
        evidence = [(p.id, p.text) for p in document.paragraphs]
        ranked = grounding.ranked_sentences(
            question, evidence, span_scorer.MAX_SENTENCES, grounding.answer_support_needed(question), rank
        )
        if ranked:
            yield story, question, answers, [(q.text, s) for q, s in ranked]


def candidates(question: str, sentences: list[tuple[str, float]]):
    """Each span of the question's sentences: (features, text)."""
    kind = span_scorer.question_kind(question)
    top = sentences[0][1]
    for index, (text, score) in enumerate(sentences):
        for span in span_scorer.spans(question, text, index):
            yield span_scorer.features(question, kind, text, span, score, top), text[span.start : span.end]


def fit(groups: list[tuple[list[dict], np.ndarray]], names: list[str], l2: float, steps: int) -> np.ndarray:
    """Weights maximising the mean over questions of the softmax-expected F1 of their spans."""
    index = {n: i for i, n in enumerate(names)}
    mats = []
    for feats, f1 in groups:
        x = np.zeros((len(feats), len(names)))
        for r, f in enumerate(feats):
            for name, value in f.items():
                if name in index:
                    x[r, index[name]] = value
        mats.append((x, f1))
    x_all = np.vstack([x for x, _ in mats])
    f1_all = np.concatenate([f for _, f in mats])
    bounds = np.cumsum([0] + [len(f) for _, f in mats])
    w = np.zeros(len(names))
    m, v = np.zeros_like(w), np.zeros_like(w)  # Adam
    starts = bounds[:-1]
    group = np.repeat(np.arange(len(mats)), np.diff(bounds))
    for step in range(1, steps + 1):
        z = x_all @ w
        p = np.exp(z - np.maximum.reduceat(z, starts)[group])
        p /= np.add.reduceat(p, starts)[group]
        expected = np.add.reduceat(p * f1_all, starts)[group]
        grad = (p * (f1_all - expected)) @ x_all / len(mats) - l2 * w
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad**2
        w += 0.05 * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
    return w


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=SOURCE, help="FairytaleQA's train folder")
    parser.add_argument("--stories", type=int, default=232, help="train stories read")
    parser.add_argument("--held-out", type=float, default=0.25, help="share of stories scored, not fit")
    parser.add_argument("--l2", type=float, default=1e-3)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--write", action="store_true", help="refit on every story and write the weights")
    args = parser.parse_args()
    started = time.monotonic()
    rows = []
    for story, question, answers, sentences in questions_of(args.source, args.stories):
        if extractive.asks_why(question):  # answered by the reason rule, never by the reader
            continue
        feats, texts = zip(*candidates(question, sentences), strict=True)
        f1 = np.array([max(token_f1(t, a) for a in answers) for t in texts])
        sentence_f1 = max(token_f1(sentences[0][0], a) for a in answers)
        rows.append((story, question, list(feats), f1, sentence_f1))
    print(f"{len(rows)} questions, {sum(len(r[3]) for r in rows)} spans, read in {time.monotonic() - started:.0f} s", file=sys.stderr)
    stories = sorted({r[0] for r in rows})
    random.Random(1).shuffle(stories)
    held = set(stories[: int(len(stories) * args.held_out)])
    fitting = [r for r in rows if r[0] not in held]
    names = sorted({n for r in fitting for f in r[2] for n in f})
    w = fit([(r[2], r[3]) for r in fitting], names, args.l2, args.steps)
    model = span_scorer.SpanModel(dict(zip(names, w.tolist(), strict=True)), VERSION)
    scored = [r for r in rows if r[0] in held]
    chosen = [float(r[3][int(np.argmax([model.score(f) for f in r[2]]))]) for r in scored]
    sentence = [r[4] for r in scored]
    oracle = [float(r[3].max()) for r in scored]
    print(f"held out: {len(held)} stories, {len(scored)} questions (token-F1 %)")
    for label, values in (("sentence (before)", sentence), ("span reader", chosen), ("best span (oracle)", oracle)):
        low, high = bootstrap_interval(values)
        print(f"  {label:20s} {100 * np.mean(values):5.1f} [{100 * low:.1f}-{100 * high:.1f}]")
    low, high = bootstrap_interval([c - s for c, s in zip(chosen, sentence, strict=True)])
    print(f"  difference           {100 * (np.mean(chosen) - np.mean(sentence)):+5.1f} [{100 * low:+.1f}, {100 * high:+.1f}]")
    by_kind: dict[str, list[tuple[float, float]]] = {}
    for r, c in zip(scored, chosen, strict=True):
        by_kind.setdefault(span_scorer.question_kind(r[1]), []).append((r[4], c))
    for kind, pairs in sorted(by_kind.items(), key=lambda kv: -len(kv[1])):
        print(f"  {kind:9s} n={len(pairs):4d}  {100 * np.mean([p[0] for p in pairs]):5.1f} -> {100 * np.mean([p[1] for p in pairs]):5.1f}")
    if args.write:
        names = sorted({n for r in rows for f in r[2] for n in f})
        w = fit([(r[2], r[3]) for r in rows], names, args.l2, args.steps)
        weights = {n: round(float(x), 5) for n, x in zip(names, w, strict=True) if abs(x) > 1e-6}
        TARGET.write_text(
            json.dumps({"version": VERSION, "fit_on": f"FairytaleQA train, {len(stories)} stories, {len(rows)} questions", "weights": weights}, indent=1, sort_keys=True)
            + "\n",
            encoding="utf-8",
        )
        print(f"wrote {TARGET}", file=sys.stderr)


if __name__ == "__main__":
    main()
