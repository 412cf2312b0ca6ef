"""The records of a run: frozen dataclasses that the pipeline produces and everything reads.

One home for them, so the CLI's JSON, the Rich views, the eval harness and training see the
same objects. Only data and what follows directly from it; no model calls, no terminal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from cwread.book import Document, Forged, Quote, ShownParagraph
from cwread.book.chapters import Chapter
from cwread.records.plan import AnswerMode
from cwread.records.question import Question
from cwread.retrieval.cast import Named
from cwread.retrieval.describe import Described
from cwread.retrieval.passages import Passage, find_passages
from cwread.retrieval.segments import Budget, Segment


@dataclass(frozen=True)
class ModelCall:
    """One agent call as the backend served it, after a retry if the first reply was unreadable."""

    raw: str = ""  # the last reply's text
    parsed_first_try: bool = True
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    cached: bool = False  # every attempt was answered from cwread's call cache
    label_logprobs: tuple[tuple[str, float], ...] = ()  # the last reply's, where the backend gives them
    # the last reply's answer's mean log-probability per token, where asked for and given
    answer_logprob: float | None = None
    # prompt tokens the server took from its prompt cache rather than reading them (where it
    # says how many it read: llama.cpp); 0 where it does not say
    prompt_cached: int = 0
    runtime: str = (
        ""  # what computed the last reply, where the backend has more than one way (Generation.runtime)
    )


NO_CALL = ModelCall()  # a verdict no model gave (training data, hand-made packets)


def yes_odds(label_logprobs: tuple[tuple[str, float], ...]) -> float | None:
    """ln P(YES) - ln P(NO) from a reply's label log-probabilities (the Finder's score, a
    support check's); None where the backend did not give both."""
    scores = dict(label_logprobs)
    return scores["YES"] - scores["NO"] if "YES" in scores and "NO" in scores else None


@dataclass(frozen=True)
class GroundedReply:
    """An agent's reply, its reason's quotes checked against the paragraphs it was shown:
    `quotes` found verbatim, `forged` quoted but not there (dropped and counted, never shown
    as support), `dropped` the labels it cited of paragraphs it was not shown; `call` the
    model call that gave it. The Finder's verdicts and the
    Interpreter's calls each hold one."""

    reason: str = ""
    call: ModelCall = NO_CALL
    quotes: tuple[Quote, ...] = ()
    forged: tuple[Forged, ...] = ()
    dropped: tuple[str, ...] = ()

    @property
    def cited(self) -> tuple[int, ...]:
        """The ids of the paragraphs its quotes come from, in the order first quoted."""
        return tuple(dict.fromkeys(q.id for q in self.quotes))

    @property
    def parsed_first_try(self) -> bool:
        return self.call.parsed_first_try


@dataclass(frozen=True)
class Verdict:
    """The Finder's judgement of one segment: YES or NO, and the reply that gave it."""

    segment: Segment
    decision: str  # "YES" or "NO"
    reply: GroundedReply = GroundedReply()
    kept_on_failure: bool = False  # unparseable after a retry: kept, recall first

    @property
    def kept(self) -> bool:
        """The Finder kept the segment (YES)."""
        return self.decision == "YES"

    @property
    def score(self) -> float | None:
        """The Finder's log-odds of YES over NO at its answer (ln P(YES) - ln P(NO)), where the
        backend gave log-probabilities; None otherwise, or for a reply that could not be read."""
        return None if self.kept_on_failure else yes_odds(self.reply.call.label_logprobs)


@dataclass(frozen=True)
class AgentCall:
    """One Interpreter or self-check call, after parsing: its answer (None: unreadable),
    what was wrong with it, and the reply it came in."""

    answer: str | None
    problem: str | None
    reply: GroundedReply


@dataclass(frozen=True)
class PacketItem:
    id: int
    text: str
    reason: str  # the Finder's reason for the segment the paragraph came from
    truncated: bool = False
    label: str = ""  # how it is cited (Document.label), "" for its id


@dataclass(frozen=True)
class Packet:
    items: tuple[PacketItem, ...]
    fallback: bool = False  # no segment was kept: the top retrieved segments were packed instead
    segments: tuple[tuple[int, int], ...] = ()  # spans of the segments the packet drew on
    left_out: tuple[int, ...] = ()  # paragraphs of those segments left out by the budgets

    @property
    def ids(self) -> list[int]:
        return [item.id for item in self.items]

    @property
    def chars(self) -> int:
        return sum(len(item.text) for item in self.items)

    def evidence(self) -> list[ShownParagraph]:
        return [ShownParagraph(item.id, item.text, item.label) for item in self.items]


