"""The sidebar's model settings panel and what uses it, against a real OpenAI-compatible server on
127.0.0.1: prefilled from the environment without ever showing its key, a connection test, a typed
key kept in memory only, the summarize strategy's prompts as editable text areas whose edits reach
the model and the config, the Strategy Lab's summarizer=llm on the panel's model with an offline
fallback, and the key scan: a planted key appears in no page element, download, log or file."""
from __future__ import annotations

import json
import logging

import pytest
from streamlit.testing.v1 import AppTest

from ctxlab.strategies.summarizers.llm import MERGE_PROMPT, SUMMARY_PROMPT, LLMSummarizer, SummaryCache
from ctxlab.strategies.summarizers.summarize import SUMMARIZERS

from .helpers import open_page
from ..openai_fake import FakeOpenAI

PLANTED = "sk-ctxlab-APPTEST-PLANTED-7d2e91c4a0b5"
LAB_SUMMARIZE = {"lab_strategy": "summarize", "lab_summarize_summarizer": "llm", "lab_summarize_trigger_messages": 4,
                 "lab_summarize_keep_recent": 2}


@pytest.fixture()
def api():
    with FakeOpenAI() as server:
        yield server


def page(name: str, monkeypatch, api: FakeOpenAI | None = None, **state) -> AppTest:
    if api is not None:  # the sidebar's settings panel, not the environment
        state = {"llm_base_url": api.base_url, "llm_model": "fake-model", **state}
    return open_page(name, monkeypatch, state=state)


def rendered(at: AppTest) -> str:
    """Everything the page sends the browser: every element's and block's message, as text."""
    out: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append(str(proto))
        children = getattr(node, "children", None)
        for child in (children.values() if isinstance(children, dict) else ()):
            walk(child)

    walk(at._tree)
    return "\n".join(out)


def sidebar_texts(at: AppTest) -> list[str]:
    return [m.value.removeprefix(":small[").removesuffix("]") for m in at.sidebar.markdown] + \
        [e.value for e in at.sidebar.error] + \
        [s.value for s in at.sidebar.success]


def test_the_panel_is_prefilled_from_the_environment_and_never_shows_its_key(monkeypatch, api):
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
    monkeypatch.setenv("CTXLAB_LLM_MODEL", "env-model")
    at = page("token_counts.py", monkeypatch)
    assert at.text_input(key="llm_model").value == "env-model"
    assert at.text_input(key="llm_base_url").value == api.base_url
    assert at.text_input(key="llm_api_key_input").value == ""  # the env key is not put in the field
    assert "API key: set from OPENAI_API_KEY." in sidebar_texts(at)
    assert PLANTED not in rendered(at)


def test_without_settings_nothing_changes_and_the_panel_says_offline(monkeypatch):
    at = page("token_counts.py", monkeypatch)
    assert "No model configured: everything works offline." in sidebar_texts(at)
    assert at.button(key="llm_test_button").disabled


def test_test_connection_shows_the_reply_or_the_clear_error(monkeypatch, api):
    at = page("token_counts.py", monkeypatch, api)
    at.text_input(key="llm_api_key_input").input(PLANTED).run()
    api.reply("OK")
    at.button(key="llm_test_button").click().run()
    (ok,) = at.sidebar.success
    assert "`fake-model at" in ok.value and "answered `OK`" in ok.value
    assert api.chat_requests()[-1].bearer == PLANTED
    api.fail_next(401)  # the fake quotes the key back, as OpenAI does
    at.button(key="llm_test_button").click().run()
    (error,) = at.sidebar.error
    assert "rejected the API key" in error.value and PLANTED not in rendered(at)


def test_a_typed_key_leaves_the_field_stays_in_memory_and_can_be_forgotten(monkeypatch, api):
    at = page("token_counts.py", monkeypatch, api)
    at.text_input(key="llm_api_key_input").input(PLANTED).run()
    assert at.text_input(key="llm_api_key_input").value == ""  # not sent back to the browser
    assert "API key: set in this session (not shown)." in sidebar_texts(at)
    at.button(key="llm_forget_key").click().run()
    assert "API key: none (a local server needs none)." in sidebar_texts(at)
    at.button(key="llm_test_button").click().run()
    assert api.chat_requests()[-1].bearer != PLANTED


def test_a_bad_base_url_is_named_and_the_answers_page_stays_offline(monkeypatch):
    at = page("answers.py", monkeypatch, llm_base_url="ftp://127.0.0.1/v1")
    assert any("must start with http" in e.value for e in at.sidebar.error)
    assert any("needs a model" in i.value for i in at.info)


