"""Plotly figures of plans, replays, token counts and tool retrieval (the app draws these; so can a
notebook).

Colours and words are fixed per category and per action so every figure (and the app's tables)
reads the same way. Every figure stays legible from a 3-message conversation to a 10,000-message
one and from a few hundred tokens to millions: axes start at 0 and end past the largest bar, labels
sit outside the bars, legends below the axis title, heights are capped, and per-message figures
aggregate neighbouring messages (and turns) into groups past a size instead of growing without end.
"""
from __future__ import annotations

import bisect
import math
from typing import Any, Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from .compare import ACTION_WORDS
from .i18n import N_, _, local_all, ngettext
from .strategies import Budget, Plan


class _Words:
    """``ACTION_WORDS`` read in the language in use (``_aw["drop"]``)."""

    def __getitem__(self, action: str) -> str:
        return _(ACTION_WORDS[action])


_aw = _Words()

CATEGORY_COLORS: dict[str, str] = {
    "system": "#4C78A8", "tool_definitions": "#72B7B2", "user": "#F58518", "assistant_text": "#54A24B",
    "tool_calls": "#B279A2", "tool_results": "#E45756", "summary": "#EECA3B", "reply_priming": "#9D9D9D",
}
ACTION_COLORS: dict[str, str] = {
    "keep": "#54A24B", "summarize": "#EECA3B", "clear": "#72B7B2", "truncate": "#B279A2", "drop": "#E45756",
    "insert": "#F58518", "removed": "#BBBBBB", "future": "#F0F0F0",
}

MAX_HEIGHT = 640
"""No figure is taller than this many pixels, whatever the size of the conversation."""
TIMELINE_MAX_BARS = 400
"""Past this many messages the timeline draws groups of neighbouring messages, one bar each."""
HEATMAP_MAX_ROWS, HEATMAP_MAX_COLUMNS = 120, 300
"""Past these, the replay heatmap groups neighbouring turns (rows) or messages (columns)."""
TEXT_COLOR = "#262730"
_ORDER = ("system", "tool_definitions", "user", "assistant_text", "tool_calls", "tool_results", "summary",
          "reply_priming")
_HEATMAP_ORDER = ("keep", "summarize", "clear", "truncate", "drop", "removed", "future")
CATEGORY_NAMES: dict[str, str] = {
    "system": N_("system"), "tool_definitions": N_("tool definitions"), "user": N_("user"),
    "assistant_text": N_("assistant text"), "tool_calls": N_("tool calls"), "tool_results": N_("tool results"),
    "summary": N_("summary"), "reply_priming": N_("reply priming"),
}
"""Each token category's name for people (figures' legends, tables), marked for the catalogs."""
_LEGEND_BELOW = dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0, xanchor="left")


def _label(category: str) -> str:
    return _(CATEGORY_NAMES.get(category, category.replace("_", " ")))


def int_dtick(n: int, max_ticks: int = 12) -> int:
    """A whole-number tick step (1, 2, 5, 10, 20, 50, ...) giving at most ``max_ticks`` ticks over
    ``n`` positions."""
    step = 1
    while math.ceil(n / step) > max_ticks:
        for factor in (2, 2.5, 2):
            step = int(step * factor)
            if math.ceil(n / step) <= max_ticks:
                return step
    return step


def _figure(spec: dict[str, Any]) -> go.Figure:
    """A figure from a spec this module wrote, without plotly checking every value of it again
    (plotly's own switch; checking took 5-8x the building). tests/measures/test_figures.py checks that each
    figure built this way equals the same spec checked by plotly."""
    return go.Figure(spec, _validate=False)


# ---------------------------------------------------------------- token bars


def token_bars(plans: Sequence[Plan], names: Sequence[str] | None = None) -> go.Figure:
    """Stacked horizontal bars by category: "before" once, then "after" for each plan, each with its
    total written at its end (so a tiny bar still reads), and the context limit and the prompt limit
    (limit less the response reserve) as lines labelled above the plot area."""
    if not plans:
        raise ValueError("token_bars needs at least one plan")
    rows = [(_("before"), plans[0].before)] + [
        (_("{name} (after)").format(name=names[k] if names else plans[k].strategy), p.after)
        for k, p in enumerate(plans)]
    return category_bars(rows, plans[0].budget)


