"""The reading session (`api.open`), the plan it records and the Finder as a swappable judge."""

from __future__ import annotations

import json

import pytest

from cwread import api
from cwread.agents.finder import GenerativeFinder, ScoringFinder, ScriptedFinder, make_finder
from cwread.backends import Generation
from cwread.backends import select as backend_select
from cwread.backends.scripted import ScriptedBackend
from cwread.backends.select import Selection
from cwread.errors import InputError
from cwread.records.question import leans_on_previous
from cwread.retrieval import index as book_index
from cwread.run import planning, question_run, session
from cwread.settings import FinderSettings
from tests.conftest import run
from tests.scripted_replies import finder_reply, smart_interpreter

NO_CACHE = api.Settings(api.SessionSettings(use_cache=False))

MEDAL = "What did the fishermen give her?"


def selection() -> Selection:
    return Selection(
        ScriptedBackend(default=finder_reply, model="f"),
        ScriptedBackend(default=smart_interpreter, model="i"),
        "s",
    )


def test_a_session_answers_as_one_call_asks_and_builds_nothing_twice(story, cache_dir, monkeypatch):
    opened, loaded, selected = [], [], []
    monkeypatch.setattr(
        session, "open_index", lambda *a, **k: opened.append(1) or book_index.open_index(*a, **k)
    )
    monkeypatch.setattr(session, "load_embedder", lambda *a: loaded.append(1) or api.load_embedder(*a))
    chosen = selection()
    monkeypatch.setattr(session, "select", lambda settings, use_cache, notice=None: selected.append(1) or chosen)
    questions = [
        api.make_question(MEDAL),
        api.make_question("Who slept on the lamp?"),
        api.make_question(MEDAL),
    ]

    book = api.open(str(story), NO_CACHE)
    held = [book.ask(q) for q in questions]
    assert (len(opened), len(loaded), len(selected)) == (1, 1, 1)  # three questions, one of each

    single = [
        api.ask(api.open_document(str(story)), q, NO_CACHE, selection=selection()) for q in questions
    ]
    assert [(t.answer, t.citations) for t in held] == [(t.answer, t.citations) for t in single]
    assert held[0].answer and held[0].citations


def test_a_session_says_which_backend_runs_once(story, cache_dir, monkeypatch):
    monkeypatch.setattr(backend_select, "select_backends", lambda settings: selection())
    heard: list[str] = []
    book = api.open(str(story), NO_CACHE)
    for _ in range(2):
        book.ask(api.make_question(MEDAL), notice=heard.append)
    assert heard.count("s") == 1


def test_the_trace_records_the_plan(capsys, story, cache_dir, scripted):
    scripted.interpreter = ScriptedBackend(default=smart_interpreter)
    code, out, _ = run(capsys, "ask", str(story), MEDAL, "--backend", "scripted", "--no-cache", "--json")
    plan = json.loads(out)["plan"]
    assert code == 0 and plan["evidence"] == "finder" and plan["finder"] == "quote-first"
    assert plan["read_tokens"] == "auto" and plan["interpreter"] and plan["verdict"]
    scripted.finder.size = 135_000_000  # the embedded default's measured fact: keeps nearly all
    code, out, _ = run(capsys, "ask", str(story), MEDAL, "--backend", "scripted", "--no-cache", "--json")
    plan = json.loads(out)["plan"]
    assert plan["evidence"] == "all-read" and plan["finder"] is None and "99.7%" in plan["finder_skipped"]


def test_a_scripted_finder_plugs_into_the_pipeline(story, cache_dir):
    book = api.open(str(story), NO_CACHE, selection=selection())
    scores = {5: 3.0}  # the medal's paragraph

    def score(segment, question):
        return max(scores.get(pid, -2.0) for pid in segment.ids)

    trace = book.ask(
        api.make_question(MEDAL),
        api.RunSettings(budget=api.make_budget(p_r=0, p_w=1)),
        stages=question_run.Stages(finder=ScriptedFinder(score)),
    )
    assert trace.plan.finder == "scripted" and trace.verdicts
    assert {v.segment.start for v in trace.verdicts if v.decision == "YES"} == {5}
    assert all(v.score in (3.0, -2.0) for v in trace.verdicts)
    assert 5 in trace.packet.ids


def test_the_scoring_finder_keeps_by_its_score_in_one_call_a_segment(capsys, story, cache_dir, scripted):
    def scored(request):
        text = finder_reply(request)  # "<answer>YES|NO</answer>" for the decision-first prompt
        yes = "YES" in text
        return Generation(
            text, label_logprobs=(("YES", -0.1 if yes else -2.5), ("NO", -2.5 if yes else -0.1))
        )

    scripted.finder = ScriptedBackend(default=scored, logprobs=True)
    scripted.interpreter = ScriptedBackend(default=smart_interpreter)
    args = [
        "ask",
        str(story),
        MEDAL,
        "--backend",
        "scripted",
        "--no-cache",
        "--json",
        "--set",
        "budget.p_r=0",
        "--set",
        "budget.p_w=1",
    ]
    code, out, _ = run(capsys, *args, "--set", "finder.reply=score")
    trace = json.loads(out)
    assert code == 0 and trace["plan"]["finder"] == "score"
    assert len(scripted.finder.requests) == len(trace["finder"])  # no clue call after a YES
    assert [v["start"] for v in trace["finder"] if v["decision"] == "YES"] == [5]
    assert all(v["quotes"] == [] for v in trace["finder"])
    scripted.finder.requests.clear()
    code, out, _ = run(capsys, *args, "--set", "finder.reply=score", "--set", "finder.keep_threshold=-3")
    assert {v["decision"] for v in json.loads(out)["finder"]} == {"YES"}  # every score reaches -3


