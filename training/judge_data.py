"""The judge's training data: (question, passage, label) pairs that look like the novels it reads.

Two sources (the data card, `data_card`, lists every story and book used):

- FairytaleQA train: for each explicit question, the passage that holds its answer (the window
  of sentences around the sentence that best matches a reference answer, inside the gold
  section) against windows of the story's other sections, the closest to the question first
  (hard negatives), then random ones.
- Questions a generator model wrote for paragraphs of public-domain novels (InPars / GPL /
  Promptagator): the paragraph it read against paragraphs of the same book that share the
  question's words (BM25 neighbours, not its own neighbours, which may answer it too) and
  random paragraphs of the same book.

Never used: the books of ../shared/data/novels/, the dev question sets, FairytaleQA's test
split, and NoCha's four public books (`EXCLUDED_TITLES` refuses them by name).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from cwread.agents.cross_encoder import sentence_windows
from cwread.book import Document, grounding
from cwread.text.sentences import sentence_spans

# Books that measure cwread (dev novels, NoCha's public sample): never trained on.
EXCLUDED_TITLES = (
    "hound of the baskervilles",
    "moonstone",
    "mysterious affair at styles",
    "anne of green gables",
    "little women",
    "adventures of sherlock holmes",
    "great gatsby",
)
NEGATIVES_HARD = 3
NEGATIVES_RANDOM = 1


def excluded(name: str) -> bool:
    """Whether a book's file name or title names one of EXCLUDED_TITLES."""
    flat = re.sub(r"[^a-z]+", " ", name.lower())
    return any(title in flat for title in EXCLUDED_TITLES)


# ---- FairytaleQA ---------------------------------------------------------------------------


def answer_sentence(text: str, answers: Iterable[str]) -> int | None:
    """The sentence of `text` that best holds a reference answer: most of the answer's content
    words (at least two thirds of them); None when no sentence does."""
    spans = sentence_spans(text)
    best, best_share = None, 0.0
    for answer in answers:
        wanted = grounding.content_words(answer)
        if not wanted:
            continue
        for i, (a, b) in enumerate(spans):
            share = len(wanted & grounding.content_words(text[a:b])) / len(wanted)
            if share > best_share:
                best, best_share = i, share
    return best if best_share >= 2 / 3 else None


def _overlap(question: str, passage: str) -> int:
    return len(grounding.content_words(question) & grounding.content_words(passage))


def fairytale_pairs(split_dir: Path, seed: int = 0) -> Iterator[dict]:
    """Pairs from a FairytaleQA split folder (see module doc): explicit questions whose answer
    sentence is found in their gold section."""
    from training.data import stories

    rng = random.Random(seed)
    for name, doc, questions in stories(split_dir):
        sections = [p.text for p in doc.paragraphs]
        cut = [sentence_windows(s) for s in sections]  # as the judge cuts what it reads
        for q in questions:
            gold = set(q["gold"])
            located = [(g, answer_sentence(sections[g - 1], q["answers"])) for g in sorted(gold)]
            located = [(g, i) for g, i in located if i is not None]
            if not located:
                continue
            g, sentence = located[0]
            positive = next(w for w in cut[g - 1] if w[0] <= sentence < w[1])[2]
            others = [w[2] for s, ws in enumerate(cut, start=1) if s not in gold for w in ws]
            if not others:
                continue
            ranked = sorted(others, key=lambda w: -_overlap(q["question"], w))
            hard = ranked[:NEGATIVES_HARD]
            rest = ranked[NEGATIVES_HARD:]
            easy = rng.sample(rest, min(NEGATIVES_RANDOM, len(rest)))
            source = f"fairytaleqa:{name}"
            yield {"question": q["question"], "passage": positive, "label": 1, "source": source}
            for w in hard + easy:
                yield {"question": q["question"], "passage": w, "label": 0, "source": source}


# ---- novels: questions a generator writes ----------------------------------------------------

