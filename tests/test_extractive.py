"""Extractive answers: irregular forms meet their base word, rare question words outweigh
common ones, and the pipeline's extracted sentence may come from anything the Finder kept."""

from __future__ import annotations

import numpy as np

from cwread.answer import extractive
from cwread.answer.decide import Grounds, decide
from cwread.book import document_from_bytes, grounding
from cwread.records.question import Question
from cwread.records.stages import AgentCall, GroundedReply, ModelCall, Packet, PacketItem, Quote

GIANT_BOOK = "\n\n".join(
    [
        "The Giant had a garden. The Giant loved the garden.",
        "The Giant walked in the garden every day.",
        "The Giant ate his dinner in the garden.",
        "So he built a wall of stone.",
        "The children cried.",
    ]
)


def test_irregular_forms_and_plurals_meet_their_base_word():
    assert grounding.content_words("he built it") == grounding.content_words("to build it")
    assert grounding.content_words("the children") == grounding.content_words("a child")
    assert grounding.content_words("she lived") == grounding.content_words("they live")
    # a form whose other sense is common in stories stays itself
    assert grounding.content_words("a rose") != grounding.content_words("to rise")


def test_rare_question_words_outweigh_common_ones():
    document = document_from_bytes(GIANT_BOOK.encode(), "giant.txt")
    question = "Why did the Giant build a wall in his garden?"
    evidence = [(p.id, p.text) for p in document.paragraphs]
    # shared words alone: the Giant and his garden (two) beat built and wall (two, later)
    plain = grounding.best_sentence(question, evidence, 2)
    assert plain.id == 1
    rank = extractive.sentence_ranker(document, None)
    ranked = grounding.best_sentence(question, evidence, 2, rank)
    assert (ranked.id, ranked.text) == (4, "So he built a wall of stone.")
    idf = extractive.book_idf(document)
    assert idf["wall"] > idf["giant"]


def test_similarity_counts_at_half_weight():
    document = document_from_bytes(GIANT_BOOK.encode(), "giant.txt")

    class TwoWords:  # "stone" and "cried" as the only dimensions
        dims = 2

        def encode(self, texts, progress=None):
            rows = [[t.count("stone") + 1e-3, t.count("cried") + 1e-3] for t in texts]
            rows = np.array(rows, dtype=np.float32)
            return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    rank = extractive.sentence_ranker(document, TwoWords())
    scores = rank("What did the children do about the stone?", ["The children cried.", "A wall of stone."])
    plain = extractive.sentence_ranker(document, None)(
        "What did the children do about the stone?", ["The children cried.", "A wall of stone."]
    )
    assert np.allclose(np.array(scores) - np.array(plain), [0.5 * 0.0014, 0.5 * 1.0], atol=0.01)


def _final(quotes):
    reply = GroundedReply(call=ModelCall("", True, 0, 0, 0.0, False), quotes=tuple(quotes))
    return AgentCall(answer="a guess", problem=None, reply=reply)


def test_the_extracted_sentence_comes_from_the_packet_alone():
    """What is cited is what was read: a sentence outside the packet is never the answer."""
    question = Question("Why did the Giant build a wall?", "open")
    packet = Packet(items=(PacketItem(1, "The Giant had a garden.", ""),))
    outcome = decide(question, _final([]), Grounds(packet), "extractive")
    assert outcome.text is None and outcome.withheld
    packet = Packet(items=(PacketItem(1, "The Giant had a garden.", ""), PacketItem(4, "So he built a wall of stone.", "")))
    outcome = decide(question, _final([]), Grounds(packet), "extractive")
    assert outcome.text == "So he built a wall of stone." and {q.id for q in outcome.quotes} <= set(packet.ids)


def test_a_question_is_never_the_answer():
    question = Question("Who is Selden?", "open")
    paragraph = "“But about this stranger,” said I. “What did Selden say?” Selden is the Notting Hill murderer."
    outcome = decide(question, _final([]), Grounds(Packet(items=(PacketItem(9, paragraph, ""),))), "extractive")
    assert outcome.quotes[0].text == "Selden is the Notting Hill murderer." and "?" not in outcome.text


def test_a_question_spoken_and_its_speech_tag_is_never_the_answer():
    """A sentence that is a question in quotes followed only by who asked it is a question."""
    from cwread.book.grounding import could_answer

    assert not could_answer("Who is Rosanna?", "“Where is Rosanna Spearman?” asked Sergeant Cuff.")
    assert not could_answer("Who is Ben Gunn?", "“Is this Ben Gunn a man?” he asked.")
    assert could_answer("Who told him?", '"What?" he said, and then Barrymore told him the whole truth about the convict.')
    # who asked it and how is no answer either, unless a new clause follows
    assert not could_answer("Whom does Poirot unmask?", "“What?” cried Poirot, in apparently lively astonishment.")
    assert not could_answer("Where is Blake?", "“Where is he now?” she asked, giving free expression to her interest in Mr. Blake.")
    assert could_answer("Who was it?", "“Was it you?” asked the Sergeant; and Rosanna owned that she had hidden it.")


