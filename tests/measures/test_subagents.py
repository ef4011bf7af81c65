"""Sub-agent isolation measured on a real Claude Code session (marot/spotter, MIT; see
tests/data/coding/README.md): the parent as logged, each sub-agent in its own context, against the
same work inline in the parent; a cap on what a sub-agent returns."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.cli import main
from ctxlab.errors import CtxlabError
from ctxlab.subagents import isolation

PARENT = Path(__file__).parent.parent / "data" / "coding" / "claude_code_task_parent.jsonl"
SAMPLES = Path(__file__).parents[2] / "sample_data"


def test_inline_work_costs_the_parent_more_than_a_sub_agents_own_context():
    d = isolation(PARENT.read_bytes())
    (sub,) = d["subagents"]
    assert sub["calls"] >= 1 and sub["prompt_tokens"] > 0 and sub["tokens_back"] > 0
    iso, inline = d["isolated"], d["inline"]
    assert iso["total_prompt_tokens"] == iso["parent_prompt_tokens"] + iso["subagent_prompt_tokens"]
    assert inline["parent_calls"] == iso["parent_calls"] + sub["calls"]  # the parent makes the sub-agent's calls
    assert inline["parent_prompt_tokens"] > iso["parent_prompt_tokens"]
    assert inline["parent_largest_prompt"] >= iso["parent_largest_prompt"]
    assert d["parent_needs"]["not_in_parent"] == 0  # on the run as logged the parent had what it used


def test_a_return_cap_cuts_what_comes_back():
    full = isolation(PARENT.read_bytes())
    capped = isolation(PARENT.read_bytes(), return_cap=100)
    assert full["subagents"][0]["tokens_back"] > 500
    assert capped["subagents"][0]["tokens_back"] <= 130  # the cap and the marker that says so


def test_the_cli_prints_it_and_refuses_a_session_without_sub_agents(capsys):
    assert main(["subagents", str(PARENT), "--return-cap", "200"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["return_cap"] == 200 and doc["isolated"]["parent_calls"] >= 1
    assert main(["subagents", str(SAMPLES / "ecommerce_refund.json")]) == 2
    assert "ran no sub-agent" in capsys.readouterr().err
    with pytest.raises(CtxlabError):
        isolation((SAMPLES / "ecommerce_refund.json").read_bytes())


def _budget_scaled(name: str, budget):
    from ctxlab.cli.strategies import build_strategy
    return build_strategy(name, [], budget)  # as the CLI and the pages set a strategy's parameters


def test_under_a_strategy_the_isolated_parent_carries_less_and_every_figure_is_the_measure_entrys():
    from ctxlab.fidelity import needed_facts
    from ctxlab.measure import measure
    from ctxlab.pricing import load_prices
    from ctxlab.strategies import Budget
    from ctxlab.subagents import forms
    text = PARENT.read_bytes()
    budget = Budget.for_model("claude-opus-4-6", max_tokens=40_000)
    strategy = _budget_scaled("clear_tool_results", budget)
    d = isolation(text, strategy=strategy, budget=budget)["measured"]
    iso, inline = d["isolated"], d["inline"]
    assert iso["parent"]["prompt_tokens"] < inline["parent"]["prompt_tokens"]
    assert iso["total"]["prompt_tokens"] == iso["parent"]["prompt_tokens"] + iso["subagents"][0]["prompt_tokens"]
    assert inline["parent"]["calls"] == iso["parent"]["calls"] + iso["subagents"][0]["calls"]
    f, price = forms(text), load_prices()
    for conv, got in [(f.parent, iso["parent"]), (f.subs[0][1], iso["subagents"][0]), (f.inline, inline["parent"])]:
        s = measure(conv, strategy, budget, model=f.model, price=price).summary()
        assert (got["prompt_tokens"], got["largest_prompt"], got["calls_over_limit"], got["cost_usd"]) == (
            s["input_tokens"], s["worst_prompt"], s["calls_over_limit"], s["cost_usd"])
    assert iso["parent"]["cost_usd"] > 0  # claude-opus-4-6 has a price
    # the parent's recall leaves out the call that started the sub-agent (inline its prompt would hold the
    # sub-agent's work, which in the run came after it): on this excerpt the Task call needs 5 of the 8 facts
    whole = measure(f.parent, strategy, budget, model=f.model, price=price).fidelity
    (task_call,) = f.parent_callers
    at_task = [n for n in needed_facts(f.parent).needs if n.needed_by == task_call]
    assert (whole.needed, len(at_task)) == (8, 5)
    assert iso["parent"]["needed"] == inline["parent"]["needed"] == 3  # the same calls of the parent, both forms
    missed = [m for m in whole.misses if m.needed_by != task_call]
    assert iso["parent"]["served"] == 3 - len(missed)


def test_at_a_small_budget_inline_is_over_the_limit_at_least_as_often():
    from ctxlab.strategies import Budget
    budget = Budget.for_model("claude-opus-4-6", max_tokens=30_000)  # below the ~26k unlogged prefix + its work
    d = isolation(PARENT.read_bytes(), strategy=_budget_scaled("sliding_window", budget), budget=budget)["measured"]
    assert d["inline"]["parent"]["calls_over_limit"] >= d["isolated"]["parent"]["calls_over_limit"] >= 1
    assert d["inline"]["total"]["calls_over_limit"] >= d["isolated"]["parent"]["calls_over_limit"]
    assert isolation(PARENT.read_bytes()).keys() == {"model", "subagents", "return_cap", "isolated", "inline",
                                                     "parent_needs"}  # no strategy: as before, nothing measured


def test_the_cli_measures_both_forms_under_a_strategy_and_budget(capsys):
    from ctxlab.strategies import Budget
    args = ["subagents", str(PARENT), "--strategy", "clear_tool_results", "--max-tokens", "40000",
            "--param", "keep=2", "--return-cap", "300"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    m = doc["measured"]
    assert m["strategy"] == "clear_tool_results" and m["params"]["keep"] == 2 and m["budget"]["max_tokens"] == 40_000
    assert m["defaults"] == "budget_scaled" and doc["return_cap"] == 300
    budget = Budget.for_model("claude-opus-4-6", max_tokens=40_000)
    from ctxlab.cli.strategies import build_strategy
    want = isolation(PARENT.read_bytes(), return_cap=300, strategy=build_strategy("clear_tool_results", ["keep=2"], budget),
                     budget=budget)["measured"]
    assert {k: m[k] for k in ("isolated", "inline")} == {k: want[k] for k in ("isolated", "inline")}
    assert main(["subagents", str(PARENT), "--max-tokens", "40000"]) == 2
    assert "--max-tokens is for a measure under a strategy" in capsys.readouterr().err
    assert main(["subagents", str(PARENT), "--strategy", "no_such"]) == 2
