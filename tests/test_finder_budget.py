"""The Finder's reading budget in prompt tokens, and its decision-first reply, through the CLI
on the scripted backend (plus the rate store's own rules)."""

import json

import pytest

from cwread.agents import reading_budget as reading
from cwread.backends import Capabilities, Generation
from cwread.errors import InputError
from cwread.settings import FinderSettings
from tests.conftest import run
from tests.scripted_replies import finder_reply

SPLIT = ("--set", "budget.p_r=0", "--set", "budget.anchors=6")  # each paragraph a segment of its own: six to read


def ask(capsys, story, *extra):
    code, out, err = run(
        capsys, "ask", str(story), "What did the fishermen give her?", "--backend", "scripted",
        "--answer", "extractive", "--json", *SPLIT, *extra,
    )
    assert code == 0, err
    return json.loads(out)


def prompt_tokens(trace) -> list[int]:
    return [len(" ".join(c for _, c in r.messages).split()) for r in trace]


class Named:
    """Stands for the scripted Finder where only its rate key counts."""

    name, model = "scripted", "finder"
    capabilities = Capabilities()


def test_a_token_budget_reads_segments_in_rank_order_until_it_is_spent(capsys, story, cache_dir, scripted):
    everything = ask(capsys, story, "--set", "finder.read_tokens=none")
    assert len(everything["finder"]) == 6 and everything["not_read"] is None
    assert "reading" not in everything["skipped"]
    costs = prompt_tokens(scripted.finder.requests)
    scripted.finder.requests.clear()
    budget = costs[0] + costs[1]  # the first two segments exactly
    trace = ask(capsys, story, "--set", f"finder.read_tokens={budget}", "--no-cache")
    assert [(v["start"], v["end"]) for v in trace["finder"]] == [
        (v["start"], v["end"]) for v in everything["finder"][:2]
    ]
    assert len(scripted.finder.requests) == 2  # no call for what was not read
    unread = trace["not_read"]
    assert unread["budget_tokens"] == budget and unread["why"] == f"finder.read_tokens={budget:,}"
    assert [(s["start"], s["end"]) for s in unread["segments"]] == [
        (v["start"], v["end"]) for v in everything["finder"][2:]
    ]
    assert trace["skipped"]["reading"].startswith("4 of 6 segments")


def test_the_first_segment_is_read_whatever_the_budget(capsys, story, cache_dir, scripted):
    trace = ask(capsys, story, "--set", "finder.read_tokens=1")
    assert len(trace["finder"]) == 1 and len(trace["not_read"]["segments"]) == 5


def test_the_view_says_what_was_not_read(capsys, story, cache_dir, scripted):
    code, _out, err = run(
        capsys, "ask", str(story), "What did the fishermen give her?", "--backend", "scripted",
        "--answer", "extractive", *SPLIT, "--set", "finder.read_tokens=1",
    )
    assert code == 0, err
    assert "Not read: 5 of 6 segments, once the Finder's budget of 1 prompt tokens was spent" in " ".join(err.split())


def test_an_auto_budget_measures_the_first_call_and_keeps_the_rate(capsys, story, cache_dir, scripted):
    # each Finder call "takes" 20 s: the first call's rate allows 30 s of reading, 1.5 calls
    scripted.finder._default = lambda request: Generation(finder_reply(request), seconds=20.0)
    trace = ask(capsys, story)
    assert len(trace["finder"]) == 1 and len(trace["not_read"]["segments"]) == 5
    assert "measured for finder on this machine" in trace["not_read"]["why"]
    stored = json.loads(reading.rates_path().read_text())
    [(key, entry)] = stored.items()
    assert key.startswith("scripted|finder|") and entry["tokens_per_second"] > 0
    # the next question reads by the stored rate, even though its calls now "take" no time
    scripted.finder._default = finder_reply
    again = ask(capsys, story, "--no-cache")
    assert len(again["finder"]) == 1 and again["not_read"]["budget_tokens"] == trace["not_read"]["budget_tokens"]


def test_an_auto_budget_with_a_fast_rate_reads_everything(capsys, story, cache_dir, scripted):
    reading.store_rate(Named(), 1e6)
    trace = ask(capsys, story)
    assert len(trace["finder"]) == 6 and trace["not_read"] is None


def test_concurrent_calls_wait_for_the_first_to_measure_the_rate(capsys, story, cache_dir, scripted):
    scripted.finder.concurrency = 4
    scripted.finder._default = lambda request: Generation(finder_reply(request), seconds=20.0)
    trace = ask(capsys, story)
    assert len(trace["finder"]) == 1 and len(scripted.finder.requests) == 1


