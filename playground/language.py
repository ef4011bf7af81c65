"""The interface language: chosen per run (the user's pick, else the URL's ``?lang=``, else the
browser's) and the sidebar's language switch, which carries a first sample to the new language's."""
from __future__ import annotations

import streamlit as st

from ctxlab.i18n import LANGUAGES, pick, use
from playground.state import DEFAULT_SAMPLE, DEFAULT_SAMPLES

LANG_KEY = "lang"
"""Session-state key of the interface language; the URL's ``?lang=`` keeps it across reloads."""


def _follow_language_sample(lang: str) -> None:
    """A first sample left as it was (some language's default) becomes the new language's: switching
    to 中文 opens the Chinese sample, and back. A sample the user picked stays."""
    defaults = {DEFAULT_SAMPLE, *DEFAULT_SAMPLES.values()}
    if st.session_state.get("sample_name") in defaults:
        st.session_state.sample_name = DEFAULT_SAMPLES.get(lang, DEFAULT_SAMPLE)


def _on_language_change() -> None:
    lang = st.session_state.get(LANG_KEY)
    if lang not in LANGUAGES:  # a click on the selected option clears the control: keep the language
        lang = st.query_params.get(LANG_KEY) if st.query_params.get(LANG_KEY) in LANGUAGES else use(None)
        st.session_state[LANG_KEY] = lang
    st.query_params[LANG_KEY] = lang
    _follow_language_sample(lang)


def choose_language() -> str:
    """Set this run's language: the user's choice, else the URL's ``?lang=``, else the browser's."""
    lang = st.session_state.get(LANG_KEY)
    if lang not in LANGUAGES:
        lang = st.query_params.get(LANG_KEY)
    if lang not in LANGUAGES:
        try:
            lang = pick(st.context.locale)
        except Exception:  # no browser behind this run (AppTest, bare mode)
            lang = None
    st.session_state[LANG_KEY] = use(lang)
    return st.session_state[LANG_KEY]


def language_switch() -> None:
    """The sidebar's language picker (each language named in itself, so anyone can find theirs)."""
    choose_language()
    st.sidebar.segmented_control("Language / 语言", list(LANGUAGES), format_func=LANGUAGES.__getitem__,
                                 key=LANG_KEY, on_change=_on_language_change, label_visibility="collapsed")
