"""`cwread find` for a reader in a pipe: plain text within the width, whole passages up to a
character budget with one line naming what was left out, chapters on each passage, and the
question's words the book does not hold. Through the real CLI."""

import re

from tests.conftest import run
from tests.test_passages import ANSWER, novel  # noqa: F401  (the fixture)

BOXES = set("╭╮╰╯│─")


def test_a_pipe_gets_plain_text_within_the_width(capsys, novel, cache_dir):  # noqa: F811
    code, out, _ = run(capsys, "find", str(novel), "Where did Silas hide the brass key?", "--width", "72")
    assert code == 0 and not BOXES & set(out)
    assert max(len(line) for line in out.splitlines()) <= 72
    assert re.search(r"^#1 \[\d+-\d+\] CHAPTER VII\. THE CHAPEL$", out, re.M)
    assert "score" not in out and "segments;" not in out  # no run statistics: those are --json's
    assert f"] {ANSWER[:40]}" in out


def test_max_chars_prints_whole_passages_then_names_the_rest(capsys, novel, cache_dir):  # noqa: F811
    asked = ("find", str(novel), "What did Martha sing at the inn?", "--width", "100")
    code, bounded, _ = run(capsys, *asked, "--max-chars", "2000")
    assert code == 0
    passages, _, left = bounded.rpartition("\nLeft out past 2,000 characters (--max-chars): ")
    assert len(passages) <= 2000 and left.startswith("#")
    named = re.findall(r"#(\d+) \[", left)
    printed = re.findall(r"^#(\d+) \[", passages, re.M)
    assert printed and named and int(named[0]) == int(printed[-1]) + 1  # whole passages, in rank order
    code, unbounded, _ = run(capsys, *asked, "--max-chars", "0")
    assert code == 0 and "Left out" not in unbounded and len(unbounded) > len(bounded)


def test_the_questions_words_the_book_does_not_hold_are_named(capsys, novel, cache_dir):  # noqa: F811
    code, out, _ = run(capsys, "find", str(novel), "Where did Silas park the automobile?")
    assert code == 0 and "No paragraph holds: park, automobile (say it otherwise)." in out
    code, out, _ = run(capsys, "find", str(novel), "Where did Silas hide the brass key?")
    assert "No paragraph holds" not in out


def test_the_map_is_one_line_a_candidate_with_the_questions_words_marked(capsys, novel, cache_dir):  # noqa: F811
    code, out, _ = run(
        capsys, "find", str(novel), "Where did Silas hide the brass key?", "--map", "--width", "0"
    )
    lines = out.splitlines()
    assert code == 0 and len(lines) == 1 + 25
    assert lines[1].startswith("#1 [") and "(CHAPTER VII. THE CHAPEL)" in lines[1]
    assert "*Silas* *hid* the *brass* *key*" in lines[1]  # the answer's line first, its words marked
    assert all(re.match(r"#\d+ \[\d+\] ", line) for line in lines[1:])
    assert not any("CHAPTER" in line.split(")")[-1] for line in lines[1:])  # a heading is no candidate
    code, out, _ = run(
        capsys, "find", str(novel), "Where did Silas hide the brass key?", "--map", "--limit", "5"
    )
    assert code == 0 and len([line for line in out.splitlines() if line.startswith("#")]) == 5


def test_also_adds_the_books_own_words_to_the_lexical_side(capsys, novel, cache_dir):  # noqa: F811
    asked = (
        "find",
        str(novel),
        "Where did the man conceal the metal object?",
        "--map",
        "--limit",
        "3",
        "--width",
        "0",
    )
    code, before, _ = run(capsys, *asked)
    assert code == 0 and "No paragraph holds: man, conceal, metal, object" in before
    code, after, _ = run(capsys, *asked, "--also", "brass key")
    first = next(line for line in after.splitlines() if line.startswith("#1 "))
    assert code == 0 and ANSWER[:30] in first
