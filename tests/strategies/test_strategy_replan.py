"""Re-planning after ``View.append`` from the parent's plan (``strategies/incremental/replan.py``) gives the plan
made from scratch: for every strategy, on random conversations appended to at random, on the
generated ones and on tau-bench runs one after the other."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxlab
from ctxlab import i18n
from ctxlab.conversation import Message
from ctxlab.generate import generate
from ctxlab.strategies import STRATEGIES, Budget, StrategyError, get_strategy, make_view
from ctxlab.strategies import base as base_module
from ctxlab.strategies.incremental import replan
from ctxlab.tokens import TokenCounter

from ..builders import assistant, tool, user
from .test_strategy_invariants import conversations, strategy_params

COUNTER = TokenCounter("gpt-4o")
TAU = Path(__file__).resolve().parents[3] / "shared" / "data" / "tau-bench" / "airline_trajectories_trials01.json"
FIELDS = ("strategy", "params", "budget", "actions", "reasons", "messages", "origin", "output_tokens", "before",
          "after", "warnings", "stats", "state", "retention", "facts_kept", "facts_lost", "idle", "notes")
STEPPED = ("none", "sliding_window", "turn_safe", "key_messages", "clear_tool_results", "observation_masking",
           "recent_events")
"""The strategies that extend the parent's plan (the others plan from scratch: checked all the same)."""


@pytest.fixture
def extended(monkeypatch):
    """Counts the plans made by extending the parent's (so a test knows the step was taken)."""
    from ctxlab.strategies.incremental import replan_clear, replan_keys, replan_recent, replan_windows
    made = []

    def counting(*args, **kwargs):
        out = replan.extend(*args, **kwargs)
        made.append(out is not None)
        return out
    monkeypatch.setattr(replan_windows, "extend", counting)
    monkeypatch.setattr(replan_keys, "extend", counting)
    monkeypatch.setattr(replan_clear, "extend", counting)
    monkeypatch.setattr(replan_recent, "extend", counting)
    return made


def in_chinese(texts) -> list[str]:
    """``texts`` as the Chinese interface shows them: a reason ``Text`` is rendered from its template
    and parameters, so two reasons equal in English but made differently would differ here."""
    before = i18n.language()
    i18n.use("zh")
    try:
        return i18n.local_all(texts)
    finally:
        i18n.use(before)


def assert_same_plan(grown, scratch, where: str) -> None:
    """Every field of the two plans is equal, and their sentences read the same in Chinese too
    (reason texts are remembered across plans and views: ``plan.texts``)."""
    for f in FIELDS:
        assert getattr(grown, f) == getattr(scratch, f), f"{where}: {f} differs"
    for f in ("reasons", "warnings"):
        assert in_chinese(getattr(grown, f)) == in_chinese(getattr(scratch, f)), f"{where}: {f} differ in Chinese"
    assert in_chinese([grown.idle]) == in_chinese([scratch.idle]), f"{where}: idle differs in Chinese"


def replan_along(strategy, messages: list[Message], start: int, steps: list[int], budget: Budget,
                 facts=("KC-1", "KC-3", "refund"), view=None) -> int:
    """Grow a view from ``messages[:start]`` (or ``view``, a view of them) by ``steps`` messages at a time
    as a live agent does (plan, append, let go of the parent), comparing each plan with the plan of the
    view built from scratch. Returns how many plans were compared."""
    view = view or make_view(messages[:start], counter=COUNTER, facts=facts)
    strategy.apply(view, budget)
    at, compared = start, 0
    for k in steps:
        if at >= len(messages):
            break
        view = view.append(*messages[at:at + k])
        at = min(at + k, len(messages))
        scratch = strategy.apply(make_view(messages[:at], counter=COUNTER, facts=facts), budget)
        assert_same_plan(strategy.apply(view, budget), scratch, f"{strategy.name} at {at} messages")
        compared += 1
    return compared


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.data())
def test_every_strategy_replans_random_appends_as_from_scratch(messages, data):
    extra = data.draw(st.lists(st.sampled_from(["orphan", "again", "user", "system", "compaction"]), max_size=3))
    for kind in extra:  # odd tails too: a result for no call, a second result, a user message, a compaction
        calls = [c.id for m in messages for c in m.tool_calls]
        messages = messages + [tool("nobody") if kind == "orphan" else tool(calls[-1]) if kind == "again" and calls
                               else Message("system", "Mind the refund rules.") if kind == "system"
                               else Message("user", "Summary: KC-3 refunded.", extra={"ctxlab_compaction": True})
                               if kind == "compaction" else user("more")]
    start = data.draw(st.integers(1, len(messages)))
    steps = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=len(messages)))
    budget = Budget(data.draw(st.integers(150, 4_000)), reserve=0)
    for name in STRATEGIES:  # parameters drawn in each strategy's schema (small windows that cut, ...)
        params = data.draw(strategy_params(name))
        if str(params.get("summarizer", "")).startswith("llm"):  # no model here: its warning says when it failed last
            params.pop("summarizer")
        try:
            strategy = get_strategy(name, **params)
        except StrategyError:  # a combination the strategy refuses (langchain_trim's start_on with "first")
            strategy = get_strategy(name)
        replan_along(strategy, messages, start, steps, budget)


