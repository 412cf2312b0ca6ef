"""The methods `cwread eval` compares, one function each, registered by name.

- pipeline: the full method; no-self-check: without the Interpreter's second pass;
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
- retrieval: no model; where anchors and segments fall against gold evidence.

Each function takes the run's context, the record, the question as shown (options may be
rotated) and the record's retrieval, and returns a Trace.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from cwread import api
from cwread.api import Document, Packet, Question, Trace
from cwread.eval import rows
from cwread.eval.records import Record


@dataclass
class EvalContext:
    """What every method of a run shares: backends, budgets, and per-record caches."""

    selection: api.Selection | None  # None when only model-free methods run
    budget: api.Budget
    embedder: str
    permute_options: bool = False
    answer_mode: str = "generative"  # for open questions, the same for every method
    documents: dict[str, Document] = field(default_factory=dict)
    _last_find: tuple[str, api.FindResult] | None = None

    def document(self, path: str) -> Document:
        if path not in self.documents:
            self.documents[path] = api.open_document(path)
        return self.documents[path]

    def find(self, record: Record) -> api.FindResult:
        """Retrieval for `record`, shared by the methods that run on it one after another
        (rows are produced record by record, so one remembered result is enough)."""
        if self._last_find is None or self._last_find[0] != record.id:
            found = api.find(self.document(record.doc), record.question, self.budget, self.embedder)
            self._last_find = (record.id, found)
        return self._last_find[1]


MethodRun = Callable[[EvalContext, Record, Question, api.FindResult], Trace]


@dataclass(frozen=True)
class Method:
    run: MethodRun
    fields: Callable[[Record, api.FindResult, Trace], dict] = rows.answer_fields  # the row it scores
    needs_model: bool = True

    @property
    def answers(self) -> bool:
        """Gives an answer to score (so options can be rotated); else evidence or Finder metrics."""
        return self.fields is rows.answer_fields


def _interpret(ctx: EvalContext, question: Question, found: api.FindResult, packet: Packet) -> Trace:
    return api.interpret_packet(
        question, found, packet, ctx.selection, self_check=False, answer_mode=ctx.answer_mode
    )


def pipeline(ctx: EvalContext, record: Record, question: Question, found: api.FindResult) -> Trace:
    return api.run_pipeline(question, found, ctx.selection, answer_mode=ctx.answer_mode)


def no_self_check(ctx: EvalContext, record: Record, question: Question, found: api.FindResult) -> Trace:
    return api.run_pipeline(question, found, ctx.selection, self_check=False, answer_mode=ctx.answer_mode)


def no_finder(ctx: EvalContext, record: Record, question: Question, found: api.FindResult) -> Trace:
    anchors = [s for s in found.segments if s.source == "anchor"]
    packet = api.segments_packet(found.document, anchors, ctx.budget, ctx.selection.interpreter, question)
    return api.interpret_packet(
        question, found, packet, ctx.selection, self_check=None, answer_mode=ctx.answer_mode
    )


def direct(ctx: EvalContext, record: Record, question: Question, found: api.FindResult) -> Trace:
    ids = api.fit_prefix(ctx.selection.interpreter, question, found.document)
    return _interpret(ctx, question, found, api.packet_of(found.document, ids))


def _rag(retriever: str) -> MethodRun:
    def rag(ctx: EvalContext, record: Record, question: Question, found: api.FindResult) -> Trace:
        document = found.document
        scores = api.rank_paragraphs(document, question, retriever, ctx.embedder)
        chosen: list[int] = []
        used = 0
        for i in sorted(range(len(scores)), key=lambda i: (-scores[i], i)):
            length = len(document.paragraphs[i].text)
            if used + length > ctx.budget.b_c:
                continue
            chosen.append(i + 1)
            used += length
            if len(chosen) >= 4 * ctx.budget.n_e:
                break
        while chosen and not api.fits(ctx.selection.interpreter, question, document, chosen):
            chosen.pop()
        return _interpret(ctx, question, found, api.packet_of(document, chosen))

    return rag


def closed_book(ctx: EvalContext, record: Record, question: Question, found: api.FindResult) -> Trace:
    return _interpret(ctx, question, found, api.packet_of(found.document, []))


def _extractive(ranked: bool) -> MethodRun:
    def extractive(ctx: EvalContext, record: Record, question: Question, found: api.FindResult) -> Trace:
        anchors = [s for s in found.segments if s.source == "anchor"]
        packet = api.segments_packet(found.document, anchors, ctx.budget, None, question)
        return api.extractive_trace(question, found, packet, ranked=ranked)

    return extractive


def finder(ctx: EvalContext, record: Record, question: Question, found: api.FindResult) -> Trace:
    verdicts = api.judge_segments(ctx.selection.finder, found.document, found.read, question, ctx.budget)
    return api.trace_without_answer(found, verdicts)


def retrieval(ctx: EvalContext, record: Record, question: Question, found: api.FindResult) -> Trace:
    return api.trace_without_answer(found)


METHODS: dict[str, Method] = {
    "pipeline": Method(pipeline),
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
}
MODEL_METHODS = tuple(name for name, m in METHODS.items() if m.needs_model)
