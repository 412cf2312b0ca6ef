"""The Finder, Interpreter and self-check: prompts, output grammars and the one reply parser.

Prompts are written for cwread after the paper's appendix. The Finder's prompt puts the
segment text before the question, so a backend's prompt cache can reuse a segment across
questions on the same book. `training/` imports these builders, so a trained model sees
exactly what inference sends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cwread.backends import GenerationRequest
from cwread.records import Question

FINDER_MAX_TOKENS = 160
INTERPRETER_MAX_TOKENS = 320
OPEN_ANSWER_CHARS = 160

FINDER_SYSTEM = (
    "You are the Finder in a reading assistant for long narratives. You read one segment of "
    "a story; its paragraphs are numbered like [12]. Decide whether the segment holds a "
    "concrete clue for the question: a fact that answers it, supports or rules out an "
    "option, or confirms or contradicts a claim - an action, a line of dialogue, a motive, "
    "a relationship, a cause, a time or place, an object, an identity. Partial evidence "
    "counts. Say NO for scenery, weather, transitions, or a segment that only mentions a "
    "name or a word from the question without saying anything about what is asked. When in "
    "doubt say YES: a missed clue costs more than an extra passage."
)

INTERPRETER_SYSTEM = (
    "You are the Interpreter in a reading assistant for long narratives. Answer using ONLY "
    "the evidence paragraphs given; they are numbered like [12] and are in story order. "
    "First pin down exactly what is asked, including words like not, except, never or "
    "false. Match meaning, not wording. Compare every option against the evidence: a "
    "missing mention does not rule an option out, only a contradiction does; prefer the "
    "option with the strongest direct support. For a claim, check each of its parts. Cite "
    "the paragraph number of every decisive fact, like [12]. Keep the reason under 120 words."
)

SELF_CHECK_SYSTEM = (
    "You are the Interpreter checking your own answer against the same evidence, which may "
    "be wrong. Re-read the question and the evidence. If the previous reason supports a "
    "different answer than the one given, or another answer is better supported, change "
    "it. Mind the exact intent: why, not, except, false, infer. For a claim, do not demand "
    "more than the claim states. Cite decisive paragraphs like [12]; keep the reason under "
    "100 words."
)

_ANSWER_HINT = {
    "mcq": "the letter of the best-supported option",
    "claim": "TRUE or FALSE",
    "open": "a short answer in a few words or one sentence",
}


def question_block(question: Question) -> str:
    if question.kind == "claim":
        return f"Claim to verify (TRUE or FALSE): {question.text}"
    lines = [f"Question: {question.text}"]
    if question.kind == "mcq" and question.options:
        lines.append("Options:")
        lines.extend(f"({label}) {text}" for label, text in question.options.items())
    return "\n".join(lines)


def evidence_block(paragraphs: list[tuple[int, str]]) -> str:
    return "\n\n".join(f"[{pid}] {text}" for pid, text in paragraphs)


def _reason_rules(ids: list[int] | None, required: bool, max_clauses: int) -> list[str]:
    """A reason of at most `max_clauses` clauses of up to 160 characters each. With `ids`,
    brackets can only hold one of those paragraph ids, so every citation is one the agent
    was shown; with `required`, the reason opens with one. Capping clauses stops the loops
    tiny models fall into."""
    # Clauses hold no brackets, so each boundary is unambiguous: llama.cpp's grammar engine
    # slows down sharply on ambiguous repetitions.
    if not ids:
        return [f"reason ::= [^<\\n]{{1,{160 * max_clauses}}}"]
    clause = "clause ::= [^<\\n\\[\\]]{1,160}"
    cite = f"cite ::= {_literal_alternatives([f'[{pid}]' for pid in sorted(set(ids))])}"
    head = "cite clause" if required else "cite? clause"
    return [f"reason ::= {head} (cite clause){{0,{max_clauses - 1}}}", clause, cite]


def _literal_alternatives(values: list[str]) -> str:
    return " | ".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values)


def answer_grammar(
    kind: str, labels: list[str] | None = None, finder: bool = False, ids: list[int] | None = None
) -> str:
    """GBNF for `<reason>...</reason>\\n<answer>...</answer>`.

    Answers may be written the way small models prefer ("Yes", "(B)", "true"); the parser
    normalises them. Forcing one casing pushed SmolLM2 onto tokens it rated very unlikely.
    The Interpreter's reason must open with a citation of an evidence paragraph.
    """
    if finder:
        answer = f"answer ::= {_literal_alternatives(['YES', 'NO', 'Yes', 'No', 'yes', 'no'])}"
        reason = _reason_rules(ids, required=False, max_clauses=2)
    else:
        reason = _reason_rules(ids, required=True, max_clauses=3)
        if kind == "mcq":
            values = []
            for label in labels or ["A", "B", "C", "D"]:
                values += [label, f"({label})", label.lower()]
            answer = f"answer ::= {_literal_alternatives(values)}"
        elif kind == "claim":
            answer = (
                f"answer ::= {_literal_alternatives(['TRUE', 'FALSE', 'True', 'False', 'true', 'false'])}"
            )
        else:
            # no brackets: citations belong in the reason, where only shown ids can be written
            answer = f"answer ::= [^<\\n\\[\\]]{{1,{OPEN_ANSWER_CHARS}}}"
    root = 'root ::= "<reason>" reason "</reason>\\n<answer>" answer "</answer>"'
    return "\n".join([root, *reason, answer])


def answer_schema(kind: str, labels: list[str] | None = None, finder: bool = False) -> dict:
    """The same contract as a JSON schema, for backends with structured output (Ollama)."""
    if finder:
        answer: dict = {"type": "string", "enum": ["YES", "NO"]}
    elif kind == "mcq":
        answer = {"type": "string", "enum": list(labels or ["A", "B", "C", "D"])}
    elif kind == "claim":
        answer = {"type": "string", "enum": ["TRUE", "FALSE"]}
    else:
        answer = {"type": "string"}
    return {
        "type": "object",
        "properties": {"reason": {"type": "string"}, "answer": answer},
        "required": ["reason", "answer"],
    }


def _reply_format(answer_hint: str, example_reason: str) -> str:
    # A concrete example from "another story": tiny models copied placeholder text such as
    # "one sentence naming the clue" verbatim. The answer slot stays a placeholder so the
    # example cannot bias which answer is chosen.
    return (
        "Reply with exactly two tags and nothing else, like this example from another story:\n"
        f"<reason>{example_reason}</reason>\n"
        f"<answer>X</answer>\nwhere X is {answer_hint}."
    )


FIRM_RETRY = (
    "Your previous reply could not be read. Reply again with exactly the two tags "
    "<reason>...</reason> and <answer>...</answer>, nothing before or after them."
)


def finder_request(
    question: Question,
    start: int,
    end: int,
    segment_text: str,
    retry: bool = False,
    question_first: bool = False,
) -> GenerationRequest:
    """The Finder's call for one segment: the segment first, then the question.

    Text first lets llama.cpp's prompt cache reuse a segment when another question reads it
    (benchmarks/ask_speed.py measures both orders; `question_first` is the other one).
    """
    parts = [f"Segment (paragraphs {start}-{end}):\n{segment_text}", question_block(question)]
    if question_first:
        parts.reverse()
    user = "\n\n".join(
        [*parts, _reply_format("YES or NO", "[41] says the gardener buried the letter under the oak.")]
    )
    if retry:
        user += "\n\n" + FIRM_RETRY
    return GenerationRequest(
        messages=(("system", FINDER_SYSTEM), ("user", user)),
        max_tokens=FINDER_MAX_TOKENS,
        grammar=answer_grammar(question.kind, finder=True, ids=list(range(start, end + 1))),
        schema=answer_schema(question.kind, finder=True),
        seed=1 if retry else 0,
    )


def interpreter_request(
    question: Question,
    evidence: list[tuple[int, str]],
    previous: tuple[str, str] | None = None,
    retry: bool = False,
) -> GenerationRequest:
    """The Interpreter's call; with `previous` (answer, reason) it is the self-check."""
    parts = [
        "Evidence (story order):\n" + (evidence_block(evidence) if evidence else "(no evidence was found)"),
        question_block(question),
    ]
    if previous is not None:
        parts.append(f"Previous answer: {previous[0]}\nPrevious reason: {previous[1]}")
    # No worked example here: the Interpreter copied one's content into its reason.
    parts.append(
        "Reply with exactly two tags and nothing else: <reason>, your rationale citing the "
        f"evidence paragraph numbers in square brackets, </reason>; then <answer>, "
        f"{_ANSWER_HINT[question.kind]}, </answer>."
    )
    user = "\n\n".join(parts)
    if retry:
        user += "\n\n" + FIRM_RETRY
    return GenerationRequest(
        messages=(("system", SELF_CHECK_SYSTEM if previous else INTERPRETER_SYSTEM), ("user", user)),
        max_tokens=INTERPRETER_MAX_TOKENS,
        grammar=answer_grammar(question.kind, question.labels, ids=[pid for pid, _ in evidence]),
        schema=answer_schema(question.kind, question.labels),
        seed=1 if retry else 0,
    )


