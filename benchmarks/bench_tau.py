"""Import, validate and count all 100 tau-bench airline runs in ../shared/data (real gpt-4o
agent trajectories). Prints per-step totals and any failure; asserts nothing.

    python benchmarks/bench_tau.py [--data ../shared/data]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ctxlab import count_tokens, loads
from ctxlab.validate import is_valid, validate

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(HERE.parent.parent / "shared" / "data"))
    a = ap.parse_args()
    path = Path(a.data) / "tau-bench" / "airline_trajectories_trials01.json"
    runs = json.loads(path.read_text())
    tools = json.loads((Path(a.data) / "tau-bench" / "tools_airline.json").read_text())
    failures, invalid, totals, n_msgs = [], 0, [], 0
    t_import = t_validate = t_count = 0.0
    t0 = time.perf_counter()
    for run in runs:
        text = json.dumps({"model": "gpt-4o", "messages": run["traj"], "tools": tools})
        try:
            t = time.perf_counter(); conv = loads(text); t_import += time.perf_counter() - t
            t = time.perf_counter()
            ok = is_valid(validate(conv, rules="openai"))
            t_validate += time.perf_counter() - t
            invalid += not ok
            t = time.perf_counter(); c = count_tokens(conv); t_count += time.perf_counter() - t
            totals.append(c.total); n_msgs += len(conv)
        except Exception as e:  # report, do not stop: the figure is how many pass
            failures.append(f"task {run.get('task_id')}: {type(e).__name__}: {e}")
    wall = time.perf_counter() - t0
    print(f"runs: {len(runs)}, imported+counted: {len(totals)}, failures: {len(failures)}, "
          f"invalid under openai rules: {invalid}")
    print(f"messages: {n_msgs:,}; prompt tokens per run (gpt-4o, with 14 tool definitions): "
          f"min {min(totals):,} / mean {sum(totals) // len(totals):,} / max {max(totals):,}")
    print(f"time: import {t_import:.2f} s, validate {t_validate:.3f} s, count {t_count:.2f} s, "
          f"total {wall:.2f} s (cold caches, one process)")
    for f in failures[:10]:
        print("  " + f)


if __name__ == "__main__":
    main()
