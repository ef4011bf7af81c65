"""Smaller things a newcomer tripped over outside the Lab and Compare: Chat's token
bar in the Strategy Lab's colours, a colour legend on the findings chart, Tool Retrieval's query
following the conversation (an airline upload was "unsure" against an e-commerce sentence), and
Chat's over-budget note saying what ran (it said "the strategy runs at the next user message"
after 26 runs that never acted)."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from ctxlab.figures import CATEGORY_COLORS
from ctxlab.tools import query_from_conversation
from playground.widgets import over_budget_note

import ctxlab

from ..conftest import SAMPLES
from .helpers import chart_spec, open_page


def test_the_findings_chart_has_a_colour_legend(monkeypatch, tmp_path):
    monkeypatch.setenv("CTXLAB_DATA_DIR", str(tmp_path))
    at = open_page("failure_modes.py", monkeypatch, timeout=180)
    spec = next(chart_spec(at, k) for k in range(len(at.get("plotly_chart")))
                if "Tokens per message" in json.dumps(chart_spec(at, k)["layout"].get("title", "")))
    legend = {t["name"]: t["marker"]["color"] for t in spec["data"] if t.get("showlegend") and t["type"] == "bar"}
    assert legend, "no colour legend"
    assert all(CATEGORY_COLORS[name.replace(" ", "_")] == colour for name, colour in legend.items())
    assert {"user", "tool results"} <= set(legend)


def test_tool_retrievals_query_follows_the_conversation_until_typed(monkeypatch, tmp_path):
    monkeypatch.setenv("CTXLAB_DATA_DIR", str(tmp_path))
    travel = (SAMPLES / "parallel_travel.json").read_text()
    at = open_page("tool_retrieval.py", monkeypatch, timeout=180, state={
        "source": "paste", "paste_text": travel, "conversation_text": travel, "conversation_label": "pasted text",
        "tr_provider": "hash"})
    expected = query_from_conversation(ctxlab.loads(travel), 0)
    assert at.text_input(key="tr_query").value == expected
    at.text_input(key="tr_query").input("book me a hotel in Lisbon").run()
    at.run()
    assert at.text_input(key="tr_query").value == "book me a hotel in Lisbon"  # typed: it stays


def _record(**kw):
    return SimpleNamespace(**{"strategy": "turn_safe", "applied_through": 103, "times_applied": 26,
                              "times_triggered": 0, **kw})


def test_over_budget_a_strategy_that_ran_and_never_acted_says_so():
    note = over_budget_note(_record(), 104, 15_027, 6_963)
    assert "ran 26 time(s)" in note and "never acted" in note and "8,064" in note
    assert "runs at the next user message" not in note


@pytest.mark.parametrize("kw,history,words", [
    ({"times_triggered": 5, "applied_through": 100}, 104, "3 message(s) arrived since turn_safe last ran"),
    ({"times_triggered": 5}, 104, "acted 5 of 26 time(s)"),
    ({"times_applied": 0, "applied_through": -1}, 3, "has not run yet"),
])
def test_over_budget_notes_match_what_ran(kw, history, words):
    assert words in over_budget_note(_record(**kw), history, 9_000, 6_963)


def test_chats_token_bar_uses_the_labs_colours(tmp_path, monkeypatch):
    import streamlit as st
    monkeypatch.delenv("CTXLAB_SESSIONS_URL", raising=False)
    monkeypatch.setenv("CTXLAB_DATA_DIR", str(tmp_path))
    st.cache_resource.clear()
    at = open_page("chat.py", monkeypatch)
    at.button(key="chat_make_sample").click().run()
    at.button(key="chat_new").click().run()
    at.button(key="chat_send_scripted").click().run()
    assert not at.exception
    spec = next(chart_spec(at, k) for k in range(len(at.get("plotly_chart")))
                if any(t.get("y") == ["sent"] for t in chart_spec(at, k)["data"]))
    colours = {t["name"]: t["marker"]["color"] for t in spec["data"] if t.get("y") == ["sent"]}
    assert colours and all(c == CATEGORY_COLORS[n.replace(" ", "_")] for n, c in colours.items()), colours
    st.cache_resource.clear()
