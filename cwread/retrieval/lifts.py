"""What the question's own shape puts first, above every fused score (`paragraph_scores`):
for "Who is X?", the paragraphs that describe X (or, where none does, those that first name X);
the paragraphs that hold the numbers the question writes; the reader's own place (`near`).
Each lifts its paragraphs over the scores in place, so retrieval anchors them."""

from __future__ import annotations

import numpy as np

from cwread.book import Document
from cwread.book.chapters import is_heading
from cwread.retrieval import describe
from cwread.retrieval.lexical import numbers_asked, numbers_held

NEAR_SPAN = 100  # paragraphs each way of a reader's `near` paragraph that rank first (a scene or two)
COMMON_NUMBER = 20  # paragraphs (or 2% of a book) past which a number names nothing in particular


def _over(scores: np.ndarray) -> float:
    """A lift that puts a paragraph above every score."""
    return (float(scores.max()) if len(scores) else 0.0) + 1.0


def lift_describing(scores: np.ndarray, document: Document, question: str) -> None:
    """"Who is X?": the paragraphs that describe X lead, or where none does, those that first
    name X (the name alone finds the paragraphs that use it most, seldom the one that says who
    it is), in their order."""
    if not describe.asked(question):
        return
    paragraphs = [(p.id, p.text) for p in document.paragraphs if not document.wrapping(p.id)]
    describing = describe.describing_paragraphs(question, paragraphs) or describe.first_mentions(
        question, paragraphs
    )
    top = _over(scores)
    for place, pid in enumerate(describing):
        scores[pid - 1] = top - 0.01 * place


def numbered(document: Document, question: str) -> dict[int, int]:
    """The paragraphs that hold numbers the question writes ("milestone number 5005"), as
    words, in their text or their chapter's heading (a chapter headed "Milestone 5005" is
    about it), with how many each holds; a heading itself is left to its chapter. A number
    the text writes in more than COMMON_NUMBER paragraphs (or 2% of them) is no key."""
    asked = numbers_asked(question)
    if not asked:  # most questions: nothing read
        return {}
    texts = [p.text for p in document.paragraphs]
    held = numbers_held(texts, asked)
    common = max(COMMON_NUMBER, len(texts) // 50)
    keys = frozenset(n for n in asked if sum(n in h for h in held) <= common)
    if not keys:
        return {}
    titles: dict[str, frozenset[str]] = {}
    found: dict[int, int] = {}
    for pid, (text, numbers) in enumerate(zip(texts, held, strict=True), start=1):
        count = len(numbers & keys)
        if not is_heading(text):
            chapter = document.chapter(pid)
            title = chapter.title if chapter is not None else ""
            if title not in titles:
                titles[title] = numbers_held([title], keys)[0]
            count = max(count, len(titles[title]))
        if count:
            found[pid] = count
    return found


def lift_numbered(scores: np.ndarray, held: dict[int, int]) -> None:
    """The paragraphs that hold the question's numbers (`numbered`) first, those holding more
    first."""
    if held:
        lift = _over(scores)
        for pid, count in held.items():
            scores[pid - 1] += count * lift


def lift_near(scores: np.ndarray, document: Document, near: int | None) -> None:
    """The reader's place first: the paragraphs within NEAR_SPAN of `near`, in its file, in the
    order the question ranks them."""
    if near is not None:
        first, last = document.file_span(near)
        scores[max(first, near - NEAR_SPAN) - 1 : min(last, near + NEAR_SPAN)] += _over(scores)
