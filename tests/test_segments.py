import pytest

from cwread.errors import InputError
from cwread.retrieval.segments import PRESETS, SEGMENT_CHAR_CAP, Budget, build_segments, make_budget


def budget(**kw) -> Budget:
    base = dict(preset="t", anchors=3, read=10, n_e=5, p_r=2, p_w=5, b_c=13000)
    base.update(kw)
    return Budget(**base)


def coverage(segments, n):
    seen = [pid for s in segments for pid in s.ids]
    return sorted(seen) == list(range(1, n + 1))


def test_every_paragraph_is_in_exactly_one_segment():
    n = 57
    scores = [((i * 37) % 101) / 101 for i in range(n)]
    segs = build_segments([100] * n, scores, budget())
    assert coverage(segs, n)


def test_anchor_segments_hold_the_top_paragraphs_with_neighbours():
    n = 40
    scores = [0.0] * n
    scores[9] = 0.9  # id 10
    scores[29] = 0.8  # id 30
    scores[0] = 0.7  # id 1
    segs = build_segments([50] * n, scores, budget(anchors=3, p_r=2))
    anchors = [s for s in segs if s.origin == "anchor"]
    assert [(s.start, s.end, s.anchors) for s in anchors] == [(9, 11, (10,)), (29, 31, (30,)), (1, 2, (1,))]
    assert anchors[0].score == pytest.approx(0.9)


def test_p_r_sets_the_neighbours_and_p_w_the_window_size():
    n = 30
    scores = [0.0] * n
    scores[14] = 1.0  # id 15
    segs = build_segments([10] * n, scores, budget(anchors=1, p_r=4, p_w=3))
    assert (segs[0].start, segs[0].end) == (13, 17)
    windows = [s for s in segs if s.origin == "window"]
    assert all(len(s.ids) <= 3 for s in windows)
    assert coverage(segs, n)


def test_overlapping_anchors_merge():
    n = 20
    scores = [0.0] * n
    scores[4], scores[5] = 0.9, 0.8  # ids 5 and 6
    segs = build_segments([10] * n, scores, budget(anchors=2, p_r=2))
    anchors = [s for s in segs if s.origin == "anchor"]
    assert len(anchors) == 1
    assert (anchors[0].start, anchors[0].end, anchors[0].anchors) == (4, 7, (5, 6))


