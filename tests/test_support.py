"""The support check that decides whether the model's answer is shown, through the real CLI on
a scripted model that gives scores (and one that does not)."""

import json

import pytest

from cwread.agents.support_check import SUPPORT_SYSTEM
from cwread.answer.support import unquoted_names
from cwread.backends import Generation, GenerationRequest
from cwread.records.stages import Quote
from tests.conftest import run

MEDAL = "The fishermen of the harbour later gave her a silver medal, which she kept in a biscuit tin under her bed."
QUESTION = "Where did she keep the silver medal?"


def interpreter_reply(answer: str, quote: str = MEDAL, pid: int = 5) -> str:
    return f'<reason>[{pid}] "{quote}"</reason><answer>{answer}</answer>'


def support_reply(score: float) -> Generation:
    """The model's verdict on support with its score ln P(YES) - ln P(NO)."""
    return Generation(
        f"<answer>{'YES' if score >= 0 else 'NO'}</answer>",
        label_logprobs=(("YES", min(0.0, score)), ("NO", min(0.0, -score))),
    )


CONFIDENT = ("--set", "answer.confidence_threshold=-0.4")  # the model's confidence decides, at this threshold


def sure(answer: str, logprob: float) -> Generation:
    """The Interpreter's reply with the mean log-probability of its answer's tokens."""
    return Generation(interpreter_reply(answer), answer_logprob=logprob)


@pytest.fixture
def scoring(scripted):
    scripted.interpreter.logprobs = True  # a model that gives label log-probabilities
    return scripted


def ask_json(capsys, story, *extra, threshold: str | None = "0"):
    """`ask --json` on the story; with the model's support check at `threshold` (None: without)."""
    checked = ("--set", f"answer.support_threshold={threshold}") if threshold is not None else ()
    code, out, err = run(
        capsys, "ask", str(story), QUESTION, "--backend", "scripted", "--no-cache", "--json", *checked, *extra
    )
    return code, json.loads(out) if out.strip() else None, err


def test_a_paraphrase_the_quotes_support_is_shown_with_its_score(capsys, story, cache_dir, scoring):
    # "hid" and "box" are in no quote: word containment withheld this answer
    scoring.interpreter.enqueue(
        interpreter_reply("she hid it in a box beneath where she slept"), support_reply(3.2)
    )
    code, trace, err = ask_json(capsys, story)
    assert code == 0, err
    assert trace["answer"] == "she hid it in a box beneath where she slept"
    assert trace["answer_kind"] == "model-words" and trace["supported"] is True
    check = trace["support_check"]
    assert check["method"] == "model" and check["score"] == pytest.approx(3.2) and check["threshold"] == 0.0
    assert (
        check["call"]["prompt_tokens"] > 0
        and trace["tokens"]["prompt"] > trace["interpreter"]["prompt_tokens"]
    )
    # the check saw the quote under its paragraph's label, the question and the answer; nothing else
    request: GenerationRequest = scoring.interpreter.requests[-1]
    assert request.messages[0] == ("system", SUPPORT_SYSTEM)
    user = request.messages[1][1]
    assert f"[5] {MEDAL[:-1]}" in user and f"Question: {QUESTION}" in user
    assert "Answer: she hid it in a box beneath where she slept" in user
    assert "Martha climbed" not in user  # the rest of the packet is not shown to the check
    assert request.label_scores == ("YES", "NO") and request.max_tokens <= 8
    # the view says it is the model's words, checked
    scoring.interpreter.enqueue(
        interpreter_reply("she hid it in a box beneath where she slept"), support_reply(3.2)
    )
    code, out, _ = run(
        capsys, "ask", str(story), QUESTION, "--backend", "scripted", "--no-cache", "--set", "answer.support_threshold=0"
    )
    flat = " ".join(w for w in out.split() if w != "│")
    # in words; the score and threshold are the trace's (and --debug's)
    assert "The model's words; checked by the model against its quotes: the quotes support it." in flat
    assert "+3.20" not in flat