@pytest.mark.parametrize("name", STEPPED[:3])
@pytest.mark.parametrize("max_tokens", [900, 2_500, 6_000])
def test_stepped_strategies_replan_generated_conversations_as_from_scratch(name, max_tokens, extended):
    messages = list(generate("ecommerce", turns=12, rounds_per_turn=3, result_tokens=200, seed=3).messages)
    strategy = get_strategy(name, **({"last_n": 20} if name == "turn_safe" else {}))  # a window that cuts
    assert replan_along(strategy, messages, 5, [1] * len(messages), Budget(max_tokens, reserve=0)) > 60
    assert sum(extended) > 30  # most steps extended the parent's plan (a user message plans from scratch)


@pytest.mark.parametrize("max_tokens", [6_000, 20_000])
@pytest.mark.parametrize("recent", [6, 15])
def test_key_messages_replans_generated_conversations_as_from_scratch(max_tokens, recent, extended):
    messages = list(generate("ecommerce", turns=12, rounds_per_turn=3, result_tokens=200, seed=3).messages)
    strategy = get_strategy("key_messages", recent=recent, max_key=4, key_tools=("get_order", "issue_refund"))
    assert replan_along(strategy, messages, 20, [1] * len(messages), Budget(max_tokens, reserve=0)) > 60
    assert sum(extended) > 30  # most steps keep the window's start (a user message or a moved start: from scratch)


CLEARING = [("clear_tool_results", {"trigger_tokens": 0}), ("clear_tool_results", {"trigger_tokens": 0, "keep": 1}),
            ("clear_tool_results", {"trigger_tokens": 3_000, "keep": 2, "exclude_tools": ("get_order",)}),
            ("clear_tool_results", {"trigger_tokens": 0, "clear_at_least": 1_500}),
            ("observation_masking", {}), ("observation_masking", {"window": 1}),
            ("observation_masking", {"window": 2, "polling": 3, "placeholder": "[{lines} lines]"})]
"""Strategies that replace old tool results, with parameters that clear from early on (the defaults
wait for 100,000 tokens)."""


@pytest.mark.parametrize("name, params", CLEARING)
@pytest.mark.parametrize("max_tokens", [2_500, 20_000])
def test_clearing_strategies_replan_generated_conversations_as_from_scratch(name, params, max_tokens, extended):
    messages = list(generate("ecommerce", turns=12, rounds_per_turn=3, result_tokens=200, seed=3).messages)
    assert replan_along(get_strategy(name, **params), messages, 5, [1] * len(messages), Budget(max_tokens)) > 60
    assert sum(extended) > 30  # most steps cleared what the new results pushed over the cut, from the parent's plan


@pytest.mark.parametrize("params, shape, parallel, grown", [
    ({"max_events": 12}, "chat", 1, True), ({"max_events": 12}, "chat", 2, True), ({"max_events": 12}, "agent_run", 1, True),
    ({"max_events": 6, "keep_first": 0}, "chat", 2, True), ({"max_events": 30, "keep_first": 3}, "chat", 1, True),
    ({"max_events": 20, "keep_first": 2}, "agent_run", 2, True),
    ({"max_events": 20, "keep_first": 2}, "chat", 1, False)])  # its kept task merges with a user message: from scratch
