import json

import pytest

from cwread.book import document_from_bytes, load_document, parse_paragraphs
from cwread.book.decoding import decode_text
from cwread.book.paragraphs import MAX_PARAGRAPH_CHARS
from cwread.errors import InputError
from tests.conftest import SHARED_DATA


def texts(paragraphs):
    return [p.text for p in paragraphs]


def test_paragraphs_are_blank_line_blocks_numbered_from_one():
    paras = parse_paragraphs("First line\nwrapped here.\n\n\n  \nSecond.\n\nThird one.\n")
    assert [p.id for p in paras] == [1, 2, 3]
    assert texts(paras) == ["First line wrapped here.", "Second.", "Third one."]
    assert [p.block for p in paras] == [1, 2, 3]
    assert [p.line for p in paras] == [1, 6, 8]


def test_crlf_and_lone_cr_are_line_breaks():
    assert texts(parse_paragraphs("a\r\nb\r\n\r\nc\rd")) == ["a b", "c d"]


def test_hyphenated_word_across_line_break_is_rejoined_but_dashes_are_kept():
    paras = parse_paragraphs("a well-\nknown man--\nand his dog-\nDog\n")
    assert texts(paras) == ["a wellknown man-- and his dog- Dog"]


def test_same_bytes_give_same_ids_and_fingerprint():
    data = b"One.\n\nTwo.\n\nThree.\n"
    a = document_from_bytes(data, "x")
    b = document_from_bytes(data, "x")
    assert a.paragraphs == b.paragraphs and a.fingerprint == b.fingerprint
    c = document_from_bytes(b"One.\n\nTwo!\n\nThree.\n", "x")
    assert c.fingerprint != a.fingerprint


def test_hard_wrapped_wall_is_split_at_short_sentence_ending_lines():
    para = "The quick brown fox jumps over the lazy dog near the river bank today.\n" * 5
    lines = []
    for i in range(40):
        lines.append(para + f"Paragraph {i} ends here.")
    wall = "\n".join(lines)
    assert len(wall) > MAX_PARAGRAPH_CHARS
    paras = parse_paragraphs("Title\n\n" + wall + "\n\nAfter the wall.")
    assert paras[0].text == "Title"
    assert len(paras) == 1 + 40 + 1
    assert all(p.block == 2 for p in paras[1:41])
    assert paras[1].text.endswith("Paragraph 0 ends here.")
    assert paras[-1].text == "After the wall." and paras[-1].block == 3
    assert [p.id for p in paras] == list(range(1, 43))


def test_unwrapped_lines_in_a_wall_are_paragraphs():
    lines = [f"Line {i} " + "is a whole unwrapped paragraph with many words in it " * 4 for i in range(30)]
    paras = parse_paragraphs("\n".join(lines))
    assert len(paras) == 30
    assert paras[5].text.startswith("Line 5 ") and paras[5].line == 6


def test_endless_paragraph_is_cut_at_sentence_boundaries():
    sentence = "This sentence is here to make a very long paragraph without breaks. "
    paras = parse_paragraphs(sentence * 200)
    assert len(paras) > 3
    assert all(len(p.text) <= MAX_PARAGRAPH_CHARS for p in paras)
    assert all(p.text.endswith("breaks.") for p in paras)
    assert " ".join(texts(paras)) == (sentence * 200).strip()


def test_sentence_without_any_end_is_still_cut():
    paras = parse_paragraphs("word " * 3000)
    assert len(paras) > 1 and all(len(p.text) <= MAX_PARAGRAPH_CHARS for p in paras)


@pytest.mark.parametrize(
    "data,encoding",
    [
        ("Caf\u00e9 \u201cquoted\u201d".encode("utf-8"), "utf-8"),
        (b"\xef\xbb\xbf" + "Caf\u00e9 \u201cquoted\u201d".encode("utf-8"), "utf-8-sig"),
        ("\ufeffCaf\u00e9 \u201cquoted\u201d".encode("utf-16-le"), "utf-16-le"),
        ("\ufeffCaf\u00e9 \u201cquoted\u201d".encode("utf-16-be"), "utf-16-be"),
        ("Caf\u00e9 \u201cquoted\u201d".encode("utf-16-le"), "utf-16-le"),
        ("Caf\u00e9 \u201cquoted\u201d".encode("cp1252"), "cp1252"),
    ],
)
def test_encodings_are_detected(data, encoding):
    text, used = decode_text(data)
    assert used == encoding
    assert text.lstrip("\ufeff") == "Caf\u00e9 \u201cquoted\u201d"


def test_latin1_is_the_last_resort():
    text, used = decode_text(b"Stra\xdfe " * 200 + b"\x81")
    assert used == "latin-1" and text.startswith("Stra\u00dfe")


