"""How extractive answers choose, measured on FairytaleQA train (not the dev anthology).

Each train story becomes a book (one paragraph per section); every question is answered with
one sentence of the whole story, and scored by token-F1 against its best reference answer:
- overlap: the sentence sharing most content words with the question (the `extractive` baseline);
- ranked: cwread.answer.extractive's ranking (rare question words weigh more, plus dense similarity);
- ranked+why: that sentence, as an extractive answer says it (a why-question's reason);
- with `--model N`: for N questions, the embedded model's pick among the ranking's top five,
  by P(Yes) that a sentence answers, as a check that the small model adds nothing.

    python benchmarks/extractive_train.py [--stories 120] [--model 120] [--source DIR]
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

from cwread.answer import extractive
from cwread.book import grounding
from cwread.eval.metrics import bootstrap_interval, token_f1

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for training/
from training.span_scorer import SOURCE, train_questions


def model_pick(server, question: str, sentences: list[str]) -> int:
    """Index of the sentence the embedded model rates likeliest to answer (P(Yes) / P(No))."""
    scores = []
    for sentence in sentences:
        prompt = f"Question: {question}\nSentence: {sentence}\nDoes this sentence answer the question? Reply Yes or No."
        body = {
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": 1,
            "temperature": 0,
            "logprobs": True,
            "top_logprobs": 20,
        }
        top = server.handle_chat_completions(body)["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        yes = sum(math.exp(t["logprob"]) for t in top if t["token"].strip().lower() == "yes")
        no = sum(math.exp(t["logprob"]) for t in top if t["token"].strip().lower() == "no")
        scores.append(math.log((yes + 1e-6) / (no + 1e-6)))
    return max(range(len(scores)), key=scores.__getitem__)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=SOURCE, help="FairytaleQA's train folder")
    parser.add_argument("--stories", type=int, default=120)
    parser.add_argument("--model", type=int, default=0, help="questions to rerank with the embedded model")
    args = parser.parse_args()
    server = None
    if args.model:
        from cwread.backends.embedded_files import default_gguf
        from cwread.backends.llama_server import shared_server

        server = shared_server(default_gguf(), 4096, 2).server
    f1: dict[str, list[float]] = {}
    why: dict[str, list[float]] = {}
    for _, document, rank, question, answers in train_questions(args.source, args.stories):
        evidence = [(p.id, p.text) for p in document.paragraphs]

        def score(text: str) -> float:
            return max(token_f1(text, a) for a in answers)  # noqa: B023 (used at once)

        plain = grounding.best_sentence(question, evidence)
        ranked = grounding.best_sentences(question, evidence, 5, rank=rank)
        if plain is None or not ranked:
            continue
        said, _ = extractive.extract_answer(question, ranked[0], document.paragraph(ranked[0].id).text)
        picks = {"overlap": plain.text, "ranked": ranked[0].text, "ranked+why": said}
        for name, text in picks.items():
            f1.setdefault(name, []).append(score(text))
            if re.search(r"\bwhy\b", question, re.I):
                why.setdefault(name, []).append(score(text))
        if server is not None and len(f1.get("model top-5", [])) < args.model:
            f1.setdefault("ranked (model subset)", []).append(score(ranked[0].text))
            pick = ranked[model_pick(server, question, [q.text for q in ranked])]
            f1.setdefault("model top-5", []).append(score(pick.text))
    for title, table in (("all questions", f1), ("why-questions", why)):
        print(f"token-F1 %, {title} ({args.stories} train stories)")
        for name, values in table.items():
            low, high = bootstrap_interval(values)
            print(
                f"  {name:22s} {100 * sum(values) / len(values):5.1f} [{100 * low:.1f}-{100 * high:.1f}] n={len(values)}"
            )


if __name__ == "__main__":
    main()
