"""The answer's support check, calibrated and measured.

A model's open answer is shown when its quotes support it. This script builds the
calibration set and reads the tables:

    python benchmarks/answer_support.py data OUT_DIR [--stories 30]
        FairytaleQA train stories (not the dev anthology's val stories) as books, two open
        questions each, as eval records (OUT_DIR/train.jsonl, OUT_DIR/docs/).
    cwread eval OUT_DIR/train.jsonl -m no-finder --gguf MODEL --answer generative ... --out ROWS
        the model's answers, their quotes and the check's score on each (rows), then
    python benchmarks/answer_support.py table ROWS [ROWS...] [--threshold T]
        per threshold: the share of the model's answers shown, their token-F1, the share of
        shown answers the reference contradicts (F1 below 0.1), and the F1 of what the user
        gets in the default mode (the model's words when shown, else the extractive sentence).
    python benchmarks/answer_support.py confidence DATA ROWS EXTRACTIVE_ROWS
        the same table for the model's confidence in its own answer (the mean token
        log-probability of its words, `answer_logprob` in the rows of a run with
        `--answer generative-or-extractive`), the extractive answer taken from a run of the
        same packets with `--answer extractive`.
    python benchmarks/answer_support.py finder DATA ROWS EXTRACTIVE_ROWS [--threshold T]
        the same table for the Finder adapter cwread ships, scoring (the question and the
        answer, the answer's quotes) with its decision prompt (one short call an answer).
    python benchmarks/answer_support.py agreement DATA ROWS EXTRACTIVE_ROWS --gguf MODEL --out AGREED
        the same table for agreement: the model asked the question again with its own quotes
        alone as the evidence (one short call), its second answer's token-F1 with the first as
        the score (rows of a run whose eval rows carry `model_quotes`).
"""

from __future__ import annotations

import argparse
import csv
import json
import random
from pathlib import Path

from cwread.book.grounding import cut_repetition
from cwread.eval.dataset import load_records
from cwread.eval.metrics import best_over_references, bootstrap_interval, token_f1, wilson_interval
from cwread.eval.run import read_rows

SOURCE = Path(__file__).resolve().parents[2] / "shared" / "data" / "fairytaleqa" / "train"
ANSWER_COLUMNS = ("answer1", "answer2", "answer3", "answer4", "answer5", "answer6")


