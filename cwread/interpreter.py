"""The Interpreter: one call over a packet (its self-check is the same call with the first
answer shown), and whether a packet fits its context."""

from __future__ import annotations

from cwread import agents
from cwread.backends import Backend, GenerationRequest
from cwread.book import Evidence
from cwread.records import AgentCall, Packet, Question, Turn

TOKEN_MARGIN = 0.15  # our token counts are estimates for models whose tokenizer we cannot reach


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
    parsed, call = agents.call_agent(
        backend,
        lambda retry: agents.interpreter_request(
            question, evidence, previous=previous, retry=retry, conversation=conversation
        ),
        lambda raw: agents.parse_reply(raw, question),
    )
    grounded = agents.ground(parsed.reason, evidence)
    return AgentCall(
        answer=parsed.answer,
        reason=parsed.reason,
        cited=grounded.cited,
        dropped=grounded.dropped,
        problem=parsed.problem,
        call=call,
        quotes=grounded.quotes,
        forged=grounded.forged,
    )


def prompt_fits(backend: Backend, request: GenerationRequest) -> bool:
    """Whether the request's prompt plus its answer fits the model's context (with margin)."""
    prompt = "\n".join(content for _, content in request.messages)
    needed = backend.count_tokens(prompt) * (1 + TOKEN_MARGIN) + request.max_tokens + 32
    return needed <= backend.capabilities.context


def packet_fits(backend: Backend, question: Question, evidence: Evidence) -> bool:
    """Whether an Interpreter prompt over `evidence` fits, sized for the longer self-check."""
    request = agents.interpreter_request(question, evidence, previous=("X", "x" * 600))
    return prompt_fits(backend, request)
