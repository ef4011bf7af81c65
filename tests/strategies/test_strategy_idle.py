"""A strategy that does nothing says so, in its own terms (``Plan.idle``), and every strategy
offers defaults scaled to the budget in use (``scaled_defaults``) beside its documented ones
."""
from __future__ import annotations

from pathlib import Path

import pytest

import ctxlab
from ctxlab.strategies import STRATEGIES, Budget, get_strategy, make_view, prepare
from playground import state
from tests.builders import assistant, system, tool, user

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data" / state.DEFAULT_SAMPLE


def _app_default() -> tuple:
    """The default sample at the app's default budget (model, limit, reserve; tools counted)."""
    defaults = {k: state.DEFAULTS[k]() for k in ("model", "max_tokens", "reserve")}
    conv = ctxlab.load(SAMPLE)
    return prepare(conv, defaults["model"], context_limit=defaults["max_tokens"], reserve=defaults["reserve"])


def test_the_three_idle_strategies_say_why_in_their_own_terms():
    view, budget = _app_default()
    assert view.total > budget.available  # the sample is over the default budget
    plans = {name: get_strategy(name).apply(view, budget) for name in ("turn_safe", "key_messages",
                                                                        "clear_tool_results")}
    assert plans["turn_safe"].idle == "turn_safe keeps the last 100 messages (last_n) and the conversation has 22"
    assert plans["key_messages"].idle == ("key_messages keeps the last 50 messages (recent) and the conversation "
                                          "has 22")
    assert plans["clear_tool_results"].idle == (
        f"clear_tool_results triggers above 100,000 message tokens (trigger_tokens); this conversation's messages "
        f"hold {view.total:,}")
    assert plans["turn_safe"].to_dict()["idle"] == plans["turn_safe"].idle


def test_scaled_defaults_make_every_strategy_act_on_the_default_sample_over_budget():
    view, budget = _app_default()
    scaled = {name for name, cls in STRATEGIES.items() if cls.budget_scaled(budget)}
    assert {"turn_safe", "key_messages", "clear_tool_results", "summarize"} <= scaled
    for name, cls in STRATEGIES.items():
        if name == "none":
            continue
        plan = get_strategy(name, **cls.scaled_defaults(budget)).apply(view, budget)
        assert plan.idle is None, f"{name} with scaled defaults did nothing: {plan.idle}"
        assert plan.fits, name


def test_scaled_defaults_follow_the_budget_and_documented_defaults_stay():
    cls = STRATEGIES["clear_tool_results"]
    defaults = {s["name"]: s["default"] for s in cls.schema()}
    assert (defaults["trigger_tokens"], defaults["keep"]) == (100_000, 3)  # Anthropic's clear_tool_uses defaults
    small, large = Budget(16_000), Budget(200_000)
    assert cls.scaled_defaults(small)["trigger_tokens"] == int(small.available * 0.8)
    assert cls.scaled_defaults(large)["trigger_tokens"] == int(large.available * 0.8)
    assert cls.scaled_defaults(small)["keep"] == 3
    window = STRATEGIES["turn_safe"].scaled_defaults
    assert window(Budget(16_000))["last_n"] < window(Budget(200_000))["last_n"]


@pytest.mark.parametrize("budget", [Budget(1), Budget(50, tools_tokens=60), Budget(16_000), Budget(10_000_000)])
def test_scaled_defaults_build_a_valid_strategy_at_any_budget(budget):
    for name, cls in STRATEGIES.items():
        params = cls.scaled_defaults(budget)
        assert set(params) == {s["name"] for s in cls.schema()}
        get_strategy(name, **params)  # raises when a value leaves its schema range


def _idle_conversation():
    return [system(), user("Where is KC-1001?"), assistant("", "a"), tool("a", "shipped"), assistant("Shipped."),
            user("Thanks")]


def test_every_strategy_explains_doing_nothing_and_only_then():
    view, roomy = make_view(_idle_conversation(), "gpt-4o"), Budget(128_000)
    for name, cls in STRATEGIES.items():
        plan = cls().apply(view, roomy)
        changed = len(plan.messages) != len(view) or any(a != "keep" for a in plan.actions)
        if changed:
            assert plan.idle is None, name
            continue
        assert plan.idle and plan.idle != f"{name} kept every message as it is", name
        assert name in plan.idle or "trim_messages" in plan.idle, plan.idle
    tight = get_strategy("turn_safe", last_n=1).apply(view, roomy)
    assert tight.idle is None and tight.count("drop") > 0


def test_a_window_widened_to_the_whole_conversation_says_so():
    view = make_view(_idle_conversation(), "gpt-4o")
    plan = get_strategy("turn_safe", last_n=5).apply(view, Budget(128_000))
    assert plan.idle == ("turn_safe keeps the last 5 messages (last_n), widened back to the start of their turn at "
                         "message 1: only the system prompt lies before it, so the window holds the whole "
                         "conversation (6 messages)")


def test_summarize_and_tool_rounds_name_their_trigger():
    view = make_view(_idle_conversation(), "gpt-4o")
    budget = Budget(10_000)
    assert get_strategy("summarize").apply(view, budget).idle.startswith(
        f"summarize triggers above 20 messages (trigger_messages) or {int(budget.available * 0.8):,} message tokens")
    assert get_strategy("tool_rounds", keep_rounds=2).apply(view, budget).idle == (
        "tool_rounds keeps the newest 2 tool round(s) (keep_rounds) and the conversation has 1")


def test_a_pipeline_that_does_nothing_joins_its_steps_reasons():
    view = make_view(_idle_conversation(), "gpt-4o")
    plan = (get_strategy("clear_tool_results") >> get_strategy("turn_safe")).apply(view, Budget(128_000))
    assert plan.idle.startswith("clear_tool_results triggers above 100,000")
    assert "; then turn_safe keeps the last 100 messages" in plan.idle


def test_clear_tool_results_over_its_trigger_names_what_protects_every_result():
    big = "x " * 400
    view = make_view([user("a"), assistant("", "c1"), tool("c1", big), assistant("", "c2"), tool("c2", big),
                      assistant("done")], "gpt-4o")
    plan = get_strategy("clear_tool_results", trigger_tokens=0, keep=3).apply(view, Budget(128_000))
    assert plan.idle == ("clear_tool_results clears at any size (trigger_tokens 0) but none of its 2 tool results can "
                         "be cleared: 2 among the newest 3 (keep)")