def build_data(out: Path, stories: int, per_story: int, seed: int = 1) -> int:
    """Eval records of FairytaleQA train: `per_story` questions of each of `stories` stories."""
    found = sorted(SOURCE.glob("*-story.csv"))
    random.Random(seed).shuffle(found)
    (out / "docs").mkdir(parents=True, exist_ok=True)
    records = []
    for path in found[:stories]:
        name = path.name.removesuffix("-story.csv")
        sections = [" ".join(row["text"].split()) for row in csv.DictReader(path.open(encoding="utf-8"))]
        (out / "docs" / f"{name}.txt").write_text("\n\n".join(sections) + "\n", encoding="utf-8")
        rows = list(csv.DictReader(path.with_name(f"{name}-questions.csv").open(encoding="utf-8")))
        for i, row in enumerate(random.Random(f"{seed}:{name}").sample(rows, min(per_story, len(rows)))):
            answers = [row[c] for c in ANSWER_COLUMNS if row.get(c)]
            records.append(
                {
                    "id": f"fairytaleqa-train-{name}-{i}",
                    "doc": f"docs/{name}.txt",
                    "kind": "open",
                    "question": row["question"],
                    "answer": answers[0],
                    "answers": answers,
                }
            )
    with (out / "train.jsonl").open("w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    return len(records)


CONTRADICTED = 0.1  # a shown answer whose token-F1 with every reference is below this
THRESHOLDS = (-4.0, -3.0, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0, 4.0)


def references_of(data: str) -> dict[str, list[str]]:
    """Each record's reference answers, by id."""
    return {r.id: list(r.answers) or [str(r.answer or "")] for r in load_records(data)}


def answered_rows(rows_path: str, ids) -> list[dict]:
    """The rows of `rows_path` with a readable open model answer, of the records `ids` holds."""
    rows = read_rows(Path(rows_path))
    return [r for r in rows if r.get("kind") == "open" and r["id"] in ids and r.get("model_answer")]


def scored_rows(data: str, rows_path: str) -> list[dict]:
    """Per record with a readable model answer: its F1, the support score (None: withheld
    before any call), and the F1 of the extractive answer given in its place (the row's
    answer in a run where no model answer passed: `--set answer.support_threshold=99`)."""
    references = references_of(data)
    out = []
    for row in answered_rows(rows_path, references):
        refs = references[row["id"]]
        model = cut_repetition(row["model_answer"])
        # rows from before the check say no answer kind: the model's words were shown as written
        shown = row["answer_kind"] == "model-words" if "answer_kind" in row else row.get("answer") == model
        out.append(
            {
                "id": row["id"],
                "model_f1": best_over_references(token_f1, model, refs),
                "score": row.get("support_score"),
                "method": row.get("support_method"),
                "fallback_f1": None if shown else best_over_references(token_f1, row.get("answer"), refs),
                "shown": shown,
            }
        )
    return out


def _pct(values: list[bool]) -> str:
    if not values:
        return "– (n=0)"
    low, high = wilson_interval(sum(values), len(values))
    return f"{100 * sum(values) / len(values):.1f} [{100 * low:.0f}–{100 * high:.0f}]"


def _mean(values: list[float]) -> str:
    if not values:
        return "–"
    low, high = bootstrap_interval(values)
    return f"{100 * sum(values) / len(values):.1f} [{100 * low:.0f}–{100 * high:.0f}]"


def table(rows: list[dict], shown_at: dict[str, list[bool]]) -> str:
    """One line per rule: the share of model answers shown, their F1, the share of shown
    answers contradicted, and the F1 of what the user gets (shown words, else the extractive)."""
    lines = [
        f"n = {len(rows)} readable model answers; F1 in % with 95% intervals",
        "",
        "| rule | shown % | F1 of shown | shown contradicted % | F1 the user gets | vs extractive only |",
        "|---|---|---|---|---|---|",
    ]
    extractive = [r["fallback_f1"] or 0.0 for r in rows]
    for rule, shown in shown_at.items():
        picked = [r["model_f1"] for r, s in zip(rows, shown, strict=True) if s]
        gets = [r["model_f1"] if s else e for r, s, e in zip(rows, shown, extractive, strict=True)]
        diff = [g - e for g, e in zip(gets, extractive, strict=True)]
        low, high = bootstrap_interval(diff)
        lines.append(
            f"| {rule} | {_pct(shown)} | {_mean(picked)} | {_pct([f < CONTRADICTED for f in picked])} "
            f"| {_mean(gets)} | {100 * sum(diff) / len(diff):+.1f} [{100 * low:+.0f}, {100 * high:+.0f}] |"
        )
    return "\n".join(lines)


RIGHT = 0.3  # a model answer with token-F1 of at least this against a reference counts as right


def separation(rows: list[dict]) -> str:
    """How well the check's score tells right answers (F1 >= RIGHT) from wrong ones (F1 <
    CONTRADICTED): the area under the ROC curve (0.5: a coin), with a bootstrap interval; an
    answer withheld before the call (a name no quote holds) counts as the lowest score."""
    scored = [(-99.0 if r["score"] is None else r["score"], r["model_f1"]) for r in rows]
    right = [s for s, f in scored if f >= RIGHT]
    wrong = [s for s, f in scored if f < CONTRADICTED]

    def auc(pos: list[float], neg: list[float]) -> float:
        pairs = [(p > n) + 0.5 * (p == n) for p in pos for n in neg]
        return sum(pairs) / len(pairs) if pairs else float("nan")

    rng = random.Random(0)
    boots = sorted(
        auc(rng.choices(right, k=len(right)), rng.choices(wrong, k=len(wrong))) for _ in range(2000)
    )
    return (
        f"score separating right (F1 >= {RIGHT}) from wrong (F1 < {CONTRADICTED}) answers: AUC "
        f"{auc(right, wrong):.2f} [{boots[50]:.2f}-{boots[1949]:.2f}] ({len(right)} right, {len(wrong)} wrong; 0.5 is a coin)"
    )


CONFIDENCE_THRESHOLDS = (-2.0, -1.5, -1.2, -1.0, -0.8, -0.6, -0.5, -0.4, -0.3, -0.2, -0.1)


def confidence_rows(data: str, rows_path: str, extractive_path: str) -> list[dict]:
    """Per record with a readable model answer: its F1, its confidence (answer_logprob),
    whether word containment passed it, and the F1 of the extractive answer of the same packet."""
    references = references_of(data)
    extractive = {
        row["id"]: best_over_references(token_f1, row.get("answer"), references[row["id"]])
        for row in read_rows(Path(extractive_path))
    }
    out = []
    for row in answered_rows(rows_path, extractive):
        refs = references[row["id"]]
        out.append(
            {
                "id": row["id"],
                "model_f1": best_over_references(token_f1, cut_repetition(row["model_answer"]), refs),
                "score": row.get("answer_logprob"),
                "words": row.get("answer_kind") == "model-words",
                "fallback_f1": extractive[row["id"]],
            }
        )
    return out


def words_or_score(row: dict, threshold: float) -> bool:
    """Whether the rule "every content word quoted, or the score at least `threshold`" shows the answer."""
    return row["words"] or (row["score"] is not None and row["score"] >= threshold)


def choose_threshold(
    rows: list[dict],
    shown_at_least: float = 0.6,
    contradicted_at_most: float = 0.15,
    thresholds: tuple[float, ...] = CONFIDENCE_THRESHOLDS,
) -> float | None:
    """The threshold a calibration set picks for "words, or confidence >= t" (fixed before the
    dev rows were read against it): the lowest (most answers shown) whose shown answers are at
    most `contradicted_at_most` contradicted; failing that, of those showing at least
    `shown_at_least`, the one with the fewest contradicted. None when no threshold shows that many."""

    def stats(t: float) -> tuple[float, float]:
        shown = [r for r in rows if words_or_score(r, t)]
        wrong = sum(r["model_f1"] < CONTRADICTED for r in shown) / len(shown) if shown else 0.0
        return len(shown) / len(rows), wrong

    for t in sorted(thresholds):
        share, wrong = stats(t)
        if share and wrong <= contradicted_at_most:
            return t
    candidates = [t for t in thresholds if stats(t)[0] >= shown_at_least]
    return min(candidates, key=lambda t: (stats(t)[1], t)) if candidates else None


AGREEMENT_THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8)
JUDGE_THRESHOLDS = (-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0)


