"""The hand-off to the Strategy Lab: another page's conversation (a live session's history) or a
sweep point (a strategy, its parameters and a limit) made the Lab's, from a widget's callback; then,
on the page's next run, the switch to the Lab (:func:`go_to_lab`)."""
from __future__ import annotations

from typing import Any, Callable

import streamlit as st
from streamlit.errors import StreamlitAPIException

import ctxlab
from ctxlab.errors import CtxlabError
from playground.input_panel import try_use
from playground.state import init_state, persist
from playground.widgets import widget_value


def open_in_lab(text: str, label: str, *, model: str | None = None, max_tokens: int | None = None,
                reserve: float | None = None) -> None:
    """Make ``text`` (a conversation's JSON, e.g. a live session's full history) the conversation
    the Strategy Lab and the other pages use, as if it had been pasted; with the session's model
    and budget when given. Call it before the sidebar's widgets are drawn (a button's callback)."""
    init_state()
    st.session_state.source = "paste"
    st.session_state.paste_text = text
    try_use(text, label)
    if model:
        try:
            st.session_state.model = ctxlab.resolve_model(model).name
        except CtxlabError:
            pass  # an unknown model keeps the sidebar's; the Lab still opens the conversation
    if max_tokens:
        st.session_state.max_tokens = int(max_tokens)
    if reserve is not None:
        st.session_state.reserve = float(reserve)


def load_point_into_lab(strategy: str, params: dict[str, Any], max_tokens: int, reserve: float | None = None) -> None:
    """Set the Strategy Lab to a sweep point: the strategy, every parameter (the point's values, the
    documented defaults for the others, as the sweep ran them, marked as set by the user so no budget
    rescales them) and the context limit. Call it from a widget callback (before the sidebar draws)."""
    from ctxlab.strategies import STRATEGIES
    init_state()
    st.session_state["lab_strategy"] = strategy
    st.session_state["lab_defaults"] = "documented"
    specs = STRATEGIES[strategy].schema()
    values = {spec["name"]: spec["default"] for spec in specs} | dict(params)
    for spec in specs:
        st.session_state[f"lab_{strategy}_{spec['name']}"] = widget_value(spec, values[spec["name"]])
    st.session_state[f"lab_{strategy}__filled"] = {}
    persist("lab_strategy", "lab_defaults", f"lab_{strategy}__filled",
            *(f"lab_{strategy}_{spec['name']}" for spec in specs))
    st.session_state.max_tokens = int(max_tokens)
    st.session_state.limit_set_by_user = True
    st.session_state.limit_note = None
    if reserve is not None:
        st.session_state.reserve = float(reserve)


LAB_PAGE = "pages/strategy_lab.py"


def go_to_lab(flag: str, note: str, box: Callable[[str], Any] = st.info) -> None:
    """Open the Strategy Lab when this page's callback set the session-state flag ``flag`` (after
    :func:`open_in_lab` or :func:`load_point_into_lab`). A page run on its own (no navigation, as in
    the tests) cannot switch: it shows ``note`` in ``box``, saying where to go."""
    if st.session_state.pop(flag, False):
        try:
            st.switch_page(LAB_PAGE)
        except StreamlitAPIException:
            box(note)
