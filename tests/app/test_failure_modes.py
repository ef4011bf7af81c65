"""The Failure Modes page in AppTest: each lesson marks its finding's messages, one click applies
the mitigation and the before/after shows it worked; quarantine draws sub-agent bars, tool loadout
lists the tools before and after; every lesson runs on the sidebar's conversation, a generated one
with a planted failure included; and the guided first visit shows, dismisses and reopens."""
from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from ..conftest import ROOT
from .helpers import APP_TIMEOUT, chart_spec, metric, open_page, set_widget

PAGE = "failure_modes.py"


@pytest.fixture(autouse=True)
def _own_data_dir(tmp_path, monkeypatch):
    """Each test builds its tool index in its own data directory."""
    monkeypatch.setenv("CTXLAB_DATA_DIR", str(tmp_path))


def marked_messages(at: AppTest) -> list[int]:
    """Rows of the message table carrying the selected finding's badge."""
    df = next(t for t in at.dataframe if "finding" in t.value.columns).value
    return [int(i) for i, codes in zip(df["#"], df["finding"]) if "selected" in codes]


def timeline_marks(at: AppTest) -> list[int]:
    """Messages the timeline figure marks with the finding triangle."""
    spec = next(chart_spec(at, k) for k in range(len(at.get("plotly_chart")))
                if "Tokens per message" in json.dumps(chart_spec(at, k)["layout"].get("title", "")))
    return [int(x) for trace in spec["data"] if trace.get("name") == "finding" for x in trace["x"]]


def apply(at: AppTest) -> None:
    at.button(key="fm_apply").click().run()
    assert not at.exception, at.exception


def count(value: str) -> int:
    return int(value.replace(",", ""))


@pytest.mark.parametrize("lesson, code, messages, gone", [
    ("poisoning", "mistyped_id", [2, 3, 4, 13], "mistyped_id"),
    ("distraction", "oversized_results", [7, 15, 23], "oversized_results"),
    # the loadout sends one tool of each look-alike pair: the switch between them goes with the catalog
    ("confusion", "lookalike_switch", [6, 7, 8], "lookalike_switch"),
    ("clash", "conflicting_values", [3, 5], "conflicting_values"),
])
def test_each_lesson_marks_its_finding_and_the_mitigation_removes_it(monkeypatch, lesson, code, messages, gone):
    at = open_page(PAGE, monkeypatch, timeout=120)
    set_widget(at, "fm_lesson", lesson)
    assert code in at.selectbox(key="fm_finding").value
    assert marked_messages(at) == messages
    assert timeline_marks(at) == messages
    apply(at)
    title = f"{lesson.capitalize()} findings"
    before = int(next(m.help for m in at.metric if m.label == title).split(": ")[1])
    after = int(metric(at, title))
    assert after < before
    tokens = next(m for m in at.metric if m.label == "Tokens")
    assert count(tokens.value) < count(tokens.help.split(": ")[1])
    assert any(gone in s.value.replace("\\", "") for s in at.success), "the finding is listed as gone"
    served = metric(at, "Needed facts served")
    assert served.endswith("%")


def test_findings_left_after_a_prune_point_at_the_messages_they_pointed_at_before(monkeypatch):
    """Pruning message 2's tool round renumbers the messages after it; the findings that remain are
    shown as still there, at their original numbers, not as gone and new."""
    at = open_page(PAGE, monkeypatch, timeout=120)
    apply(at)  # the poisoning lesson's first finding: drop the round that used the mistyped id
    still = " ".join(w.value.replace("\\", "") for w in at.warning if w.value.startswith("Still there"))
    assert "contradicted_claim (messages 4, 12)" in still
    assert "repeated_failing_call (messages 7, 8, 9, 10)" in still
    assert not [c for c in at.caption if c.value.startswith("New after the mitigation")]


