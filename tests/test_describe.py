"""A "Who is X?" question answered by the packet's own description of X (cwread.retrieval.describe):
the phrase beside the name, not the sentence most like the question; through the real CLI, no
Finder call made for it."""

import json
from pathlib import Path

from cwread.backends.scripted import ScriptedBackend
from cwread.retrieval.describe import Asked, asked, asked_name, described, first_mentions
from tests.conftest import run
from tests.test_answer_judge import SMALL, judging

REPO = Path(__file__).resolve().parents[1]

MANOR = """The Manor

Barrymore looked surprised, and considered for a little time.

"Ha! Where is Barrymore?" cried Sir Henry.

Barrymore, the butler, had served the family for four generations.

"You will observe, Watson, the alternative use of the long s."

"Barrymore, the lamp!" said Holmes. The old man, Barrymore, the butler of the Hall, brought it.

Barrymore was a man of few words.
"""


def test_only_a_name_is_asked_about():
    assert asked_name("Who is Dr. Mortimer?") == "Dr. Mortimer"
    assert asked_name("who was Selden") == "Selden"
    assert asked_name("Who was in the chariot?") is None
    assert asked_name("Who killed Sir Charles?") is None
    assert asked_name("Who is He?") is None
    assert asked_name("What is the Grimpen Mire?") == "Grimpen Mire"
    assert asked_name("Tell me about Selden.") == asked_name("describe Selden") == "Selden"
    assert asked_name("Tell me about the hound") is None
    assert asked("Where does Mr. Frankland live?") == Asked("Mr. Frankland", where=True)
    assert asked("What was Gatsby's real name?") is None


def test_where_someone_lives_is_the_place_beside_the_name():
    evidence = [(1, "Mr. Frankland, the old man with the telescope, laughed."), (2, "It was Mr. Frankland, of Lafter Hall, who wrote.")]
    assert described("Who is Frankland?", evidence)[0] == "Mr. Frankland, the old man with the telescope"
    assert described("Where does Frankland live?", evidence)[0] == "Mr. Frankland, of Lafter Hall"
    assert described("Where does Frankland live?", evidence[:1]) is None


def test_the_description_said_most_often_wins_and_a_call_or_an_address_is_none():
    evidence = [(i + 1, p) for i, p in enumerate(MANOR.split("\n\n")[1:])]
    answer, quote, description = described("Who is Barrymore?", evidence)
    assert answer == "Barrymore, the butler" and quote.id == 3 and answer in quote.text
    assert description.said == "butler" and description.times == 1
    assert described("Who is Watson?", evidence) is None  # "observe, Watson, the ..." addresses him
    address = [(1, '"Barrymore, the lamp!" said Holmes.')]
    assert described("Who is Barrymore?", address) is None  # a call ends in "!", not a comma
    assert described("Who is Holmes?", [(1, "Holmes, the game is afoot.")]) is None  # a verb: a clause
    assert described("Who is Frankland?", [(1, "There is Mr. Frankland, of Lafter Hall, who is also unknown.")])[0] == (
        "Mr. Frankland, of Lafter Hall"
    )
    for said in (
        "Betteredge, an hour since, came.",
        "Mr. Franklin, a little surprised, rose.",
        "Sergeant Cuff, the better I liked him.",
        "Rachel, the first thing tomorrow morning.",
        "He was esteemed by Mr. Darcy, a most intimate, confidential friend.",
    ):
        name = said.split(",")[0].split()[-1]
        assert described(f"Who is {name}?", [(1, said)]) is None, said  # a time, a measure, a clause
    listed = [(1, "All the passages, the advent of Mr. Collins, the visit to Hunsford, the tour, fit in.")]
    assert described("Who is Mr. Collins?", listed) is None  # an item of a list, not his description
    assert described("Who is Madame Defarge?", [(1, "Defarge, the wine-seller, nodded.")]) is None  # her husband
    assert described("Who is Captain Smollett?", [(1, "There were Captain Smollett, the squire, Hunter, and I.")]) is None
    assert described("Who is Captain Smollett?", [(1, "Captain Smollett, the squire, and Dr. Livesey talked.")]) is None
    once = [(1, "Arthur was the first to rise."), (2, "Lady Holmwood, the widow, smiled.")]
    assert described("Who is Arthur Holmwood?", once) is None  # a copula said once; another Holmwood
    twice = [*once, (3, "At dawn Arthur was the first to rise.")]
    assert described("Who is Arthur Holmwood?", twice)[2].said == "first to rise"


