"""Scoring functions for the eval harness: pure, small, tested on hand-made records."""

from __future__ import annotations

import math
import re
import string
from collections import Counter

_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalise_text(text: str) -> str:
    """SQuAD-style: lower case, no punctuation, no articles, single spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in string.punctuation)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def token_f1(prediction: str, reference: str) -> float:
    """Token-overlap F1 between normalised texts (1.0 when both are empty)."""
    pred = normalise_text(prediction).split()
    ref = normalise_text(reference).split()
    if not pred or not ref:
        return float(pred == ref)
    common = Counter(pred) & Counter(ref)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred)
    recall = same / len(ref)
    return 2 * precision * recall / (precision + recall)


def _lcs(a: list[str], b: list[str]) -> int:
    if not a or not b:
        return 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, start=1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def rouge_l(prediction: str, reference: str) -> float:
    """ROUGE-L F-measure (β = 1) on normalised tokens."""
    pred = normalise_text(prediction).split()
    ref = normalise_text(reference).split()
    if not pred or not ref:
        return float(pred == ref)
    lcs = _lcs(pred, ref)
    if lcs == 0:
        return 0.0
    precision = lcs / len(pred)
    recall = lcs / len(ref)
    return 2 * precision * recall / (precision + recall)


def best_over_references(metric, prediction: str | None, references: list[str]) -> float:
    """The best score of `prediction` against any reference (0 for no prediction)."""
    if not prediction or not references:
        return 0.0
    return max(metric(prediction, ref) for ref in references)


def wilson_interval(successes: int, total: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval for a proportion; (0, 1) when there is no data."""
    if total == 0:
        return (0.0, 1.0)
    p = successes / total
    denom = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denom
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def bootstrap_interval(values: list[float], rounds: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of a mean (for scores that are not 0/1)."""
    if not values:
        return (0.0, 0.0)
    import random

    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(rng.choice(values) for _ in range(n)) / n for _ in range(rounds))
    return (means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1])


def ratio_interval(pairs: list[tuple[int, int]], rounds: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% bootstrap interval of Σhits/Σtotal over (hits, total) units resampled whole (a
    record's gold paragraphs stand or fall together, so records, not paragraphs, are drawn)."""
    import random

    if not pairs or not sum(t for _, t in pairs):
        return (0.0, 0.0)
    rng = random.Random(seed)
    ratios = []
    for _ in range(rounds):
        drawn = [pairs[rng.randrange(len(pairs))] for _ in pairs]
        total = sum(t for _, t in drawn)
        ratios.append(sum(h for h, _ in drawn) / total if total else 0.0)
    ratios.sort()
    return ratios[int(0.025 * rounds)], ratios[int(0.975 * rounds) - 1]


def recall(gold: list[int], found: set[int]) -> tuple[int, int]:
    """(gold ids found, gold ids) — summed over records before dividing."""
    return sum(1 for g in gold if g in found), len(gold)


def pair_accuracy(rows: list[dict]) -> tuple[int, int]:
    """(pairs with every member right, pairs) over rows that carry a `pair` key."""
    pairs: dict[str, list[bool]] = {}
    for row in rows:
        if row.get("pair") is not None and row.get("correct") is not None:
            pairs.setdefault(str(row["pair"]), []).append(bool(row["correct"]))
    complete = [v for v in pairs.values() if len(v) >= 2]
    return sum(all(v) for v in complete), len(complete)


def answer_distribution(answers: list[str | None]) -> dict[str, int]:
    """How often each answer label was given (None counts as "none")."""
    return dict(sorted(Counter("none" if a is None else a for a in answers).items()))


def constant_baselines(golds: list[str]) -> dict[str, float]:
    """Accuracy of always giving one label, for each label seen, and of the majority label."""
    if not golds:
        return {}
    counts = Counter(golds)
    out = {f"always {label}": n / len(golds) for label, n in sorted(counts.items())}
    out["majority"] = max(counts.values()) / len(golds)
    return out
