"""A reader's limit (--upto, MCP's upto): nothing past where they have read is found, read,
quoted or listed, in find, ask, cast and search. Through the real CLI, on a novel whose answer
is in chapter VII."""

from __future__ import annotations

import json
import re

from cwread.book import load_document
from cwread.library.contents import contents_of
from tests.conftest import run
from tests.test_passages import ANSWER, novel, small_model  # noqa: F401  (fixtures)

QUESTION = "Where did Silas hide the brass key?"


def _end_of(novel, heading: str) -> int:  # noqa: F811
    return next(c.last for c in contents_of(load_document(str(novel))) if c.heading.startswith(heading))


def test_find_stops_where_the_reader_has_read(capsys, novel, cache_dir):  # noqa: F811
    six = _end_of(novel, "CHAPTER VI.")
    for upto in ("ch6", "chapter 6", str(six)):
        code, out, _ = run(capsys, "find", str(novel), QUESTION, "--upto", upto, "--limit", "0")
        shown = [int(m) for m in re.findall(r"^\[(\d+)\]", out, re.M)]
        assert code == 0 and shown and max(shown) <= six and ANSWER not in out, upto
    code, out, _ = run(capsys, "find", str(novel), QUESTION, "--upto", "ch7")
    assert code == 0 and ANSWER in out  # chapter VII read: its key is found
    code, out, _ = run(capsys, "find", str(novel), QUESTION, "--upto", "ch6", "--map", "--limit", "40")
    listed = [int(m) for m in re.findall(r"^#\d+ \[(\d+)\]", out, re.M)]
    assert code == 0 and listed and max(listed) <= six
    code, _, err = run(capsys, "find", str(novel), QUESTION, "--upto", "ch40")
    assert code == 2 and "the reading limit 'ch40'" in err and len(err.strip().splitlines()) == 1


def test_ask_reads_and_quotes_nothing_past_the_limit(capsys, novel, cache_dir, small_model):  # noqa: F811
    six = _end_of(novel, "CHAPTER VI.")
    code, out, _ = run(capsys, "ask", str(novel), QUESTION, "--backend", "scripted", "--json", "--upto", "ch6")
    trace = json.loads(out)
    assert code == 4 and trace["quotes"] and all(q["id"] <= six for q in trace["quotes"])
    assert trace["packet"] and all(p["id"] <= six for p in trace["packet"])
    code, out, _ = run(capsys, "ask", str(novel), QUESTION, "--backend", "scripted", "--json")
    assert json.loads(out)["segments_total"] > trace["segments_total"]  # the book past it is in none


def test_cast_and_search_know_only_what_was_read(capsys, novel, cache_dir):  # noqa: F811
    one = _end_of(novel, "CHAPTER I.")
    code, out, _ = run(capsys, "cast", str(novel), "--upto", "ch1", "--json", "--limit", "0")
    members = json.loads(out)["members"]
    assert code == 0 and members and all(max(m["mentions"]) <= one for m in members)
    code, out, _ = run(capsys, "search", str(novel.parent), "brass key", "--upto", str(one), "--json")
    assert code == 0 and all(h["id"] <= one for h in json.loads(out)["hits"])
    code, out, _ = run(capsys, "search", str(novel.parent), "brass key chapel", "--json")
    assert any(h["id"] > one for h in json.loads(out)["hits"])  # without the limit, past it


def test_a_name_told_past_the_limit_is_not_looked_for(capsys, cache_dir):
    """The Hound names "Mr. Stapleton, the naturalist" at [113]: a reader at [50] asking of the
    naturalist is not told the name (nor is it searched for), and a word the book holds only
    later is said to be absent up to the limit."""
    from tests.conftest import EXAMPLES

    hound = str(EXAMPLES / "the_hound_of_the_baskervilles.txt")
    code, out, _ = run(capsys, "find", hound, "who is the naturalist", "--upto", "50", "--map")
    assert code == 0 and "Stapleton" not in out and "[113]" not in out
    code, out, _ = run(capsys, "find", hound, "who is the naturalist", "--upto", "50", "--json")
    assert code == 0 and json.loads(out)["named"] == []
    code, out, _ = run(capsys, "find", hound, "who is the naturalist", "--map")
    assert code == 0 and 'the book says "Mr. Stapleton, the naturalist" [113]' in out  # no limit: told
    code, out, _ = run(capsys, "find", hound, "where did Stapleton live", "--upto", "50", "--map")
    assert code == 0 and "No paragraph up to [50] holds: stapleton" in out
