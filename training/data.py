"""Training data for both agents, built from FairytaleQA with cwread's own prompts.

A story's sections become its numbered paragraphs (one section, one paragraph: the rule the
dev anthology follows), so a question's `cor_section` is its gold paragraph ids.

- Finder: per question, one positive segment (a window of 1-3 paragraphs holding a gold
  paragraph; label YES, gold ids inside it) and one hard negative (the window of the same
  size without gold paragraphs that BM25 ranks highest for the question; label NO): 50/50.
- Interpreter: per question, a packet built by cwread's packing from the gold paragraphs plus
  the top BM25 distractors, and the reference answers.

Prompts come from `cwread.agents.finder` and `cwread.agents.interpreter`, so training sees exactly what inference sends.
"""

from __future__ import annotations

import csv
import json
import random
from dataclasses import replace
from pathlib import Path

from cwread.agents import shared
from cwread.agents.finder import finder_request
from cwread.agents.interpreter import interpreter_request
from cwread.book import document_from_bytes, grounding
from cwread.cache import write_file_atomic
from cwread.records.question import Question
from cwread.retrieval import lexical
from cwread.retrieval.segments import PRESETS, Segment
from cwread.run.packing import pack_segments
from cwread.text.sentences import sentence_spans

# FairytaleQA's CSV folders (train/, val/) are not part of the repository: `--source DIR` or
# CWREAD_FAIRYTALEQA names them. A GPU machine gets the built finder.jsonl/interpreter.jsonl.
SOURCE_ENV = "CWREAD_FAIRYTALEQA"


def default_source() -> str | None:
    import os

    return os.environ.get(SOURCE_ENV) or None


def read_story(path: Path) -> list[str]:
    """The story's sections as paragraphs (inner line breaks and blank lines joined)."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = sorted(csv.DictReader(f), key=lambda r: int(r["section"]))
    return [" ".join(row["text"].split()) for row in rows if row["text"].strip()]


def read_questions(path: Path) -> list[dict]:
    """Questions with their gold sections and every non-empty reference answer."""
    out = []
    with open(path, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            sections = [
                int(s) for s in str(row.get("cor_section", "")).replace(" ", "").split(",") if s.isdigit()
            ]
            answers = [row[k].strip() for k in row if k.startswith("answer") and row[k] and row[k].strip()]
            if sections and answers and row.get("question", "").strip():
                out.append(
                    {
                        "id": row["question_id"],
                        "question": row["question"].strip(),
                        "gold": sections,
                        "answers": answers,
                    }
                )
    return out


def stories(split_dir: Path):
    """(name, document, questions) for each story of a FairytaleQA split folder."""
    for story_csv in sorted(split_dir.glob("*-story.csv")):
        name = story_csv.name.removesuffix("-story.csv")
        questions_csv = split_dir / f"{name}-questions.csv"
        if not questions_csv.is_file():
            continue
        sections = read_story(story_csv)
        if not sections:
            continue
        doc = document_from_bytes("\n\n".join(sections).encode("utf-8"), name)
        if len(doc) != len(sections):  # a section over the wall threshold was split: ids would drift
            continue
        questions = [q for q in read_questions(questions_csv) if max(q["gold"]) <= len(doc)]
        yield name, doc, questions


def clue_sentence(text: str, question: str) -> str:
    """The sentence of `text` (as an agent is shown it) sharing the most content words with the
    question, else its first: a quote cwread's grammar would let the model write."""
    shown = shared.shown_evidence([(0, text)])[0][1]
    best = grounding.best_sentence(question, [(0, shown)])
    if best is not None:
        return best.text
    start, end = sentence_spans(shown)[0]
    return shown[start:end]


def _cited_clue(doc, pid: int, question: str) -> str:
    return f'[{pid}] "{clue_sentence(doc.paragraph(pid).text, question)}"'


