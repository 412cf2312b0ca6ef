"""What is presented as the answer, and whether cwread stands behind it: the one Outcome
that the view, the exit code, chat, MCP and the eval rows read (cwread.records.stages.Outcome)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from cwread.agents.answer_picker import JUDGED_CHARS, JUDGED_PARAGRAPHS, AnswerPicker
from cwread.agents.extractive_qa import AnswerReader
from cwread.answer import extractive, span_scorer
from cwread.answer.asked_for import asked_for, holds
from cwread.answer.support import check_support
from cwread.book import Evidence, grounding
from cwread.book.chapters import is_heading
from cwread.records.plan import AnswerMode, Extract
from cwread.records.question import Question
from cwread.records.stages import AgentCall, Outcome, Packet, ParagraphJudgement, Quote, Status, SupportCheck
from cwread.retrieval import describe
from cwread.text.sentences import sentence_spans


@dataclass(frozen=True)
class Grounds:
    """What an answer is drawn from and checked against: the packet, the paragraphs the Finder
    read beyond it (`retrieved`: where withheld answers' best evidence may come from; None for
    a given packet), the ranker of sentences (None: shared question words), and the answer
    reader that picks an extractive answer's words (None: the ranker and span rules)."""

    packet: Packet
    retrieved: Evidence | None = None
    rank: extractive.SentenceRanker | None = None
    reader: AnswerReader | None = None
    numbered: tuple[int, ...] = ()  # paragraphs holding the question's numbers (FindResult.numbered)
    # the words the book writes in lower case (Document.lowercase_words): a name is none of them
    lowercase_words: frozenset[str] = frozenset()


def decide(
    question: Question,
    final: AgentCall | None,
    grounds: Grounds,
    mode: AnswerMode = AnswerMode.GENERATIVE,
    support: SupportCheck | None = None,
    extract: Extract = Extract.SPAN,
    picker: AnswerPicker | None = None,
    backed_labels: bool = True,
) -> Outcome:
    """What is presented as the answer, and whether the quotes support it (`support`: the
    check of the final answer; without one, the words decide, see cwread.answer.support).

    "evidence-only": no verdict, only the best evidence. Open questions: "generative" keeps the Interpreter's words (cut where they start to
    repeat) only if its quotes cover them, else nothing is presented (not determined from
    the text) and the best evidence is shown: the sentences of the `grounds`' packet, or else
    of its `retrieved` paragraphs, that fit the question best; "extractive" answers with the
    words the span reader picks (`extract` "span") or the sentence (`extract` "sentence") that
    fit best of the packet, ranked by its `rank` (see cwread.answer.extractive; shared question words
    without one);
    "generative-or-extractive" is generative, with the extractive answer in place of words
    the quotes do not cover; "generative-or-passages" (a novel's) with the passages instead.
    With a `picker` (the Finder picking the paragraph), an extractive answer comes from the paragraph it
    scores best among the ranker's best-fitting ones, or none is given below its threshold.
    With the `grounds`' reader (cwread.agents.extractive_qa), the words of that paragraph (with no picker, of the
    ranker's first) that the reader points at are the answer, or none is given where its score
    is under its threshold.
    Labels (mcq, claim) stand as chosen where their quotes bear on them; else none is given
    (not determined: a script must not read TRUE from a verdict its quotes do not back), unless
    not `backed_labels` (the eval's baselines on a given packet measure the model's choice).
    """
    packet, rank = grounds.packet, grounds.rank
    if mode == AnswerMode.EVIDENCE_ONLY:  # options and claims of a model that judges at chance
        evidence = _best_evidence(question, None, grounds)
        return Outcome(Status.NO_VERDICT, None, None, AnswerMode.EVIDENCE_ONLY, False, evidence)
    if question.is_open and mode == AnswerMode.PASSAGES:
        return _passages(question, grounds, picker)
    if question.is_open and mode == AnswerMode.EXTRACTIVE:
        return _extract(question, grounds, final, extract, picker)
    fallback = mode in (AnswerMode.GENERATIVE_OR_EXTRACTIVE, AnswerMode.GENERATIVE_OR_PASSAGES)
    shown = AnswerMode.GENERATIVE if fallback else mode  # unless its words go unbacked, it is the model's
    if final is None or final.answer is None:  # a fault, said as one (no sentence stands in)
        return Outcome(Status.UNPARSEABLE, None, None, shown, False)
    text = shown_text(question, final.answer)
    weights = rank.weights if rank is not None else None
    support = support or check_support(None, question, text, final, packet.evidence(), weights=weights)
    if support.supported or not (question.is_open or backed_labels):
        return Outcome(Status.ANSWERED, text, final.answer, shown, support.supported, final.reply.quotes, check=support)
    # a label whose quotes do not bear on it is no verdict: the model's choice stays in the trace
    if fallback and question.is_open and mode == AnswerMode.GENERATIVE_OR_PASSAGES:  # a novel: no guess either
        return replace(_passages(question, grounds, picker), model_answer=final.answer, check=support)
    if fallback and question.is_open:  # a sentence of the book that fits, rather than words it does not back
        return replace(_extract(question, grounds, final, extract), check=support)
    evidence = _best_evidence(question, final, grounds)
    return Outcome(Status.NOT_DETERMINED, None, final.answer, shown, False, evidence, check=support)


