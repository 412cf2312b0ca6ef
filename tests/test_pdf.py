"""PDF books: PDFs made by real tools (LibreOffice, GNU enscript with Ghostscript; see
tests/data/README.md) read to the text's own paragraphs, each cited by the page it is on."""

from __future__ import annotations

import json
import os
import shutil
import unicodedata

import pypdfium2 as pdfium
import pytest

from cwread.book import load_document
from cwread.book.formats import pdf, pdf_layout
from cwread.errors import InputError
from tests.conftest import EXAMPLES, REPO, run

DATA = REPO / "tests" / "data"
TEXT = EXAMPLES / "the_selfish_giant.txt"
MADE_BY = {
    "selfish-giant-libreoffice.pdf": "LibreOffice, justified, hyphenated, indented, header and page numbers",
    "selfish-giant-two-columns.pdf": "LibreOffice, the same in two columns",
    "selfish-giant-enscript.pdf": "enscript and ps2pdf, hard-wrapped Courier under a page header",
}


def plain(text: str) -> str:
    """Text as enscript's Latin-1 could set it: straight quotes, one space."""
    return " ".join(unicodedata.normalize("NFKC", text).translate(str.maketrans("“”‘’—", "\"\"''-")).split())


@pytest.mark.parametrize("name", list(MADE_BY))
def test_a_real_pdf_reads_to_the_texts_own_paragraphs(name, cache_dir):
    book = load_document(str(DATA / name))
    text = load_document(str(TEXT))
    assert [plain(p.text) for p in book.paragraphs] == [plain(p.text) for p in text.paragraphs]
    assert book.encoding == "pdf"


@pytest.mark.parametrize("name", list(MADE_BY))
def test_each_paragraph_is_cited_by_the_page_it_starts_on(name, cache_dir):
    book = load_document(str(DATA / name))
    document = pdfium.PdfDocument(str(DATA / name))
    pages = [" ".join(document[i].get_textpage().get_text_range().split()) for i in range(len(document))]
    assert [p.page for p in book.paragraphs] == sorted(p.page for p in book.paragraphs)
    assert book.paragraphs[-1].page == len(pages) > 2
    for p in book.paragraphs:
        opening = " ".join(p.text.split()[:4])
        assert opening in pages[p.page - 1], (p.id, p.page, opening)
    # the running header and the page numbers are no paragraphs of the book
    assert not any(p.text in ("The Selfish Giant", str(p.page)) or "Page " in p.text for p in book.paragraphs)


def test_show_names_paragraphs_by_page_and_json_carries_it(capsys, cache_dir):
    book = str(DATA / "selfish-giant-libreoffice.pdf")
    code, out, err = run(capsys, "show", book, "p2")
    assert code == 0 and err == ""
    on_two = [p for p in load_document(book).paragraphs if p.page == 2]
    assert out.count("p. 2 ") == len(on_two) and f"[{on_two[0].id}] p. 2 " in out
    code, out, _ = run(capsys, "show", book, "p2-3", "--json")
    shown = json.loads(out)["paragraphs"]
    assert code == 0 and {p["page"] for p in shown} == {2, 3} and shown[0]["id"] == on_two[0].id
    code, out, err = run(capsys, "show", book, "p99")
    assert code == 2 and out == "" and "no paragraph starts on page 99" in err and "pages 1-4" in err
    code, out, err = run(capsys, "show", str(TEXT), "p2")
    assert code == 2 and "has no pages (only a PDF has)" in err


def test_an_answer_quotes_the_pdf_with_page_and_paragraph(capsys, cache_dir, scripted):
    book = str(DATA / "selfish-giant-libreoffice.pdf")
    document = load_document(book)
    wall = next(p for p in document.paragraphs if "built a high wall" in p.text)
    reply = f'<reason>[{wall.id}] "So he built a high wall all round it"</reason><answer>a high wall</answer>'
    scripted.interpreter.enqueue(reply, reply)
    question = "What did the Giant build round his garden?"
    code, out, err = run(capsys, "ask", book, question, "--backend", "scripted", "--json", "--self-check", "off")
    trace = json.loads(out)
    assert code == 0, err
    quote = trace["quotes"][0]
    assert (quote["id"], quote["page"]) == (wall.id, wall.page)
    assert quote["quote"] in wall.text
    code, out, err = run(capsys, "ask", book, question, "--backend", "scripted", "--self-check", "off")
    assert f"[{wall.id}] p. {wall.page} " in out