def finder_target(
    doc, question: str, label: str, gold_in_segment: list[int], segment: tuple[int, int]
) -> str:
    """A reference reply for the format warm start: the clue sentence of the first gold
    paragraph (YES), or the segment's sentence closest to the question, judged NO. Only the
    shape is meant to be learnt here; GRPO's rewards decide what is kept after it."""
    if label == "YES":
        reason = _cited_clue(doc, gold_in_segment[0], question)
    else:
        shown = shared.shown_evidence([(i, doc.paragraph(i).text) for i in range(segment[0], segment[1] + 1)])
        best = grounding.best_sentence(question, shown, 0)
        reason = f'[{best.id}] "{best.text}"' if best is not None else _cited_clue(doc, segment[0], question)
    return f"<reason>{reason}</reason>\n<answer>{label}</answer>"


def interpreter_target(doc, question: str, gold: list[int], answer: str) -> str:
    """A reference reply for the Interpreter's format warm start: the clue sentence of the
    first gold paragraph, cited, then the reference answer."""
    return f"<reason>{_cited_clue(doc, min(gold), question)}</reason>\n<answer>{answer}</answer>"


def _messages(request) -> list[dict]:
    return [{"role": role, "content": content} for role, content in request.messages]


def finder_examples(split_dir: Path, seed: int = 0, decision_first: bool = False) -> list[dict]:
    """Balanced Finder examples (one YES, one hard NO per question where both exist).
    `decision_first`: prompts for the reply YES/NO alone, and that reply as the target."""
    rng = random.Random(seed)
    examples = []
    for name, doc, questions in stories(split_dir):
        n = len(doc)
        index = lexical.build_index([p.text for p in doc.paragraphs])
        for q in questions:
            gold = set(q["gold"])
            width = rng.randint(1, min(3, n))
            anchor = rng.choice(sorted(gold))
            start = rng.randint(max(1, anchor - width + 1), min(anchor, n - width + 1))
            positive = (start, start + width - 1)
            scores = lexical.scores(index, q["question"], n)
            negatives = [
                (s, s + width - 1) for s in range(1, n - width + 2) if not gold & set(range(s, s + width))
            ]
            if not negatives:
                continue
            hard = max(negatives, key=lambda span: (max(scores[span[0] - 1 : span[1]]), -span[0]))
            for (s, e), label in ((positive, "YES"), (hard, "NO")):
                request = finder_request(
                    Question(q["question"], "open"), s, e, doc.span_text(s, e), decision_first=decision_first
                )
                gold_ids = sorted(gold & set(range(s, e + 1)))
                examples.append(
                    {
                        "id": f"{name}-{q['id']}-{label.lower()}",
                        "prompt": _messages(request),
                        "label": label,
                        "gold_ids": gold_ids,
                        "target": f"<answer>{label}</answer>"
                        if decision_first
                        else finder_target(doc, q["question"], label, gold_ids, (s, e)),
                        "segment": [s, e],
                        "story": name,
                    }
                )
    return examples


def finder_dev_set(
    records_file: Path, decision_first: bool = True, name: str = "fairytale", most_segments: int | None = None
) -> list[dict]:
    """The Finder's dev measurement: for each record with gold evidence, every segment the
    pipeline reads under the default budget, in its reading order (the retriever's ranking),
    with its gold flag and the Finder's prompt; a model scores them all, so a Finder can be
    compared with the retriever's own ranking at any keep rate. Each row names its dev set
    (`name`); `most_segments` keeps a record's first segments only (a novel's reading of up
    to 160 is cut to what a GPU scores in minutes: where a Finder can win is in its order)."""
    from cwread import api
    from cwread.eval.dataset import load_records

    rows = []
    for record in load_records(str(records_file)):
        if not record.evidence:
            continue
        document = api.open_document(record.doc)
        found = api.find(document, record.question)
        gold = set(record.gold_ids(document))
        segments = []
        for segment in found.read[:most_segments]:
            request = finder_request(
                record.question,
                segment.start,
                segment.end,
                document.span_text(segment.start, segment.end),
                paragraphs=document.shown(segment.ids),
                decision_first=decision_first,
            )
            segments.append(
                {"start": segment.start, "end": segment.end, "gold": bool(gold & set(segment.ids)), "prompt": _messages(request)}
            )
        rows.append({"id": record.id, "set": name, "evidence": sorted(gold), "segments": segments})
    return rows


