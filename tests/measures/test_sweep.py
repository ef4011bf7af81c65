"""Sweeps: grids, points aggregated over conversations, the Pareto front, the recommendation, and
the same results from one process, several, and a Dask cluster."""
from __future__ import annotations

import json

import pytest

from ctxlab import load
from ctxlab.cli import main
from ctxlab.conversation import Conversation
from ctxlab.pricing import Price
from ctxlab.sweep import Grid, SweepError, pareto_front, recommend, run_sweep, workers_start_clean

from ..conftest import SAMPLES
from .test_fidelity import lookup_then_cancel

PRICE = Price("test", input=2.0, output=8.0, cached_input=0.5, cache="openai")


def samples() -> list[Conversation]:
    """The three bundled sample conversations."""
    return [load(SAMPLES / n) for n in ("ecommerce_refund.json", "parallel_travel.json", "sql_agent.json")]


def without_timing(points):
    """Points without plan_ms, the one figure that is a timing."""
    return [{k: v for k, v in p.items() if k != "plan_ms"} for p in points]


def test_a_grid_is_typed_by_the_strategy_schema_and_expands_in_order():
    g = Grid.parse(["sliding_window", "tool_rounds"], ["sliding_window.buffer_ratio=0.1,0.3",
                                                       "tool_rounds.keep_rounds=0,2"])
    assert g.combos() == [("sliding_window", {"buffer_ratio": 0.1}), ("sliding_window", {"buffer_ratio": 0.3}),
                          ("tool_rounds", {"keep_rounds": 0}), ("tool_rounds", {"keep_rounds": 2})]
    assert Grid.parse(["key_messages"], ["key_messages.key_tools=[a,b],[c]"]).combos() == [
        ("key_messages", {"key_tools": ("a", "b")}), ("key_messages", {"key_tools": ("c",)})]
    assert Grid.from_dict({"summarize": {"keep_recent": [2, 4]}, "none": {}}).combos() == [
        ("summarize", {"keep_recent": 2}), ("summarize", {"keep_recent": 4}), ("none", {})]


def test_a_seeded_sample_is_reproducible_and_a_subset():
    g = Grid.parse(["summarize"], ["summarize.keep_recent=1,2,3,4,5,6", "summarize.target_ratio=0.3,0.5,0.7"])
    a, b = g.sample(5, seed=7), g.sample(5, seed=7)
    assert a == b and len(a) == 5 and all(c in g.combos() for c in a)
    assert g.sample(5, seed=8) != a


@pytest.mark.parametrize("strategies, specs, says", [
    (["sliding_window"], ["sliding_window.nope=1"], "bad parameter"),
    (["sliding_window"], ["sliding_window.buffer_ratio=2"], "at most 0.9"),
    (["sliding_window"], ["sliding_window.buffer_ratio=abc"], "must be float"),
    (["sliding_window"], ["summarize.keep_recent=2"], "not one of the strategies swept"),
    (["sliding_window"], ["sliding_window.buffer_ratio"], "NAME.KEY=V1,V2"),
    (["sliding_window"], ["sliding_window.buffer_ratio=0.1,"], "empty value"),
    (["nope"], [], "unknown strategy"),
])
def test_bad_grids_are_one_clear_error(strategies, specs, says):
    with pytest.raises(Exception) as e:
        Grid.parse(strategies, specs)
    assert says in str(e.value)


def test_points_measure_what_each_setting_loses_on_a_known_conversation():
    conv = Conversation(tuple(lookup_then_cancel()), model="gpt-4o")
    res = run_sweep([conv], Grid.parse(["tool_rounds"], ["tool_rounds.keep_rounds=0,1"]), [100_000],
                    prices=PRICE, workers=1)
    drop, keep = res.points
    assert drop["needed_recall"] < 1 and keep["needed_recall"] == 1.0   # keep_rounds=0 drops the lookup result
    # before every call: keep_rounds=1 drops the lookup's round once the cancel round is made (the answer's call)
    assert drop["input_tokens_total"] < keep["input_tokens_total"] < res.baseline["input_tokens_total"]
    assert drop["saved"] > keep["saved"] > 0
    assert drop["calls"] == keep["calls"] == 4 and drop["calls_over_limit"] == 0
    assert drop["invalid"] == keep["invalid"] == 0 and drop["fits_rate"] == 1.0
    assert res.recommendation == 1                                      # the only one at >= 0.95
    assert res.to_dict()["recommendation"]["params"] == {"keep_rounds": 1}


