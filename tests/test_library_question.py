"""A question over a whole library (`find LIBRARY QUESTION --library`, MCP `find` with no book):
the library's index picks the candidate books, each is searched as one book, and the passages
come back with their book, chapter and paragraph ids. Through the real CLI."""

from __future__ import annotations

import json
import re

import pytest

from cwread.library.catalog import Library
from tests.conftest import run
from tests.test_library import calibre_library  # noqa: F401  (the fixture)

DAYS = [
    f"On the {n}th day the gulls came back to the rocks and the tide ran as before." for n in range(4, 16)
]
LIGHTHOUSE = [
    "CHAPTER I",
    "The keeper of the Skerry light lived alone with his daughter Ailsa.",
    "Every night Ailsa climbed the hundred steps to trim the great lamp.",
    *DAYS,
    "CHAPTER II",
    "In the winter storm a schooner struck the reef below the light.",
    "Ailsa rowed the small boat out through the breakers and brought three sailors home.",
    "The keeper wept when he saw her come back through the spray.",
    *DAYS,
]
RESCUE = LIGHTHOUSE.index("CHAPTER II") + 3  # the paragraph that answers
ORCHARD = [
    "CHAPTER I",
    "The orchard at Fenwick ran down to the river in long rows of pear trees.",
    "Old Tobias pruned the trees every March and sold the fruit at the autumn fair.",
    "CHAPTER II",
    "A frost in May killed the blossom, and that year there were no pears at all.",
]
MILLS = [
    "The mill wheel turned day and night while the river was high.",
    "The miller's boy carried the flour sacks up to the loft.",
    "When the river froze the mill stood silent until the thaw.",
]


@pytest.fixture
def shelf(tmp_path):
    root = tmp_path / "shelf"
    root.mkdir()
    for name, story in (("lighthouse.txt", LIGHTHOUSE), ("orchard.txt", ORCHARD), ("mill.txt", MILLS)):
        (root / name).write_text("\n\n".join(story) + "\n", encoding="utf-8")
    return root


QUESTION = "Who rowed out to save the sailors from the wrecked schooner?"


def test_the_answer_comes_from_the_book_that_holds_it_with_its_chapter(capsys, shelf, cache_dir):
    code, out, err = run(capsys, "find", str(shelf), QUESTION, "--library", "--width", "100")
    assert code == 0
    head = " ".join(out.split("\n\n")[0].split())
    assert "3 books, " in head and "searched the " in head and head.index("lighthouse.txt") < len(head)
    assert "#1 lighthouse.txt [" in out and "CHAPTER II" in out.split("#1 ")[1].splitlines()[0]
    assert f"[{RESCUE}] Ailsa rowed the small boat out through the breakers" in out
    assert "searching the books that match best" in err  # progress on stderr

    code, out, _ = run(capsys, "find", str(shelf), QUESTION, "--library", "--json")
    data = json.loads(out)
    assert code == 0 and data["books"] == 3 and data["searched"][0]["book"] == "lighthouse.txt"
    first = data["passages"][0]
    assert first["book"] == "lighthouse.txt" and first["start"] <= RESCUE <= first["end"]
    assert first["chapter"] == "CHAPTER II" and "Ailsa rowed" in first["text"]
    assert all(p["book"] in {c["book"] for c in data["searched"]} for p in data["passages"])
    assert len(data["searched"]) <= 3 and "index_built" in data["searched"][0]

    spans = []
    for widen in ([], ["--expand", "1"]):
        code, out, _ = run(capsys, "find", str(shelf), QUESTION, "--library", "--limit", "1", *widen)
        spans.append([int(n) for n in re.search(r"#1 lighthouse\.txt \[(\d+)-(\d+)\]", out).groups()])
    assert spans[1] == [spans[0][0] - 1, spans[0][1] + 1]  # a paragraph more on each side

    code, out, _ = run(capsys, "find", str(shelf), QUESTION, "--library", "--books-opened", "1", "--json")
    assert [c["book"] for c in json.loads(out)["searched"]] == ["lighthouse.txt"]


