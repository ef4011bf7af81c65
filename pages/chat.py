"""Chat: talk to an agent in a live session and watch its token overflow strategy work. Pick an
agent, start or resume a session, send messages; replies come from the configured model, or
offline from a scripted responder that replays a bundled conversation turn by turn (its tool
calls answered from the recorded results, or typed by you). Beside the chat: what is sent this
turn against the budget, the running summary, the compression history and the counters; "Open in
Strategy Lab" loads the session's full history there."""
from __future__ import annotations

import json
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import ctxlab
from ctxlab.errors import CtxlabError
from ctxlab.configs.lab_config import read_config
from ctxlab.i18n import N_, _
from ctxlab.sessions import Session, SessionStore, default_url
from ctxlab.sessions.db import redact
from ctxlab.sessions.responder import (CannedTools, ModelResponder, ScriptedResponder, advance, model_configured,
                                       pending_calls, run_turn)
from ctxlab.strategies import Budget
from ctxlab.figures import CATEGORY_COLORS
from ctxlab.generate import generate
from ctxlab.tokens import CATEGORIES
from playground.handoff import go_to_lab, open_in_lab
from playground.input_panel import input_panel
from playground.language import choose_language
from playground.markdown import md_escape
from playground.session_store import open_store
from playground.state import DEFAULT_SAMPLE, SAMPLES_DIR, sample_names
from playground.widgets import over_budget_note, text_width

NEW = "new"
SAMPLE_AGENT = "Kestrel support (sample)"
LONG_AGENT = "Ridgeline ticket copilot (sample, 30 tickets)"
LONG_SCRIPT = "30 support tickets (generated)"
# (a script long enough to watch a strategy over many turns: ctxlab.generate's e-commerce copilot; a comment,
# not a string: a bare string on a page is drawn on it)
SAMPLE_SCRIPTS = {SAMPLE_AGENT: DEFAULT_SAMPLE, LONG_AGENT: LONG_SCRIPT}
# (each sample agent and the script that plays its conversation offline)
SCRIPT_LABELS = {LONG_SCRIPT: N_("30 support tickets (generated)")}
CATEGORY_LABELS = {"system": N_("system"), "tool_definitions": N_("tool definitions"), "user": N_("user"),
                   "assistant_text": N_("assistant text"), "tool_calls": N_("tool calls"),
                   "tool_results": N_("tool results"), "reply_priming": N_("reply priming")}
RESULT_PREVIEW = 4_000


@st.cache_resource(show_spinner=False, max_entries=8)
def script_conversation(name: str) -> ctxlab.Conversation:
    """The conversation a script replays: a bundled sample, or the generated 30-ticket session."""
    if name == LONG_SCRIPT:
        return generate(domain="ecommerce", turns=30, seed=0)
    return ctxlab.load(SAMPLES_DIR / name)


@st.cache_resource(show_spinner=False, max_entries=16)
def script_for(name: str) -> tuple[ScriptedResponder, CannedTools]:
    """The scripted responder and canned tool results of a script (read-only after they are built, so
    one pair serves every rerun: the page lists every script on each one)."""
    conv = script_conversation(name)
    return ScriptedResponder(conv, label=name), CannedTools(conv)


def _scripts() -> list[str]:
    return [LONG_SCRIPT, *(n for n in sample_names() if script_for(n)[0].turns)]


def _make_sample_agent(store: SessionStore) -> None:
    data = ctxlab.export(ctxlab.load(SAMPLES_DIR / DEFAULT_SAMPLE), "openai").data
    store.save_profile(SAMPLE_AGENT, model="gpt-4", max_tokens=8_192, system_prompt=data["messages"][0]["content"],
                       strategy="summarize", tools=data.get("tools", []))
    long = ctxlab.export(script_conversation(LONG_SCRIPT), "openai").data
    store.save_profile(LONG_AGENT, model="gpt-4o", max_tokens=8_000, system_prompt=long["messages"][0]["content"],
                       strategy="summarize", tools=long.get("tools", []))
    st.session_state.chat_profile = SAMPLE_AGENT


def _session() -> Session | None:
    """The session picked, or None (nothing picked, or it no longer exists)."""
    sid = st.session_state.get("chat_session_pick")
    if not sid or sid == NEW:
        return None
    try:
        return open_store(default_url()).open_session(sid)
    except CtxlabError:
        return None


