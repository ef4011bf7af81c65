"""The Tune page in Streamlit's AppTest: a small sweep of the bundled samples runs, its
recommendation is the engine's by the stated rule, a rerun does not recompute, a point opens in
the Strategy Lab with its strategy, parameters and limit, exports read back, and a bad upload is
one clear error naming the file."""
from __future__ import annotations

import json

import pytest
import yaml
from streamlit.testing.v1 import AppTest

import ctxlab
from ctxlab.configs import read_config
from ctxlab.strategies import get_strategy, prepare
from ctxlab.sweep import Grid, load_conversations, run_sweep

from ..conftest import ROOT, SAMPLES
from .helpers import APP_TIMEOUT, metric, open_page, run_tune_sweep

DEFAULT_GRID = {"sliding_window": {"buffer_ratio": [0.1, 0.3, 0.5]}, "clear_tool_results": {"keep": [1, 3, 5]}}
DEFAULT_BUDGETS = [8000, 16000]


@pytest.fixture(scope="module")
def engine():
    """The engine's own sweep of what the page runs by default."""
    convs = load_conversations([str(p) for p in sorted(SAMPLES.glob("*.json")) if not p.name.startswith("tool")])
    return run_sweep(convs, Grid.from_dict(DEFAULT_GRID), DEFAULT_BUDGETS, model="gpt-4o", workers=1)


@pytest.fixture
def app(monkeypatch) -> AppTest:
    at = open_page("tune.py", monkeypatch)
    run_tune_sweep(at)
    assert not at.exception, at.exception
    return at


def _label(p) -> str:
    return f"{p['strategy']}({', '.join(f'{k}={v}' for k, v in p['params'].items())}) @ {p['max_tokens']:,}"


def _table(at: AppTest):
    return next(d.value for d in at.dataframe if "needed_recall" in d.value.columns)


def test_before_a_run_the_page_says_what_to_do_and_sizes_the_default_sweep_small(monkeypatch):
    at = open_page("tune.py", monkeypatch)
    assert any("run the sweep" in i.value for i in at.info)
    assert at.markdown[0].value.startswith("Many parameter values")  # no stray module text above the title
    assert at.multiselect(key="tune_strategies").value == ["sliding_window", "clear_tool_results"]
    samples = len([p for p in SAMPLES.glob("*.json") if not p.name.startswith("tool")])
    assert any(c.value.replace("\\", "").startswith("12 point(s) (6 parameter combination(s) x 2 limit(s)) on "
                                                    f"{samples} conversation(s)") for c in at.caption)


def test_the_sweep_runs_on_the_samples_and_recommends_the_engines_point_by_its_rule(app, engine):
    assert engine.recommendation is not None
    best = engine.points[engine.recommendation]
    assert app.success[0].value.replace("\\", "").startswith(f"{_label(best)}: serves {best['needed_recall']:.0%}")
    assert any(c.value.replace("\\", "") == f"Rule: {engine.rule}" for c in app.caption)
    assert any(c.value.replace("\\", "").startswith("The total cost assumes") for c in app.caption)  # its re-fetches
    table = _table(app)
    assert list(table["refetches"]) == [p["refetches"] for p in engine.points]
    assert list(table["point"]) == [_label(p) for p in engine.points]
    assert list(table["needed_recall"]) == pytest.approx([p["needed_recall"] for p in engine.points])
    assert list(table["recommended"]).index(True) == engine.recommendation
    assert [k for k, v in enumerate(table["pareto"]) if v] == list(engine.pareto)


def test_the_table_shows_each_points_cache_breaks_and_the_cached_tokens_they_lost(app, engine):
    table = _table(app)
    assert list(table["cache_breaks"]) == [p["cache_breaks"] for p in engine.points]
    assert list(table["cache_tokens_lost"]) == [p["cache_tokens_lost"] for p in engine.points]
    assert table["cache_breaks"].sum() > 0  # clearing tool results rewrites the prefix on these samples


