"""A new format, a new backend and a new question kind are each one module and one registry
line: toy ones, registered here, work through the real CLI with nothing else changed."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from cwread.backends import provider, select
from cwread.backends.provider import AutoClaim, BackendSettings, Built, ModelRef, Provider
from cwread.backends.scripted import ScriptedBackend
from cwread.book import formats
from cwread.records import question as question_module
from tests.conftest import run
from tests.plugin_package.cwread_toy_plugin import FORM, EchoSettings
from tests.plugin_package.cwread_toy_plugin import FORMAT as TOY


@pytest.fixture
def toy_format(monkeypatch):
    monkeypatch.setattr(formats, "FORMATS", list(formats.FORMATS))
    formats.register(TOY)
    yield TOY


def test_a_toy_format_registered_in_one_line_is_read_everywhere(capsys, tmp_path, cache_dir, toy_format):
    from cwread.book.formats import source_name
    from cwread.library.catalog import Library

    shelf = tmp_path / "shelf"
    (shelf / "letters").mkdir(parents=True)
    (shelf / "log.toy").write_text("header\n~The keeper lit the lamp.\nnoise\n~The ship came in at dawn.\n", encoding="utf-8")
    (shelf / "letters" / "a.toy").write_text("~Dear brother, the lamp is lit.\n", encoding="utf-8")
    assert source_name("letters/a.toy") == "letters/a" and "Toy" in formats.format_names()
    books = {b.name: b.format for b in Library((shelf,)).books()}
    assert books == {"letters": "folder", "log.toy": "toy"}
    code, out, _ = run(capsys, "show", str(shelf / "log.toy"), "2")
    assert code == 0 and out.startswith("[2] The ship came in at dawn.")
    code, out, _ = run(capsys, "show", str(shelf / "letters"), "a:1")
    assert code == 0 and "Dear brother" in out
    code, out, _ = run(capsys, "search", str(shelf), "lamp", "--json")
    assert code == 0 and {h["book"] for h in json.loads(out)["hits"]} == {"log.toy", "letters"}


# ---- a backend: one module (its provider, settings and builder) and one registry line ------


def _build_echo(settings: BackendSettings, wanted: dict[str, ModelRef]) -> Built:
    words = settings.section(EchoSettings).words
    reply = f"<reason>[5] \"silver medal\"</reason><answer>{words or 'nothing'}</answer>"
    return Built({role: ScriptedBackend(model="echo", default=reply) for role in wanted}, "echo, a toy")


ECHO = Provider(
    "echo",
    "a toy that answers with its words",
    _build_echo,
    EchoSettings,
    auto=lambda settings, wanted: AutoClaim(settings.section(EchoSettings).words == "claim", "; echo claims"),
    auto_order=0,
)


@pytest.fixture
def echo_backend(monkeypatch):
    monkeypatch.setattr(provider, "PROVIDERS", dict(provider.PROVIDERS))
    monkeypatch.setattr(select, "PROVIDERS", provider.PROVIDERS)
    provider.register(ECHO)
    yield ECHO


def test_a_toy_backend_registered_in_one_line_takes_its_own_settings(capsys, story, cache_dir, echo_backend):
    asked = ["ask", str(story), "Where did she keep the medal?", "--answer", "generative", "--json", "--no-cache"]
    code, out, _ = run(capsys, *asked, "--backend", "echo", "--backend-option", "echo.words=In a biscuit tin")
    trace = json.loads(out)
    assert trace["model_answer"] == "In a biscuit tin" and trace["models"]["interpreter"].endswith(":echo")
    # a setting only one backend has needs no prefix; auto asks each provider whether it claims the agents
    code, out, _ = run(capsys, *asked, "--backend-option", "words=claim")
    assert json.loads(out)["model_answer"] == "claim"
    code, _, err = run(capsys, *asked, "--backend", "echo", "--backend-option", "echo.colour=red")
    assert code == 2 and "unknown backend option 'echo.colour'" in err and "echo.words" in err
    code, _, err = run(capsys, *asked, "--backend", "embedded", "--backend-option", "words=x")
    assert code == 2 and "echo.words applies to --backend echo" in err


# ---- a question kind: one form and one registry line ----------------------------------------


YES_NO = replace(FORM, title=None)  # the plug-in's kind, headed by its name


@pytest.fixture
def yes_no_kind(monkeypatch):
    monkeypatch.setattr(question_module, "FORMS", dict(question_module.FORMS))
    question_module.register(YES_NO)
    yield YES_NO


def test_a_toy_question_kind_registered_in_one_line_is_asked_read_and_exits_by_its_form(
    capsys, story, cache_dir, yes_no_kind, scripted
):
    scripted.interpreter.enqueue('<reason>[5] "she kept in a biscuit tin"</reason><answer>no.</answer>')
    asked = ["ask", str(story), "Did she keep the medal in a drawer?", "--kind", "yes-no", "--backend", "scripted"]
    code, out, _ = run(capsys, *asked, "--answer", "generative", "--finder", "off", "--json", "--no-cache")
    trace = json.loads(out)
    request = scripted.interpreter.requests[-1]
    prompt = request.messages[-1][1]
    assert "Yes-or-no question: Did she keep" in prompt and "<answer>, YES or NO, </answer>" in prompt
    assert '"Yes"' in request.grammar and request.schema["properties"]["answer"]["enum"] == ["YES", "NO"]
    # read by its form ("no." is NO), a verdict, and the exit its false label gives
    assert (trace["kind"], trace["model_answer"], trace["verdict"]) == ("yes-no", "NO", "NO")
    assert code == 1 and trace["status"] == "answered"
    code, _, err = run(capsys, *asked[:3], "--kind", "haiku")
    assert code == 2 and "unknown question kind 'haiku'" in err and "yes-no" in err


def test_a_kind_asked_without_what_it_needs_is_one_line(capsys, story, cache_dir):
    code, _, err = run(capsys, "ask", str(story), "Which?", "--kind", "mcq")
    assert code == 2 and 'needs its options: -o "A=text"' in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "ask", str(story), "The lamp went dark.", "--kind", "claim", "-o", "A=x", "-o", "B=y")
    assert code == 2 and "a claim takes no options" in err


def test_a_registered_kind_is_shown_in_the_terminal_view_under_its_kind(capsys, story, cache_dir, yes_no_kind, scripted):
    scripted.interpreter.enqueue('<reason>[5] "she kept in a biscuit tin"</reason><answer>no.</answer>')
    asked = ["ask", str(story), "Did she keep the medal in a drawer?", "--kind", "yes-no", "--backend", "scripted"]
    code, out, _ = run(capsys, *asked, "--answer", "generative", "--finder", "off", "--no-cache")
    assert code == 1 and "yes-no: Did she keep the medal in a drawer?" in out and "Answer: NO" in out