@dataclass(frozen=True)
class ParsedReply:
    """A model reply read into its parts. `answer` is normalised; None if unusable."""

    reason: str
    answer: str | None
    raw_answer: str | None
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.answer is not None


_TAG = {
    name: re.compile(rf"<\s*{name}\s*>(.*?)(?:<\s*/\s*{name}\s*>|(?=<\s*\w+\s*>)|$)", re.S | re.I)
    for name in ("reason", "answer")
}


def parse_finder_reply(text: str) -> ParsedReply:
    """The Finder's reply: a reason and YES or NO (see `parse_reply`)."""
    return _parse(text, "finder", None)


def parse_reply(text: str, question: Question) -> ParsedReply:
    """Read `<reason>` and `<answer>`; tolerant of case, spacing, missing closing tags and
    text around the tags, strict about the answer being one the question allows."""
    return _parse(text, question.kind, question.labels)


def _parse(text: str, kind: str, labels: list[str] | None) -> ParsedReply:
    reason_m = _TAG["reason"].search(text or "")
    answer_m = _TAG["answer"].search(text or "")
    reason = " ".join(reason_m.group(1).split()) if reason_m else ""
    if not answer_m:
        return ParsedReply(reason, None, None, "no <answer> tag")
    raw = " ".join(answer_m.group(1).split())
    if kind == "finder":
        answer = normalise_yes_no(raw)
    elif kind == "mcq":
        answer = normalise_letter(raw, labels or ["A", "B", "C", "D"])
    elif kind == "claim":
        answer = normalise_true_false(raw)
    else:
        answer = raw.strip(" .") or None
    if answer is None:
        return ParsedReply(reason, None, raw, f"answer {raw!r} is not allowed")
    if not reason_m:
        return ParsedReply(reason, answer, raw, "no <reason> tag")
    return ParsedReply(reason, answer, raw)