def _extract(
    question: Question,
    grounds: Grounds,
    final: AgentCall | None,
    extract: Extract,
    picker: AnswerPicker | None = None,
) -> Outcome:
    """The extractive answer (`extract`: cwread.records.plan.EXTRACTS): the best-fitting words or
    sentence of the packet (what is cited is what was read: the view's packet, the JSON's
    and the citations agree), or not determined when none shares enough of the question."""
    model_answer = final.answer if final else None
    rank = grounds.rank
    pool = grounds.packet.evidence()
    # "Who is X?": the packet's own description of X, when it gives one (no Finder call: the
    # phrase beside the name answers, where the sentence most like the question does not)
    said = describe.described(question.text, pool)
    if said is not None:
        text, quote, description = said
        return Outcome(
            Status.ANSWERED, text, model_answer, AnswerMode.EXTRACTIVE, True, (quote,), description=description
        )
    needed = grounding.answer_support_needed(question.text)
    judgement = None
    if picker is not None:
        _, judgement = _judged_candidates(question, pool, rank, picker, grounds.numbered)
        if judgement is not None:
            pool = [p for p in pool if p[0] == judgement.chosen]
            # the Finder vouched for the paragraph: its answer sentence need share one of the
            # question's words, not two (benchmarks/README.md, "Figures the code rests on")
            needed = min(needed, 1)
    # who someone is is told by a sentence, not cut to a span: the span reader, fit on who did
    # what, answers "Who is Jaggers?" with a name's words ("My name is")
    spans = extract == Extract.SPAN and describe.asked(question.text) is None
    found = reading = None
    reader = grounds.reader
    if reader is not None:
        if judgement is None:  # no Finder chose: the paragraph the ranker puts first
            top = extractive.candidate_paragraphs(question.text, pool, rank, 1)
            pool = [p for p in pool if p[0] in top]
        if len(pool) == 1:
            reading = reader(question.text, pool[0][0], pool[0][1])
            if not reading.sure:  # the reader finds no answer in it: none is shown
                evidence = _best_evidence(question, final, grounds)
                return Outcome(Status.NOT_DETERMINED, None, model_answer, AnswerMode.EXTRACTIVE, False, evidence,
                               judgement=judgement, reading=reading)  # fmt: skip
            if span_scorer.question_kind(question.text) not in RULED_BY_SENTENCE:
                found = _read_answer(question.text, pool[0], (reading.start, reading.end), spans)
                reading = replace(reading, answered=found is not None)
    found = found or extractive.best_answer(question.text, pool, rank, needed, spans=spans)
    if found is None:
        evidence = _best_evidence(question, final, grounds)
        return Outcome(
            Status.NOT_DETERMINED, None, model_answer, AnswerMode.EXTRACTIVE, False, evidence, judgement=judgement,
            reading=reading,
        )
    # The sentence is the answer (a why-question's, its reason): giving only its longest run
    # of words the question does not already say lowered token-F1 on the dev anthology (0.160
    # -> 0.132 on the extractive baseline's sentences, 20 records).
    text, quote = found
    asked = asked_for(question.text)
    if asked is not None and not holds(asked, question.text, text, _sentence(pool, quote), grounds.lowercase_words):
        # "What colour was the hat?" answered by a sentence that names no colour: the text does not say
        evidence = _best_evidence(question, final, grounds)
        return Outcome(
            Status.NOT_SAID, None, model_answer, AnswerMode.EXTRACTIVE, False, evidence, judgement=judgement,
            reading=reading, asked_for=asked, declined=text,
        )  # fmt: skip
    return Outcome(
        Status.ANSWERED, text, model_answer, AnswerMode.EXTRACTIVE, True, (quote,), judgement=judgement, reading=reading
    )


def _sentence(pool, quote: Quote) -> str:
    """The sentence of the packet that holds `quote` (the quote itself where none is found)."""
    text = next((p[1] for p in pool if p[0] == quote.id), None)
    if text is None:
        return quote.text
    for start, end in sentence_spans(text):
        if start <= quote.start < end:
            return text[start : max(end, quote.end)]
    return quote.text


def _candidates(
    question: Question, pool, rank, numbered: tuple[int, ...] = ()
) -> tuple[list[int], dict[int, tuple[int, int]]]:
    """The paragraphs of `pool` an answer could come from, best first (JUDGED_PARAGRAPHS at
    most; for "Who is X?", where the book first names X before them), each with the part of it
    that is judged and shown: a long paragraph by its sentences around the one most like the
    question, since the Finder's time grows with what it reads (benchmarks/README.md, "The part
    of a paragraph the Finder judges")."""
    introduced = describe.first_mentions(question.text, pool)
    ranked = extractive.candidate_paragraphs(question.text, pool, rank, JUDGED_PARAGRAPHS)
    text_of = {p[0]: p[1] for p in pool}
    # "milestone number 5005": the paragraphs of its chapter first, not the heading that says it
    numbered = [pid for pid in numbered if pid in text_of and not is_heading(text_of[pid])]
    candidates = list(dict.fromkeys([*numbered, *introduced, *ranked]))[:JUDGED_PARAGRAPHS]
    windows = {pid: extractive.judged_window(question.text, text_of[pid], rank, JUDGED_CHARS) for pid in candidates}
    return candidates, windows


