"""What the AppTest files share: opening a page, reading a metric, setting a widget by key."""
from __future__ import annotations

import os
from typing import Any

from streamlit.testing.v1 import AppTest

from ..conftest import ROOT

APP_TIMEOUT = float(os.environ.get("CTXLAB_TEST_APP_TIMEOUT", "600"))
"""Seconds a page's script run may take before AppTest gives up. An upper bound only, never reached
by a passing run on a quiet machine (the slowest takes about a minute): generous, so that a loaded
machine makes a test slow, not failed."""

WIDGET_KINDS = ("slider", "checkbox", "multiselect", "radio", "number_input", "selectbox", "text_input")


def open_page(page: str, monkeypatch, timeout: int = 60, state: dict[str, Any] | None = None) -> AppTest:
    """Run ``pages/<page>`` from the repository root, once (with ``state`` in its session state
    first), and check it raised nothing."""
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=max(timeout, APP_TIMEOUT))
    for k, v in (state or {}).items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def open_pasted(page: str, text: str, monkeypatch, lang: str = "en") -> AppTest:
    """Run ``pages/<page>`` in ``lang`` with ``text`` pasted in the sidebar and used, as a user would."""
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=APP_TIMEOUT)
    at.query_params["lang"] = lang
    at.run()
    at.radio(key="source").set_value("paste").run()
    at.text_area(key="paste_text").input(text).run()
    at.button(key="use_paste").click().run()
    return at


def open_page_without_conversation(page: str, monkeypatch, timeout: int = 60) -> AppTest:
    """Run ``pages/<page>`` as a newcomer who chose Paste and has pasted nothing yet."""
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=max(timeout, APP_TIMEOUT))
    at.session_state["source"] = "paste"
    at.run()
    return at


def metric(at: AppTest, label: str) -> str:
    """The value shown by the metric called ``label``."""
    return next(m.value for m in at.metric if m.label == label)


def set_widget(at: AppTest, key: str, value: Any) -> None:
    """Set the widget with ``key`` (whatever its kind), rerun, and check nothing raised."""
    for kind in WIDGET_KINDS:
        found = [w for w in getattr(at, kind) if w.key == key]
        if found:
            widget = found[0]
            (widget.input(value) if kind == "text_input" else widget.set_value(value)).run()
            assert not at.exception, at.exception
            return
    raise AssertionError(f"no widget with key {key}")


def column_config(table: Any) -> dict[str, Any]:
    """The column configuration a dataframe element sends the browser (labels, widths, formats)."""
    import json
    return json.loads(table.proto.columns or "{}")


def chart_spec(at: AppTest, k: int = 0) -> dict[str, Any]:
    """The plotly figure of the k-th chart, as the browser gets it."""
    import json
    return json.loads(at.get("plotly_chart")[k].proto.spec)


def run_tune_sweep(at: AppTest, timeout: float = 120.0) -> AppTest:
    """Click Tune's "Run the sweep" and rerun until the sweep (its own process) has ended, as the
    browser's once-a-second poll would; check nothing raised."""
    import time
    at.button(key="tune_run").click().run()
    deadline = time.monotonic() + timeout
    while "tune_job" in at.session_state and time.monotonic() < deadline:
        time.sleep(0.3)
        at.run()
    assert "tune_job" not in at.session_state, "the sweep did not end in time"
    assert not at.exception, at.exception
    return at