def test_an_answer_the_check_scores_low_is_withheld_and_the_quoted_sentence_given(
    capsys, story, cache_dir, scoring
):
    # its words are all in the quote, yet the quote says otherwise: containment alone would show it
    scoring.interpreter.enqueue(interpreter_reply("the fishermen kept the medal"), support_reply(-2.5))
    code, trace, err = ask_json(capsys, story)
    assert code == 0, err
    assert trace["answer_kind"] == "quoted-words" and "biscuit tin" in trace["answer"]
    assert trace["model_answer"] == "the fishermen kept the medal"
    assert trace["support_check"]["supported"] is False and trace["support_check"]["score"] == pytest.approx(
        -2.5
    )
    # with --answer generative there is no sentence in its place: not determined, exit 4
    scoring.interpreter.enqueue(interpreter_reply("the fishermen kept the medal"), support_reply(-2.5))
    code, trace, _ = ask_json(capsys, story, "--answer", "generative")
    assert code == 4 and trace["answer"] is None and trace["abstained"] is True


def test_the_threshold_is_the_users_to_set(capsys, story, cache_dir, scoring):
    scoring.interpreter.enqueue(interpreter_reply("she hid it in a box"), support_reply(1.0))
    code, trace, _ = ask_json(capsys, story, threshold="2")
    assert trace["answer_kind"] == "quoted-words" and trace["plan"]["support_threshold"] == 2.0
    # without a threshold no such call is made: the words decide ("hid", "box" are in no quote)
    scoring.interpreter.enqueue(interpreter_reply("she hid it in a box"))
    code, trace, _ = ask_json(capsys, story, threshold=None)
    assert trace["plan"]["support"] == "words" and trace["support_check"]["method"] == "words"
    assert trace["answer_kind"] == "quoted-words" and trace["support_check"]["call"] is None
    # nor by default does the model's confidence in its words, though this one was sure
    scoring.interpreter.enqueue(sure("she hid it in a box", -0.01))
    code, trace, _ = ask_json(capsys, story, threshold=None)
    assert trace["plan"]["support"] == "words" and trace["answer_kind"] == "quoted-words"
    code, _out, err = run(
        capsys, "ask", str(story), QUESTION, "--backend", "scripted", "--set", "answer.support_threshold=nan"
    )
    assert code == 2 and "answer.support_threshold must be a finite number" in err


def test_a_name_no_quote_holds_withholds_the_answer_without_a_call(capsys, story, cache_dir, scoring):
    scoring.interpreter.enqueue(interpreter_reply("Captain Ahab took it to Nantucket"))
    code, trace, err = ask_json(capsys, story)
    assert code == 0, err
    check = trace["support_check"]
    assert (
        check["supported"] is False
        and check["unquoted_names"] == ["Ahab", "Nantucket"]
        and check["call"] is None
    )
    assert "names Ahab, Nantucket, whom no quote names" in check["why"]
    assert trace["answer_kind"] == "quoted-words"
    assert not any(r.messages[0][1] == SUPPORT_SYSTEM for r in scoring.interpreter.requests)


def test_an_irrelevant_quote_does_not_make_a_claim_supported(capsys, story, cache_dir, scoring):
    # the claim shares "medal"... with nothing: the quote is about the lamp; the model check says no
    lamp = "Martha Quill kept the lighthouse on Gannet Rock for thirty years, and she never once let the lamp go dark."
    scoring.interpreter.enqueue(interpreter_reply("TRUE", lamp, 2), support_reply(-3.0))
    _code, out, err = run(
        capsys,
        "verify",
        str(story),
        "Martha kept the lighthouse lamp in a biscuit tin.",
        "--backend",
        "scripted",
        "--no-cache",
        "--json",
        "--self-check",
        "off",
        "--set",
        "answer.support_threshold=0",
    )
    trace = json.loads(out)
    assert trace["answer"] is None and trace["model_answer"] == "TRUE" and trace["supported"] is False, err
    assert trace["support_check"]["method"] == "model"
    user = scoring.interpreter.requests[-1].messages[1][1]
    assert "Answer: TRUE: the claim holds" in user and "Claim to verify" in user


def test_a_model_without_scores_is_checked_word_by_word(capsys, story, cache_dir, scripted):
    scripted.interpreter.enqueue(interpreter_reply("she hid it in a box beneath where she slept"))
    _code, trace, _err = ask_json(capsys, story)
    assert trace["plan"]["support"] == "words" and trace["support_check"]["method"] == "words"
    assert trace["answer_kind"] == "quoted-words"  # "hid", "box" are in no quote
    assert len(scripted.interpreter.requests) == 1  # no call was made for the check


