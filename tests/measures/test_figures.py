"""The figures stay legible at both ends of the sizes a user brings: a 3-message
conversation of a few hundred tokens and a 10,000-message one of about 2M tokens. Checked on the
figure objects: axes start at 0 and hold every bar and limit, limit labels sit above the plot area
(not on the bars), every bar has its total written, legends sit below the axis title, heights are
capped, ticks are whole numbers, the replay heatmap has a colour legend and groups past a size."""
from __future__ import annotations

import json

import numpy as np
import pytest

import ctxlab
from ctxlab import figures
from ctxlab.compare import ACTION_WORDS
from ctxlab.generate import generate
from ctxlab.strategies import get_strategy, prepare

from ..builders import assistant, system, user

MODEL = "gpt-4o"


@pytest.fixture(scope="module")
def tiny():
    """3 messages, a few dozen tokens, the app's default budget."""
    conv = ctxlab.Conversation(messages=(system(), user("Where is order KC-1?"), assistant("It shipped.")))
    view, budget = prepare(conv, MODEL, context_limit=16_000)
    return view, get_strategy("tool_rounds").apply(view, budget)


@pytest.fixture(scope="module")
def huge():
    """10,001 messages, about 2M tokens (a ~7 MB upload), the app's default budget."""
    conv = generate("ecommerce", turns=500, rounds_per_turn=9, result_tokens=300, seed=0)
    view, budget = prepare(conv, MODEL, context_limit=16_000)
    return view, get_strategy("tool_rounds").apply(view, budget)


def _spec(fig) -> dict:
    """The figure as the browser gets it."""
    return json.loads(fig.to_json())


@pytest.fixture(params=["tiny", "huge"])
def case(request):
    return request.getfixturevalue(request.param)


def test_the_two_ends_are_the_sizes_the_issue_names(tiny, huge):
    assert len(tiny[0]) == 3 and tiny[1].tokens_before < 500
    assert len(huge[0]) >= 10_000 and 1_900_000 < huge[1].tokens_before < 2_300_000


def test_token_bars_axis_starts_at_zero_and_holds_every_bar_and_limit(case):
    view, plan = case
    fig = _spec(figures.token_bars([plan], ["Newest tool rounds"]))
    lo, hi = fig["layout"]["xaxis"]["range"]
    assert lo == 0  # the 5 MB upload drew an axis from -1M
    assert hi >= max(plan.tokens_before, plan.tokens_after, plan.budget.max_tokens)
    assert fig["layout"]["height"] <= figures.MAX_HEIGHT


def test_every_bar_has_its_total_written_at_its_end_so_a_tiny_bar_still_reads(case):
    view, plan = case
    fig = _spec(figures.token_bars([plan], ["Newest tool rounds"]))
    totals = {a["y"]: a for a in fig["layout"]["annotations"] if a.get("name") == "total"}
    assert set(totals) == {"before", "Newest tool rounds (after)"}
    assert totals["before"]["x"] == plan.tokens_before and totals["before"]["text"].startswith(f"{plan.tokens_before:,}")
    after = totals["Newest tool rounds (after)"]
    assert after["x"] == plan.tokens_after and after["text"].startswith(f"{plan.tokens_after:,}")
    assert after["xanchor"] == "left"  # written beside the bar, not on it
    for a in totals.values():  # a total beside a limit line sits on an opaque box, not struck through
        alpha = float(a["bgcolor"].rsplit(",", 1)[1].rstrip(")")) if a.get("bgcolor", "").startswith("rgba") else \
            (1.0 if a.get("bgcolor") else 0.0)
        assert alpha >= 0.9


