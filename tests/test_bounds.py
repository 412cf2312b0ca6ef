"""Bounds that bound: whatever the options, what `find`, `find --map`, `cast` and the MCP tools
print is within their character bound, plus one head and one left-out line, each capped (a
passage longer than the bound cut around its best paragraph, a paragraph longer than it cut
inside, each cut named). Through the real CLI and MCP server."""

from __future__ import annotations

import re
import shutil

import pytest

from cwread.views.reading import LINE_MOST
from tests.conftest import EXAMPLES, run

HOUND = EXAMPLES / "the_hound_of_the_baskervilles.txt"
STICK = "What did Holmes deduce from the walking stick?"
# the head, a passage's title, a cut's notes and the left-out line: each capped at LINE_MOST
OVER = 7 * LINE_MOST


def _within(out: str, bound: int) -> None:
    assert len(out) <= bound + OVER, (len(out), out[-600:])
    for line in out.splitlines():  # each line that is no paragraph's text is capped
        if not re.match(r"\[[\w:]+\] ", line):
            assert len(line) <= LINE_MOST, line[:200]


@pytest.mark.parametrize("bound", [None, 5_000, 1])
@pytest.mark.parametrize(
    "widen",
    [
        ["--expand", "100000"],  # the whole book, once (332 KB)
        ["--expand", "scene"],
        ["--expand", "replies", "--limit", "100"],
        ["--limit", "1000"],
        ["--map", "--limit", "100000"],
        ["--map"],
    ],
)
def test_find_keeps_to_its_bound_whatever_widens_it(capsys, cache_dir, widen, bound):
    args = ["find", str(HOUND), STICK, "--width", "0", *widen]
    code, out, _ = run(capsys, *args, *(["--max-chars", str(bound)] if bound is not None else []))
    assert code == 0
    _within(out, bound if bound is not None else 15_000)
    if bound == 1 and "--map" not in widen:  # one paragraph, cut inside, its id and the cut named
        assert re.search(r"^\[\d+\] .*…$", out, re.M) and "show " in out


def test_a_passage_longer_than_the_bound_is_cut_around_its_best_paragraph(capsys, cache_dir):
    code, out, _ = run(capsys, "find", str(HOUND), STICK, "--expand", "30", "--max-chars", "3000", "--width", "0")
    assert code == 0
    _within(out, 3_000)
    first = out.split("\n\n")[1]
    assert re.match(r"#1(\+#\d+)* \[\d+-\d+\]", first)
    assert re.search(r"\(more of this passage beyond --max-chars: show \d+-\d+", out)  # the paragraphs cut, to show
    printed = [int(i) for i in re.findall(r"^\[(\d+)\] ", first, re.M)]
    assert printed == list(range(printed[0], printed[-1] + 1))  # a run of whole paragraphs


def test_the_left_out_line_names_a_few_and_counts_the_rest(capsys, cache_dir):
    code, out, _ = run(capsys, "find", str(HOUND), STICK, "--limit", "1000", "--max-chars", "3000", "--width", "0")
    left = out.strip().splitlines()[-1]
    assert code == 0 and left.startswith("Left out past 3,000 characters (--max-chars): ")
    assert re.search(r"\d+ passages: #\d+.*; and [\d,]+ more\.$", left) and len(left) <= LINE_MOST
    code, out, _ = run(capsys, "cast", str(HOUND), "--limit", "0", "--max-chars", "1", "--width", "0")
    assert code == 0
    _within(out, 1)  # was a 317,052-character left-out line
    assert re.search(r"^Left out past 1 character \(--max-chars\): [\d,]+ members: .*; and [\d,]+ more\.$", out, re.M)


def test_a_library_question_keeps_to_its_bound(capsys, cache_dir, tmp_path):
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    for name in ("the_hound_of_the_baskervilles.txt", "the_selfish_giant.txt"):
        shutil.copy(EXAMPLES / name, shelf / name)
    for bound in ("1", "2000"):
        code, out, _ = run(
            capsys, "find", str(shelf), STICK, "--library", "--expand", "100", "--max-chars", bound, "--width", "0"
        )
        assert code == 0
        _within(out, int(bound))


mcp = pytest.importorskip("mcp")


def test_every_mcp_tool_keeps_to_max_chars(tmp_path):
    """find (compact, expand, a merged passage), cast, show, search and contents, at the
    smallest bound and at 5,000: each text within it (MCP find with max_chars 5,000 returned
    9,490; compact never read it; contents had no bound)."""
    from tests.test_mcp import call, server

    hound = HOUND.name
    calls = []
    for bound in (1, 5_000):
        calls += [
            ("find", {"book": hound, "question": STICK, "max_chars": bound, "expand": "scene"}),
            ("find", {"book": hound, "question": STICK, "max_chars": bound, "expand": "100000"}),
            ("find", {"book": hound, "question": STICK, "max_chars": bound, "compact": True, "limit": 100000}),
            ("find", {"question": STICK, "max_chars": bound, "expand": "50"}),
            ("cast", {"book": hound, "max_chars": bound, "limit": 100000}),
            ("show", {"book": hound, "paragraphs": "1-1546", "max_chars": bound}),
            ("search", {"query": "the stick", "max_chars": bound, "limit": 100}),
            ("contents", {"book": hound, "max_chars": bound}),
        ]
    _, results, _ = call(server(tmp_path, str(EXAMPLES)), *calls)
    for (tool, arguments), result in zip(calls, results, strict=True):
        assert not result.is_error, (tool, result.content[0].text)
        text = result.content[0].text
        assert len(text) <= arguments["max_chars"] + OVER, (tool, arguments, len(text))
        if tool != "contents" or arguments["max_chars"] == 1:
            assert "max_chars" in text or len(text) <= arguments["max_chars"], (tool, text[-300:])
    contents = results[7].structured_content
    assert contents["chapters"] > len(contents["contents"])  # those the text left out, counted
