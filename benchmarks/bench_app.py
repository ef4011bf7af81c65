"""Strategy Lab rerun time on a ~10,000-message conversation, in Streamlit's AppTest. Prints figures;
asserts nothing.

    python benchmarks/bench_app.py [--turns 455] [--rounds 4] [--parallel 4] [--reruns 15]

The target: a rerun of the Strategy Lab on 10,000 messages under 100 ms median (issue
13's was 300 ms at 1,000). The conversation is generated through the sidebar's own Generate
controls (455 turns x 4 tool rounds x 4 parallel calls = 10,011 messages); the first load (generate,
count, plan) is timed once, then every rerun after moving one strategy control (``keep_rounds`` of
the default strategy, a new value each time, so each rerun plans afresh) and, for comparison,
reruns after changing a table filter (the plan comes from the cache). A rerun's time is the wall
time of ``AppTest.run()``: the whole script plus AppTest reading its output, an upper bound on the
server's time. Beside it, the page script's own run (Streamlit executing the page, which is what a
server does on a rerun; AppTest also recompiles the page file on every run, a server compiles it once).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.chdir(ROOT)  # Streamlit reads the app's settings (.streamlit/config.toml) from the folder it starts in

from streamlit import config

from streamlit.runtime.scriptrunner import script_runner
from streamlit.testing.v1 import AppTest

import ctxlab

PAGE = ROOT / "pages" / "strategy_lab.py"
TARGET_MS = 100.0
SCRIPT_MS: list[float] = []
"""The page script's own time of each run (appended by the wrapper below)."""
_exec = script_runner.exec_func_with_error_handling


def _timed_exec(func, ctx):  # the script runner's call that executes the page (its thread)
    t = time.perf_counter()
    try:
        return _exec(func, ctx)
    finally:
        SCRIPT_MS.append((time.perf_counter() - t) * 1000)


script_runner.exec_func_with_error_handling = _timed_exec


def timed_run(at: AppTest, script: list[float] | None = None) -> float:
    """One rerun, in ms (the page script's own time appended to ``script``); stops on an
    exception in the page."""
    SCRIPT_MS.clear()
    t = time.perf_counter()
    at.run()
    ms = (time.perf_counter() - t) * 1000
    if at.exception:
        raise SystemExit(f"the page raised: {at.exception[0].value}")
    if script is not None:
        script.append(sum(SCRIPT_MS))
    return ms


def p90(values: list[float]) -> float:
    """The 90th percentile (nearest rank)."""
    ordered = sorted(values)
    return ordered[max(0, round(0.9 * len(ordered)) - 1)]


def report(label: str, times: list[float]) -> None:
    med = statistics.median(times)
    print(f"{label:<44} median {med:7.1f} ms   p90 {p90(times):7.1f} ms   "
          f"ratio to {TARGET_MS:.0f} ms: {med / TARGET_MS:.2f} (p90 {p90(times) / TARGET_MS:.2f})   n={len(times)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--turns", type=int, default=455)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--reruns", type=int, default=15)
    args = ap.parse_args()

    print(f"settings: runner.magicEnabled={config.get_option('runner.magicEnabled')}, "
          f"browser.gatherUsageStats={config.get_option('browser.gatherUsageStats')} (.streamlit/config.toml)")
    at = AppTest.from_file(str(PAGE), default_timeout=300)
    at.session_state["source"] = "generate"
    at.session_state["gen_turns"] = args.turns
    at.session_state["gen_rounds_per_turn"] = args.rounds
    at.session_state["gen_parallel_calls"] = args.parallel
    at.session_state["gen_result_tokens"] = 200
    at.run()
    at.button(key="gen_go").click()
    first = timed_run(at)
    if at.exception:
        raise SystemExit(f"the page raised: {at.exception[0].value}")
    n = next(m.value for m in at.metric if m.label == "Messages removed")
    print(f"conversation: {at.session_state['conversation_label']}; "
          f"{len(ctxlab.loads(at.session_state['conversation_text'])):,} messages; tokens before "
          f"{next(m.value for m in at.metric if m.label == 'Tokens before')}, messages removed {n}")
    print(f"first load (generate, count, plan, draw):     {first:7.1f} ms")

    control = at.number_input(key="lab_tool_rounds_keep_rounds")
    moved, moved_script = [], []
    for k in range(args.reruns):
        control.set_value(2 + k)
        moved.append(timed_run(at, moved_script))
        control = at.number_input(key="lab_tool_rounds_keep_rounds")
    report("rerun after moving keep_rounds (new plan)", moved)
    report("  of which the page script", moved_script)

    filtered, filtered_script = [], []
    for k in range(args.reruns):
        at.multiselect(key="lab_filter_actions").set_value(["drop"] if k % 2 == 0 else ["keep"])
        filtered.append(timed_run(at, filtered_script))
    report("rerun after changing a filter (cached plan)", filtered)
    report("  of which the page script", filtered_script)


if __name__ == "__main__":
    main()