@pytest.mark.parametrize(
    ("answer", "question", "missing"),
    [
        ("The Princess burst out laughing.", "Why did the princess laugh?", ()),  # named in the question
        ("He gave it to Mr. Holmes.", "Who got it?", ("Holmes",)),  # a title is not the name
        ("Sir Henry's boot was taken by Stapleton.", "Whose boot?", ("Henry", "Stapleton")),
        (
            "Because she was afraid. I think Watson knew.",
            "Why?",
            ("Watson",),
        ),  # a sentence's first word is no name
    ],
)
def test_unquoted_names(answer, question, missing):
    quotes = (Quote(1, "the princess laughed and the boot was lost", 0, 10),)
    assert unquoted_names(answer, quotes, question) == missing


@pytest.fixture
def diary(tmp_path):
    """A book in which every paragraph names Martha, so her name weighs next to nothing."""
    days = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    chores = ["painted the fence", "mended the nets", "baked the bread", "fed the goats", "swept the yard"]
    paragraphs = [f"On {day} Martha {chore}." for day in days for chore in chores[:3]]
    paragraphs.insert(9, "At dusk Martha buried the silver medal beneath the old oak tree.")
    path = tmp_path / "diary.txt"
    path.write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    return path, paragraphs


def verify_json(capsys, book, claim, *extra):
    code, out, err = run(
        capsys, "verify", str(book), claim, "--backend", "scripted", "--no-cache", "--json", "--self-check", "off", *extra
    )
    return code, json.loads(out), err


def test_a_quote_that_only_names_someone_does_not_bear_on_a_claim(capsys, diary, cache_dir, scripted):
    book, paragraphs = diary
    claim = "Martha buried the silver medal beneath the old oak tree."
    beside = paragraphs[10]  # "On Thursday Martha painted the fence.", next to the paragraph that says it
    scripted.interpreter.enqueue(interpreter_reply("TRUE", beside, 11))
    code, trace, err = verify_json(capsys, book, claim)
    # its quote does not bear on it: no verdict (exit 4), the model's choice kept in the trace
    assert code == 4 and trace["answer"] is None and trace["model_answer"] == "TRUE", err
    check = trace["support_check"]
    assert trace["supported"] is False and check["method"] == "words"
    assert check["weight_share"] < 0.1 and "under the 10% that bears on it" in check["why"]
    # one shared word, the rule before, would have called it supported
    assert "Martha" in beside and trace["citations"][0] == 11  # its quote first, then the best evidence
    # the view says so
    scripted.interpreter.enqueue(interpreter_reply("TRUE", beside, 11))
    _code, out, _ = run(capsys, "verify", str(book), claim, "--backend", "scripted", "--no-cache", "--self-check", "off")
    assert "The model answered 'TRUE', but its quotes do not say so" in " ".join(w for w in out.split() if w != "│")
    # the paragraph that says it does bear on it
    scripted.interpreter.enqueue(interpreter_reply("TRUE", paragraphs[9], 10))
    code, trace, err = verify_json(capsys, book, claim)
    assert trace["supported"] is True and trace["support_check"]["weight_share"] == 1.0, err


def test_a_label_whose_quotes_do_not_bear_on_it_is_not_asked_of_the_model(capsys, diary, cache_dir, scoring):
    book, paragraphs = diary
    scoring.interpreter.enqueue(interpreter_reply("TRUE", paragraphs[10], 11), support_reply(3.0))
    _code, trace, err = verify_json(
        capsys, book, "Martha buried the silver medal beneath the old oak tree.", "--set", "answer.support_threshold=0"
    )
    assert trace["supported"] is False and trace["support_check"]["call"] is None, err
    assert not any(r.messages[0][1] == SUPPORT_SYSTEM for r in scoring.interpreter.requests)


