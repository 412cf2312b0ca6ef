"""A Project Gutenberg text's header, licence and credits: numbered like the rest (ids stay
stable), never retrieved or quoted, and named as front or back matter by `show`."""

import json

from cwread.book.story import illustration_ids, lists_chapters, story_bounds
from tests.conftest import run

STORY = [
    "The Project Gutenberg EBook of The Lamp, by Nobody",
    "This eBook is for the use of anyone anywhere at no cost and with almost no restrictions.",
    "*** START OF THIS PROJECT GUTENBERG EBOOK THE LAMP ***",
    "Produced by Martha's nephew, who kept the silver medal safe",
    "THE LAMP",
    "Martha Quill kept the lighthouse lamp burning for thirty years.",
    "The fishermen gave her a silver medal, which she kept in a biscuit tin under her bed.",
    "Her cat slept on the warm brass of the lamp housing.",
    "End of the Project Gutenberg EBook of The Lamp, by Nobody",
    "*** END OF THIS PROJECT GUTENBERG EBOOK THE LAMP ***",
    "Updated editions will replace the previous one. The silver medal of this licence is kept by the Foundation.",
]


def test_the_story_is_what_lies_between_the_markers_less_their_credits():
    assert story_bounds(STORY) == (5, 8)
    assert story_bounds(STORY[4:8]) == (1, 4)  # no markers: the whole text
    assert story_bounds([STORY[2], STORY[9]]) == (1, 2)  # nothing between them: the whole text


def test_the_wrapping_is_never_quoted_and_show_names_it(capsys, tmp_path, cache_dir, scripted):
    book = tmp_path / "lamp.txt"
    book.write_text("\n\n".join(STORY) + "\n", encoding="utf-8")
    code, out, err = run(
        capsys, "ask", str(book), "Who kept the silver medal?", "--backend", "scripted", "--answer", "extractive", "--json"
    )
    assert code == 0, err
    trace = json.loads(out)
    read = {pid for s in trace["finder"] for pid in range(s["start"], s["end"] + 1)} | {p["id"] for p in trace["packet"]}
    assert read and read <= set(range(5, 9))  # no header, credits or licence was read
    assert trace["citations"] and all(5 <= c <= 8 for c in trace["citations"])
    code, out, err = run(capsys, "show", str(book), "3-6")
    assert code == 0 and "(front matter)" in out
    code, out, err = run(capsys, "show", str(book), "9-11", "--json")
    assert [p["wrapping"] for p in json.loads(out)["paragraphs"]] == ["back matter"] * 3


def test_a_library_search_never_hits_the_wrapping(capsys, tmp_path, cache_dir):
    library = tmp_path / "books"
    library.mkdir()
    (library / "lamp.txt").write_text("\n\n".join(STORY) + "\n", encoding="utf-8")
    code, out, err = run(capsys, "search", str(library), "silver medal", "--json")
    assert code == 0, err
    hits = json.loads(out)["hits"]
    assert hits and all(5 <= h["paragraph"] <= 8 for h in hits)


CONTENTS = (
    "CHAPTER I. Martha Quill's Lamp CHAPTER II. The Silver Medal CHAPTER III. The Cat on the Brass "
    "CHAPTER IV. The Storm"
)


def test_a_list_of_chapters_is_contents_and_a_story_that_names_one_is_not():
    assert lists_chapters(CONTENTS)
    assert lists_chapters("Phase the First: The Maiden Chapter I Chapter II Chapter III")
    assert lists_chapters("PART I—The Tragedy Chapter I—The Warning Chapter II—Holmes")
    assert not lists_chapters("In Chapter I she lit the lamp; in the next she did not.")
    assert not lists_chapters("For my part I think it, and a letter I wrote said so, and the book I read.")


def test_a_table_of_contents_is_never_retrieved_or_quoted_and_show_names_it(capsys, tmp_path, cache_dir, scripted):
    """It names what the question asks about (Martha Quill, the silver medal) and says nothing of
    it: the answer comes from the story."""
    book = tmp_path / "lamp.txt"
    book.write_text("\n\n".join([*STORY[:5], CONTENTS, *STORY[5:]]) + "\n", encoding="utf-8")
    code, out, err = run(
        capsys, "ask", str(book), "Who kept the silver medal?", "--backend", "scripted", "--answer", "extractive", "--json"
    )
    assert code == 0, err
    trace = json.loads(out)
    read = {pid for s in trace["finder"] for pid in range(s["start"], s["end"] + 1)} | {p["id"] for p in trace["packet"]}
    assert read and 6 not in read and read <= set(range(5, 10))
    assert trace["citations"] and 6 not in trace["citations"]
    code, out, err = run(capsys, "show", str(book), "6", "--json")
    assert code == 0 and json.loads(out)["paragraphs"][0]["wrapping"] == "contents"