def script_of(history: list[dict], scripts: list[str]) -> str | None:
    """The script a session plays: the one whose first user message opens its history (None: none does,
    e.g. a session typed by hand)."""
    first = next((str(m.get("content") or "") for m in history if m.get("role") == "user"), None)
    if first is None:
        return None
    return next((n for n in scripts if script_for(n)[0].user_messages[:1] == [first]), None)


def _follow_session_script(scripts: list[str]) -> None:
    """A session picked (or resumed after a restart) shows the script it plays, not its agent's first one."""
    pick = st.session_state.get("chat_session_pick")
    if pick == st.session_state.get("chat_script_session"):
        return
    st.session_state.chat_script_session = pick
    session = _session()
    found = script_of(session.history(), scripts) if session is not None else None
    if found:
        st.session_state.chat_script = found


def _responder():
    if model_configured():
        return ModelResponder()
    return script_for(st.session_state.chat_script)[0]


def _tools() -> CannedTools | None:
    return None if st.session_state.get("chat_manual_tools") else script_for(st.session_state.chat_script)[1]


def _turn(text: str) -> None:
    """Run one turn from a callback (before the page draws, so the new messages show at once)."""
    choose_language()  # a callback runs before the page sets its language
    try:
        session = _session()
        if session is None:
            return
        result = run_turn(session, text, _responder(), _tools())
        if result.stopped == "max_steps":
            st.session_state.chat_error = _("The agent made 12 model calls in this turn without answering; stopped.")
    except CtxlabError as e:
        st.session_state.chat_error = str(e)


def _send_typed() -> None:
    text = st.session_state.get("chat_input") or ""
    if text.strip():
        _turn(text)


def _send_scripted() -> None:
    session = _session()
    nxt = script_for(st.session_state.chat_script)[0].next_user_message(session.history()) if session else None
    if nxt:
        _turn(nxt)


def _submit_tool_results(calls: list[dict]) -> None:
    try:
        session = _session()
        for call in calls:
            session.add({"role": "tool", "tool_call_id": call["id"],
                         "content": st.session_state.get(f"chat_tool_{call['id']}", "")})
        advance(session, _responder(), _tools())
    except CtxlabError as e:
        st.session_state.chat_error = str(e)


def _start_session(profile: str) -> None:
    choose_language()  # a callback runs before the page sets its language: the title is written in it
    try:
        s = open_store(default_url()).start_session(profile, title=_("chat with {agent}").format(agent=profile))
        st.session_state.chat_session_pick = s.id
    except CtxlabError as e:
        st.session_state.chat_error = str(e)


def _open_in_lab() -> None:
    choose_language()  # a callback runs before the page sets its language
    session = _session()
    if session is None:
        return
    budget = read_config(session.record().config).budget_kwargs()
    open_in_lab(json.dumps(session.export(), ensure_ascii=False),
                _("session {id} of {agent}").format(id=session.id[:8], agent=session.profile),
                model=session.model, max_tokens=budget.get("max_tokens"), reserve=budget.get("reserve"))
    st.session_state.chat_to_lab = True


def _show(m: dict) -> None:
    """One history message, as text only (never rendered as HTML or Markdown links)."""
    role = m.get("role")
    if role == "tool":
        with st.chat_message("tool", avatar=":material/build:"):
            text = m.get("content") if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
            with st.expander(_("Result for {id} ({n} characters)").format(id=md_escape(str(m.get("tool_call_id"))),
                                                                          n=f"{len(text):,}")):
                st.code(text[:RESULT_PREVIEW] + ("…" if len(text) > RESULT_PREVIEW else ""), language=None,
                        wrap_lines=True)
        return
    with st.chat_message("user" if role == "user" else "assistant"):
        content = m.get("content")
        text = content if isinstance(content, str) else "\n".join(
            p.get("text", "") for p in content or () if isinstance(p, dict))
        if text:
            st.markdown(md_escape(text))
        for c in m.get("tool_calls") or ():
            st.code(f"{c['function']['name']}({c['function'].get('arguments', '')})", language=None, wrap_lines=True)


