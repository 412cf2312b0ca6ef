"""What a reply's log-probabilities say: the alternatives asked for each token, the mean
log-probability of an answer's own tokens (the model's confidence in its words), and each
label's first-token score (a decision's YES against NO)."""

from __future__ import annotations

import math
import re

from cwread.backends import GenerationRequest

TOP_LOGPROBS = 200  # alternatives asked per token: enough to hold each label's first token


_ANSWER_OPENS = re.compile(r'(<answer>|"answer"\s*:\s*")\s*$')


def token_dicts(entries) -> list[dict]:
    """Client objects with .token/.logprob/.top_logprobs (openai's, ollama's) as plain dicts."""
    return [
        {
            "token": e.token,
            "logprob": e.logprob,
            "top_logprobs": [{"token": a.token, "logprob": a.logprob} for a in (e.top_logprobs or [])],
        }
        for e in entries or []
    ]


_ANSWER_STARTS = re.compile(r'<answer>\s*|"answer"\s*:\s*"')


_ANSWER_ENDS = {"<": re.compile(r"</answer>"), '"': re.compile(r'(?<!\\)"')}  # by how it opened


def answer_logprob(tokens: list[dict]) -> float | None:
    """The mean log-probability of the tokens of the reply's answer (after `<answer>` up to
    `</answer>`, or the JSON string after `"answer": "`), from an OpenAI-style logprobs list:
    how sure the model was of its words. None when the reply has no answer or no token of it
    came with a log-probability."""
    text, starts = "", []
    for entry in tokens:
        starts.append(len(text))
        text += entry.get("token") or ""
    opened = _ANSWER_STARTS.search(text)
    if opened is None:
        return None
    closed = _ANSWER_ENDS[opened.group(0)[0]].search(text, opened.end())
    end = closed.start() if closed else len(text)
    inside = [
        float(entry["logprob"])
        for entry, start, nxt in zip(tokens, starts, [*starts[1:], len(text)], strict=True)
        if nxt > opened.end() and start < end and entry.get("logprob") is not None and text[start:nxt].strip()
    ]
    return round(sum(inside) / len(inside), 4) if inside else None


def reply_scores(tokens: list[dict], request: GenerationRequest) -> dict:
    """Generation's score fields for what `request` asked, from its reply's OpenAI-style
    token log-probabilities: its labels' and its answer's."""
    return {
        "label_logprobs": label_logprobs(tokens, request.label_scores) if request.label_scores else (),
        "answer_logprob": answer_logprob(tokens) if request.answer_confidence else None,
    }


def label_logprobs(tokens: list[dict], labels: tuple[str, ...]) -> tuple[tuple[str, float], ...]:
    """Each label's log-probability at the first token of the reply's answer (after `<answer>`,
    or `"answer": "` in JSON), from an OpenAI-style logprobs list: [{"token", "top_logprobs":
    [{"token", "logprob"}]}]. The alternatives are the model's own, before any grammar, so a
    label sums the tokens that could begin it ("Y", "YE", "YES"); a label with none among them
    gets the lowest listed log-probability, an upper bound. () when the reply has no answer."""
    text = ""
    for entry in tokens:
        if _ANSWER_OPENS.search(text):
            options = [(t["token"], float(t["logprob"])) for t in entry.get("top_logprobs") or []]
            options = options or [(entry["token"], float(entry["logprob"]))]
            floor = min(lp for _, lp in options)
            scored = []
            for label in labels:
                starts = [lp for tok, lp in options if tok and label.startswith(tok)]
                if not starts:
                    total = floor
                else:
                    top = max(starts)  # log-sum-exp, exact for a single token
                    total = top + math.log(sum(math.exp(lp - top) for lp in starts))
                scored.append((label, total))
            return tuple(scored)
        text += entry["token"]
    return ()
