"""The app's first screen in Streamlit's AppTest: a sample loads and is counted, bad input is
reported and keeps the previous conversation, pasted text is never rendered as HTML."""
from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from ctxlab import count_tokens, load
from ctxlab.figures import CATEGORY_COLORS

from ..conftest import ROOT, SAMPLES
from .helpers import chart_spec, column_config, metric, open_page

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


def test_the_share_is_of_the_sidebars_limit_with_separators_and_a_warning_over_it(app):
    """the page used the model's whole window, and wrote "1993" and "1491.0%"."""
    total = count_tokens(load(SAMPLES / "ecommerce_refund.json"), model="gpt-4o").total
    app.sidebar.number_input(key="max_tokens").set_value(1_000).run()
    assert metric(app, "Of the prompt limit") == f"{total / 850:,.0%}"  # 1,000 less the 15% reserve
    assert "," in metric(app, "Of the prompt limit")
    assert any(w.value.startswith(f"Over the limit: the prompt takes {total:,} tokens") for w in app.warning)
    app.sidebar.number_input(key="max_tokens").set_value(100_000).run()
    assert metric(app, "Of the prompt limit") == f"{total / 85_000:.1%}" and not app.warning
    config = column_config(app.dataframe[0])
    assert config["tokens"]["type_config"]["format"] == "localized"  # 1,792, not 1792


def test_the_category_bar_has_the_colours_and_limits_of_the_other_pages(app):
    spec = chart_spec(app)
    colours = {t["name"]: t["marker"]["color"] for t in spec["data"]}
    assert colours["tool results"] == CATEGORY_COLORS["tool_results"]  # red, as on the Strategy Lab
    assert colours == {name: CATEGORY_COLORS[name.replace(" ", "_")] for name in colours}
    limits = [a["text"] for a in spec["layout"]["annotations"] if a.get("name") == "limit"]
    assert any(t.startswith("context limit 16,000") for t in limits)  # the sidebar's limit, not the window


@pytest.fixture
def app(monkeypatch) -> AppTest:
    return open_page("token_counts.py", monkeypatch)
