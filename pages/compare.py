"""Compare: two to four strategies, each with its own parameters, on the same conversation and
budget, side by side: token bars, the action on every message aligned in columns, metrics with the
providers' findings, what each serves and costs on the call-by-call replay, and a verdict by the
rule stated on the page (highest needed recall, then lowest cost)."""
from typing import Any

import streamlit as st

from ctxlab.compare import (ACTION_WORDS, DEFAULT_STRATEGIES, MAX_COLUMNS, MIN_COLUMNS, RULE_NAMES, VERDICT_RULE,
                            action_table, column_labels, cost_sentence, finding_rows, plan_metrics,
                            verdict_by_recall)
from ctxlab.errors import CtxlabError
from ctxlab.measure import ReplayMeasures
from ctxlab.llm import use_llm
from ctxlab.figures import token_bars
from ctxlab.validate import input_finding_keys
from ctxlab.i18n import N_, _, local, local_error
from playground import lab_cache
from playground.budget import current_budget
from playground.conversation import current_view, require_conversation
from playground.input_panel import input_panel
from playground.llm_settings import current_llm
from playground.markdown import md_escape
from playground.prices import price_panel
from playground.state import text_hash
from playground.subagents import form_rows, form_table, return_cap_input
from playground.widgets import (action_words, action_column, count_column, strategy_picker, table_columns, tools_picker,
                                translated_columns)


# Conversations up to this many messages are replayed on every change (10-60 ms per column on the
# samples); longer ones on a button press: replaying every model call of a 1,000-message conversation,
# and keeping everything for comparison, takes seconds, of a 10,000-message one minutes.
LIVE_MEASURE_MAX = 300


def _replay_row(m: ReplayMeasures) -> dict[str, Any]:
    """The replay's columns of the metrics table (numbers, formatted by the table's column config)."""
    s = m.summary()
    return {"calls over limit": s["calls_over_limit"], "needed recall": s["needed_recall"], "cost $": s["cost_usd"],
            "cost vs none": s["cost_vs_none"], "largest prompt": s["worst_prompt"], "needed facts missed": s["missed"],
            "input tokens (all calls)": s["input_tokens"], "tokens vs none": s["tokens_vs_none"],
            "cached": s["cached_share"], "cache breaks": s["cache_breaks"],
            "cached tokens lost": s["cache_tokens_lost"], "re-fetches": s["refetches"],
            "unrecoverable": s["unrecoverable"]}


REPLAY_COLUMNS = {
    "re-fetches": st.column_config.NumberColumn(
        N_("re-fetches"), format="%d", help=N_("Modelled calls that fetch a lost fact again (a tool call run once more): "
                                               "a model, not a bill")),
    "unrecoverable": st.column_config.NumberColumn(
        N_("unrecoverable"), format="%d", help=N_("Lost facts nothing brings back: the user gave them, or the result "
                                                  "they came from changed since")),
    "calls over limit": st.column_config.NumberColumn(
        N_("calls over limit"), format="%d", help=N_("Model calls of the call-by-call replay whose prompt is over the limit")),
    "needed recall": st.column_config.NumberColumn(N_("needed recall"), format="percent",
                                                   help=N_("Share of the needed facts the context held (empty: none needed)")),
    "tokens vs none": st.column_config.NumberColumn(N_("tokens vs none"), format="percent",
                                                    help=N_("Input tokens over all calls, against keeping everything")),
    "cached": st.column_config.NumberColumn(N_("cached"), format="percent", help=N_("Share of input tokens the cache served")),
    "cost $": st.column_config.NumberColumn(N_("cost $"), format="$%.4f", help=N_("Empty: the model has no price")),
    "cost vs none": st.column_config.NumberColumn(N_("cost vs none"), format="percent"),
    "cache breaks": st.column_config.NumberColumn(
        N_("cache breaks"), format="%d", help=N_("Model calls whose prompt does not extend the previous call's prompt, "
                                                 "so the provider's prompt cache stops at the first change")),
    "cached tokens lost": st.column_config.NumberColumn(
        N_("cached tokens lost"), format="localized",
        help=N_("Tokens those calls would have read from the cache had their prompt extended the previous one, "
                "billed at the full input price instead"))}
TABLE_HEADERS = (N_("strategy"), N_("cost vs none"), N_("largest prompt"), N_("needed facts missed"),
                 N_("input tokens (all calls)"), N_("tokens after"), N_("saved"), N_("tokens saved"),
                 N_("messages removed"), N_("retention"), N_("fits"), N_("openai findings"), N_("anthropic findings"),
                 N_("warnings"), N_("role"), N_("tokens"), N_("rules"), N_("severity"), N_("code"),
                 N_("result message"), N_("input message"), N_("finding"))
