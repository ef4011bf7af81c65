"""The shared sidebar's model and budget: a context limit the user typed survives a
model change (lowered to the new model's window when larger, with a note); only the untouched
default follows the model."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

import ctxlab

from .helpers import open_page


@pytest.fixture
def app(monkeypatch) -> AppTest:
    return open_page("token_counts.py", monkeypatch)  # the lightest page: the sidebar is the same everywhere


def _limit(at: AppTest) -> int:
    return int(at.sidebar.number_input(key="max_tokens").value)


def _notes(at: AppTest) -> list[str]:
    return [c.value.replace("\\", "") for c in at.sidebar.caption]


def test_a_limit_the_user_typed_stays_when_the_model_changes(app):
    app.sidebar.number_input(key="max_tokens").set_value(8_000).run()
    app.sidebar.selectbox(key="model").set_value("gpt-4.1").run()
    assert _limit(app) == 8_000  # it became 1,000,000 before
    window = ctxlab.resolve_model("gpt-4.1").context_window
    assert f"Kept your context limit of 8,000 tokens (gpt-4.1's window is {window:,})." in _notes(app)


def test_a_limit_larger_than_the_new_window_is_lowered_to_it_with_a_note(app):
    app.sidebar.number_input(key="max_tokens").set_value(100_000).run()
    app.sidebar.selectbox(key="model").set_value("gpt-4").run()
    assert _limit(app) == 8_192
    assert any("100,000 tokens is more than gpt-4's window: lowered to 8,192" in n for n in _notes(app))
    app.sidebar.selectbox(key="model").set_value("gpt-4o").run()
    assert _limit(app) == 8_192  # still the user's (lowered) limit, not the new window


def test_the_untouched_default_follows_the_model(app):
    assert _limit(app) == 16_000
    app.sidebar.selectbox(key="model").set_value("gpt-4").run()
    assert _limit(app) == 8_192 and not _notes(app)
    app.sidebar.selectbox(key="model").set_value("gpt-4o").run()
    assert _limit(app) == ctxlab.resolve_model("gpt-4o").context_window


def test_a_conversation_without_tools_says_so_in_the_budget_note(monkeypatch):
    """a conversation with no tools read "all the conversation's own 0 tools (0 tokens)"."""
    import json
    text = json.dumps({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
                                    {"role": "user", "content": "What is ctxlab?"}]})
    at = open_page("strategy_lab.py", monkeypatch, state={"source": "paste", "paste_text": text})
    at.sidebar.button(key="use_paste").click().run()
    assert not at.exception, at.exception
    notes = [e.value.replace("\\", "") for e in (*at.caption, *at.info, *at.markdown)
             if "Tool definitions in the budget" in e.value]
    assert notes and all("own 0 tools" not in n for n in notes), notes
    assert any("none, the conversation has no tools" in n for n in notes), notes
