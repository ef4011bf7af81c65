"""Plotly figures for tuning: a sweep's Pareto scatter and per-parameter sensitivity, and a replay's
tokens per turn split by prompt cache (the app draws these; so can a notebook)."""
from __future__ import annotations

from typing import Any, Sequence

import plotly.graph_objects as go

from .i18n import N_, _
from .sweep import MAXIMIZE, SweepResult

CACHE_COLORS = {"cached": "#54A24B", "cache write": "#EECA3B", "uncached": "#E45756", "none": "#4C78A8"}
CACHE_NAMES = {"cached": N_("cached"), "cache write": N_("cache write"), "uncached": N_("uncached")}


def _axis(result: SweepResult, axis: str) -> str:
    if axis == "cost_usd" and any(p["cost_usd"] is None for p in result.points):
        return "input_tokens_total"
    return axis


def _label(p: dict[str, Any]) -> str:
    params = ", ".join(f"{k}={v}" for k, v in p["params"].items())
    return f"{p['strategy']}({params}) @ {p['max_tokens']:,}"


def pareto_figure(result: SweepResult, x: str | None = None, y: str | None = None) -> go.Figure:
    """Every point of a sweep, one colour per strategy, the Pareto front as a line and the
    recommendation as a star; the axes default to the sweep's."""
    x, y = _axis(result, x or result.axes[0]), _axis(result, y or result.axes[1])
    if not any(p[x] is not None and p[y] is not None for p in result.points):
        raise ValueError(undefined_axis_reason(result, y if all(p[y] is None for p in result.points) else x))
    fig = go.Figure()
    for name in dict.fromkeys(p["strategy"] for p in result.points):
        pts = [p for p in result.points if p["strategy"] == name and p[x] is not None and p[y] is not None]
        fig.add_scatter(x=[p[x] for p in pts], y=[p[y] for p in pts], mode="markers", name=name,
                        text=[_label(p) for p in pts],
                        marker={"symbol": ["x" if p["invalid"] else "circle" for p in pts], "size": 9},
                        hovertemplate="%{text}<br>" + x + " %{x}<br>" + y + " %{y}<extra></extra>")
    front = sorted((result.points[k] for k in result.pareto), key=lambda p: p[x])
    if front:
        fig.add_scatter(x=[p[x] for p in front], y=[p[y] for p in front], mode="lines", name=_("Pareto front"),
                        line={"dash": "dot", "color": "#555"}, hoverinfo="skip")
    if result.recommendation is not None:
        r = result.points[result.recommendation]
        fig.add_scatter(x=[r[x]], y=[r[y]], mode="markers", name=_("recommended"), text=[_label(r)],
                        marker={"symbol": "star", "size": 18, "color": "#F58518", "line": {"width": 1, "color": "#333"}},
                        hovertemplate="%{text}<extra>" + _("recommended") + "</extra>")
    if y == "needed_recall":
        fig.add_hline(y=result.min_recall, line_dash="dash", line_color="#999",
                      annotation_text=_("recall level {level:.2f}").format(level=result.min_recall))
    better = lambda a: (_("{measure} (higher is better)") if a in MAXIMIZE  # noqa: E731
                        else _("{measure} (lower is better)")).format(measure=a)
    fig.update_layout(xaxis_title=better(x), yaxis_title=better(y), legend_title=_("strategy"),
                      margin={"l": 10, "r": 10, "t": 30, "b": 10}, height=420)
    return fig


def undefined_axis_reason(result: SweepResult, measure: str) -> str:
    """Why no point of the sweep has ``measure``, in words a user can act on."""
    if measure == "needed_recall":
        return _("needed_recall is undefined for every point: no assistant message in these conversations uses a "
                 "fact (an id, an amount, a date) from an earlier message, so there is nothing a strategy could fail "
                 "to serve. Compare the points on cost and fits_rate in the table, or sweep longer conversations.")
    return _("{measure} is undefined for every point of this sweep").format(measure=measure)


def has_values(result: SweepResult, measure: str) -> bool:
    """Whether any point of the sweep has a value for ``measure``."""
    return any(p.get(measure) is not None for p in result.points)