def category_bars(rows: Sequence[tuple[str, Mapping[str, int]]], budget: Budget | None = None) -> go.Figure:
    """One stacked horizontal bar per ``(label, tokens by category)`` row, with the budget's limits.
    The x axis runs from 0 to past the largest of the bars and the limits. Built as one dict and
    validated once (adding traces, annotations and shapes one by one took 30 ms a figure)."""
    labels = [r[0] for r in rows]
    totals = [sum(r[1].values()) for r in rows]
    data = []
    for cat in _ORDER:
        xs = [r[1].get(cat, 0) for r in rows]
        if any(xs):
            data.append(dict(type="bar", name=_label(cat), orientation="h", marker=dict(color=CATEGORY_COLORS[cat]),
                             y=labels, x=xs,
                             hovertemplate=_("%{y}: %{x:,} tokens") + "<extra>" + _label(cat) + "</extra>"))
    top = max([*totals, budget.max_tokens if budget else 0, 1])
    annotations, shapes = [], []
    for label, total in zip(labels, totals):
        text = _("{total:,} ({share:.0%} of before)").format(total=total, share=total / totals[0]) \
            if label != labels[0] and totals[0] else f"{total:,}"
        # an opaque box: a total next to the limits would otherwise be struck through by their lines
        annotations.append(dict(x=total, y=label, text=text, showarrow=False, xanchor="left", xshift=4,
                                font=dict(color=TEXT_COLOR, size=12), bgcolor="rgba(255,255,255,0.92)", name="total"))
    if budget is not None:
        _limit_lines(shapes, annotations, budget, top * 1.3)
    legend_rows = 2
    layout = dict(barmode="stack", height=min(MAX_HEIGHT, 150 + 44 * len(rows) + 22 * legend_rows),
                  margin=dict(l=10, r=10, t=56, b=60 + 22 * legend_rows), legend=_LEGEND_BELOW,
                  xaxis=dict(title=dict(text=_("tokens")), range=[0, top * 1.3], rangemode="nonnegative",
                             tickformat="~s", fixedrange=False),
                  yaxis=dict(autorange="reversed", automargin=True), annotations=annotations)
    if shapes:
        layout["shapes"] = shapes
    return _figure(dict(data=data, layout=layout))


def _limit_lines(shapes: list[dict], annotations: list[dict], budget: Budget, axis_end: float) -> None:
    """The context limit and the prompt limit as vertical lines, labelled in the top margin (two
    rows, so the labels never sit on the bars nor on each other), each label running towards the
    middle of the axis from its line so that it stays inside the figure."""
    lines = ((budget.prompt_limit, _("prompt limit {n:,} ({reserve:.0%} reserved)").format(
        n=budget.prompt_limit, reserve=budget.reserve), "dash", 0),
        (budget.max_tokens, _("context limit {n:,}").format(n=budget.max_tokens), "solid", 1))
    for x, text, dash, row in lines:
        shapes.append(dict(type="line", x0=x, x1=x, yref="paper", y0=0, y1=1,
                           line=dict(color=TEXT_COLOR, dash=dash, width=1.5)))
        annotations.append(dict(x=x, yref="paper", y=1, yanchor="bottom", yshift=2 + 22 * row, text=text,
                                showarrow=False, xanchor="left" if x < axis_end / 2 else "right",
                                font=dict(color=TEXT_COLOR, size=12), bgcolor="rgba(255,255,255,0.9)", name="limit"))


def prompt_bar(by_category: Mapping[str, int], budget: Budget | None, label: str = N_("prompt")) -> go.Figure:
    """One stacked bar of a prompt's tokens by category against the budget's limits (the Token
    counts page), in the same colours as every other figure."""
    return category_bars([(_(label), by_category)], budget)


# ---------------------------------------------------------------- message timeline