def test_limit_labels_sit_above_the_bars_in_a_dark_colour_and_apart(case):
    view, plan = case
    fig = _spec(figures.token_bars([plan]))
    limits = [a for a in fig["layout"]["annotations"] if a.get("name") == "limit"]
    assert {a["text"].split(" ")[0] for a in limits} == {"prompt", "context"}
    for a in limits:
        assert a["yref"] == "paper" and a["y"] >= 1 and a["yanchor"] == "bottom"  # in the top margin
        assert a["font"]["color"] == figures.TEXT_COLOR
    assert len({a["yshift"] for a in limits}) == 2  # two rows: the labels never overlap each other
    end = fig["layout"]["xaxis"]["range"][1]
    for a in limits:  # each label runs from its line towards the middle, so it stays inside the figure
        assert a["xanchor"] == ("left" if a["x"] < end / 2 else "right")
    assert fig["layout"]["margin"]["t"] >= max(a["yshift"] for a in limits) + 20


def test_the_legend_sits_below_the_axis_title_not_on_it(case):
    view, plan = case
    layout = _spec(figures.token_bars([plan]))["layout"]
    legend = layout["legend"]
    assert (legend["orientation"], legend["yref"], legend["y"], legend["yanchor"]) == ("h", "container", 0, "bottom")
    # the bottom margin holds the tick labels and the axis title (about 50 px) above the legend rows
    assert layout["margin"]["b"] >= 50 + 2 * 20


def test_token_counts_bar_uses_the_same_colours_as_every_figure(tiny):
    view, plan = tiny
    fig = _spec(figures.prompt_bar(plan.before, plan.budget))
    for trace in fig["data"]:
        assert trace["marker"]["color"] == figures.CATEGORY_COLORS[trace["name"].replace(" ", "_")]
    assert fig["layout"]["xaxis"]["range"][0] == 0


def test_timeline_has_whole_number_ticks_and_groups_past_a_size(case):
    view, plan = case
    fig = _spec(figures.timeline(plan, view.roles, view.tokens))
    x = fig["layout"]["xaxis"]
    assert x["tickmode"] == "linear" and x["tick0"] == 0 and x["dtick"] >= 1 and float(x["dtick"]).is_integer()
    assert fig["layout"]["height"] <= figures.MAX_HEIGHT
    bars = max(len(t["x"]) if isinstance(t["x"], list) else len(t["x"]["bdata"]) for t in fig["data"])
    assert bars <= figures.TIMELINE_MAX_BARS or len(view) <= figures.TIMELINE_MAX_BARS
    drawn = sum(np.sum(figures_y(t)) for t in fig["data"])
    assert drawn == sum(view.tokens)  # grouping loses no token


def figures_y(trace: dict) -> np.ndarray:
    """A trace's y values (plotly may send them as a typed array)."""
    y = trace["y"]
    if isinstance(y, dict):
        import base64
        return np.frombuffer(base64.b64decode(y["bdata"]), dtype=np.dtype(y["dtype"]))
    return np.asarray(y)


