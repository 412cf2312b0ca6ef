"""`cwread find` for a reader in a pipe: plain text within the width, whole passages up to a
character budget with one line naming what was left out, chapters on each passage, and the
question's words the book does not hold. Through the real CLI."""

import re

from cwread.cli.options import MAP_CANDIDATES
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


def test_max_chars_prints_whole_passages_then_a_line_each_then_names_the_rest(capsys, novel, cache_dir):  # noqa: F811
    """Within the bound: the best passages whole, the next a line each (the part of a paragraph
    that best matches, its id to show), then one line naming the rest, in rank order."""
    asked = ("find", str(novel), "What did Martha sing at the inn?", "--width", "0")
    code, bounded, _ = run(capsys, *asked, "--max-chars", "2500", "--limit", "0")
    assert code == 0
    within, _, left = bounded.rpartition("\nLeft out past 2,500 characters (--max-chars): ")
    assert len(within) <= 2500 and re.match(r"\d+ passages: #", left)
    whole, _, lined = within.partition("\nThe next passages, a line each (show one to read it whole):\n")
    printed = re.findall(r"^#(\d+)\S* \[", whole, re.M)
    lines = lined.splitlines()
    assert printed and lines and all(re.match(r"#[\d+#]+ \[[\d, -]+\].*, at \[\d+\]: \S", line) for line in lines)
    firsts = printed + [line[1:].split("+")[0].split(" ")[0] for line in lines]
    firsts += re.findall(r"(?:: |; )#(\d+)\S* \[", left)
    ranks = [int(r) for r in firsts]
    assert ranks == sorted(set(ranks)) and ranks[0] == 1  # each passage once, by rank
    assert any("*" in line for line in lines)  # the question's words marked
    code, unbounded, _ = run(capsys, *asked, "--max-chars", "0", "--limit", "0")
    assert code == 0 and "Left out" not in unbounded and "a line each" not in unbounded
    passages = int(re.search(r"(\d+) passages: ", left).group(1)) + len(printed) + len(lines)
    assert len(re.findall(r"^#\d+", unbounded, re.M)) == passages


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
    assert code == 0 and len(lines) == 1 + MAP_CANDIDATES
    assert lines[1].startswith("#1 [") and "(CHAPTER VII. THE CHAPEL)" in lines[1]
    assert "*Silas* *hid* the *brass* *key*" in lines[1]  # the answer's line first, its words marked
    assert all(re.match(r"#\d+ \[\d+\] ", line) for line in lines[1:])
    assert not any("CHAPTER" in line.split(")")[-1] for line in lines[1:])  # a heading is no candidate
    code, out, _ = run(
        capsys, "find", str(novel), "Where did Silas hide the brass key?", "--map", "--limit", "5"
    )
    assert code == 0 and len([line for line in out.splitlines() if line.startswith("#")]) == 5


def test_a_cut_keeps_the_place_it_cites(capsys, novel, cache_dir):  # noqa: F811
    """However small the bound, the first candidate's line keeps its rank and id (a cut inside
    it kept " …" alone: no place to find); a passage's paragraph keeps its [N]."""
    for max_chars in ("1", "120", "200"):
        code, out, _ = run(
            capsys, "find", str(novel), "Where did Silas hide the brass key?", "--map", "--max-chars", max_chars
        )
        first = next(line for line in out.splitlines() if line.startswith(("#", " ")))
        assert code == 0 and re.match(r"#1 \[\d+\] ", first), (max_chars, first)
        code, out, _ = run(capsys, "find", str(novel), "Where did Silas hide the brass key?", "--max-chars", max_chars)
        assert code == 0 and re.search(r"^\[\d+\] ", out, re.M), max_chars


def test_a_map_line_gives_the_best_sentence_with_its_neighbours(capsys, tmp_path, cache_dir):
    """#88 item 3: a short best sentence comes with the sentences beside it (the next one first),
    the part within MAP_PART_CHARS characters, the question's words marked."""
    from cwread.views.reading import MAP_PART_CHARS

    long_tail = " ".join(["The rain went on over the moor all that night and the next."] * 6)
    paragraphs = [
        "CHAPTER I",
        "The ferryman looked away. Tobias wasted no more words. He rowed the widow across to the "
        "island. " + long_tail,
        *(f"Paragraph {i} tells of fields, fences and the long road to the market town." for i in range(30)),
    ]
    book = tmp_path / "ferry.txt"
    book.write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    code, out, _ = run(capsys, "find", str(book), "What words did Tobias waste?", "--map", "--width", "0")
    line = next(line for line in out.splitlines() if line.startswith("#1 "))
    part = line.split("] ", 1)[1]
    assert code == 0 and "*Tobias* *wasted* no more *words*." in part
    assert "He rowed the widow across" in part and "ferryman" in part  # both neighbours fit
    assert "rain" not in part and len(part.replace("*", "")) <= MAP_PART_CHARS