def test_make_finder_chooses_the_judge_the_settings_name():
    backend = ScriptedBackend(logprobs=True)
    assert isinstance(make_finder(FinderSettings(), backend), GenerativeFinder)
    assert make_finder(FinderSettings(reply="decision-first"), backend).reply == "decision-first"
    scoring = make_finder(FinderSettings(reply="score", keep_threshold=1.5), backend)
    assert isinstance(scoring, ScoringFinder) and scoring.threshold == 1.5


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"use": "sometimes"}, "finder.use must be one of"),
        ({"reply": "poem"}, "finder.reply must be one of"),
        ({"keep_threshold": float("nan")}, "finite number"),
        ({"read_tokens": "lots"}, "finder.read_tokens must be"),
    ],
)
def test_finder_settings_are_checked_once_where_they_are_made(settings, message):
    with pytest.raises(InputError, match=message):
        FinderSettings(**settings)


def test_the_budget_holds_no_finder_setting():
    assert set(api.Budget.__dataclass_fields__) == {
        "preset", "anchors", "read", "n_e", "p_r", "p_w", "b_c", "why", "fixed"
    }  # fmt: skip
    with pytest.raises(TypeError, match="keep_threshold"):  # a Finder setting, not the budget's
        api.make_budget(keep_threshold=1.0)


def test_the_readme_python_example_runs(tmp_path, monkeypatch):
    """The README's Python block, as written, on the embedded default (an extractive answer:
    no model call)."""
    import re

    from tests.conftest import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```python\n(.*?)```", readme, re.S)
    monkeypatch.setenv("CWREAD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # nothing listens: auto picks embedded
    monkeypatch.delenv("CWREAD_BACKEND", raising=False)
    monkeypatch.chdir(REPO)
    printed: list[tuple] = []
    exec(block, {"print": lambda *args: printed.append(args)})  # our own README, as written
    [(answer, citations)] = printed
    assert answer and citations and "wall" in answer


def test_a_follow_up_is_retrieved_and_answered_with_the_last_turn_in_view(story, cache_dir):

    from cwread.run.session import Conversation

    chosen = selection()
    conversation = Conversation(api.open(str(story), NO_CACHE, selection=chosen))
    first = conversation.ask(api.make_question("Who kept the lighthouse on Gannet Rock?"))
    assert first.follows is None
    asked = len(chosen.interpreter.requests)
    follow = conversation.ask(api.make_question("What did the fishermen give her?"))
    assert follow.follows is not None and follow.follows.number == 1
    assert follow.follows.question == "Who kept the lighthouse on Gannet Rock?"
    [request] = chosen.interpreter.requests[asked : asked + 1]
    user = request.messages[-1][1]
    assert "Conversation so far" in user and "it is not evidence" in user
    assert user.index("</evidence>") < user.index("Conversation so far") < user.index("Question:")
    named = conversation.ask(api.make_question("Who slept on the lamp?"))  # stands alone
    assert named.follows is None
    assert [t.number for t in conversation.turns] == [1, 2, 3]
    assert leans_on_previous(api.make_question("And why did she do it?"))
    assert not leans_on_previous(api.make_question("Why did Martha climb the tower?"))


def test_a_follow_up_cannot_quote_the_conversation(story, cache_dir):
    """Quotes come only from the book: one of the last answer's words, not in the packet, is dropped."""
    from cwread.run.session import Conversation

    first_answer = '<reason>[2] "Martha Quill kept the lighthouse on Gannet Rock for thirty years, and she never once let the lamp go dark."</reason><answer>Martha Quill</answer>'
    forged = '<reason>[99] "Martha Quill, the keeper"</reason><answer>a medal</answer>'
    interpreter = ScriptedBackend([first_answer, forged, forged], model="i")
    chosen = Selection(ScriptedBackend(default=finder_reply, model="f"), interpreter, "s")
    conversation = Conversation(api.open(str(story), NO_CACHE, selection=chosen))
    conversation.ask(
        api.make_question("Who kept the lighthouse?"), api.RunSettings(answering=api.AnswerSettings(self_check=False))
    )
    trace = conversation.ask(
        api.make_question("What did they give her?"), api.RunSettings(answering=api.AnswerSettings(self_check=False))
    )
    assert trace.follows is not None
    assert trace.interpreter.reply.quotes == () and trace.interpreter.reply.forged
    # its words stand on no quote: what is shown is a sentence of the book, quoted where it is
    assert trace.outcome.mode == "extractive" and [q.id for q in trace.outcome.quotes] == [5]


def test_the_backends_a_plan_calls_are_warmed_before_the_book_is_searched(story, cache_dir, monkeypatch):
    chosen = selection()
    monkeypatch.setattr(session, "select", lambda settings, use_cache, notice=None: chosen)
    events: list[str] = []
    for name, backend in (("finder", chosen.finder), ("interpreter", chosen.interpreter)):
        monkeypatch.setattr(
            backend,
            "warm",
            lambda notice=None, decisions_only=False, name=name: events.append(f"warm {name}" + " decisions" * decisions_only),
        )
    real_index = session.Session.index
    monkeypatch.setattr(
        session.Session, "index", lambda self, *a, **k: events.append("find") or real_index(self, *a, **k)
    )
    book = api.open(str(story), NO_CACHE)
    book.ask(api.make_question(MEDAL))  # the scripted model writes: the Interpreter is asked
    assert events[-1] == "find" and "warm interpreter" in events[:-1]
    events.clear()
    planned = book.plan(api.make_question(MEDAL))
    called = planning.backends_called(planned)
    assert chosen.interpreter in called and len(called) == len({id(b) for b in called})
