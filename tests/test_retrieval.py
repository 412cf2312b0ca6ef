import json
from pathlib import Path

import numpy as np
import pytest

from cwread import api
from cwread.book import document_from_bytes
from cwread.cache import file_sha256
from cwread.errors import InputError
from cwread.records.question import parse_options
from cwread.retrieval.fusion import build_queries, paragraph_scores, reciprocal_rank_fusion
from cwread.retrieval.index import open_index
from tests.conftest import run


def test_reciprocal_rank_fusion_sums_inverse_ranks():
    fused = reciprocal_rank_fusion([np.array([2, 0]), np.array([0, 1, 2])], n=4, k=60)
    assert fused[0] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1] == pytest.approx(1 / 62)
    assert fused[2] == pytest.approx(1 / 61 + 1 / 63)
    assert fused[3] == 0
    weighted = reciprocal_rank_fusion([np.array([0]), np.array([1])], n=2, k=60, weights=[1.0, 0.5])
    assert weighted[0] == pytest.approx(1 / 61) and weighted[1] == pytest.approx(0.5 / 61)


def test_queries_are_the_question_and_the_question_with_each_option():
    assert build_queries("Why?", {"A": "x", "B": "y"}) == ["Why?", "Why? x", "Why? y"]
    assert build_queries("Why?") == ["Why?"]


