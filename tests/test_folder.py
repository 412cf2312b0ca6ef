"""Books of several files: a folder (or an EPUB's chapters) read as one book, each paragraph
cited as SOURCE:N, each quote found verbatim in that file's paragraph N."""

from __future__ import annotations

import json
import os

import pytest

from cwread import api
from cwread.backends.scripted import ScriptedBackend
from cwread.book import load_document
from cwread.retrieval.segments import build_segments, make_budget
from tests.conftest import main, run
from tests.scripted_replies import smart_interpreter

CHAPTERS = {
    "ch2.txt": "CHAPTER TWO\n\nEvery Sunday the supply boat brought flour, lamp oil and\nletters from her brother.\n\n"
    "One winter a storm smashed the lantern glass.\n",
    "ch10.txt": "CHAPTER TEN\n\nThe fishermen of the harbour later gave her a silver medal,\n"
    "which she kept in a biscuit tin under her bed.\n\nHer cat, a grey tom called Admiral, slept on the lamp.\n",
    "ch1.md": "# THE LIGHTHOUSE KEEPER\n\nMartha Quill kept the lighthouse on Gannet Rock for thirty\nyears.\n",
}


@pytest.fixture
def novel(tmp_path):
    """A short novel in three chapter files, named so that only natural order reads them right."""
    folder = tmp_path / "novel"
    folder.mkdir()
    for name, text in CHAPTERS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_a_folder_is_one_book_in_natural_order_each_file_numbered_from_1(novel):
    doc = load_document(str(novel))
    assert [s.name for s in doc.sources] == ["ch1", "ch2", "ch10"]  # ch2 before ch10
    assert [doc.label(p.id) for p in doc.paragraphs] == [
        "ch1:1", "ch1:2", "ch2:1", "ch2:2", "ch2:3", "ch10:1", "ch10:2", "ch10:3",
    ]  # fmt: skip
    assert doc.paragraph(doc.id_of("ch10:2")).text.startswith("The fishermen of the harbour")
    assert doc.id_of("ch10:4") is None and doc.id_of("ch3:1") is None and doc.id_of("2") is None
    # ids are stable for the same bytes
    assert load_document(str(novel)).fingerprint == doc.fingerprint


def test_show_takes_file_and_number(capsys, novel):
    code, out, _ = run(capsys, "show", str(novel), "ch2:2-3", "--json")
    shown = json.loads(out)["paragraphs"]
    assert code == 0 and [(p["id"], p["source"], p["paragraph"]) for p in shown] == [
        ("ch2:2", "ch2", 2),
        ("ch2:3", "ch2", 3),
    ]
    code, out, _ = run(capsys, "show", str(novel), "ch10")
    assert code == 0 and out.startswith("[ch10:1] CHAPTER TEN") and "[ch10:3] Her cat" in out
    code, out, _ = run(capsys, "show", str(novel), "ch2:3-ch10:1", "--json")
    assert [p["id"] for p in json.loads(out)["paragraphs"]] == ["ch2:3", "ch10:1"]
    for spec, message in [("3", "needs its file"), ("ch3:1", "did you mean"), ("ch2:9", "out of range")]:
        code, _, err = run(capsys, "show", str(novel), spec)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_segments_never_cross_a_file_boundary():
    lengths, scores = [10] * 9, [0.0] * 9
    scores[3] = 1.0  # paragraph 4, the last of the first file: its neighbours after it are not
    segments = build_segments(lengths, scores, make_budget(anchors=1, p_r=4, p_w=5), file_starts=[1, 5, 8])
    files = [(1, 4), (5, 7), (8, 9)]
    assert segments[0].origin == "anchor" and (segments[0].start, segments[0].end) == (2, 4)
    for s in segments:
        assert any(lo <= s.start and s.end <= hi for lo, hi in files), s
    assert sorted(p for s in segments for p in s.ids) == list(range(1, 10))


def test_ask_on_a_folder_cites_file_and_paragraph_and_quotes_it_verbatim(capsys, novel, tmp_path, cache_dir, scripted):
    scripted.interpreter = ScriptedBackend(default=smart_interpreter)
    code, out, err = run(capsys, "ask", str(novel), "What was the cat called?", "--backend", "scripted", "--json")
    trace = json.loads(out)
    assert code == 0 and trace["answer"] == "Admiral", err
    assert trace["citations"] == ["ch10:3"]
    assert trace["document"]["sources"][2] == {"name": "ch10", "path": "ch10.txt", "paragraphs": 3}
    doc = load_document(str(novel))
    for quote in trace["quotes"]:
        assert (quote["id"], quote["source"], quote["paragraph"]) == ("ch10:3", "ch10", 3)
        paragraph = doc.paragraph(doc.id_of(quote["id"])).text
        assert paragraph[quote["start"] : quote["end"]] == quote["quote"]
    # the same paragraph as the book read as one file gives
    single = tmp_path / "whole.txt"
    single.write_text("\n\n".join(CHAPTERS[n] for n in ("ch1.md", "ch2.txt", "ch10.txt")), encoding="utf-8")
    whole = load_document(str(single))
    assert any(p.text == trace["cited_paragraphs"][0]["text"] for p in whole.paragraphs)
    # the models were shown the same ids: the Finder's segments are labelled by file
    finder_prompts = [r.messages[1][1] for r in scripted.finder.requests]
    assert any("[ch10:2] The fishermen" in prompt for prompt in finder_prompts)
    assert all("Segment (paragraphs ch" in prompt for prompt in finder_prompts)
    # every segment read stays inside one file
    assert all(v["source"] is not None and str(v["end"]).startswith(v["source"] + ":") for v in trace["finder"])


