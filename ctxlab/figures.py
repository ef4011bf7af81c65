"""Plotly figures of plans, replays and tool retrieval (the app draws these; so can a notebook).

Colours are fixed per category and per action so every figure reads the same way.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import plotly.graph_objects as go

from .strategies import Plan

CATEGORY_COLORS: dict[str, str] = {
    "system": "#4C78A8", "tool_definitions": "#72B7B2", "user": "#F58518", "assistant_text": "#54A24B",
    "tool_calls": "#B279A2", "tool_results": "#E45756", "summary": "#EECA3B", "reply_priming": "#9D9D9D",
}
ACTION_COLORS: dict[str, str] = {
    "keep": "#54A24B", "summarize": "#EECA3B", "clear": "#72B7B2", "truncate": "#B279A2", "drop": "#E45756",
    "future": "#F0F0F0", "removed": "#BBBBBB",
}
_ORDER = ("system", "tool_definitions", "user", "assistant_text", "tool_calls", "tool_results", "summary",
          "reply_priming")


def _label(category: str) -> str:
    return category.replace("_", " ")


def token_bars(plans: Sequence[Plan], names: Sequence[str] | None = None, extra_tools: int | None = None) -> go.Figure:
    """Stacked horizontal bars by category: "before" once, then "after" for each plan, with the
    context limit and the prompt limit (limit less the response reserve) drawn as lines."""
    if not plans:
        raise ValueError("token_bars needs at least one plan")
    rows = [("before", plans[0].before)] + [((names[k] if names else plans[k].strategy) + " (after)", p.after)
                                           for k, p in enumerate(plans)]
    fig = go.Figure()
    for cat in _ORDER:
        fig.add_bar(name=_label(cat), orientation="h", marker_color=CATEGORY_COLORS[cat],
                    y=[r[0] for r in rows], x=[r[1].get(cat, 0) for r in rows],
                    hovertemplate="%{y}: %{x:,} tokens<extra>" + _label(cat) + "</extra>")
    budget = plans[0].budget
    for x, text, dash, where in ((budget.max_tokens, f"context limit {budget.max_tokens:,}", "solid", "top right"),
                                 (budget.prompt_limit, f"prompt limit {budget.prompt_limit:,} "
                                  f"({budget.reserve:.0%} reserved)", "dash", "top left")):
        fig.add_vline(x=x, line_dash=dash, line_color="#333", annotation_text=text, annotation_position=where)
    fig.update_layout(barmode="stack", height=140 + 45 * len(rows), margin=dict(l=10, r=10, t=40, b=10),
                      legend_orientation="h", legend_y=-0.25, xaxis_title="tokens")
    fig.update_yaxes(autorange="reversed")
    return fig


def timeline(plan: Plan, roles: Sequence[str], tokens: Sequence[int]) -> go.Figure:
    """One bar per message: its size in tokens, coloured by the plan's action; hover shows the reason."""
    fig = go.Figure()
    idx = list(range(len(plan.actions)))
    for action in ("keep", "summarize", "clear", "truncate", "drop"):
        ks = [i for i in idx if plan.actions[i] == action]
        if not ks:
            continue
        fig.add_bar(name=action, x=ks, y=[tokens[i] for i in ks], marker_color=ACTION_COLORS[action],
                    customdata=[[roles[i], plan.reasons[i]] for i in ks],
                    hovertemplate="#%{x} %{customdata[0]}: %{y:,} tokens<br>%{customdata[1]}<extra>" + action + "</extra>")
    fig.update_layout(barmode="overlay", height=260, margin=dict(l=10, r=10, t=10, b=10), xaxis_title="message",
                      yaxis_title="tokens", legend_orientation="h", bargap=0.05)
    return fig


def replay_heatmap(matrix: Sequence[Sequence[str]]) -> go.Figure:
    """Turns (rows) by messages (columns), coloured by action; "future" cells stay pale."""
    order = list(ACTION_COLORS)
    z = [[order.index(a) if a in order else order.index("removed") for a in row] for row in matrix]
    fig = go.Figure(go.Heatmap(z=z, colorscale=_steps(order), zmin=-0.5, zmax=len(order) - 0.5, showscale=False,
                               customdata=[list(row) for row in matrix],
                               hovertemplate="turn %{y}, message %{x}: %{customdata}<extra></extra>"))
    fig.update_layout(height=120 + 22 * len(matrix), margin=dict(l=10, r=10, t=10, b=10),
                      xaxis_title="message", yaxis_title="turn")
    fig.update_yaxes(autorange="reversed")
    return fig


def _steps(order: Sequence[str]) -> list[list[Any]]:
    """A discrete colour scale: one flat band per action."""
    n = len(order)
    out: list[list[Any]] = []
    for k, name in enumerate(order):
        out.append([k / n, ACTION_COLORS[name]])
        out.append([(k + 1) / n, ACTION_COLORS[name]])
    return out


def similarity_bars(rows: Sequence[Mapping[str, Any]], threshold: float | None) -> go.Figure:
    """Selected tools with their similarity, coloured by why they are there; the threshold as a line.
    ``rows``: dicts with ``name``, ``similarity`` and ``reason``."""
    colors = {"similarity": "#4C78A8", "expansion": "#F58518", "always": "#54A24B"}
    fig = go.Figure()
    for reason, color in colors.items():
        rs = [r for r in rows if r["reason"] == reason]
        if rs:
            fig.add_bar(name=reason, orientation="h", marker_color=color, y=[r["name"] for r in rs],
                        x=[r["similarity"] or 0 for r in rs], hovertemplate="%{y}: %{x:.3f}<extra>" + reason + "</extra>")
    if threshold is not None:
        fig.add_vline(x=threshold, line_dash="dash", annotation_text=f"threshold {threshold:.2f}")
    fig.update_layout(height=120 + 26 * max(len(rows), 1), margin=dict(l=10, r=10, t=30, b=10),
                      xaxis_title="cosine similarity",
                      xaxis_range=[min([0.0, *(r["similarity"] or 0 for r in rows)]), 1], legend_orientation="h")
    fig.update_yaxes(autorange="reversed")
    return fig


def sweep_chart(points: Sequence[Mapping[str, Any]], x: str, y: str, y2: str | None = None) -> go.Figure:
    """A line chart of a retrieval sweep (recall against k, tokens against threshold, ...)."""
    fig = go.Figure()
    fig.add_scatter(x=[p[x] for p in points], y=[p[y] for p in points], mode="lines+markers", name=y)
    if y2:
        fig.add_scatter(x=[p[x] for p in points], y=[p[y2] for p in points], mode="lines+markers", name=y2,
                        yaxis="y2")
        fig.update_layout(yaxis2=dict(overlaying="y", side="right", title=y2))
    fig.update_layout(height=300, margin=dict(l=10, r=10, t=10, b=10), xaxis_title=x, yaxis_title=y,
                      legend_orientation="h")
    return fig
