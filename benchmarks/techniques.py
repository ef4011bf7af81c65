"""The 2025-26 context techniques against the strategies they compete with, on real traces.

For offload (large results to a store, a pointer and a preview; a fact outside the preview costs a
modelled read-back call), head_tail (Codex's cut of each result), clear_tool_results,
observation_masking (polling 1 and 5: before every call, or SWE-agent's every fifth) and summarize,
each with the budget-scaled defaults the Lab and the sweep use, at two limits, replayed call by call
(``ctxlab.replay``) on the 100 tau-bench airline runs (../shared/data) and on the coding traces in
tests/data/coding: calls over the limit, needed recall (and with offload's read-backs counted as
served), input tokens and cost with the prompt cache (gpt-4o, bundled prices, read-back calls
included) against keeping everything, and cache breaks (calls whose prompt does not extend the
previous one, ``ctxlab.cache_breaks``). Three more rows send the tools per call
(``ctxlab.tools_per_call``): a BM25 retrieval's top 5 from each call's last 3 messages, and deferred
loading (a search tool plus the definitions found so far), alone and with offload; every other row
sends every definition at every call.

    python benchmarks/techniques.py [--data ../shared/data] [--model gpt-4o] [--only tau|coding]
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from ctxlab import load, loads
from ctxlab.cache_breaks import cache_breaks
from ctxlab.conversation import Conversation
from ctxlab.fidelity import FactCheck, needed_facts
from ctxlab.pricing import load_prices, replay_cost
from ctxlab.replay import replay
from ctxlab.strategies import STRATEGIES, Budget, get_strategy
from ctxlab.tools_per_call import tools_per_call

HERE = Path(__file__).resolve().parent
CODING = HERE.parent / "tests" / "data" / "coding"
ROWS: list[tuple[str, str, dict[str, Any], str]] = [  # label, strategy, fixed parameters, tools per call
    ("none", "none", {}, "all"),
    ("offload", "offload", {}, "all"),
    ("offload (head preview)", "offload", {"preview_tail": False}, "all"),
    ("head_tail", "head_tail", {}, "all"),
    ("clear_tool_results", "clear_tool_results", {}, "all"),
    ("observation_masking, polling 1", "observation_masking", {"polling": 1}, "all"),
    ("observation_masking, polling 5", "observation_masking", {"polling": 5}, "all"),
    ("summarize", "summarize", {}, "all"),
    ("none + tools retrieved per call (top 5)", "none", {}, "retrieval"),
    ("none + deferred tools (tool search)", "none", {}, "deferred"),
    ("offload + deferred tools", "offload", {}, "deferred"),
]
BUDGETS = {"tau": (6_000, 12_000), "coding": (8_000, 32_000)}


def tau_runs(data: Path) -> list[Conversation]:
    """The 100 tau-bench airline runs (gpt-4o, with the 14 airline tools)."""
    runs = json.loads((data / "tau-bench" / "airline_trajectories_trials01.json").read_text())
    tools = json.loads((data / "tau-bench" / "tools_airline.json").read_text())
    return [loads(json.dumps({"model": "gpt-4o", "messages": r["traj"], "tools": tools})) for r in runs]


def coding_runs() -> list[Conversation]:
    """The coding-agent traces in tests/data/coding (SWE-agent, mini-swe-agent, OpenHands, Codex, Claude Code)."""
    return [load(p) for p in sorted(CODING.iterdir()) if p.is_file() and p.suffix in (".json", ".jsonl", ".traj")]


def _measure(conv: Conversation, facts: Any, strategy: Any, budget: Budget, model: str, prices: Any,
             tools: str) -> dict:
    """One replay's figures, with the tools sent at each call (``tools``: a ``tools_per_call`` mode)."""
    check = FactCheck(facts)
    per_call = tools_per_call(conv, tools, model=model)
    r = replay(conv, strategy, budget, model=model, observe=check, tools=per_call)
    fid = check.fidelity(r.strategy)
    cost = replay_cost(r, conv, model=model, price=prices, read_backs=fid.read_backs)
    breaks = cache_breaks(r, conv, model=model, price=prices)
    return {"calls": len(r.calls), "over": r.calls_over_limit, "needed": fid.needed, "served": fid.served,
            "read": sum(len(b.facts) for b in fid.read_backs), "reads": len(fid.read_backs),
            "input": cost.input_tokens, "cost": cost.cost_usd or 0.0, "breaks": len(breaks),
            "missing": sum(bool(t.missing) for t in per_call)}


def _total(rows: list[dict]) -> dict:
    return {k: sum(r[k] for r in rows) for k in rows[0]}


def table(label: str, convs: list[Conversation], budgets: tuple[int, ...], model: str) -> None:
    """Print one markdown table: every row at every budget, totals over ``convs``."""
    prices = load_prices()
    facts = [needed_facts(c) for c in convs]
    print(f"## {label}: {len(convs)} traces, {model}, limits {', '.join(f'{b:,}' for b in budgets)}")
    print("| limit | strategy | calls over limit | needed recall | with read-backs | read-back calls | input tokens "
          "| cost (cache) | vs none | cache breaks | calls missing a tool |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for limit in budgets:
        base = None
        for name, strategy_name, fixed, tools in ROWS:
            t0 = time.perf_counter()
            rows = []
            for conv, nf in zip(convs, facts):
                budget = Budget.for_model(model, max_tokens=limit, tools_tokens=_tools(conv, model))
                params = {**STRATEGIES[strategy_name].scaled_defaults(budget), **fixed}
                rows.append(_measure(conv, nf, get_strategy(strategy_name, **params), budget, model, prices, tools))
            t = _total(rows)
            base = base or t
            recall = t["served"] / t["needed"] if t["needed"] else float("nan")
            with_reads = (t["served"] + t["read"]) / t["needed"] if t["needed"] else float("nan")
            vs = t["cost"] / base["cost"] - 1 if base["cost"] else float("nan")
            print(f"| {limit:,} | {name} | {t['over']:,} of {t['calls']:,} | {recall:.3f} | {with_reads:.3f} | "
                  f"{t['reads']:,} | {t['input']:,} | ${t['cost']:.3f} | {vs:+.1%} | {t['breaks']:,} | "
                  f"{t['missing']:,} |"
                  f"  <!-- {time.perf_counter() - t0:.1f} s -->")


def _tools(conv: Conversation, model: str) -> int:
    from ctxlab.tokens import TokenCounter
    return TokenCounter(model).tools(conv.tools)


def main() -> None:
    """Parse the arguments and print the tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(HERE.parent.parent / "shared" / "data"))
    ap.add_argument("--model", default="gpt-4o")
    ap.add_argument("--only", choices=("tau", "coding"))
    a = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} (2 cores)")
    if a.only in (None, "coding"):
        table("coding traces (tests/data/coding)", coding_runs(), BUDGETS["coding"], a.model)
    if a.only in (None, "tau"):
        data = Path(a.data)
        if (data / "tau-bench").is_dir():
            table("tau-bench airline (100 runs)", tau_runs(data), BUDGETS["tau"], a.model)
        else:
            print(f"tau-bench not found under {data}: pass --data")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
