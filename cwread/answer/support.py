"""Whether an answer's quotes support it: the check that decides what is shown.

By default the words decide: every content word of an open answer must be in its quotes
(`grounding.covers`), and the quotes of an option or a claim must carry a tenth of its words'
weight in the book (`supports_label`, calibrated on the dev sets), so a quote that
merely shares a common word with a claim does not bear on it. That holds whoever decides: a
label whose quotes do not bear on it is not asked of the model.

Word containment hides paraphrases and inferences, and two model signals can stand beside it,
each held to a threshold the user calibrates for the model (benchmarks/answer_support.py reads
the table for one), neither on by default because, measured on the 1.5B, each told its right
answers from its wrong ones no better than a coin (benchmarks/README.md, "The answer's support
check"):
- the model's confidence in its own words (`check_confidence`, `answer.confidence_threshold`): the mean
  log-probability of its answer's tokens, which the answer's reply carries, so it costs no
  call;
- the model asked, on the quotes alone, whether they state or directly imply the answer
  (cwread.agents.support_check, `answer.support_threshold`), its score ln P(YES) - ln P(NO): one
  more call.
Either way a name in an open answer that neither a quote nor the question holds withholds it:
the quotes cannot be about someone they do not name.
"""

from __future__ import annotations

from collections.abc import Iterable

from cwread.agents.support_check import SupportAgent
from cwread.book import Evidence, grounding
from cwread.records.question import Question
from cwread.records.stages import AgentCall, Quote, SupportCheck, yes_odds
from cwread.text import sentences as text_sentences
from cwread.text.words import LETTERS, STOPWORDS, TITLES

# A label's quotes bear on it when they carry this share of its words' weight (idf): chosen on
# the dev sets against gold and random paragraphs (benchmarks/README.md, "Figures the code rests on").
LABEL_SUPPORT_SHARE = 0.1

def label_about(question: Question, label: str) -> str:
    """What a label says: the chosen option's text (mcq), or the claim (its kind's form says)."""
    return question.form.about(question, label)


def label_share(question: Question, label: str, quotes: Iterable[Quote], weights: grounding.Weights | None = None) -> float:
    """The share of the chosen option's (or the claim's) word weight that `quotes` carry."""
    quoted = " ".join(q.text for q in quotes)
    return round(grounding.weight_shares(label_about(question, label), [quoted], weights)[0], 4) if quoted else 0.0


def bears_on_label(share: float) -> bool:
    """Whether quotes carrying `share` of a label's word weight bear on it."""
    return share >= LABEL_SUPPORT_SHARE


def supports_label(question: Question, label: str, quotes: Iterable[Quote], weights: grounding.Weights | None = None) -> bool:
    """Whether `quotes` bear on a chosen option or claim: they carry at least
    LABEL_SUPPORT_SHARE of its words' weight."""
    return bears_on_label(label_share(question, label, quotes, weights))


def unquoted_names(
    answer: str, quotes: tuple[Quote, ...], question: str, lowercase: frozenset[str] | None = None
) -> tuple[str, ...]:
    """Names in `answer` (capitalised words that do not open a sentence, titles aside) that no
    quote or the question holds. Given `lowercase`, the words the book writes in lower case, a
    sentence's first word is a name too where the book never writes it so: an answer that is a
    name ("Japp.") opens with it."""
    said = grounding.content_words(" ".join([question, *(q.text for q in quotes)]))
    missing: list[str] = []
    for start, end in text_sentences.sentences(answer):
        for i, m in enumerate(LETTERS.finditer(answer, start, end)):
            word = m.group(0)
            if i == 0 and (lowercase is None or word.lower() in lowercase):
                continue
            if not word[0].isupper() or word.lower() in TITLES or word.lower() in STOPWORDS or word == "I":
                continue
            if not grounding.content_words(word) <= said and word not in missing:
                missing.append(word)
    return tuple(missing)


def quoted_share(answer: str, quotes: tuple[Quote, ...], question: str) -> float:
    """The share of `answer`'s content words that its quotes or the question hold (1 for an
    answer of none)."""
    words = grounding.content_words(answer)
    said = grounding.content_words(" ".join([question, *(q.text for q in quotes)]))
    return round(len(words & said) / len(words), 4) if words else 1.0


# why an open answer's words decide as they do, whichever check reads them
NO_QUOTE = "no quote of the book backs it"
ALL_QUOTED = "every content word is quoted"
WORD_UNQUOTED = "a content word of the answer is in no quote"


def names_why(unquoted: tuple[str, ...]) -> str:
    """Why an answer naming someone no quote names is withheld."""
    return f"it names {', '.join(unquoted)}, whom no quote names"