def normalise_yes_no(raw: str) -> str | None:
    m = re.match(r"\W*(yes|no)\b", raw, re.I)
    return m.group(1).upper() if m else None


def normalise_true_false(raw: str) -> str | None:
    m = re.match(r"\W*(true|false|yes|no)\b", raw, re.I)
    if not m:
        return None
    return {"true": "TRUE", "yes": "TRUE", "false": "FALSE", "no": "FALSE"}[m.group(1).lower()]


def normalise_letter(raw: str, labels: list[str]) -> str | None:
    m = re.match(r"\W*(?:option\s+)?\(?([A-Za-z])\)?(?:[\s.):,-]|$)", raw, re.I)
    if m and m.group(1).upper() in labels:
        return m.group(1).upper()
    return None


_CITATION = re.compile(r"\[\s*(\d+(?:\s*(?:-|–|,)\s*\d+)*)\s*\]")


def extract_citations(text: str) -> list[int]:
    """Paragraph ids cited as [12], [12, 14] or [12-14], in order of first mention."""
    ids: list[int] = []
    for m in _CITATION.finditer(text or ""):
        for part in re.split(r"\s*,\s*", m.group(1)):
            bounds = re.split(r"\s*[-–]\s*", part)
            lo, hi = int(bounds[0]), int(bounds[-1])
            if hi < lo or hi - lo > 50:
                hi = lo
            for pid in range(lo, hi + 1):
                if pid not in ids:
                    ids.append(pid)
    return ids


def split_citations(text: str, shown: set[int]) -> tuple[list[int], list[int]]:
    """(citations of paragraphs the agent was shown, citations of anything else)."""
    cited = extract_citations(text)
    return [p for p in cited if p in shown], [p for p in cited if p not in shown]


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
    return question.kind == "claim" or bool(_RISKY.search(question.text))
