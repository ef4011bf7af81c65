"""The app's first screen in Streamlit's AppTest: a sample loads and is counted, bad input is
reported and keeps the previous conversation, pasted text is never rendered as HTML."""
from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from ctxlab import count_tokens, load

from ..conftest import ROOT, SAMPLES
from .helpers import metric, open_page

APP = str(ROOT / "pages" / "token_counts.py")








def test_first_screen_counts_the_default_sample(app):
    expected = count_tokens(load(SAMPLES / "ecommerce_refund.json"), model="gpt-4o").total
    assert metric(app, "Prompt tokens") == f"{expected:,}"
    assert metric(app, "Format") == "openai"
    assert "counted the way the OpenAI API bills it" in app.markdown[0].value
    assert not app.error


def test_each_sample_and_model_can_be_picked(app):
    for name in ("sql_agent.json", "parallel_travel.json"):
        app.selectbox(key="sample_name").set_value(name).run()
        assert metric(app, "Prompt tokens") == f"{count_tokens(load(SAMPLES / name), model='gpt-4o').total:,}"
    app.selectbox(key="model").set_value("gpt-4").run()
    assert metric(app, "Prompt tokens") == f"{count_tokens(load(SAMPLES / 'parallel_travel.json'), model='gpt-4').total:,}"


def test_bad_paste_shows_the_engine_error_and_keeps_the_previous_conversation(app):
    before = metric(app, "Prompt tokens")
    app.radio(key="source").set_value("paste").run()
    app.text_area(key="paste_text").input('[{"role": "wizard", "content": "hi"}]').run()
    app.button(key="use_paste").click().run()
    assert not app.exception
    errors = [e.value for e in app.sidebar.error]
    assert errors and "message 0" in errors[0] and "wizard" in errors[0]
    assert metric(app, "Prompt tokens") == before


def test_pasted_html_is_shown_as_text_not_rendered(app):
    evil = "<img src=x onerror=alert(1)><script>alert(2)</script>"
    app.radio(key="source").set_value("paste").run()
    app.text_area(key="paste_text").input(json.dumps([{"role": "user", "content": evil}])).run()
    app.button(key="use_paste").click().run()
    assert metric(app, "Messages") == "1"
    table = app.dataframe[0].value
    assert evil in list(table["text"])  # shown verbatim in a data grid, which renders text only
    for block in (*app.markdown, *app.sidebar.markdown):
        assert "<script>" not in block.value and "onerror" not in block.value


def test_bad_input_with_html_in_the_error_is_escaped(app):
    app.radio(key="source").set_value("paste").run()
    app.text_area(key="paste_text").input('[{"role": "<b>x</b>[link](http://e.x)", "content": "hi"}]').run()
    app.button(key="use_paste").click().run()
    err = app.sidebar.error[0].value
    assert "\\<b\\>" in err and "\\[link\\]" in err  # markdown-escaped: no tag, no link


@pytest.fixture
def app(monkeypatch) -> AppTest:
    return open_page("token_counts.py", monkeypatch)