def test_a_paraphrase_the_model_is_sure_of_is_shown_with_its_confidence(capsys, story, cache_dir, scoring):
    scoring.interpreter.enqueue(sure("she hid it in a box beneath where she slept", -0.1))
    code, trace, err = ask_json(capsys, story, *CONFIDENT, threshold=None)
    assert code == 0, err
    assert trace["answer"] == "she hid it in a box beneath where she slept"
    assert trace["answer_kind"] == "model-words" and trace["supported"] is True
    check = trace["support_check"]
    assert check["method"] == "confidence" and check["score"] == -0.1 and check["call"] is None
    assert check["threshold"] == trace["plan"]["support_threshold"] == -0.4
    assert len(scoring.interpreter.requests) == 1  # no call beyond the answer's own
    scoring.interpreter.enqueue(sure("she hid it in a box beneath where she slept", -0.1))
    code, out, err = run(capsys, "ask", str(story), QUESTION, "--backend", "scripted", "--no-cache", *CONFIDENT)
    assert code == 0, err
    view = " ".join(out.replace("│", " ").split())  # the panel's lines, unwrapped
    assert "checked against its quotes and the model's confidence" in view
    assert "sure of its words" in view and "-0.10" not in view  # the score is the trace's


def test_an_answer_the_model_is_unsure_of_gives_way_to_the_quoted_words(capsys, story, cache_dir, scoring):
    scoring.interpreter.enqueue(sure("she buried it in the garden", -1.4))
    code, trace, err = ask_json(capsys, story, *CONFIDENT, threshold=None)
    assert code == 0, err
    assert trace["answer_kind"] == "quoted-words" and "biscuit tin" in trace["answer"]
    check = trace["support_check"]
    assert check["supported"] is False and "unsure of its words" in check["why"]
    assert trace["model_answer"] == "she buried it in the garden"
    # the user's own threshold decides
    scoring.interpreter.enqueue(sure("she buried it in the garden", -1.4))
    code, trace, err = ask_json(capsys, story, "--set", "answer.confidence_threshold=-2", threshold=None)
    assert trace["answer"] == "she buried it in the garden" and trace["support_check"]["threshold"] == -2.0
    code, _out, err = run(capsys, "ask", str(story), QUESTION, "--backend", "scripted", "--set", "answer.confidence_threshold=inf")
    assert code == 2 and "answer.confidence_threshold must be a finite number" in err


def test_a_sure_answer_naming_someone_no_quote_names_is_withheld(capsys, story, cache_dir, scoring):
    scoring.interpreter.enqueue(sure("Captain Ahab took it to Nantucket", -0.01))
    code, trace, err = ask_json(capsys, story, *CONFIDENT, threshold=None)
    assert code == 0, err
    check = trace["support_check"]
    assert check["supported"] is False and check["unquoted_names"] == ["Ahab", "Nantucket"]
    assert trace["answer_kind"] == "quoted-words"


def test_a_small_models_confidence_is_not_trusted(capsys, story, cache_dir, scoring):
    scoring.interpreter.size = 135_000_000  # judges at chance: its words are held to the quotes
    scoring.interpreter.enqueue(sure("she hid it in a box beneath where she slept", -0.01))
    code, trace, err = ask_json(capsys, story, "--answer", "generative-or-extractive", *CONFIDENT, threshold=None)
    assert code == 0, err
    assert trace["plan"]["support"] == "words" and trace["answer_kind"] == "quoted-words"


# ---- a reader's answer (answer.quoted_answers=on): the model's own words on verbatim quotes ----------


def ask_quoted(capsys, story, *extra):
    code, out, err = run(
        capsys, "ask", str(story), QUESTION, "--backend", "scripted", "--no-cache", "--json", *extra
    )
    return code, json.loads(out), err


def test_a_readers_answer_is_shown_in_its_own_words_with_the_share_its_quotes_hold(capsys, story, cache_dir, scripted):
    paraphrase = "she hid it in a biscuit tin beneath her bed"  # "hid" and "beneath" are in no quote
    scripted.interpreter.enqueue(interpreter_reply(paraphrase))
    code, trace, err = ask_quoted(capsys, story, "--set", "answer.quoted_answers=on", "--self-check", "off")
    assert code == 0, err
    assert trace["answer"] == paraphrase and trace["answer_kind"] == "model-words"
    check = trace["support_check"]
    assert check["method"] == "quotes" and check["supported"] and 0 < check["quoted_share"] < 1
    assert [q["paragraph"] for q in trace["quotes"]] == [5] and all(q["in_packet"] for q in trace["quotes"])
    # the view says what supports it: its quotes, and how much of the answer they hold
    scripted.interpreter.enqueue(interpreter_reply(paraphrase))
    code, out, _ = run(capsys, "ask", str(story), QUESTION, "--backend", "scripted", "--no-cache",
                       "--set", "answer.quoted_answers=on", "--self-check", "off", "--width", "200")  # fmt: skip
    assert code == 0 and paraphrase in out and "verbatim and hold" in out and "%" in out


