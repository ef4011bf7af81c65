"""Where it runs: the question LangGraph users ask (a trim node right after START, or before every
model call), answered on a trace: the same strategy replayed call by call both ways, with calls
over the limit, tokens, cost and needed facts served side by side."""
from __future__ import annotations

import dataclasses
from typing import Any

import streamlit as st

import ctxlab
from ctxlab.conversation import starts_turn
from ctxlab.errors import CtxlabError
from ctxlab.fidelity import needed_facts
from ctxlab.measure import ReplayMeasures, measure
from ctxlab.i18n import N_, _
from ctxlab.figures import prompt_per_call
from ctxlab.strategies import STRATEGIES, Budget, get_strategy
from ctxlab.strategies.step import FULL_HISTORY, works_on
from ctxlab.strategies.base import APPLY_AT
from ctxlab.tokens import TokenCounter
from playground.handoff import go_to_lab, open_in_lab
from playground.input_panel import input_panel
from playground.language import choose_language
from playground.markdown import md_escape
from playground.prices import current_price
from playground.state import SAMPLES_DIR, text_hash

AGENT_SAMPLE = "agent_run_support.json"
CODING_SAMPLE = SAMPLES_DIR / "coding" / "coding_agent_session.jsonl"
CODING_DEFAULTS = ["observation_masking", "summarize", "tool_rounds"]
CODING_LIMIT = 4_000
WHERE = {"every_call": N_("before every model call"), "turn_start": N_("after START (once per user message)")}
DEFAULT_LIMIT = 8_000
STRATEGY_CHOICES = ("sliding_window", "clear_tool_results", "summarize", "tool_rounds", "turn_safe", "middle_out")


choose_language()  # before the cached functions below: their spinners speak the page's language


@st.cache_resource(show_spinner=_("Replaying call by call, both ways…"), max_entries=16)
def _both(text_key: str, name: str, limit: int, price_key: str, _conv: ctxlab.Conversation,
          _price) -> dict[str, ReplayMeasures]:
    """The strategy (budget-scaled defaults) replayed with each ``apply_at`` on one conversation.
    Not costed against keeping everything (``baseline=False``): the page compares the two places
    with each other, and replaying keep-everything took 1.5 s of 10,000 messages for a figure it
    does not show."""
    model = _conv.model or "gpt-4o"
    budget = Budget(limit, 0.15, TokenCounter(model).tools(_conv.tools))
    base = get_strategy(name, **STRATEGIES[name].scaled_defaults(budget))
    facts = needed_facts(_conv)
    return {where: measure(_conv, dataclasses.replace(base, apply_at=where), budget, model=model,
                           price=_price, facts=facts, baseline=False) for where in APPLY_AT}


@st.cache_resource(show_spinner=_("Replaying the coding session call by call…"), max_entries=16)
def _condensers(names: tuple[str, ...], limit: int, price_key: str, _conv: ctxlab.Conversation,
                _price) -> tuple[int, dict[str, ReplayMeasures]]:
    """Each strategy (budget-scaled defaults, before every call) on the coding session, and how
    many edits need the text they replace."""
    model = "gpt-4o"
    budget = Budget(limit, 0.15, TokenCounter(model).tools(_conv.tools))
    facts = needed_facts(_conv)
    return sum(1 for n in facts.needs if n.lines), {
        n: measure(_conv, get_strategy(n, **STRATEGIES[n].scaled_defaults(budget)), budget, model=model,
                   price=_price, facts=facts) for n in names}


def _open_coding_in_lab() -> None:
    open_in_lab(CODING_SAMPLE.read_text(encoding="utf-8"), _("the bundled coding-agent session"))
    st.session_state.loop_goto_lab = True


