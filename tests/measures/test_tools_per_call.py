"""Tools per call on real tau-bench airline runs (14 tools): every definition, a BM25 retrieval's pick
per call, or deferred loading (a search tool plus the definitions found so far); the tool tokens join
each call's prompt and budget, and a changed tool list breaks the prompt cache (cause ``tools``)."""
from __future__ import annotations

import json

import pytest

from ctxlab import loads
from ctxlab.cache_breaks import cache_breaks
from ctxlab.cli import main
from ctxlab.errors import CtxlabError
from ctxlab.pricing import replay_cost
from ctxlab.replay import replay
from ctxlab.strategies import Budget
from ctxlab.tokens import TokenCounter
from ctxlab.tools_per_call import SEARCH_TOOL, tools_per_call

from ..conftest import SHARED, needs_shared

pytestmark = needs_shared


def _run(k: int = 0):
    runs = json.loads((SHARED / "tau-bench" / "airline_trajectories_trials01.json").read_text())
    tools = json.loads((SHARED / "tau-bench" / "tools_airline.json").read_text())
    return loads(json.dumps({"model": "gpt-4o", "messages": runs[k]["traj"], "tools": tools}))


def test_all_sends_every_definition_at_every_call_as_the_budget_counts_them():
    conv = _run()
    every = TokenCounter("gpt-4o").tools(conv.tools)
    budget = Budget.for_model("gpt-4o", max_tokens=16_000, tools_tokens=every)
    per = replay(conv, "none", budget, tools=tools_per_call(conv, "all"))
    fixed = replay(conv, "none", budget)
    assert [c.tokens_after for c in per.calls] == [c.tokens_after for c in fixed.calls]
    assert all(c.tools.tokens == every and not c.tools.changed for c in per.calls)


def test_deferred_loads_a_definition_at_the_first_call_that_uses_it_and_keeps_the_cache():
    conv = _run()
    tools = tools_per_call(conv, "deferred")
    used = [c.name for m in conv.messages for c in m.tool_calls]
    assert tools[0].names[0] == SEARCH_TOOL.name
    assert [n for t in tools for n in t.found] == list(dict.fromkeys(used))  # each found once, in order of use
    assert all(not t.changed and not t.missing for t in tools)
    assert tools[-1].tokens < TokenCounter("gpt-4o").tools(conv.tools)  # fewer definitions than all 14
    r = replay(conv, "none", Budget.for_model("gpt-4o", max_tokens=16_000), tools=tools)
    assert all(c.extends_previous for c in r.calls[1:]) and cache_breaks(r, conv) == []


def test_a_retrieval_pick_per_call_changes_the_list_and_each_change_is_a_tools_cache_break():
    conv = _run()
    tools = tools_per_call(conv, "retrieval", top_k=3)
    assert all(len(t.names) <= 3 for t in tools) and any(t.changed for t in tools)
    r = replay(conv, "none", Budget.for_model("gpt-4o", max_tokens=16_000), tools=tools)
    breaks = cache_breaks(r, conv)
    changed = [t.call for t in tools if t.changed]
    assert [b.call for b in breaks if b.cause == "tools"] == changed and all(b.position == -1 for b in breaks)
    assert sum(c.tokens_after for c in r.calls) < sum(c.tokens_after for c in replay(
        conv, "none", Budget.for_model("gpt-4o", max_tokens=16_000), tools=tools_per_call(conv, "all")).calls)
    cost = replay_cost(r, conv, model="gpt-4o")
    assert [c.cached_tokens for c, call in zip(cost.calls, [x for x in r.calls if not x.pending])
            if call.tools.changed] == [0] * len([x for x in r.calls if x.tools.changed and not x.pending])


def test_a_tool_the_call_used_that_the_pick_left_out_is_missing():
    conv = _run()
    tools = tools_per_call(conv, "retrieval", top_k=1)
    missing = [(t.call, n) for t in tools for n in t.missing]
    assert missing and all(n in {d.name for d in conv.tools} for _, n in missing)


