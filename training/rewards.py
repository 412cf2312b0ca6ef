"""Rule-based rewards from the paper's appendix, with trl's reward signature.

`finder_reward(completions, **columns)` and `interpreter_reward(completions, **columns)`
return one float per completion; trl passes the dataset's other columns as keyword lists.
Both parse with cwread's own parser, so training scores exactly what inference reads.
A completion is a string or a conversational list of messages (the last one is the reply).

Finder (per segment; `label` YES/NO, `gold_ids` inside the segment):
  format +1.0 (unparseable: 0 in total). Positive segment: YES +1.5, paragraph-ID F1 up to
  +1.5, compact-ID bonus +0.25 (F1 > 0 and at most max(3, |gold|+1) ids), length up to
  +0.25; a missed positive (NO) gets the format reward only. Negative segment: NO +1.25,
  NO-rationale quality up to +0.75 (at most one id +0.25, enough words +0.25, explicit
  irrelevance wording or a quoted closest sentence +0.25), length up to +0.25; a YES on a
  negative gets the format reward only, so spurious ids earn nothing.
  Adapted to cwread's quote-grounded reasons: the paper pays "no ids" and "irrelevance
  wording", but cwread's Finder always quotes its closest sentence, `[N] "..."` (the grammar
  allows nothing else), so one cited id and a quote earn those parts; spraying ids does not.

Interpreter (`answer`, `kind`, optional `allowed_ids`, `hard`, `evidence`):
  format +1.0; correct +2.5 (mcq) / +1.5 (claim) / +2.0 x token-F1 (open, correct when
  F1 >= 0.5); gated on a correct answer: hard case +0.5, cites an allowed paragraph +0.3,
  length +0.2, specificity +0.3; always: invalid paragraph ids -0.3 (when the allowed set is
  known), hedging -0.4; the total is floored at 0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cwread.agents.finder import parse_finder_reply
from cwread.agents.interpreter import parse_reply
from cwread.agents.shared import extract_citations
from cwread.eval.metrics import token_f1
from cwread.records.question import Question
from cwread.text.words import STOPWORDS

FINDER_FORMAT = 1.0
FINDER_YES = 1.5
FINDER_F1 = 1.5
FINDER_COMPACT = 0.25
FINDER_NO = 1.25
FINDER_NO_QUALITY = 0.75  # three parts of 0.25
FINDER_LENGTH = 0.25

INTERP_FORMAT = 1.0
INTERP_CORRECT = {"mcq": 2.5, "claim": 1.5, "open": 2.0}
INTERP_HARD = 0.5
INTERP_IDS = 0.3
INTERP_INVALID_IDS = -0.3
INTERP_LENGTH = 0.2
INTERP_SPECIFIC = 0.3
INTERP_HEDGE = -0.4
OPEN_CORRECT_F1 = 0.5

# [N] "a quoted sentence" (which may hold quote marks of its own)
_QUOTE_ITEM = re.compile(r'\[\s*\d+\s*\]\s*["“].{3,}["”]', re.S)
_IRRELEVANT = re.compile(
    r"\b(no (concrete |relevant )?(clue|evidence|mention|information)|not (mention|relevant|related|about)|"
    r"does not (mention|say|describe|discuss|relate)|doesn't (mention|say)|irrelevant|unrelated|nothing (about|on)|"
    r"only (scenery|background|setting)|no fact)",
    re.I,
)
_HEDGE = re.compile(
    r"(cannot (be )?determine|can't determine|cannot be determined|insufficient (evidence|information)|"
    r"not enough (evidence|information)|no (way|information) to (tell|know)|unclear from|impossible to (say|tell))",
    re.I,
)


def completion_text(completion) -> str:
    """The reply text of a trl completion (a string, or a list of chat messages)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    return str(completion)


def _column(columns: dict, name: str, i: int, default=None):
    values = columns.get(name)
    if values is None:
        return default
    return values[i]


def _length_score(words: int, full: float, lo: int = 8, hi: int = 40) -> float:
    """Full credit for lo..hi words, half just outside, none for empty or rambling reasons."""
    if lo <= words <= hi:
        return full
    if lo // 2 <= words <= hi * 2:
        return full / 2
    return 0.0


def id_f1(predicted: set[int], gold: set[int]) -> float:
    if not predicted or not gold:
        return 0.0
    hit = len(predicted & gold)
    if hit == 0:
        return 0.0
    p, r = hit / len(predicted), hit / len(gold)
    return 2 * p * r / (p + r)