@pytest.mark.parametrize("region", [None, 8])
def test_recent_events_replans_generated_conversations_as_from_scratch(params, shape, parallel, grown, region, extended,
                                                                       monkeypatch):
    """``region``: the most messages a step decides again, made small so that the step starts inside
    a turn (what it does in an agent's run of thousands of messages)."""
    if region is not None:
        from ctxlab.strategies.incremental import replan_recent
        monkeypatch.setattr(replan_recent, "REGION", region)
    messages = list(generate("ecommerce", turns=12, rounds_per_turn=3, result_tokens=200, parallel_calls=parallel,
                             seed=3, shape=shape).messages)
    strategy = get_strategy("recent_events", **params)
    for steps in ([1] * len(messages), [2, 1, 3] * 20):
        assert replan_along(strategy, messages, 5, steps, Budget(6_000, reserve=0)) > 25
    assert not grown or sum(extended) > 40  # most steps decided only the turn where the forgotten middle ends


def _tau_runs(count: int) -> list[Message]:
    """``count`` tau-bench airline runs one after the other, as one session (one system prompt)."""
    runs = json.loads(TAU.read_text())
    out: list[Message] = []
    for k, run in enumerate(runs[:count]):
        for m in ctxlab.loads(json.dumps({"messages": run["traj"]})).messages:
            if m.role == "system" and out:
                continue
            calls = tuple(dataclasses.replace(c, id=f"r{k}-{c.id}") for c in m.tool_calls)
            out.append(dataclasses.replace(m, tool_calls=calls,
                                           tool_call_id=f"r{k}-{m.tool_call_id}" if m.tool_call_id else None))
    return out


@pytest.mark.skipif(not TAU.is_file(), reason="tau-bench data not found")
@pytest.mark.parametrize("max_tokens", [4_000, 12_000, 40_000])
def test_every_strategy_replans_tau_bench_runs_as_from_scratch(max_tokens, extended):
    messages = _tau_runs(6)
    budget = Budget(max_tokens)
    for name in STRATEGIES:
        steps = [1] * 40 if name in STEPPED else [1, 1, 2, 1]
        assert replan_along(get_strategy(name), messages, len(messages) - 45, steps, budget) >= 4
    assert sum(extended) > 30, sum(extended)


@pytest.mark.skipif(not TAU.is_file(), reason="tau-bench data not found")
@pytest.mark.parametrize("name, params", CLEARING)
def test_clearing_strategies_replan_tau_bench_runs_as_from_scratch(name, params, extended):
    messages = _tau_runs(6)
    for steps in ([1] * 60, [2, 1, 3] * 10):
        assert replan_along(get_strategy(name, **params), messages, len(messages) - 70, steps, Budget(8_000)) >= 20
    assert sum(extended) > 40, sum(extended)


@pytest.mark.skipif(not TAU.is_file(), reason="tau-bench data not found")
@pytest.mark.parametrize("params", [{}, {"max_events": 20, "keep_first": 2}])
def test_recent_events_replans_tau_bench_runs_as_from_scratch(params, extended):
    messages = _tau_runs(6)
    for steps in ([1] * 60, [2, 1, 3] * 10):
        assert replan_along(get_strategy("recent_events", **params), messages, len(messages) - 70, steps,
                            Budget(8_000)) >= 20
    assert sum(extended) > 40, sum(extended)


@pytest.mark.skipif(not TAU.is_file(), reason="tau-bench data not found")
def test_views_grown_again_from_one_view_share_its_log_and_still_replan_as_from_scratch(extended):
    messages = _tau_runs(4)  # the second growth with the same messages shares the first one's log, longer than it
    start, facts = len(messages) - 30, ("KC-1",)
    base = make_view(messages[:start], counter=COUNTER, facts=facts)
    for name in (*STEPPED, *STEPPED):
        replan_along(get_strategy(name), messages, start, [1] * 30, Budget(6_000), facts, view=base)
    assert base.append(messages[start]).__dict__["_log"] is base.__dict__["_log"]
    assert sum(extended) > 90


def test_a_step_does_not_reuse_a_plan_made_with_another_state_or_budget():
    messages = [Message("system", "Be brief."), user("Refund KC-1"), assistant("", "a"), tool("a", "x " * 300),
                assistant("Done."), user("And KC-3?"), assistant("", "b"), tool("b", "y " * 300), assistant("ok")]
    window, small, large = get_strategy("sliding_window"), Budget(700, reserve=0), Budget(5_000, reserve=0)
    parent = make_view(messages[:-1], counter=COUNTER)
    window.apply(parent, small)
    grown = parent.append(messages[-1])
    whole = make_view(messages, counter=COUNTER)
    assert_same_plan(window.apply(grown, large), window.apply(whole, large), "another budget")
    assert_same_plan(window.apply(grown.with_state({"x": 1}), small), window.apply(whole, small), "another state")
    assert "_replan_parent" not in grown.with_state({}).__dict__


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", "a", "KC-1\nb"]),
                          st.dictionaries(st.sampled_from(["x", "ctxlab_merged"]), st.integers(0, 2), max_size=2)),
                min_size=2, max_size=6))