def test_the_tool_tokens_of_each_call_are_in_the_budget_the_strategy_plans_with():
    conv = _run()
    limit = 6_000
    big = replay(conv, "sliding_window", Budget.for_model("gpt-4o", max_tokens=limit),
                 tools=tools_per_call(conv, "all"))
    small = replay(conv, "sliding_window", Budget.for_model("gpt-4o", max_tokens=limit),
                   tools=tools_per_call(conv, "deferred"))
    assert sum(c.messages for c in small.calls) > sum(c.messages for c in big.calls)  # more room for messages


def test_bad_modes_and_counts_are_refused_by_name():
    conv = _run()
    with pytest.raises(CtxlabError, match="tools must be one of all, retrieval, deferred"):
        tools_per_call(conv, "some")
    with pytest.raises(CtxlabError, match="top_k"):
        tools_per_call(conv, "retrieval", top_k=0)
    with pytest.raises(CtxlabError, match="tools per call has 1 entries"):
        replay(conv, "none", Budget(16_000), tools=tools_per_call(conv, "all")[:1])


def test_the_cli_replay_carries_the_tools_of_each_call(tmp_path, capsys):
    conv_path = tmp_path / "run.json"
    runs = json.loads((SHARED / "tau-bench" / "airline_trajectories_trials01.json").read_text())
    tools = json.loads((SHARED / "tau-bench" / "tools_airline.json").read_text())
    conv_path.write_text(json.dumps({"model": "gpt-4o", "messages": runs[0]["traj"], "tools": tools}))
    code = main(["replay", str(conv_path), "--strategy", "none", "--model", "gpt-4o", "--max-tokens", "16000",
                 "--tools", "retrieval", "--tools-top-k", "3"])
    out = json.loads(capsys.readouterr().out)
    d = out[0] if isinstance(out, list) else out
    assert code == 0 and d["tools_per_call"]["mode"] == "retrieval" and d["tools_per_call"]["list_changes"] > 0
    assert all(len(c["tools"]) <= 3 for c in d["calls"])
    assert d["cache_breaks"]["by_cause"]["tools"]["breaks"] == d["tools_per_call"]["list_changes"] - sum(
        1 for c in d["calls"] if c["pending"] and c["tools_changed"])


def test_a_sweep_with_deferred_tools_counts_fewer_tool_tokens_and_says_so(tmp_path, capsys):
    from ctxlab.sweep import Grid, run_sweep
    convs = [_run(k) for k in range(3)]
    grid = Grid.parse(["tool_rounds"], [])
    every = run_sweep(convs, grid, [8_000], model="gpt-4o", workers=1)
    deferred = run_sweep(convs, grid, [8_000], model="gpt-4o", workers=1, tools="deferred")
    assert deferred.points[0]["input_tokens_total"] < every.points[0]["input_tokens_total"]
    assert any("deferred" in n for n in deferred.notes) and not any("deferred" in n for n in every.notes)
    with pytest.raises(CtxlabError, match="tools must be one of"):
        run_sweep(convs, grid, [8_000], workers=1, tools="some")
    paths = []
    for k, conv in enumerate(convs):
        path = tmp_path / f"run{k}.json"
        path.write_text(json.dumps(ctxlab_export(conv)))
        paths.append(str(path))
    assert main(["sweep", *paths, "--strategy", "tool_rounds", "--max-tokens", "8000", "--workers", "1",
                 "--model", "gpt-4o", "--tools", "deferred"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["points"][0]["input_tokens_total"] == deferred.points[0]["input_tokens_total"]


def ctxlab_export(conv):
    """The conversation as OpenAI-shaped JSON with its tools (what the CLI reads back)."""
    from ctxlab import export
    return {**export(conv, "openai").data, "model": "gpt-4o"}