@pytest.mark.slow  # torch: the dev install's (the fast lane runs without it)
def test_static_embedder_equals_sentence_transformers_static_embedding(cache_dir):
    """Parity: our numpy encoder gives StaticEmbedding's vectors (normalised)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("sentence_transformers")
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding

    from cwread.retrieval.embedders import load_static_minilm

    ours = load_static_minilm()
    module = StaticEmbedding(ours.tokenizer, embedding_weights=torch.from_numpy(ours.weights.astype(np.float32)))  # shipped as float16
    reference = SentenceTransformer(modules=[module], device="cpu")
    texts = ["The lamp went dark in the storm.", "Who kept the lighthouse?", "x" * 700 + " end"]
    expected = reference.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    np.testing.assert_allclose(ours.encode(texts), expected, atol=1e-5)


def test_static_embedder_places_related_texts_closer(cache_dir):
    from cwread.retrieval.embedders import load_static_minilm

    e = load_static_minilm()
    v = e.encode(["a storm at sea wrecked the ship", "the vessel sank in a gale", "she baked bread"])
    assert v[0] @ v[1] > v[0] @ v[2]
    assert np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)


def test_bm25_ranks_the_paragraph_with_the_stemmed_terms_first(story, cache_dir):
    doc = api.open_document(str(story))
    index = open_index(doc, None)
    scores = paragraph_scores(index, ["Who gave her a medal?"], method="bm25")
    assert int(np.argmax(scores)) + 1 == 5  # "...gave her a silver medal..."
    # stemming: "smashing" matches "smashed"
    scores = paragraph_scores(index, ["smashing glass"], method="bm25")
    assert int(np.argmax(scores)) + 1 == 4


def test_dense_finds_a_paraphrase_without_shared_words(story, cache_dir):
    from cwread.retrieval.embedders import load_static_minilm

    doc = api.open_document(str(story))
    index = open_index(doc, load_static_minilm())
    scores = paragraph_scores(index, ["What animal did she own?"], method="dense")
    assert int(np.argmax(scores)) + 1 == 6  # the cat paragraph
    lexical = paragraph_scores(index, ["What animal did she own?"], method="bm25")
    assert lexical.max() == 0  # no shared words: only dense can find it


def test_dense_method_without_embedder_is_an_input_error(story, cache_dir):
    doc = api.open_document(str(story))
    index = open_index(doc, None)
    with pytest.raises(InputError, match="embedder"):
        paragraph_scores(index, ["q"], method="dense")
    with pytest.raises(InputError, match="unknown retrieval method"):  # before any index is opened
        api.find(doc, api.make_question("q"), api.Settings(run=api.RunSettings(retrieval="magic")))


def test_find_covers_the_text_and_reads_anchors_first(story, cache_dir):
    doc = api.open_document(str(story))
    result = api.find(
        doc, api.make_question("Where was the silver medal hidden?"), api.Settings(run=api.RunSettings(api.make_budget("focused", anchors=1, p_r=0)))
    )
    assert result.segments[0].origin == "anchor"
    assert result.segments[0].anchors == (5,)
    assert sorted(pid for s in result.segments for pid in s.ids) == list(range(1, len(doc) + 1))


def test_an_empty_question_is_refused():
    with pytest.raises(InputError, match="the question is empty"):
        api.make_question("   ")
    with pytest.raises(InputError, match="the claim is empty"):
        api.make_question("", claim=True)


def test_options_parse_with_and_without_letters():
    assert parse_options(["A=one", "b: two", "(C) three"]) == {"A": "one", "B": "two", "C": "three"}
    assert parse_options(["one", "two"]) == {"A": "one", "B": "two"}
    for bad, msg in [(["A="], "empty"), (["A=x", "A=y"], "twice"), (["A=x"], "two options")]:
        with pytest.raises(InputError, match=msg):
            parse_options(bad)


def test_paragraph_spec():
    doc = document_from_bytes("\n\n".join(f"Paragraph {i}." for i in range(1, 11)).encode(), "t.txt")
    assert doc.parse_spec("3") == [3]
    assert doc.parse_spec("2-4,7") == [2, 3, 4, 7]
    for bad in ["0", "11", "5-3", "a", "11-", "", "ch1:2"]:
        with pytest.raises(InputError):
            doc.parse_spec(bad)
    assert doc.parse_spec("8-") == [8, 9, 10] and doc.parse_spec("all") == list(range(1, 11))
    notes: list[str] = []
    assert doc.parse_spec("9-2000", notes) == [9, 10] and notes == ["9-2000 stops at 10, the last paragraph"]


def test_mcq_options_widen_the_query(cache_dir):
    text = b"The weather was mild.\n\nHe bought a red bicycle at the fair.\n\nNothing else happened.\n"
    doc = document_from_bytes(text, "t")
    index = open_index(doc, None)
    plain = paragraph_scores(index, build_queries("What did he get?"), method="bm25")
    widened = paragraph_scores(
        index, build_queries("What did he get?", {"A": "a bicycle", "B": "a car"}), method="bm25"
    )
    assert plain.max() == 0 and int(np.argmax(widened)) + 1 == 2


# ---- context and sections (novel evidence) ------------------------------------------------------


def _index_of(tmp_path, text: str):
    path = tmp_path / "book.txt"
    path.write_text(text, encoding="utf-8")
    return open_index(api.open_document(str(path)), None)


def test_a_reply_is_found_through_the_paragraph_that_asks_it(tmp_path, cache_dir):
    """A line of dialogue that answers without naming what was asked ranks high with its
    context: the question names the doll, the reply names the cupboard, plain BM25 sees only one."""
    filler = [f"The rain fell on day {i} and nothing else happened in the village." for i in range(30)]
    story = [
        *filler[:10],
        "Where did Anna hide the doll after the quarrel?",
        "In the cupboard under the stairs, behind the brooms.",
        *filler[10:20],
        "The cupboard was painted green that spring.",
        *filler[20:],
    ]
    index = _index_of(tmp_path, "\n\n".join(story) + "\n")
    queries = ["Which cupboard held the doll Anna hid?"]
    plain = paragraph_scores(index, queries, method="bm25")
    fused = paragraph_scores(index, queries, method="fused")
    reply, painted = 12, 23
    # alone, the reply is one cupboard among others: plain BM25 barely tells the two apart
    assert abs(plain[reply - 1] - plain[painted - 1]) < 0.1 * plain[reply - 1]
    ranked = [int(i) + 1 for i in np.argsort(-fused, kind="stable")]
    assert ranked[:2] in ([11, reply], [reply, 11])  # with its context, the exchange comes first
    assert ranked.index(painted) > 2


def test_context_scores_pool_neighbours_with_decay_and_stop_at_a_file(tmp_path, cache_dir):
    from cwread.retrieval import lexical

    texts = ["plain words here"] * 3 + ["the lantern glass"] + ["plain words here"] * 3
    retriever = lexical.build_index(texts)
    own = lexical.scores(retriever, "lantern", len(texts))
    pooled = lexical.context_scores(retriever, "lantern", len(texts))
    top = own[3]
    assert pooled[3] == pytest.approx(top)
    assert pooled[2] == pytest.approx(top * lexical.CONTEXT_DECAY) == pytest.approx(pooled[4])
    assert pooled[1] == pytest.approx(top * lexical.CONTEXT_DECAY**2) == pytest.approx(pooled[5])
    assert pooled[0] == 0 and pooled[6] == 0  # beyond CONTEXT_WIDTH
    # a new file starts at id 5 (index 4): nothing of paragraph 4 reaches it
    split = lexical.context_scores(retriever, "lantern", len(texts), file_starts=[1, 5])
    assert split[4] == 0 and split[5] == 0 and split[2] == pytest.approx(pooled[2])
    # a term asked twice counts twice, as BM25 counts it
    assert lexical.context_scores(retriever, "lantern lantern", len(texts))[3] == pytest.approx(2 * top)


def test_sections_overlap_by_half_cover_the_book_and_stay_in_their_file():
    from cwread.retrieval.lexical import section_spans

    lengths = [100] * 50
    spans = section_spans(lengths, chars=1000).tolist()
    assert spans[0] == [0, 10] and spans[1] == [5, 15]  # ten paragraphs, the next from halfway
    covered = {i for first, end in spans for i in range(first, end)}
    assert covered == set(range(50)) and spans[-1][1] == 50
    in_files = section_spans(lengths, file_starts=[1, 21], chars=1000).tolist()
    assert all(end <= 20 or first >= 20 for first, end in in_files)  # none crosses into the second file
    assert [20, 30] in in_files
    # a paragraph longer than a section is a section of its own; an empty book has none
    assert section_spans([5000, 10, 10], chars=1000).tolist()[0] == [0, 1]
    assert section_spans([]).shape == (0, 2)


def test_a_paragraph_is_scored_by_the_section_around_it(tmp_path, cache_dir):
    from cwread.retrieval import lexical

    texts = ["The storm broke the lantern glass.", "She climbed up.", "Nobody saw.", "The cat slept."]
    tokens = lexical.tokenize(texts)
    spans = lexical.section_spans([len(t) for t in texts], chars=60)
    sections = lexical.build_sections(tokens, spans)
    scores = lexical.section_scores(sections, spans, "lantern storm", len(texts))
    assert scores[1] > 0  # it names neither, but its section does
    assert scores[3] == 0  # its section holds no query word
    assert not lexical.section_scores(sections, spans, "zebra", len(texts)).any()


def test_the_section_index_is_cached_and_rebuilt_when_damaged(story, cache_dir):
    from cwread.retrieval.index import document_cache_dir

    doc = api.open_document(str(story))
    assert open_index(doc, None).built == ["bm25"]
    assert open_index(doc, None).built == []
    sections = next(document_cache_dir(doc).glob("sections-v*"))
    (sections / "manifest.json").write_text("{", encoding="utf-8")
    index = open_index(doc, None)
    assert index.built == ["bm25"] and len(index.section_spans) >= 1


def test_words_are_split_and_scored_as_bm25s_splits_and_scores_them(tmp_path):
    """A question reads the saved index without bm25s (whose import is a third of a second):
    the same tokens as bm25s.tokenize over a whole book, the same scores as bm25s's own."""
    import bm25s

    from cwread.retrieval import lexical
    from cwread.text.words import STOPWORDS, stemmer

    book = (Path(__file__).resolve().parent.parent / "examples" / "the_hound_of_the_baskervilles.txt").read_text(encoding="utf-8")
    texts = [p for p in book.split("\n\n") if p.strip()] + ["", "a an the", "Ünïcode wörds, l'été 1889 x"]
    tokens = lexical.tokenize(texts)
    assert tokens == bm25s.tokenize(texts, stopwords=sorted(STOPWORDS), stemmer=stemmer(), return_ids=False, show_progress=False)
    lexical.save_index(lexical.build_index(texts, tokens), tmp_path)
    ours, theirs = lexical.load_index(tmp_path), bm25s.BM25.load(str(tmp_path))
    rng = np.random.default_rng(0)
    terms = sorted(ours.vocab_dict)
    for size in (1, 2, 5, 12):
        asked = [str(t) for t in rng.choice(terms, size)]
        asked += asked[:1]  # a word asked twice counts twice
        assert np.array_equal(ours.get_scores(asked), np.asarray(theirs.get_scores(asked), dtype=np.float32))
    assert lexical.scores(ours, "Why did the hound howl on the moor?", len(texts)).argmax() == int(
        np.argmax(theirs.get_scores([t for t in lexical.tokenize(["Why did the hound howl on the moor?"])[0] if t in theirs.vocab_dict]))
    )