# Every header of the page's tables (the engine's row keys), marked for the catalogs. (a comment: a page's bare string is shown)


def _subagents_section(text: str, strategies: list[Any], labels: list[str], budget: Any, price: Any,
                       llm: Any) -> None:
    """A Claude Code main session: each compared strategy on its sub-agents isolated (as logged) and on the
    same work inline in the parent (``ctxlab.subagents.isolation`` with a strategy)."""
    st.subheader(_("Sub-agents: isolated or inline"))
    cap = return_cap_input("cmp_subagent_cap")
    model, budget_key = st.session_state.model, repr(budget)
    try:
        with st.spinner(_("Replaying the sub-agents…")):
            rows = [row for s, label in zip(strategies, labels) for row in form_rows({"strategy": label}, (
                lab_cache.subagents_measured(text_hash(text), model, cap, lab_cache.strategy_key(s, llm),
                                             budget_key, repr(price), text, s, budget, price, llm)))]
    except CtxlabError as e:
        st.info(md_escape(local_error(e)))
        return
    form_table(rows, "cmp_subagents", N_("strategy"))


input_panel()
st.title(_("Compare strategies"))
st.write(_("Two to four strategies on the same conversation and budget: what each one keeps, what it costs, "
           "and whether OpenAI and Anthropic would accept the result."))

conv = require_conversation()
try:
    view = current_view(st.session_state.conversation_text, st.session_state.model,
                        tuple(st.session_state.pins))
    budget = current_budget(conv)
except CtxlabError as e:
    st.error(md_escape(str(e)))
    st.stop()

count = int(st.number_input(_("Strategies to compare"), min_value=MIN_COLUMNS, max_value=MAX_COLUMNS, value=MIN_COLUMNS,
                            step=1, key="cmp_count"))
view_key = (text_hash(st.session_state.conversation_text), st.session_state.model, tuple(st.session_state.pins))
llm = current_llm()  # the model summarizer=llm calls (the sidebar's settings), as in the Strategy Lab
plans, names, columns, reasons, strategies = [], [], [], [], []
for k, col in enumerate(st.columns(count), 1):
    col.subheader(_("Strategy {k}").format(k=k))
    strategy = strategy_picker(f"cmp{k}", col, default=DEFAULT_STRATEGIES[k - 1], budget=budget)
    show = col.checkbox(_("Reasons in the table"), key=f"cmp{k}_reasons",
                        help=_("Show why, instead of only what, in this strategy's column of the message table"))
    if strategy is None:
        col.caption(_("Left out of the comparison until its parameters are valid."))
        continue
    try:
        with use_llm(llm):
            plans.append(strategy.apply(view, budget))
    except CtxlabError as e:
        col.error(md_escape(str(e)))
        col.caption(_("Left out of the comparison."))
        continue
    if plans[-1].idle:
        col.info(md_escape(_("Did not act: {why}.").format(why=local(plans[-1].idle).rstrip("."))))
    names.append(strategy.name)
    strategies.append(strategy)
    columns.append(k)
    reasons.append(show)

if not plans:
    st.info(_("No strategy can be applied with its current parameters: fix the ones marked in red above."))
    st.stop()

labels = column_labels(names, columns)
inherited = input_finding_keys(conv, RULE_NAMES)
metrics = [plan_metrics(p, label, RULE_NAMES, inherited) for p, label in zip(plans, labels)]
try:
    price = price_panel(st)
except CtxlabError as e:
    st.error(md_escape(str(e)))
    st.stop()
tools_mode = tools_picker("cmp_tools", bool(conv.tools))  # the tool definitions each call sends (ctxlab.tools_per_call)
tools = lab_cache.tools_at(view_key, tools_mode, conv)
budget_key = f"{budget!r}|tools={tools_mode}"
measure_key = (view_key, tuple(repr(s) for s in strategies), budget_key, repr(price))
measures: list[ReplayMeasures] | None = None
st.subheader(_("Verdict"))
if len(view) > LIVE_MEASURE_MAX and st.session_state.get("cmp_measured") != measure_key:
    st.info(_("The verdict needs each strategy replayed call by call. This conversation has {n:,} messages, "
              "which takes from seconds to a minute or two: press Measure.").format(n=len(view)))
    if st.button(_("Measure needed recall and cost"), key="cmp_measure"):
        st.session_state.cmp_measured = measure_key
        st.rerun()