def test_a_run_of_user_messages_joins_in_one_step_as_one_by_one(items):
    from ctxlab.strategies.plan import _joined, _joined_run
    run = [Message("user", text, name=f"u{k}", id=f"id{k}", extra=extra) for k, (text, extra) in enumerate(items)]
    folded = run[-1]
    for m in reversed(run[:-1]):
        folded = _joined(m, folded)
    joined = _joined_run(run)
    assert (joined, list(joined.extra)) == (folded, list(folded.extra))


def test_llm_attention_renders_a_grown_view_as_a_rebuilt_one():
    from ctxlab.strategies.llm_attention import _numbered
    messages = list(generate("ecommerce", turns=4, seed=1).messages)
    parent = make_view(messages[:-3], counter=COUNTER)
    _numbered(parent, list(range(len(parent))))
    other = parent.append(Message("user", "something else"))  # a sibling: index len(parent) holds another message
    _numbered(other, list(range(len(other))))
    grown = parent.append(*messages[-3:])
    whole = list(range(len(messages)))
    assert _numbered(grown, whole) == _numbered(make_view(messages, counter=COUNTER), whole)


@pytest.mark.parametrize("name", STEPPED)
@pytest.mark.parametrize("tail", ["again", "orphan"])
def test_a_second_result_or_an_orphan_appended_is_settled_as_from_scratch(name, tail):
    """Found by the random test: a second result for a call already answered (or a result for no
    call) arriving by ``append`` was kept by the extended plan, where the plan from scratch drops
    it (a provider rejects it). Such a step plans from scratch."""
    big = json.dumps({"rows": [{"id": f"R-{k}", "v": k * 3.5} for k in range(50)]})
    messages = [Message("system", "order"), user("order"), assistant("", "call_1", "call_2"), tool("call_1", big),
                tool("call_2", ""), assistant("", "call_3", "call_4"), tool("call_3", "order"),
                tool("call_4", "order"), assistant("order"), user("order"),
                tool("call_4" if tail == "again" else "nobody", "ok")]
    strategy = get_strategy(name, **({"last_n": 3} if name == "turn_safe" else {}))
    for steps in ([3, 3, 1], [1] * 7, [6, 1]):
        for budget in (150, 400, 4_000):
            replan_along(strategy, messages, 4, steps, Budget(budget, reserve=0))


def test_a_window_step_reads_a_group_whose_members_are_not_neighbours():
    """Found by the random test: a second result for call_9 joins its round's group after a later
    assistant message, so that group's members are not neighbours; the step must judge each message
    by its group (outside the window), not by its index (past the window's first message)."""
    big = json.dumps({"rows": [{"id": f"R-{k}", "v": k * 3.5} for k in range(50)]})
    messages = [Message("system", "order"), Message("system", "order"), user("order"), Message("assistant", "order"),
                user("order"), assistant("", "call_1"), tool("call_1", "order"), assistant("", "call_2"),
                tool("call_2", "order"), user("order"), assistant("", "call_3"), tool("call_3", "order"),
                assistant("", "call_4"), tool("call_4", "order"), user("order"), assistant("", "call_5", "call_6"),
                tool("call_5", ""), tool("call_6", "order"), assistant("", "call_7", "call_8", "call_9"),
                tool("call_7", big), tool("call_8", "order"), tool("call_9", ""), Message("assistant", "order"),
                tool("call_9", "ok"), user("more"), user("more")]
    assert replan_along(get_strategy("sliding_window"), messages, 7, [3, 3, 3, 3, 3, 3, 1], Budget(150, reserve=0)) == 7


FULL_HISTORY = [name for name, cls in STRATEGIES.items()
                if any(p["name"] == "works_on" and "full_history" in p.get("choices", ()) for p in cls.schema())]
REAL = Path(__file__).resolve().parents[1] / "data" / "coding"