def finder_score(text: str, label: str, gold_ids: Sequence[int]) -> float:
    """The Finder reward for one completion (see module doc)."""
    parsed = parse_finder_reply(text)
    if not parsed.ok or not parsed.reason:
        return 0.0
    reward = FINDER_FORMAT
    cited = set(extract_citations(parsed.reason))
    words = len(parsed.reason.split())
    if label.upper() == "YES":
        if parsed.answer != "YES":
            return reward  # a missed positive: format only
        gold = set(int(g) for g in gold_ids)
        f1 = id_f1(cited, gold)
        reward += FINDER_YES + FINDER_F1 * f1
        if f1 > 0 and len(cited) <= max(3, len(gold) + 1):
            reward += FINDER_COMPACT
        return reward + _length_score(words, FINDER_LENGTH)
    if parsed.answer != "NO":
        return reward  # a YES on a negative: spurious ids earn nothing
    reward += FINDER_NO
    part = FINDER_NO_QUALITY / 3
    if len(cited) <= 1:
        reward += part
    if words >= 5:
        reward += part
    if _IRRELEVANT.search(parsed.reason) or _QUOTE_ITEM.search(parsed.reason):
        reward += part
    return reward + _length_score(words, FINDER_LENGTH, lo=5, hi=30)


def _specific(reason: str, evidence: str) -> bool:
    """A concrete grounding signal: a quoted phrase, a number, or a name found in the evidence."""
    if not evidence:
        return False
    for quote in re.findall(r"[\"“']([^\"”']{4,})[\"”']", reason):
        if quote.lower() in evidence.lower():
            return True
    if re.search(r"\b\d+\b", re.sub(r"\[\d+\]", "", reason)):
        return True
    names = [w for w in re.findall(r"\b[A-Z][a-z]{2,}\b", reason) if w.lower() not in STOPWORDS]
    return any(re.search(rf"\b{name}\b", evidence) for name in names)


def interpreter_score(
    text: str,
    answer: str,
    kind: str,
    allowed_ids: Sequence[int] | None = None,
    hard: bool = False,
    evidence: str = "",
    labels: Sequence[str] | None = None,
    answers: Sequence[str] | None = None,
) -> float:
    """The Interpreter reward for one completion (see module doc)."""
    # the parser needs only the kind and the labels; the question text is in the prompt
    parsed = parse_reply(text, Question("", kind, dict.fromkeys(labels, "") if labels else {}))
    if not parsed.ok or not parsed.reason:
        return 0.0
    reward = INTERP_FORMAT
    if kind == "open":
        f1 = max(token_f1(parsed.answer, ref) for ref in (answers or [answer]))
        reward += INTERP_CORRECT["open"] * f1
        correct = f1 >= OPEN_CORRECT_F1
    else:
        correct = parsed.answer == str(answer).upper()
        if correct:
            reward += INTERP_CORRECT[kind]
    cited = extract_citations(parsed.reason)
    allowed = set(int(i) for i in allowed_ids) if allowed_ids is not None else None
    if allowed is not None and any(c not in allowed for c in cited):
        reward += INTERP_INVALID_IDS
    if correct:
        if hard:
            reward += INTERP_HARD
        if cited and (allowed is None or any(c in allowed for c in cited)):
            reward += INTERP_IDS
        if 10 <= len(parsed.reason.split()) <= 120:
            reward += INTERP_LENGTH
        if _specific(parsed.reason, evidence):
            reward += INTERP_SPECIFIC
    if _HEDGE.search(parsed.reason):
        reward += INTERP_HEDGE
    return max(0.0, reward)


def finder_reward(completions, label, gold_ids, **columns) -> list[float]:
    """trl reward function for the Finder: columns `label` and `gold_ids`."""
    return [finder_score(completion_text(c), label[i], gold_ids[i] or []) for i, c in enumerate(completions)]


def interpreter_reward(completions, answer, kind, **columns) -> list[float]:
    """trl reward function for the Interpreter: columns `answer`, `kind`, and optionally
    `allowed_ids`, `hard`, `evidence`, `labels` (mcq option letters), `answers` (open refs)."""
    return [
        interpreter_score(
            completion_text(c),
            answer[i],
            kind[i],
            allowed_ids=_column(columns, "allowed_ids", i),
            hard=bool(_column(columns, "hard", i, False)),
            evidence=_column(columns, "evidence", i, "") or "",
            labels=_column(columns, "labels", i),
            answers=_column(columns, "answers", i),
        )
        for i, c in enumerate(completions)
    ]