def test_the_front_and_the_recommendation_follow_the_stated_rules():
    pts = [{"cost_usd": 1.0, "needed_recall": 0.90, "invalid": 0, "input_tokens_total": 10},
           {"cost_usd": 2.0, "needed_recall": 0.97, "invalid": 0, "input_tokens_total": 20},
           {"cost_usd": 1.5, "needed_recall": 0.96, "invalid": 1, "input_tokens_total": 15},
           {"cost_usd": 3.0, "needed_recall": 0.95, "invalid": 0, "input_tokens_total": 30},
           {"cost_usd": 2.5, "needed_recall": 0.99, "invalid": 0, "input_tokens_total": 25}]
    assert pareto_front(pts) == [0, 1, 2, 4]            # 3 costs more than 1 and recalls less
    assert recommend(pts, 0.95) == 1                     # 2 is cheaper but invalid; 0 under the level
    assert recommend(pts, 0.98) == 4 and recommend(pts, 0.999) is None
    no_price = [dict(p, cost_usd=None) for p in pts]
    assert recommend(no_price, 0.95) == 1                # falls back to input tokens
    over = [dict(p, calls_over_limit=2 if k == 1 else 0) for k, p in enumerate(pts)]
    assert recommend(over, 0.95) == 4                    # 1 is cheaper but one of its calls is over the limit
    all_over = [dict(p, calls_over_limit=5 - k) for k, p in enumerate(pts)]
    assert recommend(all_over, 0.95) == 4                # none fits: the fewest calls over (4, then cost)


def test_among_equal_costs_a_strategy_with_a_native_export_is_recommended():
    base = {"needed_recall": 1.0, "invalid": 0, "input_tokens_total": 10, "calls_over_limit": 0}
    pts = [dict(base, strategy="middle_out", cost_usd=1.000), dict(base, strategy="clear_tool_results", cost_usd=1.005),
           dict(base, strategy="summarize", cost_usd=1.2)]
    assert recommend(pts, 0.95) == 1                     # within 1% of the cheapest, and LangChain/Anthropic map it
    assert recommend([pts[0], pts[2]], 0.95) == 0        # 20% more is not equal


def test_a_point_with_calls_over_the_limit_is_never_reported_as_fitting():
    from ctxlab.generate import generate
    run = generate("ecommerce", turns=6, rounds_per_turn=4, result_tokens=300, seed=2, shape="agent_run")
    grid = Grid.parse(["tool_rounds", "sliding_window"], ["tool_rounds.apply_at=every_call,turn_start"])
    res = run_sweep([run], grid, [4_000], prices=PRICE, workers=1)
    every, start, window = res.points
    assert start["calls_over_limit"] > 0 and start["fits_rate"] == 0.0, "turn_start never cuts inside the one turn"
    assert every["calls_over_limit"] == window["calls_over_limit"] == 0 and every["fits_rate"] == 1.0
    assert res.recommendation != 1
    for p in res.points:
        assert (p["fits_rate"] == 1.0) == (p["calls_over_limit"] == 0)


def test_results_do_not_depend_on_the_number_of_workers():
    convs = samples() * 2
    grid = Grid.parse(["sliding_window", "summarize"], ["sliding_window.buffer_ratio=0.1,0.4"])
    one = run_sweep(convs, grid, [3000, 6000], workers=1)
    two = run_sweep(convs, grid, [3000, 6000], workers=2, chunk_size=1)
    assert without_timing(one.points) == without_timing(two.points)
    assert (one.pareto, one.recommendation) == (two.pareto, two.recommendation)
    assert one.points[0]["conversations"] == 6


def test_a_dask_cluster_gives_the_local_results():
    distributed = pytest.importorskip("distributed")
    convs = samples()
    grid = Grid.parse(["tool_rounds"], ["tool_rounds.keep_rounds=0,1"])
    local = run_sweep(convs, grid, [4000], workers=1)
    with workers_start_clean(), distributed.LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1", dashboard_address=None) as cluster:
        remote = run_sweep(convs, grid, [4000], scheduler=cluster.scheduler_address, chunk_size=1)
    assert without_timing(remote.points) == without_timing(local.points)
    assert remote.recommendation == local.recommendation


def test_an_unreachable_scheduler_is_a_clear_error(monkeypatch):
    monkeypatch.setattr("ctxlab.sweep.DASK_CONNECT_TIMEOUT", 1)
    with pytest.raises(SweepError, match="Dask scheduler"):
        run_sweep(samples()[:1], Grid.parse(["none"]), [4000], scheduler="tcp://127.0.0.1:9")


