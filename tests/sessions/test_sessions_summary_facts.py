"""The running summary of a live session keeps early facts: after 27 turns the
summary of a GPT-4 (8K) agent held only turns 15-19; the refund id and amount of the first turns
were gone (the offline summary is capped and drops its oldest lines first). Facts of turn 1 must
still be in the summary after 30 turns, and what is sent must still fit the budget."""
from __future__ import annotations

import json

import pytest

from ctxlab.sessions import SessionStore
from ctxlab.strategies import STRATEGIES, Budget

MODEL, LIMIT = "gpt-4", 8192


def _turn(k: int) -> list[dict]:
    order, refund, amount = f"KC-{480000 + k}", f"RF-{660300 + k}", f"${400 + k}.95"
    call = {"id": f"call_{k}", "type": "function",
            "function": {"name": "get_order", "arguments": json.dumps({"order_id": order})}}
    result = {"order_id": order, "status": "delivered", "total": amount, "refund_id": refund,
              "notes": "Customer reports the item arrived damaged; photos attached. " * 6}
    return [{"role": "user", "content": f"Turn {k}: my order {order} arrived broken, I want a refund."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{k}", "content": json.dumps(result)},
            {"role": "assistant", "content": f"I opened refund {refund} for {amount} on order {order}."}]


@pytest.fixture
def store(tmp_path):
    s = SessionStore(f"sqlite:///{tmp_path / 'agents.db'}")
    return s


@pytest.mark.parametrize("params", [{}, "scaled"], ids=["documented", "scaled"])
def test_facts_of_turn_1_are_in_the_summary_after_30_turns(store, params):
    budget = Budget.for_model(MODEL, max_tokens=LIMIT)
    chosen = STRATEGIES["summarize"].scaled_defaults(budget) if params == "scaled" else {}
    store.save_profile("support", model=MODEL, max_tokens=LIMIT, strategy="summarize", params=chosen,
                       system_prompt="You are the Kestrel Cycles support assistant.")
    s = store.start_session("support")
    for k in range(1, 31):
        s.add(*_turn(k))
        sent = s.context()
    summary = s.record().summary
    assert summary, "the strategy never summarized"
    for fact in ("KC-480001", "RF-660301", "401.95"):
        assert fact in summary, f"{fact} (turn 1) is gone from the running summary"
    assert s.count(sent).total <= budget.prompt_limit  # the facts line still fits
