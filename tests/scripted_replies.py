"""Reply functions for the scripted backend: deterministic stand-ins for the two agents, which
quote the evidence they are shown as a real model under cwread's grammar would."""

from __future__ import annotations

import re

from cwread.agents.finder import CLUE_REQUEST
from cwread.backends import GenerationRequest


def _paragraphs(user: str) -> list[tuple[str, str]]:
    """(label, text) of each paragraph in the <evidence> block of a prompt ("12", or
    "ch03:12" in a book of several files)."""
    block = user.split("<evidence>")[1].split("</evidence>")[0] if "<evidence>" in user else ""
    return re.findall(r"^\[((?:[\w.\-/]+:)?\d+)\] ([^\n]*)", block, re.M)


def quote_of(user: str, word: str) -> str:
    """`[N] "sentence"` for the first shown sentence containing `word` ("" if none)."""
    for pid, text in _paragraphs(user):
        for sentence in re.split(r"(?<=[.!?])\s+", text):
            if word.lower() in sentence.lower():
                return f'[{pid}] "{sentence}"'
    return ""


def finder_reply(request: GenerationRequest) -> str:
    """YES for segments mentioning 'medal', quoting that sentence; NO otherwise. Asked for the
    decision first, YES or NO alone; then asked for the clue, the quote alone."""
    user = request.messages[1][1]  # the segment and the question
    quote = quote_of(user, "medal")
    if request.messages[-1][1] == CLUE_REQUEST:
        return f"<reason>{quote}</reason>"
    if "exactly one tag" in user:
        return f"<answer>{'YES' if quote else 'NO'}</answer>"
    if quote:
        return f"<reason>{quote}</reason>\n<answer>YES</answer>"
    return "<reason>No clue for the question here.</reason>\n<answer>NO</answer>"


def smart_interpreter(request: GenerationRequest) -> str:
    """Answers from the evidence it is shown: picks the option/claim/answer the text supports,
    quoting the sentence it rests on."""
    user = request.messages[-1][1]
    evidence = " ".join(text for _, text in _paragraphs(user))
    if "Claim to verify" in user:
        claim = user.split("Claim to verify (TRUE or FALSE): ")[1].split("\n")[0]
        ok = "tin" in claim and "biscuit tin" in evidence
        return f"<reason>{quote_of(user, 'medal')}</reason><answer>{'TRUE' if ok else 'FALSE'}</answer>"
    if "Options:" in user:
        options = dict(re.findall(r"^\(([A-Z])\) (.*)$", user, re.M))
        pick = next((k for k, v in options.items() if "tin" in v and "biscuit tin" in evidence), "A")
        return f"<reason>{quote_of(user, 'tin')}</reason><answer>{pick}</answer>"
    known = "Admiral" in evidence
    return f"<reason>{quote_of(user, 'Admiral')}</reason><answer>{'Admiral' if known else 'unknown'}</answer>"