def judge_scores(data: str, rows_path: str, folder: Path) -> dict[str, float]:
    """Each readable model answer's support by the judge (cwread.agents.cross_encoder): its score of
    (the question and the answer, the answer's quotes joined), one pair an answer, no model
    call. Rows need `model_quotes`."""
    from cwread.agents.cross_encoder import Judge

    judge = Judge(folder)
    questions = {r.id: r.question for r in load_records(data)}
    pairs, ids = [], []
    for row in answered_rows(rows_path, questions):
        quotes = " ".join(text for _, text in row.get("model_quotes") or [])
        if quotes:
            ids.append(row["id"])
            pairs.append((f"{questions[row['id']]} {cut_repetition(row['model_answer'])}", quotes))
    return dict(zip(ids, (float(s) for s in judge.score_pairs(pairs)), strict=True)) if pairs else {}


def finder_scores(data: str, rows_path: str) -> dict[str, float]:
    """Each readable model answer's support by the Finder adapter cwread ships (the embedded
    default's, prepared for the CPU): its decision score, ln P(YES) - ln P(NO), with the
    question and the answer as its question and the answer's quotes as its segment, one short
    call an answer. Rows need `model_quotes`."""
    from cwread.agents import finder
    from cwread.agents.shared import yes_odds
    from cwread.backends import embedded, embedded_files
    from cwread.records.question import Question

    shipped = embedded_files.shipped_finder()
    backend = embedded.EmbeddedBackend(lora=shipped.path, trained=shipped.trained, prepare=True)
    questions = {r.id: r.question for r in load_records(data)}
    scores = {}
    for row in answered_rows(rows_path, questions):
        quotes = [(int(pid), text) for pid, text in row.get("model_quotes") or []]
        if quotes:
            asked = Question(f"{questions[row['id']]} {cut_repetition(row['model_answer'])}", "open")
            request = finder.finder_request(asked, quotes[0][0], quotes[-1][0], "", paragraphs=quotes, decision_first=True)
            scores[row["id"]] = yes_odds(backend.generate(request).label_logprobs)
    return {k: v for k, v in scores.items() if v is not None}