@pytest.mark.parametrize("turns, messages", [(2, 3), (249, 1_200), (500, 10_001)])
def test_replay_heatmap_is_capped_has_whole_number_ticks_and_a_colour_legend(turns, messages):
    matrix = [["keep" if i <= t * (messages // turns) else "future" for i in range(messages)] for t in range(turns)]
    fig = figures.replay_heatmap(matrix)
    layout = _spec(fig)["layout"]
    assert layout["height"] <= figures.MAX_HEIGHT  # 249 turns made a 7,263-pixel page
    for axis in ("xaxis", "yaxis"):
        assert layout[axis]["tickmode"] == "linear" and layout[axis]["tick0"] == 0
        assert layout[axis]["dtick"] >= 1 and float(layout[axis]["dtick"]).is_integer()  # no -0.5 / 0.5 / 1.5
    heat = fig.data[0]
    assert heat.showscale is not False and list(heat.colorbar.ticktext)[:5] == [
        ACTION_WORDS[a] for a in ("keep", "summarize", "clear", "truncate", "drop")]
    z = np.asarray(heat.z)
    assert z.shape[0] <= figures.HEATMAP_MAX_ROWS and z.shape[1] <= figures.HEATMAP_MAX_COLUMNS


def test_a_grouped_heatmap_cell_shows_the_most_frequent_action_and_the_shares():
    matrix = [["drop"] * 3 + ["keep"] * 997 for _ in range(400)]  # groups of 4 turns x 4 messages
    fig = figures.replay_heatmap(matrix)
    heat = fig.data[0]
    z = np.asarray(heat.z)
    order = list(heat.colorbar.ticktext)
    assert order[z[0][0]] == "dropped"  # 3 dropped and 1 kept per row of the first group
    assert heat.customdata[0][0].startswith("turns 0–3, messages 0–3: ")
    assert "75% dropped" in heat.customdata[0][0] and "25% kept" in heat.customdata[0][0]
    assert order[z[0][1]] == "kept"


def test_a_message_removed_earlier_is_greyed_after_its_turn():
    matrix = [["keep", "keep", "keep"], ["keep", "drop", "keep"], ["keep", "drop", "keep"]]
    heat = figures.replay_heatmap(matrix, removed_at=[None, 1, None]).data[0]
    words = list(heat.colorbar.ticktext)
    assert [words[c] for c in np.asarray(heat.z)[:, 1]] == ["kept", "dropped", "removed earlier"]


def test_figures_built_without_plotlys_checks_equal_the_checked_ones(case):
    """token_bars and timeline skip plotly's per-value checks (ctxlab.figures._figure): the same
    spec checked by plotly raises nothing and gives the same figure."""
    import plotly.graph_objects as go
    view, plan = case
    for fig in (figures.token_bars([plan], ["Newest tool rounds"]), figures.timeline(plan, view.roles, view.tokens),
                figures.prompt_bar(plan.before, plan.budget)):
        assert json.loads(go.Figure(fig.to_dict()).to_json()) == json.loads(fig.to_json())


BREAK_MARK = "prompt cache broke"


def _break_marks(fig):
    return [t for t in fig.data if t.name == BREAK_MARK]


def test_the_replay_heatmap_marks_each_call_whose_prompt_broke_the_cache_at_the_left():
    from ctxlab.cache_breaks import cache_breaks
    from ctxlab.replay import replay
    from ctxlab.strategies import Budget
    from .test_cache_breaks import TRACE
    conv = ctxlab.load(TRACE)
    r = replay(conv, get_strategy("observation_masking", window=3), Budget(32_000), model=MODEL)
    found = cache_breaks(r, conv, model=MODEL)
    assert len(r.calls) <= figures.HEATMAP_MAX_ROWS and len(found) >= 8  # one row per call
    assert not _break_marks(figures.call_heatmap(r))                     # no breaks given: no mark
    (mark,) = _break_marks(figures.call_heatmap(r, found))
    assert list(mark.y) == [b.call for b in found]                       # one marker per break call, on its row
    assert all(x < -0.5 for x in mark.x)                                  # left of the first message
    assert f"call {found[0].call}:" in mark.customdata[0] and f"{found[0].tokens_lost:,}" in mark.customdata[0]
    none = replay(conv, get_strategy("none"), Budget(32_000), model=MODEL)
    assert not _break_marks(figures.call_heatmap(none, cache_breaks(none, conv, model=MODEL)))


def test_the_break_marks_stay_one_per_shown_row_at_ten_thousand_messages():
    from ctxlab.cache_breaks import cache_breaks
    from ctxlab.replay import replay
    conv = generate("ecommerce", turns=500, rounds_per_turn=9, result_tokens=300, seed=0)
    view, budget = prepare(conv, MODEL, context_limit=16_000)
    r = replay(view, get_strategy("tool_rounds"), budget)
    found = cache_breaks(r, conv, model=MODEL)
    fig = figures.call_heatmap(r, found)
    (mark,) = _break_marks(fig)
    rows = fig.data[0].z.shape[0]
    assert len(found) > 1_000 and 0 < len(mark.y) <= rows       # thousands of breaks, at most one marker a row
    assert len(set(mark.y)) == len(mark.y)
    shown = sum(int(t.replace(",", "").split(" ")[0]) for t in mark.customdata)
    assert shown == len(found)                                   # every break is counted in some marker's hover