def sensitivity_figure(result: SweepResult, strategy: str, param: str, metric: str = "needed_recall") -> go.Figure:
    """``metric`` against the values of one parameter of one strategy, one line per budget (the
    other parameters averaged over)."""
    varied = [p for p in result.points if p["strategy"] == strategy and param in p["params"]]
    if not varied:
        raise ValueError(f"the sweep has no point of {strategy} varying {param}")
    pts = [p for p in varied if p[metric] is not None]
    if not pts:
        raise ValueError(undefined_axis_reason(result, metric) if metric == "needed_recall" else
                         _("{metric} is undefined for the {n} points of {strategy} varying {param}").format(
                             metric=metric, n=len(varied), strategy=strategy, param=param))
    fig = go.Figure()
    for budget in sorted({p["max_tokens"] for p in pts}):
        groups: dict[Any, list[float]] = {}
        for p in pts:
            if p["max_tokens"] == budget:
                groups.setdefault(p["params"][param], []).append(p[metric])
        xs = sorted(groups, key=lambda v: (str(type(v)), v))
        fig.add_scatter(x=[str(v) if isinstance(v, tuple) else v for v in xs],
                        y=[sum(groups[v]) / len(groups[v]) for v in xs], mode="lines+markers",
                        name=_("{n:,} tokens").format(n=budget))
    fig.update_layout(xaxis_title=f"{strategy}.{param}", yaxis_title=metric, legend_title=_("limit"),
                      margin={"l": 10, "r": 10, "t": 30, "b": 10}, height=360)
    return fig


def cost_per_turn_figure(cost: Any, none: Any | None = None) -> go.Figure:
    """Prompt tokens per turn of a replay (a ``pricing.CostReport``), stacked as served by the
    cache, written to it and uncached; with ``none`` (the same for keeping everything) as a line."""
    rows = cost.per_turn()
    turns = [r["turn"] for r in rows]
    fig = go.Figure()
    for name, key in (("cached", "cached_tokens"), ("cache write", "cache_write_tokens"), ("uncached", "uncached_tokens")):
        fig.add_bar(x=turns, y=[r[key] for r in rows], name=_(CACHE_NAMES[name]), marker_color=CACHE_COLORS[name],
                    hovertemplate=_("turn %{x}: %{y:,} tokens") + "<extra>" + _(CACHE_NAMES[name]) + "</extra>")
    if none is not None:
        base = none.per_turn()
        fig.add_scatter(x=[r["turn"] for r in base], y=[r["prompt_tokens"] for r in base], mode="lines+markers",
                        name=_("none: prompt tokens"), line={"color": CACHE_COLORS["none"]})
    if cost.cost_usd is None:
        title = _("{strategy}: {n:,} input tokens, {cached:.0%} cached").format(
            strategy=cost.strategy, n=cost.input_tokens, cached=cost.cached_share)
    else:
        title = _("{strategy}: {n:,} input tokens, {cached:.0%} cached, ${cost:.4f}").format(
            strategy=cost.strategy, n=cost.input_tokens, cached=cost.cached_share, cost=cost.cost_usd)
    fig.update_layout(barmode="stack", xaxis_title=_("turn"), yaxis_title=_("prompt tokens (all calls of the turn)"),
                      title=title,
                      margin={"l": 10, "r": 10, "t": 40, "b": 10}, height=360)
    return fig


def points_table(result: SweepResult) -> list[dict[str, Any]]:
    """The sweep's points as table rows (params written out, front and recommendation marked)."""
    front = set(result.pareto)
    rows = []
    for k, p in enumerate(result.points):
        rest = {c: v for c, v in p.items() if c not in ("strategy", "params", "max_tokens", *FIRST_COLUMNS)}
        rows.append({"#": k, "point": _label(p), **{c: p.get(c) for c in FIRST_COLUMNS}, **rest,
                     "pareto": k in front, "recommended": k == result.recommendation})
    return rows


FIRST_COLUMNS = ("needed_recall", "cost_usd", "cost_vs_none", "fits_rate", "saved")
"""The measures a pick is made on, right after the point's name (never behind a horizontal scroll)."""


__all__: Sequence[str] = ["FIRST_COLUMNS", "cost_per_turn_figure", "has_values", "pareto_figure", "points_table",
                          "sensitivity_figure", "undefined_axis_reason"]


__all__ = ["CACHE_COLORS", "CACHE_NAMES", "FIRST_COLUMNS", "cost_per_turn_figure", "has_values",
           "pareto_figure", "points_table", "sensitivity_figure", "undefined_axis_reason"]