PROSE = "She trimmed the wick and wound the clock, as she had done every night for thirty years."


def test_a_gutenberg_work_opens_at_its_first_chapter_where_prose_follows_the_heading():
    """What comes before (title page, contents, an editor's preface naming every character) is
    front matter; a contents entry (headings after it) is not the opening, nor is a heading
    deep in the book, nor a text without Project Gutenberg's markers."""
    head, tail = STORY[:3], STORY[9:]
    body = [PROSE] * 100
    front = ["THE LAMP", "Contents", "CHAPTER I. The Lamp", "CHAPTER II. The Medal", "PREFACE.", "Martha Quill is the best of heroines, the critic wrote."]
    texts = [*head, *front, "CHAPTER I. The Lamp", PROSE, *body, *tail]
    assert story_bounds(texts) == (len(head) + len(front) + 1, len(texts) - len(tail))
    prologue = [*head, "THE LAMP", "PROLOGUE", "THE STORM (1799):", "I", "I write these lines from the rock, to my sister in Penzance.", *body, *tail]
    assert story_bounds(prologue)[0] == len(head) + 2  # short prose after the heading still opens it
    late = [*head, "THE LAMP", *body, "CHAPTER I. The Lamp", PROSE, *body, *tail]
    assert story_bounds(late)[0] == len(head) + 1  # a first heading past the first tenth: the title stays
    unwrapped = ["THE LAMP", "PREFACE.", PROSE, "CHAPTER I. The Lamp", PROSE, *body]
    assert story_bounds(unwrapped) == (1, len(unwrapped))


def test_an_illustrations_caption_is_an_aside_to_its_closing_bracket():
    """Project Gutenberg's "[Illustration: ...]" repeats a line of the story with a page number:
    never retrieved or quoted. Its caption may run on over paragraphs to its closing bracket; one
    never closed marks its opening paragraph alone."""
    texts = [
        "[Illustration:",
        "“He came down to see the place”",
        "[_Copyright 1894 by George Allen._]]",
        PROSE,
        "[Illustration]",
        PROSE,
        "[Illustration: “I’m the tallest”]",
        "[Illustration: a bracket never closed",
        PROSE,
        PROSE,
        PROSE,
        PROSE,
        "The keeper wrote [in pencil] of an [Illustration] she had seen.",
    ]
    assert illustration_ids(texts, 1, len(texts)) == [1, 2, 3, 5, 7, 8]


def test_a_caption_is_never_quoted_and_show_names_it(capsys, tmp_path, cache_dir, scripted):
    book = tmp_path / "lamp.txt"
    caption = ["[Illustration:", "“Martha Quill kept the silver medal”", "[_Copyright 1894._]]"]
    book.write_text("\n\n".join([*STORY[:5], *caption, *STORY[5:]]) + "\n", encoding="utf-8")
    code, out, err = run(
        capsys, "ask", str(book), "Who kept the silver medal?", "--backend", "scripted", "--answer", "extractive", "--json"
    )
    assert code == 0, err
    trace = json.loads(out)
    read = {pid for s in trace["finder"] for pid in range(s["start"], s["end"] + 1)} | {p["id"] for p in trace["packet"]}
    assert read and not read & {6, 7, 8} and trace["citations"] and not set(trace["citations"]) & {6, 7, 8}
    code, out, err = run(capsys, "show", str(book), "6-9", "--json")
    assert [p["wrapping"] for p in json.loads(out)["paragraphs"]] == ["illustration"] * 3 + [None]


def test_what_reads_as_the_story_is_kept():
    """A caption's paragraph that runs on into the story, prose naming three parts, and an opening
    the author left unheaded before a first "LETTER I." are the story's."""
    assert illustration_ids(["[Illustration: a map] Martha Quill kept the silver medal in a biscuit tin."], 1, 1) == []
    assert not lists_chapters("The plan had three steps. Part One was the engine, Part Two the hull, and Part Three the crew.")
    assert not lists_chapters("Book I of the Iliad, Book II and Book III were on the shelf, the tutor said.")
    head, tail = STORY[:3], STORY[9:]
    unheaded = [*head, "THE LAMP", *[PROSE] * 5, "LETTER I.", *[PROSE] * 100, *tail]
    assert story_bounds(unheaded)[0] == len(head) + 1