def test_quarantine_draws_one_bar_per_subagent_against_the_shared_context(monkeypatch):
    at = open_page(PAGE, monkeypatch, timeout=120)
    set_widget(at, "fm_lesson", "quarantine")
    apply(at)
    bars = next(chart_spec(at, k) for k in range(len(at.get("plotly_chart")))
                if "Tokens per model call" in json.dumps(chart_spec(at, k)["layout"].get("title", "")))
    names, values = bars["data"][0]["y"], bars["data"][0]["x"]
    assert names[0] == "one shared context" and names[1:] == ["sub-agent 1", "sub-agent 2", "sub-agent 3"]
    assert max(values[1:]) < values[0]
    assert count(metric(at, "Tokens (largest call)")) == max(values[1:])
    table = next(t for t in at.dataframe if "sub-agent" in t.value.columns).value
    assert len(table) == 3


def test_tool_loadout_lists_the_tools_before_and_after_and_the_confusion_that_goes(monkeypatch):
    at = open_page(PAGE, monkeypatch, timeout=120)
    set_widget(at, "fm_lesson", "tool_loadout")
    apply(at)
    before, after = [list(t.value["tool"]) for t in at.dataframe if list(t.value.columns) == ["tool"]]
    assert len(before) == 60
    assert len(after) == 5 and set(after) <= set(before)  # the top 5, as the button says
    assert {"Tools sent before (60)", f"Tools sent after ({len(after)})"} <= {c.value for c in at.caption}
    # the request: hold flights and a hotel; one of the look-alikes search_hotels / find_hotels, not both
    assert "hold_flight" in after and len({"search_hotels", "find_hotels"} & set(after)) == 1
    gone = " ".join(s.value.replace("\\", "") for s in at.success)
    assert "too_many_tools" in gone and "overlapping_tools" in gone


def test_diagnose_mine_runs_the_lesson_on_the_sidebar_conversation(monkeypatch):
    at = open_page(PAGE, monkeypatch, timeout=120)
    set_widget(at, "fm_lesson", "quarantine")
    set_widget(at, "fm_source", "mine")
    assert any("ecommerce_refund" in h.value.replace("\\", "") for h in at.subheader)
    apply(at)
    names = chart_spec(at, 1)["data"][0]["y"] if len(at.get("plotly_chart")) > 1 else []
    assert names and names[0] == "one shared context"


def test_a_generated_conversation_keeps_what_was_planted_and_the_page_finds_it(monkeypatch):
    at = open_page(PAGE, monkeypatch, timeout=120)
    set_widget(at, "source", "generate")
    plant = next(e for e in at.sidebar.expander if e.label == "Plant a failure")
    assert {w.key for w in plant.number_input} | {w.key for w in plant.selectbox} == {
        "gen_plant_poisoning", "gen_plant_distraction", "gen_plant_confusion", "gen_plant_clash"}
    set_widget(at, "gen_plant_clash", 1)
    at.button(key="gen_go").click().run()
    assert not at.exception, at.exception
    planted = json.loads(at.session_state["conversation_text"])["planted"]
    assert [p["code"] for p in planted] == ["conflicting_values"]
    set_widget(at, "fm_lesson", "clash")
    set_widget(at, "fm_source", "mine")
    assert any("Planted by the generator" in c.value for c in at.caption)
    assert marked_messages(at) == planted[0]["messages"]
    apply(at)
    assert metric(at, "Clash findings") == "0"


def run_app(tour_open: bool | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)
    if tour_open is not None:
        at.session_state["tour_open"] = tour_open
    at.run()
    assert not at.exception, at.exception
    return at


def tour_shown(at: AppTest) -> bool:
    return any(m.value.startswith("**New here?") for m in at.markdown)


# AppTest drops the entry script's elements (the tour is drawn there, around the page) on a rerun of
# an st.navigation app, so each state is rendered by a fresh first run; the real browser test clicks
# through dismiss and reopen in one session.
def test_the_tour_shows_on_a_first_visit_dismisses_and_reopens(monkeypatch):
    monkeypatch.chdir(ROOT)
    at = run_app()
    assert tour_shown(at)
    steps = [m.value for m in at.markdown if m.value[:2] in ("1.", "2.", "3.")]
    assert [s.split("**")[1] for s in steps] == ["Strategy Lab", "Failure Modes", "Compare"]
    at.button(key="tour_dismiss").click().run()
    assert at.session_state["tour_open"] is False
    closed = run_app(tour_open=False)
    assert not tour_shown(closed)
    closed.button(key="tour_show").click().run()
    assert closed.session_state["tour_open"] is True
    assert tour_shown(run_app(tour_open=True))
