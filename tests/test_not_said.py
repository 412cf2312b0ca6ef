"""Questions the text never answers: where a question asks for a kind of thing (a colour, a
count, a month, a name) and the words that fit it best hold none, the default declines with its
own outcome, "the text does not say" (exit 4), and shows the closest passages. Through the real
CLI, on the scripted backend made as small as the embedded default, and the rule alone."""

from __future__ import annotations

import json

import pytest

from cwread.answer.asked_for import asked_for, holds
from tests.conftest import run
from tests.test_passages import small_model  # noqa: F401  (the fixture)


@pytest.mark.parametrize(
    ("question", "kind", "detail"),
    [
        ("What colour was the Giant's hat?", "colour", None),
        ("How many sacks did the miller carry?", "count", "sacks"),
        ("How old was Martha when she came to the rock?", "number", None),
        ("In what month did the storm come?", "time", "month"),
        ("In which town did her brother work?", "place name", None),
        ("What was the name of the cat?", "name", None),
        ("Why did she hold the sheet against the wind?", None, None),
        ("What did the fishermen give her?", None, None),
    ],
)
def test_what_a_question_asks_for(question, kind, detail):
    asked = asked_for(question)
    assert (asked.kind, asked.detail) == (kind, detail) if kind else asked is None


def test_an_answer_holds_what_was_asked_for_or_does_not():
    book_lower = frozenset({"the", "cat", "tom", "two", "months"})
    colour = asked_for("What colour was the cat?")
    assert holds(colour, "What colour was the cat?", "a grey tom", "Her cat, a grey tom.", book_lower)
    assert not holds(colour, "What colour was the cat?", "a very selfish", "He was a very selfish Giant.", book_lower)
    count = asked_for("How many men went into the hold?")
    assert not holds(count, "How many men went into the hold?", "two holes", "There were two holes.", book_lower)
    assert holds(count, "How many men went into the hold?", "three", "Three brave men went down.", book_lower)
    month = asked_for("In what month did the storm come?")
    assert holds(month, "In what month did the storm come?", "in March", "It came in March.", book_lower)
    assert not holds(month, "In what month did the storm come?", "a summer hotel", "a summer hotel", book_lower)
    name = asked_for("What was the name of the cat?")
    assert holds(name, "What was the name of the cat?", "Admiral", "a grey tom called Admiral", book_lower)
    assert not holds(name, "What was the name of the cat?", "Two months", "Two months passed.", book_lower)
    # the question's own name, possessed ("the Giant's wife"), is not a name the answer gives
    wife = "What is the name of the Giant's wife?"
    assert not holds(asked_for(wife), wife, "a very selfish Giant", "He was a very selfish Giant.", book_lower)
    assert holds(asked_for(wife), wife, "Gemma", "His wife, Gemma, said nothing.", book_lower)


def test_a_question_the_text_never_answers_is_declined_in_its_own_words(capsys, story, cache_dir, small_model):  # noqa: F811
    code, out, err = run(capsys, "ask", str(story), "What colour was the supply boat?", "--backend", "scripted")
    assert code == 4
    assert "Answer: the text does not say" in out and "asks for a colour" in out
    assert "The closest passages (the text does not say)" in out and "[3] " in out  # the boat's paragraph
    assert "where the book answers" not in out + err
    code, out, _ = run(capsys, "ask", str(story), "What colour was the supply boat?", "--backend", "scripted", "--json")
    data = json.loads(out)
    assert code == 4 and data["status"] == "not-said" and data["answer"] is None and data["abstained"]
    assert data["failure"].startswith("the text does not say: the question asks for a colour")
    assert data["quotes"]  # the closest passages, each in the book


def test_a_question_the_text_answers_in_the_kind_asked_for_is_answered(capsys, story, cache_dir, small_model):  # noqa: F811
    code, out, _ = run(capsys, "ask", str(story), "What colour was the cat?", "--backend", "scripted", "--json")
    data = json.loads(out)
    assert code == 0 and data["status"] == "answered" and "grey" in data["answer"]
    code, out, _ = run(capsys, "ask", str(story), "What was the name of her cat?", "--backend", "scripted", "--json")
    data = json.loads(out)
    assert code == 0 and "Admiral" in data["answer"]
