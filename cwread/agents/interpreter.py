"""The Interpreter: its prompt, its call over a packet (its self-check is the same call with
the first answer shown), when a question needs that self-check or reads as a follow-up, and
whether a packet fits its context."""

from __future__ import annotations

import re

from cwread.agents import shared
from cwread.backends import Backend, GenerationRequest
from cwread.book import Evidence
from cwread.book.grounding import neutralise
from cwread.records.question import Question
from cwread.records.stages import AgentCall, Packet
from cwread.records.trace import Turn

TOKEN_MARGIN = 0.15  # our token counts are estimates for models whose tokenizer we cannot reach
INTERPRETER_MAX_TOKENS = 480  # up to three quotes of a sentence each, then the answer
REPEAT_PENALTY = 1.1  # with the loop cut-off in `grounding.cut_repetition`: no answer loops


INTERPRETER_SYSTEM = (
    "You are the Interpreter in a reading assistant for long narratives. Answer using ONLY "
    "the evidence paragraphs given; they are numbered like [12] and are in story order. "
    "First pin down exactly what is asked, including words like not, except, never or "
    "false. Match meaning, not wording. Compare every option against the evidence: a "
    "missing mention does not rule an option out, only a contradiction does; prefer the "
    "option with the strongest direct support. For a claim, check each of its parts."
    + shared.QUOTE_RULE
    + shared.BOOK_IS_DATA
)

SELF_CHECK_SYSTEM = (
    "You are the Interpreter checking your own answer against the same evidence, which may "
    "be wrong. Re-read the question and the evidence. If the previous quotes support a "
    "different answer than the one given, or another answer is better supported, change "
    "it. Mind the exact intent: why, not, except, false, infer. For a claim, do not demand "
    "more than the claim states." + shared.QUOTE_RULE + shared.BOOK_IS_DATA
)

def conversation_block(turn: Turn) -> str:
    """An earlier turn as the Interpreter sees it: context for what the question refers to,
    marked as no evidence (quotes come from the evidence only)."""
    answer = turn.answer if turn.answer is not None else "(not determined from the text)"
    return (
        "Conversation so far (the reader's previous question and the answer given; it tells what "
        f"the question refers to, it is not evidence):\nPrevious question: {neutralise(turn.question)}\n"
        f"Answer given: {neutralise(answer)}"
    )


def interpreter_request(
    question: Question,
    evidence: Evidence,
    previous: tuple[str, str] | None = None,
    retry: bool = False,
    conversation: Turn | None = None,
) -> GenerationRequest:
    """The Interpreter's call; with `previous` (answer, reason) it is the self-check; with
    `conversation`, a follow-up shown the turn it leans on, after the evidence."""
    parts = [
        "Evidence (story order):\n" + (shared.evidence_block(evidence) if evidence else "(no evidence was found)"),
        *([conversation_block(conversation)] if conversation else []),
        shared.question_block(question),
    ]
    if previous is not None:
        parts.append(f"Previous answer: {previous[0]}\nPrevious quotes: {previous[1]}")
    # No worked example here: the Interpreter copied one's content into its reason.
    parts.append(
        "Reply with exactly two tags and nothing else: <reason>, one to three quotes that decide "
        'the answer, each as [N] "a sentence copied exactly from paragraph N", </reason>; then '
        f"<answer>, {question.form.hint}, </answer>."
    )
    user = "\n\n".join(parts)
    if retry:
        user += "\n\n" + shared.FIRM_RETRY
    return GenerationRequest(
        messages=(("system", SELF_CHECK_SYSTEM if previous else INTERPRETER_SYSTEM), ("user", user)),
        max_tokens=INTERPRETER_MAX_TOKENS,
        grammar=shared.answer_grammar(question, evidence=evidence),
        schema=shared.answer_schema(question, evidence=evidence),
        seed=1 if retry else 0,
        repeat_penalty=REPEAT_PENALTY,
        answer_confidence=question.is_open,  # how sure the model is of its own words (cwread.answer.support)
    )


def parse_reply(text: str, question: Question) -> shared.ParsedReply:
    """Read `<reason>` and `<answer>`; tolerant of case, spacing, missing closing tags and
    text around the tags, strict about the answer being one the question allows."""
    form = question.form
    labels = form.labels(question)
    return shared.parse_tags(text, lambda raw: form.normalise(raw, labels))


_RISKY = re.compile(
    r"\b(not|never|no|none|nor|n't|cannot|except|excluding|other than|false|untrue|incorrect|"
    r"least|without|why|because|cause[sd]?|reason|led to|result(?:ed)? in|due to|so that|"
    r"infer|inferred|deduce|imply|implies|implied|suggest|suggests|conclude|likely|probably|"
    r"most likely|best describes?|main purpose|motive)\b|n't\b",
    re.I,
)


def needs_self_check(question: Question) -> bool:
    """τ(q): always for claims; for other questions when the wording signals negation,
    exception, cause or inference."""
    return question.form.self_checked or bool(_RISKY.search(question.text))


CHANCE_CHECK_SKIPPED = (
    "the model judges at chance, so its second pass would check a near-chance verdict at chance: it "
    "doubled the time of a claim judged anyway (54 s and 50 s on the Hound, 2 cores) and could not "
    "make the verdict one to trust"
)
OPEN_CHECK_SKIPPED = (
    "not worth its call for a free-form answer (on 30 such answers of a 1.5B it changed 3 and "
    "token-F1 by +0.3 points [0, +0.7], for 38% more model calls: benchmarks/self_check_open.py)"
)


def self_check_decision(question: Question, asked: bool | None) -> tuple[bool, str | None]:
    """Whether the Interpreter's second pass runs (`asked`: on, off, or None for auto) and,
    where auto leaves out a pass τ(q) names, why: a free-form answer's, which was measured not
    to earn its call."""
    if asked is not None:
        return asked, None
    if not needs_self_check(question):
        return False, None
    if question.is_open:
        return False, OPEN_CHECK_SKIPPED
    return True, None


def interpret(
    backend: Backend,
    question: Question,
    packet: Packet,
    previous: tuple[str, str] | None = None,
    conversation: Turn | None = None,
) -> AgentCall:
    """The Interpreter on a packet; with `previous` (answer, reason) it is the self-check; with
    `conversation`, a follow-up shown the turn it leans on (its quotes still only from the packet)."""
    evidence = packet.evidence()
    parsed, call = shared.call_agent(
        backend,
        lambda retry: interpreter_request(
            question, evidence, previous=previous, retry=retry, conversation=conversation
        ),
        lambda raw: parse_reply(raw, question),
    )
    return AgentCall(parsed.answer, parsed.problem, shared.ground(parsed.reason, evidence, call))


def prompt_fits(backend: Backend, request: GenerationRequest) -> bool:
    """Whether the request's prompt plus its answer fits the model's context (with margin)."""
    prompt = "\n".join(content for _, content in request.messages)
    needed = backend.count_tokens(prompt) * (1 + TOKEN_MARGIN) + request.max_tokens + 32
    return needed <= backend.capabilities.context


def packet_fits(backend: Backend, question: Question, evidence: Evidence) -> bool:
    """Whether an Interpreter prompt over `evidence` fits, sized for the longer self-check."""
    request = interpreter_request(question, evidence, previous=("X", "x" * 600))
    return prompt_fits(backend, request)