def test_a_map_of_a_shelf_is_a_line_a_passage(capsys, shelf, cache_dir):
    """--map on a shelf was ignored: the first passage printed whole, the rest a line each. A
    map is a line a candidate, its book, span and best-matching part, as on one book."""
    code, out, _ = run(capsys, "find", str(shelf), QUESTION, "--library", "--map", "--width", "0")
    lines = [line for line in out.splitlines() if line.startswith("#")]
    assert code == 0 and lines and lines[0].startswith("#1 lighthouse.txt [") and f"at [{RESCUE}]" in lines[0]
    assert not re.search(r"^\[\d+\] ", out, re.M)  # no paragraph printed whole
    assert all(re.match(r"#\d+\S* \S+ \[", line) for line in lines)
    code, out, _ = run(capsys, "find", str(shelf), QUESTION, "--library", "--map", "--limit", "2")
    assert code == 0 and len([line for line in out.splitlines() if line.startswith("#")]) <= 2
    code, out, _ = run(capsys, "find", str(shelf), QUESTION, "--library", "--map", "--max-chars", "300")
    cut = next(line for line in out.splitlines() if line.startswith("#1"))
    assert code == 0 and re.match(r"#1 \S+\.txt \[[\d-]+\] ", cut), cut  # a cut keeps the book and span
    assert not re.search(r"passages: #2;", out)  # those left out named by book and span too


def test_words_no_book_holds_and_bad_options_are_one_line(capsys, shelf, cache_dir):
    code, out, _ = run(capsys, "find", str(shelf), "zeppelin quartermaster", "--library")
    assert code == 4 and "none holds the question's words" in " ".join(out.split())
    code, _, err = run(capsys, "find", str(shelf), QUESTION, "--library", "--near", "3")
    assert code == 2 and "--near and --upto name a place in one book" in err
    code, _, err = run(capsys, "find", str(shelf / "mill.txt"), QUESTION, "--library")
    assert code == 2 and "a library is a folder of books" in err


def test_a_book_changed_between_two_questions_is_read_again(capsys, shelf, cache_dir):
    run(capsys, "find", str(shelf), QUESTION, "--library", "--json")
    rescued_by = "Ailsa's brother Callum rowed out alone and brought the sailors home."
    changed = [*LIGHTHOUSE[: RESCUE - 1], rescued_by, *LIGHTHOUSE[RESCUE:]]
    (shelf / "lighthouse.txt").write_text("\n\n".join(changed) + "\n", encoding="utf-8")
    code, out, _ = run(capsys, "find", str(shelf), QUESTION, "--library", "--json")
    data = json.loads(out)
    assert code == 0 and data["library_index_built"]
    assert f"[{RESCUE}] {rescued_by}" in data["passages"][0]["text"] and "Ailsa rowed" not in out


def test_a_calibre_library_names_each_book_by_its_title(capsys, calibre_library, cache_dir):  # noqa: F811
    code, out, _ = run(
        capsys, "find", str(calibre_library), "Why did the Giant build a wall?", "--library", "--json"
    )
    data = json.loads(out)
    giant = data["searched"][0]
    assert code == 0 and giant["book"] == "Oscar Wilde/The Selfish Giant (1)"
    assert giant["title"] == "The Selfish Giant" and giant["author"] == "Oscar Wilde"
    assert data["passages"][0]["book"] == giant["book"]
    code, out, _ = run(capsys, "find", str(calibre_library), "Why did the Giant build a wall?", "--library")
    assert code == 0 and '("The Selfish Giant", Oscar Wilde)' in " ".join(out.split())


def test_ctrl_c_while_a_candidate_book_is_indexed_is_one_line_and_the_next_question_goes_on(
    capsys, shelf, cache_dir, monkeypatch
):
    opened = Library.open

    def interrupted(self, book):
        raise KeyboardInterrupt

    run(capsys, "search", str(shelf), "keeper")  # the library's index in place: the book's own is next
    monkeypatch.setattr(Library, "open", interrupted)
    code, out, err = run(capsys, "find", str(shelf), QUESTION, "--library")
    assert code == 130 and out == "" and err.strip().splitlines()[-1] == "cwread: interrupted"
    monkeypatch.setattr(Library, "open", opened)
    code, out, _ = run(capsys, "find", str(shelf), QUESTION, "--library")
    assert code == 0 and "Ailsa rowed" in out


def test_ask_on_a_library_answers_from_the_book_whose_passages_fit_best(capsys, shelf, cache_dir):
    code, out, err = run(capsys, "ask", str(shelf), QUESTION, "--library", "--json")
    data = json.loads(out)
    assert "answering from lighthouse.txt, whose passages fit best" in err
    assert data["document"]["path"].endswith("lighthouse.txt") and code in (0, 4)
    assert all(q["paragraph"] <= len(LIGHTHOUSE) for q in data["quotes"])
    code, out, err = run(capsys, "ask", str(shelf), "zeppelin quartermaster?", "--library")
    assert code == 4 and "holds the question's words" in err