def test_a_folder_cites_its_pdf_by_file_page_and_paragraph(capsys, tmp_path, cache_dir):
    folder = tmp_path / "shelf"
    folder.mkdir()
    shutil.copy(DATA / "selfish-giant-enscript.pdf", folder / "giant.pdf")
    (folder / "notes.txt").write_text("A note on the giant.\n", encoding="utf-8")
    book = load_document(str(folder))
    assert [s.name for s in book.sources] == ["giant", "notes"]
    code, out, _ = run(capsys, "show", str(folder), "giant:p3", "--json")
    shown = json.loads(out)["paragraphs"]
    assert code == 0 and shown and all(p["page"] == 3 and p["source"] == "giant" for p in shown)
    assert "page" not in json.loads(run(capsys, "show", str(folder), "notes:1", "--json")[1])["paragraphs"][0]


def test_a_changed_file_is_read_again_alone(tmp_path, cache_dir, monkeypatch):
    folder = tmp_path / "shelf"
    folder.mkdir()
    shutil.copy(DATA / "selfish-giant-libreoffice.pdf", folder / "a.pdf")
    shutil.copy(DATA / "selfish-giant-enscript.pdf", folder / "b.pdf")
    read = []
    pages = pdf._pages
    monkeypatch.setattr(pdf, "_pages", lambda data, name: read.append(name) or pages(data, name))
    first = load_document(str(folder))
    assert sorted(read) == ["a.pdf", "b.pdf"]
    shutil.copy(DATA / "selfish-giant-two-columns.pdf", folder / "b.pdf")
    read.clear()
    second = load_document(str(folder))
    assert read == ["b.pdf"] and second.paragraphs[0].text == first.paragraphs[0].text


def _pdf_of_pages(count: int) -> bytes:
    """A minimal PDF whose page tree declares `count` pages (one of them real)."""
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [3 0 R] /Count {count} >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    return out + f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda t: DATA / "no-text-layer.pdf", "no text layer (a scan?)"),
        (lambda t: DATA / "encrypted-with-password.pdf", "encrypted PDF that needs a password"),
        (lambda t: _write(t, (DATA / "selfish-giant-enscript.pdf").read_bytes()[:3000]), "not a readable PDF"),
        (lambda t: _write(t, _pdf_of_pages(1_000_000)), "declares 1,000,000 pages"),
        (lambda t: _write(t, _nested(200_000)), "no text layer"),  # an object nested 200,000 deep
        (lambda t: _write(t, b"%PDF-1.7\n\x1b]0;evil\x07\x1b[2J garbage"), "not a readable PDF"),
    ],
)
def test_an_unusable_pdf_is_refused_in_one_line(capsys, tmp_path, cache_dir, make, message):
    code, out, err = run(capsys, "show", str(make(tmp_path)), "1")
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1
    assert "\x1b" not in err


def _nested(depth: int) -> bytes:
    """A one-page PDF whose page holds an array nested `depth` deep (its cross-reference
    offsets then wrong: PDFium repairs them)."""
    deep = b"[" * depth + b"]" * depth
    return _pdf_of_pages(1).replace(b"/MediaBox [0 0 200 200]", b"/MediaBox [0 0 200 200] /Deep " + deep)


def _write(tmp_path, data: bytes):
    path = tmp_path / "book.pdf"
    path.write_bytes(data)
    return path


def test_a_pdf_that_reads_too_long_is_refused(tmp_path, cache_dir, monkeypatch):
    monkeypatch.setattr(pdf, "MAX_SECONDS", 0.0)
    with pytest.raises(InputError, match=r"took more than 0 s to read \(0 of 4 pages\)"):
        load_document(str(DATA / "selfish-giant-libreoffice.pdf"))


def line(text, left, bottom, right=300.0, height=10.0):
    return pdf_layout.Line(text, left, right, bottom, bottom + height, 10.0)


def test_lines_join_into_paragraphs_by_the_books_own_rules():
    pages = []
    for n in range(1, 4):
        pages.append(
            [
                line("A Running Title", 120, 560, 200),
                line("\x1b\x07the moor-gate stood open and some\u00ad", 40, 500),  # control bytes dropped
                line("thing moved; a well\u00ad", 40, 488),  # "something": the book has it whole
                line("marked path ran to the moor\u00ad", 40, 476),  # "well-marked": both halves words
                line("gate.", 40, 464, 70),  # "moor-gate": the book sets it so
                line("Something else was marked here as well.", 55, 452, 200),
                line(f"{n}", 150, 20, 156),
            ]
        )
    paragraphs = pdf_layout.paragraphs_of(pages)
    texts = [text for _, _, text in paragraphs]
    assert texts[:2] == [
        "the moor-gate stood open and something moved; a well-marked path ran to the moor-gate.",
        "Something else was marked here as well.",
    ]
    assert [(page, line_no) for page, line_no, _ in paragraphs[:3]] == [(1, 1), (1, 5), (2, 1)]
    assert not any("Running" in t or "\x1b" in t for t in texts) and len(texts) == 6