def _coding_section(price) -> None:
    """Observation masking, summarization and tool-round pruning (or others) on a coding run, per call."""
    st.header(_("Coding agents: which condenser, call by call"))
    st.write(_("A coding agent's run is one task and dozens of calls that read files, edit them and run commands. "
               "An edit needs the text it replaces, so it is served only while the read that showed that text is "
               "still in the prompt. Below, the bundled Claude Code session (written for ctxlab: one task, 35 tool "
               "calls) under each strategy, run before every call with defaults scaled to the limit."))
    text = CODING_SAMPLE.read_text(encoding="utf-8")
    conv = ctxlab.loads(text)
    c1, c2 = st.columns([3, 1])
    names = c1.multiselect(_("Strategies"), [n for n in STRATEGIES if n not in ("none", "langchain_trim")],
                           default=CODING_DEFAULTS, key="loop_coding_strategies")
    limit = int(c2.number_input(_("Context limit (tokens)"), min_value=1_000, max_value=2_000_000, value=CODING_LIMIT,
                                step=500, key="loop_coding_limit"))
    st.button(_("Open this session in the Strategy Lab"), key="loop_coding_open", on_click=_open_coding_in_lab)
    if not names:
        st.info(_("Pick one or more strategies to compare."))
        return
    try:
        edits, got = _condensers(tuple(names), limit, repr(price), conv, price)
    except CtxlabError as e:
        st.error(md_escape(str(e)))
        return
    rows = [{"strategy": n, "calls over the limit": _over(m.replay.calls_over_limit, len(m.replay.calls)),
             "needed facts served": m.needed_recall,
             "edits whose read was gone": sum(x.edit for x in m.fidelity.misses),
             "cost": m.cost.cost_usd, "input tokens, all calls": m.cost.input_tokens,
             "largest prompt": m.replay.worst.tokens_after if m.replay.worst else 0} for n, m in got.items()]
    st.dataframe(rows, key="loop_coding_table", hide_index=True, width="stretch",
                 column_config={"strategy": st.column_config.TextColumn(_("strategy")),
                                "calls over the limit": st.column_config.TextColumn(_("calls over the limit")),
                                "needed facts served": st.column_config.NumberColumn(_("needed facts served"),
                                                                                     format="percent"),
                                "edits whose read was gone": st.column_config.NumberColumn(
                                    _("edits whose read was gone")),
                                "cost": _cost_column([r["cost"] for r in rows]),
                                "input tokens, all calls": st.column_config.NumberColumn(
                                    _("input tokens, all calls"), format="%,d"),
                                "largest prompt": st.column_config.NumberColumn(_("largest prompt"), format="%,d")})
    budget = next(iter(got.values())).replay.budget
    st.plotly_chart(prompt_per_call({n: m.replay for n, m in got.items()}, budget.prompt_limit), key="loop_coding_chart")
    best = max(got, key=lambda n: (got[n].replay.fits, got[n].needed_recall or 0, -(got[n].cost.cost_usd or 0)))
    m = got[best]
    st.caption(md_escape(_("Of these, {best} serves the most needed facts ({recall}) among those whose calls fit "
                           "best ({over} over the limit), for {cost}; the session has {edits} edits whose old text "
                           "must still be in the prompt.").format(
        best=best, recall=f"{m.needed_recall:.0%}", over=m.replay.calls_over_limit, cost=f"${m.cost.cost_usd:.4f}",
        edits=edits) if m.needed_recall is not None and m.cost.cost_usd is not None else
        _("{best}: see the table.").format(best=best)))


def _over(over: int, calls: int) -> str:
    """``3 of 41``: calls over the limit of all calls."""
    return _("{over} of {calls}").format(over=f"{over:,}", calls=f"{calls:,}")


def _cost_column(costs: list) -> Any:
    """The cost column: cents with thousands separators once a cost reaches $10 (a 10,000-message trace
    costs thousands of dollars after START, and "$4491.2447" was clipped), else four decimals (a
    bundled sample costs fractions of a cent); wide enough for the largest."""
    large = max((c for c in costs if c is not None), default=0) >= 10
    return st.column_config.NumberColumn(_("cost"), format="dollar" if large else "$%.4f", width="medium")


def _conclusion(every: ReplayMeasures, start: ReplayMeasures, turns: int, whole_history: bool = False) -> str:
    """What the two replays say, in words taken from their figures. ``whole_history``: the strategy
    works on the whole history at each application (it keeps nothing of what it trimmed), so after
    START only a turn's first call is trimmed and the calls after it send the whole history."""
    e, s = every.replay, start.replay
    calls = len(e.calls)
    head = (_("This trace has {turns} user message and {calls} model calls.") if turns == 1 else
            _("This trace has {turns} user messages and {calls} model calls.")).format(turns=turns, calls=calls)
    ran = (_("After START the strategy ran {start} time; before every call, {every}.") if s.applications == 1 else
           _("After START the strategy ran {start} times; before every call, {every}.")).format(
        start=s.applications, every=e.applications)
    if s.calls_over_limit and not e.calls_over_limit and whole_history:
        body = _("After START, {over} of {calls} calls went over the limit (the largest prompt {largest} tokens): "
                 "this strategy trims the whole history each time it runs and keeps nothing of it, so after START "
                 "only the first call of a turn is trimmed and every later call of the turn sends the whole history. "
                 "Before every call, none did.").format(over=s.calls_over_limit, calls=calls,
                                                        largest=f"{s.worst.tokens_after:,}")
    elif s.calls_over_limit and not e.calls_over_limit:
        body = _("After START, {over} of {calls} calls went over the limit (the largest prompt {largest} tokens): a "
                 "trim node after START never cuts inside a turn, and this turn is long. Before every call, none "
                 "did.").format(over=s.calls_over_limit, calls=calls, largest=f"{s.worst.tokens_after:,}")
    elif s.calls_over_limit and e.calls_over_limit:
        body = _("Both overflow: {start} calls after START, {every} before every call; this strategy cannot fit this "
                 "limit even inside a turn: raise the limit or pick another strategy.").format(
            start=s.calls_over_limit, every=e.calls_over_limit)
    elif not s.calls_over_limit and not e.calls_over_limit:
        body = _("Both fit every call: at this limit, where the node runs changes cost and facts, not the fit.")
    else:
        body = _("Before every call {every} calls overflow and after START none do: this strategy rewrites the "
                 "prompt in ways that grow it, so measure before you move it.").format(every=e.calls_over_limit)
    parts = [head, ran, body]
    if every.needed_recall is not None and start.needed_recall is not None:
        parts.append(_("Needed facts served: {every} before every call, {start} after START (what a strategy does "
                       "not remove, it cannot lose).").format(every=f"{every.needed_recall:.0%}",
                                                             start=f"{start.needed_recall:.0%}"))
    return " ".join(parts)


