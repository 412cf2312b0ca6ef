"""The Finder's CPU form: the judge (cwread.agents.cross_encoder) scores each segment read, and
its best sentences for the clue to quote, with no model call (`--finder judge`)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

from cwread.book import Document, grounding
from cwread.records.question import Question
from cwread.records.stages import GroundedReply, ModelCall, Quote, Verdict
from cwread.retrieval.segments import Segment
from cwread.text.sentences import sentence_spans

# Words the judge reads for one question at most, the retrieval's best-ranked paragraphs first:
# with its clue sentences about 4 s a question on The Moonstone, 2 cores (benchmarks/judge_speed.py).
# A novel's auto budget reads more than that; what is left unjudged is said in the trace (its
# segments' verdicts have no score).
JUDGE_WORDS = 30_000


CLUE_SEGMENTS = 16  # kept segments, best first, whose clue the judge picks among their sentences


CITED_MOST = 3  # paragraphs a kept segment cites at most (its packet core, with their neighbours)


class JudgeFinder:
    """The judge (cwread.agents.cross_encoder) as a Finder: it scores each paragraph read (the best-ranked
    first, `words` at most), a segment's score being its best paragraph's; a segment whose
    score reaches `threshold` is kept, citing its paragraphs that reach it (the best one at
    least), each with its clue sentence quoted verbatim: the sentence the judge scores best
    for the best CLUE_SEGMENTS kept segments, the one sharing most of the question's words
    for the rest. A segment none of whose paragraphs was judged is not kept. Its scores rank
    the kept segments for the packet."""

    reply = "judge"
    backend = None
    parallel = 1
    ranks = True

    def __init__(self, judge, threshold: float | None = None, words: int | None = None) -> None:
        self.model = judge
        self.threshold = judge.info.keep_threshold if threshold is None else threshold
        self.words = JUDGE_WORDS if words is None else words
        self.label = f"judge:{judge.info.name}@{judge.info.version}"

    def cost(self, document: Document, segment: Segment, question: Question) -> int:
        return sum(len(p.text.split()) for p in document.shown(segment.ids))

    def judge(
        self, document: Document, segments: Sequence[Segment], question: Question, ranking: Sequence[float] | None = None
    ) -> Iterator[Verdict]:
        t0 = time.perf_counter()
        asked = " ".join([question.text, *question.options.values()])
        ids = list(dict.fromkeys(pid for s in segments for pid in s.ids))
        order = sorted(ids, key=lambda p: -ranking[p - 1]) if ranking is not None else ids
        chosen, words = [], 0
        for pid in order:
            n = len(document.paragraph(pid).text.split())
            if chosen and words + n > self.words:
                continue  # a long paragraph past the budget: shorter ones after it may still fit
            chosen.append(pid)
            words += n
        scores = dict(zip(chosen, self.model.score(asked, [document.paragraph(p).text for p in chosen]).tolist(), strict=True))
        best = {s: max((scores[p] for p in s.ids if p in scores), default=None) for s in segments}
        kept = sorted((s for s in segments if best[s] is not None and best[s] >= self.threshold), key=lambda s: -best[s])
        careful = set(kept[:CLUE_SEGMENTS])
        seconds = time.perf_counter() - t0
        for segment in segments:
            score = best[segment]
            if score is None:
                reason = f"(not judged: past the judge's budget of {self.words:,} words)"
                yield Verdict(segment, "NO", GroundedReply(reason))
                continue
            judged = sorted((p for p in segment.ids if p in scores), key=lambda p: -scores[p])
            cited = [p for p in judged if scores[p] >= self.threshold][:CITED_MOST] or judged[:1]
            quotes = tuple(self._clue(document, pid, asked, segment in careful) for pid in cited)
            reason = " ".join(f'[{document.label(q.id)}] "{q.text}"' for q in quotes)
            call = ModelCall(raw="", seconds=round(seconds / len(segments), 4), label_logprobs=(("YES", score), ("NO", 0.0)))
            decision = "YES" if score >= self.threshold else "NO"
            yield Verdict(segment, decision, GroundedReply(reason, call, quotes))

    def _clue(self, document: Document, pid: int, asked: str, careful: bool) -> Quote:
        """The sentence of paragraph `pid` that is its clue, as a verbatim Quote."""
        text = document.paragraph(pid).text
        spans = sentence_spans(text) or [(0, len(text))]
        if careful and len(spans) > 1:
            scores = self.model.score_pairs([(asked, text[a:b]) for a, b in spans])
            a, b = spans[int(scores.argmax())]
        else:
            found = grounding.best_sentence(asked, [(pid, text)])
            if found is not None:
                return found
            a, b = spans[0]
        return Quote(pid, text[a:b], a, b)