def timeline(plan: Plan, roles: Sequence[str], tokens: Sequence[int]) -> go.Figure:
    """One bar per message: its size in tokens, coloured by the plan's action; hover shows the
    reason. Past ``TIMELINE_MAX_BARS`` messages, one stacked bar per group of neighbouring messages
    (their tokens by action)."""
    n = len(plan.actions)
    if n > TIMELINE_MAX_BARS:
        return _grouped_timeline(plan, tokens)
    data, reasons = [], local_all(plan.reasons)
    for action in _TIMELINE_ACTIONS:
        ks = [i for i in range(n) if plan.actions[i] == action]
        if not ks:
            continue
        data.append(dict(type="bar", name=_aw[action], x=ks, y=[tokens[i] for i in ks],
                         marker=dict(color=ACTION_COLORS[action]),
                         customdata=[[roles[i], reasons[i]] for i in ks],
                         hovertemplate=_("#%{x} %{customdata[0]}: %{y:,} tokens") + "<br>%{customdata[1]}<extra>"
                                       + _aw[action] + "</extra>"))
    return _figure(dict(data=data, layout=_timeline_layout(n, _("message"), "overlay")))


_TIMELINE_ACTIONS = ("keep", "summarize", "clear", "truncate", "drop")


def _grouped_timeline(plan: Plan, tokens: Sequence[int]) -> go.Figure:
    """Groups of ``size`` neighbouring messages, their tokens summed per action (numpy: a Python
    loop over 10,000 messages per action was a tenth of a rerun)."""
    n = len(plan.actions)
    size = math.ceil(n / TIMELINE_MAX_BARS)
    starts = list(range(0, n, size))
    ends = [min(s + size, n) - 1 for s in starts]
    x, ranges = [s + size / 2 - 0.5 for s in starts], np.array([starts, ends], dtype=np.int64).T
    group = np.arange(n) // size
    acts = np.asarray(plan.actions, dtype=object)
    toks = np.asarray(tokens, dtype=np.int64)
    data = []
    for action in _TIMELINE_ACTIONS:
        mask = acts == action
        if not mask.any():
            continue
        ys = np.bincount(group[mask], weights=toks[mask], minlength=len(starts)).astype(np.int64)
        if not ys.any():
            continue
        data.append(dict(type="bar", name=_aw[action], x=x, y=ys, width=size, marker=dict(color=ACTION_COLORS[action]),
                         customdata=ranges,  # arrays: plotly checks a list element by element
                         hovertemplate=_("messages %{customdata[0]}–%{customdata[1]}: %{y:,} tokens") + "<extra>"
                                       + _aw[action] + "</extra>"))
    title = _("message (bars of {size} messages)").format(size=size)
    return _figure(dict(data=data, layout=_timeline_layout(n, title, "stack")))


def _timeline_layout(n: int, title: str, barmode: str) -> dict[str, Any]:
    return dict(barmode=barmode, height=300, margin=dict(l=10, r=10, t=10, b=90), legend=_LEGEND_BELOW,
                bargap=0.05, xaxis=dict(title=dict(text=title), range=[-0.5, n - 0.5], tickmode="linear", tick0=0,
                                        dtick=int_dtick(n), tickformat=",d"),
                yaxis=dict(title=dict(text=_("tokens")), rangemode="nonnegative", tickformat="~s"))


# ---------------------------------------------------------------- replay heatmap


