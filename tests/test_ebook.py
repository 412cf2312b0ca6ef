"""EPUB and HTML books: their blocks become numbered paragraphs, and hostile archives are
refused in one line (exit 2), with nothing of them written to disk."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest

from cwread import api
from cwread.book.formats.html import html_text
from tests.conftest import run

CONTAINER = """<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"""
OPF = """<?xml version="1.0" encoding="utf-8"?>
{doctype}<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{title}</dc:title></metadata>
  <manifest>
    <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
    <item id="c2" href="text/chapter%202.xhtml" media-type="application/xhtml+xml"/>
    <item id="c1" href="text/chapter1.xhtml" media-type="application/xhtml+xml"/>
    <item id="css" href="style.css" media-type="text/css"/>
  </manifest>
  <spine><itemref idref="c1"/><itemref idref="c2"/></spine>
</package>"""
CHAPTER1 = """<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>One</title><style>p {{ color: red }}</style></head>
<body><nav><ol><li>Contents: skip me</li></ol></nav>
<h1>Chapter One</h1>
<p>Martha Quill kept the light&shy;house on Gannet Rock &amp; never let the lamp go dark.</p>
<p>The fishermen gave her a silver medal,<br/>which she kept in a biscuit tin.</p>
<script>var secret = "not text";</script>
<blockquote><p>&#8220;Keep the lamp lit,&#8221; said her father.</p></blockquote>
</body></html>"""
CHAPTER2 = """<html xmlns="http://www.w3.org/1999/xhtml"><body>
<h2>Chapter Two</h2><div>Her cat, a grey tom called Admiral, slept on the lamp.</div>
</body></html>"""


def make_epub(path, *, opf=None, extra=(), chapters=None, mimetype_first=True):
    with zipfile.ZipFile(path, "w") as z:
        if mimetype_first:
            z.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        z.writestr("META-INF/container.xml", CONTAINER)
        z.writestr("OEBPS/content.opf", opf or OPF.format(doctype="", title="The Keeper"))
        z.writestr("OEBPS/nav.xhtml", "<html><body><nav>Contents</nav></body></html>")
        for name, body in (chapters or {"OEBPS/text/chapter1.xhtml": CHAPTER1, "OEBPS/text/chapter 2.xhtml": CHAPTER2}).items():
            z.writestr(name, body, compress_type=zipfile.ZIP_DEFLATED)
        for name, body in extra:
            z.writestr(name, body, compress_type=zipfile.ZIP_DEFLATED)
    return path


def test_an_epub_is_read_in_spine_order_block_by_block(capsys, tmp_path, cache_dir):
    book = make_epub(tmp_path / "keeper.epub")
    code, out, _ = run(capsys, "show", str(book), "chapter1,chapter_2", "--json")
    shown = json.loads(out)["paragraphs"]
    texts = [p["text"] for p in shown]
    assert code == 0 and texts == [
        "Chapter One",
        "Martha Quill kept the lighthouse on Gannet Rock & never let the lamp go dark.",
        "The fishermen gave her a silver medal, which she kept in a biscuit tin.",
        "\u201cKeep the lamp lit,\u201d said her father.",
        "Chapter Two",
        "Her cat, a grey tom called Admiral, slept on the lamp.",
    ]
    # each chapter is a source, cited by its file's name ("chapter 2.xhtml": chapter_2)
    assert [p["id"] for p in shown] == [*(f"chapter1:{n}" for n in range(1, 5)), "chapter_2:1", "chapter_2:2"]
    assert [(p["source"], p["paragraph"]) for p in shown][3:5] == [("chapter1", 4), ("chapter_2", 1)]
    assert json.loads(out)["document"]["encoding"] == "epub"
    again = api.open_document(str(make_epub(tmp_path / "again.epub")))
    assert again.fingerprint == api.open_document(str(book)).fingerprint  # stable for the same text


def test_a_question_on_an_epub_quotes_its_paragraphs(capsys, tmp_path, cache_dir, scripted):
    from cwread.backends.scripted import ScriptedBackend
    from tests.scripted_replies import smart_interpreter

    scripted.interpreter = ScriptedBackend(default=smart_interpreter)
    book = make_epub(tmp_path / "keeper.epub")
    code, out, _ = run(
        capsys, "ask", str(book), "What was the cat called?", "--backend", "scripted", "--finder", "off", "--json"
    )
    trace = json.loads(out)
    assert code == 0 and trace["answer"] == "Admiral" and trace["citations"] == ["chapter_2:2"]
    paragraph = api.show(api.open_document(str(book)), "chapter_2:2")[0].text
    for quote in trace["quotes"]:
        assert (quote["source"], quote["paragraph"]) == ("chapter_2", 2)
        assert paragraph[quote["start"] : quote["end"]] == quote["quote"]


def test_an_html_file_is_read_block_by_block(capsys, tmp_path, cache_dir):
    page = tmp_path / "page.html"
    page.write_text(CHAPTER1, encoding="utf-8")
    code, out, _ = run(capsys, "show", str(page), "1-4", "--json")
    texts = [p["text"] for p in json.loads(out)["paragraphs"]]
    assert code == 0 and texts[0] == "Chapter One" and "var secret" not in " ".join(texts)
    assert "Contents: skip me" not in " ".join(texts)


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("bomb", "zip bomb"),
        ("entities", "declares XML entities"),
        ("escape", "outside the book"),
        ("drm", "DRM-encrypted"),
        ("empty", "no readable text"),
    ],
)
def test_a_hostile_epub_is_refused_in_one_line(capsys, tmp_path, cache_dir, monkeypatch, case, message):
    book = tmp_path / f"{case}.epub"
    if case == "bomb":  # 2 MB of zeros, deflated to a few KB, against a 1 MB limit
        monkeypatch.setenv("CWREAD_MAX_BYTES", "1000000")
        make_epub(book, extra=[("OEBPS/zeros.bin", b"\0" * 2_000_000)])
    elif case == "entities":
        laughs = '<!DOCTYPE package [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>\n'
        make_epub(book, opf=OPF.format(doctype=laughs, title="&lol2;"))
    elif case == "escape":
        make_epub(book, extra=[("../../evil.xhtml", "<p>out</p>")])
    elif case == "drm":
        encryption = (
            '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
            'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData><enc:CipherData>'
            '<enc:CipherReference URI="OEBPS/text/chapter1.xhtml"/></enc:CipherData></enc:EncryptedData></encryption>'
        )
        make_epub(book, extra=[("META-INF/encryption.xml", encryption)])
    else:
        make_epub(book, chapters={"OEBPS/text/chapter1.xhtml": "<html><body><script>x</script></body></html>"})
    files_before = set(tmp_path.rglob("*"))
    code, _, err = run(capsys, "show", str(book), "1")
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert set(tmp_path.rglob("*")) - files_before <= {p for p in tmp_path.rglob("*") if "cache" in p.parts}


def test_obfuscated_fonts_are_no_drm(capsys, tmp_path, cache_dir):
    encryption = (
        '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
        'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData><enc:CipherData>'
        '<enc:CipherReference URI="OEBPS/fonts/serif.otf"/></enc:CipherData></enc:EncryptedData></encryption>'
    )
    book = make_epub(tmp_path / "fonts.epub", extra=[("META-INF/encryption.xml", encryption)])
    code, out, _ = run(capsys, "show", str(book), "chapter1:1")
    assert code == 0 and "Chapter One" in out


def test_a_sphinx_page_reads_without_its_navigation(capsys):
    """A real page of Python's documentation (Debian's python3.11-doc): its navigation bars,
    sidebar, footer and pilcrow links are not paragraphs; its text is, in order."""
    page = Path(__file__).parent / "data" / "python-tutorial-appetite.html"
    code, out, err = run(capsys, "show", str(page), "1-3", "--json")
    assert code == 0, err
    shown = json.loads(out)
    texts = [p["text"] for p in shown["paragraphs"]]
    assert texts[0] == "1. Whetting Your Appetite"  # no "¶" beside it
    assert texts[1].startswith("If you do much work on computers")
    every = html_text(page.read_text(encoding="utf-8"))
    for chrome in ("Navigation", "modules |", "previous |", "Table of Contents", "Quick search", "Show Source"):
        assert chrome not in every
    assert "Copyright" not in every and "¶" not in every
    assert every.split("\n\n")[-1].startswith("The rest of the tutorial")  # the last paragraph is text


def test_page_numbers_labels_and_navigation_by_role_are_left_out():
    markup = (
        '<html><body><nav epub:type="toc"><ol><li>Chapter 1</li></ol></nav>'
        '<div role="navigation"><a>next</a></div>'
        "<p>The ship sailed<span class=\"pagenum\"><a id=\"Page_844\">844</a></span> at dawn.</p>"
        '<div epub:type="pagebreak" title="845">845</div>'
        '<p class="MsoNormal">Kept <span class="label-free">text</span>.</p>'
        '<aside class="footnote"><span class="label">[1]</span><p>A note.</p></aside>'
        '<div class="related"><div><div>deep</div></div></div><p>After.</p></body></html>'
    )
    assert html_text(markup).split("\n\n") == ["The ship sailed at dawn.", "Kept text.", "A note.", "After."]


def test_a_pandoc_epub_reads_without_its_navigation_or_note_marks(capsys, cache_dir):
    """An EPUB made by a real tool (Debian's pandoc): its table of contents and landmarks are
    not paragraphs, a note's reference mark is not glued to its sentence, its back link is
    not text; the chapters are cited by their files."""
    book = Path(__file__).parent / "data" / "selfish-giant-pandoc.epub"
    code, out, err = run(capsys, "show", str(book), "ch001", "--json")
    assert code == 0, err
    texts = [p["text"] for p in json.loads(out)["paragraphs"]]
    assert texts[0] == "The Selfish Giant"
    assert texts[3].endswith("they cried to each other.")  # no "1" from the note's mark
    assert texts[-1] == "A note on the garden, added for this test."  # the note, without "↩︎"
    document = api.open_document(str(book))
    every = "\n".join(p.text for p in document.paragraphs)
    assert "Table of Contents" not in every and "Title Page" not in every
    assert [s.name for s in document.sources] == ["title_page", "ch001", "ch002"]


def _milestones_epub(path: Path, chapters: int) -> Path:
    """An EPUB of `chapters` chapters, each headed by its milestone's number, the rest alike."""
    import random

    scenery = ["road", "hill", "river", "stone", "wagon", "oak", "meadow", "inn", "bridge", "lantern", "shepherd", "rain", "mist", "valley", "cart"]
    pick = random.Random(5).choice
    items, spine, files = [], [], {}
    for n in range(1, chapters + 1):
        items.append(f'<item id="c{n}" href="ch{n}.xhtml" media-type="application/xhtml+xml"/>')
        spine.append(f'<itemref idref="c{n}"/>')
        filler = " ".join(pick(scenery) for _ in range(25))
        files[f"OEBPS/ch{n}.xhtml"] = (
            f"<html xmlns='http://www.w3.org/1999/xhtml'><body><h1>Milestone {n}</h1>"
            f"<p>Here the milestone stood as the {pick(scenery)} came in sight, and the "
            f"{pick(scenery)} lay beyond the {pick(scenery)}.</p><p>{filler.capitalize()}.</p></body></html>"
        )
    opf = (
        '<?xml version="1.0" encoding="utf-8"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>The Long Road</dc:title></metadata>'
        f"<manifest>{''.join(items)}</manifest><spine>{''.join(spine)}</spine></package>"
    )
    return make_epub(path, opf=opf, chapters=files)


def test_a_number_in_a_question_matches_as_a_word_ahead_of_its_neighbours(capsys, tmp_path, cache_dir):
    """"Which chapter tells of milestone number 1005?": the chapter headed 1005 comes first, not
    1004 or 100 beside it (`ask` gave passages of ch1002, ch100, ch1004, ch1003 and ch1006)."""
    book = _milestones_epub(tmp_path / "road.epub", 1200)
    asked = "Which chapter tells of milestone number 1005?"
    code, out, _ = run(capsys, "find", str(book), asked, "--map", "--limit", "3", "--width", "0")
    assert code == 0 and re.search(r"^#1 \[ch1005:\d\] ", out, re.M), out
    code, out, _ = run(capsys, "find", str(book), asked, "--width", "0", "--max-chars", "3000")
    assert code == 0 and re.search(r"^#1 \[ch1005:", out, re.M), out
    code, out, _ = run(capsys, "ask", str(book), asked, "--json")
    passages = [q["source"] for q in json.loads(out)["quotes"]][:3]
    assert code == 4 and "ch1005" in passages, passages


def test_a_bare_paragraph_number_is_answered_with_a_file_that_has_it(capsys, cache_dir):
    """"paragraph 5 needs its file: title_page:5, say" named a file of 2 paragraphs, so the
    suggestion itself was out of range: the example is a file that holds the paragraph."""
    book = str(Path(__file__).parent / "data" / "selfish-giant-pandoc.epub")
    code, _, err = run(capsys, "show", book, "5")
    suggested = re.search(r"needs its file: (\S+:5), say", err)
    assert code == 2 and suggested
    code, out, _ = run(capsys, "show", book, suggested.group(1))
    assert code == 0 and out.startswith(f"[{suggested.group(1)}]")
    code, _, err = run(capsys, "show", book, "99999")
    assert code == 2 and "no file holds 99999 paragraphs" in err