GENERATOR_SYSTEM = (
    "You write reading-comprehension questions about novels, as a curious reader who has "
    "read the whole book would ask them."
)
GENERATOR_ASK = (
    "From a novel, a paragraph (with the one before it for context):\n\n"
    "Before: {before}\n\nParagraph: {paragraph}\n\n"
    "Write one question that the Paragraph answers, in other words than the Paragraph's, "
    "{kind} Name the people (no 'he' or 'she' without a name where the text gives "
    "one). Do not mention the paragraph or the text. Then its short answer.\n"
    "Reply exactly as:\nQuestion: ...\nAnswer: ..."
)
# what each question asks, in turn (left to itself the generator asks nearly always "why")
QUESTION_KINDS = (
    "asking why something happened or why someone acted.",
    "asking who someone is, or who did something.",
    "asking what someone did, said, found or learnt.",
    "asking how something happened or was done.",
    "asking what happened after an event, or what came of it.",
    "asking where or when something happened, or what someone felt about it.",
)
MIN_WORDS = 25  # a paragraph with something to ask about
MAX_WORDS = 160  # longer ones are cut (prompt time on a CPU)


def candidate_paragraphs(document: Document, body: range) -> list[int]:
    """Paragraph ids of `body` long enough to hold a fact worth a question."""
    return [pid for pid in body if len(document.paragraph(pid).text.split()) >= MIN_WORDS]


def story_body(document: Document) -> range:
    """The ids of the story itself: between Project Gutenberg's START and END markers when
    it has them (its licence and credits are not the story)."""
    first, last = 1, len(document)
    for p in document.paragraphs:
        text = p.text.upper()
        if "*** START OF" in text and first == 1:
            first = p.id + 1
        elif "*** END OF" in text:
            last = p.id - 1
            break
    return range(first, last + 1)


def _clip(text: str, words: int) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + (" ..." if len(parts) > words else "")


def generator_messages(document: Document, pid: int, turn: int = 0) -> tuple[tuple[str, str], ...]:
    before = document.paragraph(pid - 1).text if pid > 1 else "(the chapter's start)"
    user = GENERATOR_ASK.format(
        before=_clip(before, 60),
        paragraph=_clip(document.paragraph(pid).text, MAX_WORDS),
        kind=QUESTION_KINDS[turn % len(QUESTION_KINDS)],
    )
    return (("system", GENERATOR_SYSTEM), ("user", user))


_REPLY = re.compile(r"Question:\s*(?P<q>.+?\?)\s*\n+\s*Answer:\s*(?P<a>.+)", re.S)


def parse_generated(reply: str) -> tuple[str, str] | None:
    """(question, answer) from the generator's reply, or None when it is not in the asked
    shape or the question points at the text instead of the story."""
    m = _REPLY.search(reply)
    if not m:
        return None
    question, answer = " ".join(m["q"].split()), " ".join(m["a"].split()[:40])
    if re.search(r"\b(paragraph|passage|text|excerpt)\b", question, re.I) or len(question.split()) < 4:
        return None
    return question, answer


def generate_questions(books: list[Path], gguf: Path, out: Path, per_book: int, seed: int = 0) -> int:
    """Have the model in `gguf` write a question for `per_book` random paragraphs of each
    book, appended to `out` as JSON lines (a book's paragraphs already asked are skipped, so
    an interrupted run resumes). Returns the number of questions written."""
    from cwread.api import open_document
    from cwread.backends import GenerationRequest
    from cwread.backends.embedded import EmbeddedBackend

    backend = EmbeddedBackend(gguf, num_ctx=2048)
    done = set()
    if out.is_file():
        for line in out.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            done.add((row["book"], row["paragraph"]))
    written = 0
    rng = random.Random(seed)
    plans = []
    for book in books:
        if excluded(book.name):
            raise SystemExit(f"judge data: {book.name} is a book cwread is measured on; it is never trained on")
        document = open_document(str(book))
        chosen = rng.sample(candidate_paragraphs(document, story_body(document)), per_book)
        plans.append((book, document, chosen))
    # round robin over the books: a run stopped early still covers every book
    for i in range(per_book):
        for j, (book, document, chosen) in enumerate(plans):
            pid = chosen[i]
            if (book.name, pid) in done:
                continue
            messages = generator_messages(document, pid, i + j)
            reply = backend.generate(GenerationRequest(messages, max_tokens=80, seed=i))
            parsed = parse_generated(reply.text)
            row = {"book": book.name, "paragraph": pid, "reply": reply.text}
            if parsed:
                row.update(question=parsed[0], answer=parsed[1])
            with out.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
            written += parsed is not None
    return written


