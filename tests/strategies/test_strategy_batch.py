"""The batch removal of ``middle_out`` and ``oldest_first`` (numpy over a whole removal order) makes
the decisions, reasons and counts of the greedy loop it replaces, message for message: the plans
with the batch equal the plans with the loop, over generated conversations (with pins, system
messages inside turns, lone user turns and results answering a call of an earlier turn) and budgets."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxlab.conversation import Message
from ctxlab.strategies import Budget, get_strategy, make_view
from ctxlab.strategies import middle_out, oldest_first

from ..builders import assistant, tool, user
from .test_strategy_invariants import COUNTER, conversations

NAMES = ("middle_out", "oldest_first", "hybrid")


def _plans(monkeypatch, view, budget, params):
    """(batch plan, loop plan) per strategy."""
    out = []
    for name in NAMES:
        strategy = get_strategy(name, **params.get(name, {}))
        fast = strategy.apply(view, budget)
        with monkeypatch.context() as m:
            for module in (middle_out, oldest_first):  # the loop the batch stands for
                m.setattr(module, "simulate", lambda *a, **k: None)
            slow = strategy.apply(view, budget)
        out.append((name, fast, slow))
    return out


def _same(fast, slow) -> None:
    assert (fast.actions, fast.reasons, fast.origin, fast.output_tokens) == \
        (slow.actions, slow.reasons, slow.origin, slow.output_tokens)
    assert (fast.stats, fast.warnings, fast.idle) == (slow.stats, slow.warnings, slow.idle)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(conversations(), st.data())
def test_batch_removal_decides_as_the_loop(monkeypatch, messages, data):
    extra = data.draw(st.lists(st.sampled_from(["system", "user", "lone"]), max_size=3))
    for kind in extra:  # system messages inside a turn, and user turns with nothing after them
        messages = messages[:-1] + [Message("system", "note KC-1001") if kind == "system" else user("again")] \
            + messages[-1:] if kind != "lone" else [*messages[:1], user("hello"), *messages[1:]]
    n = len(messages)
    pins = data.draw(st.sets(st.integers(0, n - 1), max_size=2))
    view = make_view(messages, counter=COUNTER, pins=pins)
    budget = Budget(data.draw(st.integers(50, 4_000)), reserve=0)
    params = {"oldest_first": {"min_messages": data.draw(st.integers(1, 8))},
              "middle_out": {"preserve_start": data.draw(st.integers(0, 3)),
                             "preserve_end": data.draw(st.integers(0, 6))}}
    for name, fast, slow in _plans(monkeypatch, view, budget, params):
        _same(fast, slow)


def test_a_result_answering_a_call_of_an_earlier_turn_takes_the_loop_and_plans_the_same(monkeypatch):
    msgs = [Message("system", "Be brief."), user("Refund KC-1001"), assistant("", "a"), user("still there?"),
            tool("a", "x " * 400), assistant("Done."), user("And KC-1002?"), assistant("", "c"), tool("c", "z " * 300),
            assistant("ok"), user("thanks")]
    view = make_view(msgs, counter=COUNTER)
    assert not middle_out.batch_tables(view).simple  # the round of call "a" spans two turns
    params = {"middle_out": {"preserve_start": 1, "preserve_end": 2}}
    for name, fast, slow in _plans(monkeypatch, view, Budget(400, reserve=0), params):
        _same(fast, slow)
        assert fast.count("drop") or name == "hybrid"


@given(st.lists(st.integers(0, 60), max_size=15, unique=True), st.floats(-3, 63))
def test_middle_out_positions_follow_the_alternating_order(firsts, mid):
    """The array middle_out walks is its definition: nearest the middle first, then right and left in turn."""
    firsts = sorted(firsts)
    assert middle_out._middle_out_positions(np.array(firsts, dtype=np.int64), mid).tolist() == \
        list(middle_out._middle_out_order(firsts, mid))
