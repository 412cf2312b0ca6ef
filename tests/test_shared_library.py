"""What a shared library's index takes apart from its server (tests/test_postgres.py has the server):
its URL read (the library's name, the server as messages name it, the password kept secret),
the settings file's copy shown without the password, books stamped by their content wherever
they lie, and the option on every command that reads a library."""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest

from cwread.environment import require_extra, shown_setting
from cwread.errors import InputError, hide_secrets
from cwread.library.digests import Digests
from cwread.library.postgres import library_url
from tests.conftest import EXAMPLES, run


def test_a_library_url_names_its_library_and_never_its_password():
    where = library_url("postgresql://reader:s3cret-Pass@db.example:5433/archive?library=cases&sslmode=require", "folder")
    assert where.name == "cases" and where.shown == "reader@db.example:5433/archive"
    assert "library=" not in where.conninfo and "sslmode=require" in where.conninfo
    assert hide_secrets("failed for s3cret-Pass") == "failed for ***"
    assert library_url("postgresql://reader@/archive?host=/run/postgresql", "shelf").name == "shelf"
    assert library_url("postgres://h/db?password=other-Secret", "x").shown == "h/db"
    assert hide_secrets("other-Secret") == "***"


def test_the_query_goes_to_the_server_as_written_but_the_library():
    where = library_url("postgresql://h/db?options=-c%20statement_timeout%3D5000&library=a%20b", "x")
    assert where.conninfo == "postgresql://h/db?options=-c%20statement_timeout%3D5000" and where.name == "a b"


@pytest.mark.parametrize(
    "url", ["mysql://h/db", "/var/lib/index.sqlite", "postgresql://h/db?library=", "postgresql://h:abc/db", "postgresql://[::1/db"]
)
def test_a_url_that_is_no_library_is_an_input_error(url):
    with pytest.raises(InputError):
        library_url(url, "folder")


def test_the_settings_file_shows_the_url_without_its_password():
    assert shown_setting("library_url", "postgresql://team:pw-9@host/db") == "postgresql://team:***@host/db"
    assert shown_setting("library_url", "postgresql://team@host/db") == "postgresql://team@host/db"
    assert shown_setting("library_url", "postgresql://h/db?password=pw-9&sslmode=require") == (
        "postgresql://h/db?password=***&sslmode=require"
    )


def test_a_book_is_stamped_by_its_content_wherever_it_lies(tmp_path):
    digests = Digests(tmp_path / "cache")
    first, second = tmp_path / "a" / "giant.txt", tmp_path / "b" / "copy.txt"
    for path in (first, second):
        path.parent.mkdir()
        shutil.copy(EXAMPLES / "the_selfish_giant.txt", path)
    assert digests.of(first, "stamp-a") == digests.of(second, "stamp-b")
    first.write_text("Another book.\n", encoding="utf-8")
    assert digests.of(first, "stamp-a") == digests.of(second, "stamp-b")  # the stamp unchanged: kept
    assert digests.of(first, "stamp-a2") != digests.of(second, "stamp-b")
    folder = tmp_path / "chapters"
    folder.mkdir()
    (folder / "ch01.txt").write_text("One.\n", encoding="utf-8")
    before = digests.of(folder, "f1")
    (folder / "ch02.txt").write_text("Two.\n", encoding="utf-8")
    assert digests.of(folder, "f2") != before


def test_a_book_that_cannot_be_read_is_never_taken_as_held(tmp_path):
    """A shared store stamps a book by its content: one that vanished or cannot be read gets a
    stamp nothing holds, so the sync reads it and says it could not."""
    from cwread.library.catalog import Library

    shelf = tmp_path / "shelf"
    shelf.mkdir()
    shutil.copy(EXAMPLES / "the_selfish_giant.txt", shelf / "giant.txt")
    library = Library((shelf,), url="postgresql://nowhere/db")
    library._digests = Digests(tmp_path / "cache")  # as store() sets it for a server's library
    book = library.books()[0]
    held = library._stamp_key(book)
    assert held.startswith("v") and held == library._stamp_key(book)
    (shelf / "giant.txt").unlink()  # gone after the listing: its stamp as listed, not yet digested
    assert library._stamp_key(replace(book, stamp=(1, 2, 3, 4))).startswith("unreadable:")


def test_a_missing_extra_says_how_to_install_it():
    with pytest.raises(InputError, match=r"needs psycopg \(no_such_module_here is missing\): pip install"):
        require_extra("no_such_module_here", "postgres", "a library on PostgreSQL needs psycopg")


@pytest.mark.parametrize("command", ["search", "find", "ask", "index", "mcp", "serve"])
def test_every_command_that_reads_a_library_takes_its_url(capsys, command):
    code, out, _ = run(capsys, command, "--help-all")
    assert code == 0 and "--library-url" in out and "CWREAD_LIBRARY_URL" in out