def test_the_cli_prints_points_front_and_recommendation(capsys):
    code = main(["sweep", str(SAMPLES / "ecommerce_refund.json"), str(SAMPLES / "sql_agent.json"),
                 "--strategy", "tool_rounds", "--grid", "tool_rounds.keep_rounds=0,1", "--max-tokens", "3000,6000",
                 "--workers", "1", "--min-recall", "0.9"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert len(out["points"]) == 4 and all(p["conversations"] == 2 for p in out["points"])
    assert set(out["points"][0]) >= {"strategy", "params", "max_tokens", "tokens_final_mean", "tokens_final_p95",
                                     "saved", "fits_rate", "invalid", "retention", "needed_recall",
                                     "input_tokens_total", "cached_share", "cost_usd", "plan_ms"}
    assert all(0 <= k < 4 for k in out["pareto"])
    assert out["recommendation"] is None or out["recommendation"]["needed_recall"] >= 0.9


def test_the_cli_writes_csv_and_rejects_a_bad_grid_with_exit_2(capsys):
    assert main(["sweep", str(SAMPLES / "sql_agent.json"), "--strategy", "none", "--max-tokens", "4000",
                 "--workers", "1", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("strategy,params,max_tokens") and len(lines) == 2
    assert main(["sweep", str(SAMPLES / "sql_agent.json"), "--strategy", "sliding_window",
                 "--grid", "sliding_window.buffer_ratio=x", "--max-tokens", "4000"]) == 2
    err = capsys.readouterr().err
    assert "buffer_ratio" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_the_tune_figures_show_every_point_the_front_and_the_pick():
    from ctxlab.figures_tune import cost_per_turn_figure, pareto_figure, points_table, sensitivity_figure
    conv = Conversation(tuple(lookup_then_cancel()), model="gpt-4o")
    res = run_sweep([conv], Grid.parse(["tool_rounds"], ["tool_rounds.keep_rounds=0,1"]), [100_000, 200_000],
                    prices=PRICE, workers=1)
    fig = pareto_figure(res)
    names = [t.name for t in fig.data]
    assert names == ["tool_rounds", "Pareto front", "recommended"]
    assert len(fig.data[0].x) == 4 and fig.data[2].text[0].startswith("tool_rounds(keep_rounds=1)")
    sens = sensitivity_figure(res, "tool_rounds", "keep_rounds")
    assert [t.name for t in sens.data] == ["100,000 tokens", "200,000 tokens"] and list(sens.data[0].y)[1] == 1.0
    rows = points_table(res)
    assert [r["recommended"] for r in rows].count(True) == 1
    from ctxlab.measure import measure
    from ctxlab.strategies import Budget
    m = measure(conv, "tool_rounds", Budget(100_000), price=PRICE)
    bars = cost_per_turn_figure(m.cost, m.cost_none)
    assert [t.name for t in bars.data] == ["cached", "cache write", "uncached", "none: prompt tokens"]
    assert sum(bars.data[0].y) + sum(bars.data[2].y) == m.cost.input_tokens


def test_generated_conversations_sweep_on_worker_processes():
    """Generated messages hold read-only mappings; they must travel to worker processes."""
    from ctxlab.generate import generate
    runs = [generate("sql", turns=3, rounds_per_turn=2, seed=k, shape="agent_run") for k in range(2)]
    grid = Grid.parse(["tool_rounds"])
    one = run_sweep(runs, grid, [4000], workers=1)
    two = run_sweep(runs, grid, [4000], workers=2, chunk_size=1)
    assert without_timing(one.points) == without_timing(two.points)


def test_workers_start_while_main_is_a_page_another_runner_executes(tmp_path, monkeypatch):
    # Streamlit and its AppTest make the page being run ``__main__``; a worker started by
    # forkserver would run that file again (CI found pages/tune.py failing inside the workers).
    import sys
    import types
    page = tmp_path / "page.py"
    page.write_text("raise SystemExit('a worker ran the page')\n")
    borrowed = types.ModuleType("__main__")
    borrowed.__file__ = str(page)
    monkeypatch.setitem(sys.modules, "__main__", borrowed)
    convs = samples()
    grid = Grid.parse(["tool_rounds"], ["tool_rounds.keep_rounds=0,1"])
    two = run_sweep(convs, grid, [4000], workers=2, chunk_size=1)
    assert sys.modules["__main__"] is borrowed
    assert without_timing(two.points) == without_timing(run_sweep(convs, grid, [4000], workers=1).points)


def test_points_carry_the_cache_breaks_of_the_replay_summed_over_conversations():
    """Each point counts the calls whose prompt broke the prompt cache and the cached tokens they lost,
    the same figures ``cache_breaks`` gives on that point's replay, summed over the conversations."""
    from ctxlab.cache_breaks import cache_breaks
    from ctxlab.replay import replay
    from ctxlab.strategies import Budget, get_strategy
    from ctxlab.sweep import COLUMNS
    from .test_cache_breaks import TRACE
    conv = load(TRACE)
    res = run_sweep([conv, conv], Grid.parse(["observation_masking"], ["observation_masking.polling=1,5"]),
                    [32_000], model="gpt-4o", prices=PRICE, workers=1)
    assert {"cache_breaks", "cache_tokens_lost"} <= set(COLUMNS)
    assert res.baseline["cache_breaks"] == 0 == res.baseline["cache_tokens_lost"]
    for p in res.points:
        r = replay(conv, get_strategy("observation_masking", **p["params"]), Budget.for_model(
            "gpt-4o", reserve=0.15, max_tokens=32_000), model="gpt-4o")
        one = cache_breaks(r, conv, model="gpt-4o", price=PRICE)
        assert p["cache_breaks"] == 2 * len(one) > 0
        assert p["cache_tokens_lost"] == 2 * sum(b.tokens_lost for b in one) > 0
    every, polled = res.points
    assert polled["cache_breaks"] < every["cache_breaks"]
    assert "cache_breaks" in res.to_csv().splitlines()[0]