def test_decision_first_asks_the_quote_of_kept_segments_only(capsys, story, cache_dir, scripted):
    quote_first = ask(capsys, story, "--no-cache")
    calls_before = len(scripted.finder.requests)
    scripted.finder.requests.clear()
    trace = ask(capsys, story, "--no-cache", "--set", "finder.reply=decision-first")
    kept = [v for v in trace["finder"] if v["decision"] == "YES"]
    assert [v["decision"] for v in trace["finder"]] == [v["decision"] for v in quote_first["finder"]]
    assert len(kept) == 1 and len(scripted.finder.requests) == calls_before + len(kept)
    assert kept[0]["quotes"] == next(v for v in quote_first["finder"] if v["decision"] == "YES")["quotes"]
    assert all(v["quotes"] == [] for v in trace["finder"] if v["decision"] == "NO")
    [clue] = [r for r in scripted.finder.requests if len(r.messages) == 4]
    assert clue.messages[2] == ("assistant", "<answer>YES</answer>")  # on the decision's prompt
    assert trace["answer"] == quote_first["answer"]


@pytest.mark.parametrize("value", ["0", "-5", "lots", "1.5"])
def test_a_bad_read_tokens_is_one_line(capsys, story, cache_dir, scripted, value):
    code, _, err = run(capsys, "ask", str(story), "q?", "--backend", "scripted", "--set", f"finder.read_tokens={value}")
    assert code == 2 and "finder.read_tokens must be" in err and len(err.strip().splitlines()) == 1


def test_a_bad_finder_reply_is_one_line(capsys, story, cache_dir, scripted):
    code, _, err = run(capsys, "ask", str(story), "q?", "--backend", "scripted", "--set", "finder.reply=poem")
    assert code == 2 and "finder.reply must be one of auto, quote-first, decision-first" in err


def test_a_damaged_rate_file_is_measured_again(cache_dir):
    reading.rates_path().parent.mkdir(parents=True, exist_ok=True)
    for damage in ("{", "[]", '{"scripted|finder|2 cpus": {"tokens_per_second": "fast"}}'):
        reading.rates_path().write_text(damage)
        assert reading.stored_rate(Named()) is None
    reading.store_rate(Named(), 42.0)
    assert reading.stored_rate(Named()) == 42.0


def test_a_stored_rate_holds_until_calls_drift_past_the_factor(cache_dir):
    reading.store_rate(Named(), 100.0)
    budget = reading.ReadingBudget.auto(Named())
    assert budget.limit() == int(reading.FINDER_SECONDS * 100)
    for seconds in (1.0, 0.8, 1.2):  # 150, 188, 125 tokens/s: within a factor of 2
        budget.observe(150, seconds, cached=False)
    budget.settle()
    assert reading.stored_rate(Named()) == 100.0
    slower = reading.ReadingBudget.auto(Named())
    for _ in range(3):
        slower.observe(200, 10.0, cached=False)  # 20 tokens/s: the machine got slower
    slower.observe(200, 0.0001, cached=True)  # a cached call says nothing of the rate
    slower.settle()
    assert slower.limit() == int(reading.FINDER_SECONDS * 100)  # this question's budget stands
    assert reading.stored_rate(Named()) == 20.0


def test_finder_settings_read_the_read_tokens_flag_once():
    assert FinderSettings(read_tokens="auto").read_tokens == "auto"
    # the API's default reads as `ask` does (the README's Python example); eval states no cap
    from cwread.settings import EVAL_READ_TOKENS, RunSettings

    assert RunSettings().finding.read_tokens == FinderSettings().read_tokens == "auto" and EVAL_READ_TOKENS is None
    assert FinderSettings(read_tokens=" None ").read_tokens is None
    assert FinderSettings(read_tokens="2000").read_tokens == 2000
    assert FinderSettings(read_tokens=2000).read_tokens == 2000
    for bad in ("0", 0, True, "1.5"):
        with pytest.raises(InputError, match=r"finder\.read_tokens must be"):
            FinderSettings(read_tokens=bad)


def test_doctor_says_what_an_auto_budget_reads_here(capsys, cache_dir, scripted):
    code, out, err = run(capsys, "doctor", "--backend", "scripted")
    assert code == 0, err
    assert "reading rate for finder is not measured yet" in " ".join((out + err).split())
    reading.store_rate(Named(), 42.0)
    code, out, err = run(capsys, "doctor", "--backend", "scripted")
    text = " ".join((out + err).split())
    assert "reads 42 prompt tokens/s with finder" in text and f"about {int(42 * reading.FINDER_SECONDS):,} tokens" in text


def test_a_rate_first_measured_on_one_call_is_replaced_by_the_runs_median(cache_dir):
    budget = reading.ReadingBudget.auto(Named())
    assert budget.limit() is None
    budget.observe(300, 10.0, cached=False)  # 30 tokens/s: the first call, the model cold
    assert budget.limit() == int(reading.FINDER_SECONDS * 30)
    for _ in range(4):
        budget.observe(300, 6.0, cached=False)  # 50 tokens/s once warm
    budget.settle()
    assert reading.stored_rate(Named()) == 50.0
