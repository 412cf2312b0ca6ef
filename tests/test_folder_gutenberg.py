"""A folder of Project Gutenberg files: each file's header and licence are its own front and back
matter, and every file's story is read (#78: the folder's first START and last END marker made
whole books front matter). Through the real CLI, and the MCP server over stdio."""

import json

import pytest

from cwread.book import load_document
from tests.conftest import run

BOOKS = {
    "harbour": ("THE HARBOUR", "The harbour master counted the boats each evening and wrote their names in a ledger."),
    "lighthouse": ("THE LIGHTHOUSE", "Martha Quill kept the lamp burning through the great storm of the winter."),
    "orchard": ("THE ORCHARD", "Old Tobias buried the silver spoons under the pear tree beside the orchard gate."),
}
LICENCE = "Section 1. General Terms of Use and Redistributing Project Gutenberg electronic works."


def gutenberg(title: str, fact: str) -> str:
    story = [f"{title} chapter text follows the heading, and the day goes on as days do here."] * 3
    return "\n\n".join(
        [
            f"The Project Gutenberg eBook of {title.title()}",
            "This eBook is for the use of anyone anywhere at no cost and with almost no restrictions.",
            f"*** START OF THE PROJECT GUTENBERG EBOOK {title} ***",
            title,
            "CHAPTER I.",
            *story,
            fact,
            *story,
            f"*** END OF THE PROJECT GUTENBERG EBOOK {title} ***",
            LICENCE,
            "You may copy it, give it away or re-use it under the terms of the Project Gutenberg License.",
        ]
    ) + "\n"


@pytest.fixture
def shelf(tmp_path):
    folder = tmp_path / "shelf"
    folder.mkdir()
    for name, (title, fact) in BOOKS.items():
        (folder / f"{name}.txt").write_text(gutenberg(title, fact), encoding="utf-8")
    return folder


def test_each_file_has_its_own_front_and_back_matter(shelf):
    document = load_document(str(shelf))
    for source in document.sources:
        texts = {document.label(pid): document.paragraph(pid).text for pid in range(source.first, source.last + 1)}
        wrapping = {label: document.wrapping(document.id_of(label)) for label in texts}
        assert wrapping[f"{source.name}:1"] == "front matter" and wrapping[f"{source.name}:3"] == "front matter"
        assert wrapping[f"{source.name}:5"] is None  # CHAPTER I.: the story
        assert all(wrapping[label] is None for label, text in texts.items() if "silver spoons" in text or "Martha" in text)
        assert wrapping[f"{source.name}:{len(source) - 1}"] == "back matter"  # its licence


def test_ask_find_verify_and_show_read_every_files_story(capsys, shelf, cache_dir, scripted):
    scripted.finder.size = scripted.interpreter.size = 135_000_000  # the embedded default's kind
    # separate books, so a shelf by default (test_shelving): read here as one book, on purpose
    code, out, _ = run(capsys, "ask", str(shelf), "Where did Tobias bury the silver spoons?", "--backend", "scripted", "--json", "--one-book")
    trace = json.loads(out)
    assert code == 0 and trace["citations"] == ["orchard:9"] and "pear tree" in trace["answer"]
    code, out, _ = run(capsys, "find", str(shelf), "What did the harbour master count?", "--json", "--limit", "0", "--one-book")
    found = json.loads(out)
    read = [s["text"] for s in found["segments"]]
    assert code == 0 and any("counted the boats" in text for text in read)
    assert not any(LICENCE in text or "START OF THE PROJECT" in text for text in read)
    code, out, _ = run(capsys, "verify", str(shelf), "Martha kept the lamp burning through the storm.", "--backend", "scripted", "--json")
    claim = json.loads(out)
    assert code == 4 and claim["status"] == "no-verdict"
    assert [q["source"] for q in claim["quotes"]][:1] == ["lighthouse"]
    code, out, _ = run(capsys, "show", str(shelf), "lighthouse:14")
    assert code == 0 and LICENCE in out and "(back matter)" in out


def test_the_mcp_server_reads_every_files_story(tmp_path, shelf):
    pytest.importorskip("mcp")
    from tests.test_mcp import call, server

    _, results, _ = call(
        server(tmp_path, str(shelf.parent)),
        ("find", {"book": "shelf", "question": "Where did Tobias bury the silver spoons?"}),
        ("contents", {"book": "shelf"}),
    )
    contents = results[1].structured_content
    assert "pear tree" in results[0].content[0].text and "START OF THE PROJECT" not in results[0].content[0].text
    wrapped = [(c["source"], c["wrapping"]) for c in contents["contents"] if c["wrapping"]]
    assert wrapped == [(name, kind) for name in BOOKS for kind in ("front matter", "back matter")]
