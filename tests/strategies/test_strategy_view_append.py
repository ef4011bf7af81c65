"""``View.append``: what a live agent calls each turn gives the same view, and so the same plans, as
building the view of the whole conversation again (issue 12.14's re-planning after an append)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxlab.conversation import Message
from ctxlab.errors import CtxlabError
from ctxlab.segments import segment
from ctxlab.strategies import STRATEGIES, Budget, get_strategy, make_view
from ctxlab.tokens import TokenCounter

from ..builders import assistant, tool, user
from .test_strategy_invariants import conversations

COUNTER = TokenCounter("gpt-4o")
FIELDS = ("messages", "tokens", "categories", "seg", "facts", "fact_masks", "pins", "origin")


def _same(a, b) -> None:
    for f in FIELDS:
        assert getattr(a, f) == getattr(b, f), f
    assert (a.roles, a.total, a.category_sums, a.fact_counts) == (b.roles, b.total, b.category_sums, b.fact_counts)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.integers(1, 4), st.lists(st.sampled_from(["orphan", "again", "user"]), max_size=3))
def test_appending_message_by_message_gives_the_view_of_the_whole(messages, step, extra):
    for kind in extra:  # invalid tails too: a result for no call, a second result for a call, a user message
        calls = [c.id for m in messages for c in m.tool_calls]
        messages = messages + [tool("nobody") if kind == "orphan" else tool(calls[-1]) if kind == "again" and calls
                               else user("more")]
    facts = ("KC-1001", "refund", "KC-3")
    whole = make_view(messages, counter=COUNTER, facts=facts)
    view = make_view(messages[:1], counter=COUNTER, facts=facts)
    view.roles, view.total, view.category_sums, view.fact_counts  # noqa: B018  (cached values are carried over, check them too)
    for k in range(1, len(messages), step):
        view = view.append(*messages[k:k + step])
    _same(view, whole)
    assert view.seg == segment(messages)


def test_every_strategy_plans_the_appended_view_as_the_rebuilt_one():
    msgs = [Message("system", "Be brief."), user("Refund KC-1001"), assistant("", "a", "b"), tool("a", "x " * 300),
            tool("b", "y " * 300), assistant("Done."), user("And KC-1002?"), assistant("", "c"), tool("c", "z " * 300)]
    budget = Budget(900, reserve=0)
    parent = make_view(msgs[:-1], counter=COUNTER)
    for name in STRATEGIES:  # plan the parent first: caches of the parent (LangChain objects) are extended
        get_strategy(name).apply(parent, budget)
    grown = parent.append(msgs[-1])
    assert grown.parent() is parent
    whole = make_view(msgs, counter=COUNTER)
    for name in STRATEGIES:
        a, b = get_strategy(name).apply(grown, budget), get_strategy(name).apply(whole, budget)
        assert (a.actions, a.reasons, a.origin, a.output_tokens) == (b.actions, b.reasons, b.origin, b.output_tokens)


def test_append_checks_new_pins_and_continues_the_origin_numbering():
    view = make_view([user("a"), assistant("b")], counter=COUNTER).append(user("c"), pins=[2])
    assert view.origin == (0, 1, 2) and view.pins == frozenset({2})
    with pytest.raises(CtxlabError, match="pinned index 7"):
        view.append(assistant("d"), pins=[7])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.data())
def test_plans_of_a_grown_view_match_the_rebuilt_view_over_generated_conversations(messages, data):
    """Per-view tables that append extends (clear_tool_results', tool_rounds' layout, the batch removal's
    arrays, oldest_first's reason texts) give the plans a rebuild gives."""
    cut = data.draw(st.integers(1, len(messages)))
    budget = Budget(data.draw(st.integers(200, 3_000)), reserve=0)
    names = ["clear_tool_results", "tool_rounds", "oldest_first", "summarize", "key_messages", "middle_out", "hybrid"]
    facts = ("KC-1001", "refund", "R-3")  # the same facts for both views (append keeps the parent's)
    parent = make_view(messages[:cut], counter=COUNTER, facts=facts)
    special = {"clear_tool_results": {"trigger_tokens": 0}, "key_messages": {"recent": 2, "key_tools": ("run_sql",)}}
    strategies = {name: get_strategy(name, **special.get(name, {})) for name in names}
    strategies["tool_rounds, none kept"] = get_strategy("tool_rounds", keep_rounds=0)  # every round's place read
    for strategy in strategies.values():  # fills the parent's per-view tables
        strategy.apply(parent, budget)
    grown = parent.append(*messages[cut:]) if cut < len(messages) else parent
    whole = make_view(messages, counter=COUNTER, facts=facts)
    for strategy in strategies.values():
        a, b = strategy.apply(grown, budget), strategy.apply(whole, budget)
        assert (a.actions, a.reasons, a.origin, a.output_tokens) == (b.actions, b.reasons, b.origin, b.output_tokens)
        assert [m.content for m in a.messages] == [m.content for m in b.messages]
