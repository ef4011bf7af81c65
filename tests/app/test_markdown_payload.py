"""User strings that reach Markdown are escaped: an agent name, a session
title, an uploaded file's name (the conversation label), a model name and a tool-call id, each a
Markdown/HTML payload, rendered on the Agents, Chat, Failure Modes and Answers pages. No element
that renders Markdown holds the payload's link, image, emphasis, colour or HTML unescaped (so no
browser fetches the image), and the payload is still shown (as text)."""
from __future__ import annotations

import re


from ..conftest import SAMPLES
from ..openai_fake import FakeOpenAI
from .helpers import open_page

PAYLOAD = "a ![p](http://127.0.0.1:8629/agent.png) **B** [l](http://127.0.0.1:8629/) <img src=x> :red[c]"
RAW = re.compile(r"(?<!\\)!\[p|(?<!\\)\]\(http|(?<!\\)\*\*B|<img|(?<!\\):red\[c|(?<!\\)\[l\]")
#: elements whose text is shown as typed (not Markdown): a widget's value, a code block, a table
PLAIN = {"text_input", "text_area", "code", "dataframe", "arrow_data_frame", "json", "selectbox", "chat_input",
         "number_input", "slider", "multiselect", "download_button", "plotly_chart"}


def markdown_texts(at) -> list[str]:
    """The text of every element and block that the browser renders as Markdown."""
    out: list[str] = []

    def walk(node) -> None:
        kind = getattr(node, "type", "")
        proto = getattr(node, "proto", None)
        if proto is not None and kind not in PLAIN:
            out.append(str(proto))
        children = getattr(node, "children", None)
        for child in (children.values() if isinstance(children, dict) else ()):
            walk(child)

    walk(at._tree)
    return out


def assert_escaped(at, where: str) -> None:
    assert not at.exception, at.exception
    texts = markdown_texts(at)
    texts = [re.sub(r"`[^`]*`", "", t) for t in texts]  # inline code shows its text as typed
    bad = [t for t in texts if "127.0.0.1:8629" in t and RAW.search(t.replace("\\\\", "\\"))]
    assert not bad, (where, bad[0][:600])


def test_an_agent_named_with_markdown_is_text_on_agents_and_chat(data_dir, monkeypatch):
    at = open_page("agents.py", monkeypatch)
    at.text_input(key="agents_name").input(PAYLOAD)
    at.button(key="agents_save").click().run()
    assert_escaped(at, "agents after save")
    assert any("8629" in t for t in markdown_texts(at))  # the name is shown, as text
    chat = open_page("chat.py", monkeypatch, state={"chat_profile": PAYLOAD})
    chat.button(key="chat_new").click().run()
    chat.button(key="chat_send_scripted").click().run()
    assert_escaped(chat, "chat")


def test_a_file_name_with_markdown_is_text_on_failure_modes(monkeypatch):
    text = (SAMPLES / "ecommerce_refund.json").read_text(encoding="utf-8")
    at = open_page("failure_modes.py", monkeypatch,
                   state={"source": "paste", "paste_text": text, "conversation_text": text,
                          "conversation_label": f"upload {PAYLOAD}.json", "fm_source": "mine"})
    assert_escaped(at, "failure modes")
    assert any("8629" in t for t in markdown_texts(at))


def test_a_model_name_with_markdown_is_text_on_answers(monkeypatch):
    with FakeOpenAI() as api:
        at = open_page("answers.py", monkeypatch, state={"llm_base_url": api.base_url, "llm_model": PAYLOAD,
                                                         "ans1_strategy": "none", "ans2_strategy": "sliding_window"})
        at.text_area(key="ans_question").input("Which order?")
        at.button(key="ans_ask").click().run()
        assert len(api.chat_requests()) == 2
    assert_escaped(at, "answers")
