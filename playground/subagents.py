"""The sub-agents table Compare and Tune show for a Claude Code main session: one row per strategy (or
session) and form, isolated or inline, from ``ctxlab.subagents.isolation``'s ``measured`` (cached in
``lab_cache.subagents_measured``), with the sentence that says what the forms and figures are."""
from __future__ import annotations

from typing import Any

import streamlit as st

from ctxlab.i18n import N_, _
from playground.widgets import count_column, translated_columns

SUBAGENT_FORMS = {"isolated": N_("isolated"), "inline": N_("inline")}
SUBAGENT_FIGURES = ((N_("parent prompt tokens"), "parent", "prompt_tokens"),
                    (N_("prompt tokens, all contexts"), "total", "prompt_tokens"),
                    (N_("largest parent prompt"), "parent", "largest_prompt"),
                    (N_("calls over limit"), "total", "calls_over_limit"),
                    (N_("parent needed recall"), "parent", "needed_recall"), (N_("cost $"), "total", "cost_usd"))
SUBAGENT_CAPTION = N_(
    "Isolated: the parent as logged, seeing only what each sub-agent returned, and each sub-agent in its own context "
    "under the same strategy and limit; inline: each sub-agent's calls and results in the parent's context before the "
    "call that started it, a model of the alternative (it assumes the parent would have made the same calls and got "
    "the same results). Prompt tokens: over the calls the trace answered (the largest prompt also counts the call it "
    "ends waiting on); calls over the limit and cost count the parent and the sub-agents together. Parent needed "
    "recall: of the facts the parent's own calls used from earlier messages, the share their prompts held (the calls "
    "that started a sub-agent left out, in both forms: inline, the model puts the sub-agent's work before them).")


def return_cap_input(key: str) -> int | None:
    """The cap on each sub-agent's returned result, in tokens (None: as returned): the Lab's and Compare's control."""
    cap = st.number_input(_("Cap on each returned result (tokens, 0: as returned)"), min_value=0, max_value=1_000_000,
                          step=100, key=key,
                          help=_("Each sub-agent's result cut to its first N tokens before the parent reads it"))
    return int(cap) or None


def form_rows(lead: dict[str, Any], measured: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per form: ``lead`` (the strategy or session it belongs to), the form in words, the figures."""
    return [{**lead, "form": _(label), **{name: measured[form][part][key] for name, part, key in SUBAGENT_FIGURES}}
            for form, label in SUBAGENT_FORMS.items()]


def form_table(rows: list[dict[str, Any]], key: str, lead: str) -> None:
    """The rows (``lead``: the English header of their first column, marked where it is written) and the
    sentence under them."""
    names = [lead, "form", *(name for name, _part, _key in SUBAGENT_FIGURES)]
    st.dataframe(rows, key=key, hide_index=True, width="stretch", column_config=translated_columns(names, {
        **{name: count_column(name) for name, _p, _k in SUBAGENT_FIGURES[:4]},
        "parent needed recall": st.column_config.NumberColumn("parent needed recall", format="percent"),
        "cost $": st.column_config.NumberColumn("cost $", format="$%.4f", help=N_("Empty: the model has no price"))}))
    st.caption(_(SUBAGENT_CAPTION))
