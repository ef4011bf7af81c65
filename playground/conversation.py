"""The conversation in use, parsed once per distinct text and cached (the parse cache), with its
strategy view per model and pins, its parts (one per conversation of a multi-conversation input),
an input read as a named format, and a generated conversation as text."""
from __future__ import annotations

import json
from typing import Any

import streamlit as st

import ctxlab
from ctxlab.generate import generate
from ctxlab.i18n import _, language
from ctxlab.strategies import View, make_view
from ctxlab.tokens import TokenCounter
from playground.state import prefix_override, text_hash


def parse(text: str) -> ctxlab.Conversation:
    """Parse conversation text once per distinct text (a shared object: conversations are
    immutable, and copying a large one on every rerun would cost more than planning it). Cached
    under the text's hash, itself remembered per text: Streamlit would otherwise hash the whole
    text on every rerun (20-30 ms for a 10,000-message conversation). A trace's unlogged system
    prompt and tools are at its head: inferred from its bill, or the size the user gave
    (``prefix_override``, which is part of the text's key)."""
    return _parse(text_hash(text), text, prefix_override(text))


@st.cache_resource(show_spinner=False, max_entries=32)
def _parse(text_key: str, _text: str, override: int | None = None) -> ctxlab.Conversation:
    from ctxlab.prefix import with_unlogged_prefix
    return with_unlogged_prefix(ctxlab.loads(_text), override=override)


@st.cache_data(show_spinner=False, max_entries=16)
def generated_text(**params: Any) -> str:
    """A generated conversation as JSON text (facts kept), so it flows like any other input."""
    conv = generate(**params)
    data = ctxlab.export(conv, "openai").data
    return json.dumps({**data, "facts": list(conv.facts), "title": conv.metadata.get("title", ""),
                       "planted": conv.metadata.get("planted", [])})  # loads back into metadata["planted"]


@st.cache_resource(show_spinner=False, max_entries=16)
def _view(text_hash: str, _text: str, model: str, pins: tuple[int, ...]) -> View:
    conv = parse(_text)
    return make_view(conv, counter=TokenCounter(model), pins=pins)


def current_view(conv_text: str, model: str, pins: tuple[int, ...] = ()) -> View:
    """The strategy view of the conversation for a model, built once and cached."""
    with st.spinner(_("Counting tokens…")):
        return _view(text_hash(conv_text), conv_text, model, pins)


@st.cache_resource(show_spinner=False, max_entries=8)
def _parts(text_key: str, _text: str) -> list[tuple[str, str]]:
    """(label with its size, text) of each conversation of an input (one for a single one)."""
    from ctxlab.formats._json import jsonl_lines
    convs = ctxlab.load_all(_text)
    if len(convs) == 1:
        return [("", _text)]
    texts = ctxlab.formats.run_texts(_text) or [line for _, line in jsonl_lines(_text)]  # a trace: one text a run
    if len(texts) != len(convs):  # a JSON array of conversation objects
        texts = [json.dumps(doc) for doc in json.loads(_text)]
    return [(_("{k}: {title} — {n:,} messages, {kb:,.0f} KB").format(
        k=k + 1, title=c.metadata.get("title") or c.metadata.get("id") or _("conversation"), n=len(c.messages),
        kb=len(t) / 1024), t)
            for k, (c, t) in enumerate(zip(convs, texts))]


def conversation_parts(text: str) -> list[tuple[str, str]]:
    """Each conversation of an input as (its label with its size, its own text): one entry for a
    single conversation, one per line of a multi-conversation JSONL (the sidebar's picker)."""
    with st.spinner(_("Reading the file…")):
        return _parts(f"{text_hash(text)}|{language()}", text)  # the labels are in the language in use


@st.cache_data(show_spinner=False, max_entries=8)
def read_as(text_key: str, fmt: str, _text: str) -> str:
    """The input read as format ``fmt`` (detection skipped), written back as OpenAI messages that
    every page reads the same way: one conversation as JSON, several as JSONL (one a line)."""
    convs = ctxlab.load_all(_text, format=fmt)
    docs = [{**ctxlab.export(c, "openai").data, "facts": list(c.facts), "title": c.metadata.get("title", "")}
            for c in convs]
    return json.dumps(docs[0]) if len(docs) == 1 else "\n".join(json.dumps(d) for d in docs) + "\n"


def current_conversation() -> ctxlab.Conversation | None:
    """The conversation in use, or None before any good input."""
    text = st.session_state.get("conversation_text")
    return parse(text) if text else None


def require_conversation() -> ctxlab.Conversation:
    """The conversation, or an info box and a stop (a page's prerequisite guard)."""
    conv = current_conversation()
    if conv is None:
        st.info(_("Pick a sample, paste, upload or generate a conversation in the sidebar."))
        st.stop()
    return conv