def novel_pairs(questions: Path, books_dir: Path, seed: int = 0) -> Iterator[dict]:
    """Pairs from generated questions (see module doc): the paragraph asked about against
    BM25 neighbours of the same book at least 3 paragraphs away, and random paragraphs."""
    import bm25s

    from cwread.api import open_document

    rng = random.Random(seed)
    rows = [json.loads(line) for line in questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    by_book: dict[str, list[dict]] = {}
    for row in rows:
        if row.get("question"):
            by_book.setdefault(row["book"], []).append(row)
    for name, asked in sorted(by_book.items()):
        if excluded(name):
            raise SystemExit(f"judge data: {name} is a book cwread is measured on; it is never trained on")
        document = open_document(str(books_dir / name))
        body = list(story_body(document))
        texts = [document.paragraph(pid).text for pid in body]
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
        for row in asked:
            pid, question = row["paragraph"], row["question"]
            hits, _ = retriever.retrieve(
                bm25s.tokenize([question], stopwords="en", show_progress=False), k=12, show_progress=False
            )
            near = [body[int(i)] for i in hits[0] if abs(body[int(i)] - pid) > 2][:NEGATIVES_HARD]
            far = [p for p in rng.sample(body, 8) if abs(p - pid) > 2 and p not in near][:NEGATIVES_RANDOM]
            source = f"novel:{name}"
            yield {"question": question, "passage": document.paragraph(pid).text, "label": 1, "source": source}
            for other in near + far:
                yield {"question": question, "passage": document.paragraph(other).text, "label": 0, "source": source}


def data_card(rows: list[dict], args) -> str:
    """The data card: every source and how many pairs each gave, and what was never used."""
    from collections import Counter

    by_source = Counter(r["source"] for r in rows)
    positives = Counter(r["source"] for r in rows if r["label"] == 1)
    stories = sorted(s.split(":", 1)[1] for s in by_source if s.startswith("fairytaleqa:"))
    books = sorted(s.split(":", 1)[1] for s in by_source if s.startswith("novel:"))
    lines = [
        "# The judge's training data",
        "",
        f"{len(rows):,} (question, passage, label) pairs, {sum(positives.values()):,} of them positive.",
        "",
        "## Sources",
        "",
        f"- FairytaleQA, train split only ({args.source}): {len(stories)} stories, "
        f"{sum(by_source[f'fairytaleqa:{s}'] for s in stories):,} pairs. Explicit questions whose answer "
        "sentence is found in the gold section; the positive is the window of sentences holding it, "
        "the negatives windows of the story's other sections (the closest to the question first).",
    ]
    if books:
        lines.append(
            f"- Questions written by a generator model ({args.questions}) for random paragraphs of "
            f"{len(books)} public-domain novels; each novel pair is repeated {args.novel_weight} times. "
            "The positive is the paragraph the question was written for; negatives are BM25 neighbours "
            "of the same book at least 3 paragraphs away, and a random paragraph."
        )
        lines += ["", "| book | questions | pairs (with repeats) |", "|---|---|---|"]
        for book in books:
            lines.append(f"| {book} | {positives[f'novel:{book}']} | {by_source[f'novel:{book}']} |")
    lines += [
        "",
        "## Never used",
        "",
        "The books of ../shared/data/novels/ and the dev question sets (for measuring and choosing "
        "settings), FairytaleQA's test and validation splits, and the four books of NoCha's public "
        "sample (Anne of Green Gables, Little Women, The Adventures of Sherlock Holmes, The Great "
        "Gatsby): `judge_data.excluded` refuses a book whose name is one of them.",
        "",
        "FairytaleQA stories: " + ", ".join(stories),
        "",
    ]
    return "\n".join(lines)