def test_the_summary_prompts_are_text_areas_prefilled_with_the_built_in_ones(monkeypatch, api, downloads):
    at = page("strategy_lab.py", monkeypatch, api, **LAB_SUMMARIZE, lab_tab="Export")
    assert at.text_area(key="lab_summarize_summary_prompt").value == SUMMARY_PROMPT
    assert at.text_area(key="lab_summarize_merge_prompt").value == MERGE_PROMPT
    config = json.loads(downloads["strategy.json"])
    assert json.dumps(config).count("summary_prompt") == 1 and "You write the running summary" not in json.dumps(config)
    edited = "EDITED PROMPT. Summarize in one line, at most {max_tokens} tokens:\n{span}"
    at.text_area(key="lab_summarize_summary_prompt").input(edited).run()
    assert not at.exception, at.exception
    assert any(r.json["messages"][0]["content"].startswith("EDITED PROMPT.") for r in api.chat_requests())
    assert "EDITED PROMPT." in json.loads(downloads["strategy.json"]).__repr__()  # travels in the config
    at.text_area(key="lab_summarize_summary_prompt").input("no placeholder here").run()
    assert any("{span}" in e.value.replace("\\", "") for e in at.error)  # the engine's error, shown


def test_the_lab_summarizes_with_the_panels_model_and_falls_back_offline(monkeypatch, api):
    api.reply("SUMMARY BY THE MODEL: order KC-482193, refund $483.95")
    at = page("strategy_lab.py", monkeypatch, api, **LAB_SUMMARIZE, max_tokens=3_000, limit_set_by_user=True)
    assert api.chat_requests() and api.chat_requests()[0].json["model"] == "fake-model"
    assert any(c.value.startswith("Summary written by fake\\-model") for c in at.caption)
    assert not at.warning or not any("unavailable" in w.value for w in at.warning)
    api.fail_next(500, times=10)
    at.text_area(key="lab_summarize_summary_prompt").input("Another prompt:\n{span}").run()  # a new call
    assert not at.exception, at.exception
    assert any("LLM summary unavailable" in w.value and "HTTP 500" in w.value for w in at.warning)
    assert any("Tokens after" == m.label for m in at.metric)  # the plan is still there, offline


def test_a_planted_key_reaches_no_page_element_download_log_or_file(monkeypatch, api, tmp_path, downloads, caplog):
    data_dir = tmp_path / "data"
    monkeypatch.setenv("CTXLAB_DATA_DIR", str(data_dir))
    monkeypatch.setenv("CTXLAB_LLM_CACHE", "disk")
    # the summarizer as an app started with these variables has it (the registered one read them at import)
    monkeypatch.setitem(SUMMARIZERS, "llm", LLMSummarizer(cache=SummaryCache.from_env()))
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []

    answers = page("answers.py", monkeypatch, api)
    answers.text_input(key="llm_api_key_input").input(PLANTED).run()
    for fault in (None, 401, 500):
        if fault:
            api.fail_next(fault, times=4)
        answers.text_area(key="ans_question").input(f"What refund did we agree on? ({fault})")
        answers.button(key="ans_ask").click().run()
        seen.append(rendered(answers))
    api.fail_next(401)
    answers.button(key="probe_run").click().run()
    answers.button(key="llm_test_button").click().run()
    seen.append(rendered(answers))
    assert any("rejected the API key" in e.value for e in answers.error)  # the faults did reach the page

    lab = page("strategy_lab.py", monkeypatch, api, **LAB_SUMMARIZE, max_tokens=3_000, limit_set_by_user=True,
               lab_tab="Export")
    lab.text_input(key="llm_api_key_input").input(PLANTED).run()
    seen.append(rendered(lab))
    api.fail_next(401, times=2)
    lab.text_area(key="lab_summarize_summary_prompt").input("Another prompt:\n{span}").run()  # a call with the key
    seen.append(rendered(lab))
    assert api.chat_requests()[-1].bearer == PLANTED  # the planted key was in use throughout

    assert downloads and all(PLANTED.encode() not in data for data in downloads.values())
    assert all(PLANTED not in text for text in seen)
    assert all(PLANTED not in r.getMessage() for r in caplog.records)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files, "the disk cache wrote nothing: the scan would prove nothing"
    assert all(PLANTED.encode() not in p.read_bytes() for p in files)
