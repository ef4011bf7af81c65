"""The call-by-call replay: what it measures, what it costs, and how it scales.

a. Needed recall / calls over the limit / cost of the main strategies (budget-scaled defaults, as
   the Lab and the sweep use them) at two limits, run before every model call and only when a user
   message arrives, on the 100 tau-bench airline runs and on autonomous runs (one user message,
   dozens of calls: 20 generated agent runs and the bundled agent_run_support sample).
b. Sweep speed: 3 strategies x 20 points x the 100 tau-bench runs replayed call by call
   (apply_at=every_call), against the same grid at turn start (one application per user turn, the
   replay before this change), in the same run; the ratio.
c. Scaling of one replay with the number of messages (short messages, everything fits): seconds
   and peak memory at 1k / 10k / 60k messages, for none and sliding_window.
d. One replay of a 467-message, ~165k-token agent run (the size of a long coding-agent trace).
e. Cost per call of every registered strategy (budget-scaled defaults, 16,000-token budget, so the
   strategies act) on generated agent runs of about 1,000 and 60,000 messages: CPU seconds per model
   call at each size and their ratio (target: within 2x, i.e. the 60k/1k total ratio within 2x of
   the call-count ratio). A strategy whose 60k replay passes ``--cap`` CPU seconds is stopped there;
   its ratio is then a lower bound (cost per call grows with the prompt, so the calls not replayed
   cost more) and is printed as ">= x". Each replay starts cold (no view of the conversation kept
   from an earlier replay, no text counted before); the tokenizer is loaded before.

    python benchmarks/bench_calls.py [--data ../shared/data] [--workers N] [--only a|b|c|d|e] [--cap 120]
        [--strategies NAME ...]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import time
import tracemalloc
from pathlib import Path

from ctxlab import load, loads
from ctxlab.conversation import Conversation, Message, ToolCall
from ctxlab.generate import generate
from ctxlab.replay import _WHOLE, replay
from ctxlab.strategies import Budget
from ctxlab.sweep import Grid, run_sweep
from ctxlab.tokens import _CACHES

HERE = Path(__file__).resolve().parent
MAIN = ["sliding_window", "summarize", "tool_rounds", "clear_tool_results", "turn_safe"]
GRID = ["sliding_window.buffer_ratio=0.0,0.1,0.2,0.3,0.5",
        "summarize.keep_recent=2,4,6,8,10",
        "tool_rounds.keep_rounds=0,1,2,3,4"]
BUDGETS = [2000, 3000, 4500, 6000]


def tau_runs(data: Path) -> list[Conversation]:
    """The 100 tau-bench airline runs as conversations (gpt-4o, with the 14 airline tools)."""
    runs = json.loads((data / "tau-bench" / "airline_trajectories_trials01.json").read_text())
    tools = json.loads((data / "tau-bench" / "tools_airline.json").read_text())
    return [loads(json.dumps({"model": "gpt-4o", "messages": r["traj"], "tools": tools})) for r in runs]


def agent_runs() -> list[Conversation]:
    """20 generated autonomous runs (one user message) and the bundled agent_run_support sample."""
    runs = [generate(("ecommerce", "sql", "travel")[k % 3], turns=6 + k % 5, rounds_per_turn=3, result_tokens=350,
                     seed=100 + k, shape="agent_run") for k in range(20)]
    return runs + [load(HERE.parent / "sample_data" / "agent_run_support.json")]


def _row(label: str, p: dict) -> str:
    recall = "n/a" if p["needed_recall"] is None else f"{p['needed_recall']:.3f}"
    cost = "n/a" if p["cost_usd"] is None else f"${p['cost_usd']:.2f}"
    return (f"| {label} | {p['strategy']} | {p['max_tokens']:,} | {p['params'].get('apply_at', 'every_call')} | "
            f"{recall} | {p['calls_over_limit']:,} of {p['calls']:,} | {p['fits_rate']:.0%} | {cost} |")


def part_a(sets: dict[str, list[Conversation]], workers: int | None, budgets: dict[str, list[int]]) -> None:
    print("## a. main strategies, both places, two limits (budget-scaled defaults)")
    print("| traces | strategy | limit | apply_at | needed_recall | calls over limit | fits_rate | cost gpt-4o |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, convs in sets.items():
        grid = Grid.from_dict({name: {"apply_at": ["every_call", "turn_start"]} for name in MAIN})
        res = run_sweep(convs, grid, budgets[label], model="gpt-4o", workers=workers)
        base = res.baseline
        print(f"| {label} | none | {max(budgets[label]):,} | - | {base['needed_recall']:.3f} | "
              f"{base['calls_over_limit']:,} of {base['calls']:,} | {base['fits_rate']:.0%} | ${base['cost_usd']:.2f} |")
        for p in sorted(res.points, key=lambda p: (p["max_tokens"], MAIN.index(p["strategy"]), p["params"]["apply_at"])):
            print(_row(label, p))


def part_b(convs: list[Conversation], workers: int | None) -> None:
    print("## b. sweep speed: 3 strategies x 20 points x 100 runs")
    times = {}
    for where in ("turn_start", "every_call"):
        spec = GRID + [f"{s}.apply_at={where}" for s in ("sliding_window", "summarize", "tool_rounds")]
        grid = Grid.parse(["sliding_window", "summarize", "tool_rounds"], spec)
        t0 = time.perf_counter()
        res = run_sweep(convs, grid, BUDGETS, workers=workers)
        times[where] = time.perf_counter() - t0
        calls = res.points[0]["calls"]
        apps = sum(1 for c in convs for m in c.messages if m.role == "user") if where == "turn_start" else calls
        print(f"apply_at={where}: {len(res.points)} points x {len(convs)} runs, {times[where]:.1f} s wall "
              f"({calls:,} calls per point; about {apps:,} applications per point)")
    load = os.getloadavg()
    print(f"ratio every_call / turn_start: {times['every_call'] / times['turn_start']:.2f}x; workers "
          f"{workers or os.cpu_count()}; load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}")


def short_run(n: int) -> list[Message]:
    """A run of ``n`` short messages: system, user, then tool rounds (call + result) to the end."""
    out = [Message("system", "Be brief."), Message("user", "Check every item.")]
    k = 0
    while len(out) < n:
        out.append(Message("assistant", "", tool_calls=(ToolCall(f"c{k}", "check", f'{{"item":{k}}}'),)))
        out.append(Message("tool", f'{{"item":{k},"ok":true}}', tool_call_id=f"c{k}"))
        k += 1
    return out[:n] if out[n - 1:n] and out[n - 1].role == "tool" else out[:n - 1]


def part_c() -> None:
    limit = 4_000_000  # every prompt fits at every size: the figures measure the replay, not plans
    print(f"## c. one replay, short messages, everything fits ({limit:,}-token limit)")
    print("| messages | strategy | calls | seconds | peak MB | s per 1k calls |")
    print("| --- | --- | --- | --- | --- | --- |")
    replay(short_run(20), "none", Budget(limit), model="gpt-4o")  # the tokenizer loaded once, outside the figures
    seconds: dict[str, list[tuple[int, float]]] = {}
    for n in (1_000, 10_000, 60_000):
        msgs = short_run(n)
        for name in ("none", "sliding_window"):
            t0 = time.perf_counter()
            r = replay(msgs, name, Budget(limit), model="gpt-4o")
            dt = time.perf_counter() - t0
            tracemalloc.start()  # a second run for memory: tracing slows Python several times
            replay(msgs, name, Budget(limit), model="gpt-4o")
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            assert r.applications == 0 or r.times_triggered == 0, "the limit was meant to hold everything"
            seconds.setdefault(name, []).append((len(msgs), dt))
            print(f"| {len(msgs):,} | {name} | {len(r.calls):,} | {dt:.2f} | {peak:.0f} | {1000 * dt / len(r.calls):.2f} |")
    print("\nscaling (linear: the time ratio equals the size ratio; per 10x: the time ratio scaled to 10x more "
          "messages, 10.0 when linear):")
    for name, rows in seconds.items():
        steps = []
        for (n0, t0), (n1, t1) in zip(rows, rows[1:]):
            per10 = (t1 / t0) ** (1 / math.log10(n1 / n0))
            steps.append(f"{n0:,} -> {n1:,} messages: x{t1 / t0:.1f} for x{n1 / n0:.0f} (per 10x: x{per10:.1f})")
        print(f"- {name}: " + "; ".join(steps))
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}")


def part_d() -> None:
    conv = generate("ecommerce", turns=58, rounds_per_turn=4, result_tokens=700, seed=5, shape="agent_run")
    from ctxlab.tokens import count_tokens
    total = count_tokens(conv, "gpt-4o").total
    print(f"## d. a {len(conv.messages)}-message, {total:,}-token agent run, replayed call by call")
    replay(conv, "none", Budget(200_000))  # counts cached, as in the app after loading
    for name, limit in (("none", 200_000), ("sliding_window", 32_000), ("clear_tool_results", 32_000),
                        ("summarize", 32_000)):
        t0 = time.perf_counter()
        r = replay(conv, name, Budget(limit))
        dt = time.perf_counter() - t0
        print(f"{name} @ {limit:,}: {dt:.2f} s for {len(r.calls)} calls (target < 1 s), "
              f"{r.calls_over_limit} over the limit")


class _Stopped(Exception):
    pass


def agent_run_of(n: int) -> Conversation:
    """A generated agent run of about ``n`` messages: 20-round turns, several runs' turns one after
    the other past the generator's 500 turns (each later run's system prompt left out)."""
    msgs: list[Message] = []
    seed = 0
    while len(msgs) < n:
        turns = min(500, max(1, (n - len(msgs)) // 41 + 1))
        run = generate("ecommerce", turns=turns, rounds_per_turn=20, result_tokens=300, seed=7 + seed, shape="agent_run")
        msgs += [m for m in run.messages if not (msgs and m.role == "system")]
        seed += 1
    return Conversation(messages=tuple(msgs[:n] if msgs[n - 1].role != "user" else msgs[:n - 1]), model="gpt-4o")


def part_e(cap: float, names: list[str] | None = None) -> None:
    from ctxlab.strategies import STRATEGIES, get_strategy
    budget = Budget(16_000)
    small, large = agent_run_of(1_000), agent_run_of(60_000)
    print(f"## e. cost per model call at {len(small.messages):,} and {len(large.messages):,} messages "
          f"(16,000-token budget, budget-scaled defaults; CPU seconds; cap {cap:.0f} s)")
    print("| strategy | calls 1k | ms per call 1k | calls 60k | ms per call 60k | ratio | target (<= 2x) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    replay(small, "none", budget)  # tokenizer and counts warm
    for name, cls in STRATEGIES.items():
        if names and name not in names:
            continue
        strategy = get_strategy(name, **cls.scaled_defaults(budget))
        per = []
        for conv, limit in ((small, None), (large, cap)):
            done = [0]
            _WHOLE.clear()  # each size pays for its own view (counts, facts): no replay before it left one
            for counts in _CACHES.values():  # and counts its own texts (the warm-up replay counted the 1k run's)
                counts.clear()
                counts.chars = 0
            t0 = time.process_time()

            def observe(call, view, t0=t0, limit=limit, done=done):
                done[0] += 1
                if limit is not None and time.process_time() - t0 > limit:
                    raise _Stopped
            stopped = False
            try:
                replay(conv, strategy, budget, observe=observe)
            except _Stopped:
                stopped = True
            per.append((done[0], (time.process_time() - t0) / max(done[0], 1), stopped))
        (n1, c1, _), (n2, c2, stopped) = per
        ratio = c2 / c1 if c1 else float("inf")
        shown = f">= {ratio:.1f}" if stopped else f"{ratio:.1f}"
        verdict = ("missed" if ratio > 2 else "not known (stopped)") if stopped else ("met" if ratio <= 2 else "missed")
        calls2 = f"{n2:,} (stopped)" if stopped else f"{n2:,}"
        print(f"| {name} | {n1:,} | {1000 * c1:.2f} | {calls2} | {1000 * c2:.2f} | {shown} | {verdict} |")
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(HERE.parent.parent / "shared" / "data"))
    ap.add_argument("--workers", type=int, default=None, help="processes (default: every core)")
    ap.add_argument("--only", choices=["a", "b", "c", "d", "e"])
    ap.add_argument("--cap", type=float, default=120.0, help="part e: CPU seconds a 60k replay may take (default 120)")
    ap.add_argument("--strategies", nargs="+", help="part e: only these strategies (default: every registered one)")
    a = ap.parse_args()
    tau = tau_runs(Path(a.data)) if a.only in (None, "a", "b") else []
    if a.only in (None, "a"):
        part_a({"tau-bench (100 runs)": tau, "agent runs (21)": agent_runs()}, a.workers,
               {"tau-bench (100 runs)": [6000, 12000], "agent runs (21)": [8000, 16000]})
    if a.only in (None, "b"):
        part_b(tau, a.workers)
    if a.only in (None, "c"):
        part_c()
    if a.only in (None, "d"):
        part_d()
    if a.only in (None, "e"):
        part_e(a.cap, a.strategies)


if __name__ == "__main__":
    main()