@pytest.mark.parametrize("name", ["indptr.csc.index.npy", "vocab.index.json", "params.index.json"])
def test_an_index_that_cannot_be_read_is_built_again(name, story, cache_dir):
    """Whole by its checksums, yet not an index (arrays that disagree with the vocabulary, a
    vocabulary or parameters of another shape, as a bm25s of another layout could leave): built
    again, not a traceback."""
    from cwread.retrieval.index import document_cache_dir

    doc = api.open_document(str(story))
    open_index(doc, None)
    entry = next(document_cache_dir(doc).glob("bm25-v*"))
    if name.endswith(".npy"):
        np.save(entry / name, np.zeros(2, dtype=np.int32))
    else:
        (entry / name).write_text(json.dumps(["not", "a", "mapping"]), encoding="utf-8")
    manifest = json.loads((entry / "manifest.json").read_text(encoding="utf-8"))
    stat = (entry / name).stat()
    manifest["files"][name] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": file_sha256(entry / name)}
    (entry / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    index = open_index(doc, None)
    assert index.built == ["bm25"] and len(index.lexical.indptr) > 2


@pytest.mark.parametrize("text", ["...\n\n!!! ?\n", "The and of it.\n\nA to 7.\n"])
def test_a_text_without_a_word_to_search_is_one_line_and_exit_2(text, tmp_path, cache_dir, capsys):
    """bm25s cannot index it (it raised deep inside, an internal error, exit 70)."""
    book = tmp_path / "book.txt"
    book.write_text(text, encoding="utf-8")
    code, _, err = run(capsys, "ask", str(book), "Who is here?")
    assert code == 2 and "has no word to search" in err and "Traceback" not in err
    assert len([line for line in err.splitlines() if "error" in line]) == 1


def test_static_vectors_are_the_same_for_a_question_and_for_a_book(cache_dir):
    """A question's rows are widened from float16 as taken, a book's from the table widened once:
    the same vectors either way."""
    from cwread.retrieval.embedders import WIDEN_ALL_TEXTS, load_static_minilm

    e = load_static_minilm()
    texts = [f"The keeper lit lamp number {i} before the storm reached the {i % 7}th rock." for i in range(WIDEN_ALL_TEXTS + 6)]
    whole = e.encode(texts)
    one_by_one = np.concatenate([e.encode([t]) for t in texts])
    assert np.array_equal(whole, one_by_one)


def test_a_number_in_the_question_finds_the_paragraph_that_names_it(capsys, tmp_path, cache_dir):
    """Numbers of any length are words, in the index and in the question (#79: a question on
    milestone 5005 of 9,997 cited milestone 500)."""
    import json

    from tests.conftest import run

    book = tmp_path / "milestones.txt"
    book.write_text(
        "\n\n".join(f"Chapter {i}\n\nThe travellers passed milestone number {i} on the old road." for i in range(1, 6001)),
        encoding="utf-8",
    )
    for number in (5, 50, 500, 5005):
        code, out, _ = run(capsys, "find", str(book), f"Which chapter tells of milestone number {number}?", "--json")
        first = json.loads(out)["segments"][0]
        assert code == 0 and f"milestone number {number} on" in first["text"], (number, first["text"])
