"""The Agents page in AppTest: create an agent with a preset and a summary strategy, load an agent
back into the form, a change that leaves existing sessions alone until "Update existing sessions",
and one clear error for a bad name. The store is a SQLite file in a temporary data directory."""
from __future__ import annotations

import pytest
import streamlit as st

from ctxlab.sessions import SessionStore
from ctxlab.strategies import STRATEGIES

from .helpers import open_page, set_widget


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("CTXLAB_SESSIONS_URL", raising=False)
    monkeypatch.setenv("CTXLAB_DATA_DIR", str(tmp_path))
    st.cache_resource.clear()  # each test opens its own store
    yield tmp_path
    st.cache_resource.clear()


def _store(data_dir) -> SessionStore:
    return SessionStore(f"sqlite:///{data_dir / 'sessions.db'}")


def test_create_an_agent_with_a_preset_and_a_summary_strategy(data_dir, monkeypatch):
    at = open_page("agents.py", monkeypatch)
    assert at.selectbox(key="agents_strategy").value == "summarize"
    set_widget(at, "agents_name", "support")
    at.text_area(key="agents_system").input("You help Kestrel Cycles' customers.").run()
    set_widget(at, "agents_preset", "GPT-4 (8K)")
    assert (at.session_state["agents_model"], at.session_state["agents_max_tokens"]) == ("gpt-4", 8192)
    set_widget(at, "agents_summarize_trigger_messages", 12)
    at.button(key="agents_save").click().run()
    assert not at.exception and not at.error, at.error
    assert "Saved support" in at.success[0].value
    assert at.session_state["agents_pick"] == "support"
    with _store(data_dir) as store:
        p = store.profile("support")
    assert (p.model, p.max_tokens, p.strategy, p.params["trigger_messages"]) == ("gpt-4", 8192, "summarize", 12)
    assert p.system_prompt == "You help Kestrel Cycles' customers."


def test_a_change_affects_new_sessions_until_update_existing(data_dir, monkeypatch):
    with _store(data_dir) as store:
        store.save_profile("support", model="gpt-4o", max_tokens=16_000, strategy="summarize",
                           params={"trigger_messages": 30}, system_prompt="Be kind.")
        old = store.start_session("support").id
    at = open_page("agents.py", monkeypatch)
    set_widget(at, "agents_pick", "support")
    assert at.text_input(key="agents_name").value == "support"  # the form shows the saved agent
    assert at.session_state["agents_summarize_trigger_messages"] == 30
    assert at.number_input(key="agents_max_tokens").value == 16_000
    assert any("new sessions only" in i.value for i in at.info)
    set_widget(at, "agents_strategy", "sliding_window")
    at.button(key="agents_save").click().run()
    assert not at.exception and not at.error
    with _store(data_dir) as store:
        assert store.open_session(old).record().strategy == "summarize"  # the old session keeps its config
        assert store.start_session("support").record().strategy == "sliding_window"
    at.button(key="agents_update_existing").click().run()
    assert "2 session(s) of support now use sliding_window" in at.success[0].value.replace("\\", "")
    with _store(data_dir) as store:
        assert store.open_session(old).record().strategy == "sliding_window"
    assert {m.label: m.value for m in at.metric}["Sessions"] == "2"


def test_a_bad_name_is_one_clear_error(data_dir, monkeypatch):
    at = open_page("agents.py", monkeypatch)
    at.button(key="agents_save").click().run()
    assert not at.exception
    assert "a profile needs a name" in at.error[0].value


def test_every_strategy_is_explained(data_dir, monkeypatch):
    at = open_page("agents.py", monkeypatch)
    table = next(d.value for d in at.dataframe if "what it does" in d.value.columns)
    assert len(table) == len(STRATEGIES) and table["what it does"].str.len().min() > 20
    assert {"GPT-3.5 (4K)", "GPT-4 (8K)"} <= set(at.selectbox(key="agents_preset").options)


@pytest.mark.parametrize("strategy,param", [("turn_safe", "last_n"), ("clear_tool_results", "trigger_tokens")])
def test_an_8k_agents_strategy_starts_from_defaults_that_fit_its_model(data_dir, monkeypatch, strategy, param):
    """a GPT-4 (8K) agent on turn_safe (last_n 100) or clear_tool_results (trigger
    100,000) never acted and sent 15,027 tokens against a 6,963 budget after 26 turns. Its
    controls now start scaled to the agent's budget, and a session with them fits."""
    from ctxlab.strategies import Budget

    from ..sessions.test_sessions_summary_facts import _turn
    at = open_page("agents.py", monkeypatch)
    set_widget(at, "agents_preset", "GPT-4 (8K)")
    set_widget(at, "agents_strategy", strategy)
    budget = Budget.for_model("gpt-4", max_tokens=8192, reserve=0.15)
    expected = STRATEGIES[strategy].scaled_defaults(budget)[param]
    value = at.session_state[f"agents_{strategy}_{param}"]
    assert int(value) == expected
    documented = next(s["default"] for s in STRATEGIES[strategy].schema() if s["name"] == param)
    assert int(value) < documented
    set_widget(at, "agents_name", "eight-k")
    at.button(key="agents_save").click().run()
    assert not at.exception and not at.error, at.error
    with _store(data_dir) as store:
        s = store.start_session("eight-k")
        for k in range(1, 27):
            bulky = _turn(k)
            bulky[2]["content"] += " " + "Log line of the courier scan at the depot. " * 40
            s.add(*bulky)
            sent = s.context()
        assert s.count(sent).total <= budget.prompt_limit
        assert s.record().times_triggered > 0


def test_a_new_agent_with_defaults_acts_early_in_the_thirty_ticket_script(data_dir, monkeypatch):
    """a new agent defaulted to 128,000 tokens while the Chat page's 30-ticket script reaches about
    35,000, so its strategy acted late or never (the summary first after ticket 18, a token trigger never). Saved
    with every default, its strategy acts within the script's first ten tickets."""
    from dataclasses import replace
    from ctxlab.generate import generate
    from ctxlab.strategies import Budget, get_strategy, make_view
    from ctxlab.tokens import TokenCounter
    at = open_page("agents.py", monkeypatch)
    set_widget(at, "agents_name", "mine")
    at.button(key="agents_save").click().run()
    assert not at.exception and not at.error, at.error
    with _store(data_dir) as store:
        p = store.profile("mine")
    script = generate(domain="ecommerce", turns=30, seed=0)  # the Chat page's "30 support tickets" script
    starts = [i for i, m in enumerate(script.messages) if m.role == "user"]
    budget = Budget.for_model(p.model, max_tokens=p.max_tokens, reserve=float(p.overflow.get("reserve", 0.15)))
    strategy = get_strategy(p.strategy, **p.params)
    early = replace(script, messages=script.messages[:starts[10]])  # tickets 1-10
    plan = strategy.apply(make_view(early, counter=TokenCounter(p.model)), budget)
    assert plan.tokens_after < plan.tokens_before, (p.max_tokens, p.params, plan.tokens_before)