def test_the_pareto_figure_hovers_with_parameters_and_marks_the_recommendation(app, engine):
    spec = json.loads(app.get("plotly_chart")[0].proto.spec)
    names = [t.get("name") for t in spec["data"]]
    assert names[:2] == ["sliding_window", "clear_tool_results"] and "recommended" in names and "Pareto front" in names
    texts = [t for tr in spec["data"][:2] for t in tr["text"]]
    assert sorted(texts) == sorted(_label(p) for p in engine.points)
    assert "needed_recall" in spec["layout"]["yaxis"]["title"]["text"]


def test_a_rerun_does_not_recompute_and_the_sensitivity_follows_the_parameter(app):
    before = app.session_state["tune_result"]
    app.selectbox(key="tune_sens_param").set_value(("clear_tool_results", "keep")).run()
    assert app.session_state["tune_result"] is before
    spec = json.loads(app.get("plotly_chart")[1].proto.spec)
    assert spec["layout"]["xaxis"]["title"]["text"] == "clear_tool_results.keep"
    assert [t["x"] for t in spec["data"]] == [[1, 3, 5], [1, 3, 5]]


def test_changing_the_settings_after_a_run_says_the_results_are_the_last_runs(app):
    app.text_input(key="tune_budgets").input("4000").run()
    assert any("settings changed" in w.value for w in app.warning)
    run_tune_sweep(app)
    assert not any("settings changed" in w.value for w in app.warning)
    assert set(_table(app)["point"].str.endswith("@ 4,000")) == {True}


def test_bad_limits_are_one_clear_error(monkeypatch):
    at = open_page("tune.py", monkeypatch)
    at.text_input(key="tune_budgets").input("3000, lots").run()
    assert any("whole numbers separated by commas" in e.value for e in at.error)
    assert not at.exception


def test_a_bad_upload_is_one_error_naming_the_file_and_the_good_ones_are_swept(monkeypatch):
    at = open_page("tune.py", monkeypatch)
    at.radio(key="tune_set").set_value("upload").run()
    good = (SAMPLES / "sql_agent.json").read_bytes()
    at.file_uploader(key="tune_upload").set_value([("broken.json", b'{"messages": [', "application/json"),
                                                    ("sql.json", good, "application/json")]).run()
    assert not at.exception, at.exception
    errors = [e.value.replace("\\", "") for e in at.error]
    assert len(errors) == 1 and errors[0].startswith("Not a conversation, left out of the sweep: broken.json:")
    assert any("on 1 conversation(s) from 2 file(s)" in c.value.replace("\\", "") for c in at.caption)
    run_tune_sweep(at)
    assert _table(at)["conversations"].eq(1).all()


def test_a_folder_is_swept_and_its_files_that_are_not_conversations_are_noted(monkeypatch):
    at = open_page("tune.py", monkeypatch)
    at.radio(key="tune_set").set_value("folder").run()
    files = sorted(SAMPLES.glob("*.json*"))
    at.file_uploader(key="tune_folder").set_value([(f.name, f.read_bytes(), "application/json") for f in files]).run()
    assert not at.exception and not at.error
    notes = [c.value.replace("\\", "") for c in at.caption if "left out of the sweep" in c.value]
    assert any("tools_ecommerce.json" in n for n in notes)
    run_tune_sweep(at)
    conversations = [f for f in files if f.suffix == ".json" and not f.name.startswith("tool")]
    assert _table(at)["conversations"].eq(len(conversations)).all()


def test_only_bad_uploads_stop_before_the_sweep(monkeypatch):
    at = open_page("tune.py", monkeypatch)
    at.radio(key="tune_set").set_value("upload").run()
    at.file_uploader(key="tune_upload").set_value(("x.jsonl", b"<script>alert(1)</script>", "application/jsonl")).run()
    assert not at.exception and len(at.error) == 1 and "x.jsonl: input: not valid JSON" in at.error[0].value.replace("\\", "")
    assert any("No conversation to sweep" in i.value for i in at.info)
    assert not [b for b in at.button if b.key == "tune_run"]