def test_a_who_is_question_is_answered_by_its_description_through_the_cli(capsys, tmp_path, cache_dir, scripted):
    book = tmp_path / "manor.txt"
    book.write_text(MANOR, encoding="utf-8")
    scripted.finder = judging({"surprised": 2.0})  # the Finder would choose the sentence most like a who-is
    scripted.interpreter = ScriptedBackend(model="interp", size=SMALL)
    code, out, err = run(capsys, "ask", str(book), "Who is Barrymore?", "--backend", "scripted", "--json")
    assert code == 0, err
    trace = json.loads(out)
    assert trace["answer"] == "Barrymore, the butler" and trace["answer_kind"] == "quoted-words"
    assert trace["description"]["name"] == "Barrymore" and trace["answer_judgement"] is None
    assert scripted.finder.requests == [] and "answer_judge" in trace["skipped"]
    assert trace["answer"] in trace["quotes"][0]["quote"] and trace["quotes"][0]["in_packet"]
    code, out, _ = run(capsys, "ask", str(book), "Who is Barrymore?", "--backend", "scripted")
    assert code == 0 and "How the text describes Barrymore, beside the name" in out


def test_the_readme_who_is_example_on_the_novel(capsys, cache_dir, scripted):
    """The README's who-is example on the whole novel in examples/: the description quoted
    verbatim from a paragraph of the packet."""
    from cwread import api

    book = REPO / "examples" / "the_hound_of_the_baskervilles.txt"
    scripted.finder = judging({})
    scripted.interpreter = ScriptedBackend(model="interp", size=SMALL)
    code, out, err = run(capsys, "ask", str(book), "Who is Stapleton?", "--backend", "scripted", "--json")
    assert code == 0, err
    trace = json.loads(out)
    assert "naturalist" in trace["answer"] and trace["description"]["said"] == "naturalist"
    quote = trace["quotes"][0]
    assert api.open_document(str(book)).paragraph(quote["id"]).text[quote["start"] : quote["end"]] == quote["quote"]
    assert quote["id"] in [p["id"] for p in trace["packet"]]


def test_where_nothing_describes_a_name_its_first_mentions_are_judged_first(capsys, tmp_path, cache_dir, scripted):
    """No description of Jaggers: the paragraphs that first name him (not a heading) lead the
    Finder's candidates, and its pick answers."""
    book = tmp_path / "office.txt"
    book.write_text(
        "Mr. Jaggers's Office\n\n"
        "\"My name is Jaggers, and I am a lawyer in London. I am pretty well known.\"\n\n"
        "The clerk waited while the rain fell on the roofs of the long street outside.\n\n"
        "\"Yes, Mr. Jaggers,\" said the clerk, and Jaggers went out into the rain again at once.\n\n"
        "Jaggers came back late that night and Jaggers sat down and Jaggers read Jaggers's letters.\n",
        encoding="utf-8",
    )
    evidence = [(i + 1, p) for i, p in enumerate(book.read_text(encoding="utf-8").split("\n\n"))]
    assert first_mentions("Who is Jaggers?", evidence) == [2, 4]  # not the heading; two at most
    assert first_mentions("Where does Jaggers live?", evidence) == []
    scripted.finder = judging({"lawyer": 2.0})
    scripted.interpreter = ScriptedBackend(model="interp", size=SMALL)
    code, out, err = run(capsys, "ask", str(book), "Who is Jaggers?", "--backend", "scripted", "--json")
    assert code == 0, err
    trace = json.loads(out)
    assert trace["description"] is None and trace["answer_judgement"]["scores"][0]["id"] == 2
    assert "lawyer in London" in trace["answer"] and trace["citations"] == [2]  # the sentence, not a span
    assert "told by a sentence" in trace["skipped"]["spans"]
