"""``ctxlab replay`` against ``ctxlab count`` on the same trace (within 3x).

Each command is a fresh ``python -m ctxlab`` process (so the price table, the tokenizer and the
readers are loaded as a user's shell loads them); the best of ``--repeat`` runs of each, their
ratio, and the load average beside them. Asserts nothing.

    python benchmarks/bench_replay_vs_count.py FILE... [--strategy clear_tool_results] [--max-tokens 200000]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _best(cmd: list[str], repeat: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--strategy", default="clear_tool_results")
    ap.add_argument("--max-tokens", default="200000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.1f}; best of {args.repeat}")
    print(f"{'file':44} {'count s':>8} {'replay s':>9} {'ratio':>6} {'target':>7}")
    for f in args.files:
        base = [sys.executable, "-m", "ctxlab"]
        count = _best([*base, "count", f], args.repeat)
        replay = _best([*base, "replay", f, "--strategy", args.strategy, "--max-tokens", args.max_tokens], args.repeat)
        ratio = replay / count
        print(f"{Path(f).name[:44]:44} {count:8.2f} {replay:9.2f} {ratio:6.2f} {'met' if ratio <= 3 else 'missed':>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
