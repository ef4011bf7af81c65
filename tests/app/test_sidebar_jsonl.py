"""A JSONL file of several conversations in the sidebar: it was refused ("expected
one ... use --index on the CLI") with the previous conversation left under the error; now a
picker lists each conversation with its size and every page uses the one picked."""
from __future__ import annotations

import json

from ..conftest import SAMPLES
from .helpers import metric, open_page

NAMES = ("ecommerce_refund.json", "sql_agent.json", "parallel_travel.json")


def _jsonl() -> tuple[str, list[dict]]:
    docs = [json.loads((SAMPLES / n).read_text()) for n in NAMES]
    return "\n".join(json.dumps(d) for d in docs) + "\n", docs


def _messages(doc: dict) -> int:
    return len(doc["messages"]) + (1 if isinstance(doc.get("system"), str) else 0)


def test_a_pasted_multi_conversation_jsonl_gets_a_picker_with_sizes(monkeypatch):
    text, docs = _jsonl()
    at = open_page("token_counts.py", monkeypatch, state={"source": "paste"})
    at.sidebar.text_area(key="paste_text").input(text).run()
    at.sidebar.button(key="use_paste").click().run()
    assert not at.exception and not at.sidebar.error, [e.value for e in at.sidebar.error]
    picker = at.sidebar.selectbox(key="multi_pick")
    assert len(picker.options) == 3 and "3 in this file" in picker.label
    assert all("messages" in o and "KB" in o for o in picker.options), picker.options
    assert metric(at, "Messages") == f"{_messages(docs[0]):,}"  # the first one is in use
    picker.set_value(1).run()
    assert not at.exception
    assert metric(at, "Messages") == f"{_messages(docs[1]):,}"
    assert json.loads(at.session_state.conversation_text) == docs[1]
    assert "conversation 2 of 3" in at.session_state.conversation_label


def test_the_pick_stays_on_another_page_and_a_single_file_removes_the_picker(monkeypatch):
    text, docs = _jsonl()
    at = open_page("token_counts.py", monkeypatch, state={"source": "paste"})
    at.sidebar.text_area(key="paste_text").input(text).run()
    at.sidebar.button(key="use_paste").click().run()
    at.sidebar.selectbox(key="multi_pick").set_value(2).run()
    at.run()  # a rerun (what a page switch does) keeps the pick
    assert metric(at, "Messages") == f"{_messages(docs[2]):,}"
    at.sidebar.text_area(key="paste_text").input(json.dumps(docs[1])).run()
    at.sidebar.button(key="use_paste").click().run()
    assert not [s for s in at.sidebar.selectbox if s.key == "multi_pick"]
    assert metric(at, "Messages") == f"{_messages(docs[1]):,}"


def test_a_file_that_needs_its_format_named_opens_with_the_sidebars_format_option(monkeypatch):
    """an error asked to "pass the format explicitly" but the sidebar had no format option. A bare
    mini-swe-agent message list is detected as OpenAI messages (its text actions stay text); named, it is read
    as mini-swe-agent (each action a tool call) and every page uses that reading."""
    import ctxlab
    from ..conftest import ROOT
    from .helpers import set_widget
    path = ROOT / "tests" / "data" / "coding" / "mini_swe_agent_github_issue.json"
    text = path.read_text(encoding="utf-8")
    named = ctxlab.load(path, format="mini_swe_agent")
    calls = sum(len(m.tool_calls) for m in named.messages)
    assert calls and not any(m.tool_calls for m in ctxlab.load(path).messages)  # detection alone: no calls
    at = open_page("token_counts.py", monkeypatch, state={"source": "paste"})
    at.sidebar.text_area(key="paste_text").input(text).run()
    set_widget(at, "input_format", "mini_swe_agent")
    at.sidebar.button(key="use_paste").click().run()
    assert not at.exception and not at.sidebar.error, [e.value for e in at.sidebar.error]
    used = ctxlab.loads(at.session_state.conversation_text)
    assert sum(len(m.tool_calls) for m in used.messages) == calls
    assert len(used.messages) == len(named.messages)
    assert "read as mini_swe_agent" in at.session_state.conversation_label
    set_widget(at, "input_format", "swe_agent")  # a format the text is not: one clear error, the reading stays
    at.sidebar.button(key="use_paste").click().run()
    assert at.sidebar.error and "Traceback" not in at.sidebar.error[0].value
    assert ctxlab.loads(at.session_state.conversation_text).messages == used.messages
