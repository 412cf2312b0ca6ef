"""Questions a text never answers, beside those it does: what the short-text default does with
each (#87 item 1).

Two sets, each one text of many tales with both kinds of question:
- train: 21 FairytaleQA train stories joined as one anthology (a title paragraph, then a
  paragraph a section, as the dev anthology is laid out), their FairytaleQA questions (the
  first five of each story) and `data/unanswerable-train.jsonl` (97 questions the stories
  never answer); the rule was built and tuned here;
- dev: the fairytale anthology (`shared/data/fairytale`, its 200 questions) and
  `data/unanswerable-dev.jsonl` (107): measured once the rule was fixed.

Each configuration runs `cwread eval -m pipeline` on the embedded default. On the answerable
side: the answers shown, the share of them quoting a gold paragraph (Wilson 95%), token-F1
over all answerable questions (a declined one scores 0); on the unanswerable side: the share
declined (exit 4, any status but answered) and the answers shown (each a wrong exit 0). The
no-model baseline is the ranker alone (no Finder adapter, no answer reader).

    python benchmarks/unanswerable.py --out DIR [--reuse] [--sets train dev] [--before REV]

`--before REV` runs the default of that revision too (a git worktree), for the before row.
`--features` prints, per set, each signal's separation of the shown answers (answerable and
right, against unanswerable) as AUC, from the rows of the default.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from extractive_dev import DATA, REPO

from cwread.eval.metrics import wilson_interval

TRAIN_STORIES = ["black-sheep", "cuchulain-of-muirthemne", "first-born-first-wed", "happy-prince", "jorinde-and-joringel", "little-miss-muffet", "murmur-goose-egg", "osseo-the-son-of-the-evening-star", "red-shoes", "skipper-and-sir-urian", "story-of-prince-yamato-take", "the-bird-with-nine-heads", "the-constable", "the-fir-tree", "the-little-hunting-dog", "the-queen-of-heaven", "the-tale-of-bad-mice", "the-toad-woman", "the-witch-of-fife", "two-maidens", "youth-who-was-to-serve-three-years-without-pay"]
ANSWERABLE_PER_STORY = 5  # the first five FairytaleQA questions of each train story
HERE = Path(__file__).resolve().parent

CONFIGS = {
    "ranker alone (no model)": ("--finder-lora", "none", "--set", "answer.reader=off", "--answer", "extractive"),
    "the default": (),
}


def _train_anthology(work: Path) -> tuple[Path, dict[str, int], dict[tuple[str, int], int]]:
    """The train stories as one text: (its path, each story's title paragraph id, each
    (story, section)'s paragraph id)."""
    paragraphs = ["FAIRY TALES FOR TRAINING"]
    titles: dict[str, int] = {}
    sections: dict[tuple[str, int], int] = {}
    for story in TRAIN_STORIES:
        rows = list(csv.DictReader((DATA / "fairytaleqa" / "train" / f"{story}-story.csv").open(encoding="utf-8")))
        paragraphs.append(story.replace("-", " ").upper())
        titles[story] = len(paragraphs)
        for row in rows:
            paragraphs.append(" ".join(row["text"].split()))
            sections[(story, int(row["section"]))] = len(paragraphs)
    path = work / "train-anthology.txt"
    path.write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    return path, titles, sections


def _records(work: Path, name: str) -> Path:
    """The set's records, answerable and not, in one file (`unanswerable`: true on the latter)."""
    records = []
    if name == "train":
        doc, _, sections = _train_anthology(work)
        for story in TRAIN_STORIES:
            rows = list(csv.DictReader((DATA / "fairytaleqa" / "train" / f"{story}-questions.csv").open(encoding="utf-8")))
            for row in rows[:ANSWERABLE_PER_STORY]:
                answers = [row[f"answer{i}"] for i in range(1, 7) if row.get(f"answer{i}")]
                evidence = [sections[(story, int(s))] for s in row["cor_section"].split(",") if (story, int(s)) in sections]
                records.append({
                    "id": f"train-{story}-{row['question_id']}", "doc": str(doc), "kind": "open",
                    "question": row["question"], "answer": answers[0], "answers": answers, "evidence": evidence,
                })  # fmt: skip
    else:
        doc = DATA / "fairytale" / "docs" / "anthology.txt"
        source = DATA / "fairytale" / "fairytale.jsonl"
        for line in source.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            records.append({**record, "doc": str(doc)})
    for line in (HERE / "data" / f"unanswerable-{name}.jsonl").read_text(encoding="utf-8").splitlines():
        asked = json.loads(line)
        records.append({"id": asked["id"], "doc": str(doc), "kind": "open", "question": asked["question"],
                        "unanswerable": True, "question_kind": asked["type"]})  # fmt: skip
    path = work / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def rows_of(records: Path, out: Path, *flags: str, reuse: bool = False, checkout: Path = REPO) -> dict[str, dict]:
    """Each record's row from `cwread eval` run with `checkout`'s source on the embedded default."""
    if not (reuse and out.is_file()):
        out.unlink(missing_ok=True)
        env = {**os.environ, "OLLAMA_HOST": "http://127.0.0.1:9", "PYTHONPATH": str(checkout)}
        subprocess.run(
            [sys.executable, "-c", "from cwread.cli import entry; entry()", "eval", str(records),
             "-m", "pipeline", "--out", str(out), *flags],
            cwd=checkout, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    return {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}


def share(hits: int, n: int) -> str:
    if n == 0:
        return "– (0)"
    low, high = wilson_interval(hits, n)
    return f"{100 * hits / n:.1f}% ({hits}/{n}) [{100 * low:.0f}-{100 * high:.0f}]"


def line(name: str, label: str, rows: dict[str, dict], unanswerable: set[str]) -> str:
    answerable = [r for k, r in rows.items() if k not in unanswerable]
    never = [r for k, r in rows.items() if k in unanswerable]
    shown = [r for r in answerable if r["answer"] is not None]
    gold = sum(1 for r in shown if r.get("cited_gold"))
    declined = sum(1 for r in never if r["answer"] is None)
    f1_all = 100 * sum(r["f1"] for r in shown) / len(answerable) if answerable else 0.0
    return (
        f"| {name} | {label} | {share(declined, len(never))} | {len(never) - declined} | {len(answerable)} | "
        f"{len(shown)} | {share(gold, len(shown))} | {f1_all:.1f} |"
    )


HEADER = (
    "| set | configuration | unanswerable declined [95%] | unanswerable answered (wrong, exit 0) | "
    "answerable | shown | gold quoted among shown [95%] | F1 over all answerable |\n" + "|---" * 8 + "|"
)


def _worktree(rev: str, work: Path) -> Path:
    tree = work / f"before-{rev.replace('/', '_')}"
    if not tree.is_dir():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), rev], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="keep the records and rows here")
    parser.add_argument("--reuse", action="store_true", help="read the rows kept in --out rather than run again")
    parser.add_argument("--sets", nargs="*", default=["train", "dev"], choices=["train", "dev"])
    parser.add_argument("--before", default=None, help="a revision whose default is run too (the before row)")
    args = parser.parse_args()
    print(HEADER)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.out or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for name in args.sets:
            records = _records(work, name)
            unanswerable = {
                r["id"] for r in map(json.loads, records.read_text(encoding="utf-8").splitlines()) if r.get("unanswerable")
            }
            configs = [(label, flags, REPO) for label, flags in CONFIGS.items()]
            if args.before:
                configs.insert(1, (f"the default at {args.before} (before)", (), _worktree(args.before, work)))
            for i, (label, flags, checkout) in enumerate(configs):
                slug = "before" if checkout != REPO else str(i)
                rows = rows_of(records, work / f"{name}-{slug}.rows.jsonl", *flags, reuse=args.reuse, checkout=checkout)
                print(line(name, label, rows, unanswerable), flush=True)


if __name__ == "__main__":
    main()