@pytest.mark.parametrize("source", ["generated", "swe_agent_ctf_baby_encryption.traj", "tau-bench"])
@pytest.mark.parametrize("max_tokens", [3_000, 16_000])
def test_the_replay_lists_a_grown_plans_changes_as_comparing_every_message(source, max_tokens, monkeypatch, extended):
    """On the whole history, a plan grown from the previous call's plan lists what changed from the
    decisions it edited (``Plan.edited_from``); the replay must record the very events, removals and
    prompts that comparing every message gives, for every strategy run on the whole history."""
    import sys
    replay_module = sys.modules["ctxlab.replay"]
    if source == "tau-bench" and not TAU.is_file():
        pytest.skip("tau-bench data not found")
    conv = (generate("ecommerce", turns=30, rounds_per_turn=4, result_tokens=300, seed=3, shape="agent_run")
            if source == "generated" else _tau_runs(12) if source == "tau-bench" else ctxlab.load(REAL / source))
    real_step = replay_module.before_call

    def comparing_every_message(*args, previous=None, **kwargs):
        return real_step(*args, **kwargs)
    for name in FULL_HISTORY:
        strategy = get_strategy(name, **{**STRATEGIES[name].scaled_defaults(Budget(max_tokens)),
                                         "works_on": "full_history"})
        fast = replay_module.replay(conv, strategy, Budget(max_tokens))
        with monkeypatch.context() as m:
            m.setattr(replay_module, "before_call", comparing_every_message)
            slow = replay_module.replay(conv, strategy, Budget(max_tokens))
        assert fast.events == slow.events, name
        assert fast.removed_at == slow.removed_at, name
        assert [c.to_dict() for c in fast.calls] == [c.to_dict() for c in slow.calls], name
    if source != "swe_agent_ctf_baby_encryption.traj":  # every step of that short trace is planned from scratch
        assert any(extended), "no plan was grown from the previous call's: the fast listing was not exercised"


def test_views_grown_apart_from_one_parent_get_their_own_cleared_copies():
    """Two views grown from one parent with different results at the same index: each plan clears its
    own message there (its call id), never the other branch's copy, and equals a plan from scratch."""
    conv = generate("ecommerce", turns=10, rounds_per_turn=4, result_tokens=300, seed=5, shape="agent_run")
    messages = list(conv.messages)
    strategy = get_strategy("clear_tool_results", trigger_tokens=2_000, keep=1)
    budget = Budget(40_000)
    k = max(i for i, m in enumerate(messages) if m.role == "tool" and i < len(messages) - 8)
    parent = make_view(messages[:k], counter=COUNTER)
    strategy.apply(parent, budget)
    other = dataclasses.replace(messages[k], content="another result, long enough to be cleared " * 40)
    a = parent.append(*messages[k:k + 6])
    b = parent.append(other, *messages[k + 1:k + 6])
    for view in (a, b):
        plan = strategy.apply(view, budget)
        scratch = strategy.apply(make_view(view.messages, counter=COUNTER), budget)
        assert plan.messages == scratch.messages
        assert plan.actions[k] == "clear" and plan.messages[plan.origin.index(k)].tool_call_id == view.messages[k].tool_call_id
    assert strategy.apply(a, budget).messages[a.origin.index(k)] is not strategy.apply(b, budget).messages[b.origin.index(k)]


@pytest.mark.parametrize("name", [n for n, cls in STRATEGIES.items() if cls.cost_per_call in
                                  (base_module.EXTENDS, base_module.EXTENDS_WHOLE)])
def test_a_strategy_said_to_extend_its_previous_plan_does(name):
    """``cost_per_call`` is what the strategies reference tells a user; a strategy said to extend its
    previous plan must make most plans of a growing agent run from its parent's (``Plan.edited_from``)."""
    conv = generate("ecommerce", turns=30, rounds_per_turn=4, result_tokens=300, seed=3, shape="agent_run")
    budget = Budget(6_000)
    strategy = get_strategy(name, **STRATEGIES[name].scaled_defaults(budget))
    view = make_view(conv.messages[:40], counter=COUNTER)
    grown = 0
    for m in conv.messages[40:]:
        strategy.apply(view, budget)
        view = view.append(m)
        grown += strategy.apply(view, budget).edited_from is not None
    assert grown > (len(conv.messages) - 40) // 2, f"{name}: {grown} of {len(conv.messages) - 40} plans grown"


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_every_strategy_says_what_a_call_costs_in_one_of_the_documented_sentences(name):
    assert STRATEGIES[name].cost_per_call in base_module.COST_PER_CALL