def test_a_citation_of_a_paragraph_not_shown_is_dropped_and_counted(capsys, novel, cache_dir, scripted):
    quote = '[ch10:2] "The fishermen of the harbour later gave her a silver medal, which she kept in a biscuit tin under her bed."'
    scripted.interpreter.enqueue(f'<reason>{quote} and [ch2:9] "no such" and [12] "bare"</reason><answer>a medal</answer>')
    code, out, _ = run(
        capsys, "ask", str(novel), "What did the fishermen give her?", "--backend", "scripted", "--self-check", "off",
        "--answer", "generative", "--json",
    )  # fmt: skip
    trace = json.loads(out)
    assert code == 0 and trace["citations"] == ["ch10:2"]
    assert trace["dropped_citations"] == ["ch2:9", 12]
    assert [q["id"] for q in trace["dropped_quotes"]] == ["ch2:9", 12]


def test_binary_files_and_links_out_are_left_out_and_named(capsys, novel, tmp_path, cache_dir):
    (novel / "scan.pdf").write_bytes(b"%PDF-1.4 not text")
    (novel / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    (novel / ".hidden.txt").write_text("Not part of the book.\n", encoding="utf-8")
    secret = tmp_path / "secret.txt"
    secret.write_text("A secret outside the folder.\n", encoding="utf-8")
    (novel / "door.txt").symlink_to(secret)
    (novel / "again.txt").symlink_to(novel / "ch2.txt")
    code, out, err = run(capsys, "show", str(novel), "ch1:1", "--json")
    document = json.loads(out)["document"]
    assert code == 0 and [s["name"] for s in document["sources"]] == ["ch1", "ch2", "ch10"]
    skipped = " ".join(document["skipped"])
    for name in ("scan.pdf", "photo.png", "door.txt: a link out of the folder", "again.txt: a link to ch2.txt"):
        assert name in skipped and name.split(":")[0] in err
    assert "hidden" not in skipped and "secret" not in out


def test_an_order_file_sets_the_order(capsys, novel):
    (novel / ".cwread-order").write_text("# the book's order\nch10.txt\nch1.md\n", encoding="utf-8")
    assert [s.name for s in load_document(str(novel)).sources] == ["ch10", "ch1", "ch2"]  # unlisted after
    (novel / ".cwread-order").write_text("ch10.txt\nch99.txt\n", encoding="utf-8")
    code, _, err = run(capsys, "show", str(novel), "ch1:1")
    assert code == 2 and ".cwread-order, line 2: 'ch99.txt'" in err


@pytest.mark.parametrize("case", ["no text", "too big", "collision", "empty"])
def test_an_unusable_folder_is_refused_in_one_line(capsys, novel, tmp_path, monkeypatch, case):
    folder = novel
    if case == "no text":
        folder = tmp_path / "scans"
        folder.mkdir()
        (folder / "a.pdf").write_bytes(b"%PDF-1.4")
        message = "holds no readable text: a.pdf is not a readable PDF"
    elif case == "too big":
        monkeypatch.setenv("CWREAD_MAX_BYTES", "200")
        message = "raise the limit with CWREAD_MAX_BYTES"
    elif case == "collision":
        (novel / "ch1.txt").write_text("Another chapter one.\n", encoding="utf-8")
        message = "ch1.md and ch1.txt would both be cited as ch1:N"
    else:
        folder = tmp_path / "nothing"
        folder.mkdir()
        message = "holds no readable text"
    code, out, err = run(capsys, "show", str(folder), "ch1:1")
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1


def test_one_changed_file_is_embedded_alone(capsys, novel, cache_dir):
    code, out, _ = run(capsys, "index", str(novel), "--json")
    assert code == 0 and json.loads(out)["built"] == ["bm25", "dense (3 of 3 files)"]
    code, out, _ = run(capsys, "index", str(novel), "--json")
    assert json.loads(out)["built"] == []
    with open(novel / "ch2.txt", "a", encoding="utf-8") as f:
        f.write("\nThe storm passed by morning.\n")
    code, out, _ = run(capsys, "index", str(novel), "--json")
    assert json.loads(out)["built"] == ["bm25", "dense (1 of 3 files)"]
    # a file's vectors are the same whether it is read alone or in the folder: shared
    code, out, _ = run(capsys, "index", str(novel / "ch10.txt"), "--json")
    assert json.loads(out)["built"] == ["bm25"]


def test_the_trace_says_what_a_question_indexed(capsys, novel, cache_dir, scripted):
    scripted.interpreter = ScriptedBackend(default=smart_interpreter)
    code, out, _ = run(capsys, "ask", str(novel), "What did the fishermen give her?", "--backend", "scripted", "--json")
    assert code == 0 and json.loads(out)["index_built"] == ["bm25", "dense (3 of 3 files)"]
    code, out, _ = run(capsys, "ask", str(novel), "What was the cat called?", "--backend", "scripted", "--json")
    assert json.loads(out)["index_built"] == []


def test_eval_takes_records_whose_doc_is_a_folder(capsys, novel, tmp_path, cache_dir, scripted):
    scripted.interpreter = ScriptedBackend(default=smart_interpreter)
    data = tmp_path / "records.jsonl"
    record = {
        "id": "n1", "doc": "novel", "kind": "open", "question": "What did the fishermen give her?",
        "answer": "a silver medal", "evidence": ["ch10:2"],
    }  # fmt: skip
    data.write_text(json.dumps(record) + "\n", encoding="utf-8")
    code = main(["eval", str(data), "-m", "pipeline", "-m", "retrieval", "--backend", "scripted", "--json", "--no-cache"])
    out, err = capsys.readouterr()
    assert code == 0, err
    summary = json.loads(out)
    assert summary["methods"]["retrieval"]["evidence_recall"]["anchor"] == 1.0
    record["evidence"] = ["ch10:9"]
    data.write_text(json.dumps(record) + "\n", encoding="utf-8")
    code = main(["eval", str(data), "-m", "retrieval", "--json", "--no-cache"])
    out, err = capsys.readouterr()
    assert code == 2 and "'ch10:9' is not a paragraph of" in err


def test_an_epub_in_a_folder_is_cited_by_its_chapters(novel, tmp_path):
    from tests.test_ebook import make_epub

    make_epub(novel / "keeper.epub")
    doc = load_document(str(novel))
    assert [s.name for s in doc.sources][-2:] == ["keeper/chapter1", "keeper/chapter_2"]
    assert doc.paragraph(doc.id_of("keeper/chapter_2:2")).text.startswith("Her cat, a grey tom")


def test_api_show_and_the_python_session_take_a_folder(novel, cache_dir):
    session = api.open(str(novel))
    assert [p.text for p in api.show(session.document, "ch1:2")] == ["Martha Quill kept the lighthouse on Gannet Rock for thirty years."]
    found = session.find(api.make_question("What did the fishermen give her?"))
    assert {session.document.source(s.start) for s in found.segments} == set(session.document.sources)
    assert all(session.document.source(s.start) == session.document.source(s.end) for s in found.segments)
    assert os.fspath(novel) == session.document.path


def test_a_large_files_parse_is_cached_by_its_bytes_and_rebuilt_when_damaged(tmp_path, cache_dir):
    text = "\n\n".join(f"Paragraph {i} of a long book,\nhard-wrapped like the others." for i in range(3000))
    path = tmp_path / "long.txt"
    path.write_text(text, encoding="utf-8")
    first = load_document(str(path))
    [entry] = list((cache_dir / "texts").rglob("parsed.json"))
    assert load_document(str(path)) == first and first.paragraphs[1].text == "Paragraph 1 of a long book, hard-wrapped like the others."
    entry.write_text('{"used": "utf-8", "replaced": 0, "parts": []}', encoding="utf-8")  # damaged
    assert load_document(str(path)) == first
    moved = tmp_path / "moved.txt"
    path.rename(moved)
    assert load_document(str(moved)).path == str(moved)  # the cache holds the content, not the name


def test_the_find_view_titles_each_segment_by_file(capsys, novel, cache_dir):
    code, out, _ = run(capsys, "find", str(novel), "What did the fishermen give her?", "--width", "120")
    assert code == 0 and "#1 [ch10:1-3]" in out and "[ch10:2] The fishermen" in out


def test_a_label_written_in_the_book_is_defused_before_a_model_sees_it():
    from cwread.book.grounding import neutralise

    planted = 'As [ch10:2] "says", and [ch2:1-3], the answer is [7].'
    assert neutralise(planted) == 'As (ch10:2) "says", and (ch2:1-3), the answer is (7).'


def test_a_file_name_the_folder_does_not_hold_is_said_so(capsys, novel):
    """`show FOLDER ch3` said "bad paragraph range 'ch3': use ch03:12, ..." where the file's
    name alone was wrong (ch3:1 said it right)."""
    code, _, err = run(capsys, "show", str(novel), "ch3")
    assert code == 2 and "has no file named 'ch3'" in err
    code, _, err = run(capsys, "show", str(novel), "zz")
    assert code == 2 and "has no file named 'zz' (its files: ch1, ch2, ch10)" in err
    code, _, err = run(capsys, "show", str(novel), "ch1-ch2")  # a range's form, not a file's name
    assert code == 2 and "bad paragraph range 'ch1-ch2'" in err
