"""``result_view`` of a plan that keeps every message at its place and swaps some for copies (a result
cut, offloaded or cleared) copies the grown view's columns with those entries changed instead of
reading every entry and segmenting the prompt again; it must give the view the general path gives."""
from __future__ import annotations

import pytest

import ctxlab
from ctxlab.generate import generate
from ctxlab.strategies import Budget, get_strategy, make_view
from ctxlab.strategies import base
from ctxlab.strategies.per_result import rewrites

from ..conftest import ROOT

CASES = [("offload", {"min_tokens": 250, "preview_tokens": 40}), ("head_tail", {"max_lines": 4, "max_bytes": 300}),
         ("clear_tool_results", {"trigger_tokens": 3_000, "keep": 1})]
FIELDS = ("messages", "tokens", "categories", "fact_masks", "origin", "pins", "state", "seg", "total", "roles")


def _grown(messages, start: int = 3):
    view = make_view(messages[:start], pins=(1,))
    for m in messages[start:]:
        view = view.append(m)
    return view


def _general(view, plan):
    """The general path, whatever the plan is."""
    saved = base._replaced_in_place
    base._replaced_in_place = lambda view, plan: None
    try:
        return base.result_view(view, plan)
    finally:
        base._replaced_in_place = saved


@pytest.mark.parametrize("source", ["generated", "swe_agent_ctf_baby_encryption.traj", "openhands_llama_usage.json"])
@pytest.mark.parametrize("name, params", CASES)
def test_a_plan_applied_in_place_gives_the_view_the_general_path_gives(source, name, params):
    conv = (generate("sql", turns=6, rounds_per_turn=3, result_tokens=300, seed=2, shape="agent_run")
            if source == "generated" else ctxlab.load(ROOT / "tests" / "data" / "coding" / source))
    strategy = get_strategy(name, **params)
    budget = Budget(8_000)
    checked = 0
    for k in range(4, len(conv.messages) + 1):
        view = _grown(conv.messages[:k])
        strategy.quick_idle(view, budget)  # as a replay asks first: the count is kept with the view
        plan = strategy.apply(view, budget)
        fast = base._replaced_in_place(view, plan)
        if fast is None:
            continue
        slow = _general(view, plan)
        for f in FIELDS:
            assert getattr(fast, f) == getattr(slow, f), (name, k, f)
        if name != "clear_tool_results":  # the count kept with the view, carried over the swap
            assert rewrites(strategy, fast) == rewrites(strategy, slow), (name, k)
        checked += plan.idle is None
    if source != "openhands_llama_usage.json" or name == "clear_tool_results":
        assert checked, "no plan swapped a message in place: the fast path was not exercised"


def test_a_plan_that_drops_or_inserts_takes_the_general_path():
    conv = generate("sql", turns=6, rounds_per_turn=3, result_tokens=300, seed=2, shape="agent_run")
    view = _grown(conv.messages)
    for name in ("sliding_window", "summarize"):
        plan = get_strategy(name).apply(view, Budget(3_000))
        assert plan.idle is None and base._replaced_in_place(view, plan) is None, name
