"""What the default shows where no model reads: on a novel, the passages that fit the question,
each with its id and chapter (exit 4), never an extractive guess; on a short text, the answer.
Through the real CLI, on the scripted backend made as small as the embedded default."""

import json
import random

import pytest

from cwread.book import load_document
from cwread.book.chapters import is_heading
from tests.conftest import run

ROMAN = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"]
TITLES = ["THE HARBOUR", "THE STORM", "THE LETTERS", "THE FAIR", "THE FOUNDRY", "THE MILL",
          "THE CHAPEL", "THE WINTER", "THE TRIAL", "THE ROAD", "THE RETURN", "THE LAMP"]  # fmt: skip
NAMES = ["Martha", "Tobias", "Agnes", "Silas", "Hester", "Ezra", "Judith", "Abel"]
PLACES = ["the quay", "the market", "the mill pond", "the orchard", "the ferry", "the inn", "the church"]
DOINGS = ["mended the nets", "counted the sacks of flour", "argued about the price of lamp oil",
          "walked along the cliff path", "sang an old song", "wrote a long letter home",
          "watched the gulls", "swept the yard", "carried water from the well"]  # fmt: skip
ANSWER = "Silas hid the brass key under the third stone of the chapel wall, where nobody would look."


@pytest.fixture
def novel(tmp_path):
    """A novel of 12 chapters and about 1,250 paragraphs (over NOVEL_PARAGRAPHS), with one
    paragraph that says where the key was hidden, in chapter VII."""
    rng = random.Random(7)
    parts = ["THE KEEPER'S YEAR", "A Novel"]
    for number, (roman, title) in enumerate(zip(ROMAN, TITLES, strict=True), start=1):
        parts.append(f"CHAPTER {roman}. {title}")
        for i in range(104):
            if number == 7 and i == 50:
                parts.append(ANSWER)
                continue
            who, other = rng.sample(NAMES, 2)
            parts.append(
                f"{who} {rng.choice(DOINGS)} at {rng.choice(PLACES)} while {other} {rng.choice(DOINGS)}, "
                f"and the day went on as days do at {rng.choice(PLACES)}."
            )
    path = tmp_path / "keeper.txt"
    path.write_text("\n\n".join(parts) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def small_model(scripted):
    """The scripted backend as small as the embedded default: it judges at chance and cannot write."""
    scripted.finder.size = scripted.interpreter.size = 135_000_000
    return scripted


def test_chapters_are_found_from_the_headings(novel):
    document = load_document(str(novel))
    assert len(document) > 1000
    # the book's title before its numbered chapters heads none (#88 item 6)
    assert [c.title for c in document.chapters][:2] == ["CHAPTER I. THE HARBOUR", "CHAPTER II. THE STORM"]
    answer = next(p.id for p in document.paragraphs if p.text == ANSWER)
    assert document.chapter(answer).title == "CHAPTER VII. THE CHAPEL"
    assert document.chapter(1) is None


def test_headings_in_the_books_own_layout(capsys, tmp_path):
    """#88 item 6, through the real CLI: a title page and a dedication before numbered chapters
    head nothing, nor does a letter's signature ("HARRY.") or a quoted line ("Party!"); titles
    with a full stop that the book repeats as a pattern ("FIRST NARRATIVE.") do, its words not all
    names (the book writes "first" and "second" in lower case)."""
    parts = ["THE LAMP AT DUSK", "TO THE MEMORY OF", "MY FATHER", "FIRST NARRATIVE."]
    for number, roman in enumerate(("I", "II", "III", "IV"), start=1):
        parts.append(f"CHAPTER {roman}")
        parts += [f"Ruth walked to the mill on day {number} of the flood, her first, and the water rose {i} feet." for i in range(8)]
        if number == 2:
            parts += ["Dear Ruth, the mill is safe. Your loving", "HARRY.", '"Party!" said Aunt Nettie significantly.']
            parts += ["Ruth read the letter a second time.", "SECOND NARRATIVE."]
    book = tmp_path / "lamp.txt"
    book.write_text("\n\n".join(parts) + "\n", encoding="utf-8")
    code, out, _ = run(capsys, "contents", str(book), "--json")
    headings = [c["heading"] for c in json.loads(out)["contents"]]
    assert code == 0
    assert any(h.startswith("SECOND NARRATIVE.") for h in headings)
    assert any(h.startswith("FIRST NARRATIVE. / CHAPTER I") for h in headings)  # its series begins there
    assert not any(h.startswith(("HARRY", '"Party', "TO THE MEMORY", "THE LAMP AT DUSK /")) for h in headings)


def test_letters_signatures_numbered_titles_and_the_end(capsys, tmp_path):
    """#88 item 6, through the real CLI, a book laid out as the text's blank lines lay it: a
    letter's signature (one blank line under its letter, four above the next letter's number)
    closes its letter and heads nothing, with or without a full stop and when a name repeats
    ("S. HALE.", "CATHERINE HALE", "R. HALE."), while a part's title four blank lines under it
    heads the next; titles after a number ("I. The Quiet Harbour")
    are headings where the book repeats them, a numbered list in the prose is not; a
    publisher's list after "THE END" is no part of the story."""
    prose = "Ruth walked to the mill on day {} of the flood, and Mr. Hale watched the water rise {} feet."
    letters = []
    for number, (roman, signature) in enumerate(
        (("I", "S. HALE."), ("II", "CATHERINE HALE"), ("III", "R. HALE."), ("IV", "S. HALE.")), start=1
    ):
        body = "\n\n".join(prose.format(number, i) for i in range(6))
        part = "THE SECOND PART\n\n\n\n\n" if roman == "III" else ""  # under four blank lines: a part's title
        letters.append(f"{part}{roman}\n\n\nMRS. HALE TO HER SON\n\n\n{body}\n\nYour loving mother,\n\n{signature}")
    ads = "BOOKS FOR GIRLS\n\nTHE LAMP AT DUSK\n\nBy the same author. Cloth, $1.00.\n\nTHE MILL ON THE RIVER"
    book = tmp_path / "hale.txt"
    book.write_text("\n\n\n\n\n".join(letters) + f"\n\n\nTHE END\n\n\n{ads}\n")
    code, out, _ = run(capsys, "contents", str(book), "--json")
    entries = [(c["heading"], c["wrapping"]) for c in json.loads(out)["contents"]]
    assert code == 0
    story = [heading for heading, wrapping in entries if wrapping is None]
    assert story == [f"{roman} / MRS. HALE TO HER SON" for roman in ("I", "II", "THE SECOND PART / III", "IV")]
    assert entries[-1][1] == "back matter" and "BOOKS FOR GIRLS" not in story
    code, out, _ = run(capsys, "show", str(book), "--json", "all")
    ids = {p["text"]: p["id"] for p in json.loads(out)["paragraphs"] if p["text"] == "CATHERINE HALE"}
    contents_json = json.loads(run(capsys, "contents", str(book), "--json")[1])["contents"]
    third = next(c for c in contents_json if c["heading"].startswith("THE SECOND PART / III /"))
    assert ids["CATHERINE HALE"] == int(third["paragraphs"].split("-")[0]) - 1  # it closes letter II

    titles = ["I. The Quiet Harbour", "II. A Storm at Sea", "III. THE LAST LIGHT."]
    parts = []
    for number, title in enumerate(titles, start=1):
        parts += [title, *(prose.format(number, i) for i in range(6))]
    parts += ["She wrote the list for the boat:", "1. Take the lamp oil to the rock", "2. Mend the glass"]
    book = tmp_path / "keeper.txt"
    book.write_text("\n\n".join(parts) + "\n")
    code, out, _ = run(capsys, "contents", str(book), "--json")
    assert code == 0
    assert [c["heading"] for c in json.loads(out)["contents"] if c["wrapping"] is None] == titles

    # a diary a character ends with "FINIS." halfway through a book with no chapters ends nothing
    book = tmp_path / "diary.txt"
    book.write_text("\n\n".join([*(prose.format(1, i) for i in range(8)), '"FINIS."', *(prose.format(2, i) for i in range(8))]))
    code, out, _ = run(capsys, "contents", str(book), "--json")
    assert code == 0 and [c["wrapping"] for c in json.loads(out)["contents"]] == [None]


def test_headings_where_blank_lines_are_not_the_books_own(capsys, tmp_path):
    """A review's cases (#88 item 6): a part's title at the top of a folder's file, and one an
    HTML book's markup gives (its generated text's blank lines are not the book's), still head
    their chapters; a last chapter titled "THE END" stays in the story; a signature's initial
    ("C. VERNON.") is no chapter number."""
    prose = "\n".join(["Ruth walked to the mill on the first day of the flood, and watched the water"] * 4)
    folder = tmp_path / "parts"
    folder.mkdir()
    for n, (part, roman) in enumerate((("THE FIRST PART", "I"), ("THE SECOND PART", "III")), start=1):
        (folder / f"0{n}.txt").write_text(f"{part}\n\n\n\n{roman}\n\n{prose}\n\n{prose}\n")
    code, out, _ = run(capsys, "contents", str(folder), "--json")
    assert code == 0 and "THE SECOND PART / III" in [c["heading"] for c in json.loads(out)["contents"]]

    chapters = "".join(
        f"<h2>THE {n} PART<br/>THE RETURN</h2><h3>CHAPTER {r}</h3>" + f"<p>{prose}</p>" * 4
        for n, r in (("FIRST", "I"), ("SECOND", "II"), ("THIRD", "III"))
    )
    html = tmp_path / "parts.html"
    html.write_text(f"<html><body>{chapters}</body></html>")
    code, out, _ = run(capsys, "contents", str(html), "--json")
    assert code == 0 and "THE SECOND PART THE RETURN / CHAPTER II" in [c["heading"] for c in json.loads(out)["contents"]]

    lastend = tmp_path / "lastend.txt"
    body = "\n\n".join(f"CHAPTER {r}\n\n{prose}\n\n{prose}" for r in ("I", "II", "III"))
    lastend.write_text(f"{body}\n\nCHAPTER IV\n\nTHE END\n\n{prose}\n\n{prose}\n")
    code, out, _ = run(capsys, "contents", str(lastend), "--json")
    entries = json.loads(out)["contents"]
    assert code == 0 and [c["wrapping"] for c in entries] == [None] * 4 and entries[-1]["heading"] == "CHAPTER IV"

    signed = tmp_path / "signed.txt"
    letters = [f"{prose}\n\nYours ever,\n\n{name}" for name in ("C. VERNON.", "C. DE COURCY.", "C. VERNON.", "C. HALE.")]
    signed.write_text("\n\n".join(letters) + "\n")
    code, out, _ = run(capsys, "contents", str(signed), "--json")
    assert code == 0 and not any("C. " in c["heading"] for c in json.loads(out)["contents"][1:])


@pytest.mark.parametrize(
    ("line", "heading"),
    [
        ("Chapter 7. The Stapletons of Merripit House", True),
        ("XXIII", True),
        ("12.", True),
        ("THE SELFISH GIANT", True),
        ("PROLOGUE", True),
        ("01", False),  # an image's number
        ("THE END", False),
        ("HELP! HELP!", False),  # a shout ends a sentence
        ("Martha kept the lighthouse for thirty years.", False),
        ('"Party!" said Aunt Nettie significantly.', False),  # "Part" and a "y": no PART heading
        ("Part II", True),
    ],
)
def test_what_reads_as_a_heading(line, heading):
    assert is_heading(line) is heading


def test_a_novel_gets_the_passages_with_their_chapters_and_exit_4(capsys, novel, cache_dir, small_model):
    code, out, err = run(
        capsys, "ask", str(novel), "Where did Silas hide the brass key?", "--backend", "scripted", "--width", "200"
    )
    assert code == 4
    assert "Answer: none given" in out and "no model here reads a novel's passages" in out.lower()
    # the routes to a reader are for one who chose no backend, on stderr (test_embedded)
    assert "Serve a model that reads" not in out + err and "cwread mcp --root DIR" not in out + err
    document = load_document(str(novel))
    answer = next(p.id for p in document.paragraphs if p.text == ANSWER)
    assert f"#1 [{answer}]  CHAPTER VII. THE CHAPEL" in out and ANSWER in out
    assert "words quoted from the text" not in out  # no answer dressed as one
    assert "no model here reads a novel's passages" in err  # the failure line


def test_a_novels_passages_in_json(capsys, novel, cache_dir, small_model):
    code, out, _ = run(
        capsys, "ask", str(novel), "Where did Silas hide the brass key?", "--backend", "scripted", "--json"
    )
    trace = json.loads(out)
    assert code == 4
    assert trace["status"] == "passages" and trace["answer_mode"] == "passages"
    assert trace["answer"] is None and trace["answer_kind"] is None and trace["abstained"] is True
    first = trace["quotes"][0]
    assert first["chapter"] == "CHAPTER VII. THE CHAPEL" and first["quote"] == ANSWER
    assert 1 < len(trace["quotes"]) <= 5
    assert trace["plan"]["answer_mode"] == "passages" and trace["plan"]["interpreter"] is False


def test_asked_for_it_a_novel_still_gets_the_extractive_answer(capsys, novel, cache_dir, small_model):
    code, out, _ = run(
        capsys, "ask", str(novel), "Where did Silas hide the brass key?", "--backend", "scripted", "--json",
        "--answer", "extractive",
    )  # fmt: skip
    trace = json.loads(out)
    assert code == 0 and trace["status"] == "answered" and trace["answer_kind"] == "quoted-words"


# ---- a model that writes: its words where its quotes back them, else the same passages ------


def ask_writer(capsys, novel, *extra: str) -> tuple[int, str, str]:
    """The scripted backend at its own size, a model that writes: its queued reply answers."""
    return run(
        capsys, "ask", str(novel), "Where did Silas hide the brass key?", "--backend", "scripted", "--no-cache",
        "--self-check", "off", *extra,
    )  # fmt: skip


def answer_id(novel) -> int:
    return next(p.id for p in load_document(str(novel)).paragraphs if p.text == ANSWER)


def test_a_writers_backed_words_are_the_answer_on_a_novel(capsys, novel, cache_dir, scripted):
    pid = answer_id(novel)
    scripted.interpreter.enqueue(f'<reason>[{pid}] "under the third stone of the chapel wall"</reason>'
                                 "<answer>under the third stone of the chapel wall</answer>")  # fmt: skip
    code, out, _ = ask_writer(capsys, novel, "--json")
    trace = json.loads(out)
    assert code == 0 and trace["answer"] == "under the third stone of the chapel wall"
    assert trace["answer_kind"] == "model-words" and trace["plan"]["answer_mode"] == "generative-or-passages"


def test_a_writers_unbacked_words_give_the_passages_not_a_sentence_on_a_novel(capsys, novel, cache_dir, scripted):
    """Where the quotes do not back the model's words, a novel gets the passages (exit 4), never
    the extractive sentence a short text falls back to: a guess there is seldom right."""
    reply = '<reason>[3] "A Novel"</reason><answer>he buried it in the orchard</answer>'
    scripted.interpreter.enqueue(reply)
    pid = answer_id(novel)
    code, out, _ = ask_writer(capsys, novel, "--json")
    trace = json.loads(out)
    assert code == 4 and trace["status"] == "passages" and trace["answer"] is None
    assert trace["model_answer"] == "he buried it in the orchard" and trace["answer_kind"] is None
    assert trace["quotes"][0]["paragraph"] == pid and trace["quotes"][0]["chapter"] == "CHAPTER VII. THE CHAPEL"
    assert "do not support the model's answer 'he buried it in the orchard'" in trace["failure"]
    assert "passages that fit the question best are shown" in trace["failure"]
    scripted.interpreter.enqueue(reply)
    code, out, _ = ask_writer(capsys, novel, "--width", "200")
    assert code == 4 and "Answer: none given" in out and f"[{pid}]  CHAPTER VII. THE CHAPEL" in out
    assert "The model answered 'he buried it in the orchard', but its quotes do not say so" in out
    assert "no model here reads" not in out.lower() and "Serve a model that reads" not in out  # one did read
    assert "words quoted from the text" not in out


def test_a_short_text_is_answered_by_the_default(capsys, story, cache_dir, small_model):
    code, out, _ = run(capsys, "ask", str(story), "What did the fishermen give her?", "--backend", "scripted", "--json")
    trace = json.loads(out)
    assert code == 0 and trace["status"] == "answered" and trace["answer_mode"] == "extractive"
    assert "medal" in trace["answer"] and trace["citations"] == [5]


def test_a_folders_citations_name_their_file(capsys, tmp_path, cache_dir, small_model):
    folder = tmp_path / "books"
    folder.mkdir()
    (folder / "harbour.txt").write_text(
        "The harbour was quiet in the mornings.\n\nBoats came in at noon with their catch.\n", encoding="utf-8"
    )
    (folder / "lighthouse.txt").write_text(
        "Martha kept the lighthouse for thirty years.\n\n"
        "The fishermen of the harbour later gave her a silver medal, which she kept in a tin.\n",
        encoding="utf-8",
    )
    code, out, _ = run(capsys, "ask", str(folder), "What did the fishermen give Martha?", "--backend", "scripted", "--json")
    trace = json.loads(out)
    assert code == 0 and trace["citations"] == ["lighthouse:2"]
    assert all(q["id"] == "lighthouse:2" and q["source"] == "lighthouse" for q in trace["quotes"])
    code, out, _ = run(capsys, "ask", str(folder), "What did the fishermen give Martha?", "--backend", "scripted")
    assert code == 0 and "[lighthouse:2]" in out and "[4]" not in out


def test_a_readers_answer_quoting_a_paragraph_outside_its_evidence_is_withheld(capsys, novel, cache_dir, scripted):
    """answer.quoted_answers=on: a verbatim quote of the book that is not in the evidence the model was
    given backs nothing (dropped, never shown), so its answer gives way to the passages."""
    scripted.interpreter.enqueue('<reason>[2] "A Novel"</reason><answer>under the third stone of the chapel</answer>')
    code, out, _ = ask_writer(capsys, novel, "--json", "--set", "answer.quoted_answers=on")
    trace = json.loads(out)
    assert code == 4 and trace["status"] == "passages" and trace["answer"] is None
    assert trace["packet"] and all(p["id"] != 2 for p in trace["packet"]) and trace["dropped_citations"] == [2]
    assert trace["support_check"]["method"] == "quotes" and not trace["support_check"]["supported"]
    assert all(q["paragraph"] != 2 for q in trace["quotes"])