else:
    try:
        with st.spinner(_("Replaying call by call…")):  # the Lab's cache: what the Lab measured is not replayed again
            measures = [lab_cache.measures(view_key, lab_cache.strategy_key(s, llm), budget_key, repr(price), conv,
                                           view, s, budget, st.session_state.model, price, tools, llm)
                        for s in strategies]
    except CtxlabError as e:
        st.error(md_escape(str(e)))
        st.stop()
    result = verdict_by_recall(metrics, measures)
    (st.success if result.winner is not None else st.warning)(md_escape(result.text))
st.caption(_("Rule: {rule}").format(rule=_(VERDICT_RULE)))
st.caption(_("Every assistant message is one model call; each strategy runs where its apply_at says (before every "
             "call by default). Needed recall: of the facts each assistant message used that came from earlier "
             "messages, the share the prompt of its call held. Cost: every call priced with the provider's prompt "
             "cache. A strategy fits when every one of its calls fits."))
def _priced_losses(measures: list[ReplayMeasures], labels: list[str]) -> None:
    """Each strategy's cost sentence with the re-fetches it assumes, and its lost needs with their kind and
    recovery."""
    from ctxlab.compare import MISS_COLUMN_HELP, MISS_COLUMNS, miss_rows, refetch_sentence
    for m, label in zip(measures, labels):
        st.caption(md_escape(_("{label}: {sentence}").format(
            label=label, sentence=cost_sentence(m) + " " + refetch_sentence(m.summary()))))
    rows = [{"strategy": label, **row} for m, label in zip(measures, labels) for row in miss_rows(m.fidelity.misses)]
    if rows:
        with st.expander(_("Needed facts missed ({n})").format(n=len(rows))):
            st.dataframe(rows, key="cmp_misses", hide_index=True, width="stretch",
                         column_config=translated_columns(["strategy", *MISS_COLUMNS], MISS_COLUMN_HELP))


_priced_losses(measures or [], labels)

st.subheader(_("Tokens"))
st.plotly_chart(token_bars(plans, labels), key="cmp_bars")

st.subheader(_("Metrics"))
COUNTS = ("tokens after", "tokens saved", "messages removed", "input tokens (all calls)", "needed facts missed",
          "largest prompt")
# the strategy, then what the replay says (fit of every call, needed facts, cost), then the plan's own
# figures: the columns a reader decides by come first, with no horizontal scroll to reach them
metric_rows = [{"strategy": m.label, **(_replay_row(r) if r is not None else {}),
                **{k: v for k, v in m.row().items() if k != "strategy"}}
               for m, r in zip(metrics, measures or [None] * len(metrics))]
st.dataframe(metric_rows, key="cmp_metrics", hide_index=True, width="stretch",
             column_config=translated_columns(table_columns(metric_rows),
                                              {**{c: count_column(c) for c in COUNTS}, **REPLAY_COLUMNS}))
for m in metrics:
    for w in m.warnings:
        st.warning(md_escape(_("{label}: {sentence}").format(label=m.label, sentence=local(w))))

st.subheader(_("Every message"))
st.caption(_("One row per input message; one column per strategy, with what it did: {actions}.").format(
    actions=_(", ").join(_(ACTION_WORDS[a]) for a in ("keep", "summarize", "clear", "truncate", "drop"))))
action_rows = action_table(view.roles, view.tokens, plans, labels, action_words(), reasons)
st.dataframe(action_rows, key="cmp_actions", hide_index=True, width="stretch",
             column_config={**translated_columns(table_columns(action_rows)[:3],
                                                 {"#": count_column("#"), "tokens": count_column("tokens")}),
                            **{label: action_column(label) for label in labels},
                            **{f"{label} reason": st.column_config.Column(_("{label} reason").format(label=label))
                               for label in labels}})

input_errors = sorted({(code, i) for _rules, code, i in inherited}, key=lambda ci: (ci[1] is None, ci[1] or 0, ci[0]))
if input_errors:
    listed = _(", ").join(_("{code} at message #{i}").format(code=code, i=i) for code, i in input_errors[:5])
    st.info(md_escape(_("The input itself breaks the OpenAI or Anthropic rules as logged ({n} error(s): {listed}). "
                        "These are the input's, listed here once: a strategy is judged only on findings it "
                        "introduced, listed below.").format(n=len(input_errors), listed=listed)))
rows = finding_rows(metrics, plans)
if rows:
    with st.expander(_("Provider findings ({n})").format(n=len(rows)), expanded=True):
        st.dataframe(rows, key="cmp_findings", hide_index=True, width="stretch",
                     column_config=translated_columns(table_columns(rows)))
else:
    st.caption(_("No findings: every result follows the OpenAI and Anthropic rules."))

if measures is not None and conv.metadata.get("subagents"):  # a Claude Code main session that ran sub-agents
    _subagents_section(st.session_state.conversation_text, strategies, labels, budget, price, llm)
