"""Bring your own model: the sidebar's model settings panel (model name, base URL, an API key kept
in memory only, a connection test) and :func:`current_llm`, the model it points at."""
from __future__ import annotations

import os

import streamlit as st

from ctxlab.errors import CtxlabError
from ctxlab.i18n import _
from ctxlab.llm import BASE_URL_ENV, DEFAULT_MODEL, KEY_ENV, LLM, MODEL_ENV, LLMConfig, public_url
from playground.markdown import md_code, md_escape
from playground.state import persist

LLM_KEY = "_llm_api_key"
"""Session-state key of the API key typed in the settings panel: memory only, never a widget value
(a widget's value travels back to the browser), never written to a file, an export or a log."""
LLM_PROBE = [{"role": "user", "content": "Reply with the single word OK."}]


def _remember_key() -> None:
    """Move a typed key out of its field into memory; the field is emptied so the key is not sent
    back to the browser on the next run."""
    typed = str(st.session_state.get("llm_api_key_input") or "").strip()
    if typed:
        st.session_state[LLM_KEY] = typed
    st.session_state.llm_api_key_input = ""
    st.session_state.llm_test = None


def _forget_key() -> None:
    st.session_state.pop(LLM_KEY, None)
    st.session_state.llm_test = None


def _env_base_url() -> str:
    """OPENAI_BASE_URL when it can be shown as it is (no user name or password in it), else ""."""
    url = os.environ.get(BASE_URL_ENV, "").strip()
    return url if url and public_url(url) == url.split("?")[0].split("#")[0] else ""


def current_llm() -> LLM:
    """The model the settings panel (or the environment, for what the panel leaves empty) points
    at, one object per configuration kept in session state (its summary cache and cool-down live
    with it). An invalid setting gives a model that is not configured (the panel shows why)."""
    key = st.session_state.get(LLM_KEY)
    try:
        config = LLMConfig.from_env(model=str(st.session_state.get("llm_model") or "").strip() or None,
                                    base_url=str(st.session_state.get("llm_base_url") or "").strip() or None,
                                    api_key=key or None)
    except CtxlabError as e:
        st.session_state.llm_config_error = str(e)
        config = LLMConfig()
    else:
        st.session_state.llm_config_error = None
    held = st.session_state.get("_llm")
    if held is None or held[0] != config.fingerprint():
        held = st.session_state["_llm"] = (config.fingerprint(), LLM(config))
    return held[1]


def _test_connection() -> None:
    llm = current_llm()
    try:
        reply = llm.chat(LLM_PROBE, max_tokens=5)
    except CtxlabError as e:
        st.session_state.llm_test = (llm.config.fingerprint(), "error", str(e))
        return
    st.session_state.llm_test = (llm.config.fingerprint(), "ok",
                                 _("{model} answered {reply} in {ms:,.0f} ms.").format(
                                     model=md_code(llm.config.describe()), reply=md_code(reply.text.strip()[:60]),
                                     ms=reply.latency_ms))


def llm_settings() -> LLM:
    """The sidebar's model settings panel (model name, base URL, API key in a password field, a
    connection test), prefilled from the environment; returns :func:`current_llm`. The
    environment's key is never shown: the panel says where it comes from instead."""
    st.session_state.setdefault("llm_model", os.environ.get(MODEL_ENV) or DEFAULT_MODEL)
    st.session_state.setdefault("llm_base_url", _env_base_url())
    st.session_state.setdefault("llm_test", None)
    persist("llm_model", "llm_base_url")
    llm = current_llm()
    box = st.sidebar.expander(_("Model for answers and LLM summaries"), expanded=False,
                              icon=":material/tune:")
    # small markdown, not captions: the sidebar's captions are the model-and-budget notes (tests/app/test_sidebar.py)
    note = lambda text: box.markdown(f":small[{text}]")  # noqa: E731  (our own text; no brackets in it)
    note(_("Optional: answer replay, probes and the summarize strategy's summarizer=llm use it. Any "
           "OpenAI-compatible server (OpenAI, vLLM, Ollama, LM Studio, a proxy)."))
    box.text_input(_("Model name"), key="llm_model",
                   help=_("The name the server knows; default from {env}").format(env=MODEL_ENV))
    box.text_input(_("Base URL"), key="llm_base_url", placeholder="https://api.openai.com/v1",
                   help=_("Empty: {env}, else OpenAI. E.g. http://127.0.0.1:11434/v1 for Ollama").format(env=BASE_URL_ENV))
    box.text_input(_("API key"), type="password", key="llm_api_key_input", on_change=_remember_key,
                   placeholder="sk-…", help=_("Kept in this browser session's memory only; never saved or shown"))
    if st.session_state.get(LLM_KEY):
        note(_("API key: set in this session (not shown)."))
        box.button(_("Forget the key"), key="llm_forget_key", on_click=_forget_key)
    elif os.environ.get(KEY_ENV):
        note(_("API key: set from {env}.").format(env=KEY_ENV))
    else:
        note(_("API key: none (a local server needs none)."))
    if st.session_state.get("llm_config_error"):
        box.error(md_escape(st.session_state.llm_config_error))
    elif llm.config.configured:
        box.markdown(_("In use: {model}").format(model=md_code(llm.config.describe())))  # a model name may hold a bracket
    else:
        note(_("No model configured: everything works offline."))
    box.button(_("Test connection"), key="llm_test_button", on_click=_test_connection,
               disabled=not llm.config.configured)
    test = st.session_state.llm_test
    if test and test[0] == llm.config.fingerprint():
        (box.success if test[1] == "ok" else box.error)(test[2] if test[1] == "ok" else md_escape(test[2]))
    return llm