def replay_heatmap(matrix: Sequence[Sequence[str]], removed_at: Sequence[int | None] | None = None) -> go.Figure:
    """Turns (rows) by messages (columns), coloured by action, with a legend of the colours.
    With ``removed_at`` (the turn each message was removed at), a message removed at an earlier turn
    is greyed out, so each removal shows at the turn it happened. Past ``HEATMAP_MAX_ROWS`` turns or
    ``HEATMAP_MAX_COLUMNS`` messages, neighbouring turns or messages are grouped; a group's cell
    shows its most frequent action and its hover the share of each."""
    codes = _codes(matrix, removed_at)
    turns, messages = codes.shape
    rs, cs = math.ceil(turns / HEATMAP_MAX_ROWS) or 1, math.ceil(messages / HEATMAP_MAX_COLUMNS) or 1
    z, hover = _group(codes, rs, cs)
    words = [_aw[a] for a in _HEATMAP_ORDER]
    k = len(_HEATMAP_ORDER)
    x = list(range(messages)) if cs == 1 else [*range(0, messages, cs), messages]
    y = list(range(turns)) if rs == 1 else [*range(0, turns, rs), turns]
    fig = go.Figure(go.Heatmap(
        z=z, x=x, y=y, colorscale=_steps(_HEATMAP_ORDER), zmin=-0.5, zmax=k - 0.5, customdata=hover,
        hovertemplate="%{customdata}<extra></extra>", xgap=0, ygap=0,
        colorbar=dict(title=dict(text=_("action")), tickmode="array", tickvals=list(range(k)), ticktext=words,
                      lenmode="pixels", len=min(200, 40 + 22 * k), thickness=14, yanchor="top", y=1)))
    rows_shown = z.shape[0]
    fig.update_layout(height=min(MAX_HEIGHT, max(260, 110 + 14 * rows_shown)), margin=dict(l=10, r=10, t=10, b=10),
                      xaxis=dict(title=_("message") if cs == 1 else _("message (groups of {n})").format(n=cs),
                                 tickmode="linear", tick0=0, dtick=int_dtick(messages), tickformat=",d"),
                      yaxis=dict(title=_("turn") if rs == 1 else _("turn (groups of {n})").format(n=rs),
                                 tickmode="linear", tick0=0,
                                 dtick=int_dtick(turns, 10), tickformat=",d", autorange="reversed"))
    return fig


CALL_ROWS_SAMPLE = 4 * HEATMAP_MAX_ROWS
"""Past this many calls, the per-call heatmap reads an evenly spaced sample of calls before grouping."""


def call_heatmap(replay: Any, breaks: Sequence[Any] = ()) -> go.Figure:
    """A call-by-call replay (``ctxlab.replay.Replay``) as a heatmap: one row per model call and a
    column per message, coloured by what the message was at that call (kept, cleared, truncated,
    summarized or dropped at that call, removed earlier, not arrived yet). Past
    ``HEATMAP_MAX_ROWS`` calls a row is a user turn (its last call) when the turns fit, else
    neighbouring calls are grouped; past ``HEATMAP_MAX_COLUMNS`` messages, neighbouring messages.
    With ``breaks`` (``ctxlab.cache_breaks.cache_breaks`` of the replay), a marker left of the first
    message on each row holding a call whose prompt broke the prompt cache (see ``_break_marks``)."""
    calls, n = replay.calls, replay.size
    by_turn = False
    if len(calls) <= HEATMAP_MAX_ROWS:
        rows, unit = [c.number for c in calls], _("call")
    elif 1 < replay.turns <= HEATMAP_MAX_ROWS:
        last: dict[int, int] = {}
        for c in calls:
            last[c.turn] = c.number
        rows, unit, by_turn = [last[t] for t in sorted(last)], _("turn (its last call)"), True
    else:
        step = max(1, math.ceil(len(calls) / CALL_ROWS_SAMPLE))
        rows = list(range(0, len(calls), step))
        unit = _("call") if step == 1 else _("call (every {step}th)").format(step=step)
    codes = replay.codes(_HEATMAP_ORDER, rows)
    removed = _HEATMAP_ORDER.index("removed")
    at = np.array([-1 if r is None else r for r in replay.removed_at], dtype=np.int64)
    if codes.size:
        later = (np.array(rows)[:, None] > at[None, :]) & (at[None, :] >= 0)
        codes[later] = removed
    rs, cs = math.ceil(len(rows) / HEATMAP_MAX_ROWS) or 1, math.ceil(n / HEATMAP_MAX_COLUMNS) or 1
    z, hover = _group(codes, rs, cs)
    if rs == 1 and cs == 1:
        turn_of = {c.number: c.turn for c in calls}
        hover = [[_hover_cell(_aw[_HEATMAP_ORDER[c]], i, r, turn_of[r], by_turn, calls[r].over_limit)
                  for i, c in enumerate(codes[k])] for k, r in enumerate(rows)]
    words = [_aw[a] for a in _HEATMAP_ORDER]
    k = len(_HEATMAP_ORDER)
    x = list(range(n)) if cs == 1 else [*range(0, n, cs), n]
    y = list(range(len(rows))) if rs == 1 else [*range(0, len(rows), rs), len(rows)]
    fig = go.Figure(go.Heatmap(
        z=z, x=x, y=y, colorscale=_steps(_HEATMAP_ORDER), zmin=-0.5, zmax=k - 0.5, customdata=hover,
        hovertemplate="%{customdata}<extra></extra>", xgap=0, ygap=0,
        colorbar=dict(title=dict(text=_("at that call")), tickmode="array", tickvals=list(range(k)), ticktext=words,
                      lenmode="pixels", len=min(200, 40 + 22 * k), thickness=14, yanchor="top", y=1)))
    over = [j for j, r in enumerate(rows) if calls[r].over_limit] if rs == 1 else []
    for j in over:  # a call whose prompt is over the limit: a red mark at the row's left
        fig.add_shape(type="line", x0=-0.5, x1=-0.5, y0=j - 0.5, y1=j + 0.5, xref="x", yref="y",
                      line=dict(color="#D62728", width=6))
    _break_marks(fig, breaks, rows, rs, cs, per_call=rs == 1 and rows == list(range(len(calls))))
    ticks = y[::max(1, int_dtick(len(y), 10))]
    label = (lambda v: f"{v:,}") if by_turn or rs > 1 else \
        (lambda v: f"{rows[v]:,}" if v < len(rows) else f"{v:,}")
    fig.update_layout(height=min(MAX_HEIGHT, max(260, 110 + 14 * z.shape[0])), margin=dict(l=10, r=10, t=10, b=10),
                      xaxis=dict(title=_("message") if cs == 1 else _("message (groups of {n})").format(n=cs),
                                 tickmode="linear", tick0=0, dtick=int_dtick(n), tickformat=",d"),
                      yaxis=dict(title=unit if rs == 1 else _("{unit} (groups of {n})").format(unit=unit, n=rs),
                                 tickmode="array",
                                 tickvals=ticks, ticktext=[label(v) for v in ticks], autorange="reversed"))
    return fig