def reask_on_quotes(data: str, rows_path: str, gguf: str, out: Path, num_ctx: int = 4096) -> dict[str, float]:
    """Each readable model answer's agreement with itself: the Interpreter asked the same
    question with only its quotes as the evidence, the token-F1 of that answer with the first
    (0 when it gives none). Appends to `out` as it goes and reads back what is there."""
    from cwread.agents import shared
    from cwread.agents.interpreter import interpreter_request, parse_reply
    from cwread.backends.callcache import CachedBackend
    from cwread.backends.embedded import EmbeddedBackend
    from cwread.book import ShownParagraph

    records = {r.id: r for r in load_records(data)}
    done = {r["id"]: r["agreement"] for r in read_rows(out)} if out.exists() else {}
    backend = None
    with out.open("a", encoding="utf-8") as sink:
        for row in answered_rows(rows_path, records):
            if row["id"] in done or not row.get("model_quotes"):
                continue
            backend = backend or CachedBackend(EmbeddedBackend(gguf, num_ctx=num_ctx))
            question = records[row["id"]].question
            quotes = [ShownParagraph(i, text, str(pid)) for i, (pid, text) in enumerate(row["model_quotes"], 1)]
            parsed, _ = shared.call_agent(
                backend,
                lambda retry: interpreter_request(question, quotes, retry=retry),  # noqa: B023 (used at once)
                lambda raw: parse_reply(raw, question),  # noqa: B023
            )
            again = parsed.answer or ""
            done[row["id"]] = token_f1(again, row["model_answer"]) if again else 0.0
            sink.write(json.dumps({"id": row["id"], "again": again, "agreement": done[row["id"]]}) + "\n")
            sink.flush()
    return done


