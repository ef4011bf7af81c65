"""Agents: create and edit agent profiles (model, system prompt, tools) and their token overflow
section: the strategy with a one-line explanation, its parameters, model presets that fill the
context limit. A change affects new sessions only; "Update existing sessions" applies it to the
agent's sessions too. Profiles live in the session store (``ctxlab.sessions``)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

import ctxlab
from ctxlab.errors import CtxlabError
from ctxlab.i18n import N_, _
from ctxlab.sessions import Profile, default_url
from ctxlab.sessions.db import redact
from ctxlab.strategies import STRATEGIES, Budget
from ctxlab.tokens import TokenCounter
from playground.input_panel import input_panel
from playground.markdown import md_escape
from playground.session_store import open_store
from playground.state import DEFAULTS as SIDEBAR_DEFAULTS
from playground.state import SAMPLES_DIR, sample_names
from playground.widgets import strategy_picker, widget_value

NEW = "+ New agent"  # the option's value; shown through _option() in the interface's language
NEW_LABEL = N_("+ New agent")
CHOOSE = "(choose to fill the limit)"
CHOOSE_LABEL = N_("(choose to fill the limit)")
CLASSIC = [("GPT-3.5 (4K)", "gpt-3.5-turbo-4k"), ("GPT-4 (8K)", "gpt-4")]
CURRENT = ("gpt-5", "gpt-5-mini", "gpt-4.1", "gpt-4o", "gpt-4o-mini", "o3", "claude-sonnet-4")
PRESETS = {label: model for label, model in CLASSIC}
PRESETS.update({f"{m} ({ctxlab.MODELS[m].context_window // 1000:,}K)": m for m in CURRENT if m in ctxlab.MODELS})
NO_TOOLS = "none"
NEW_AGENT_LIMIT = SIDEBAR_DEFAULTS["max_tokens"]()
# (a new agent's context limit: the sidebar's small default, so its strategy acts on the Chat page's scripts,
# whose 30-ticket one reaches about 35,000 tokens; a model preset fills the model's whole window. A comment,
# not a string: a bare string on a page is drawn on it)
SESSION_COLUMNS = {"title": N_("title"), "messages": N_("messages"), "strategy": N_("strategy"),
                   "created_at": N_("created_at"), "updated_at": N_("updated_at")}
# (the sessions table's columns and their headers: in English, the column names themselves)


@st.cache_data(show_spinner=False, max_entries=8)
def sample_tools(name: str) -> list[dict]:
    """The OpenAI tool definitions a bundled sample offers."""
    return list(ctxlab.export(ctxlab.load(SAMPLES_DIR / name), "openai").data.get("tools", []))


def _option(value: str) -> str:
    """An agent picker or preset option as shown: the two placeholders translated, names as they are."""
    return _(NEW_LABEL) if value == NEW else _(CHOOSE_LABEL) if value == CHOOSE else value


def _tool_sources() -> list[str]:
    return [NO_TOOLS, *(n for n in sample_names() if sample_tools(n))]


def _load_profile(p: Profile) -> None:
    """Put a profile's values into the form's widgets."""
    ss = st.session_state
    ss.agents_name, ss.agents_model, ss.agents_system = p.name, p.model, p.system_prompt
    ss.agents_max_tokens = int(p.max_tokens or ctxlab.resolve_model(p.model).context_window)
    ss.agents_reserve = float(p.overflow.get("reserve", 0.15))
    steps = p.overflow.get("pipeline") or [{"strategy": p.overflow.get("strategy", "none"),
                                            "params": p.overflow.get("params", {})}]
    name = steps[0]["strategy"] if steps[0]["strategy"] in STRATEGIES else "none"
    ss.agents_strategy = name
    for spec in STRATEGIES[name].schema():
        if spec["name"] in (steps[0].get("params") or {}):
            ss[f"agents_{name}_{spec['name']}"] = widget_value(spec, steps[0]["params"][spec["name"]])
    names = {t.get("function", {}).get("name") for t in p.tools}
    ss.agents_tools = next((n for n in _tool_sources()[1:]
                            if {t["function"]["name"] for t in sample_tools(n)} == names), NO_TOOLS)


def _on_pick() -> None:
    pick = st.session_state.agents_pick
    if pick == NEW:
        for key in ("agents_name", "agents_system"):
            st.session_state[key] = ""
        return
    try:
        _load_profile(open_store(default_url()).profile(pick))
    except CtxlabError as e:
        st.session_state.agents_error = str(e)


def _on_preset() -> None:
    model = PRESETS.get(st.session_state.agents_preset)
    if model:
        st.session_state.agents_model = model
        st.session_state.agents_max_tokens = int(ctxlab.resolve_model(model).context_window)


def _agent_budget() -> Budget:
    """The budget the agent's strategy will run against: its model, limit, reserve and tools."""
    ss = st.session_state
    tools = [] if ss.agents_tools == NO_TOOLS else sample_tools(ss.agents_tools)
    model = ctxlab.resolve_model(ss.agents_model).name
    tools_tokens = TokenCounter(model).tools(ctxlab.parse_tools(tools, "tools")) if tools else 0
    return Budget.for_model(model, max_tokens=int(ss.agents_max_tokens), reserve=float(ss.agents_reserve),
                            tools_tokens=tools_tokens)