def _break_marks(fig: go.Figure, breaks: Sequence[Any], rows: Sequence[int], rs: int, cs: int,
                 per_call: bool) -> None:
    """One marker left of the first message per shown row that holds a call whose prompt broke the
    prompt cache: per call when every call has its row, else per turn, sampled call or group of rows
    (a break goes to the first row at or after its call, or the last row; the hover counts the breaks it
    stands for),
    so a 10,000-message replay with thousands of breaks draws at most one marker a row."""
    per: dict[int, list[Any]] = {}
    if not breaks or not rows:
        return
    for b in breaks:
        per.setdefault(min(bisect.bisect_left(rows, b.call), len(rows) - 1) // rs, []).append(b)
    keys = sorted(per)
    ys = keys if rs == 1 else [g * rs + min(rs, len(rows) - g * rs) / 2 for g in keys]
    fig.add_scatter(x=[-1.5 * cs] * len(keys), y=ys, mode="markers", name=_("prompt cache broke"),
                    marker=dict(symbol="triangle-right", size=9, color=TEXT_COLOR),
                    customdata=[_break_hover(per[k], per_call) for k in keys],
                    hovertemplate="%{customdata}<extra></extra>", showlegend=True)
    fig.update_layout(legend=dict(orientation="h", x=0, y=1, yanchor="bottom"), margin=dict(t=30))


def _break_hover(breaks: Sequence[Any], per_call: bool) -> str:
    """The hover of one break marker: the call and its cause, or how many calls broke the cache there."""
    from .cache_breaks import CAUSE_WORDS
    lost = sum(b.tokens_lost for b in breaks)
    if per_call:
        b = breaks[0]
        return _("call {call}: the prompt cache broke ({cause}), {n:,} cached tokens lost").format(
            call=b.call, cause=_(CAUSE_WORDS[b.cause]), n=lost)
    return ngettext("{k:,} call broke the prompt cache here (calls {first:,}-{last:,}), {n:,} cached tokens lost",
                    "{k:,} calls broke the prompt cache here (calls {first:,}-{last:,}), {n:,} cached tokens lost",
                    len(breaks)).format(k=len(breaks), first=breaks[0].call, last=breaks[-1].call, n=lost)


def _hover_cell(word: str, message: int, call: int, turn: int, by_turn: bool, over: bool) -> str:
    """The hover text of one cell of the per-call heatmap."""
    if by_turn:
        return _("turn {turn} (its last call, {call}), message {i}: {word}").format(
            turn=turn, call=call, i=message, word=word)
    if over:
        return _("call {call} (turn {turn}, over the limit), message {i}: {word}").format(
            call=call, turn=turn, i=message, word=word)
    return _("call {call} (turn {turn}), message {i}: {word}").format(call=call, turn=turn, i=message, word=word)


LOG_SPREAD = 30
"""When one line's largest prompt is more than this many times another's, ``prompt_per_call`` draws
prompt tokens on a log scale: on a linear one the smaller line lies flat on the axis, under the
limit's dashed line (at 10,000 messages, a trim after START sends 2M-token prompts beside a trim
before every call that stays under 7,000)."""


def prompt_per_call(replays: Mapping[str, Any], limit: int) -> go.Figure:
    """Prompt tokens of every model call, one line per replay (label -> ``ctxlab.replay.Replay``),
    the prompt limit as a dashed line, and each call over it marked with a red dot; on a log scale
    when the lines' largest prompts differ by more than ``LOG_SPREAD`` times."""
    fig = go.Figure()
    colors = ("#4C78A8", "#F58518", "#54A24B", "#B279A2")
    n = 0
    peaks = [max((c.tokens_after for c in rp.calls), default=0) for rp in replays.values()]
    log = len(peaks) > 1 and min(peaks) > 0 and max(peaks) > LOG_SPREAD * min(peaks)
    for k, (label, rp) in enumerate(replays.items()):
        xs = [c.number for c in rp.calls]
        n = max(n, len(xs))
        fig.add_scatter(x=xs, y=[c.tokens_after for c in rp.calls], mode="lines", name=label,
                        line=dict(color=colors[k % len(colors)], width=2),
                        hovertemplate=label + "<br>" + _("call %{x}: %{y:,} tokens") + "<extra></extra>")
        over = [c for c in rp.calls if c.over_limit]
        if over:
            fig.add_scatter(x=[c.number for c in over], y=[c.tokens_after for c in over], mode="markers",
                            marker=dict(color="#D62728", size=6), showlegend=True,
                            name=_("{label}: over the limit").format(label=label),
                            hovertemplate=label + "<br>" + _("call %{x}: %{y:,} tokens, over the limit")
                            + "<extra></extra>")
    fig.add_hline(y=limit, line_dash="dash", line_color=TEXT_COLOR,
                  annotation_text=_("limit {n:,}").format(n=limit), annotation_position="top left")
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=10, b=90), legend=_LEGEND_BELOW,
                      xaxis=dict(title=_("model call"), tickmode="linear", tick0=0, dtick=int_dtick(max(n, 1)),
                                 tickformat=",d"),
                      yaxis=dict(title=_("prompt tokens (log scale)"), type="log", tickformat="~s") if log else
                      dict(title=_("prompt tokens"), rangemode="nonnegative", tickformat="~s"))
    return fig


