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


def test_an_html_books_own_headings_head_its_chapters_read_again_from_the_cache(capsys, tmp_path, cache_dir):
    """Headings the markup gives (h1-h6) head chapters in their own case, where the text's
    grammar alone would take "The Lamp Room" for a line; a heading tag round a long paragraph
    heads nothing. Large enough that its reading is cached: the second read keeps them."""
    filler = "".join(f"<p>Day {i} at the lighthouse passed with the lamp trimmed and the log kept.</p>\n" for i in range(900))
    markup = (
        "<html><body><h1>The Keeper</h1>\n<h2>The Lamp Room</h2>\n"
        "<p>Martha Quill kept the lighthouse on Gannet Rock for thirty years.</p>\n" + filler
        + "<h2>Storm over Gannet Rock</h2>\n<p>One winter a storm smashed the lantern glass.</p>\n"
        + "<h3>" + "A heading tag round a whole paragraph of prose, which no reader takes for a title. " * 2 + "</h3>\n"
        + "<p>Martha held a sheet against the wind all night.</p></body></html>"
    )
    book = tmp_path / "keeper.html"
    book.write_text(markup, encoding="utf-8")
    assert book.stat().st_size > 64 * 1024  # its reading is cached (cwread.book.load)
    for _ in range(2):  # read, then read again from the cache
        code, entries, _ = contents(capsys, book)
        assert code == 0
        assert [(e["paragraphs"], e["heading"]) for e in entries] == [
            ("1-903", "The Keeper / The Lamp Room"),
            ("904-907", "Storm over Gannet Rock"),
        ]
    code, out, _ = run(capsys, "find", str(book), "What did the storm smash?", "--max-chars", "2000")
    assert code == 0 and "Storm over Gannet Rock" in out


def test_phase_heads_a_chapter_as_in_a_contents_list():
    """One list of chapter words for a heading and for a contents list ("Phase the First")."""
    from cwread.book.chapters import is_heading
    from cwread.book.story import lists_chapters

    assert is_heading("Phase the First: The Maiden") and is_heading("PHASE THE SECOND")
    assert lists_chapters("Phase the First 1  Phase the Second 45  Phase the Third 98")
    assert not is_heading("a phase of the moon")


def test_a_books_chapters_are_kept_and_found_again_where_their_entry_is_bad(capsys, tmp_path, cache_dir, monkeypatch):
    """A book's chapters are kept in the cache (a novel's cost 0.1-0.2 s of every `find`): read
    back as they were found; found again where the entry is damaged, or where the same
    paragraphs are laid out otherwise (the closing-line rule reads the blank lines)."""
    import cwread.book.document as document

    book = tmp_path / "keeper.txt"
    book.write_text(GUTENBERG, encoding="utf-8")
    code, first, view = contents(capsys, book)
    [entry] = cache_dir.glob("docs/*/*/chapters-v*")
    found, real = [], document.find_chapters
    monkeypatch.setattr(document, "find_chapters", lambda *args: found.append(1) or real(*args))
    assert contents(capsys, book) == (code, first, view) and found == []  # kept
    (entry / "chapters.json").write_text("[[3, ", encoding="utf-8")  # damaged
    assert contents(capsys, book) == (code, first, view) and found == [1]
    spread = tmp_path / "spread.txt"  # the same paragraphs, three blank lines apart
    spread.write_text(GUTENBERG.replace("\n\n", "\n\n\n\n"), encoding="utf-8")
    assert contents(capsys, spread)[1] == first and found == [1, 1]


def test_a_cache_that_cannot_be_made_leaves_contents_quiet(capsys, tmp_path, monkeypatch):
    """A cache folder that cannot be made (a read-only home): `contents` keeps no chapters and
    says nothing of a cache (the rest of cwread warns once where it needs one)."""
    import errno
    import pathlib

    root = tmp_path / "no-cache"
    monkeypatch.setenv("CWREAD_CACHE_DIR", str(root))
    made = pathlib.Path.mkdir

    def mkdir(self, *args, **kwargs):
        if self == root:
            raise OSError(errno.EROFS, "Read-only file system")
        return made(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "mkdir", mkdir)
    book = tmp_path / "keeper.txt"
    book.write_text(GUTENBERG, encoding="utf-8")
    code, out, err = run(capsys, "contents", str(book))
    assert code == 0 and "CHAPTER II. THE STORM" in out and err == "" and not root.exists()