def _token_bar(by_category: dict[str, int], limit: int) -> go.Figure:
    fig = go.Figure()
    for cat in CATEGORIES:
        if by_category.get(cat):
            fig.add_bar(y=[_("sent")], x=[by_category[cat]], name=_(CATEGORY_LABELS[cat]) if cat in CATEGORY_LABELS
                        else cat.replace("_", " "), orientation="h",
                        marker_color=CATEGORY_COLORS.get(cat))  # the Strategy Lab's colours
    fig.add_vline(x=limit, line_dash="dash", annotation_text=_("budget {limit}").format(limit=f"{limit:,}"))
    fig.update_layout(barmode="stack", height=260, margin=dict(l=10, r=10, t=30, b=10), xaxis_title=_("tokens"),
                      yaxis_visible=False, legend=dict(orientation="h", yanchor="top", y=-0.45))
    return fig


HISTORY_COLUMNS = {"turn": N_("turn"), "acted": N_("acted"), "tokens": N_("tokens"), "messages": N_("messages"),
                   "summarized": N_("summarized"), "dropped": N_("dropped"), "cleared": N_("cleared")}


def _history_columns(rows: list[dict]) -> dict[str, Any]:
    """The compression history's columns, each wide enough for its longest cell ("16,005 → 15,210" was cut)."""
    return {c: st.column_config.Column(_(label), width=text_width([_(label), *(str(r[c]) for r in rows)]))
            for c, label in HISTORY_COLUMNS.items()}


def _side(session: Session) -> None:
    """What is sent this turn, the running summary, the compression history, the counters."""
    sent = session.context()  # first: it may run the strategy (before every call), which updates the record
    record = session.record()
    count = session.count(sent)
    budget = Budget(**read_config(record.config).budget_kwargs())
    st.caption(md_escape(_("This session runs {strategy} (copied from the agent when it started).").format(
        strategy=record.strategy)))
    c1, c2 = st.columns(2)
    c1.metric(_("Tokens sent"), f"{count.total:,}", help=_("What the next model call receives"))
    c2.metric(_("Budget"), f"{budget.prompt_limit:,}", help=_("The agent's context limit less its response reserve"))
    c1.metric(_("Messages sent"), f"{len(sent):,}", help=_("of {n} in the history, plus the system prompt").format(
        n=f"{len(session.history()):,}"))
    st.plotly_chart(_token_bar(count.by_category, budget.prompt_limit), key="chat_token_bar")
    if count.total > budget.prompt_limit:
        st.caption(md_escape(over_budget_note(record, len(session.history()), count.total, budget.prompt_limit)))
    st.subheader(_("Running summary"))
    if record.summary:
        st.code(record.summary, language=None, wrap_lines=True)
    else:
        st.caption(_("No summary yet: the strategy has not folded anything."))
    st.subheader(_("Compression history"))
    rows = [{"turn": c.turn, "acted": c.triggered, "tokens": f"{c.tokens_before:,} → {c.tokens_after:,}",
             "messages": f"{c.messages_before} → {c.messages_after}", "summarized": len(c.summarized),
             "dropped": len(c.dropped), "cleared": len(c.cleared)} for c in reversed(session.compressions())]
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="chat_history_table",
                     column_config=_history_columns(rows))
    else:
        st.caption(_("The strategy runs before every model call (or at every user message, with apply_at "
                     "turn_start); nothing has run yet."))
    st.subheader(_("Monitoring"))
    m1, m2 = st.columns(2)
    m1.metric(_("Strategy runs"), f"{record.times_applied:,}")
    m2.metric(_("Times it acted"), f"{record.times_triggered:,}")
    m1.metric(_("Tokens saved"), f"{record.tokens_saved:,}")
    m2.metric(_("Messages removed"), f"{record.messages_removed:,}")
    st.button(_("Open in Strategy Lab"), key="chat_open_lab", on_click=_open_in_lab,
              help=_("Load this session's full history (and its model and budget) into the Strategy Lab"))


# ---------------------------------------------------------------- page

st.set_page_config(layout="wide")
input_panel()  # the shared sidebar, as on every page (the Strategy Lab's input; an agent has its own model)
st.sidebar.caption(_("The sidebar feeds the Strategy Lab. An agent's own model and limit are set on the Agents page."))
st.title(_("Chat"))
try:
    store = open_store(default_url())