def test_a_strategys_ranges_come_from_its_schema(monkeypatch):
    at = open_page("tune.py", monkeypatch)
    at.multiselect(key="tune_strategies").set_value(["summarize"]).run()
    assert not at.checkbox(key="tune_summarize_keep_recent_on").value
    at.checkbox(key="tune_summarize_keep_recent_on").check().run()
    at.number_input(key="tune_summarize_keep_recent_min").set_value(2).run()
    at.number_input(key="tune_summarize_keep_recent_max").set_value(6).run()
    at.multiselect(key="tune_summarize_summarizer_values").set_value(["extractive"]).run()
    assert any("3 parameter combination(s) x 2 limit(s)" in c.value.replace("\\", "") for c in at.caption)
    run_tune_sweep(at)
    # trigger_messages is not varied: it takes its value scaled to each limit, as in the Strategy Lab
    assert list(_table(at)["point"])[:2] == ["summarize(trigger_messages=6, keep_recent=2, summarizer=extractive) @ 8,000",
                                             "summarize(trigger_messages=12, keep_recent=2, summarizer=extractive) @ 16,000"]
    points = at.session_state["tune_result"].points
    assert sorted({p["params"]["keep_recent"] for p in points}) == [2, 4, 6]


def test_exports_of_a_point_read_back_and_say_what_does_not_carry_over(app, downloads, engine):
    k = next(i for i, p in enumerate(engine.points) if p["strategy"] == "sliding_window")
    app.selectbox(key="tune_point").set_value(k).run()
    point = engine.points[k]
    config = read_config(json.loads(downloads["tuned.json"]))
    assert config.to_dict()["strategy"] == "sliding_window"
    assert config.to_dict()["params"]["buffer_ratio"] == point["params"]["buffer_ratio"]
    assert config.max_tokens == point["max_tokens"]
    assert yaml.safe_load(downloads["tuned.yaml"])["strategy"] == "sliding_window"
    native = json.loads(downloads["langchain.json"])
    assert native["strategy"] == "sliding_window" and native["not_carried"]
    assert b"trim_messages" in downloads["langchain_context.py"]
    assert any("What does not carry over" in c.value for c in app.caption)
    assert any(c.value.replace("\\", "").startswith("anthropic: config.strategy: sliding_window has no native form")
               for c in app.caption)


def test_opening_a_point_sets_the_strategy_lab_to_it(monkeypatch, engine):
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)
    at.run()
    at.switch_page("pages/tune.py").run()
    assert at.title[0].value == "Tune"
    run_tune_sweep(at)
    k = next(i for i, p in enumerate(engine.points) if p["strategy"] == "clear_tool_results" and p["params"]["keep"] == 3
             and p["max_tokens"] == 8000)
    at.selectbox(key="tune_point").set_value(k).run()
    at.button(key="tune_open_lab").click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Strategy Lab"
    assert at.selectbox(key="lab_strategy").value == "clear_tool_results"
    assert at.number_input(key="lab_clear_tool_results_keep").value == 3
    assert at.number_input(key="max_tokens").value == 8000
    conv = ctxlab.load(SAMPLES / "ecommerce_refund.json")
    view, budget = prepare(conv, "gpt-4o", context_limit=8000, reserve=0.15)
    plan = get_strategy("clear_tool_results", **engine.points[k]["params"]).apply(view, budget)
    assert metric(at, "Tokens after") == f"{plan.tokens_after:,}"


def test_a_recommended_point_exports_to_every_target_including_the_python_snippet(app, downloads, engine):
    """Tune's sliding_window point gave only a config and LangChain; every target of ctxlab.configs
    is either a download or one line saying why it has no form, and the Python snippet (any strategy) is there."""
    from ctxlab.configs import TARGETS
    k = next(i for i, p in enumerate(engine.points) if p["strategy"] == "sliding_window")
    app.selectbox(key="tune_point").set_value(k).run()
    captions = [c.value.replace("\\", "") for c in app.caption]
    for target in TARGETS:
        assert f"{target}.json" in downloads or any(c.startswith(f"{target}: ") for c in captions), target
    snippet = downloads["manage_context.py"].decode()
    namespace: dict = {}
    exec(compile(snippet, "manage_context.py", "exec"), namespace)
    conv = ctxlab.load(SAMPLES / "ecommerce_refund.json")
    messages = ctxlab.export(conv, "openai").data["messages"]
    assert 0 < len(namespace["manage_context"](messages)) <= len(messages)
    assert "sliding_window" in snippet