def check_confidence(question: Question, answer: str, final: AgentCall, threshold: float) -> SupportCheck:
    """Whether `final`'s open `answer` is shown: every content word of it quoted, or else the
    model sure of its words (the mean log-probability of its answer's tokens at least
    `threshold`) and every name it gives held by a quote or the question."""
    quotes = final.reply.quotes
    share = quoted_share(answer, quotes, question.text)
    confidence = final.reply.call.answer_logprob
    method = "confidence"
    if not quotes:
        return SupportCheck(False, method, NO_QUOTE, confidence, threshold, quoted_share=share)
    if grounding.covers(answer, quotes):
        return SupportCheck(True, method, ALL_QUOTED, confidence, threshold, quoted_share=share)
    unquoted = unquoted_names(answer, quotes, question.text)
    if unquoted:
        return SupportCheck(False, method, names_why(unquoted), confidence, threshold, unquoted=unquoted, quoted_share=share)
    if confidence is None:
        why = f"{WORD_UNQUOTED}, and the model gave no log-probabilities"
        return SupportCheck(False, method, why, None, threshold, quoted_share=share)
    ok = confidence >= threshold
    why = (
        f"not every word is quoted, but the model was sure of its words (mean log-probability "
        f"{confidence:+.2f}, threshold {threshold:+.2f})"
        if ok
        else f"{WORD_UNQUOTED}, and the model was unsure of its words "
        f"(mean log-probability {confidence:+.2f}, under the threshold {threshold:+.2f})"
    )
    return SupportCheck(ok, method, why, confidence, threshold, quoted_share=share)


OUTSIDE_PACKET = "a quote names a paragraph outside the evidence it was given"
FORGED = "a quote is not in the paragraph it names"


def check_quotes(
    question: Question,
    answer: str,
    final: AgentCall,
    packet_ids: Iterable[int],
    lowercase: frozenset[str] | None = None,
) -> SupportCheck:
    """A reader's answer (SupportMethod.QUOTES): the model's open `answer` is shown in its own
    words where every quote it gives is verbatim (none forged), each from a paragraph of the
    packet (`packet_ids`), and they name whom it names (given `lowercase`, the words the book
    writes in lower case, a first word it never writes so counts as a name); withheld for no
    quote, a quote not verbatim or outside the packet, or a name no quote holds (the one
    contradiction the words tell). Its `quoted_share` says how much of it the quotes hold."""
    quotes, method = final.reply.quotes, "quotes"
    share = quoted_share(answer, quotes, question.text)
    if not quotes:
        return SupportCheck(False, method, NO_QUOTE, quoted_share=share)
    if final.reply.forged:
        return SupportCheck(False, method, FORGED, quoted_share=share)
    if not {q.id for q in quotes} <= set(packet_ids):
        return SupportCheck(False, method, OUTSIDE_PACKET, quoted_share=share)
    unquoted = unquoted_names(answer, quotes, question.text, lowercase)
    if unquoted:
        return SupportCheck(False, method, names_why(unquoted), unquoted=unquoted, quoted_share=share)
    why = (
        ALL_QUOTED
        if grounding.covers(answer, quotes)
        else f"in the model's words: its quotes are verbatim and hold {share:.0%} of them"
    )
    return SupportCheck(True, method, why, quoted_share=share)


def check_support(
    ask: SupportAgent | None,
    question: Question,
    answer: str,
    final: AgentCall,
    packet: Evidence,
    threshold: float = 0.0,
    weights: grounding.Weights | None = None,
) -> SupportCheck:
    """Whether `final`'s quotes support `answer` (its text as shown: an open answer cut where
    it repeats, or the label chosen). With `ask` (the model's support check), the model decides
    (see the module); without, the words do, a label's weighed by `weights` (the book's idf)."""
    quotes = final.reply.quotes
    share = quoted_share(answer, quotes, question.text) if question.is_open else None
    weight = label_share(question, answer, quotes, weights) if not question.is_open else None
    method = "model" if ask else "words"
    if not quotes:
        return SupportCheck(False, method, NO_QUOTE, quoted_share=share, weight_share=weight)
    if weight is not None and not bears_on_label(weight):
        why = (
            f"its quotes carry {weight:.0%} of the weight of its words in the book, under the "
            f"{LABEL_SUPPORT_SHARE:.0%} that bears on it"
        )
        return SupportCheck(False, "words", why, weight_share=weight)
    if ask is None:
        if question.is_open:
            ok = grounding.covers(answer, quotes)
            why = ALL_QUOTED if ok else WORD_UNQUOTED
        else:
            ok = True
            why = f"its quotes carry {weight:.0%} of the weight of its words in the book"
        return SupportCheck(ok, "words", why, quoted_share=share, weight_share=weight)
    unquoted = unquoted_names(answer, quotes, question.text) if question.is_open else ()
    if unquoted:
        return SupportCheck(False, "model", names_why(unquoted), unquoted=unquoted, quoted_share=share)
    parsed, call = ask(question, answer, quotes, packet)
    odds = yes_odds(call.label_logprobs)
    if odds is not None:
        score = round(odds, 4)
        ok = score >= threshold
        verb = "support" if ok else "do not support"
        why = f"the quotes {verb} it (score {score:+.2f}, threshold {threshold:+.2f})"
        return SupportCheck(ok, "model", why, score, threshold, call=call, quoted_share=share, weight_share=weight)
    # a reply without a score: its label, if readable, decides
    ok = parsed.ok and parsed.answer == "YES"
    why = f"the model said {parsed.answer or 'nothing readable'} (no score came back)"
    return SupportCheck(ok, "model", why, None, threshold, call=call, quoted_share=share, weight_share=weight)
