"""The judge's training data (training/judge_data.py): what is never trained on, the answer
sentence found in its section, generated questions read, and pairs built from each source."""

from __future__ import annotations

import csv
import json

import pytest

from training import judge_data


@pytest.mark.parametrize(
    "name",
    ["the_hound_of_the_baskervilles.txt", "The Moonstone.epub", "the_mysterious_affair_at_styles.txt",
     "anne-of-green-gables.txt", "Little Women.txt", "the_adventures_of_sherlock_holmes.txt", "The Great Gatsby.txt"],
)  # fmt: skip
def test_the_books_cwread_is_measured_on_are_never_trained_on(name):
    assert judge_data.excluded(name)


def test_other_books_may_be_trained_on():
    assert not judge_data.excluded("the_sign_of_the_four_arthur_conan_doyle.txt")
    assert not judge_data.excluded("great_expectations_charles_dickens.txt")


def test_the_answer_sentence_is_the_one_holding_most_of_the_answer():
    text = "The wind rose. The old woman hid the ring under a loose stone by the well. Then she slept."
    assert judge_data.answer_sentence(text, ["under a loose stone"]) == 1
    assert judge_data.answer_sentence(text, ["a golden crown"]) is None


def test_generated_replies_are_read_or_refused():
    assert judge_data.parse_generated("Question: Why did Pip run away from the forge?\nAnswer: He feared Joe.") == (
        "Why did Pip run away from the forge?",
        "He feared Joe.",
    )
    assert judge_data.parse_generated("Question: What does the paragraph say about Pip?\nAnswer: x") is None
    assert judge_data.parse_generated("I cannot write a question.") is None


def test_fairytale_pairs_hold_the_answer_window_against_other_sections(tmp_path):
    split = tmp_path / "train"
    split.mkdir()
    sections = [
        "A fox lived by the river. He was clever and sly.",
        "One day the fox stole a goose from the farmer's yard. The farmer shouted at him.",
        "The goose escaped when the fox fell asleep under the oak tree.",
    ]
    with open(split / "fox-story.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["section", "text"])
        for i, text in enumerate(sections, start=1):
            w.writerow([i, text])
    with open(split / "fox-questions.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["question_id", "cor_section", "question", "answer1"])
        w.writerow([1, "2", "What did the fox steal?", "a goose from the farmer's yard"])
    rows = list(judge_data.fairytale_pairs(split))
    positives = [r for r in rows if r["label"] == 1]
    assert len(positives) == 1 and "stole a goose" in positives[0]["passage"]
    negatives = [r for r in rows if r["label"] == 0]
    assert negatives and all("stole" not in r["passage"] for r in negatives)
    assert {r["source"] for r in rows} == {"fairytaleqa:fox"}


def test_novel_pairs_take_negatives_away_from_the_paragraph_asked_about(tmp_path):
    books = tmp_path / "books"
    books.mkdir()
    paragraphs = [f"Paragraph {i}: the miller walked to the village and spoke of rain {i}." for i in range(1, 40)]
    paragraphs[19] = "The miller hid the silver spoons in the flour sack because he feared the bailiff."
    (books / "a_novel.txt").write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps({"book": "a_novel.txt", "paragraph": 20, "question": "Where did the miller hide the spoons?"}) + "\n"
        + json.dumps({"book": "a_novel.txt", "paragraph": 5, "reply": "unreadable"}) + "\n",
        encoding="utf-8",
    )
    rows = list(judge_data.novel_pairs(questions, books))
    assert [r["label"] for r in rows].count(1) == 1
    assert rows[0]["label"] == 1 and "silver spoons" in rows[0]["passage"]
    for r in rows[1:]:
        assert r["label"] == 0 and "silver spoons" not in r["passage"]
        number = int(r["passage"].split(":")[0].split()[1])
        assert abs(number - 20) > 2
