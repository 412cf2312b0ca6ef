"""The paper's reward constants, pinned on hand-written completions."""

import pytest

from training import rewards as R


def finder(reason: str, answer: str) -> str:
    return f"<reason>{reason}</reason>\n<answer>{answer}</answer>"


EIGHT_WORDS = "the key is hidden under the mat here"  # 8 words: full length credit


def test_constants_match_the_paper():
    assert (R.FINDER_FORMAT, R.FINDER_YES, R.FINDER_F1, R.FINDER_COMPACT) == (1.0, 1.5, 1.5, 0.25)
    assert (R.FINDER_NO, R.FINDER_NO_QUALITY, R.FINDER_LENGTH) == (1.25, 0.75, 0.25)
    assert (R.INTERP_FORMAT, R.INTERP_CORRECT["mcq"], R.INTERP_CORRECT["claim"]) == (1.0, 2.5, 1.5)
    assert (R.INTERP_HARD, R.INTERP_IDS, R.INTERP_INVALID_IDS) == (0.5, 0.3, -0.3)
    assert (R.INTERP_LENGTH, R.INTERP_SPECIFIC, R.INTERP_HEDGE) == (0.2, 0.3, -0.4)


def test_finder_perfect_positive():
    text = finder(f"[4] {EIGHT_WORDS}", "YES")
    assert R.finder_score(text, "YES", [4]) == pytest.approx(1.0 + 1.5 + 1.5 + 0.25 + 0.25)


def test_finder_positive_with_partial_ids_and_no_compact_bonus():
    # cites 4 ids, gold {4}: F1 = 2*(1/4*1)/(1/4+1) = 0.4; 4 > max(3, 2) so no compact bonus
    text = finder(f"[4] [5] [6] [7] {EIGHT_WORDS}", "YES")
    assert R.finder_score(text, "YES", [4]) == pytest.approx(1.0 + 1.5 + 1.5 * 0.4 + 0.25)


def test_finder_positive_without_ids_gets_no_f1():
    assert R.finder_score(finder(EIGHT_WORDS, "YES"), "YES", [4]) == pytest.approx(1.0 + 1.5 + 0.25)


def test_missed_positive_gets_format_only():
    assert R.finder_score(finder("[4] no clue is present in this part", "NO"), "YES", [4]) == 1.0


def test_finder_correct_negative_with_full_rationale():
    text = finder("The segment does not mention the key at all.", "NO")
    assert R.finder_score(text, "NO", []) == pytest.approx(1.0 + 1.25 + 0.75 + 0.25)


def test_negative_rationale_spraying_ids_loses_the_id_part():
    text = finder("[3] [4] The segment does not mention the key at all.", "NO")
    assert R.finder_score(text, "NO", []) == pytest.approx(1.0 + 1.25 + 0.5 + 0.25)
    one = finder("[3] The segment does not mention the key at all.", "NO")
    assert R.finder_score(one, "NO", []) == pytest.approx(1.0 + 1.25 + 0.75 + 0.25)


def test_a_negative_quoting_its_closest_sentence_earns_full_quality():
    """cwread's format (and the warm start's NO target): the closest sentence, quoted."""
    text = finder('[5] "The old dog lay by the fire and barked."', "NO")
    assert R.finder_score(text, "NO", []) == pytest.approx(1.0 + 1.25 + 0.75 + 0.25)
    no_quote = finder("[5] The old dog lay by the fire and barked.", "NO")  # no quote, no irrelevance
    assert R.finder_score(no_quote, "NO", []) == pytest.approx(1.0 + 1.25 + 0.5 + 0.25)


def test_terse_negative_gets_little_quality():
    assert R.finder_score(finder("Nope.", "NO"), "NO", []) == pytest.approx(1.0 + 1.25 + 0.25 + 0.0)


def test_yes_on_a_negative_gets_format_only_however_many_ids():
    assert R.finder_score(finder("[1] [2] [3] everything matters here a lot", "YES"), "NO", []) == 1.0


@pytest.mark.parametrize("text", ["YES", "<reason>x</reason>", "<answer>YES</answer>", ""])
def test_unparseable_or_reasonless_finder_output_scores_zero(text):
    assert R.finder_score(text, "YES", [1]) == 0.0


def interp(reason: str, answer: str) -> str:
    return f"<reason>{reason}</reason>\n<answer>{answer}</answer>"


TEN_WORDS = "Martha hid the silver medal inside a biscuit tin there"


def test_interpreter_correct_mcq_with_every_bonus():
    text = interp(f"[5] {TEN_WORDS}", "B")
    score = R.interpreter_score(text, "B", "mcq", allowed_ids=[5], hard=True, evidence="Martha kept it.")
    assert score == pytest.approx(1.0 + 2.5 + 0.5 + 0.3 + 0.2 + 0.3)


def test_interpreter_claim_reward_is_smaller():
    text = interp(f"[5] {TEN_WORDS}", "TRUE")
    assert R.interpreter_score(text, "TRUE", "claim", allowed_ids=[5]) == pytest.approx(1.0 + 1.5 + 0.3 + 0.2)


def test_bonuses_are_gated_on_a_correct_answer():
    text = interp(f"[5] {TEN_WORDS}", "A")
    assert R.interpreter_score(text, "B", "mcq", allowed_ids=[5], hard=True, evidence="Martha") == 1.0


def test_invalid_ids_are_penalised_even_when_right():
    text = interp(f"[5] [9] {TEN_WORDS}", "B")
    assert R.interpreter_score(text, "B", "mcq", allowed_ids=[5]) == pytest.approx(
        1.0 + 2.5 - 0.3 + 0.3 + 0.2
    )


def test_hedging_is_penalised_and_the_floor_is_zero():
    hedge = interp("It is impossible to say; insufficient evidence [9].", "A")
    assert R.interpreter_score(hedge, "B", "mcq", allowed_ids=[5]) == pytest.approx(max(0.0, 1.0 - 0.3 - 0.4))
    wrong = interp("cannot determine from this", "A")
    assert R.interpreter_score(wrong, "B", "mcq") == pytest.approx(0.6)


def test_open_answers_score_by_f1():
    text = interp(f"[2] {TEN_WORDS}", "a biscuit tin")
    full = R.interpreter_score(text, "biscuit tin", "open", allowed_ids=[2])
    assert full == pytest.approx(1.0 + 2.0 + 0.3 + 0.2)
    partial = R.interpreter_score(interp("[2] x", "a tin box"), "biscuit tin", "open")
    assert partial == pytest.approx(1.0 + 2.0 * 0.5 + 0.3) and partial < full  # F1 0.5 counts as right


def test_trl_signature_with_conversational_completions():
    completions = [
        [{"role": "assistant", "content": finder(f"[4] {EIGHT_WORDS}", "YES")}],
        finder("does not mention anything about it here", "NO"),
    ]
    scores = R.finder_reward(completions, label=["YES", "NO"], gold_ids=[[4], []], prompt=["p", "p"])
    assert scores[0] == pytest.approx(4.5) and scores[1] > 3.0
    scores = R.interpreter_reward(
        [interp(f"[5] {TEN_WORDS}", "(B)")],
        answer=["B"],
        kind=["mcq"],
        allowed_ids=[[5]],
        labels=[["A", "B"]],
    )
    assert scores == [pytest.approx(1.0 + 2.5 + 0.3 + 0.2)]