def test_character_cap_limits_segments():
    n = 12
    lengths = [SEGMENT_CHAR_CAP // 2 + 10] * n
    scores = [0.0] * n
    scores[5] = 1.0
    segs = build_segments(lengths, scores, budget(anchors=1, p_r=4, p_w=6))
    for s in segs:
        assert sum(lengths[i - 1] for i in s.ids) <= SEGMENT_CHAR_CAP or len(s.ids) == 1
    assert 6 in segs[0] and coverage(segs, n)


def test_anchors_come_first_then_windows_by_score():
    n = 50
    scores = [i / 100 for i in range(n)]
    segs = build_segments([10] * n, scores, budget(anchors=2))
    sources = [s.origin for s in segs]
    assert sources[: sources.count("anchor")] == ["anchor"] * sources.count("anchor")
    window_scores = [s.score for s in segs if s.origin == "window"]
    assert window_scores == sorted(window_scores, reverse=True)


def test_more_anchors_than_paragraphs_and_empty_input():
    segs = build_segments([10, 10], [0.5, 0.1], budget(anchors=8))
    assert coverage(segs, 2)
    assert build_segments([], [], budget()) == []


def test_presets_match_the_paper_and_overrides_validate():
    assert (
        PRESETS["focused"].n_e,
        PRESETS["focused"].p_r,
        PRESETS["focused"].p_w,
        PRESETS["focused"].b_c,
    ) == (5, 2, 5, 13000)
    assert (PRESETS["broad"].n_e, PRESETS["broad"].p_r, PRESETS["broad"].p_w, PRESETS["broad"].b_c) == (
        10,
        4,
        6,
        15000,
    )
    b = make_budget("broad", p_w=8, n_e=None)
    assert b.p_w == 8 and b.n_e == 10
    with pytest.raises(InputError, match="unknown preset"):
        make_budget("huge")
    with pytest.raises(InputError, match="p_w"):
        make_budget("focused", p_w=0)
    assert make_budget("focused", p_r=0).p_r == 0


# ---- the auto budget: fitted to the book and the Interpreter ----------------------------------


def test_auto_is_the_default_and_a_story_gets_the_focused_values():
    from cwread.retrieval.segments import fit_budget

    requested = make_budget()
    assert requested.preset == "auto" and requested.fixed == ()
    fitted = fit_budget(requested, [300] * 404)
    focused = PRESETS["focused"]
    assert fitted.preset == "story"
    assert (fitted.anchors, fitted.read, fitted.n_e, fitted.p_r, fitted.p_w, fitted.b_c) == (
        focused.anchors, focused.read, focused.n_e, focused.p_r, focused.p_w, focused.b_c
    )  # fmt: skip
    assert "404 paragraphs" in fitted.why and "focused" in fitted.why


def test_a_novel_widens_the_budget_and_its_anchors_and_reading_grow_with_it():
    from cwread.retrieval.segments import NOVEL, fit_budget

    hound, styles, moonstone, huge = (
        fit_budget(make_budget(), [200] * n) for n in (1546, 2632, 3763, 100_000)
    )
    for fitted in (hound, styles, moonstone, huge):
        assert fitted.preset == "novel" and "novel" in fitted.why
        assert (fitted.n_e, fitted.p_r, fitted.p_w, fitted.b_c) == (
            NOVEL["n_e"],
            NOVEL["p_r"],
            NOVEL["p_w"],
            NOVEL["b_c"],
        )
    assert 8 < hound.anchors < styles.anchors < moonstone.anchors < huge.anchors == 40
    assert 24 < hound.read < styles.read < moonstone.read == huge.read == 160
    assert hound.read >= 2 * hound.anchors  # windows past the anchors are read too


def test_the_interpreter_context_cuts_b_c_and_what_you_set_stays():
    from cwread.retrieval.segments import fit_budget

    small = fit_budget(make_budget(), [200] * 3000, context_tokens=4096)
    assert small.b_c == 8600 and "4,096-token context" in small.why  # 60% of 4,096 tokens at 3.5 chars
    assert fit_budget(make_budget(), [200] * 3000, context_tokens=32768).b_c == 16000  # room: no cut
    mine = fit_budget(make_budget(anchors=3, b_c=5000), [200] * 3000, context_tokens=4096)
    assert (mine.anchors, mine.b_c, mine.p_w) == (3, 5000, 8) and "set by you: anchors, b_c" in mine.why
    again = fit_budget(mine, [200] * 10, context_tokens=100)
    assert again == mine  # a fitted budget stays as fitted


def test_a_fixed_preset_is_kept_as_it_is_and_says_so():
    from cwread.retrieval.segments import fit_budget

    broad = fit_budget(make_budget("broad", p_w=8), [200] * 3000, context_tokens=512)
    assert (broad.preset, broad.anchors, broad.p_w, broad.b_c) == ("broad", 16, 8, 15000)
    assert broad.why == "the broad preset; set by you: p_w"
    with pytest.raises(TypeError, match="why"):  # what the budget says of itself is no setting
        make_budget(why="because")


def test_a_paragraph_left_out_is_in_no_segment_and_bounds_those_beside_it():
    """A table of contents (Document.asides) is never an anchor nor inside a segment: the
    anchor beside it stops short of it, and the windows run on past it."""
    n = 30
    scores = [0.0] * n
    scores[4] = 0.9  # id 5, the best: would be an anchor
    scores[5] = 0.8  # id 6, beside it
    segs = build_segments([100] * n, scores, budget(anchors=2, p_r=4), left_out={5, 20})
    seen = sorted(pid for s in segs for pid in s.ids)
    assert seen == [pid for pid in range(1, n + 1) if pid not in (5, 20)]
    first = segs[0]
    assert first.origin == "anchor" and first.anchors[0] == 6 and first.start == 6


def test_a_books_tier_is_decided_once_and_its_budget_plan_and_answer_read_it():
    """One tier (cwread.book.Tier) past NOVEL_PARAGRAPHS: the budget's preset, the plan's
    answer mode and how an extractive answer is cut all follow
    it, at the boundary."""
    from cwread.answer.extractive import extract_kind, sentence_ranker
    from cwread.backends.scripted import ScriptedBackend
    from cwread.backends.select import Selection
    from cwread.book import NOVEL_PARAGRAPHS, Tier, document_from_bytes
    from cwread.records.plan import AnswerMode, Extract
    from cwread.records.question import Question
    from cwread.retrieval.segments import fit_budget
    from cwread.run.planning import plan_run

    model = ScriptedBackend(model="m")  # a model that writes
    for n, tier in ((NOVEL_PARAGRAPHS, Tier.STORY), (NOVEL_PARAGRAPHS + 1, Tier.NOVEL)):
        text = "\n\n".join(f"Day {i} passed quietly at the mill." for i in range(n))
        book = document_from_bytes(text.encode(), "tale.txt")
        assert book.tier == tier
        assert fit_budget(make_budget(), book.lengths).preset == tier
        planned = plan_run(
            Question("Why did the mill stop?", "open"),
            Selection(model, model, "scripted"),
            tier=book.tier,
            rank=sentence_ranker(book, None),
        )
        novel = tier == Tier.NOVEL
        # where its quotes do not back its words: in a novel where the book answers, not a guess
        assert (planned.plan.answer_mode == AnswerMode.GENERATIVE_OR_PASSAGES) is novel
        assert (extract_kind(book.tier) == Extract.SENTENCE) is novel  # the span reader ships
