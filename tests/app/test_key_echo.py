"""The Answers and Chat pages against a server that echoes the key in every form: no page element
shows it, and the session store the Chat page writes does not hold it."""
from __future__ import annotations

import streamlit as st

from .helpers import open_page
from .test_llm_settings import rendered
from ..openai_fake import FakeOpenAI
from ..llm.test_llm_key_echo import PLANTED, echo_all, leaks


def test_answers_and_chat_pages_never_show_an_echoed_key(monkeypatch, tmp_path):
    monkeypatch.delenv("CTXLAB_SESSIONS_URL", raising=False)
    monkeypatch.setenv("CTXLAB_DATA_DIR", str(tmp_path))
    st.cache_resource.clear()
    with FakeOpenAI() as api:
        api.default_reply = echo_all
        monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
        at = open_page("answers.py", monkeypatch, state={"ans1_strategy": "none", "ans2_strategy": "sliding_window"})
        at.text_area(key="ans_question").input("What refund?")
        at.button(key="ans_ask").click().run()
        assert not at.exception
        at.button(key="probe_run").click().run()
        assert not at.exception
        pages = [rendered(at)]
        chat = open_page("chat.py", monkeypatch)
        chat.button(key="chat_make_sample").click().run()
        chat.button(key="chat_new").click().run()
        chat.chat_input(key="chat_input").set_value("Where is my order?").run()
        assert not chat.exception and not chat.error, chat.error
        pages.append(rendered(chat))
        api.fail_next(401, message=f"Incorrect API key provided: {PLANTED.upper()}")
        chat.chat_input(key="chat_input").set_value("And now?").run()
        assert not chat.exception
        pages.append(rendered(chat))
        assert len(api.chat_requests()) >= 4
    st.cache_resource.clear()
    assert sum("Here is what you sent me" in p for p in pages) >= 2  # the echoes were shown, redacted
    for text in pages:
        assert not leaks(text), leaks(text)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert not leaks(path.read_bytes().decode("utf-8", "replace")), path