input_panel()
st.title(_("Where it runs: after START, or before every model call"))
st.write(_("An agent calls the model once per step: user message, call, tool results, call, …, answer. A LangGraph "
           "trim node right after START runs once per user message; LangChain's agent middleware, Anthropic context "
           "editing and OpenHands condensers run before every model call. On a chat agent the two look alike; on an "
           "agent that works alone for dozens of calls they do not. Below, the same strategy replayed both ways."))

TRACES = {"agent": N_("the bundled agent run (one request, 41 calls)"), "sidebar": N_("the conversation in the sidebar")}
source = st.radio(_("Trace"), ["agent", "sidebar"], key="loop_source", horizontal=True,
                  format_func=lambda k: _(TRACES[k]))
if source == "agent":
    text = (SAMPLES_DIR / AGENT_SAMPLE).read_text(encoding="utf-8")
    conv = ctxlab.loads(text)
else:
    text = st.session_state.get("conversation_text") or ""
    if not text:
        st.info(_("No conversation in the sidebar yet: pick a sample, paste or upload one there."))
        st.stop()
    try:
        conv = ctxlab.loads(text)
    except CtxlabError as e:
        st.error(md_escape(str(e)))
        st.stop()
c1, c2 = st.columns(2)
name = c1.selectbox(_("Strategy"), STRATEGY_CHOICES, key="loop_strategy",
                    format_func=lambda n: _(STRATEGIES[n].title) if STRATEGIES[n].title else n,
                    help=_("With its defaults scaled to the limit, as the Strategy Lab starts it"))
limit = int(c2.number_input(_("Context limit (tokens)"), min_value=1_000, max_value=2_000_000, value=DEFAULT_LIMIT,
                            step=1_000, key="loop_limit"))
try:
    price = current_price()
    both = _both(text_hash(text), name, limit, repr(price), conv, price)
except CtxlabError as e:
    st.error(md_escape(str(e)))
    st.stop()
every, start = both["every_call"], both["turn_start"]
turns = sum(starts_turn(m) for m in conv.messages)  # a harness's format-error prompt is not a user turn
(st.warning if start.replay.calls_over_limit or every.replay.calls_over_limit else st.success)(
    md_escape(_conclusion(every, start, turns, works_on(STRATEGIES[name]()) == FULL_HISTORY)))

rows = []
for where, m in both.items():
    r = m.replay
    rows.append({"where it runs": _(WHERE[where]), "calls over the limit": _over(r.calls_over_limit, len(r.calls)),
                 "needed facts served": m.needed_recall, "cost": m.cost.cost_usd,
                 "largest prompt": r.worst.tokens_after if r.worst else 0, "times it ran": r.applications,
                 "input tokens, all calls": m.cost.input_tokens, "cached": m.cost.cached_share, "apply_at": where})
st.dataframe(rows, key="loop_table", hide_index=True, width="stretch",
             column_config={"where it runs": st.column_config.TextColumn(_("where it runs")),
                            "calls over the limit": st.column_config.TextColumn(_("calls over the limit")),
                            "largest prompt": st.column_config.NumberColumn(_("largest prompt"), format="%,d"),
                            "times it ran": st.column_config.NumberColumn(_("times it ran")),
                            "input tokens, all calls": st.column_config.NumberColumn(_("input tokens, all calls"),
                                                                                     format="%,d"),
                            "cached": st.column_config.NumberColumn(_("cached"), format="percent"),
                            "cost": _cost_column([r["cost"] for r in rows]),
                            "needed facts served": st.column_config.NumberColumn(_("needed facts served"),
                                                                                 format="percent")})
budget = every.replay.budget
st.plotly_chart(prompt_per_call({_(WHERE[w]): m.replay for w, m in both.items()}, budget.prompt_limit),
                key="loop_chart")
st.caption(_("Prompt tokens of every model call; the dashed line is the prompt limit ({limit} less the {reserve} "
             "reserve for the reply). Every figure comes from `ctxlab replay --apply-at` on the same trace.").format(
    limit=f"{limit:,}", reserve=f"{budget.reserve:.0%}"))
with st.expander(_("What to do in LangGraph")):
    st.markdown(
        _("- **After START** (`apply_at=turn_start`): `builder.add_edge(START, \"trim\")`, and the tools node goes "
          "back to the model. Safe for tool pairing, cheap, and it never cuts inside a turn, so a long turn "
          "overflows.\n"
          "- **Before every model call** (`apply_at=every_call`): the tools node goes back through the trim node "
          "(or use a `pre_model_hook` / agent middleware). The strategy acts inside a turn, so it must keep every "
          "call with its results and the task: ctxlab's strategies do.\n"
          "- The Strategy Lab's export writes the LangGraph wiring for the `apply_at` you tuned."))

_coding_section(price)
go_to_lab("loop_goto_lab", _("The coding session is in the sidebar: open the Strategy Lab."))