def test_bom_does_not_become_part_of_the_first_paragraph():
    doc = document_from_bytes(b"\xef\xbb\xbfHello\r\n\r\nWorld", "x")
    assert texts(doc.paragraphs) == ["Hello", "World"]


def test_forced_encoding_is_strict():
    assert decode_text("\u00e9".encode("latin-1"), "latin-1")[0] == "\u00e9"
    with pytest.raises(InputError, match="not valid utf-8"):
        decode_text(b"\xe9t\xe9", "utf-8")
    with pytest.raises(InputError, match="unknown encoding"):
        decode_text(b"abc", "no-such-codec")


@pytest.mark.parametrize(
    "data,message",
    [
        (b"%PDF-1.7\n...", "PDF"),
        (b"PK\x03\x04rest", "ZIP"),
        (b"\x89PNG\r\n\x1a\n", "image"),
        (b"\x00\x01\x02\x03\xff\xfe\x00\x10" * 100, "binary"),
        (bytes(range(1, 32)) * 50, "binary"),
    ],
)
def test_binary_input_is_refused(data, message):
    with pytest.raises(InputError, match=message):
        document_from_bytes(data, "f")


def test_a_text_with_a_terminals_colours_or_a_stray_nul_is_read(capsys, tmp_path):
    """Three short paragraphs with ESC colour codes (2 of 60 characters) and a novel with one NUL
    in its first 4 KB were refused as binary files; their controls are shown defused."""
    from tests.conftest import run

    coloured = tmp_path / "log.txt"
    coloured.write_bytes(b"A \x1b[31mRED\x1b[0m word.\n\nSecond.\n\nThird.\n")
    assert run(capsys, "show", str(coloured), "1")[:2] == (0, "[1] A \u241b[31mRED\u241b[0m word.\n\n")
    stray = tmp_path / "novel.txt"
    stray.write_bytes(b"One night the keeper\x00 woke.\n\n" + b"The lamp was lit, and the sea was calm.\n\n" * 200)
    code, out, _ = run(capsys, "show", str(stray), "2")
    assert code == 0 and out.startswith("[2] The lamp was lit")


@pytest.mark.parametrize("data", [b"", b"   \n\t\n  ", "\ufeff  \n".encode("utf-16")])
def test_empty_input_is_refused(data):
    with pytest.raises(InputError, match=r"empty|whitespace"):
        document_from_bytes(data, "f")


def test_missing_file_directory_and_size_limit(tmp_path, monkeypatch):
    with pytest.raises(InputError, match="no such file"):
        load_document(str(tmp_path / "nope.txt"))
    with pytest.raises(InputError, match="directory"):
        load_document(str(tmp_path))
    big = tmp_path / "big.txt"
    big.write_text("word " * 1000)
    monkeypatch.setenv("CWREAD_MAX_BYTES", "100")
    with pytest.raises(InputError, match=r"is 4\.9 KiB; cwread reads texts up to 100 bytes"):
        load_document(str(big))
    monkeypatch.setenv("CWREAD_MAX_BYTES", "lots")
    with pytest.raises(InputError, match="CWREAD_MAX_BYTES"):
        load_document(str(big))


def test_out_of_range_paragraph_is_an_input_error():
    doc = document_from_bytes(b"a\n\nb", "x")
    assert doc.paragraph(2).text == "b"
    with pytest.raises(InputError, match="out of range"):
        doc.paragraph(3)


@pytest.mark.skipif(not (SHARED_DATA / "fairytale").exists(), reason="shared dev data not present")
def test_ids_agree_with_fairytale_evidence_quotes():
    doc = load_document(str(SHARED_DATA / "fairytale" / "docs" / "anthology.txt"))
    checked = 0
    with open(SHARED_DATA / "fairytale" / "fairytale.jsonl", encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            for pid, quote in zip(record["evidence"], record["evidence_quotes"], strict=True):
                assert doc.paragraph(pid).text.startswith(quote), (record["id"], pid)
                checked += 1
    assert checked > 100
    # no block of the anthology is over-long, so ids are exactly blank-line block numbers
    assert all(p.id == p.block for p in doc.paragraphs)


@pytest.mark.skipif(not (SHARED_DATA / "novels").exists(), reason="shared dev data not present")
def test_gutenberg_novel_keeps_blank_line_numbering():
    doc = load_document(str(SHARED_DATA / "novels" / "the_moonstone.txt"))
    assert doc.encoding == "utf-8-sig"
    assert all(p.id == p.block for p in doc.paragraphs)
    assert len(doc) == 3763
