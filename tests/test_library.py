"""`cwread search`: the paragraphs of every book in a folder, ranked by BM25, through the real
CLI; the library's index kept until a book changes."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from cwread.library.catalog import Library
from cwread.library.store import STORE_VERSION
from tests.conftest import EXAMPLES, REPO, run

DATA = REPO / "tests" / "data"


@pytest.fixture
def library(tmp_path):
    root = tmp_path / "library"
    (root / "letters").mkdir(parents=True)
    shutil.copy(EXAMPLES / "the_selfish_giant.txt", root / "giant.txt")
    shutil.copy(DATA / "selfish-giant-libreoffice.pdf", root / "giant.pdf")
    (root / "letters" / "1851.txt").write_text("Dear brother, the lamp oil came late.\n", encoding="utf-8")
    (root / "letters" / "1852.txt").write_text(
        "The foundry closed; I walked home by the wall.\n", encoding="utf-8"
    )
    (root / "notes.docx").write_bytes(b"PK\x03\x04 not a book")
    (root / ".draft.txt").write_text("A hidden draft about the giant's wall.\n", encoding="utf-8")
    secret = tmp_path / "secret.txt"
    secret.write_text("The giant's wall of the secret.\n", encoding="utf-8")
    (root / "secret.txt").symlink_to(secret)
    return root


def test_search_ranks_the_paragraphs_of_every_book(capsys, library, cache_dir):
    code, out, err = run(
        capsys, "search", str(library), "the giant built a high wall", "--json", "--limit", "4"
    )
    found = json.loads(out)
    assert code == 0 and found["books"] == 3 and found["index_built"] is True
    hits = found["hits"]
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert {h["book"] for h in hits[:2]} == {"giant.txt", "giant.pdf"}
    assert all("high wall" in h["text"] for h in hits[:2])
    pdf = next(h for h in hits if h["book"] == "giant.pdf")
    assert pdf["page"] >= 1 and isinstance(pdf["id"], int)
    assert "wall of the secret" not in out and "hidden draft" not in out
    assert found["skipped"] == ["secret.txt: a link that leads out of the library's folder; not followed"]
    code, out, err = run(capsys, "search", str(library), "foundry walked home")
    assert code == 0 and f"{library}/letters 1852:1" in out and "The foundry closed" in out
    assert "reading the books" not in err  # the index is kept


def test_search_says_every_link_it_does_not_read_and_only_the_books_asked(capsys, library, cache_dir):
    """A link to nothing, a link round in a loop and a second link to a book listed already are
    said (they were passed over in silence); a search of one book's file says nothing of its
    neighbours (it said the folder's other files were not searched)."""
    (library / "dangling.txt").symlink_to(library / "gone" / "x.txt")
    (library / "loop.txt").symlink_to(library / "loop.txt")
    (library / "again.txt").symlink_to(library / "giant.txt")
    code, out, _ = run(capsys, "search", str(library), "the giant built a high wall", "--json")
    skipped = json.loads(out)["skipped"]
    assert code == 0 and "dangling.txt: a link that leads to no file; not read" in skipped
    assert "loop.txt: a link that leads to no file; not read" in skipped
    assert "again.txt: the same book as giant.txt; read once" in skipped
    code, out, _ = run(capsys, "search", str(library / "giant.txt"), "the giant built a high wall", "--json")
    assert code == 0 and json.loads(out)["skipped"] == []
    (library / "Wilde: Stories.txt").write_bytes(bytes(range(256)) * 20)  # a name holding ": ", no text
    code, out, _ = run(capsys, "search", str(library), "the giant built a high wall", "--books", "*.txt", "--json")
    assert code == 0 and any(x.startswith("Wilde: Stories.txt: ") for x in json.loads(out)["skipped"])


def test_a_changed_book_rebuilds_the_index_and_reads_only_that_book(capsys, library, cache_dir, monkeypatch):
    Library((library,)).search("wall")
    read = []
    from cwread.book.formats import pdf

    pages = pdf._pages
    monkeypatch.setattr(pdf, "_pages", lambda data, name: read.append(name) or pages(data, name))
    (library / "letters" / "1851.txt").write_text(
        "Dear brother, the lighthouse wall fell.\n", encoding="utf-8"
    )
    found = Library((library,)).search("lighthouse wall")
    assert found.built and found.hits[0].book == "letters" and found.hits[0].label == "1851:1"
    assert read == []  # the PDF's reading came from the cache


def test_unreadable_books_are_named_and_the_rest_searched(capsys, library, cache_dir):
    (library / "broken.pdf").write_bytes(b"%PDF-1.7 broken")
    code, out, err = run(capsys, "search", str(library), "garden")
    assert code == 0 and "not searched: broken.pdf: " in err and "not a readable PDF" in err
    assert "2 left out" in out  # the PDF, and the link out of the library


def test_a_file_whose_name_is_not_utf8_is_named_and_the_rest_read(capsys, library, cache_dir, tmp_path):
    """A name Python holds as surrogates (bytes that are no UTF-8) went into the index and the
    cache as text and stopped every search of the folder with exit 70; now it is left out, said
    once, and the rest read. A single file so named is read: its name is kept escaped."""
    bad = library / os.fsdecode(b"bad\xff\xfename.txt")
    shutil.copy(EXAMPLES / "the_selfish_giant.txt", bad)
    code, out, err = run(capsys, "search", str(library), "garden", "--json")
    assert code == 0 and json.loads(out)["hits"], err
    assert "bad\ufffd\ufffdname.txt: a name that is not UTF-8; rename it to read it" in json.loads(out)["skipped"]
    (library / "giant.pdf").unlink()
    code, out, err = run(capsys, "show", str(library), "giant:1")  # a folder of files read as one book
    assert code == 0 and out.startswith("[giant:1]") and "bad\ufffd\ufffdname.txt: a name that is not UTF-8" in err
    code, out, err = run(capsys, "find", str(bad), "Who built the wall?", "--map")
    assert code == 0 and "#1 [" in out, err
    code, _, err = run(capsys, "search", str(bad), "garden")  # one book's file: said as in a folder
    assert code == 2 and "bad\ufffd\ufffdname.txt: a name that is not UTF-8" in err


def test_numbers_past_sqlites_integers_mean_all(capsys, library, cache_dir):
    """--upto 2**63, --limit and -C of 10**26 went to SQLite as they were (exit 70); past any
    library's paragraphs each means "all"."""
    for extra in (["--upto", str(2**63)], ["--limit", str(10**26)], ["-C", str(10**26), "--limit", "1"]):
        code, out, err = run(capsys, "search", str(library), "garden", *extra)
        assert code == 0 and "for: garden" in out, (extra, err)


@pytest.mark.parametrize(
    "args, message",
    [
        (["search", "{root}", "  "], "the search is empty"),
        (["search", "{root}", "wall", "--limit", "-1"], "the limit must be 0 (every match) or more"),
        (["search", "{root}", "wall", "-C", "-2"], "the context must be 0 paragraphs or more"),
        (["search", "{root}/missing", "wall"], "no such folder"),
        (["search", "{empty}", "wall"], "no books under"),
        (["search", "{root}", "wall", "--books", "nomatch*"], "no book of the library matches 'nomatch*'; its books: giant.pdf, giant.txt, letters"),
        (["search", "{root}", "wall", "--books", "[a-"], "the pattern '[a-' opens a '[' at character 1 that it never closes"),
        (["cast", "{root}/giant.txt", "--limit", "-1"], "Invalid value for '--limit'"),
    ],
)
def test_bad_searches_are_one_line_and_exit_2(capsys, library, cache_dir, tmp_path, args, message):
    (tmp_path / "empty").mkdir()
    args = [a.format(root=library, empty=tmp_path / "empty") for a in args]
    code, out, err = run(capsys, *args)
    error = [line for line in err.splitlines() if line.startswith("cwread: error:")]
    assert code == 2 and out == "" and message in err and len(error) == 1 and "list_books" not in err


def test_a_fifo_in_the_library_is_named_among_the_files_left_out(capsys, library, cache_dir):
    import os

    os.mkfifo(library / "pipe.txt")
    code, out, err = run(capsys, "search", str(library), "garden", "--limit", "1")
    assert code == 0 and "pipe.txt: not a regular file; not read" in err and "2 left out" in out


def test_a_hit_is_headed_by_what_show_takes(capsys, library, cache_dir, monkeypatch):
    """Pasted after `cwread show`, a hit's head prints its paragraph; in a book of files too."""
    monkeypatch.chdir(library.parent)
    for query in ("the giant built a high wall", "foundry walked home"):
        code, out, _ = run(capsys, "search", "library", query, "--limit", "1")
        head = out.strip().split("\n\n")[1].splitlines()[0]
        path, label = head.split("  ")[0].split(" ")
        code, shown, _ = run(capsys, "show", path, label)
        hit_text = out.strip().split("\n\n")[1].splitlines()[1]
        assert code == 0 and shown.startswith(f"[{label}] ") and hit_text[:40] in shown


def test_search_takes_every_match_context_and_a_glob_of_books(capsys, library, cache_dir):
    code, out, _ = run(capsys, "search", str(library), "wall", "--limit", "0", "--json")
    every = json.loads(out)["hits"]
    assert code == 0 and len(every) > 10 and all("wall" in h["text"].lower() for h in every)
    code, out, _ = run(capsys, "search", str(library), "wall", "--limit", "0", "--books", "letters", "--json")
    assert [h["id"] for h in json.loads(out)["hits"]] == ["1852:1"]
    code, out, _ = run(capsys, "search", str(library), "wall", "--books", "*.txt", "-C", "1", "--json")
    hits = json.loads(out)["hits"]
    assert {h["book"] for h in hits} == {"giant.txt"}
    for hit in hits:
        ids = [c["id"] for c in hit["before"]] + [hit["id"]] + [c["id"] for c in hit["after"]]
        assert ids == list(range(ids[0], ids[0] + len(ids))) and 2 <= len(ids) <= 3


def test_matched_words_are_highlighted_on_a_terminal_only(capsys, library, cache_dir, monkeypatch):
    code, piped, _ = run(capsys, "search", str(library), "foundry", "--books", "letters")
    assert code == 0 and "The foundry closed" in piped and "\x1b[" not in piped
    monkeypatch.setenv("FORCE_COLOR", "1")  # Rich takes stdout for a terminal
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TERM", raising=False)
    code, shown, _ = run(capsys, "search", str(library), "foundry", "--books", "letters")
    assert code == 0 and "\x1b[1;31mfoundry\x1b[0m" in shown and "\x1b[1;31mclosed" not in shown


def test_contents_give_each_source_its_range_heading_and_pages(library, cache_dir):
    lib = Library((library,))
    assert [(b.name, b.format) for b in lib.books()] == [
        ("giant.pdf", "pdf"),
        ("giant.txt", "text"),
        ("letters", "folder"),
    ]
    _, _, chapters = lib.contents("letters")
    assert [(c.name, c.span, c.heading) for c in chapters] == [
        ("1851", "1851:1", "Dear brother, the lamp oil came late."),
        ("1852", "1852:1", "The foundry closed; I walked home by the wall."),
    ]
    _, document, [whole] = lib.contents("giant.pdf")
    assert whole.span == f"1-{len(document)}" and whole.pages == (1, 4)


def test_a_book_added_changed_or_removed_is_the_only_one_read(library, cache_dir, monkeypatch):
    lib = Library((library,))
    lib.search("wall")
    read: list[str] = []
    opened = Library.open
    monkeypatch.setattr(Library, "open", lambda self, book: read.append(book.name) or opened(self, book))
    (library / "added.txt").write_text("The lantern swung over the harbour wall.\n", encoding="utf-8")
    (library / "giant.txt").write_text("A new giant, a new wall, nothing more.\n", encoding="utf-8")
    (library / "giant.pdf").unlink()
    found = Library((library,)).search("harbour lantern wall", limit=0)
    assert sorted(read) == ["added.txt", "giant.txt"] and found.built
    assert {h.book for h in found.hits} == {"added.txt", "giant.txt", "letters"}
    assert found.hits[0].book == "added.txt" and found.books == 3
    read.clear()
    again = Library((library,)).search("harbour lantern wall", limit=0)
    assert read == [] and not again.built and [h.text for h in again.hits] == [h.text for h in found.hits]


def test_an_interrupted_build_keeps_the_books_it_finished(library, cache_dir, monkeypatch):
    """Ctrl-C while the second book is read: the next search reads only the books not yet in."""
    read: list[str] = []
    opened = Library.open

    def interrupted(self, book):
        if len(read) == 1:
            raise KeyboardInterrupt
        read.append(book.name)
        return opened(self, book)

    monkeypatch.setattr(Library, "open", interrupted)
    with pytest.raises(KeyboardInterrupt):
        Library((library,)).search("wall")
    first = list(read)
    monkeypatch.setattr(Library, "open", lambda self, book: read.append(book.name) or opened(self, book))
    found = Library((library,)).search("wall", limit=0)
    assert len(first) == 1 and first[0] not in read[1:] and len(read) == 1 + 2
    assert found.books == 3 and found.hits


def test_two_searches_building_at_once_both_answer(library, cache_dir):
    """Two processes, one empty index: each waits for the other's book, neither fails."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "CWREAD_CACHE_DIR": str(cache_dir)}
    command = [sys.executable, "-m", "cwread", "search", str(library), "giant wall", "--json"]
    procs = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    hits = [[(h["book"], h["id"]) for h in json.loads(out)["hits"]] for out, _ in outs]
    assert hits[0] == hits[1] and hits[0]


def test_a_damaged_index_is_rebuilt(library, cache_dir):
    lib = Library((library,))
    lib.search("wall")
    path = lib.store().path
    lib.store().close()
    path.write_bytes(b"not a database at all" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    found = Library((library,)).search("wall")
    assert found.built and found.hits


CALIBRE = DATA / "calibre"  # made by Calibre 6.13's calibredb add and add_format (tests/data/README.md)


@pytest.fixture
def calibre_library(tmp_path):
    """A copy of the fixture, Calibre's metadata.db unzipped (kept gzipped: mostly empty pages)."""
    import gzip

    root = tmp_path / "Calibre Library"
    shutil.copytree(CALIBRE, root)
    packed = root / "metadata.db.gz"
    (root / "metadata.db").write_bytes(gzip.decompress(packed.read_bytes()))
    packed.unlink()
    return root


def test_a_calibre_library_is_one_book_a_folder_with_its_opf(capsys, calibre_library, cache_dir):
    lib = Library((calibre_library,))
    books = {b.name: b for b in lib.books()}
    assert set(books) == {
        "Mary Keeper/Letters from the Lighthouse (2)",
        "Oscar Wilde/The Selfish Giant (1)",
        "Unknown Hand/A Note (3)",
    }
    giant = books["Oscar Wilde/The Selfish Giant (1)"]
    assert giant.format == "epub" and giant.path.suffix == ".epub"  # EPUB over the text beside it
    assert giant.about == {
        "title": "The Selfish Giant",
        "author": "Oscar Wilde",
        "series": None,
        "note": None,
    }
    assert books["Mary Keeper/Letters from the Lighthouse (2)"].about["series"] == "Coast Letters #2"
    code, out, _ = run(capsys, "search", str(calibre_library), "lighthouse keeper", "--json")
    hit = json.loads(out)["hits"][0]
    assert code == 0 and hit["title"] == "Letters from the Lighthouse" and hit["author"] == "Mary Keeper"
    code, out, _ = run(
        capsys, "search", str(calibre_library), "garden wall", "--books", "oscar wilde", "--limit", "1"
    )
    assert code == 0 and "(The Selfish Giant, Oscar Wilde)" in out
    path, label = out.strip().split("\n\n")[1].splitlines()[0].split("  ")[0].rsplit(" ", 1)
    code, shown, _ = run(capsys, "show", path.strip("'"), label)  # the head pastes into show
    assert code == 0 and "high wall" in shown


def test_a_calibre_book_whose_opf_is_missing_or_damaged_is_named_by_its_folders(calibre_library, cache_dir):
    (calibre_library / "Unknown Hand" / "A Note (3)" / "metadata.opf").write_text(
        "<package><metadata>", encoding="utf-8"
    )
    (calibre_library / "Mary Keeper" / "Letters from the Lighthouse (2)" / "metadata.opf").unlink()
    books = {b.name: b.about for b in Library((calibre_library,)).books()}
    note = books["Unknown Hand/A Note (3)"]
    assert note["title"] == "A Note" and note["author"] == "Unknown Hand" and "cannot be read" in note["note"]
    letters = books["Mary Keeper/Letters from the Lighthouse (2)"]
    assert letters["title"] == "Letters from the Lighthouse" and "has no metadata.opf" in letters["note"]
    found = Library((calibre_library,)).search("lamp oil lighthouse")
    assert found.hits[0].about["note"] == letters["note"]


def test_what_earlier_versions_kept_is_swept_and_the_index_kept(library, cache_dir):
    old = cache_dir / "library" / "ab" / "abcdef"
    old.mkdir(parents=True)
    (old / "texts.bin").write_bytes(b"x" * 1000)
    (cache_dir / "library" / "catalog-0123.json").write_text("{}")
    (cache_dir / "library" / "index-v0-0123.sqlite").write_bytes(b"old")
    lib = Library((library,))
    lib.search("wall")
    left = sorted(p.name for p in (cache_dir / "library").iterdir())
    assert all(name.startswith(f"index-v{STORE_VERSION}-") for name in left)
    assert lib.store().path.name in left


def test_search_into_a_pipe_prints_whole_paragraphs(capsys, tmp_path, cache_dir):
    from tests.conftest import run

    shelf = tmp_path / "shelf"
    shelf.mkdir()
    long = " ".join(["The keeper walked the long gallery and counted the lamps one by one."] * 25)
    (shelf / "keeper.txt").write_text(f"{long} At the far end hung the zyzzyva lantern.\n", encoding="utf-8")
    code, out, _ = run(capsys, "search", str(shelf), "zyzzyva")
    assert code == 0 and "hung the zyzzyva lantern." in out  # past the 600 characters a terminal shows


def test_search_on_one_book_file_searches_that_book_alone(capsys, library, cache_dir):
    book = library / "giant.txt"  # the PDF beside it holds the same words
    code, out, _ = run(capsys, "search", str(book), "wall", "--limit", "0", "--json")
    hits = json.loads(out)["hits"]
    assert code == 0 and hits and {h["book"] for h in hits} == {"giant.txt"}
    code, out, _ = run(capsys, "search", str(book), "wall", "--limit", "1")
    assert code == 0 and f"{library}/giant.txt " in out.replace("'", "")
    code, _, err = run(capsys, "search", str(book), "wall", "--books", "*")
    assert code == 2 and "give the folder, not a book" in err


def test_search_on_a_file_reads_that_file_alone(capsys, library, cache_dir):
    """`search FILE` indexes the file, not every book of its folder (the folder's other books
    are read when the folder is searched)."""
    code, out, _ = run(capsys, "search", str(library / "giant.txt"), "high wall", "--json")
    found = json.loads(out)
    assert code == 0 and found["books"] == 1 and {h["book"] for h in found["hits"]} == {"giant.txt"}
    code, out, _ = run(capsys, "search", str(library), "foundry", "--json")
    found = json.loads(out)
    assert code == 0 and found["index_built"] is True and found["books"] == 3  # the rest read now


def test_a_quoted_phrase_is_matched_as_written(capsys, tmp_path, cache_dir):
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    (shelf / "dock.txt").write_text("He stretched out his arms toward the green light at the end of the dock.\n", encoding="utf-8")
    (shelf / "lamp.txt").write_text("The light of the lamp was green and dim, and no one came to the door.\n", encoding="utf-8")
    code, out, _ = run(capsys, "search", str(shelf), '"green light"', "--json")
    assert code == 0 and [h["book"] for h in json.loads(out)["hits"]] == ["dock.txt"]
    code, out, _ = run(capsys, "search", str(shelf), "green light", "--json")  # unquoted: any of the words
    assert code == 0 and {h["book"] for h in json.loads(out)["hits"]} == {"dock.txt", "lamp.txt"}
    code, out, _ = run(capsys, "search", str(shelf), '“the end of the dock” arms', "--json")
    assert code == 0 and [h["book"] for h in json.loads(out)["hits"]] == ["dock.txt"]


def test_show_search_and_contents_into_a_pipe_are_bounded_and_say_what_they_left_out(capsys, tmp_path, cache_dir):
    """`show 1-500`, `search -C 999999` and a contents of many chapters printed all into a pipe
    (88,606 characters; 4 MB); now up to --max-chars (15,000 by default), then a line naming
    what is left out; 0: no bound."""
    root = tmp_path / "shelf"
    root.mkdir()
    chapters = [f"CHAPTER {n}\n\n" + "".join(f"The keeper counted {n * 10 + i} gulls over the rock.\n\n" for i in range(10))
                for n in range(1, 61)]  # fmt: skip
    book = root / "keeper.txt"
    book.write_text("".join(chapters), encoding="utf-8")
    code, out, _ = run(capsys, "show", str(book), "1-660")
    assert code == 0 and len(out) < 15_200 and out.rstrip().splitlines()[-1].startswith("Left out past 15,000 characters (--max-chars): ")
    assert out.rstrip().endswith("-660.")
    code, out, _ = run(capsys, "show", str(book), "1-660", "--max-chars", "0")
    assert code == 0 and "[660] " in out and "Left out" not in out
    code, out, _ = run(capsys, "search", str(root), "gulls", "-C", "999999", "--limit", "2", "--max-chars", "3000")
    assert code == 0 and len(out) < 3_400 and "(its context cut to " in out and "Left out past 3,000 characters" in out
    code, out, _ = run(capsys, "show", str(book), "1-3,400,600", "--max-chars", "60")  # a span names only a run
    assert out.splitlines()[-1] == "Left out past 60 characters (--max-chars): 4 paragraphs: 2; 3; 400; 600."
    code, out, _ = run(capsys, "show", str(book), "1,600", "--max-chars", "60")
    assert out.splitlines()[-1] == "Left out past 60 characters (--max-chars): 1 paragraph: 600."
    # a first paragraph alone past the bound is cut inside at a word, its id kept, and says so
    code, out, _ = run(capsys, "show", str(book), "2", "--max-chars", "24")
    assert code == 0 and out.splitlines() == ["[2] The keeper …", "(cut at 10 of its 42 characters, within --max-chars)"]
    code, out, _ = run(capsys, "show", str(book), "2-3", "--max-chars", "24")
    assert out.splitlines()[-1] == "Left out past 24 characters (--max-chars): 1 paragraph: 3."
    code, out, _ = run(capsys, "search", str(book), "gulls", "-C", "3", "--limit", "1", "--max-chars", "400")
    assert re.search(r"\(its context cut to [12] paragraphs? before it and [12] after, within 400 characters", out)
    code, out, _ = run(capsys, "contents", str(book), "--max-chars", "200")
    assert code == 0 and out.splitlines()[-1].startswith("Left out past 200 characters (--max-chars): ")
    code, out, _ = run(capsys, "find", str(book), "How many gulls did the keeper count?", "--map", "--limit", "0")
    assert code == 0 and sum(line.startswith("#") for line in out.splitlines()) > 100  # 0: all, as the help says (8 before)
    assert out.splitlines()[-1].startswith("Left out past 15,000 characters (--max-chars): ")
    code, out, _ = run(capsys, "find", str(book), "How many gulls did the keeper count?", "--max-chars", "1")
    assert code == 0 and "(cut at 0 of its 42 characters" in out  # "cut at 5": its id was counted
