"""The OpenAI Agents SDK export: turn_safe as RunConfig(session_settings=SessionSettings(limit=N)),
with the documented difference shown: the limit counts Responses items, not messages."""
from __future__ import annotations

import ctxlab
from ctxlab.configs import export_native, make_config
from ctxlab.strategies import Budget, get_strategy, make_view
from ctxlab.validate import validate

from ..conftest import SAMPLES


def _export(last_n: int):
    return export_native(make_config(get_strategy("turn_safe", last_n=last_n), Budget(16_000), "gpt-4o"),
                         "openai_agents")


def test_turn_safe_is_a_session_item_limit():
    native = _export(12)
    assert native.data == {"run_config": {"session_settings": {"limit": 12}}}
    assert "RunConfig(session_settings=SessionSettings(limit=12))" in native.python
    compile(native.python, "run_config.py", "exec")


def test_difference_the_limit_counts_items_not_messages():
    conv = ctxlab.load(SAMPLES / "parallel_travel.json")  # assistant messages with three parallel calls
    items = ctxlab.export(conv, "responses").data["input"]
    last_n = 9
    kept = get_strategy("turn_safe", last_n=last_n).apply(make_view(conv), Budget(16_000))
    kept_messages = sum(a == "keep" for a in kept.actions)
    limit = _export(last_n).data["run_config"]["session_settings"]["limit"]
    assert len(items) > len(conv.messages)                         # a call is an item, not a message
    assert kept_messages > limit                                   # ctxlab keeps more messages than items fit
    orphaning = [n for n in range(1, len(items)) if items[-n].get("type") == "function_call_output" and items[-n][
        "call_id"] not in {i.get("call_id") for i in items[-n:] if i.get("type") == "function_call"}]
    assert orphaning                                               # the cut can keep a tool output without its call
    for n in orphaning:                                            # ctxlab's window never does
        plan = get_strategy("turn_safe", last_n=n).apply(make_view(conv), Budget(16_000))
        assert validate(list(plan.messages)) == []
    notes = " ".join(_export(last_n).not_carried)
    assert "counts session items, not messages" in notes and "tool output whose call it cut off" in notes