except CtxlabError as e:
    st.error(md_escape(str(e)))
    st.stop()

go_to_lab("chat_to_lab", _("The session is loaded in the Strategy Lab: open it from the navigation."), st.success)

profiles = [p.name for p in store.profiles()]
if not profiles:
    st.info(_("No agent yet. Create one on the Agents page, or start with the sample agents: the Kestrel Cycles "
              "support assistant with a running-summary strategy on an 8K window, and a ticket copilot whose script "
              "plays 30 tickets (39K tokens) on an 8K limit."))
    st.button(_("Create the sample agents"), key="chat_make_sample", on_click=_make_sample_agent, args=(store,))
    st.stop()

if st.session_state.get("chat_profile") not in profiles:
    st.session_state.chat_profile = profiles[0]
scripts = _scripts()
if st.session_state.get("chat_script") not in scripts or st.session_state.get("chat_script_agent") != \
        st.session_state.chat_profile:  # a sample agent starts on its own script
    st.session_state.chat_script = SAMPLE_SCRIPTS.get(st.session_state.chat_profile, DEFAULT_SAMPLE)
    st.session_state.chat_script_agent = st.session_state.chat_profile

top = st.columns([1, 2, 1])
profile = top[0].selectbox(_("Agent"), profiles, key="chat_profile")
infos = {i.id: i for i in store.sessions(profile)}
if st.session_state.get("chat_session_pick") not in (NEW, *infos):
    st.session_state.chat_session_pick = NEW
top[1].selectbox(_("Session"), [NEW, *infos], key="chat_session_pick",
                 # a label that never changes (the browser sends the label back: a count in it would break that)
                 format_func=lambda i: _("— start a new session —") if i == NEW else
                 _("{title} · {id} · started {time}").format(title=infos[i].title or _("session"), id=i[:8],
                                                             time=f"{infos[i].created_at:%Y-%m-%d %H:%M}"),
                 help=_("Resume any session of this agent, also after a restart"))
top[2].button(_("Start a new session"), key="chat_new", on_click=_start_session, args=(profile,))
_follow_session_script(scripts)

if model_configured():
    try:
        st.caption(md_escape(_("Replies come from {model}.").format(model=ModelResponder().label)))
    except CtxlabError as e:
        st.error(md_escape(str(e)))
else:
    st.caption(_("No model configured (OPENAI_BASE_URL or OPENAI_API_KEY): a scripted responder replays a bundled "
                 "conversation turn by turn, offline."))
o1, o2 = st.columns(2)
o1.selectbox(_("Script (and canned tool results)"), scripts, key="chat_script",
             format_func=lambda n: _(SCRIPT_LABELS[n]) if n in SCRIPT_LABELS else n,
             help=_("The bundled conversation whose replies and tool results answer offline"))
o2.checkbox(_("Type tool results myself"), key="chat_manual_tools",
            help=_("Otherwise tool calls are answered from the script's recorded results"))
if err := st.session_state.pop("chat_error", None):
    st.error(md_escape(err))

session = _session()
if session is None:
    st.info(md_escape(_("Start a new session with {agent}, or pick one to resume.").format(agent=profile)))
    st.stop()

chat, side = st.columns([3, 2], gap="large")
with chat:
    history = session.history()
    if session.system_prompt:
        with st.expander(_("System prompt")):
            st.code(session.system_prompt, language=None, wrap_lines=True)
    for m in history:
        _show(m)
    waiting = pending_calls(history)
    if waiting:
        st.warning(_("The agent is waiting for tool results: type them below."))
        for call in waiting:
            st.text_area(_("Result of {tool} ({id})").format(tool=call["function"]["name"], id=call["id"]),
                         key=f"chat_tool_{call['id']}")
        st.button(_("Send tool results"), key="chat_submit_tools", on_click=_submit_tool_results, args=(waiting,))
    else:
        script = script_for(st.session_state.chat_script)[0]
        nxt = script.next_user_message(history)
        if nxt:
            st.caption(md_escape(_("Next scripted message: {text}").format(text=nxt[:300])))
            st.button(_("Send the next scripted message"), key="chat_send_scripted", on_click=_send_scripted)
    st.chat_input(_("Message the agent"), key="chat_input", on_submit=_send_typed, disabled=bool(waiting))
with side:
    _side(session)
