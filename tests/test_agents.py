import pytest

from cwread.agents import shared
from cwread.agents.finder import finder_request, parse_finder_reply
from cwread.agents.interpreter import SELF_CHECK_SYSTEM, interpreter_request, needs_self_check, parse_reply
from cwread.agents.shared import answer_grammar, extract_citations, split_citations
from cwread.records.question import Question


@pytest.mark.parametrize(
    "text,answer",
    [
        ("<reason>[3] the key is under the mat</reason>\n<answer>YES</answer>", "YES"),
        ("<reason>nothing here</reason><answer>No</answer>", "NO"),
        ("  <REASON> spaced </REASON>\n< answer >yes.</ answer >", "YES"),
        ("Sure! <reason>x</reason>\n<answer>NO</answer> Hope that helps.", "NO"),
        ("<reason>truncated reason <answer>YES", "YES"),  # no closing tags at all
    ],
)
def test_finder_replies_parse(text, answer):
    parsed = parse_finder_reply(text)
    assert parsed.ok and parsed.answer == answer


@pytest.mark.parametrize(
    "text,problem",
    [
        ("YES", "no <answer> tag"),
        ("<reason>x</reason>", "no <answer> tag"),
        ("<reason>x</reason><answer>MAYBE</answer>", "not allowed"),
        ("", "no <answer> tag"),
    ],
)
def test_unusable_finder_replies_are_reported(text, problem):
    parsed = parse_finder_reply(text)
    assert not parsed.ok and problem in parsed.problem


def test_answer_without_reason_still_parses_but_is_flagged():
    parsed = parse_finder_reply("<answer>YES</answer>")
    assert parsed.ok and parsed.problem == "no <reason> tag"


@pytest.mark.parametrize(
    "raw,letter",
    [
        ("B", "B"),
        ("(c)", "C"),
        ("D) the lamp", "D"),
        ("Option A", "A"),
        ("a.", "A"),
        ("E", None),
        ("maybe", None),
    ],
)
def test_mcq_letters_are_normalised(raw, letter):
    parsed = parse_reply(f"<reason>r</reason><answer>{raw}</answer>", Question("q", "mcq"))
    assert parsed.answer == letter


@pytest.mark.parametrize(
    "raw,label",
    [
        ("TRUE", "TRUE"),
        ("true", "TRUE"),
        ("False.", "FALSE"),
        ("yes", "TRUE"),
        ("No", "FALSE"),
        ("unclear", None),
    ],
)
def test_claim_answers_are_normalised(raw, label):
    assert parse_reply(f"<reason>r</reason><answer>{raw}</answer>", Question("q", "claim")).answer == label


def test_open_answers_keep_their_text():
    parsed = parse_reply(
        "<reason>[4] she says so</reason><answer>In a biscuit tin.</answer>", Question("q", "open")
    )
    assert parsed.answer == "In a biscuit tin"
    assert not parse_reply("<reason>r</reason><answer> </answer>", Question("q", "open")).ok


def test_citations_lists_ranges_and_order():
    text = "See [12], [3, 5] and [7-9]; again [12]. Not a citation: [x] or [2-900]."
    assert extract_citations(text) == [12, 3, 5, 7, 8, 9, 2]
    assert split_citations("[4] and [40]", {3, 4, 5}) == ([4], ["40"])


def test_finder_prompt_puts_the_segment_before_the_question():
    request = finder_request(Question("Who?", "mcq", {"A": "x", "B": "y"}), 3, 4, "[3] a\n\n[4] b")
    user = request.messages[-1][1]
    assert user.index("[3] a") < user.index("Question: Who?") < user.index("(A) x")
    assert request.temperature == 0
    # only shown paragraphs can be quoted, and only with their own sentences
    assert 'item ::= "[3] \\"" q3 "\\"" | "[4] \\"" q4 "\\""' in request.grammar
    # the Finder always quotes its closest sentence: no fixed "no clue" phrase to fall into
    assert 'q3 ::= "a"' in request.grammar and "reason ::= item\n" in request.grammar
    assert request.schema["properties"]["answer"]["enum"] == ["YES", "NO"]
    retry = finder_request(Question("Who?", "mcq", {"A": "x", "B": "y"}), 3, 4, "[3] a", retry=True)
    assert shared.FIRM_RETRY in retry.messages[-1][1]


def test_interpreter_prompt_and_grammar_per_kind():
    evidence = [(7, "She hid it."), (9, "He found it.")]
    mcq = interpreter_request(Question("Where?", "mcq", {"A": "x", "B": "y"}), evidence)
    assert "[7] She hid it." in mcq.messages[-1][1] and "(B) y" in mcq.messages[-1][1]
    assert '"(B)"' in mcq.grammar and '"[9] \\"" q9' in mcq.grammar and '"C"' not in mcq.grammar
    assert 'q9 ::= "He found it."' in mcq.grammar and mcq.repeat_penalty > 1
    claim = interpreter_request(Question("She hid it.", "claim"), evidence)
    assert "Claim to verify" in claim.messages[-1][1] and '"TRUE"' in claim.grammar
    check = interpreter_request(Question("She hid it.", "claim"), evidence, previous=("TRUE", "[7] says so"))
    assert check.messages[0][1] == SELF_CHECK_SYSTEM
    assert "Previous answer: TRUE" in check.messages[-1][1]
    empty = interpreter_request(Question("Why?", "open"), [])
    assert "no evidence was found" in empty.messages[-1][1] and "item ::=" not in empty.grammar
    # a free-form answer cannot smuggle in bracketed "citations" or quotes
    assert r'answer ::= [^<\n\[\]"]' in empty.grammar


def test_grammar_without_evidence_has_no_quote_rule():
    grammar = answer_grammar(Question("q", "open"), finder=True)
    assert grammar.startswith('root ::= "<reason>"') and "item ::=" not in grammar


@pytest.mark.parametrize(
    "kind,question,expected",
    [
        ("claim", "The butler did it.", True),
        ("mcq", "Which of these is NOT true of the doll?", True),
        ("mcq", "Why was the doll pushed?", True),
        ("open", "What can we infer about Selden?", True),
        ("mcq", "Everyone attended except whom?", True),
        ("open", "Who didn't attend?", True),
        ("mcq", "What colour was the boot?", False),
        ("open", "Where does Holmes live?", False),
    ],
)
def test_self_check_trigger(kind, question, expected):
    assert needs_self_check(Question(question, kind)) is expected