def _codes(matrix: Sequence[Sequence[str]], removed_at: Sequence[int | None] | None) -> np.ndarray:
    index = {a: k for k, a in enumerate(_HEATMAP_ORDER)}
    removed = index["removed"]
    codes = np.array([[index.get(a, removed) for a in row] for row in matrix], dtype=np.int8).reshape(len(matrix), -1)
    if removed_at is not None and codes.size:
        at = np.array([-1 if r is None else r for r in removed_at])
        later = (np.arange(codes.shape[0])[:, None] > at[None, :]) & (at[None, :] >= 0)
        codes[later] = removed
    return codes


def _group(codes: np.ndarray, rs: int, cs: int) -> tuple[np.ndarray, list[list[str]]]:
    """The most frequent code per group of ``rs`` turns by ``cs`` messages, and the hover text."""
    turns, messages = codes.shape
    if rs == cs == 1:
        words = [_aw[a] for a in _HEATMAP_ORDER]
        return codes, [[_("turn {t}, message {i}: {word}").format(t=t, i=i, word=words[c]) for i, c in enumerate(row)]
                       for t, row in enumerate(codes)]
    k = len(_HEATMAP_ORDER)
    tb, mb = math.ceil(turns / rs), math.ceil(messages / cs)
    padded = np.full((tb * rs, mb * cs), -1, dtype=np.int8)
    padded[:turns, :messages] = codes
    blocks = padded.reshape(tb, rs, mb, cs)
    counts = np.stack([(blocks == c).sum(axis=(1, 3)) for c in range(k)], axis=-1)  # tb x mb x k
    z = counts.argmax(axis=-1)
    sizes = counts.sum(axis=-1)
    hover = []
    for r in range(tb):
        t0, t1 = r * rs, min((r + 1) * rs, turns) - 1
        line = []
        for c in range(mb):
            m0, m1 = c * cs, min((c + 1) * cs, messages) - 1
            shares = ", ".join(f"{counts[r, c, j] / sizes[r, c]:.0%} {_aw[_HEATMAP_ORDER[j]]}"
                               for j in np.argsort(-counts[r, c])[:3] if counts[r, c, j])
            line.append(_("turns {t0}–{t1}, messages {m0}–{m1}: {shares}").format(t0=t0, t1=t1, m0=m0, m1=m1,
                                                                                   shares=shares))
        hover.append(line)
    return z, hover


