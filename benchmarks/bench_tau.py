"""Import, validate and count all 100 tau-bench airline runs in ../shared/data (real gpt-4o
agent trajectories). Prints per-step totals and any failure; asserts nothing.

Then the counting paths on the same runs one by one: tiktoken's
``encode_ordinary_batch`` (a new pool of 8 threads per call), a plain serial ``encode_ordinary``
loop, and ctxlab's own count with cold caches, which picks serial or threads by size.

    python benchmarks/bench_tau.py [--data ../shared/data]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ctxlab import TokenCounter, count_tokens, loads
from ctxlab import tokens as tokens_mod
from ctxlab.validate import is_valid, validate

from bench_count import _median  # run as a script: benchmarks/ is on sys.path

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(HERE.parent.parent / "shared" / "data"))
    ap.add_argument("--repeat", type=int, default=5)
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
    convs = [loads(json.dumps({"model": "gpt-4o", "messages": run["traj"], "tools": tools})) for run in runs]
    compare_paths(convs, a.repeat)


def compare_paths(convs, repeat: int) -> None:
    """Time the three ways of counting each run's texts, one run after the other."""
    enc = TokenCounter("gpt-4o")._enc
    per_run = [list(dict.fromkeys(tokens_mod._texts(c.messages))) for c in convs]

    def batch() -> None:
        for texts in per_run:
            enc.encode_ordinary_batch(texts)

    def serial() -> None:
        for texts in per_run:
            [len(enc.encode_ordinary(t)) for t in texts]

    def ctxlab_cold() -> None:
        tokens_mod._CACHES.clear()
        for c in convs:
            count_tokens(c)

    times = {name: _median(fn, repeat) for name, fn in
             [("batch", batch), ("serial", serial), ("ctxlab", ctxlab_cold)]}
    chars = sum(len(t) for texts in per_run for t in texts)
    print(f"\ncounting the {len(convs)} runs one by one ({chars / len(convs):,.0f} characters of text per run, "
          f"median of {repeat}):")
    print(f"  tiktoken encode_ordinary_batch per run   {times['batch'] * 1000:7.1f} ms")
    print(f"  serial encode_ordinary per run           {times['serial'] * 1000:7.1f} ms   "
          f"batch / serial {times['batch'] / times['serial']:.2f}x")
    print(f"  ctxlab count_tokens, cold caches         {times['ctxlab'] * 1000:7.1f} ms   "
          f"ctxlab / serial {times['ctxlab'] / times['serial']:.2f}x (includes framing, tools, categories)")


if __name__ == "__main__":
    main()
