"""Can the shipped Finder adapter give options and claims a verdict on the default (#56 item 5)?

For each QuALITY dev question, each option is asked as the question with the option after it:
retrieved as `ask` retrieves, the five paragraphs of what is read that fit it best
(extractive.candidate_paragraphs), each scored by the Finder adapter on the embedded default
(ln P(YES) - ln P(NO), its decision-first prompt, all five), and the option's score is the best
of them; the option scored best is the choice. Beside it, a baseline with no model: the option
whose best paragraph the sentence ranker scores best. For each claim of the scifi dev set, the
claim is asked the same way, and TRUE is said where its best score is above 0 (P(YES) > P(NO));
the baseline says TRUE always (the majority label is given beside it).

The rule (#56): a verdict is given only where dev accuracy's 95% interval lies above chance + 10
points (options: 35%; claims: 60%).

    python benchmarks/option_judge.py [--limit N] [--out ROWS.jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
sys.path.insert(0, str(REPO))
os.environ.setdefault("OLLAMA_HOST", "http://127.0.0.1:9")  # the embedded default, whatever serves here

from cwread import api  # noqa: E402
from cwread.agents.answer_picker import JUDGED_PARAGRAPHS, AnswerPicker  # noqa: E402
from cwread.answer import extractive  # noqa: E402
from cwread.backends import embedded, embedded_files  # noqa: E402
from cwread.eval.metrics import wilson_interval  # noqa: E402

NEVER = -1000.0  # a threshold under any score: every candidate is judged and scored


def best_scores(session, rank, judge, asked: str) -> tuple[float, float]:
    """(the Finder's best score, the ranker's best score) of the paragraphs `asked` reads."""
    question = api.make_question(asked)
    found = session.find(question)
    evidence = [(p[0], p[1]) for p in found.document.shown(pid for s in found.read for pid in s.ids)]
    candidates = extractive.candidate_paragraphs(asked, evidence, rank, JUDGED_PARAGRAPHS)
    if not candidates:
        return NEVER, NEVER
    text_of = dict(evidence)
    ranked = rank(asked, [text_of[pid] for pid in candidates])
    if isinstance(judge, AnswerPicker):
        scores = [judge(question, [(pid, text_of[pid])]).best for pid in candidates]  # one at a time: no early stop
        return max(s[1] for s in scores if s is not None), max(ranked)
    return float(max(judge.score(asked, [text_of[pid] for pid in candidates]))), max(ranked)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="records of each set at most (0: all)")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--judge", type=Path, help="score with the MiniLM judge in this folder (cwread.agents.cross_encoder) rather than the Finder adapter"
    )
    args = parser.parse_args()
    if args.judge is not None:
        from cwread.agents.cross_encoder import Judge

        judge = Judge(args.judge)
        claim_at = judge.info.keep_threshold  # TRUE where the claim's best paragraph reaches it
    else:
        shipped = embedded_files.shipped_finder()
        backend = embedded.EmbeddedBackend(lora=shipped.path, trained=shipped.trained)
        judge = AnswerPicker(backend, NEVER)
        claim_at = 0.0
    sessions: dict[str, tuple] = {}
    rows = []
    for name in ("quality", "scifi"):
        source = DATA / name / f"{name}.jsonl"
        records = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
        for record in records[: args.limit or None]:
            path = str((source.parent / record["doc"]).resolve())
            if path not in sessions:
                session = api.open(path)
                sessions[path] = (session, extractive.sentence_ranker(session.document, None))
            session, rank = sessions[path]
            if record["kind"] == "mcq":
                scored = {key: best_scores(session, rank, judge, f"{record['question']} {text}") for key, text in record["options"].items()}
                row = {
                    "id": record["id"], "kind": "mcq", "gold": record["answer"],
                    "finder": max(scored, key=lambda k: scored[k][0]), "rank": max(scored, key=lambda k: scored[k][1]),
                    "scores": {k: v[0] for k, v in scored.items()},
                }
            else:
                finder_score, _ = best_scores(session, rank, judge, record["question"])
                row = {"id": record["id"], "kind": "claim", "gold": record["answer"], "finder": "TRUE" if finder_score > claim_at else "FALSE",
                       "rank": "TRUE", "scores": {"best": finder_score}}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print("| set | records | chance + 10 | the Finder's choice [95%] | the baseline [95%] | a verdict? |")
    print("|---|---|---|---|---|---|")
    for kind, name, bar in (("mcq", "QuALITY dev (options)", 0.35), ("claim", "scifi dev (claims)", 0.60)):
        chosen = [r for r in rows if r["kind"] == kind]
        if not chosen:
            continue
        cells = []
        for who in ("finder", "rank"):
            right = sum(1 for r in chosen if r[who] == r["gold"])
            cells.append((right / len(chosen), *wilson_interval(right, len(chosen))))
        finder = cells[0]
        verdict = "yes" if finder[1] > bar else "no: the interval is not above chance + 10"
        print(
            f"| {name} | {len(chosen)} | {100 * bar:.0f}% | {100 * finder[0]:.1f}% [{100 * finder[1]:.1f}, {100 * finder[2]:.1f}] | "
            f"{100 * cells[1][0]:.1f}% [{100 * cells[1][1]:.1f}, {100 * cells[1][2]:.1f}] | {verdict} |"
        )


if __name__ == "__main__":
    main()
