"""Whether a quote bears on a claim or an option: the check behind `supported` for labels,
calibrated on the dev sets.

A verdict (TRUE/FALSE, or an option's letter) stands as the model chose it; `supported` says
whether its quotes bear on what was judged. The rule was one shared content word, which
nearly any sentence of the same book passes. This measures two scores of a quote against a
statement: the share of the statement's word weight in the book (idf) that the quote's words
carry (`grounding.weight_shares`; the rule chosen holds it to `support.LABEL_SUPPORT_SHARE`),
and the sentence ranker's score (that share plus 0.5 x the default embedder's cosine
similarity, cwread.answer.extractive.SentenceRanker), on:

- positives: for each gold evidence paragraph of a record, the sentence of it that scores
  best (the one a reader would quote);
- near misses: the same for the three best-scoring paragraphs that are not gold (often
  relevant in fact: the gold lists are not exhaustive);
- irrelevant: the same for three paragraphs drawn at random from the rest of the book.

The statements are the claims of the dev novels (novelqa's Styles, and the questions written
for The Hound and The Moonstone: 38 claims) and, for FairytaleQA dev, each question followed
by its reference answer (200). It prints, for each threshold, the share of each kind that
passes, and the one-shared-word rule for comparison:

    python benchmarks/label_support.py [--limit N]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from cwread.answer.extractive import sentence_ranker
from cwread.book import grounding, load_document
from cwread.eval.metrics import bootstrap_interval
from cwread.retrieval.embedders import load_embedder
from cwread.text import sentences as text_sentences

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
SETS = {
    "novel claims": [
        DATA / "novelqa" / "novelqa.jsonl",
        REPO / "benchmarks" / "data" / "hound.jsonl",
        REPO / "benchmarks" / "data" / "moonstone.jsonl",
    ],
    "fairytale (question + answer)": [DATA / "fairytale" / "fairytale.jsonl"],
}
THRESHOLDS = (0.3, 0.35, 0.4, 0.45, 0.5)
LEXICAL_THRESHOLDS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3)


def statement(record: dict) -> str | None:
    if record["kind"] == "claim":
        return record["question"]
    if record["kind"] == "open" and "fairytale" in record["id"]:
        return f"{record['question']} {record['answer']}"
    return None


Scored = tuple[float, float, bool]  # the ranker's score, its idf share alone, a shared word


def best_sentence_score(rank, lexical, about: str, text: str) -> Scored:
    """The best score of a sentence of `text` against `about`, the idf share of that
    sentence, and whether it shares a content word with `about` (the old rule)."""
    pieces = [text[a:b] for a, b in text_sentences.sentences(text)] or [text]
    scores = rank(about, pieces)
    best = max(range(len(pieces)), key=scores.__getitem__)
    shared = bool(grounding.content_words(about) & grounding.content_words(pieces[best]))
    return scores[best], lexical(about, [pieces[best]])[0], shared


def measure(sources: list[Path], limit: int | None, seed: int = 0) -> dict[str, list[Scored]]:
    embedder = load_embedder()
    rng = random.Random(seed)
    found: dict[str, list[Scored]] = {"positive": [], "near miss": [], "irrelevant": []}
    books: dict[Path, tuple] = {}
    for source in sources:
        records = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
        records = [r for r in records if statement(r) and r.get("evidence")][:limit]
        for record in records:
            path = (source.parent / record["doc"]).resolve()
            if path not in books:
                document = load_document(str(path))
                books[path] = (document, sentence_ranker(document, embedder), sentence_ranker(document, None))
            document, rank, lexical = books[path]
            about = statement(record)
            gold = set(record["evidence"])
            texts = {p.id: p.text for p in document.paragraphs}
            for pid in gold:
                found["positive"].append(best_sentence_score(rank, lexical, about, texts[pid]))
            others = [pid for pid in texts if pid not in gold]
            paragraph_scores = rank(about, [texts[pid] for pid in others])
            nearest = sorted(range(len(others)), key=lambda i: -paragraph_scores[i])[:3]
            for i in nearest:
                found["near miss"].append(best_sentence_score(rank, lexical, about, texts[others[i]]))
            for pid in rng.sample(others, 3):
                found["irrelevant"].append(best_sentence_score(rank, lexical, about, texts[pid]))
    return found


def share(values: list[bool]) -> str:
    if not values:
        return "–"
    low, high = bootstrap_interval([float(v) for v in values])
    return f"{100 * sum(values) / len(values):.0f} [{100 * low:.0f}–{100 * high:.0f}]"


def table(name: str, found: dict[str, list[Scored]]) -> str:
    kinds = list(found)
    lines = [
        f"### {name}",
        "",
        "| rule | " + " | ".join(f"{k} passing % (n={len(found[k])})" for k in kinds) + " |",
        "|---|" + "---|" * len(kinds),
        "| one shared content word (before) | " + " | ".join(share([s for _, _, s in found[k]]) for k in kinds) + " |",
    ]
    for threshold in THRESHOLDS:
        cells = [share([score >= threshold for score, _, _ in found[k]]) for k in kinds]
        lines.append(f"| score >= {threshold} | " + " | ".join(cells) + " |")
    for threshold in LEXICAL_THRESHOLDS:
        cells = [share([idf >= threshold for _, idf, _ in found[k]]) for k in kinds]
        lines.append(f"| idf share >= {threshold} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="records per file")
    args = parser.parse_args()
    for name, sources in SETS.items():
        print(table(name, measure(sources, args.limit)))
        print()


if __name__ == "__main__":
    main()