def test_without_the_option_the_same_paraphrase_is_not_shown_as_the_models_words(capsys, story, cache_dir, scripted):
    scripted.interpreter.enqueue(interpreter_reply("she hid it in a biscuit tin beneath her bed"))
    _, trace, _ = ask_quoted(capsys, story, "--self-check", "off")
    assert trace["answer_kind"] != "model-words"  # every content word must be quoted: a sentence of the book stands in
    assert trace["support_check"]["method"] == "words" and not trace["support_check"]["supported"]


def test_a_readers_answer_is_withheld_for_a_quote_not_in_the_book_or_a_name_no_quote_holds(
    capsys, story, cache_dir, scripted
):
    forged = interpreter_reply("she hid it in a tin", quote="She buried the medal in the sand.")
    scripted.interpreter.enqueue(forged)
    code, trace, _ = ask_quoted(capsys, story, "--set", "answer.quoted_answers=on", "--self-check", "off", "--answer", "generative")
    assert code == 4 and trace["answer"] is None and trace["support_check"]["why"] == "no quote of the book backs it"
    scripted.interpreter.enqueue(interpreter_reply("her brother Silas kept it in a biscuit tin"))
    code, trace, _ = ask_quoted(capsys, story, "--set", "answer.quoted_answers=on", "--self-check", "off", "--answer", "generative")
    assert code == 4 and trace["answer"] is None and "Silas" in trace["support_check"]["why"]


def test_a_quote_outside_the_packet_withholds_a_readers_answer():
    from cwread.answer.support import FORGED, OUTSIDE_PACKET, check_quotes
    from cwread.records.question import Question
    from cwread.records.stages import AgentCall, GroundedReply

    reply = GroundedReply(quotes=(Quote(5, "a biscuit tin", 0, 13),))
    final = AgentCall("in a tin", None, reply)
    asked = Question(QUESTION, "open")
    assert check_quotes(asked, "in a tin", final, [5, 6]).supported
    outside = check_quotes(asked, "in a tin", final, [6, 7])
    assert not outside.supported and outside.why == OUTSIDE_PACKET and outside.method == "quotes"
    # one quote verbatim, another not in the paragraph it names: not every quote is the book's
    half = AgentCall("in a tin", None, GroundedReply(quotes=reply.quotes, forged=(("5", "a golden box"),)))
    assert check_quotes(asked, "in a tin", half, [5]).why == FORGED


def test_a_readers_answer_that_is_a_name_no_quote_holds_is_withheld(tmp_path):
    """An answer that opens with a name ("Japp") names someone as surely as one that ends with
    it: a first word the book never writes in lower case is a name."""
    from cwread.answer.support import check_quotes
    from cwread.book import load_document
    from cwread.records.question import Question
    from cwread.records.stages import AgentCall, GroundedReply

    book = tmp_path / "styles.txt"
    book.write_text("“You have my word,” said Inglethorp haughtily.\n\nJapp shrugged; two men went in.\n", encoding="utf-8")
    lowercase = load_document(str(book)).lowercase_words
    quote = Quote(1, "“You have my word,” said Inglethorp haughtily.", 0, 46)
    asked = Question("Who was his accomplice?", "open")
    named = check_quotes(asked, "Japp", AgentCall("Japp", None, GroundedReply(quotes=(quote,))), [1, 2], lowercase)
    assert not named.supported and named.unquoted == ("Japp",)
    # a first word the book writes in lower case is no name: "Two men" is a count, quoted or not
    plain = check_quotes(asked, "Two men", AgentCall("x", None, GroundedReply(quotes=(quote,))), [1, 2], lowercase)
    assert plain.supported and plain.unquoted == ()
