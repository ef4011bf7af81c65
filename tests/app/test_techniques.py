"""The 2025-26 context techniques in the app: the Lab with offload in Chinese (controls and reasons translated, the
Replay tab's cost and needed-facts metric stating the modelled read-backs), and tools per call in the Lab
and Tune replayed as the engine replays them (deferred loading; a retrieval's list changes as cache breaks)."""
from __future__ import annotations

from streamlit.testing.v1 import AppTest

from ctxlab import i18n
from ctxlab.pricing import load_prices

from ..conftest import ROOT
from .helpers import APP_TIMEOUT
from .english_left import english_left, report, visible_text

PRODUCTS = ("Manus", "Cursor", "Deep")  # the products offload comes from (Deep Agents: "agents" is allowed already)


def test_offload_in_the_chinese_lab_prices_its_read_backs_and_leaves_no_english(monkeypatch, data_dir):
    i18n.use("zh")
    try:
        monkeypatch.chdir(ROOT)
        at = AppTest.from_file(str(ROOT / "pages" / "strategy_lab.py"), default_timeout=APP_TIMEOUT)
        at.query_params["lang"] = "zh"
        at.run()
        at.selectbox(key="lab_strategy").set_value("offload").run()
        at.number_input(key="lab_offload_min_tokens").set_value(60).run()
        at.number_input(key="lab_offload_preview_tokens").set_value(10).run()
        at.checkbox(key="lab_offload_preview_tail").uncheck().run()
        at.session_state["lab_tab"] = "逐次回放"
        at.run()
        assert not at.exception, at.exception
        texts = visible_text(at)
        reads = [t for t in texts if "回读" in t]
        assert any("建模的回读调用" in t and "其中包含" in t for t in reads), reads
        assert any("次建模的回读" in (m.help or "") and "算作已提供" in (m.help or "") for m in at.metric)
        left = english_left(at, allow=PRODUCTS, engine_text={load_prices().get("gpt-4o").source})
        assert not left, report(left)
    finally:
        i18n.use("en")


def test_the_lab_replays_with_deferred_tools_as_the_engine_does(monkeypatch, data_dir):
    import ctxlab
    from ctxlab.replay import replay
    from ctxlab.strategies import STRATEGIES, get_strategy, prepare
    from ctxlab.tools_per_call import tools_per_call

    from .helpers import open_page
    at = open_page("strategy_lab.py", monkeypatch, timeout=120)
    at.selectbox(key="lab_tools").set_value("deferred").run()
    at.session_state["lab_tab"] = "Replay call by call"
    at.run()
    assert not at.exception, at.exception
    conv = ctxlab.load(ROOT / "sample_data" / at.session_state["sample_name"])
    view, budget = prepare(conv, "gpt-4o", context_limit=at.session_state["max_tokens"],
                           reserve=at.session_state["reserve"])
    strategy = get_strategy("tool_rounds", **STRATEGIES["tool_rounds"].scaled_defaults(budget))
    tools = tools_per_call(conv, "deferred", model="gpt-4o")
    r = replay(view, strategy, budget, tools=tools)
    mean = sum(c.tools.tokens for c in r.calls) / len(r.calls)
    captions = [c.value for c in at.caption if c.value.startswith("Tool definitions:")]
    assert captions == [f"Tool definitions: {mean:,.0f} tokens a call on average (all of them: "
                        f"{budget.tools_tokens:,}); the list changed at 0 calls; 0 calls used a tool that was "
                        "not sent."]
    assert mean < budget.tools_tokens  # fewer tool tokens than sending all ten


def test_tune_sweeps_with_deferred_tools_as_the_engine_does(monkeypatch, data_dir):
    from ctxlab.sweep import Grid, load_conversations, run_sweep

    from ..conftest import SAMPLES
    from .helpers import open_page, run_tune_sweep
    at = open_page("tune.py", monkeypatch)
    at.multiselect(key="tune_strategies").set_value(["clear_tool_results"]).run()
    at.selectbox(key="tune_tools").set_value("deferred").run()
    run_tune_sweep(at, timeout=300)
    result = at.session_state["tune_result"]
    convs = load_conversations([str(p) for p in sorted(SAMPLES.glob("*.json")) if not p.name.startswith("tool")])
    grid = Grid.from_dict({"clear_tool_results": {"keep": [1, 3, 5]}})
    engine = run_sweep(convs, grid, [8000, 16000], model="gpt-4o", workers=1, tools="deferred")
    assert [p["input_tokens_total"] for p in result.points] == [p["input_tokens_total"] for p in engine.points]
    every = run_sweep(convs, grid, [8000, 16000], model="gpt-4o", workers=1)
    assert engine.points[0]["input_tokens_total"] < every.points[0]["input_tokens_total"]
    assert any("deferred" in n for n in result.notes)


def test_a_retrieval_per_call_in_the_lab_shows_its_cache_breaks_as_tool_list_changes(monkeypatch, data_dir):
    from .helpers import open_page
    at = open_page("strategy_lab.py", monkeypatch, timeout=120)
    at.selectbox(key="lab_strategy").set_value("none").run()
    at.selectbox(key="lab_tools").set_value("retrieval").run()
    at.session_state["lab_tab"] = "Replay call by call"
    at.run()
    assert not at.exception, at.exception
    captions = [c.value.replace("\\", "") for c in at.caption]
    summary = next(c for c in captions if c.startswith("Prompt cache:"))
    changed = next(c for c in captions if c.startswith("Tool definitions:"))
    k = int(changed.split("the list changed at ")[1].split(" calls")[0])
    assert k > 0 and f"(the tool list changed {k})" in summary  # every change of the list, and nothing else
