"""The methods `cwread eval` compares, one function each, registered by name.

- pipeline: the full method, its self-check as auto runs it (claims and risky options, not
  free-form answers: cwread.agents.interpreter.self_check_decision); no-self-check: without it;
- no-finder: every anchor segment goes to the Interpreter (budgets permitting);
- direct: the text from its start, cut where the model's context ends, in one call;
- bm25-rag / dense-rag: top paragraphs of one retriever, in story order, under B_c;
- closed-book: no text at all (what the model knows of a famous book);
- extractive: no model; the sentence of the retrieved anchor segments (packed under B_c)
  that shares most words with the question is the answer (open questions);
- ranked-extractive: no model; the same segments, the sentence ranked as the pipeline's
  extractive answers rank them (rare question words weigh more, plus dense similarity), so
  a pipeline gain can be told apart from the ranking's;
- finder: the Finder alone on the segments the pipeline reads, scored against gold evidence
  (YES-recall, precision, keep rate); no Interpreter, so no answer;
- retrieval: no model; where anchors, segments read and the packet packed with no Finder to
  filter fall against gold evidence;
- judge: no model call; the same, with the packet packed from the judge's verdicts (cwread.agents.cross_encoder).

Each function takes the run's context, the record and its retrieval with the question as
shown (options may be rotated), and returns a Trace. They are built from the pipeline's own
stages (`cwread.run.pipeline`, `cwread.run.packing`), so a baseline differs from the pipeline only
where it is meant to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from cwread import api
from cwread.agents.finder import make_finder, read_segments, reading_budget
from cwread.agents.interpreter import interpreter_request, packet_fits, prompt_fits
from cwread.answer import extractive
from cwread.backends import Backend
from cwread.backends.select import Selection
from cwread.book import grounding
from cwread.eval import rows
from cwread.eval.dataset import Record
from cwread.records.plan import AnswerMode, Extract, FinderUse
from cwread.records.question import Question
from cwread.records.stages import NO_ANSWER, FindResult, Outcome, Packet, Status
from cwread.records.trace import Trace
from cwread.run import pipeline, planning
from cwread.run.packing import pack_ranked, pack_segments, packet_of
from cwread.run.question_run import Stages
from cwread.run.session import Session
from cwread.settings import AnswerSettings, FinderSettings, RunSettings


@dataclass
class EvalContext:
    """What every method of a run shares: backends, budgets, and a reading session per book
    (its indexes, embedder and sentence ranker built once for all of the book's records)."""

    selection: Selection | None  # None when only model-free methods run
    budget: api.Budget
    embedder: str
    permute_options: bool = False
    # as asked, its open answer mode resolved: the same for every method
    requested: AnswerSettings = field(default_factory=lambda: AnswerSettings(AnswerMode.GENERATIVE))
    finding: FinderSettings = field(default_factory=FinderSettings)
    sessions: dict[str, Session] = field(default_factory=dict)
    _last_find: tuple[str, FindResult] | None = None

    def session(self, path: str) -> Session:
        if path not in self.sessions:  # the selection is already behind the call cache, if wanted
            opened = api.Settings(api.SessionSettings(self.embedder, use_cache=False))
            self.sessions[path] = api.open(path, opened, selection=self.selection)
        return self.sessions[path]

    def find(self, record: Record) -> FindResult:
        """Retrieval for `record`, shared by the methods that run on it one after another
        (rows are produced record by record, so one remembered result is enough)."""
        if self._last_find is None or self._last_find[0] != record.id:
            # the budget fitted as `ask` fits it: to the book and, where one runs, the Interpreter
            context = self.selection.interpreter.capabilities.context if self.selection else None
            found = self.session(record.doc).find(record.question, self.budget, context_tokens=context)
            self._last_find = (record.id, found)
        return self._last_find[1]

    def session_of(self, found: FindResult) -> Session:
        """The session `found` was retrieved in."""
        return next(s for s in self.sessions.values() if s.document is found.document)

    def rank(self, found: FindResult) -> extractive.SentenceRanker:
        """The sentence ranker of `found`'s book, for its retrieval's embedder."""
        return self.session_of(found).ranker(found.embedder)

    def answering(self, self_check: bool | None) -> AnswerSettings:
        """Every method judges options and claims (its accuracy is what is measured)."""
        return replace(self.requested, self_check=self_check, judge_anyway=True)

    def answer(self, found: FindResult, self_check: bool | None, packet: Packet | None = None) -> Trace:
        """The pipeline on `found` (from `packet` on, if given), as this run has it read and answer."""
        run = RunSettings(self.budget, finding=self.finding, answering=self.answering(self_check))
        # this run's backends (and the Finder the plan makes on them), whatever the book's
        # session was opened with; from `packet` on where one is given
        stages = Stages(backends=self.selection, packet=packet)
        return self.session_of(found).ask(found.question, run, stages=stages, found=found)


# a method gets the record's retrieval with the question as shown (options may be rotated)
MethodRun = Callable[[EvalContext, Record, FindResult], Trace]


@dataclass(frozen=True)
class Method:
    run: MethodRun
    fields: Callable[[Record, FindResult, Trace], dict] = rows.answer_fields  # the row it scores
    needs_model: bool = True

    @property
    def answers(self) -> bool:
        """Gives an answer to score (so options can be rotated); else evidence or Finder metrics."""
        return self.fields is rows.answer_fields


def _interpret(ctx: EvalContext, found: FindResult, packet: Packet, self_check: bool | None = False) -> Trace:
    """The Interpreter (and its self-check, if asked; None: as auto decides) on a given packet."""
    return ctx.answer(found, self_check, packet)


def _fits(interpreter: Backend, question: Question):
    return lambda evidence: packet_fits(interpreter, question, evidence)


def pipeline_method(ctx: EvalContext, record: Record, found: FindResult) -> Trace:
    return ctx.answer(found, None)


def no_self_check(ctx: EvalContext, record: Record, found: FindResult) -> Trace:
    return ctx.answer(found, False)


def no_finder(ctx: EvalContext, record: Record, found: FindResult) -> Trace:
    anchors = list(found.anchor_segments)
    fits = _fits(ctx.selection.interpreter, found.question)
    return _interpret(ctx, found, pack_segments(found.document, anchors, found.budget, fits), self_check=None)


def direct(ctx: EvalContext, record: Record, found: FindResult) -> Trace:
    """The longest run of paragraphs from the start whose Interpreter prompt fits the context."""
    document, interpreter = found.document, ctx.selection.interpreter
    lo, hi = 0, len(document)
    while lo < hi:  # binary search for the largest prefix that fits
        mid = (lo + hi + 1) // 2
        request = interpreter_request(found.question, document.shown(range(1, mid + 1)))
        if prompt_fits(interpreter, request):
            lo = mid
        else:
            hi = mid - 1
    return _interpret(ctx, found, packet_of(document, list(range(1, lo + 1))))


def _rag(retriever: str) -> MethodRun:
    def rag(ctx: EvalContext, record: Record, found: FindResult) -> Trace:
        document, question = found.document, found.question
        scores = ctx.session_of(found).find(question, found.budget, retriever).paragraph_scores
        ranked = [i + 1 for i in sorted(range(len(scores)), key=lambda i: (-scores[i], i))]
        fits = _fits(ctx.selection.interpreter, question)
        packet = pack_ranked(document, ranked, found.budget, fits, most=4 * found.budget.n_e)
        return _interpret(ctx, found, packet)

    return rag


def closed_book(ctx: EvalContext, record: Record, found: FindResult) -> Trace:
    return _interpret(ctx, found, packet_of(found.document, []))


def _extractive(ranked: bool) -> MethodRun:
    """No model: the packet sentence sharing most words with the question is the answer (open
    questions; other kinds get none). `ranked`: the answer the pipeline's extractive mode
    would give from this packet instead (see cwread.answer.extractive)."""

    def extract(ctx: EvalContext, record: Record, found: FindResult) -> Trace:
        anchors = list(found.anchor_segments)
        packet = pack_segments(found.document, anchors, found.budget)
        question = found.question
        chosen = None
        if question.is_open and ranked:
            spans = extractive.extract_kind(found.document.tier) == Extract.SPAN
            chosen = extractive.best_answer(question.text, packet.evidence(), ctx.rank(found), spans=spans)
        elif question.is_open:
            best = grounding.best_sentence(question.text, packet.evidence())
            chosen = (best.text, best) if best else None
        if chosen is None:
            return Trace(found, packet=packet, outcome=NO_ANSWER)
        text, quote = chosen
        return Trace(found, packet=packet, outcome=Outcome(Status.ANSWERED, text, text, AnswerMode.EXTRACTIVE, True, (quote,)))

    return extract


def finder(ctx: EvalContext, record: Record, found: FindResult) -> Trace:
    """The Finder alone on the segments the pipeline reads, as the run's Finder settings have
    it read and reply (whether or not the pipeline would skip it)."""
    judge = make_finder(ctx.finding, ctx.selection.finder)
    verdicts = read_segments(
        judge, found.document, found.read, found.question, reading_budget(ctx.finding.read_tokens, judge),
        ctx.finding.keep_threshold, ranking=found.paragraph_scores,
    )  # fmt: skip
    return Trace(found, verdicts=verdicts)


def judge(ctx: EvalContext, record: Record, found: FindResult) -> Trace:
    """No model call: the judge (cwread.agents.cross_encoder) reads the segments the pipeline reads and the
    packet is packed from its verdicts as the pipeline packs it (the rows of `retrieval`,
    beside which it is measured)."""
    finder = make_finder(replace(ctx.finding, use=FinderUse.JUDGE), None)
    verdicts = read_segments(
        finder, found.document, found.read, found.question, None, planning.keep_threshold_of(ctx.finding, finder),
        ranking=found.paragraph_scores,
    )  # fmt: skip
    packet = pipeline.pack_ranked_segments(found.document, pipeline.packing_order(finder, verdicts), found.budget)
    return Trace(found, verdicts=verdicts, packet=packet)


def retrieval(ctx: EvalContext, record: Record, found: FindResult) -> Trace:
    """No model: the packet the pipeline packs when no Finder filters (every segment read
    taken as kept, in reading order, under B_c)."""
    return Trace(found, packet=pack_segments(found.document, list(found.read), found.budget))


METHODS: dict[str, Method] = {
    "pipeline": Method(pipeline_method),
    "no-self-check": Method(no_self_check),
    "no-finder": Method(no_finder),
    "direct": Method(direct),
    "bm25-rag": Method(_rag("bm25")),
    "dense-rag": Method(_rag("dense")),
    "closed-book": Method(closed_book),
    "extractive": Method(_extractive(ranked=False), needs_model=False),
    "ranked-extractive": Method(_extractive(ranked=True), needs_model=False),
    "finder": Method(finder, fields=rows.finder_fields),
    "retrieval": Method(retrieval, fields=rows.retrieval_fields, needs_model=False),
    "judge": Method(judge, fields=rows.retrieval_fields, needs_model=False),
}
MODEL_METHODS = tuple(name for name, m in METHODS.items() if m.needs_model)


def with_question(found: FindResult, question: Question) -> FindResult:
    """The record's retrieval with the question as shown (options rotated)."""
    return found if question == found.question else replace(found, question=question)
