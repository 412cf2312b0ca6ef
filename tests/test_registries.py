"""A new format is one module and one registry line: a toy one, registered here, is found in a
folder and a library, read, cited by its name and named in the help, with nothing else changed."""

from __future__ import annotations

import json

import pytest

from cwread.book import formats
from cwread.book.formats.base import Reader, Reading, part_from_text
from tests.conftest import run


def _read_toy(data: bytes, name: str, encoding: str | None, max_bytes: int) -> Reading:
    """A toy format: paragraphs are lines that start with '~'."""
    lines = [line[1:].strip() for line in data.decode("utf-8").splitlines() if line.startswith("~")]
    return Reading((part_from_text("", name, "\n\n".join(lines)),), "utf-8")


TOY = Reader("toy", lambda data, name: name.endswith(".toy"), _read_toy, cached_from=None, suffixes=("toy",), label="Toy")


@pytest.fixture
def toy_format(monkeypatch):
    monkeypatch.setattr(formats, "READERS", list(formats.READERS))
    formats.register(TOY)
    yield TOY


def test_a_toy_format_registered_in_one_line_is_read_everywhere(capsys, tmp_path, cache_dir, toy_format):
    from cwread.book.model import source_name
    from cwread.library.catalog import Library

    shelf = tmp_path / "shelf"
    (shelf / "letters").mkdir(parents=True)
    (shelf / "log.toy").write_text("header\n~The keeper lit the lamp.\nnoise\n~The ship came in at dawn.\n", encoding="utf-8")
    (shelf / "letters" / "a.toy").write_text("~Dear brother, the lamp is lit.\n", encoding="utf-8")
    assert source_name("letters/a.toy") == "letters/a" and "Toy" in formats.format_names()
    books = {b.name: b.kind for b in Library((shelf,)).books()}
    assert books == {"letters": "folder", "log.toy": "toy"}
    code, out, _ = run(capsys, "show", str(shelf / "log.toy"), "2")
    assert code == 0 and out.startswith("[2] The ship came in at dawn.")
    code, out, _ = run(capsys, "show", str(shelf / "letters"), "a:1")
    assert code == 0 and "Dear brother" in out
    code, out, _ = run(capsys, "search", str(shelf), "lamp", "--json")
    assert code == 0 and {h["book"] for h in json.loads(out)["hits"]} == {"log.toy", "letters"}