# ---------------------------------------------------------------- page

st.set_page_config(layout="wide")
input_panel()  # the shared sidebar, as on every page (the Strategy Lab's input; an agent has its own model)
st.sidebar.caption(_("The sidebar feeds the Strategy Lab. An agent's own model and limit are set on the Agents page."))
st.title(_("Agents"))
st.write(_("An agent is a model, a system prompt, tools and a **token overflow** configuration: the context strategy "
           "that runs at every user message of its sessions. Chat with an agent on the Chat page."))
try:
    store = open_store(default_url())
except CtxlabError as e:
    st.error(md_escape(str(e)))
    st.stop()
st.caption(_("Session store: {url} (schema {schema}; set CTXLAB_SESSIONS_URL for a team's PostgreSQL)").format(
    url=md_escape(redact(store.url)), schema=store.schema_version))

profiles = {p.name: p for p in store.profiles()}
st.session_state.setdefault("agents_pick", NEW)
if (just_saved := st.session_state.pop("agents_pick_next", None)) is not None:
    st.session_state.agents_pick = just_saved  # show the agent just saved (set before its selectbox is drawn)
if st.session_state.agents_pick not in (NEW, *profiles):
    st.session_state.agents_pick = NEW
st.selectbox(_("Agent"), [NEW, *profiles], key="agents_pick", on_change=_on_pick, format_func=_option,
             help=_("Pick an agent to edit it, or create a new one"))
if err := st.session_state.pop("agents_error", None):
    st.error(md_escape(err))

for key, default in (("agents_name", ""), ("agents_model", "gpt-4o"), ("agents_system", ""),
                     ("agents_max_tokens", NEW_AGENT_LIMIT), ("agents_reserve", 0.15), ("agents_tools", NO_TOOLS)):
    st.session_state.setdefault(key, default)

left, right = st.columns([1, 1], gap="large")
with left:
    st.subheader(_("Agent"))
    st.text_input(_("Name"), key="agents_name", max_chars=200)
    st.text_area(_("System prompt"), key="agents_system", height=160)
    st.selectbox(_("Tools offered"), _tool_sources(), key="agents_tools",
                 format_func=lambda n: _("no tools") if n == NO_TOOLS else _("the tools of {sample}").format(sample=n),
                 help=_("The tool definitions sent with every request (they count in the budget)"))
