"""Whether an answer's quotes support it: the check that decides what is shown.

Word containment (every content word of the answer quoted) withheld 23 of 24 answers of
Qwen2.5-Coder-1.5B on fairytale questions, most of them good: a paraphrase or an inference
can never pass it. So the Interpreter's model is asked, on the quotes alone, whether they
state or directly imply the answer (`agents.support_request`), and its score
ln P(YES) - ln P(NO) is held to a threshold chosen on dev data for precision
(benchmarks/answer_support.py). A name in an open answer that neither a quote nor the
question holds withholds it before any call: the quotes cannot be about someone they do not
name. Where the model gives no score, or judges at chance (cwread.model_facts), the words
decide, as before.
"""

from __future__ import annotations

import re

from cwread import agents, grounding
from cwread.backends import Backend
from cwread.document import Evidence, Passage
from cwread.lexical import STOPWORDS
from cwread.records import AgentCall, Question, Quote, SupportCheck

# Calibrated on FairytaleQA train with Qwen2.5-Coder-1.5B (benchmarks/answer_support.py):
# the lowest score at which shown answers stay at most 15% contradicted by the reference.
THRESHOLD = 0.0

_WORD = re.compile(r"[^\W\d_]+")
_TITLES = frozenset(
    {"Mr", "Mrs", "Ms", "Dr", "St", "Sir", "Lady", "Lord", "Miss", "Madam", "Captain", "King", "Queen"}
)


def unquoted_names(answer: str, quotes: tuple[Quote, ...], question: str) -> tuple[str, ...]:
    """Names in `answer` (capitalised words that do not open a sentence, titles aside) that no
    quote or the question holds."""
    said = grounding.content_words(" ".join([question, *(q.text for q in quotes)]))
    missing: list[str] = []
    for start, end in grounding.sentences(answer):
        for m in list(_WORD.finditer(answer, start, end))[1:]:
            word = m.group(0)
            if not word[0].isupper() or word in _TITLES or word.lower() in STOPWORDS or word == "I":
                continue
            if not grounding.content_words(word) <= said and word not in missing:
                missing.append(word)
    return tuple(missing)


def quoted_evidence(quotes: tuple[Quote, ...], packet: Evidence) -> list[Passage]:
    """The quotes as the check is shown them: each under its paragraph's label, in the packet's order."""
    labels = {p[0]: Passage(*p).label for p in packet}
    return [Passage(q.id, q.text, labels.get(q.id, "")) for q in quotes]


def check_support(
    backend: Backend | None,
    question: Question,
    answer: str,
    final: AgentCall,
    packet: Evidence,
    threshold: float = THRESHOLD,
) -> SupportCheck:
    """Whether `final`'s quotes support `answer` (its text as shown: an open answer cut where
    it repeats, or the label chosen). With `backend`, the model decides (see the module);
    without, the words do."""
    quotes = final.quotes
    if not quotes:
        return SupportCheck(False, "model" if backend else "words", "no quote of the book backs it")
    if backend is None:
        if question.kind == "open":
            ok = grounding.covers(answer, quotes)
            why = "every content word is quoted" if ok else "a content word of the answer is in no quote"
        else:
            ok = grounding.supports_label(question, answer, quotes)
            why = "a quote shares a word with it" if ok else "no quote shares a word with it"
        return SupportCheck(ok, "words", why)
    unquoted = unquoted_names(answer, quotes, question.text) if question.kind == "open" else ()
    if unquoted:
        return SupportCheck(
            False, "model", f"it names {', '.join(unquoted)}, whom no quote names", unquoted=unquoted
        )
    parsed, call = agents.call_agent(
        backend,
        lambda retry: agents.support_request(question, answer, quoted_evidence(quotes, packet), retry),
        agents.parse_finder_reply,
    )
    scores = dict(call.label_logprobs)
    if "YES" in scores and "NO" in scores:
        score = round(scores["YES"] - scores["NO"], 4)
        ok = score >= threshold
        why = f"the quotes {'support' if ok else 'do not support'} it (score {score:+.2f}, threshold {threshold:+.2f})"
        return SupportCheck(ok, "model", why, score, threshold, call=call)
    # a reply without a score: its label, if readable, decides
    ok = parsed.ok and parsed.answer == "YES"
    why = f"the model said {parsed.answer or 'nothing readable'} (no score came back)"
    return SupportCheck(ok, "model", why, None, threshold, call=call)
