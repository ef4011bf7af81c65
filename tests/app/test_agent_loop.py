"""The "Where it runs" lesson: the same strategy after START and before every model call, its text
taken from the replays it shows."""
from __future__ import annotations

import dataclasses

import pytest
from streamlit.testing.v1 import AppTest

import ctxlab
from ctxlab.measure import measure
from ctxlab.strategies import STRATEGIES, Budget, get_strategy
from ctxlab.tokens import TokenCounter

from ..conftest import SAMPLES
from .helpers import open_page

RUN = SAMPLES / "agent_run_support.json"


def _engine(name: str, limit: int, where: str):
    conv = ctxlab.load(RUN)
    budget = Budget(limit, 0.15, TokenCounter("gpt-4o").tools(conv.tools))
    strategy = get_strategy(name, **STRATEGIES[name].scaled_defaults(budget))
    return measure(conv, dataclasses.replace(strategy, apply_at=where), budget, model="gpt-4o")


def _table(app: AppTest):
    return next(d.value for d in app.dataframe if "where it runs" in d.value.columns)


def test_the_lesson_shows_the_overflow_after_start_and_none_before_every_call(app):
    every, start = _engine("sliding_window", 8_000, "every_call"), _engine("sliding_window", 8_000, "turn_start")
    assert start.replay.calls_over_limit > 0 == every.replay.calls_over_limit  # the lesson's claim, on the engine
    table = _table(app)
    assert list(table["apply_at"]) == ["every_call", "turn_start"]
    assert list(table["calls over the limit"]) == [f"0 of {len(every.replay.calls)}",
                                                   f"{start.replay.calls_over_limit} of {len(start.replay.calls)}"]
    assert list(table["times it ran"]) == [len(every.replay.calls), 1]
    text = app.warning[0].value.replace("\\", "")
    assert f"After START, {start.replay.calls_over_limit} of {len(start.replay.calls)} calls went over the limit" in text
    assert "Before every call, none did." in text
    # sliding_window trims the whole history each time (works_on=full_history): after START only a turn's
    # first call is trimmed; the reason is that, not a long turn (this run's one turn is all of it)
    assert "every later call of the turn sends the whole history" in text and "this turn is long" not in text
    assert app.get("plotly_chart")


def test_at_a_limit_where_both_fit_the_lesson_says_so(app):
    app.number_input(key="loop_limit").set_value(40_000).run()
    assert not app.exception
    assert _engine("sliding_window", 40_000, "turn_start").replay.fits
    assert "Both fit every call" in app.success[0].value


@pytest.mark.parametrize("name", ["clear_tool_results", "summarize"])
def test_each_strategy_gives_the_engines_figures(app, name):
    app.selectbox(key="loop_strategy").set_value(name).run()
    every = _engine(name, 8_000, "every_call")
    table = _table(app)
    assert table["input tokens, all calls"][0] == every.cost.input_tokens
    assert table["needed facts served"][0] == pytest.approx(every.needed_recall)


def test_the_sidebar_conversation_can_be_used(app):
    app.radio(key="loop_source").set_value("sidebar").run()
    assert not app.exception
    assert len(_table(app)) == 2


@pytest.fixture
def app(monkeypatch) -> AppTest:
    return open_page("agent_loop.py", monkeypatch)


def test_the_coding_section_compares_condensers_call_by_call_with_the_engines_figures(app):
    from ctxlab.fidelity import needed_facts
    conv = ctxlab.load(SAMPLES / "coding" / "coding_agent_session.jsonl")
    budget = Budget(4_000, 0.15, TokenCounter("gpt-4o").tools(conv.tools))
    table = next(d.value for d in app.dataframe if "edits whose read was gone" in d.value.columns)
    assert list(table["strategy"]) == ["observation_masking", "summarize", "tool_rounds"]
    for k, name in enumerate(table["strategy"]):
        m = measure(conv, get_strategy(name, **STRATEGIES[name].scaled_defaults(budget)), budget, model="gpt-4o")
        assert table["needed facts served"][k] == pytest.approx(m.needed_recall)
        assert table["edits whose read was gone"][k] == sum(x.edit for x in m.fidelity.misses)
    assert any(n.lines for n in needed_facts(conv).needs), "the session's edits need the text they replace"
    app.button(key="loop_coding_open").click().run()
    assert not app.exception
    assert app.session_state["conversation_label"] == "the bundled coding-agent session"