def test_a_long_paragraphs_map_line_gives_its_length(capsys, tmp_path, cache_dir):
    """What a `show` of a long paragraph costs is on its map line (readers of the fourth
    benchmark showed letters of 2,000-3,000 characters unawares); a short one's line says nothing."""
    long_letter = "Tobias wrote of the ferry and the widow. " + " ".join(["The rain went on over the moor."] * 40)
    paragraphs = [
        "CHAPTER I",
        long_letter,
        "Tobias rowed the widow across to the island.",
        *(f"Paragraph {i} tells of fields, fences and the long road to the market town." for i in range(30)),
    ]
    book = tmp_path / "letter.txt"
    book.write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    code, out, _ = run(capsys, "find", str(book), "What did Tobias do with the widow?", "--map", "--width", "0")
    lines = {line.split("]")[0]: line for line in out.splitlines() if line.startswith("#")}
    assert code == 0
    assert next(line for key, line in lines.items() if key.endswith("[2")).endswith(f"[{len(long_letter):,} characters]")
    assert not next(line for key, line in lines.items() if key.endswith("[3")).endswith("characters]")


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


MILL = [
    "CHAPTER I",
    "Anna walked to the mill in the rain.",
    "“Where is the key to the granary?” she asked the miller.",
    "“Under a stone by the door,” said the miller.",
    "“Which stone?”",
    "“The grey one with the crack.”",
    "She thanked him and went home along the river.",
    "* * *",
    "The storm came later that week, and the river rose.",
    "The granary flooded before anyone could open it.",
    "CHAPTER II",
    "In the spring the miller sold the mill.",
]


def test_expand_widens_a_passage_to_the_replies_the_scene_or_n_each_side(tmp_path):
    from cwread.book import load_document
    from cwread.retrieval.passages import printed_span
    from cwread.retrieval.segments import Segment

    book = tmp_path / "mill.txt"
    book.write_text("\n\n".join(MILL) + "\n", encoding="utf-8")
    doc = load_document(str(book))
    asked = Segment(2, 4, "anchor", 1.0, (3,))
    assert printed_span(doc, asked) == (2, 4)
    assert printed_span(doc, asked, "replies") == (2, 6)  # the speech that follows, not the narration after
    assert printed_span(doc, Segment(9, 10, "anchor", 1.0, (9,)), "scene") == (
        9,
        10,
    )  # a break before, a heading after
    assert printed_span(doc, asked, "scene") == (2, 7)
    assert printed_span(doc, asked, 1) == (1, 5)


def test_expand_and_near_through_the_cli(capsys, tmp_path):
    book = tmp_path / "mill.txt"
    book.write_text("\n\n".join(MILL) + "\n", encoding="utf-8")
    code, out, _ = run(
        capsys, "find", str(book), "Where was the key to the granary?", "--expand", "scene", "--limit", "1"
    )
    assert code == 0 and "[6] “The grey one with the crack.”" in out
    code, _, err = run(capsys, "find", str(book), "Where was the key?", "--expand", "chapter")
    assert code == 2 and "--expand takes replies, scene or a number" in err

    filler = [f"Day {i}: the weather was mild and the fields were quiet." for i in range(1, 301)]
    filler[19] = "The lighthouse keeper's daughter rowed out to the wreck: who else rowed out to a wreck?"
    filler[279] = "The lighthouse keeper's daughter rowed out to the wreck."
    far = tmp_path / "days.txt"
    far.write_text("\n\n".join(filler) + "\n", encoding="utf-8")
    asked = ("find", str(far), "Who rowed out to the wreck?", "--limit")
    code, out, _ = run(capsys, *asked, "1")
    assert code == 0 and "[20] The lighthouse keeper's daughter" in out and "[280]" not in out
    code, out, _ = run(capsys, *asked, "1", "--near", "260")
    assert code == 0 and "[280] The lighthouse keeper's daughter" in out and "[20]" not in out
    code, out, _ = run(capsys, *asked, "3", "--near", "260", "--map")
    assert code == 0 and "#1 [280]" in out  # the map ranks as the passages do
    code, _, err = run(capsys, "find", str(far), "Who rowed out?", "--near", "3-9")
    assert code == 2 and "names 7 paragraphs; give one" in err


def test_passages_of_one_scene_print_together_in_story_order(tmp_path):
    from dataclasses import replace

    from cwread import api
    from cwread.retrieval.segments import Segment
    from cwread.views.reading import find_lines

    book = tmp_path / "mill.txt"
    book.write_text("\n\n".join(MILL) + "\n", encoding="utf-8")
    doc = api.open_document(str(book))
    found = api.find(doc, api.make_question("Where was the key?"))
    ranked = (
        Segment(5, 6, "anchor", 3.0, (5,)),
        Segment(9, 10, "anchor", 2.0, (9,)),
        Segment(2, 3, "anchor", 1.0, (2,)),
    )
    found = replace(found, segments=ranked)
    passages = found.printed(0)
    assert [(p.ranks, p.ids) for p in passages] == [((1, 3), (2, 3, 4, 5, 6)), ((2,), (9, 10))]
    lines = find_lines(found, passages, 0, None, 100)
    heads = [line for line in lines if line.startswith("#")]
    # #3 sits a paragraph before #1 in the same scene: printed with it, in order, the gap filled;
    # #2 is past the break ("* * *"): its own passage
    assert heads == ["#1+#3 [2-6] CHAPTER I", "#2 [9-10] CHAPTER I"]
    ids = [line.split("]")[0] for line in lines if line.startswith("[")]
    assert ids == ["[2", "[3", "[4", "[5", "[6", "[9", "[10"]


