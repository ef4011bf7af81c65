"""The app's session state: every key and its default in one place, plus the input panel
shared by all pages. Domain work happens in ctxlab; this module only wires widgets to it."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import streamlit as st

import ctxlab
from ctxlab.errors import CtxlabError

SAMPLES_DIR = Path(__file__).resolve().parent / "sample_data"
DEFAULT_SAMPLE = "ecommerce_refund.json"

DEFAULTS: dict[str, Callable[[], Any]] = {
    "source": lambda: "sample",        # sample | paste | upload
    "sample_name": lambda: DEFAULT_SAMPLE,
    "paste_text": lambda: "",
    "conversation_text": lambda: None,  # the text of the conversation in use (last good input)
    "input_error": lambda: None,        # the engine's message for the last bad input
    "model": lambda: "gpt-4o",
}

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$])")


def init_state() -> None:
    """Put every key's default into session state once."""
    for key, factory in DEFAULTS.items():
        if key not in st.session_state:
            st.session_state[key] = factory()


def md_escape(text: str) -> str:
    """Text safe to show inside Markdown (st.error, st.info, ...): no links, images or HTML."""
    return _MD_SPECIAL.sub(r"\\\1", text)


def sample_names() -> list[str]:
    """The bundled sample conversations."""
    return sorted(p.name for p in SAMPLES_DIR.glob("*.json") if not p.name.startswith("tool"))


@st.cache_data(show_spinner=False, max_entries=32)
def parse(text: str) -> ctxlab.Conversation:
    """Parse conversation text once per distinct text."""
    return ctxlab.loads(text)


def _try_use(text: str) -> None:
    try:
        parse(text)
    except CtxlabError as e:
        st.session_state.input_error = str(e)
        return
    st.session_state.conversation_text = text
    st.session_state.input_error = None


def input_panel() -> None:
    """Sidebar: choose a sample, paste, or upload; bad input keeps the previous conversation."""
    init_state()
    sb = st.sidebar
    sb.header("Conversation")
    source = sb.radio("Source", ["sample", "paste", "upload"], key="source", horizontal=True,
                      format_func={"sample": "Sample", "paste": "Paste", "upload": "Upload"}.get)
    if source == "sample":
        names = sample_names()
        name = sb.selectbox("Sample", names, key="sample_name")
        if name:
            _try_use((SAMPLES_DIR / name).read_text(encoding="utf-8"))
    elif source == "paste":
        text = sb.text_area("Paste JSON or JSONL", key="paste_text", height=200,
                            help="OpenAI, Anthropic, LangChain or Responses messages; a list or {\"messages\": [...]}")
        if sb.button("Use pasted text", key="use_paste") and text.strip():
            _try_use(text)
    else:
        up = sb.file_uploader("Upload .json / .jsonl", type=["json", "jsonl"], key="upload_file")
        if up is not None:
            _try_use(up.getvalue().decode("utf-8", errors="replace"))
    sb.selectbox("Model", list(ctxlab.MODELS), key="model", help="Picks the tokenizer, framing and context window")
    if st.session_state.input_error:
        sb.error(md_escape(st.session_state.input_error))
        if st.session_state.conversation_text:
            sb.caption("Still showing the previous conversation.")


def current_conversation() -> ctxlab.Conversation | None:
    """The conversation in use, or None before any good input."""
    text = st.session_state.get("conversation_text")
    return parse(text) if text else None