def _steps(order: Sequence[str]) -> list[list[Any]]:
    """A discrete colour scale: one flat band per action."""
    n = len(order)
    out: list[list[Any]] = []
    for k, name in enumerate(order):
        out.append([k / n, ACTION_COLORS[name]])
        out.append([(k + 1) / n, ACTION_COLORS[name]])
    return out


# ---------------------------------------------------------------- tool retrieval


def similarity_bars(rows: Sequence[Mapping[str, Any]], threshold: float | None) -> go.Figure:
    """Selected tools with their similarity, coloured by why they are there; the threshold as a line.
    ``rows``: dicts with ``name``, ``similarity`` and ``reason``."""
    colors = {"similarity": "#4C78A8", "expansion": "#F58518", "always": "#54A24B"}
    names = {"similarity": N_("similarity"), "expansion": N_("expansion"), "always": N_("always")}
    fig = go.Figure()
    for reason, color in colors.items():
        rs = [r for r in rows if r["reason"] == reason]
        if rs:
            fig.add_bar(name=_(names[reason]), orientation="h", marker_color=color, y=[r["name"] for r in rs],
                        x=[r["similarity"] or 0 for r in rs],
                        hovertemplate="%{y}: %{x:.3f}<extra>" + _(names[reason]) + "</extra>")
    if threshold is not None:
        fig.add_vline(x=threshold, line_dash="dash", annotation_text=_("threshold {t:.2f}").format(t=threshold))
    fig.update_layout(height=min(MAX_HEIGHT, 120 + 26 * max(len(rows), 1)), margin=dict(l=10, r=10, t=30, b=10),
                      xaxis_title=_("cosine similarity"),
                      xaxis_range=[min([0.0, *(r["similarity"] or 0 for r in rows)]), 1], legend_orientation="h")
    fig.update_yaxes(autorange="reversed")
    return fig


def sweep_chart(points: Sequence[Mapping[str, Any]], x: str, y: str, y2: str | None = None) -> go.Figure:
    """A line chart of a retrieval sweep (recall against k, tokens against threshold, ...)."""
    fig = go.Figure()
    fig.add_scatter(x=[p[x] for p in points], y=[p[y] for p in points], mode="lines+markers", name=_(y))
    if y2:
        fig.add_scatter(x=[p[x] for p in points], y=[p[y2] for p in points], mode="lines+markers", name=_(y2),
                        yaxis="y2")
        fig.update_layout(yaxis2=dict(overlaying="y", side="right", title=_(y2)))
    fig.update_layout(height=300, margin=dict(l=10, r=10, t=10, b=10), xaxis_title=_(x), yaxis_title=_(y),
                      legend_orientation="h")
    return fig


__all__ = ["ACTION_COLORS", "CALL_ROWS_SAMPLE", "CATEGORY_COLORS", "CATEGORY_NAMES", "MAX_HEIGHT",
           "TEXT_COLOR", "TIMELINE_MAX_BARS", "call_heatmap", "category_bars", "int_dtick", "prompt_bar",
           "prompt_per_call", "replay_heatmap", "similarity_bars", "sweep_chart", "timeline", "token_bars"]
