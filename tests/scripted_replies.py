"""Reply functions for the scripted backend: deterministic stand-ins for the two agents."""

from __future__ import annotations

import re

from cwread.backends import GenerationRequest


def finder_reply(request: GenerationRequest) -> str:
    """YES for segments mentioning 'medal', citing that paragraph; NO otherwise."""
    user = request.messages[-1][1]
    segment = user.split("\n\nQuestion")[0].split("\n\nClaim")[0]
    for m in re.finditer(r"\[(\d+)\] ([^\n]*)", segment):
        if "medal" in m.group(2):
            return f"<reason>[{m.group(1)}] mentions the medal.</reason>\n<answer>YES</answer>"
    return "<reason>No clue here.</reason>\n<answer>NO</answer>"


def smart_interpreter(request: GenerationRequest) -> str:
    """Answers from the evidence it is shown: picks the option/claim/answer the text supports."""
    user = request.messages[-1][1]
    evidence = user.split("Question:")[0].split("Claim to verify")[0]
    ids = re.findall(r"\[(\d+)\]", evidence)
    cite = f"[{ids[0]}] " if ids else ""
    if "Claim to verify" in user:
        claim = user.split("Claim to verify (TRUE or FALSE): ")[1].split("\n")[0]
        ok = "tin" in claim and "biscuit tin" in evidence
        return f"<reason>{cite}checked</reason><answer>{'TRUE' if ok else 'FALSE'}</answer>"
    if "Options:" in user:
        options = dict(re.findall(r"^\(([A-Z])\) (.*)$", user, re.M))
        pick = next((k for k, v in options.items() if "tin" in v and "biscuit tin" in evidence), "A")
        return f"<reason>{cite}the tin</reason><answer>{pick}</answer>"
    return (
        f"<reason>{cite}the cat</reason><answer>{'Admiral' if 'Admiral' in evidence else 'unknown'}</answer>"
    )
