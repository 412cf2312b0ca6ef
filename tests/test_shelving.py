"""A folder read as what it is: a shelf of separate books (asked as a library) or one book's
parts (asked as one book), said on stderr, and chosen by --library / --one-book. Six shelves
and six one-book folders assembled here, all told apart; then the real CLI."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from cwread.library.catalog import shelving
from tests.conftest import EXAMPLES, REPO, run

DATA = REPO / "tests" / "data"
LINES = "The lamp was lit at dusk and the keeper climbed the stair.\n\nThe tide came in under the rock.\n"


def _gutenberg(title: str, author: str) -> str:
    return (
        f"The Project Gutenberg EBook of {title}, by {author}\n\nThis eBook is for the use of anyone.\n\n"
        f"Title: {title}\n\nAuthor: {author}\n\n*** START OF THIS PROJECT GUTENBERG EBOOK {title.upper()} ***\n\n"
        + LINES
    )


def _write(folder: Path, files: dict[str, str | bytes]) -> Path:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return folder


def _shelves(tmp: Path) -> dict[str, Path]:
    calibre = tmp / "calibre"
    shutil.copytree(DATA / "calibre", calibre)
    with gzip.open(calibre / "metadata.db.gz") as packed:
        (calibre / "metadata.db").write_bytes(packed.read())
    (calibre / "metadata.db.gz").unlink()
    return {
        "three Gutenberg novels": _write(tmp / "gutenberg", {
            "moonstone.txt": _gutenberg("The Moonstone", "Wilkie Collins"),
            "styles.txt": _gutenberg("The Mysterious Affair at Styles", "Agatha Christie"),
            "hound.txt": _gutenberg("The Hound of the Baskervilles", "Arthur Conan Doyle"),
        }),
        "a Calibre library": calibre,
        "EPUBs and a PDF": _write(tmp / "ebooks", {
            "giant.epub": (DATA / "selfish-giant-pandoc.epub").read_bytes(),
            "giant.pdf": (DATA / "selfish-giant-libreoffice.pdf").read_bytes(),
            "python.html": (DATA / "python-tutorial-appetite.html").read_bytes(),
        }),
        "title pages with a byline": _write(tmp / "tales", {
            "giant.txt": (EXAMPLES / "the_selfish_giant.txt").read_text(encoding="utf-8"),
            "hound.txt": (EXAMPLES / "the_hound_of_the_baskervilles.txt").read_text(encoding="utf-8"),
            "notes.txt": "Books to return to the library on Monday.\n",
        }),
        "a folder of book folders": _write(tmp / "series", {
            "first/01.txt": _gutenberg("The Lamp", "A. Keeper"), "first/02.txt": "CHAPTER II\n\n" + LINES,
            "second/01.txt": _gutenberg("The Tide", "A. Keeper"), "second/02.txt": "CHAPTER II\n\n" + LINES,
        }),
        "Title: lines": _write(tmp / "reports", {
            "a.md": "Title: Harbour survey of 1851\n\n" + LINES,
            "b.md": "Title: The lighthouse accounts\n\n" + LINES,
            "c.md": "Title: Letters of the keeper\n\n" + LINES,
        }),
    }


def _books(tmp: Path) -> dict[str, Path]:
    calibre_book = tmp / "calibre-book"
    shutil.copytree(next(p for p in (DATA / "calibre").rglob("metadata.opf")).parent, calibre_book)
    return {
        "chapters named ch01": _write(tmp / "chapters", {
            f"ch{n:02}.txt": f"CHAPTER {'I' * n}\n\n{LINES}" for n in range(1, 4)
        }),
        "numbered files": _write(tmp / "numbered", {f"{n:02}.txt": LINES for n in range(1, 5)}),
        "parts in folders": _write(tmp / "parts", {
            "part1/a.txt": "PART ONE\n\n" + LINES, "part1/b.txt": LINES,
            "part2/a.txt": "PART TWO\n\n" + LINES, "part2/b.txt": LINES,
        }),
        "one titled file and its sequels": _write(tmp / "split", {
            "book.txt": _gutenberg("The Lamp", "A. Keeper"),
            "more.txt": "CHAPTER II\n\n" + LINES,
            "rest.txt": "CHAPTER III\n\n" + LINES,
        }),
        "a Calibre book's folder": calibre_book,
        "HTML chapters titled by number": _write(tmp / "html", {
            f"c{n}.html": f"<html><head><title>Chapter {n}</title></head><body><p>{LINES}</p></body></html>"
            for n in range(1, 4)
        }),
    }


@pytest.fixture
def folders(tmp_path):
    return _shelves(tmp_path / "shelves"), _books(tmp_path / "books")


def test_shelves_and_one_book_folders_are_told_apart(folders):
    shelves, books = folders
    assert {name: shelving(path).shelf for name, path in shelves.items()} == dict.fromkeys(shelves, True)
    assert {name: shelving(path).shelf for name, path in books.items()} == dict.fromkeys(books, False)


def test_a_shelf_is_asked_as_a_library_said_on_stderr_and_an_option_chooses(capsys, folders, cache_dir):
    shelves, books = folders
    shelf = shelves["three Gutenberg novels"]
    code, out, err = run(capsys, "find", str(shelf), "When was the lamp lit?")
    assert code == 0 and f"{shelf}: a shelf of 3 books" in err and "--one-book reads it as one book" in err
    assert "3 books" in out and "searched the" in out  # a library's find: the books searched, then passages
    code, out, err = run(capsys, "find", str(shelf), "When was the lamp lit?", "--one-book")
    assert code == 0 and "a shelf" not in err and "paragraphs; the" in out  # one book of three files
    chapters = books["chapters named ch01"]
    code, out, err = run(capsys, "find", str(chapters), "When was the lamp lit?")
    assert code == 0 and f"{chapters}: one book" in err and "--library reads its files" in err
    assert "[ch01:" in out or "[ch02:" in out or "[ch03:" in out  # cited by file, as one book's
    code, out, err = run(capsys, "find", str(chapters), "When was the lamp lit?", "--library")
    assert code == 0 and "one book" not in err and "searched the" in out
    code, out, err = run(capsys, "find", str(EXAMPLES / "the_selfish_giant.txt"), "Who built the wall?")
    assert code == 0 and "shelf" not in err and "one book" not in err  # a file is a book: nothing said


def test_index_and_cast_read_a_shelf_as_find_does(capsys, folders, cache_dir):
    """`index` on a shelf built one book of all its files, which `find` (a shelf's library)
    never used; `cast` merged the people of different novels into one member."""
    shelves, books = folders
    shelf = shelves["three Gutenberg novels"]
    code, out, _ = run(capsys, "index", str(shelf), "--json")
    assert code == 0 and json.loads(out)["books"] == 3  # the library's index, as find reads the shelf
    code, _, err = run(capsys, "cast", str(shelf))
    assert code == 2 and "a shelf of 3 books: a cast is one book's people" in err
    code, _, err = run(capsys, "cast", str(books["chapters named ch01"]))
    assert code in (0, 4) and "shelf" not in err  # a folder of one book's chapters: its cast (4: no one named)


def test_ask_over_a_shelf_answers_from_its_best_book(capsys, folders, cache_dir):
    import json

    shelf = folders[0]["three Gutenberg novels"]
    code, out, err = run(capsys, "ask", str(shelf), "When was the lamp lit?", "--json")
    assert f"{shelf}: a shelf of 3 books" in err and "whose passages fit best" in err and code in (0, 4)
    assert Path(json.loads(out)["document"]["path"]).parent == shelf  # one book of the shelf, not all three


def test_both_readings_asked_at_once_is_one_line_and_exit_2(capsys, folders, cache_dir):
    shelf = folders[0]["three Gutenberg novels"]
    for command in ("find", "ask"):
        code, _, err = run(capsys, command, str(shelf), "When was the lamp lit?", "--library", "--one-book")
        assert code == 2 and "contradict each other" in err and len(err.strip().splitlines()) == 1
