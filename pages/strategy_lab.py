"""Strategy Lab: apply a context strategy to the conversation and see, message by message, what
is kept, summarized, cleared or dropped, what it costs, what is lost, whether a provider would
accept the result, how it plays out call by call, and how to take it to production."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd
import streamlit as st

from ctxlab import Conversation, CtxlabError, Message
from ctxlab.cache_breaks import CAUSE_WORDS, CacheBreak
from ctxlab.compare import cost_sentence, outcome_notes
from ctxlab.configs.lab_config import make_config
from ctxlab.figures_tune import cost_per_turn_figure
from ctxlab.strategies import STRATEGIES, Plan, View
from ctxlab.strategies.plan import OVER_BUDGET
from ctxlab.i18n import N_, _, language, local, local_error, use
from playground import lab_cache, lab_table
from playground.budget import current_budget, tool_budget
from playground.conversation import current_view, require_conversation
from playground.input_panel import input_panel
from playground.language import LANG_KEY
from playground.llm_settings import current_llm
from playground.markdown import md_escape
from playground.prices import current_price, price_panel
from playground.state import text_hash
from playground.subagents import return_cap_input
from playground.widgets import (APPLY_AT_WORDS, TABLE_ACTION_WORDS, action_column, action_words, config_downloads,
                                count_column, message_number, native_downloads, number_column, role_name,
                                snippet_download, strategy_picker, strategy_title, summary_note, text_width,
                                tools_picker, translated_columns)

if TYPE_CHECKING:  # annotations only: the page gets these objects from playground.lab_cache
    from ctxlab.measure import ReplayMeasures
    from ctxlab.pricing import Price
    from ctxlab.replay import Replay
    from ctxlab.usage import UsageComparison

RULES, EXPORTS = lab_cache.RULES, lab_cache.EXPORTS
LABELS = TABLE_ACTION_WORDS  # English; shown through _()
ROLES = ("system", "user", "assistant", "tool")
PREVIEW = 160
TABLE_HEADERS = (N_("role"), N_("tokens"), N_("action"), N_("reason"), N_("content"), N_("runs"),
                 N_("calls over the limit"), N_("needed facts served"), N_("cost"), N_("input tokens, all calls"),
                 N_("largest prompt"), N_("times it ran"), N_("fact"), N_("came from message"),
                 N_("needed by message"), N_("call"), N_("turn"), N_("state"))
# The headers of the page's tables, marked for the catalogs (the data keeps its English keys). (a comment: a page's bare string is shown)
MAX_FINDINGS = 5
# When the replay measures (needed facts served, cost vs keeping everything) are computed. Measured
# on this machine: 10-35 ms on the bundled samples; 2.4-5 s on a generated 1,000-message conversation
# (0.5 s per strategy, the rest finding the needed facts and replaying keep-everything, both once per
# conversation and budget); 13 s at 2,000 messages; ~85 s at 10,000 (2M tokens). So: on every change
# up to LIVE_MEASURE_MAX messages, when the Replay tab is open up to REPLAY_MEASURE_MAX, and on a
# button press beyond (results cached while nothing changes).
LIVE_MEASURE_MAX = 300
REPLAY_MEASURE_MAX = 1_000
PIN_CHOICES_MAX = 1_000
# Up to this many messages the pins box offers every message; past it, it lists the pinned ones and a
# number box pins more (a box of 10,000 choices cost 25 ms on every rerun, and its choices were sent
# to the browser each time).


def _preview(m: Message) -> str:
    text = m.text or ", ".join(f"{c.name}({c.arguments})" for c in m.tool_calls)
    if m.extra.get("ctxlab_compaction"):  # marked by a coding-agent trace reader; every strategy keeps it
        text = _("[compaction summary, kept] {text}").format(text=text)
    elif m.extra.get("ctxlab_task"):
        text = _("[the run's task, kept] {text}").format(text=text)
    return text if len(text) <= PREVIEW else text[:PREVIEW] + "…"


def _show_message(m: Message) -> None:
    """A message's full content, as text and JSON only (never rendered as Markdown or HTML)."""
    if m.text:
        st.code(m.text, language=None, wrap_lines=True)
    others = [{"type": p.type, "text": p.text, **p.data} for p in m.parts if p.type != "text"]
    if others:
        st.json(others, expanded=False)
    if m.tool_calls:
        st.json([{"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls])
    if m.tool_call_id:
        st.text(_("answers tool call {id}").format(id=m.tool_call_id))


def _where_it_runs(keys: tuple, price: Price | None) -> None:
    """The same trace under both places a strategy can run, side by side (the LangGraph question:
    a trim node after START, or before every model call)."""
    rows = []
    for where, m in lab_cache.where_it_runs(keys[0], keys[2], repr(price), conv, view, strategy, budget, model, price,
                                            tools, llm).items():
        r = m.replay
        rows.append({"runs": _(APPLY_AT_WORDS[where]),
                     "calls over the limit": _("{k:,} of {n:,}").format(k=r.calls_over_limit, n=len(r.calls)),
                     "needed facts served": m.needed_recall, "cost": m.cost.cost_usd,
                     "input tokens, all calls": m.cost.input_tokens,
                     "largest prompt": r.worst.tokens_after if r.worst else 0, "times it ran": r.applications})
    st.markdown(_("**Where the strategy runs**: the same trace with the strategy before every model call and only "
                  "when a user message arrives."))
    st.dataframe(rows, key="lab_where_table", hide_index=True, width="stretch",
                 column_config=translated_columns(list(rows[0]), {
                     "largest prompt": count_column("largest prompt"),
                     "input tokens, all calls": count_column("input tokens, all calls"),
                     "needed facts served": st.column_config.NumberColumn(format="percent"),
                     "cost": st.column_config.NumberColumn(format="$%.4f")}))


def _pin_number() -> None:
    """Pin the message whose number was typed, and empty the box for the next one."""
    i = st.session_state.get("lab_pin_number")
    if i is not None:
        st.session_state.pins = sorted(set(st.session_state.pins) | {int(i)})
        st.session_state.lab_pin_number = None


def _toggle_pin(i: int) -> None:
    pins = list(st.session_state.pins)
    st.session_state.pins = sorted(set(pins) ^ {i})
    st.session_state.lab_replan = True  # the viewer is a fragment: its rerun asks for the whole page's


def _cost_section(m: ReplayMeasures) -> None:
    """Totals over the conversation's life beside keeping everything, and the tokens per turn by cache."""
    c, none = m.cost, m.cost_none
    st.markdown(_("**Cost over the conversation's life**: {sentence}").format(sentence=md_escape(cost_sentence(m))))
    k1, k2, k3, k4 = st.columns(4)
    k1.metric(_("Input tokens, all calls"), f"{c.input_tokens:,}", help=_("none: {n:,}").format(n=none.input_tokens),
              delta=_("{change:+.0%} vs none").format(change=c.input_tokens / none.input_tokens - 1)
              if none.input_tokens else None, delta_color="inverse")
    k2.metric(_("Cached share"), f"{c.cached_share:.0%}", help=_("none: {share:.0%}").format(share=none.cached_share))
    if c.cost_usd is None:
        k3.metric(_("Cost"), _("no price"), help=_("This model has no price in the table: set one in Prices above."))
        k4.metric(_("Cost of none"), _("no price"))
    else:
        k3.metric(_("Cost"), f"${c.cost_usd:.4f}", delta_color="inverse",
                  delta=_("{change:+.0%} vs none").format(change=c.cost_usd / none.cost_usd - 1)
                  if none.cost_usd else None)
        k4.metric(_("Cost of none"), f"${none.cost_usd:.4f}")
    fig = cost_per_turn_figure(c, none)
    fig.update_xaxes(dtick=max(1, -(-len(c.per_turn()) // 20)))  # whole turns, at most ~20 ticks
    st.plotly_chart(fig, key="lab_cost_chart")


def _break_sentence(b: CacheBreak) -> str:
    """One call's cache break in a sentence: where the prompt stopped matching, why, what it cost."""
    where = (_("the tool definitions") if b.position < 0 else
             _("message #{i}").format(i=b.origin) if b.origin is not None else _("the summary"))
    cost = "" if b.cost_usd is None else _(", ${cost:.4f}").format(cost=b.cost_usd)
    return _("This call's prompt stops matching the previous call's at {where} ({cause} at this call): {n:,} "
             "tokens no longer read from the prompt cache{cost}.").format(where=where, cause=_(CAUSE_WORDS[b.cause]),
                                                                         n=b.tokens_lost, cost=cost)


def _breaks_section(breaks: list[CacheBreak]) -> None:
    """How often the strategy broke the prompt cache, why, and what it cost (a model, stated)."""
    if not breaks:
        st.caption(_("Prompt cache: every call's prompt extends the previous one, so nothing the cache held is "
                     "lost."))
        return
    per: dict[str, int] = {}
    for b in breaks:
        per[b.cause] = per.get(b.cause, 0) + 1
    causes = _(", ").join(_("{cause} {n:,}").format(cause=_(CAUSE_WORDS[c]), n=k) for c, k in per.items())
    costs = [b.cost_usd for b in breaks]
    cost = "" if any(c is None for c in costs) else _(" (${cost:.4f} at the input price less the cached price; a "
                                                     "model)").format(cost=sum(costs))
    st.caption(_("Prompt cache: the strategy changed an earlier part of the prompt at {k:,} calls ({causes}), and "
                 "{n:,} tokens were no longer read from the cache{cost}. The slider's call says where, when it is "
                 "one of them.").format(k=len(breaks), causes=causes, n=sum(b.tokens_lost for b in breaks), cost=cost))


def _billed_section(u: UsageComparison | None) -> None:
    """A production trace's billed figures per call beside ctxlab's count and cache model (None: the
    conversation logs no usage)."""
    if u is None or not u.calls:
        return
    st.markdown(_("**Billed vs counted**: each call's prompt tokens and cached tokens as the provider reported "
                  "them, beside ctxlab's count of the prompt the call sent and the prompt-cache model's cached "
                  "tokens."))
    rows = [{_("call"): c.call, _("message"): c.index, _("billed prompt"): c.reported.prompt_tokens,
             _("counted"): c.counted, _("difference"): c.prompt_difference,
             _("estimated prompt"): c.estimated,
             _("error vs bill"): None if c.estimate_error is None else f"{c.estimate_error:+.1%}",
             _("billed cached"): c.reported.cached_tokens, _("modelled cached"): c.modelled_cached,
             _("cached difference"): c.cached_difference} for c in u.calls]
    st.dataframe(pd.DataFrame(rows), key="lab_billed_table", hide_index=True, width="stretch")
    ratio = u.prompt_ratio
    st.caption(_("{calls} of {total} calls reported usage: billed {billed} prompt tokens, counted {counted} "
                 "(billed / counted {ratio}); tokenizer {exact}.").format(
        calls=f"{len(u.calls):,}", total=f"{u.total_calls:,}", billed=f"{u.reported_prompt_tokens:,}",
        counted=f"{u.counted_prompt_tokens:,}", ratio="-" if ratio is None else f"{ratio:.3f}",
        exact=_("exact") if u.exact else _("estimated")))


# ---------------------------------------------------------------- page

def _tools_sentence(rp: Replay) -> str:
    """The tools sent per call, in one sentence (empty when every call sends them all)."""
    per = [c.tools for c in rp.calls if c.tools is not None]
    if not per:
        return ""
    return _("Tool definitions: {mean:,.0f} tokens a call on average (all of them: {all:,}); the list changed at "
             "{changed:,} calls; {missing:,} calls used a tool that was not sent.").format(
        mean=sum(t.tokens for t in per) / len(per), all=budget.tools_tokens, changed=sum(t.changed for t in per),
        missing=sum(bool(t.missing) for t in per))


SUBAGENT_ROWS = ((N_("prompt tokens of the parent, all calls"), "parent_prompt_tokens"),
                 (N_("prompt tokens in all (parent and sub-agents)"), "total_prompt_tokens"),
                 (N_("largest parent prompt"), "parent_largest_prompt"), (N_("parent calls"), "parent_calls"))
SUBAGENT_HEADERS = (N_("figure"), N_("isolated"), N_("inline"))  # the tables' headers, marked for the catalogs
PER_SUBAGENT_HEADERS = (N_("sub-agent"), N_("calls"), N_("prompt tokens"), N_("tokens back"))


def _subagents_section(text: str, model: str) -> None:
    """A Claude Code main session's sub-agents run isolated (as logged) against the same work inline,
    with a cap on what each returns (``ctxlab.subagents.isolation``)."""
    st.markdown(_("**Sub-agents, isolated or inline**"))
    cap = return_cap_input("lab_subagent_cap")
    try:
        with st.spinner(_("Replaying the sub-agents…")):
            r = lab_cache.subagents(text_hash(text), model, cap, text)
    except CtxlabError as e:
        st.info(md_escape(local_error(e)))
        return
    st.caption(_("Sub-agents replayed: {n:,}. Isolated, the parent saw only what each returned; inline, each "
                 "sub-agent's calls and results sit in the parent's context before the call that started it (a "
                 "model: it assumes the parent would have made the same calls and got the same results).").format(
        n=len(r["subagents"])))
    rows = [{"figure": _(label), "isolated": r["isolated"][key], "inline": r["inline"][key]}
            for label, key in SUBAGENT_ROWS]
    st.dataframe(pd.DataFrame(rows), key="lab_subagents_table", hide_index=True, width="stretch",
                 column_config=translated_columns(list(SUBAGENT_HEADERS),
                                                  {k: count_column(k) for k in ("isolated", "inline")}))
    per = [{"sub-agent": a["id"], "calls": a["calls"], "prompt tokens": a["prompt_tokens"],
            "tokens back": a["tokens_back"]} for a in r["subagents"]]
    st.dataframe(pd.DataFrame(per), key="lab_subagents_each", hide_index=True, width="stretch",
                 column_config=translated_columns(list(PER_SUBAGENT_HEADERS),
                                                  {k: count_column(k) for k in PER_SUBAGENT_HEADERS[1:]}))
    needs = r["parent_needs"]
    st.caption(_("Facts the parent used that first appeared inside a sub-agent: {n:,}; an isolated parent has "
                 "{back:,} of them in a returned result, {own:,} in its own messages, {none:,} nowhere.").format(
        n=needs["from_subagents"], back=needs["in_returned_results"], own=needs["in_parent_messages"],
        none=needs["not_in_parent"]))


NOTE_BOXES = {"success": st.success, "info": st.info, "warning": st.warning, "caption": st.caption}

st.set_page_config(layout="wide")  # additive: app.py's title and icon stay
input_panel()
st.title(_("Strategy Lab"))
conv = require_conversation()  # the parsed conversation (shared, not copied), or a prompt and a stop
text, model = st.session_state.conversation_text, st.session_state.model
headline = st.empty()
metrics_row = st.container()  # filled once the plan is known; full width, so no label is cut
n = len(conv)
try:
    budget = current_budget(conv)
except CtxlabError as e:
    st.error(md_escape(str(e)))
    st.stop()

left, main = st.columns([1, 3], gap="large")
with left:
    st.subheader(_("Strategy"))
    strategy = strategy_picker("lab", left, budget=budget)
    if [p for p in st.session_state.pins if not 0 <= p < n]:
        st.session_state.pins = [p for p in st.session_state.pins if 0 <= p < n]
    every = n <= PIN_CHOICES_MAX
    st.multiselect(_("Pinned messages"), list(range(n)) if every else sorted(st.session_state.pins), key="pins",
                   format_func=lambda i: f"#{i} {role_name(conv.messages[i].role)}",
                   help=_("Strategies that honour pins (newest tool rounds, recent window + key messages, running "
                          "summary, clear old tool results, middle out, oldest first, hybrid) never remove or clear "
                          "a pinned message."), placeholder=_("Choose options") if every else _("none pinned"))
    if not every:
        st.session_state.setdefault("lab_pin_number", None)
        st.number_input(_("Pin message #"), min_value=0, max_value=n - 1, step=1, key="lab_pin_number",
                        on_change=_pin_number, placeholder=_("number"),
                        help=_("{n:,} messages: type a message's number to pin it, or open it in the table below and "
                               "press Pin this message.").format(n=n))
    tools_mode = tools_picker("lab_tools", bool(conv.tools))
if strategy is None:
    st.stop()

pins = tuple(sorted(st.session_state.pins))
try:
    view = current_view(text, model, pins)
    llm = current_llm()  # the model summarizer=llm calls (the sidebar's settings); part of the cache key
    keys = ((text_hash(text), model, pins), lab_cache.strategy_key(strategy, llm), f"{budget!r}|tools={tools_mode}")
    tools = lab_cache.tools_at(keys[0], tools_mode, conv)
    plan, findings, table = lab_cache.outcome(*keys, view, strategy, budget, llm)
    input_findings = lab_cache.input_findings(text_hash(text), conv)
except CtxlabError as e:
    main.error(md_escape(str(e)))
    st.stop()

title = strategy_title(strategy.name) if strategy.name in STRATEGIES else plan.strategy
idle = local(plan.idle)  # why the strategy changed nothing, in its own terms
if idle and getattr(STRATEGIES.get(strategy.name), "scaling", "") and st.session_state.get("lab_defaults") == "documented":
    idle = _("{idle}. Its documented defaults are sized for large windows: pick the defaults scaled to this budget "
             "on the left, or lower its trigger or window.").format(idle=idle.rstrip("."))
HEADLINES = {  # (acted, fits): one whole sentence each
    (True, True): N_("You are looking at the {label} ({n:,} messages, {before:,} tokens) after the **{title}** "
                     "strategy: it sends {sent:,} messages, {after:,} tokens, which fits a {limit:,}-token budget; "
                     "change the strategy on the left and watch every message's fate below."),
    (True, False): N_("You are looking at the {label} ({n:,} messages, {before:,} tokens) after the **{title}** "
                      "strategy: it sends {sent:,} messages, {after:,} tokens, which does not fit a {limit:,}-token "
                      "budget; change the strategy on the left and watch every message's fate below."),
    (False, True): N_("You are looking at the {label} ({n:,} messages, {before:,} tokens) after the **{title}** "
                      "strategy: it did not act, so it sends {sent:,} messages, {after:,} tokens, which fits a "
                      "{limit:,}-token budget; change the strategy on the left and watch every message's fate below."),
    (False, False): N_("You are looking at the {label} ({n:,} messages, {before:,} tokens) after the **{title}** "
                       "strategy: it did not act, so it sends {sent:,} messages, {after:,} tokens, which does not fit "
                       "a {limit:,}-token budget; change the strategy on the left and watch every message's fate "
                       "below."),
}
headline.markdown(_(HEADLINES[(not idle, plan.fits)]).format(
    label=md_escape(st.session_state.conversation_label or _("conversation")), n=n, before=plan.tokens_before,
    title=title, sent=len(plan.messages), after=plan.tokens_after, limit=budget.prompt_limit))
_tools_note, _tools_raised = tool_budget(conv)[1:]  # which catalog's tools the budget counts
(main.warning if _tools_raised else main.caption)(md_escape(_tools_note))

def _fill_metrics(measures: ReplayMeasures | None) -> None:
    removed = plan.removed
    c1, c2, c3, c4, c5, c6 = st.columns(6)
    c1.metric(_("Tokens before"), f"{plan.tokens_before:,}")
    c2.metric(_("Tokens after"), f"{plan.tokens_after:,}")
    c3.metric(_("Saved"), f"{plan.saved / plan.tokens_before:.0%}" if plan.tokens_before else "0%",
              help=_("{n:,} tokens").format(n=plan.saved))
    c4.metric(_("Messages removed"), f"{removed:,}", help=_("dropped or folded into a summary, of {n:,}").format(n=n))
    c5.metric(_("Facts retained"), _("n/a") if plan.retention is None else f"{plan.retention:.0%}",
              help=_("Share of the conversation's facts (ids, amounts, arguments) still in the result"))
    if measures is None:
        where = (_("This conversation has {n:,} messages: open the Replay tab to run the replay and measure it.")
                 if n <= REPLAY_MEASURE_MAX else
                 _("This conversation has {n:,} messages: press Measure in the Replay tab to run the replay and "
                   "measure it.")).format(n=n)
        c6.metric(_("Needed facts served"), _("pending"), help=where)  # a short word: the column cuts longer ones
    else:
        recall, fid = measures.needed_recall, measures.fidelity
        reads = "" if not fid.read_backs else " " + _(
            "With the {n:,} modelled read-backs of offloaded results counted as served: {recall:.0%}.").format(
            n=len(fid.read_backs), recall=fid.recall_with_read_backs)
        c6.metric(_("Needed facts served"), _("n/a") if recall is None else f"{recall:.0%}",
                  help=_("On the call-by-call replay: of the facts (ids, amounts, dates, tool arguments) each "
                         "assistant message used that came from an earlier message, the share the prompt of its model "
                         "call held. {served:,} of {needed:,}.").format(served=fid.served, needed=fid.needed) + reads)




with main:
    # What is not right comes first, right under the numbers: a strategy that did nothing, a result
    # over budget, errors in the result or in the input; the green box only when none of these holds.
    for note in outcome_notes(plan, input_findings, findings, idle=idle, limit=MAX_FINDINGS):
        NOTE_BOXES[note.level](md_escape(note.text))
    for w in plan.warnings:
        if not plan.fits and w.startswith(OVER_BUDGET):
            continue  # the note above already says the result does not fit, with the same figures
        w = local(w)
        st.warning(md_escape(w[:1].upper() + w[1:]))
    if by := plan.stats.get("summary_by"):  # who wrote the summary (summarizer=llm): model, tokens, time
        st.caption(md_escape(summary_note(by)))
    for rules, name in RULES.items():
        for f in [f for f in findings[rules] if f.severity == "warning"][:MAX_FINDINGS]:
            st.caption(md_escape(_("{rules} warning, {code}: {message}").format(rules=name, code=f.code,
                                                                                 message=local(f.message))))
    ignored = [p for p in pins if plan.actions[p] != "keep"]
    if ignored:
        st.caption(_("Pinned message(s) {pins} not kept as is: {title} does not honour pins.").format(
            pins=_(", ").join(f"#{p}" for p in ignored), title=title))
    misses_slot = st.container()  # filled once the replay measures are known (below the tabs' creation)
    if plan.facts_lost:
        with st.expander(_("Facts lost ({n})").format(n=len(plan.facts_lost))):
            for fact in plan.facts_lost:
                st.text(fact)
    token_fig, timeline_fig = lab_cache.plan_figures(*keys, title, language(), view, plan)
    st.plotly_chart(token_fig, key="lab_token_bars")

tab_timeline, tab_replay, tab_export = main.tabs([_("Message timeline"), _("Replay call by call"), _("Export")],
                                                 key="lab_tab", on_change="rerun")
try:
    price = price_panel(tab_replay) if tab_replay.open else current_price()
except CtxlabError as e:
    tab_replay.error(md_escape(str(e)))
    price = None
measures: ReplayMeasures | None = None
measure_key = (keys, repr(price))
if tab_replay.open and n > REPLAY_MEASURE_MAX and st.session_state.get("lab_measured") != measure_key:
    if tab_replay.button(_("Measure needed facts and cost"), key="lab_measure",
                         help=_("{n:,} messages: replaying every model call, and keeping everything for comparison, "
                                "takes from seconds to a minute or two").format(n=n)):
        st.session_state.lab_measured = measure_key
    else:
        tab_replay.caption(_("Needed facts served and the cost over the conversation's life are measured on demand "
                             "for conversations over {n:,} messages.").format(n=REPLAY_MEASURE_MAX))
if n <= LIVE_MEASURE_MAX or (tab_replay.open and n <= REPLAY_MEASURE_MAX) \
        or st.session_state.get("lab_measured") == measure_key:
    try:
        with st.spinner(_("Measuring needed facts and cost…")):
            measures = lab_cache.measures(*keys, repr(price), conv, view, strategy, budget, model, price, tools, llm)
    except CtxlabError as e:
        main.error(md_escape(str(e)))
with metrics_row:
    _fill_metrics(measures)
if measures is not None and not measures.replay.fits:
    r = measures.replay
    over_text = (N_("On the call-by-call replay, {k:,} of {n:,} model calls send a prompt over the {limit:,}-token "
                    "limit (largest {largest:,} tokens, call {call}). The strategy runs {where}: set apply_at to "
                    "every_call to let it act inside a turn.") if strategy.apply_at == "turn_start" else
                 N_("On the call-by-call replay, {k:,} of {n:,} model calls send a prompt over the {limit:,}-token "
                    "limit (largest {largest:,} tokens, call {call}). The strategy runs {where}."))
    misses_slot.warning(_(over_text).format(k=r.calls_over_limit, n=len(r.calls), limit=budget.prompt_limit,
                                            largest=r.worst.tokens_after, call=r.worst.number,
                                            where=_(APPLY_AT_WORDS[strategy.apply_at])))
if measures is not None and measures.fidelity.misses:
    misses = measures.fidelity.misses
    from ctxlab.compare import MISS_COLUMN_HELP, MISS_COLUMNS, miss_rows, refetch_sentence  # the priced loss
    with misses_slot.expander(_("Needed facts missed ({n})").format(n=len(misses))):
        st.caption(_("A fact an assistant message used that the prompt of its model call did not hold: what it "
                     "is, whether a tool call run again would bring it back, where it first came from, which message "
                     "needed it, and at which call.") + " " + refetch_sentence(measures.summary()))
        st.dataframe(miss_rows(misses), key="lab_misses", hide_index=True, width="stretch",
                     column_config=translated_columns(MISS_COLUMNS, MISS_COLUMN_HELP))

@st.fragment
def _message_table(table: lab_table.PlanTable, plan: Plan, conv: Conversation, view: View) -> None:
    """Filters, one page of the message table and the message viewer. A fragment: in the browser a filter,
    the page box or the opened message reruns this part only, not the sidebar, the plan and the figures
    (a pin from the viewer changes the plan: the whole page then reruns)."""
    use(st.session_state.get(LANG_KEY))  # a fragment's rerun runs nothing above it: this session's language
    if st.session_state.pop("lab_replan", False):
        st.rerun()  # a pin changed here: re-plan the whole page
    f1, f2 = st.columns(2)
    acts = f1.multiselect(_("Action"), list(LABELS), key="lab_filter_actions", format_func=lambda a: _(LABELS[a]),
                          placeholder=_("all actions"))
    roles = f2.multiselect(_("Role"), [*ROLES, "summary"], key="lab_filter_roles", placeholder=_("all roles"),
                           format_func=role_name)
    picked_rows = table.select(acts, roles)
    on_page, which_rows = lab_table.page_of(len(picked_rows), "lab_table_page")
    on_page = picked_rows[on_page]  # one page of rows is built and sent, not 10,000
    shown = table.frame(on_page, action_words(), _preview)
    st.caption(_("{rows} ({n:,} in all)").format(rows=which_rows, n=len(table)))
    st.dataframe(shown, key="lab_table", hide_index=True, width="stretch",
                 column_order=["#", "role", "tokens", "action", "reason", "content"],
                 column_config={
                     "#": number_column(),
                     "role": st.column_config.TextColumn(_("role"), width=text_width(["assistant"])),
                     "tokens": st.column_config.ProgressColumn(_("tokens"), format="localized", min_value=0,
                                                               max_value=table.max_tokens),
                     "action": action_column(),
                     "reason": st.column_config.TextColumn(_("reason"), width="large"),
                     "content": st.column_config.TextColumn(_("content"), width="large")})
    # Assigned on every run: the box then shows the current label (the role and the action change with
    # the conversation and the strategy, and the browser would otherwise keep showing the old one).
    current = st.session_state.get("lab_open")
    choices = lab_table.open_options(table, on_page, current)  # the page's rows
    st.session_state.lab_open = current if current in choices else choices[0]
    picked = st.selectbox(_("Open a message"), choices, key="lab_open",
                          format_func=lambda o: _("#{i} {role}: {action}").format(
                              i=o, role=role_name(conv.messages[o].role), action=_(LABELS[plan.actions[o]]))
                          if isinstance(o, int) else _("summary {k} (inserted)").format(k=o.split()[1]))
    if isinstance(picked, int):
        m = conv.messages[picked]
        word, why = LABELS[plan.actions[picked]], plan.reasons[picked]
        st.text(_("#{i} {role}, {n:,} tokens, {why}").format(
            i=picked, role=role_name(m.role), n=view.tokens[picked],
            why=local(why) if why.startswith(word) else _("{word}: {why}").format(word=_(word), why=local(why))))
        _show_message(m)
        if plan.actions[picked] in ("clear", "truncate"):
            k = plan.origin.index(picked)
            st.text(_("What the model gets instead ({n:,} tokens):").format(n=plan.output_tokens[k]))
            _show_message(plan.messages[k])
        pinned = picked in st.session_state.pins
        st.button(_("Unpin this message") if pinned else _("Pin this message"), key="lab_pin_toggle",
                  on_click=_toggle_pin, args=(picked,),
                  help=_("A pinned message is never removed by the strategies that honour pins"))
    else:
        k = int(picked.split()[1])
        st.text(_("Summary inserted by {strategy}, {n:,} tokens").format(strategy=plan.strategy,
                                                                         n=plan.output_tokens[k]))
        _show_message(plan.messages[k])


if tab_timeline.open:
    with tab_timeline:
        st.plotly_chart(timeline_fig, key="lab_timeline")
        st.session_state.pop("lab_replan", None)  # this run plans with the pins as they are
        _message_table(table, plan, conv, view)


if tab_replay.open:
    with tab_replay:
        where = _(APPLY_AT_WORDS[strategy.apply_at])
        st.caption(_("The strategy applied where the agent applies it: {where} (its apply_at, in the strategy's "
                     "parameters), to what it left before plus what arrived since. Rows are model calls (one per "
                     "assistant message), columns are messages; a red mark at the left is a call over the "
                     "limit.").format(where=where))
        try:
            with st.spinner(_("Replaying call by call…")):
                rp: Replay | None = lab_cache.lab_replay(*keys, view, strategy, budget, tools, llm)
        except CtxlabError as e:
            st.error(md_escape(str(e)))
            rp = None
        if rp is not None and not rp.calls:
            st.info(_("This conversation has no message, so there is no model call to replay."))
        elif rp is not None:
            cache_breaks = list(measures.breaks) if measures is not None else []  # found in the measures' own pass
            st.plotly_chart(lab_cache.heatmap(*keys, language(), rp, repr(price) if measures is not None else "",
                                             tuple(cache_breaks)), key="lab_replay_heatmap")
            if cache_breaks:
                st.caption(_("A dark triangle left of a row marks a call whose prompt broke the prompt cache; hover "
                             "it for the cause and the cached tokens lost."))
            if _tools_sentence(rp):
                st.caption(_tools_sentence(rp))
            if measures is not None:
                _where_it_runs(keys, price)
                _cost_section(measures)
                _breaks_section(cache_breaks)
            try:  # a production trace: the billed figures beside the modelled ones
                _billed_section(lab_cache.usage(keys[0][0], model, repr(price), keys[2], conv, price, budget))
            except CtxlabError as e:
                st.error(md_escape(str(e)))
            calls = len(rp.calls)
            if not 0 <= st.session_state.get("lab_call", -1) < calls:
                st.session_state.lab_call = calls - 1  # the newest call first
            c = st.slider(_("Model call"), 0, calls - 1, key="lab_call") if calls > 1 else 0
            call = rp.calls[c]
            r1, r2 = st.columns(2)
            r3, r4 = st.columns(2)  # two rows: "4,328 of 5,000" does not fit a quarter of the column
            r1.metric(_("Prompt before the strategy"), f"{call.tokens_before:,}")
            r2.metric(_("Prompt sent"), f"{call.tokens_after:,}",
                      delta=_("over the limit") if call.over_limit else None, delta_color="inverse")
            r3.metric(_("Calls over the limit"), _("{k:,} of {n:,}").format(k=rp.calls_over_limit, n=calls),
                      help=_("The limit: {prompt:,} tokens ({limit:,} less the {reserve:.0%} reserve)").format(
                          prompt=budget.prompt_limit, limit=budget.max_tokens, reserve=budget.reserve))
            r4.metric(_("Calls where it acted"), _("{k:,} of {n:,}").format(k=rp.times_triggered, n=calls),
                      help=_("It ran {n:,} times ({where}).").format(n=rp.applications, where=where))
            made = _("the call the agent is about to make") if call.pending else \
                _("it wrote message {i}").format(i=call.index)
            turn = _("turn {t}").format(t=call.turn) if call.turn >= 0 else _("before the first user message")
            st.caption((_("The prompt of call {c} ({turn}; {made}): {n:,} messages.") if call.applied else
                        _("The prompt of call {c} ({turn}; {made}): {n:,} messages; the strategy did not run before "
                          "this call.")).format(c=c, turn=turn, made=made, n=call.messages))
            broke = next((b for b in cache_breaks if b.call == c), None)
            if broke is not None:
                st.caption(md_escape(_break_sentence(broke)))
            if call.reported is not None:
                st.caption(_("Billed for this call as the trace sent it: {prompt} prompt tokens, {cached} of "
                             "them cached.").format(prompt=f"{call.reported.prompt_tokens:,}",
                                                    cached="?" if call.reported.cached_tokens is None
                                                    else f"{call.reported.cached_tokens:,}"))
            prompt = lab_cache.prompt_at(rp, c)
            st.dataframe(pd.DataFrame([{"#": message_number(o), "role": "summary" if o is None else m.role, "tokens": tok,
                                        "state": _("as written") if o is None or m is conv.messages[o] else _("replaced"),
                                        "content": _preview(m)}
                                       for m, o, tok in zip(prompt.messages, prompt.origins, prompt.tokens)]),
                         key="lab_turn_table", hide_index=True, width="stretch",
                         column_config=translated_columns(["#", "role", "tokens", "state", "content"],
                                                          {"#": number_column(), "tokens": count_column("tokens")}))
        if conv.metadata.get("subagents"):  # a Claude Code main session: its sub-agents, isolated or inline
            _subagents_section(text, model)

if tab_export.open:
    with tab_export:
        st.caption(_("The resulting conversation, ready to send:"))
        exports = lab_cache.exports(*keys, conv, plan)
        for col, (fmt, name) in zip(st.columns(len(EXPORTS)), EXPORTS.items()):
            data, notes = exports[fmt]
            if data is None:
                col.error(md_escape(f"{name}: {local(notes[0])}"))
                continue
            col.download_button(_("{label} JSON").format(label=name), data, file_name=f"context_{fmt}.json", mime="application/json",
                                key=f"lab_dl_{fmt}")
            for note in notes:
                col.caption(md_escape(local(note)))
        config = make_config(strategy, budget, model)
        st.caption(_("The strategy and budget as a config (reads back with `ctxlab.configs.lab_config.read_config`):"))
        config_downloads(config, _("Config"), "strategy", "lab_dl_config")
        if pins:
            st.caption(_("Pins belong to this conversation and are not part of the config."))
        st.caption(_("The same settings in each framework's own configuration, where the strategy maps, with what "
                     "does not carry over:"))
        native_downloads(config, "lab_dl")
        snippet_download(config, strategy.apply_at, "lab_dl_snippet")