def interpreter_examples(split_dir: Path, distractors: int = 3, seed: int = 0) -> list[dict]:
    """Interpreter examples: a packet of gold + distractor paragraphs, packed by cwread."""
    budget = replace(PRESETS["focused"], n_e=10)
    examples = []
    for name, doc, questions in stories(split_dir):
        n = len(doc)
        index = lexical.build_index([p.text for p in doc.paragraphs])
        for q in questions:
            scores = lexical.scores(index, q["question"], n)
            ranked = sorted(
                (i + 1 for i in range(n) if i + 1 not in q["gold"]), key=lambda pid: -scores[pid - 1]
            )
            chosen = sorted(set(q["gold"]) | set(ranked[:distractors]))
            packet = pack_segments(doc, [Segment(pid, pid, "anchor", 1.0) for pid in chosen], budget)
            request = interpreter_request(Question(q["question"], "open"), packet.evidence())
            examples.append(
                {
                    "id": f"{name}-{q['id']}",
                    "prompt": _messages(request),
                    "kind": "open",
                    "answer": q["answers"][0],
                    "answers": q["answers"],
                    "allowed_ids": packet.ids,
                    "gold_ids": sorted(q["gold"]),
                    "evidence": shared.evidence_block(packet.evidence()),
                    "target": interpreter_target(doc, q["question"], q["gold"], q["answers"][0]),
                    "hard": False,
                    "story": name,
                }
            )
    return examples


def training_order(rows: list[dict], seed: int = 0, max_prompt_chars: int | None = None) -> list[dict]:
    """The rows in the order a training run takes them: shuffled (the file runs story by story),
    then, for CPU runs, those with prompts of at most `max_prompt_chars` characters. A warm start
    of N trains on the last N, so the rest are held out from it."""
    rows = list(rows)
    random.Random(seed).shuffle(rows)
    if max_prompt_chars:  # CPU runs: step time grows with the prompt
        rows = [r for r in rows if sum(len(m["content"]) for m in r["prompt"]) <= max_prompt_chars]
    return rows


def write_jsonl(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file_atomic(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


def data_card(finder: list[dict], interpreter: list[dict], split: str, source: Path) -> str:
    yes = sum(r["label"] == "YES" for r in finder)
    return f"""# cwread training data ({split})

Source: FairytaleQA (Apache-2.0), `{source.name}/{split}`: story sections as numbered paragraphs,
`cor_section` as gold paragraph ids. Built by `python -m training data`.

## finder.jsonl ({len(finder)} examples)
- one positive (a 1-3 paragraph window holding a gold paragraph) and one hard negative (the
  same-size window without gold that BM25 ranks highest) per question: {yes} YES / {len(finder) - yes} NO
- columns: id, prompt (chat messages from `cwread.agents.finder.finder_request`), label, gold_ids
  (gold ids inside the segment), target (a reference reply for the format warm start: the
  clue sentence of the gold paragraph, or a no-clue rationale), segment, story

## interpreter.jsonl ({len(interpreter)} examples)
- a packet from `cwread.run.packing.pack_segments` over the gold paragraphs plus the top BM25 distractors;
  free-form answers (FairytaleQA has no multiple choice)
- columns: id, prompt (`cwread.agents.interpreter.interpreter_request`), kind, answer, answers,
  allowed_ids (packet ids), gold_ids, evidence (packet text), target (a reference reply for
  the format warm start: the cited clue sentence, then the first reference answer), hard, story

Known limits: FairytaleQA questions were written from the text, so lexical overlap is high
and hard negatives are easier than in novels; one domain (fairy tales).
"""
