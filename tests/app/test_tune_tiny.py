"""Tune on a tiny conversation: no assistant message uses an earlier fact, so
needed_recall is undefined for every point, and the recommendation is made on fit and cost alone. Before: an empty Pareto figure with an axis from -1
to 6, advice ("lower the recall level, widen the ranges...") that cannot help, "no point of
sliding_window varying buffer_ratio" though there were six, and a label shown with its Markdown
escapes ("tau\\_concat\\_10k"). And the measures a pick is made on come first in the table."""
from __future__ import annotations

import json

from ctxlab.figures_tune import FIRST_COLUMNS

from .helpers import open_page, run_tune_sweep

TINY = json.dumps({"messages": [{"role": "system", "content": "You are helpful."},
                                {"role": "user", "content": "Hello there, can you help me today?"},
                                {"role": "assistant", "content": "Of course, what do you need?"}]})


def _tiny(monkeypatch):
    at = open_page("tune.py", monkeypatch, state={
        "tune_set": "current", "source": "paste", "paste_text": TINY, "conversation_text": TINY,
        "conversation_label": "upload tau_concat_10k.json"})
    return run_tune_sweep(at)


def _texts(elements) -> list[str]:
    return [e.value for e in elements]


def test_a_tiny_conversation_says_why_there_is_no_pareto_figure_and_no_advice_that_cannot_help(monkeypatch):
    at = _tiny(monkeypatch)
    assert not at.get("plotly_chart") or all("tune_pareto" != getattr(c, "key", None) for c in at.get("plotly_chart"))
    infos = " ".join(_texts(at.info)).replace("\\", "")
    assert "No Pareto figure" in infos and "needed_recall is undefined for every point" in infos
    warnings = " ".join(_texts(at.warning)).replace("\\", "")
    assert "lower the recall level" not in warnings
    # nothing can be lost, so the pick is made on fit and cost, and the page says so (a sweep over
    # sessions the recall cannot judge still recommends a point)
    assert at.success and "serves n/a of the needed facts" in at.success[0].value.replace("\\", "")
    captions = " ".join(_texts(at.caption)).replace("\\", "")
    assert "the pick is made on fit and cost alone" in captions


def test_the_sensitivity_shows_a_measure_the_points_have(monkeypatch):
    at = _tiny(monkeypatch)
    assert at.selectbox(key="tune_sens_metric").value != "needed_recall"
    assert "needed_recall" not in at.selectbox(key="tune_sens_metric").options
    assert not [i for i in _texts(at.info) if "has no point of" in i.replace("\\", "")]
    assert at.get("plotly_chart"), "the sensitivity figure is drawn"


def test_the_label_is_escaped_once(monkeypatch):
    at = _tiny(monkeypatch)
    caption = next(c for c in _texts(at.caption) if "concat" in c)
    assert "tau\\_concat\\_10k" in caption and "\\\\_" not in caption  # one escape: it reads tau_concat_10k


def test_the_measures_a_pick_is_made_on_come_first(monkeypatch):
    at = run_tune_sweep(open_page("tune.py", monkeypatch))
    columns = list(next(d.value for d in at.dataframe if "needed_recall" in d.value.columns).columns)
    assert columns[:2 + len(FIRST_COLUMNS)] == ["#", "point", *FIRST_COLUMNS]
