"""Compare: two to four strategies, each with its own parameters, on the same conversation and
budget, side by side: token bars, the action on every message aligned in columns, metrics with the
providers' findings, and a verdict."""
import streamlit as st

from appstate import current_budget, current_view, input_panel, md_escape, require_conversation
from ctxlab.compare import (ACTION_WORDS, DEFAULT_STRATEGIES, MAX_COLUMNS, MIN_COLUMNS, RULE_NAMES, VERDICT_RULE,
                            action_table, column_labels, finding_rows, measure, verdict)
from ctxlab.errors import CtxlabError
from ctxlab.figures import token_bars
from ctxlab.validate import validate
from ui import action_column, count_column, strategy_picker

input_panel()
st.title("Compare strategies")
st.write("Two to four strategies on the same conversation and budget: what each one keeps, what it costs, "
         "and whether OpenAI and Anthropic would accept the result.")

conv = require_conversation()
try:
    view = current_view(st.session_state.conversation_text, st.session_state.model,
                        tuple(st.session_state.pins))
    budget = current_budget(conv)
except CtxlabError as e:
    st.error(md_escape(str(e)))
    st.stop()

count = int(st.number_input("Strategies to compare", min_value=MIN_COLUMNS, max_value=MAX_COLUMNS, value=MIN_COLUMNS,
                            step=1, key="cmp_count"))
plans, names, columns, reasons = [], [], [], []
for k, col in enumerate(st.columns(count), 1):
    col.subheader(f"Strategy {k}")
    strategy = strategy_picker(f"cmp{k}", col, default=DEFAULT_STRATEGIES[k - 1], budget=budget)
    show = col.checkbox("Reasons in the table", key=f"cmp{k}_reasons",
                        help="Show why, instead of only what, in this strategy's column of the message table")
    if strategy is None:
        col.caption("Left out of the comparison until its parameters are valid.")
        continue
    try:
        plans.append(strategy.apply(view, budget))
    except CtxlabError as e:
        col.error(md_escape(str(e)))
        col.caption("Left out of the comparison.")
        continue
    if plans[-1].idle:
        col.info(md_escape(f"Did not act: {plans[-1].idle.rstrip('.')}."))
    names.append(strategy.name)
    columns.append(k)
    reasons.append(show)

if not plans:
    st.info("No strategy can be applied with its current parameters: fix the ones marked in red above.")
    st.stop()

labels = column_labels(names, columns)
metrics = [measure(p, label) for p, label in zip(plans, labels)]

st.subheader("Verdict")
result = verdict(metrics)
(st.success if result.winner is not None else st.warning)(md_escape(result.text))
st.caption(f"Rule: {VERDICT_RULE}")

st.subheader("Tokens")
st.plotly_chart(token_bars(plans, labels), key="cmp_bars")

st.subheader("Metrics")
COUNTS = ("tokens after", "tokens saved", "messages removed")
st.dataframe([m.row() for m in metrics], key="cmp_metrics", hide_index=True, width="stretch",
             column_config={c: count_column(c) for c in COUNTS})
for m in metrics:
    for w in m.warnings:
        st.warning(md_escape(f"{m.label}: {w}"))

st.subheader("Every message")
st.caption("One row per input message; one column per strategy, with what it did: "
           + ", ".join(ACTION_WORDS[a] for a in ("keep", "summarize", "clear", "truncate", "drop")) + ".")
st.dataframe(action_table(view.roles, view.tokens, plans, labels, ACTION_WORDS, reasons), key="cmp_actions",
             hide_index=True, width="stretch",
             column_config={"#": count_column("#"), "tokens": count_column("tokens"),
                            **{label: action_column(label) for label in labels}})

input_errors = sorted({(f.code, f.index) for r in RULE_NAMES for f in validate(list(conv.messages), r)
                       if f.severity == "error"}, key=lambda ci: (ci[1] is None, ci[1] or 0, ci[0]))
if input_errors:
    listed = ", ".join(f"{code} at message #{i}" for code, i in input_errors[:5])
    st.warning(md_escape(f"The input itself breaks the OpenAI or Anthropic rules ({len(input_errors)} error(s): "
                         f"{listed}): a strategy whose result has no finding below only happened to remove the "
                         "messages at fault. Fix the input."))
rows = finding_rows(metrics, plans)
if rows:
    with st.expander(f"Provider findings ({len(rows)})", expanded=True):
        st.dataframe(rows, key="cmp_findings", hide_index=True, width="stretch")
else:
    st.caption("No findings: every result follows the OpenAI and Anthropic rules.")
