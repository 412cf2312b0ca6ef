"""How long a book is, as budgets, planning and answers read it: a module of its own, so that
what declares a budget (cwread.retrieval.segments, and through it the CLI's options) reads the
tiers without loading the book's parsing and formats."""

from __future__ import annotations

from enum import StrEnum

# Past this many paragraphs a text is read as a novel: the paper's novel-scale packing, anchors
# and reading that grow with the book (cwread.retrieval.segments.fit_budget), and on a novel an
# extractive answer is its best sentence whole and a small model's is where the book answers it
# (cwread.run.planning). On the dev novel (2,632 paragraphs) the budget took gold in the packet
# from 66% to 84%, on 30 questions written for The Hound of the Baskervilles (1,546) from 46% to
# 63%, on 30 for The Moonstone (3,763) from 29% to 48%; the fairytale anthology (404) stays a story.
NOVEL_PARAGRAPHS = 1000


class Tier(StrEnum):
    """How long a book is, as budgets, planning and answers read it: decided once (`tier_of`)."""

    STORY = "story"  # up to NOVEL_PARAGRAPHS paragraphs
    NOVEL = "novel"


def tier_of(paragraphs: int) -> Tier:
    """The tier of a book of `paragraphs`."""
    return Tier.NOVEL if paragraphs > NOVEL_PARAGRAPHS else Tier.STORY
