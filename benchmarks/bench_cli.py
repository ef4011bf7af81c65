"""Cold start of the main CLI commands: each run is a fresh ``python -m ctxlab`` process.

Target: under 2 s from a cold shell for ``ctxlab tools query`` on the sample catalog
and ``ctxlab count`` / ``ctxlab apply`` on a small file. "Cold" here means a new interpreter (no
module imported yet); the operating system's file cache is warm after the first run, which is
why the first run of each command is left out. The tool index is built before the query is
timed (its first build is a separate cost, printed with ``--build``). Prints, per command, the
median and the best wall time, the ratio to ``python -c pass`` and to the 2 s target, and with
``--imports`` the heaviest top-level imports (from ``python -X importtime``); the CPU seconds of
each run beside its wall time (on a loaded machine wall time is mostly waiting). Asserts nothing.

    python benchmarks/bench_cli.py [--repeat 5] [--imports] [--build]
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 2.0
SAMPLE = str(ROOT / "sample_data" / "ecommerce_refund.json")
CATALOG = str(ROOT / "sample_data" / "tools_ecommerce.json")
COMMANDS = {
    "count": ["count", SAMPLE],
    "apply": ["apply", SAMPLE, "--strategy", "sliding_window", "--max-tokens", "4000"],
    "tools query": ["tools", "query", "--catalog", CATALOG, "refund"],
    "strategies": ["strategies"],
    "--help": ["--help"],
}


def _env(data_dir: str) -> dict[str, str]:
    """This checkout first on the path; the tool index in a scratch directory."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "CTXLAB_DATA_DIR": data_dir}


_CPU: list[float] = []  #: CPU seconds (user + system) of each child run, beside its wall time


def _wall(argv: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    _CPU.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode()[-500:]}")
    return took


def _imports(argv: list[str], env: dict[str, str], top: int = 6) -> str:
    """The heaviest imports of one run, as 'name ms' (cumulative, outermost modules only)."""
    done = subprocess.run([sys.executable, "-X", "importtime", *argv[1:]], env=env, cwd=ROOT, capture_output=True,
                          text=True)
    rows = []
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if m and len(m.group(2)) <= 1:  # a top-level import (not one made inside another)
            rows.append((int(m.group(1)) / 1000, m.group(3)))
    total = sum(ms for ms, _ in rows)
    heavy = ", ".join(f"{name} {ms:.0f}" for ms, name in sorted(rows, reverse=True)[:top])
    return f"imports {total:.0f} ms: {heavy}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--imports", action="store_true", help="print each command's heaviest imports")
    ap.add_argument("--build", action="store_true", help="also time the first query, which builds the index")
    args = ap.parse_args()
    data_dir = tempfile.mkdtemp(prefix="ctxlab-bench-cli-")
    try:
        env = _env(data_dir)
        query = [sys.executable, "-m", "ctxlab", *COMMANDS["tools query"]]
        first = _wall(query, env)  # builds the index (and warms the file cache)
        if args.build:
            print(f"first `tools query` (builds the index of {Path(CATALOG).name}): {first:.2f} s")
        base = [_wall([sys.executable, "-c", "pass"], env) for _ in range(args.repeat + 1)][1:]
        base_s = statistics.median(base)
        print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min); {os.cpu_count()} cores; "
              f"{args.repeat} runs each after one warm-up run")
        print(f"python -c pass: median {base_s * 1000:.0f} ms")
        print(f"{'command':<14} {'median s':>9} {'best s':>7} {'x pass':>7} {'x target':>9}  {'CPU s':>6}")
        for name, cli in COMMANDS.items():
            argv = [sys.executable, "-m", "ctxlab", *cli]
            _CPU.clear()
            times = [_wall(argv, env) for _ in range(args.repeat + 1)][1:]
            med, cpu = statistics.median(times), statistics.median(_CPU[1:])
            verdict = "ok" if med < TARGET_S else "MISS"
            print(f"{name:<14} {med:9.2f} {min(times):7.2f} {med / base_s:7.1f} {med / TARGET_S:9.2f}  {cpu:6.2f}  "
                  f"{verdict}")
            if args.imports:
                print(f"{'':<14} {_imports(argv, env)}")
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
