"""Strategy Lab rerun time on a ~10,000-message conversation, in Streamlit's AppTest. Prints figures;
asserts nothing.

    python benchmarks/bench_app.py [--turns 455] [--rounds 4] [--parallel 4] [--reruns 15]

The target (issue 19.4): a rerun of the Strategy Lab on 10,000 messages under 100 ms median (issue
13's was 300 ms at 1,000). The conversation is generated through the sidebar's own Generate
controls (455 turns x 4 tool rounds x 4 parallel calls = 10,011 messages); the first load (generate,
count, plan) is timed once, then every rerun after moving one strategy control (``keep_rounds`` of
the default strategy, a new value each time, so each rerun plans afresh) and, for comparison,
reruns after changing a table filter (the plan comes from the cache). A rerun's time is the wall
time of ``AppTest.run()``: the whole script plus AppTest reading its output, an upper bound on the
server's time.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest

PAGE = ROOT / "pages" / "strategy_lab.py"
TARGET_MS = 100.0


def timed_run(at: AppTest) -> float:
    """One rerun, in ms; stops on an exception in the page."""
    t = time.perf_counter()
    at.run()
    ms = (time.perf_counter() - t) * 1000
    if at.exception:
        raise SystemExit(f"the page raised: {at.exception[0].value}")
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
          f"{len(at.multiselect(key='pins').options):,} messages; tokens before "
          f"{next(m.value for m in at.metric if m.label == 'Tokens before')}, messages removed {n}")
    print(f"first load (generate, count, plan, draw):     {first:7.1f} ms")

    control = at.number_input(key="lab_tool_rounds_keep_rounds")
    moved = []
    for k in range(args.reruns):
        control.set_value(2 + k)
        moved.append(timed_run(at))
        control = at.number_input(key="lab_tool_rounds_keep_rounds")
    report("rerun after moving keep_rounds (new plan)", moved)

    filtered = []
    for k in range(args.reruns):
        at.multiselect(key="lab_filter_actions").set_value(["drop"] if k % 2 == 0 else ["keep"])
        filtered.append(timed_run(at))
    report("rerun after changing a filter (cached plan)", filtered)


if __name__ == "__main__":
    main()