def report(
    rows: list[dict],
    signal: str,
    thresholds: tuple[float, ...],
    spec: str,
    alone: bool = False,
    perfect: bool = False,
    choose: tuple[float, ...] | None = None,
) -> None:
    """The table of a signal's rules (`signal` names its score in each row): none shown, the
    words rule, the score alone at each threshold (`alone`), the words rule or the score at
    each threshold, all shown, and with `perfect` the perfect check; then the separation and,
    with `choose`, the threshold this set picks among those."""
    rules = {"none shown (extractive only)": [False] * len(rows)}
    rules["words: every content word quoted"] = [r["words"] for r in rows]
    if alone:
        for t in thresholds:
            rules[f"{signal} >= {t:{spec}}"] = [r["score"] is not None and r["score"] >= t for r in rows]
    for t in thresholds:
        rules[f"words, or {signal} >= {t:{spec}}"] = [words_or_score(r, t) for r in rows]
    rules["all shown"] = [True] * len(rows)
    if perfect:  # what no check can beat: every right answer shown, every contradicted one withheld
        rules["a perfect check (reads the references: an upper bound)"] = [r["model_f1"] >= CONTRADICTED for r in rows]
    print(table(rows, rules))
    print()
    print(separation(rows))
    if choose is not None:
        chosen = choose_threshold(rows, thresholds=choose)
        print(f"threshold this set chooses (benchmarks/answer_support.py choose_threshold): {chosen}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    data = sub.add_parser("data")
    data.add_argument("out", type=Path)
    data.add_argument("--stories", type=int, default=30)
    data.add_argument("--per-story", type=int, default=2)
    tab = sub.add_parser("table")
    tab.add_argument("data", help="the eval records the rows are of")
    tab.add_argument(
        "rows", help="rows of `cwread eval ... --set answer.support_threshold=99` (every answer checked, none passed)"
    )
    tab.add_argument("--words", help="rows of the same run before the check: word containment decided")
    conf = sub.add_parser("confidence")
    conf.add_argument("data", help="the eval records the rows are of")
    conf.add_argument("rows", help="rows of `cwread eval ... --answer generative-or-extractive` (answer_logprob)")
    conf.add_argument("extractive", help="rows of the same run with `--answer extractive`")
    agree = sub.add_parser("agreement")
    agree.add_argument("data", help="the eval records the rows are of")
    agree.add_argument("rows", help="rows of `cwread eval ... --answer generative-or-extractive` with model_quotes")
    agree.add_argument("extractive", help="rows of the same run with `--answer extractive`")
    agree.add_argument("--gguf", required=True, help="the model that wrote the answers")
    agree.add_argument("--num-ctx", type=int, default=4096)
    agree.add_argument("--out", type=Path, required=True, help="the second answers (JSONL, resumable)")
    found = sub.add_parser("finder")
    found.add_argument("data", help="the eval records the rows are of")
    found.add_argument("rows", help="rows of `cwread eval ... --answer generative-or-extractive` with model_quotes")
    found.add_argument("extractive", help="rows of the same run with `--answer extractive`")
    found.add_argument("--threshold", type=float, help="also the rule at this threshold (one chosen on another set)")
    judged = sub.add_parser("judge")
    judged.add_argument("data", help="the eval records the rows are of")
    judged.add_argument("rows", help="rows of `cwread eval ... --answer generative-or-extractive` with model_quotes")
    judged.add_argument("extractive", help="rows of the same run with `--answer extractive`")
    judged.add_argument("--judge", type=Path, required=True, help="the judge's folder (what `python -m training judge` exports)")
    judged.add_argument("--threshold", type=float, help="also the rule at this threshold (one chosen on another set)")
    args = parser.parse_args()
    if args.command in ("judge", "finder"):
        scores = judge_scores(args.data, args.rows, args.judge) if args.command == "judge" else finder_scores(args.data, args.rows)
        rows = [{**r, "score": scores.get(r["id"])} for r in confidence_rows(args.data, args.rows, args.extractive)]
        thresholds = tuple(sorted({*JUDGE_THRESHOLDS, *([args.threshold] if args.threshold is not None else [])}))
        report(rows, args.command, thresholds, "+.1f", perfect=True, choose=JUDGE_THRESHOLDS)
        return
    if args.command == "agreement":
        agreement = reask_on_quotes(args.data, args.rows, args.gguf, args.out, args.num_ctx)
        rows = [{**r, "score": agreement.get(r["id"])} for r in confidence_rows(args.data, args.rows, args.extractive)]
        report(rows, "agreement", AGREEMENT_THRESHOLDS, ".1f")
        return
    if args.command == "confidence":
        rows = confidence_rows(args.data, args.rows, args.extractive)
        report(rows, "confidence", CONFIDENCE_THRESHOLDS, "+.1f", alone=True, perfect=True, choose=CONFIDENCE_THRESHOLDS)
        return
    if args.command == "data":
        print(build_data(args.out, args.stories, args.per_story), "records in", args.out / "train.jsonl")
        return
    rows = scored_rows(args.data, args.rows)
    rules: dict[str, list[bool]] = {"none shown (extractive only)": [False] * len(rows)}
    if args.words:
        before = {r["id"]: r["shown"] for r in scored_rows(args.data, args.words)}
        rows = [r for r in rows if r["id"] in before]
        rules = {"none shown (extractive only)": [False] * len(rows)}
        rules["words: every content word quoted"] = [before[r["id"]] for r in rows]
    for t in THRESHOLDS:
        rules[f"model check, score >= {t:+.1f}"] = [r["score"] is not None and r["score"] >= t for r in rows]
    rules["all shown"] = [True] * len(rows)
    print(table(rows, rules))
    print()
    print(separation(rows))


if __name__ == "__main__":
    main()
