"""`cwread contents`: a book's chapters from its headings, each with its paragraph range as
`show` takes it, for a text, an EPUB, a PDF and a folder, through the real CLI."""

import json
from pathlib import Path

from tests.conftest import run
from tests.test_ebook import make_epub

DATA = Path(__file__).parent / "data"
GUTENBERG = (
    "The Project Gutenberg eBook of The Keeper\n\n"
    "*** START OF THE PROJECT GUTENBERG EBOOK THE KEEPER ***\n\n"
    "THE KEEPER\n\n"
    "CHAPTER I. THE ROCK\n\n"
    "Martha Quill kept the lighthouse on Gannet Rock for thirty years, and she never let it go dark.\n\n"
    "Every Sunday the supply boat brought flour, lamp oil and letters from her brother inland.\n\n"
    "CHAPTER II. THE STORM\n\n"
    "One winter a storm smashed the lantern glass, and Martha held a sheet against the wind all night.\n\n"
    "*** END OF THE PROJECT GUTENBERG EBOOK THE KEEPER ***\n\n"
    "Updated editions will replace the previous one.\n"
)


def contents(capsys, book) -> tuple[int, list[dict], str]:
    code, out, _ = run(capsys, "contents", str(book), "--json")
    view_code, view, _ = run(capsys, "contents", str(book))
    assert view_code == code
    return code, json.loads(out)["contents"], view


def test_a_texts_chapters_with_its_front_and_back_matter(capsys, tmp_path):
    book = tmp_path / "keeper.txt"
    book.write_text(GUTENBERG, encoding="utf-8")
    code, entries, view = contents(capsys, book)
    assert code == 0
    assert [(e["paragraphs"], e["heading"], e["wrapping"]) for e in entries] == [
        ("1-2", "The Project Gutenberg eBook of The Keeper", "front matter"),
        ("3-6", "THE KEEPER / CHAPTER I. THE ROCK", None),
        ("7-8", "CHAPTER II. THE STORM", None),
        ("9-10", "*** END OF THE PROJECT GUTENBERG EBOOK THE KEEPER ***", "back matter"),
    ]
    assert view.splitlines()[1] == "3-6  THE KEEPER / CHAPTER I. THE ROCK"
    assert "(back matter)" in view.splitlines()[3]
    code, out, _ = run(capsys, "show", str(book), "7-8")  # a range as contents gives it is one show takes
    assert code == 0 and "[7] CHAPTER II. THE STORM" in out


def test_an_epubs_files_are_its_chapters(capsys, tmp_path):
    code, entries, _ = contents(capsys, make_epub(tmp_path / "keeper.epub"))
    assert code == 0
    assert [(e["source"], e["heading"]) for e in entries] == [
        ("chapter1", "Chapter One"),
        ("chapter_2", "Chapter Two"),
    ]
    assert entries[0]["paragraphs"].startswith("chapter1:1-")


def test_a_pdfs_contents_give_its_pages(capsys):
    code, entries, view = contents(capsys, DATA / "selfish-giant-libreoffice.pdf")
    assert code == 0 and entries[0]["heading"] == "THE SELFISH GIANT" and entries[0]["pages"][0] == 1
    assert "  p. 1-" in view.splitlines()[0]


def test_a_folders_files_are_cut_at_their_own_headings(capsys, tmp_path):
    folder = tmp_path / "books"
    folder.mkdir()
    (folder / "a.txt").write_text("CHAPTER I\n\nThe harbour was quiet in the mornings.\n\nCHAPTER II\n\nBoats came in.\n")
    (folder / "b.txt").write_text("Martha kept the lighthouse for thirty years.\n\nThe fishermen gave her a medal.\n")
    code, entries, _ = contents(capsys, folder)
    assert code == 0
    assert [(e["paragraphs"], e["heading"]) for e in entries] == [
        ("a:1-2", "CHAPTER I"),
        ("a:3-4", "CHAPTER II"),
        ("b:1-2", "Martha kept the lighthouse for thirty years."),  # a file that heads nothing
    ]
