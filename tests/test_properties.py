"""Property-based tests (hypothesis) of the paragraph splitter and the reply parser."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cwread.agents.finder import parse_finder_reply
from cwread.agents.interpreter import parse_reply
from cwread.agents.shared import split_citations
from cwread.book import parse_paragraphs
from cwread.book.grounding import find_quotes
from cwread.records.question import Question

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Text as users give it: letters, punctuation, spaces, tabs, newlines (blank lines included),
# CRLF, non-ASCII. No hyphens: a word hyphenated across a line break is joined on purpose.
_CHARS = st.sampled_from(list("abcdefghij KLMNOP.,;:!?'\"\t\n\n\r\néüß—“”0123456789[]<>/"))
texts = st.text(_CHARS, max_size=600)
words = st.text(st.sampled_from(list("abcdefghijklmnop")), min_size=1, max_size=9)
paragraph_texts = st.lists(words, min_size=1, max_size=30).map(" ".join)


@FAST
@given(texts)
def test_ids_are_one_based_and_consecutive(text):
    paragraphs = parse_paragraphs(text)
    assert [p.id for p in paragraphs] == list(range(1, len(paragraphs) + 1))
    assert all(p.text and p.text == p.text.strip() for p in paragraphs)


@FAST
@given(texts)
def test_the_text_round_trips_word_for_word(text):
    """Every word of the input is in exactly one paragraph, in order; nothing is added."""
    paragraphs = parse_paragraphs(text)
    assert " ".join(p.text for p in paragraphs).split() == text.split()


@FAST
@given(texts)
def test_ids_are_stable(text):
    """The same text gives the same ids, whatever its line endings, every time."""
    first = parse_paragraphs(text)
    assert parse_paragraphs(text) == first
    crlf = parse_paragraphs(text.replace("\r\n", "\n").replace("\n", "\r\n"))
    assert [(p.id, p.text) for p in crlf] == [(p.id, p.text) for p in first]


@FAST
@given(st.lists(paragraph_texts, min_size=1, max_size=12), st.integers(min_value=0, max_value=11))
def test_paragraphs_separated_by_blank_lines_keep_their_ids(blocks, edited):
    """Editing one paragraph's words moves no other paragraph's id or text."""
    before = parse_paragraphs("\n\n".join(blocks))
    assert [p.text for p in before] == blocks
    edited %= len(blocks)
    changed = list(blocks)
    changed[edited] += " added words"
    after = parse_paragraphs("\n\n".join(changed))
    assert [p.id for p in after] == [p.id for p in before]
    assert [p.text for i, p in enumerate(after) if i != edited] == [
        p.text for i, p in enumerate(before) if i != edited
    ]


replies = st.one_of(
    st.text(max_size=400),
    st.builds(
        lambda a, b, c: f"{a}<reason>{b}</reason>{c}<answer>{b[:5]}</answer>",
        st.text(max_size=40),
        st.text(max_size=80),
        st.text(max_size=40),
    ),
    st.sampled_from(
        ["<answer>", "</answer><answer>", "<reason><reason>[3", '<answer>B</answer>[9999999999] "x"', "<ANSWER> yes"]
    ),
)
QUESTIONS = [
    Question("Why?", "open"),
    Question("Who?", "mcq", {"A": "one", "B": "two", "C": "three"}),
    Question("The keeper slept.", "claim"),
]


@FAST
@given(replies)
def test_the_parser_never_raises_and_answers_only_what_is_allowed(reply):
    finder = parse_finder_reply(reply)
    assert finder.answer in (None, "YES", "NO")
    for question in QUESTIONS:
        parsed = parse_reply(reply, question)
        if question.kind == "mcq":
            assert parsed.answer in (None, "A", "B", "C")
        elif question.kind == "claim":
            assert parsed.answer in (None, "TRUE", "FALSE")
        assert parsed.answer is None or parsed.problem is None or parsed.problem == "no <reason> tag"


shown_ids = st.sets(st.integers(min_value=1, max_value=60), min_size=1, max_size=8)


@FAST
@given(st.text(st.sampled_from(list('[]0123456789-–, "abc')), max_size=200), shown_ids)
def test_a_citation_is_only_ever_a_shown_id(reason, shown):
    cited, unshown = split_citations(reason, shown)
    assert set(cited) <= shown and not set(unshown) & shown


@FAST
@given(
    st.dictionaries(st.integers(min_value=1, max_value=9), paragraph_texts, min_size=1, max_size=5),
    st.lists(st.tuples(st.integers(min_value=0, max_value=12), st.text(max_size=40)), max_size=6),
)
def test_a_quote_is_only_ever_text_of_a_shown_paragraph(book, items):
    reason = " ".join(f'[{pid}] "{text}"' for pid, text in items)
    quotes, _ = find_quotes(reason, book)
    for quote in quotes:
        assert quote.id in book
        assert book[quote.id][quote.start : quote.end] == quote.text and quote.text
