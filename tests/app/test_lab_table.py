"""The Strategy Lab's message table on a long conversation: one page of 500 rows is
sent per rerun, a Page box moves through the rest, "Open a message" offers the page's rows, and
the rows (summaries inserted where they go) are those of the plan."""
from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

import ctxlab
from ctxlab.strategies import get_strategy, prepare

from playground import lab_table

from ..conftest import ROOT
from .helpers import APP_TIMEOUT

PAGE = str(ROOT / "pages" / "strategy_lab.py")


def _table(at: AppTest):
    return next(d.value for d in at.dataframe if "reason" in d.value.columns)


def test_a_long_conversation_is_shown_one_page_at_a_time():
    at = AppTest.from_file(PAGE, default_timeout=APP_TIMEOUT)
    at.session_state["source"] = "generate"
    at.session_state["gen_turns"] = 30
    at.session_state["gen_rounds_per_turn"] = 4
    at.session_state["gen_parallel_calls"] = 4
    at.run()
    at.button(key="gen_go").click().run()
    assert not at.exception
    n = len(ctxlab.loads(at.session_state["conversation_text"]))
    assert n > lab_table.PAGE_ROWS  # 661 messages
    first = _table(at)
    assert len(first) == lab_table.PAGE_ROWS and list(first["#"][:3]) == ["0", "1", "2"]
    assert any(f"rows 1-500 of {n:,}" in c.value for c in at.caption)
    assert len(at.selectbox(key="lab_open").options) == lab_table.PAGE_ROWS
    at.number_input(key="lab_table_page").set_value(2).run()
    second = _table(at)
    assert len(second) == n - lab_table.PAGE_ROWS and second["#"].iloc[0] == f"{lab_table.PAGE_ROWS:,}"
    assert len(at.selectbox(key="lab_open").options) == n - lab_table.PAGE_ROWS + 1  # the page, and the open one


def test_rows_put_each_summary_where_the_plan_inserts_it():
    conv = ctxlab.loads(json.dumps([{"role": "system", "content": "s"}] + [
        {"role": "user" if k % 2 == 0 else "assistant", "content": f"message {k} " + "word " * 60} for k in range(40)]))
    view, budget = prepare(conv, "gpt-4o", context_limit=1_500, reserve=0.15)
    plan = get_strategy("summarize").apply(view, budget)
    assert any(o is None for o in plan.origin), "the strategy inserted no summary"
    rows = lab_table.plan_rows(view, plan, {"insert": "inserted summary", "keep": "kept", "summarize": "summarized"},
                              lambda m: m.text[:20])
    assert len(rows) == len(plan.actions) + sum(o is None for o in plan.origin)
    summaries = rows[rows["code"] == "insert"]
    for (k, at), (_, row) in zip(lab_table.summary_slots(plan), summaries.iterrows()):
        assert row["open"] == f"summary {k}" and row["#"] == ""  # blank, never "None"
        after = rows.iloc[rows.index.get_loc(row.name) + 1] if row.name + 1 < len(rows) else None
        assert after is None or after["open"] == at or after["code"] == "insert"
    messages = rows[rows["code"] != "insert"]
    assert list(messages["open"]) == list(range(len(plan.actions)))
    assert list(messages["#"]) == [f"{i:,}" for i in range(len(plan.actions))]
    assert list(messages["code"]) == list(plan.actions) and list(messages["reason"]) == list(plan.reasons)


def test_past_a_thousand_messages_the_pins_box_lists_the_pinned_and_a_number_pins_more():
    at = AppTest.from_file(PAGE, default_timeout=APP_TIMEOUT)
    at.session_state["source"] = "generate"
    at.session_state["gen_turns"] = 70
    at.session_state["gen_rounds_per_turn"] = 4
    at.session_state["gen_parallel_calls"] = 4
    at.run()
    at.button(key="gen_go").click().run()
    assert not at.exception
    messages = ctxlab.loads(at.session_state["conversation_text"]).messages
    assert len(messages) > 1_000
    assert at.multiselect(key="pins").options == []  # not 1,500 choices sent on every rerun
    first_tool = next(i for i, m in enumerate(messages) if m.role == "tool")

    def code_of(i: int) -> str:
        rows = _table(at)
        return rows[rows["#"] == f"{i:,}"]["code"].iloc[0]

    assert code_of(first_tool) != "keep"  # newest tool rounds removes the oldest tool result...
    at.number_input(key="lab_pin_number").set_value(first_tool).run()
    assert not at.exception
    assert at.multiselect(key="pins").value == [first_tool]
    assert at.multiselect(key="pins").options == [f"#{first_tool} tool"]
    assert at.number_input(key="lab_pin_number").value is None  # emptied for the next one
    assert code_of(first_tool) == "keep"  # ...unless it is pinned
    at.multiselect(key="pins").set_value([]).run()
    assert not at.exception and at.multiselect(key="pins").value == []
    assert code_of(first_tool) != "keep"
