"""Sweep speed and the needed-recall / cost table on the 100 tau-bench airline runs.

a. 3 strategies x 20 points (parameter values x budgets) x the 100 runs, on every core: wall time
   vs the 60 s target, with the load average (the machine may be shared).
b. The main strategies with default parameters at 3,000 and 6,000 tokens: tokens, needed_recall,
   cached share and cost (gpt-4o and claude-sonnet-4 prices), beside `none`.
c. Tuned on one half, reported on the other: the recommendation picked on runs 0-49 (the grid of
   part a), and its figures on runs 50-99.

    python benchmarks/bench_sweep.py [--data ../shared/data] [--workers N] [--only a|b|c]
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from ctxlab import loads
from ctxlab.sweep import Grid, run_sweep

HERE = Path(__file__).resolve().parent
GRID = ["sliding_window.buffer_ratio=0.0,0.1,0.2,0.3,0.5",
        "summarize.keep_recent=2,4,6,8,10",
        "tool_rounds.keep_rounds=0,1,2,3,4"]
BUDGETS = [2000, 3000, 4500, 6000]
MAIN = ["sliding_window", "summarize", "tool_rounds", "clear_tool_results", "middle_out", "oldest_first", "hybrid"]


def tau_runs(data: Path) -> list:
    """The 100 runs as conversations (gpt-4o, with the 14 airline tools)."""
    runs = json.loads((data / "tau-bench" / "airline_trajectories_trials01.json").read_text())
    tools = json.loads((data / "tau-bench" / "tools_airline.json").read_text())
    return [loads(json.dumps({"model": "gpt-4o", "messages": r["traj"], "tools": tools})) for r in runs]


def part_a(convs: list, workers: int | None) -> None:
    grid = Grid.parse(["sliding_window", "summarize", "tool_rounds"], GRID)
    t0 = time.perf_counter()
    res = run_sweep(convs, grid, BUDGETS, workers=workers)
    wall = time.perf_counter() - t0
    load = os.getloadavg()
    print(f"## a. {len(res.points)} points ({len(grid.strategies)} strategies x {len(res.points) // 3} points) "
          f"x {len(convs)} runs = {len(res.points) * len(convs):,} replays (+{len(convs)} of none)")
    print(f"wall {wall:.1f} s on {workers or os.cpu_count()} worker(s) (target < 60 s); "
          f"load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}; cores {os.cpu_count()}")
    rec = res.recommendation
    print(f"pareto (cost vs needed_recall): {len(res.pareto)} points; recommendation: "
          + ("none qualifies" if rec is None else _label(res.points[rec])))


def _label(p: dict) -> str:
    params = ",".join(f"{k}={v}" for k, v in p["params"].items())
    return f"{p['strategy']}({params}) @ {p['max_tokens']:,}"


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1%}"


def part_b(convs: list, workers: int | None) -> None:
    grid = Grid.parse(MAIN)
    print("## b. main strategies, default parameters, 100 runs (cost: every call of every run, prompt cache included)")
    print("| strategy | limit | input tokens | saved vs none | needed_recall | cached (gpt-4o) | cost gpt-4o | vs none "
          "| cached (sonnet-4) | cost claude-sonnet-4 | vs none | invalid |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    by_model = {m: run_sweep(convs, grid, [3000, 6000], model=m, workers=workers) for m in ("gpt-4o", "claude-sonnet-4")}
    oa, an = by_model["gpt-4o"], by_model["claude-sonnet-4"]
    base_o, base_a = oa.baseline, an.baseline
    print(f"| none | any | {base_o['input_tokens_total']:,} | - | {_pct(base_o['needed_recall'])} | "
          f"{_pct(base_o['cached_share'])} | ${base_o['cost_usd']:.2f} | - | {_pct(base_a['cached_share'])} | "
          f"${base_a['cost_usd']:.2f} | - | 0 |")
    for p, q in sorted(zip(oa.points, an.points), key=lambda pq: (pq[0]["max_tokens"], MAIN.index(pq[0]["strategy"]))):
        print(f"| {p['strategy']} | {p['max_tokens']:,} | {p['input_tokens_total']:,} | {_pct(p['saved'])} | "
              f"{_pct(p['needed_recall'])} | {_pct(p['cached_share'])} | ${p['cost_usd']:.2f} | "
              f"{p['cost_vs_none']:+.1%} | {_pct(q['cached_share'])} | ${q['cost_usd']:.2f} | {q['cost_vs_none']:+.1%} "
              f"| {p['invalid']} |")
    print("(claude-sonnet-4 tokens are estimates: counted with cl100k_base; the cache rule is Anthropic's)")


def part_c(convs: list, workers: int | None) -> None:
    grid = Grid.parse(["sliding_window", "summarize", "tool_rounds"], GRID)
    for level in (0.95, 0.9):
        tune = run_sweep(convs[:50], grid, BUDGETS, workers=workers, min_recall=level)
        if tune.recommendation is None:
            print(f"## c. min_recall {level}: no point qualifies on runs 0-49")
            continue
        pick = tune.points[tune.recommendation]
        held = run_sweep(convs[50:], Grid.from_dict({pick["strategy"]: {k: [v] for k, v in pick["params"].items()}}),
                         [pick["max_tokens"]], workers=workers, min_recall=level)
        q = held.points[0]
        print(f"## c. min_recall {level}: picked on runs 0-49: {_label(pick)} (needed_recall {_pct(pick['needed_recall'])}, "
              f"cost ${pick['cost_usd']:.2f}, {pick['cost_vs_none']:+.1%} vs none); on runs 50-99: needed_recall "
              f"{_pct(q['needed_recall'])}, cost ${q['cost_usd']:.2f} ({q['cost_vs_none']:+.1%} vs none), invalid {q['invalid']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(HERE.parent.parent / "shared" / "data"))
    ap.add_argument("--workers", type=int, default=None, help="processes (default: every core)")
    ap.add_argument("--only", choices=["a", "b", "c"])
    a = ap.parse_args()
    convs = tau_runs(Path(a.data))
    for name, part in (("a", part_a), ("b", part_b), ("c", part_c)):
        if a.only in (None, name):
            part(convs, a.workers)


if __name__ == "__main__":
    main()