with right:
    st.subheader(_("Token overflow"))
    st.selectbox(_("Model preset"), [CHOOSE, *PRESETS], key="agents_preset", on_change=_on_preset,
                 format_func=_option,
                 help=_("Fills the model and its context limit: the classic small windows, and current models"))
    st.selectbox(_("Agent model"), list(ctxlab.MODELS), key="agents_model",
                 help=_("Picks the tokenizer and the framing the context is counted with"))
    st.number_input(_("Agent context limit (tokens)"), min_value=256, max_value=2_000_000, step=1000,
                    key="agents_max_tokens",
                    help=_("A new agent starts at {n:,} tokens, so its strategy acts within the sample scripts; a "
                           "model preset fills the model's whole window").format(n=NEW_AGENT_LIMIT))
    st.slider(_("Agent response reserve"), 0.0, 0.5, step=0.05, key="agents_reserve",
              help=_("Share of the limit kept free for the model's reply"))
    with st.expander(_("What each strategy does")):
        st.dataframe(pd.DataFrame([{"strategy": _(cls.title) if cls.title else n,
                                    "what it does": _(cls.summary) if cls.summary else ""}
                                   for n, cls in STRATEGIES.items()]), hide_index=True, key="agents_strategy_table",
                     column_config={"strategy": st.column_config.TextColumn(_("strategy")),
                                    "what it does": st.column_config.TextColumn(_("what it does"))})
    picked = profiles.get(st.session_state.agents_pick)
    if picked is not None and picked.overflow.get("pipeline"):
        st.info(md_escape(_("This agent runs the pipeline {pipeline}; saving here replaces it with one "
                            "strategy.").format(pipeline=picked.strategy)))
    # controls start from defaults scaled to this agent's budget (as in the Lab): the documented peer
    # defaults (turn_safe's 100 messages, clear_tool_results' 100,000-token trigger) never act in 8K
    strategy = strategy_picker("agents", st, default="summarize", budget=_agent_budget())

st.info(_("A change affects **new sessions only**: a session keeps the configuration it started with. "
          "Use *Update existing sessions* to give this agent's sessions the saved configuration too."))
b1, b2 = st.columns(2)
if b1.button(_("Save agent"), key="agents_save", type="primary", disabled=strategy is None):
    ss = st.session_state
    tools = [] if ss.agents_tools == NO_TOOLS else sample_tools(ss.agents_tools)
    try:
        saved = store.save_profile(ss.agents_name, model=ss.agents_model, max_tokens=int(ss.agents_max_tokens),
                                   reserve=float(ss.agents_reserve), system_prompt=ss.agents_system,
                                   strategy=strategy.name, params=strategy.params(), tools=tools)
    except CtxlabError as e:
        st.error(md_escape(str(e)))
    else:
        ss.agents_saved = saved.name
        ss.agents_pick_next = saved.name
        st.rerun()
if saved_name := st.session_state.pop("agents_saved", None):
    st.success(md_escape(_("Saved {name}. New sessions use this configuration.").format(name=saved_name)))

current = st.session_state.agents_pick
if current != NEW and b2.button(_("Update existing sessions"), key="agents_update_existing",
                                help=_("Give every session of this agent the saved token overflow configuration")):
    try:
        n = store.update_existing_sessions(current)
    except CtxlabError as e:
        st.error(md_escape(str(e)))
    else:
        st.success(md_escape(_("{n} session(s) of {agent} now use {strategy}; their history and running summary "
                               "are kept.").format(n=n, agent=current, strategy=profiles[current].strategy)))

if current != NEW:
    st.subheader(_("Sessions of {agent}").format(agent=md_escape(current)))
    totals = store.counters(current)
    m = st.columns(5)
    for col, (label, key) in zip(m, ((N_("Sessions"), "sessions"), (N_("Strategy runs"), "times_applied"),
                                     (N_("Times it acted"), "times_triggered"), (N_("Tokens saved"), "tokens_saved"),
                                     (N_("Messages removed"), "messages_removed"))):
        col.metric(_(label), f"{totals[key]:,}")
    rows = [i.to_dict() for i in store.sessions(current)]
    if rows:
        st.dataframe(pd.DataFrame(rows)[["id", "title", "messages", "strategy", "created_at", "updated_at"]],
                     hide_index=True, key="agents_sessions_table",
                     column_config={c: st.column_config.Column(_(label)) for c, label in SESSION_COLUMNS.items()})
    else:
        st.caption(_("No session yet: start one on the Chat page."))