def test_a_question_put_without_its_mark_is_never_the_answer():
    """Some authors end a question with a full stop; an auxiliary and then who it asks about
    still make it one. Commands, first names, conditions and asides are not questions."""
    from cwread.book.grounding import could_answer

    asked = "Why did Rosanna Spearman hide the nightgown?"
    for question in (
        "Did Rosanna Spearman show you the nightgown.",
        "Is the stain on the nightgown.",
        "“Have you seen the nightgown.”",
        "Does he know where the nightgown is.",
    ):
        assert not could_answer(asked, question), question
    for statement in (
        "She hid the nightgown because it was stained with paint.",
        "Have a look at the nightgown on the sands.",
        "Do not touch the nightgown again.",
        "May Welland kept the nightgown.",
        "Will Ladislaw burnt the nightgown.",
        "Had I known, I would have burnt the nightgown.",
        "Do you know, my friend, she burnt the nightgown.",
        "Was there ever such a stained nightgown!",
        "'Is there a nightgown?' asked Betteredge, and she answered: 'I burnt the nightgown in the sands.",
        "Do it at once, and bring the nightgown to the sands.",
        "Would that I had never seen the stained nightgown.",
        "“Why?” asked Cuff of Mr. Blake, and Rosanna hid the nightgown.",
    ):
        assert could_answer(asked, statement), statement
    paragraph = "Did Rosanna Spearman show you the nightgown. Rosanna hid the nightgown in the sands."
    outcome = decide(Question(asked, "open"), _final([]), Grounds(Packet(items=(PacketItem(7, paragraph, ""),))), "extractive")
    assert outcome.text == "Rosanna hid the nightgown in the sands."


def test_a_sentence_that_only_restates_the_question_is_never_the_answer():
    question = Question("Who killed Sir Charles Baskerville?", "open")
    restating = "Sir Charles Baskerville was killed."
    outcome = decide(question, _final([]), Grounds(Packet(items=(PacketItem(3, restating, ""),))), "extractive")
    assert outcome.text is None and outcome.withheld
    packet = Packet(items=(PacketItem(3, restating, ""), PacketItem(5, "Stapleton's hound killed Sir Charles Baskerville.", "")))
    outcome = decide(question, _final([]), Grounds(packet), "extractive")
    assert outcome.quotes[0].id == 5


def test_the_small_models_quote_does_not_win_a_tie():
    question = Question("Why did the Giant build a wall?", "open")
    packet = Packet(
        items=(PacketItem(1, "So he built a wall.", ""), PacketItem(5, "The Giant had a wall.", ""))
    )
    quote = Quote(5, "The Giant had a wall.", 0, 21)
    outcome = decide(question, _final([quote]), Grounds(packet), "extractive")
    # two question words each (build, wall / giant, wall): the earlier sentence of the evidence
    assert (outcome.quotes[0].id, outcome.text) == (1, "So he built a wall.")


def test_a_why_question_is_answered_with_the_reason_its_sentence_gives():
    sentence = "He built a wall, for he wished to keep the garden to himself."
    quote = Quote(1, sentence, 0, len(sentence))
    assert extractive.extract_answer("Why did he build a wall?", quote, sentence) == (
        "for he wished to keep the garden to himself.",
        quote,
    )
    assert extractive.extract_answer("What did he build?", quote, sentence) == (sentence, quote)
    short = "He built it for him."  # too short to be a reason: the whole sentence
    assert extractive.extract_answer("Why a wall?", Quote(1, short, 0, 20), short)[0] == short
    question = Question("Why did the Giant build a wall?", "open")
    packet = Packet(items=(PacketItem(4, "So he built a wall, because he hated children.", ""),))
    outcome = decide(question, _final([]), Grounds(packet), "extractive")
    assert outcome.text == "because he hated children." and outcome.quotes[0].text == packet.items[0].text
    assert outcome.supported


def test_for_as_a_preposition_is_no_reason():
    sentence = "I bought them for them--and had one stolen before ever I had them on my feet."
    quote = Quote(1, sentence, 0, len(sentence))
    assert extractive.extract_answer("Why was one of the boots stolen?", quote, sentence)[0] == sentence
    late = "She ran home, for it was late and the wolves were out."
    assert extractive.extract_answer("Why did she run home?", Quote(1, late, 0, len(late)), late)[0] == (
        "for it was late and the wolves were out."
    )


def test_a_consequence_comes_with_the_sentence_before_it_where_the_cause_stands():
    paragraph = "The Giant came home. He wanted the garden for himself alone. So he built a wall."
    question = Question("Why did the Giant build a wall?", "open")
    outcome = decide(question, _final([]), Grounds(Packet(items=(PacketItem(7, paragraph, ""),))), "extractive")
    assert outcome.text == "He wanted the garden for himself alone. So he built a wall."
    (quote,) = outcome.quotes
    assert paragraph[quote.start : quote.end] == outcome.text and quote.id == 7
    # not a why-question: a sentence that only restates the question says nothing of when
    what = Question("When did the Giant build a wall?", "open")
    assert decide(what, _final([]), Grounds(Packet(items=(PacketItem(7, paragraph, ""),))), "extractive").text is None