def test_a_question_of_two_parts_is_also_asked_part_by_part():
    from cwread.retrieval.fusion import build_queries, question_parts

    asked = "Who held on to the farewell letter, and why was it never sent on to him?"
    assert question_parts(asked) == ["Who held on to the farewell letter", "why was it never sent on to him"]
    assert build_queries(asked) == [asked, *question_parts(asked)]
    assert question_parts("Who ground the cup to powder, and why?") == [
        "Who ground the cup to powder, and why?"
    ]
    assert build_queries(asked, {"A": "Betty"}) == [asked, f"{asked} Betty"]  # options: no parts


def test_in_a_pipe_a_paragraph_is_one_line_that_opens_with_its_id(capsys, novel, cache_dir):  # noqa: F811
    """As ripgrep prints a match: never wrapped unless --width asks, so grep keeps each id."""
    from cwread.book import load_document

    doc = load_document(str(novel))
    asked = ("find", str(novel), "Where did Silas hide the brass key?")
    code, out, _ = run(capsys, *asked)
    printed = [line for line in out.splitlines() if line.startswith("[")]
    whole = {f"[{p.id}] {p.text}" for p in doc.paragraphs}
    assert code == 0 and len(printed) > 5 and set(printed) <= whole
    assert max(len(line) for line in printed) > 100  # wider than the 100 columns a pipe once got
    others = [line for line in out.splitlines() if line and not line.startswith(("[", "#"))]
    assert len(others) <= 3  # the head, and the line naming what was left out
    code, mapped, _ = run(capsys, *asked, "--map")
    lines = mapped.splitlines()[1:]
    assert code == 0 and lines and all(re.match(r"#\d+ \[\d+\]", line) for line in lines if line)
    code, wrapped, _ = run(capsys, *asked, "--width", "60")
    assert code == 0 and max(len(line) for line in wrapped.splitlines()) <= 60


def test_find_on_a_terminal_keeps_to_a_screenful_with_chapters(capsys, novel, cache_dir, monkeypatch):  # noqa: F811
    monkeypatch.setenv("FORCE_COLOR", "1")  # Rich takes stdout for a terminal
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TERM", raising=False)
    asked = ("find", str(novel), "Where did Silas hide the brass key?")
    code, out, _ = run(capsys, *asked)
    shown = re.sub(r"\x1b\[[0-9;]*m", "", out)
    printed, _, left = shown.partition("Left out past 60 lines (--max-chars 0 prints them all): ")
    assert code == 0 and len(printed.splitlines()) <= 60 and re.match(r"\d+ passages: #\d+ \[", left)
    titles = re.findall(r"^╭─ (#[\d+#]+) \[[\d, -]+\] (CHAPTER [A-Z]+\.)", printed, re.M)
    assert titles and titles[0][1] == "CHAPTER VII."  # each box names its chapter, as the plain text does
    assert "Silas hid the brass key" in printed and "score" not in printed and "anchor" not in printed
    named = re.findall(r"#(\d+) \[", left)
    assert int(named[0]) > max(int(r) for t in titles for r in re.findall(r"\d+", t[0]))
    code, everything, _ = run(capsys, *asked, "--max-chars", "0")
    assert code == 0 and "Left out" not in everything and len(everything.splitlines()) > 60
    code, scene, _ = run(capsys, *asked, "--expand", "scene")  # a first passage longer than a screen
    scene = re.sub(r"\x1b\[[0-9;]*m", "", scene)
    printed = scene.partition("Left out past")[0]
    assert code == 0 and len(printed.splitlines()) <= 60 and "Silas hid the brass key" in printed
    assert re.search(r"^\(more of this passage: show [\d, -]+\)$", printed, re.M)


def test_a_question_of_common_words_alone_is_said_to_be_one(capsys, tmp_path, cache_dir):
    """"who is he?" holds no word to search by: the candidates are found by its sense alone,
    and the reader is told so, not handed them as if they fit its words."""
    from tests.conftest import EXAMPLES

    giant = str(EXAMPLES / "the_selfish_giant.txt")
    code, out, _ = run(capsys, "find", giant, "who is he?", "--map")
    assert code == 0 and "The question holds only common words" in out
    for words in (("--also", "wall notice-board"), ("-o", "A=The giant built a wall", "-o", "B=The children")):
        code, out, _ = run(capsys, "find", giant, "who is he?", *words, "--map")
        assert code == 0 and "only common words" not in out, words  # the reader's words are searched
    code, out, _ = run(capsys, "find", giant, "Why did the Giant build a wall?", "--map", "--limit", "1")
    assert code == 0 and "only common words" not in out and "the 1 that fits best" in out
    hound = str(EXAMPLES / "the_hound_of_the_baskervilles.txt")
    code, out, _ = run(capsys, "find", hound, "who is the naturalist", "--map", "--upto", "1")
    assert code == 0 and "none to search" in out and "#1 [" not in out