def test_a_two_column_article_reads_column_by_column_on_its_pages(cache_dir):
    """elsarticle's two-column sample as Debian ships it (pdfTeX; see tests/data/README.md)."""
    book = load_document(str(DATA / "elsarticle-two-columns.pdf"))
    starts = {
        "Although quadrupole excitons (QE) in cuprous oxide crystals": 1,
        "There are few experiments concerned with resonant interaction": 2,  # left column, top
        "Assume that a single PMS of radius": 2,
        "Below we compare the evanescent quadrupole polariton": 2,  # right column
        "For the Cu2O para-exciton the linewidth of the polariton": 3,
        "In summary, we note that there is some similarity": 4,
    }
    found = {}
    for opening, page in starts.items():
        [p] = [p for p in book.paragraphs if p.text.startswith(opening)]
        assert p.page == page, opening
        found[opening] = p
    ids = [p.id for p in found.values()]
    assert ids == sorted(ids)  # in reading order: a page's left column before its right
    assert found["There are few experiments concerned with resonant interaction"].text.endswith(
        "Hence the localization is effectively impeded."
    )
    # a word hyphenated at a line's end is whole again
    assert "is given by the WGM linewidth. The para-excitons can acquire some" in found[
        "For the Cu2O para-exciton the linewidth of the polariton"
    ].text



def test_a_long_pdf_read_in_two_processes_reads_as_in_one(monkeypatch, cache_dir):
    data = (DATA / "selfish-giant-libreoffice.pdf").read_bytes()
    alone = pdf._pages(data, "giant.pdf")
    monkeypatch.setattr(pdf, "PARALLEL_PAGES", 2)
    monkeypatch.setattr(pdf, "_may_fork", lambda: True)
    assert pdf._pages(data, "giant.pdf") == alone
    # a refusal in the second process is the same one line
    monkeypatch.setattr(pdf, "MAX_SECONDS", 0.0)
    with pytest.raises(InputError, match=r"took more than 0 s to read"):
        pdf._pages(data, "giant.pdf")


def _die(*args):
    os._exit(9)  # as a crash in PDFium would


def test_a_second_process_that_dies_is_a_refusal_not_a_hang(monkeypatch, cache_dir):
    monkeypatch.setattr(pdf, "PARALLEL_PAGES", 2)
    monkeypatch.setattr(pdf, "_may_fork", lambda: True)
    monkeypatch.setattr(pdf, "MAX_SECONDS", 1.0)
    monkeypatch.setattr(pdf, "_read_in_child", _die)
    with pytest.raises(InputError, match="could not be read; refused"):
        pdf._pages((DATA / "selfish-giant-libreoffice.pdf").read_bytes(), "giant.pdf")


def bomb_pdf(inflated: int) -> bytes:
    """A PDF of one page whose content stream (Flate) inflates to `inflated` bytes of spaces,
    then a line of text: a decompression bomb of about 1/1000 its inflated size."""
    import zlib

    deflater = zlib.compressobj(9)
    block, parts, left = b" " * 2**20, [], inflated
    while left > 0:
        parts.append(deflater.compress(block[: min(left, len(block))]))
        left -= len(block)
    parts += [deflater.compress(b"BT /F1 12 Tf 72 720 Td (The giant built a wall.) Tj ET\n"), deflater.flush()]
    stream = b"".join(parts)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1) + b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def test_a_decompression_bomb_is_refused_before_pdfium_inflates_it(capsys, tmp_path, cache_dir):
    """300 MB of content stream in a 300 KB file: one line, exit 2, read in a fraction of a second
    (PDFium took 3.1 GB for a 2 GiB one); the same page with a little content reads."""
    bomb = tmp_path / "bomb.pdf"
    bomb.write_bytes(bomb_pdf(300 * 2**20))
    assert bomb.stat().st_size < 2**20
    code, out, err = run(capsys, "show", str(bomb), "1")
    assert code == 2 and out == "" and "inflates past 256 MiB" in err and "decompression bomb" in err
    small = tmp_path / "small.pdf"
    small.write_bytes(bomb_pdf(2**20))
    code, out, _ = run(capsys, "show", str(small), "1")
    assert code == 0 and "The giant built a wall." in out
