"""The Finder picking an extractive answer's paragraph: which of a few candidate paragraphs holds
the answer, each scored YES or NO (cwread.answer.decide reads its judgement)."""

from __future__ import annotations

from collections.abc import Sequence

from cwread.agents import shared
from cwread.agents.finder import finder_request, parse_finder_reply
from cwread.backends import Backend
from cwread.book import ShownParagraph
from cwread.records.question import Question
from cwread.records.stages import SURE, ModelCall, ParagraphJudgement, yes_odds

# Candidate paragraphs the trained Finder judges for an extractive answer (extractive.
# candidate_paragraphs), about 0.5 s each on 2 cores: on the dev novels the first five held gold
# for 41 of the 56 questions whose gold was in the packet, the first three for 34
JUDGED_PARAGRAPHS = 5


# The characters of a candidate paragraph the Finder reads (extractive.judged_window): fewer lost
# fairytale picks (benchmarks/README.md, "Figures the code rests on")
JUDGED_CHARS = 600


class AnswerPicker:
    """The trained Finder asked of single paragraphs whether each holds what the question
    needs (its decision-first prompt, read as a score, as it was trained): which of an
    extractive answer's candidate paragraphs to answer from, or none below `threshold`."""

    def __init__(self, backend: Backend, threshold: float) -> None:
        self.backend = backend
        self.threshold = threshold

    def __call__(self, question: Question, paragraphs: Sequence[ShownParagraph]) -> ParagraphJudgement:
        """Each paragraph judged in order until one scores SURE (the rest are not read: a call
        that cannot change the answer is not made)."""
        scores: list[tuple[int, float]] = []
        calls: list[ModelCall] = []
        unjudged: list[int] = []
        for pid, text, *_ in paragraphs:
            if scores and max(score for _, score in scores) >= SURE:
                unjudged.append(pid)
                continue
            parsed, call = shared.call_agent(
                self.backend,
                lambda retry, pid=pid, text=text: finder_request(
                    question, pid, pid, text, retry, paragraphs=[(pid, text)], decision_first=True
                ),
                parse_finder_reply,
            )
            calls.append(call)
            score = yes_odds(call.label_logprobs)
            if parsed.ok and score is not None:  # an unread reply judges nothing
                scores.append((pid, score))
        return ParagraphJudgement(tuple(scores), self.threshold, tuple(calls), tuple(unjudged))