def _judged_candidates(
    question: Question, pool, rank, picker: AnswerPicker, numbered: tuple[int, ...] = ()
) -> tuple[dict[int, tuple[int, int]], ParagraphJudgement | None]:
    """The candidates' windows (see `_candidates`) and the Finder's judgement of them (None
    where there is none to judge)."""
    candidates, windows = _candidates(question, pool, rank, numbered)
    if not candidates:
        return windows, None
    text_of = {p[0]: p[1] for p in pool}
    judgement = picker(question, [(pid, text_of[pid][slice(*windows[pid])]) for pid in candidates])
    cut = tuple((pid, *windows[pid]) for pid in candidates if windows[pid] != (0, len(text_of[pid])))
    return windows, replace(judgement, windows=cut)


def _passages(question: Question, grounds: Grounds, picker: AnswerPicker | None) -> Outcome:
    """Where the book answers `question`, for a reader to read (AnswerMode.PASSAGES): the
    candidate paragraphs of the packet, each its part that fits (see `_candidates`), in the
    order the Finder scores them where it judged (its score for holding the answer; those it
    left unread after a sure one follow in the ranker's order), else the ranker's. "Who is
    X?" is still answered by the book's own description of X where it gives one (measured as
    precise: benchmarks/README.md, "Who is X?")."""
    pool = grounds.packet.evidence()
    said = describe.described(question.text, pool)
    if said is not None:
        text, quote, description = said
        return Outcome(Status.ANSWERED, text, None, AnswerMode.EXTRACTIVE, True, (quote,), description=description)
    judgement = None
    if picker is not None:
        windows, judgement = _judged_candidates(question, pool, grounds.rank, picker, grounds.numbered)
    else:
        _, windows = _candidates(question, pool, grounds.rank, grounds.numbered)
    order = list(windows)
    if judgement is not None:
        score = dict(judgement.scores)
        order.sort(key=lambda pid: -score[pid] if pid in score else float("inf"))  # stable: the rank's order after
    text_of = {p[0]: p[1] for p in pool}
    passages = tuple(Quote(pid, text_of[pid][slice(*windows[pid])], *windows[pid]) for pid in order)
    if not passages:  # no paragraph holds a sentence that shares the question's words
        passages = _best_evidence(question, None, grounds)
    return Outcome(Status.PASSAGES, None, None, AnswerMode.PASSAGES, False, passages, judgement=judgement)


# Why and how: the reader's words lose to the reason rule and the span reader within the same
# paragraph (fairytale dev why 27.4 against 29.5 token-F1, how 19.7 against 27.1; the dev novels'
# why and how are even), so they keep those words; the reader still decides whether to answer.
RULED_BY_SENTENCE = frozenset({"why", "how", "how-feel"})


def _read_answer(question: str, paragraph: tuple, span: tuple[int, int], spans: bool) -> tuple[str, Quote] | None:
    """The answer reader's words (`span`) in the chosen `paragraph` (its id and text first) and
    the sentences they stand in (the quote): its words where `spans`, else those sentences
    whole. None where its words are no answer (a question, or only the question's own words:
    the sentence ranker answers)."""
    pid, text = paragraph[0], paragraph[1]
    start, end = span
    bounds = sentence_spans(text) or [(0, len(text))]
    first = next((a for a, b in bounds if a <= start < b), start)
    last = next((b for a, b in bounds if a < end <= b), end)
    quote = Quote(pid, text[first:last], first, last)
    words = text[start:end].strip()
    if not words or not grounding.could_answer(question, quote.text) or not grounding.could_answer(question, words):
        return None
    return (words if spans else quote.text), quote


BEST_EVIDENCE = 3  # sentences shown when the answer is withheld


def _best_evidence(question: Question, final: AgentCall | None, grounds: Grounds) -> tuple[Quote, ...]:
    """What to show instead of an unsupported answer: the model's quotes that share a word
    with the question, then the sentences of the packet and of what the Finder read that
    fit it best, up to BEST_EVIDENCE in all."""
    asked = grounding.content_words(question.text)
    shown = [q for q in (final.reply.quotes if final else ()) if asked & grounding.content_words(q.text)]
    wanted = " ".join([question.text, *question.options.values()])  # the options say what counts
    candidates = grounding.best_sentences(
        wanted, [*grounds.packet.evidence(), *(grounds.retrieved or [])], BEST_EVIDENCE + len(shown), rank=grounds.rank
    )
    for quote in candidates:
        if len(shown) < BEST_EVIDENCE and not any(
            q.id == quote.id and q.start <= quote.start < q.end for q in shown
        ):
            shown.append(quote)
    return tuple(shown)


def shown_text(question: Question, answer: str) -> str:
    """The model's answer as shown and checked: an open one cut where it starts repeating."""
    return grounding.cut_repetition(answer) if question.is_open else answer
