"""The app's session state: every sidebar key and its default in one place, keys kept across page
switches (``persist``), the bundled samples, and the hashes every cache is keyed by (a text's,
with the unlogged-prefix size the user gave for it)."""
from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import streamlit as st

from ctxlab.generate import PARAMS as GEN_PARAMS
from ctxlab.i18n import language

SAMPLES_DIR = Path(__file__).resolve().parent.parent / "sample_data"
DEFAULT_SAMPLE = "ecommerce_refund.json"
DEFAULT_SAMPLES = {"zh": "zh_support_agent.json"}
"""The first sample by interface language: a Chinese user starts on a Chinese conversation."""
AUTO_FORMAT = "auto"


DEFAULTS: dict[str, Callable[[], Any]] = {
    "source": lambda: "sample",          # sample | paste | upload | generate
    "sample_name": lambda: DEFAULT_SAMPLES.get(language(), DEFAULT_SAMPLE),
    "paste_text": lambda: "",
    "input_format": lambda: AUTO_FORMAT,  # the format the input is read as: detected, or one the user names
    "conversation_text": lambda: None,   # the text of the conversation in use (last good input)
    "conversation_label": lambda: "",    # where it came from, for captions
    "input_error": lambda: None,         # the engine's message for the last bad input
    "multi_text": lambda: None,          # an input of several conversations (JSONL): the picker's source
    "multi_input": lambda: None,         # (its text hash, where it came from)
    "multi_pick": lambda: 0,             # which of them is in use
    "subagent_text": lambda: None,       # a Claude Code session with sub-agents: the sub-agent picker's source
    "subagent_input": lambda: None,      # (its text hash, where it came from)
    "subagent_pick": lambda: "",         # the sub-agent in use ("": the main session)
    "model": lambda: "gpt-4o",
    "max_tokens": lambda: 16_000,        # context limit in use (a small default so strategies have work)
    "limit_set_by_user": lambda: False,  # True once the user typed a limit: a model change then keeps it
    "limit_note": lambda: None,          # what the last model change did to the limit the user set
    "reserve": lambda: 0.15,
    "pins": lambda: [],                  # message indexes pinned in the Strategy Lab
    "tool_tokens_override": lambda: None,  # tokens of the tools retrieval selected, when used in the budget
    "tool_tokens_source": lambda: None,    # where they come from: {label, own, model, conversation (text hash)}
    **{f"gen_{p['name']}": (lambda d=p["default"]: d) for p in GEN_PARAMS},
}


PERSISTENT = "_persistent_keys"


def init_state() -> None:
    """Put every key's default into session state once, and keep page widgets' values across
    page switches (Streamlit forgets a widget's value when a page that does not draw it runs)."""
    for key, factory in DEFAULTS.items():
        if key not in st.session_state:
            st.session_state[key] = factory()
    for key in st.session_state.get(PERSISTENT, ()):
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


def persist(*keys: str) -> None:
    """Mark widget keys whose values should survive a visit to another page."""
    st.session_state.setdefault(PERSISTENT, set()).update(keys)


def sample_names() -> list[str]:
    """The bundled sample conversations (tool catalogs excluded)."""
    return sorted(p.name for p in SAMPLES_DIR.glob("*.json") if not p.name.startswith("tool"))


def prefix_override(text: str) -> int | None:
    """The size the user gave to the unlogged part of this text's prompt (None: inferred)."""
    return (st.session_state.get("prefix_overrides") or {}).get(text_sha(text))


@lru_cache(maxsize=8)
def text_sha(text: str) -> str:
    """sha256 of a text alone (:func:`text_hash` adds the unlogged-prefix size)."""
    return hashlib.sha256(text.encode()).hexdigest()


def text_hash(text: str) -> str:
    """sha256 of a conversation text, computed once per text (cache keys use it on every rerun),
    with the unlogged-prefix size the user gave for it: every cache keyed by it follows the size."""
    override = prefix_override(text)
    return text_sha(text) if override is None else f"{text_sha(text)}|prefix={override}"
