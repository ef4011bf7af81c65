"""The model and budget every page uses: the context limit as a model change leaves it, the tool
definitions the budget counts (the conversation's own, or the Tool Retrieval selection), and the
budget the sidebar sets."""
from __future__ import annotations

import streamlit as st

import ctxlab
from ctxlab.i18n import _
from ctxlab.strategies import Budget
from ctxlab.tokens import TokenCounter
from playground.state import text_hash


MAX_FOLLOWED_LIMIT = 1_000_000
"""An untouched limit follows the model's window up to this many tokens."""


def limit_for_model(limit: int, set_by_user: bool, model: str) -> tuple[int, str | None]:
    """The context limit after switching to ``model``, and a note for the user: a limit the user
    set stays (capped at the model's window); an untouched default follows the model's window."""
    window = ctxlab.resolve_model(model).context_window
    if not set_by_user:
        return min(window, MAX_FOLLOWED_LIMIT), None
    if limit > window:
        return window, _("Your context limit of {limit:,} tokens is more than {model}'s window: "
                         "lowered to {window:,}.").format(limit=limit, model=model, window=window)
    return limit, _("Kept your context limit of {limit:,} tokens ({model}'s window is {window:,}).").format(
        limit=limit, model=model, window=window)


def on_model_change() -> None:
    st.session_state.max_tokens, st.session_state.limit_note = limit_for_model(
        int(st.session_state.max_tokens), bool(st.session_state.limit_set_by_user), st.session_state.model)


def on_limit_change() -> None:
    st.session_state.limit_set_by_user = True
    st.session_state.limit_note = None


def _own_tools_note(n_own: int, own: int, stale: bool) -> str:
    """The budget's note when it counts the conversation's own tools (``stale``: a Tool Retrieval
    selection exists, made for another conversation or model); a conversation without tools says so."""
    if n_own == 0:
        return _("Tool definitions in the budget: none, the conversation has no tools; the Tool Retrieval selection "
                 "was made for another conversation or model: open Tool Retrieval to select again.") if stale else \
            _("Tool definitions in the budget: none, the conversation has no tools.")
    if stale:
        return _("Tool definitions in the budget: all the conversation's own {n} tools ({own:,} tokens); the Tool "
                 "Retrieval selection was made for another conversation or model: open Tool Retrieval to select "
                 "again.").format(n=n_own, own=own)
    return _("Tool definitions in the budget: all the conversation's own {n} tools ({own:,} tokens).").format(
        n=n_own, own=own)


def tool_budget(conv: ctxlab.Conversation) -> tuple[int, str, bool]:
    """The tool-definition tokens the budget counts, which catalog they come from (in words),
    and whether they exceed all of the conversation's own tools. The Tool Retrieval selection
    counts only while it was made for this conversation and model."""
    model = st.session_state.model
    own = TokenCounter(model).tools(conv.tools)
    n_own = len(conv.tools)
    override, src = st.session_state.tool_tokens_override, st.session_state.get("tool_tokens_source")
    if override is None or not src:
        return own, _own_tools_note(n_own, own, False), False
    if src.get("conversation") != text_hash(st.session_state.conversation_text or "") or src.get("model") != model:
        return own, _own_tools_note(n_own, own, True), False
    if int(override) > own:
        if n_own == 0:
            return int(override), _("Tool definitions in the budget: {sel:,} tokens, the tools retrieval selects from "
                                    "{label}; the conversation has no tools of its own: that catalog is not the "
                                    "conversation's.").format(sel=int(override), label=src["label"]), True
        return int(override), _("Tool definitions in the budget: {sel:,} tokens, the tools retrieval selects from "
                                "{label}, more than all the conversation's own {n} tools ({own:,} tokens): that "
                                "catalog is not the conversation's.").format(
            sel=int(override), label=src["label"], n=n_own, own=own), True
    return int(override), _("Tool definitions in the budget: {sel:,} tokens, the tools retrieval selects from "
                            "{label} (all the conversation's own tools: {own:,} tokens).").format(
        sel=int(override), label=src["label"], own=own), False


def current_budget(conv: ctxlab.Conversation) -> Budget:
    """The budget from the sidebar; tool definitions count in it (only the selected ones when the
    Tool Retrieval page says so: see tool_budget)."""
    return Budget(int(st.session_state.max_tokens), float(st.session_state.reserve), tool_budget(conv)[0])