EMPTY_PACKET = Packet(items=())


@dataclass(frozen=True)
class FindResult:
    """Ranked candidate segments for a question, with what produced them."""

    document: Document
    question: Question
    budget: Budget
    method: str
    embedder: str
    segments: tuple[Segment, ...]
    paragraph_scores: tuple[float, ...]
    timings: dict[str, float] = field(default_factory=dict, hash=False)
    # index parts built for this question rather than read from the cache ("bm25", "dense
    # (1 of 200 files)"); empty when the book's indexes were ready
    built: tuple[str, ...] = ()
    # the question's descriptions the book's cast took for names, looked for too
    named: tuple[Named, ...] = ()
    # the paragraphs that hold the numbers the question writes (in their text or their
    # chapter's heading), those holding more first: ranked first, and an answer's first candidates
    numbered: tuple[int, ...] = ()
    # the last paragraph the reader has read (Hints.upto): none past it is in a segment or shown
    upto: int | None = None
    also: str = ""  # the reader's words searched beside the question's (Hints.also)

    @property
    def anchors(self) -> list[int]:
        return sorted(a for s in self.segments for a in s.anchors)

    @property
    def read(self) -> tuple[Segment, ...]:
        """The segments the Finder reads: the first `budget.read`."""
        return self.segments[: self.budget.read]

    @property
    def anchor_segments(self) -> tuple[Segment, ...]:
        """The segments around retrieval's anchors (ranked before the windows)."""
        return tuple(s for s in self.segments if s.origin == "anchor")

    def chapter_of(self, segment: Segment) -> Chapter | None:
        """The chapter a passage is in: its best-scored anchor's, else its first paragraph's."""
        best = max(segment.anchors, key=lambda a: self.paragraph_scores[a - 1], default=segment.start)
        return self.document.chapter(best)

    def printed(self, limit: int, expand: int | str | None = None) -> tuple[Passage, ...]:
        """The first `limit` segments (0: all) as a reader is shown them (`find_passages`)."""
        segments = self.segments if not limit else self.segments[:limit]
        return find_passages(self.document, segments, self.paragraph_scores, self.chapter_of, expand)


@dataclass(frozen=True)
class AskedFor:
    """What a question asks for: `kind` ("colour", "count", "number", "time", "place name",
    "name") and its `detail` (the thing counted: "men"; the unit of time: "month")."""

    kind: str
    detail: str | None = None

    @property
    def words(self) -> str:
        """What was looked for, in a reader's words ("a colour", "a count of men")."""
        if self.kind == "count":
            return f"a number of {self.detail}"
        if self.kind == "time":
            return f"{'an' if self.detail == 'hour' else 'a'} {self.detail or 'time'}"
        return {"colour": "a colour", "number": "a number", "place name": "a place's name"}.get(self.kind, "a name")


class Status(StrEnum):
    """Whether cwread stands behind an answer, the one field the view, the exit code, chat
    and MCP read: answered; no verdict (options or a claim a model judges at chance: only
    the best evidence); not determined from the text (the quotes do not back an answer);
    not said (the question asks for a kind of thing, a colour or a name, that the text's best
    answer does not hold: the text does not say); passages (a novel's open question where no
    model reads: where the book answers it); or no readable reply."""

    ANSWERED = "answered"
    NO_VERDICT = "no-verdict"
    NOT_DETERMINED = "not-determined"
    NOT_SAID = "not-said"
    PASSAGES = "passages"
    UNPARSEABLE = "unparseable"


@dataclass(frozen=True)
class SupportCheck:
    """Whether an answer's quotes support it, and how that was decided (SUPPORT_METHODS).
    `score`: the model's ln P(YES) - ln P(NO) that the quotes state or directly imply the
    answer (method "model"), or the mean log-probability of its answer's tokens (method
    "confidence"), `supported` when it reaches `threshold` (None: no call was made, or no
    score came back); `unquoted`: names in the answer that no quote or the question holds,
    which withhold it without a call; `quoted_share`: the share of an open answer's content words its quotes
    or the question hold (None for a label); `weight_share`: the share of a label's words'
    weight in the book (its option's text or its claim; idf) that its quotes carry (None for
    an open answer); `why`: the decision in words, for the view and the trace."""

    supported: bool
    method: str
    why: str
    score: float | None = None
    threshold: float | None = None
    unquoted: tuple[str, ...] = ()
    call: ModelCall | None = None
    quoted_share: float | None = None
    weight_share: float | None = None


# A paragraph the Finder judges likelier to hold the answer than not (P(YES) > P(NO)) ends the
# judging of an answer's candidates: on the dev novels no later candidate ever outscored one
# (61 of 350 calls saved)
SURE = 0.0


@dataclass(frozen=True)
class ParagraphJudgement:
    """The trained Finder's judgement of the paragraphs an extractive answer could come from
    (the sentence ranker's best, in its order): each one's score, ln P(YES) - ln P(NO), and
    the threshold under which none holds what the question needs (then no answer is shown)."""

    scores: tuple[tuple[int, float], ...]  # (paragraph id, score)
    threshold: float
    calls: tuple[ModelCall, ...] = ()
    # candidates left unread once one scored finder.SURE (its choice could not change)
    unjudged: tuple[int, ...] = ()
    # (paragraph id, start, end): the paragraphs judged by a part of them, its character offsets
    windows: tuple[tuple[int, int, int], ...] = ()

    @property
    def best(self) -> tuple[int, float] | None:
        """The paragraph scored best (the ranker's earlier one on a tie), with its score."""
        return max(self.scores, key=lambda item: item[1]) if self.scores else None

    @property
    def chosen(self) -> int | None:
        """The paragraph the answer comes from: the best, where it reaches the threshold."""
        best = self.best
        return best[0] if best is not None and best[1] >= self.threshold else None


@dataclass(frozen=True)
class AnswerReading:
    """The answer reader's reading of the paragraph an extractive answer comes from
    (cwread.agents.extractive_qa): the words it points at, characters [start, end) of `paragraph`;
    its score, the best span's start and end logits against "not in this passage"; and the
    threshold under which no answer is shown."""

    reader: str
    paragraph: int
    start: int
    end: int
    score: float
    threshold: float
    seconds: float
    answered: bool = False  # its words are the answer (a why or how question keeps the sentence's)

    @property
    def sure(self) -> bool:
        return self.score >= self.threshold


class Shown(StrEnum):
    """What an answer shown is: the Interpreter's words (its support checked) or a sentence of
    the book quoted (an extractive answer)."""

    MODEL_WORDS = "model-words"
    QUOTED_WORDS = "quoted-words"


@dataclass(frozen=True)
class Outcome:
    """What cwread presents, set once by the answer stage (cwread.answer.decide): whether it
    stands behind an answer (`status`), the answer (None unless answered), the quotes that
    support it (or, when none is answered, the best evidence), and the check that says they do
    (None: no check, as for an extractive answer, which is a quoted sentence)."""

    status: Status
    text: str | None
    model_answer: str | None  # what the Interpreter wrote (None: no readable reply, or not asked)
    # GENERATIVE the Interpreter's words; EXTRACTIVE the best-fitting quote; EVIDENCE_ONLY no
    # verdict asked of a model that judges at chance (GENERATIVE_OR_EXTRACTIVE is one of the two)
    mode: AnswerMode
    supported: bool  # the quotes back the answer (`check` says how that was decided)
    quotes: tuple[Quote, ...] = ()
    check: SupportCheck | None = None  # of the model's answer, shown or withheld
    judgement: ParagraphJudgement | None = None  # of an extractive answer's paragraphs, where judged
    description: Described | None = None  # a "Who is X?" answered by the packet's description of X
    reading: AnswerReading | None = (
        None  # the answer reader's, of the paragraph an extractive answer comes from
    )
    # not said: what the question asked for, and the words that fit it best but hold none
    asked_for: AskedFor | None = None
    declined: str | None = None

    @property
    def parsed(self) -> bool:
        """The answering step gave a readable result: the model's reply, an extracted sentence,
        or an answer withheld by choice (anything but no readable reply)."""
        return self.status != Status.UNPARSEABLE

    @property
    def withheld(self) -> bool:
        """No answer is given by choice (not determined, no verdict, or passages): the best
        evidence stands in its place."""
        return self.status in (Status.NOT_DETERMINED, Status.NOT_SAID, Status.NO_VERDICT, Status.PASSAGES)

    @property
    def shown(self) -> Shown | None:
        """What the answer shown is; None when none is shown."""
        if self.text is None:
            return None
        return Shown.QUOTED_WORDS if self.mode == AnswerMode.EXTRACTIVE else Shown.MODEL_WORDS


# a run that stopped before answering (the eval's retrieval), or gave no readable reply
NO_ANSWER = Outcome(Status.UNPARSEABLE, None, None, AnswerMode.GENERATIVE, False)
