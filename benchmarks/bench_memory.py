"""Peak memory and wall time of `ctxlab count` and `ctxlab apply` on a ~50 MB conversation.

Target: peak RSS at most 8x the file size. Each command runs in its own process; its
peak RSS comes from os.wait4 (the kernel's ru_maxrss for that child alone). A run on a tiny file
gives the fixed cost (Python, tiktoken and its encoding loaded). Prints figures; asserts nothing.

    python benchmarks/bench_memory.py [--mb 48] [--keep FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ctxlab import export
from ctxlab.generate import generate

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO = 8.0


SHAPES = {"large-results": dict(result_tokens=1000, parallel_calls=1),
          "small-messages": dict(result_tokens=200, parallel_calls=4),
          "short-chat": None}
_WORDS = "order ship refund track item price city flight hotel date seat bag".split()


def _short_chat(megabytes: float) -> list:
    """About half a million user/assistant messages of 12 words each: the most objects per MB."""
    rnd = random.Random(0)
    messages: list = [{"role": "system", "content": "You are a helpful agent."}]
    size = 0
    while size < megabytes * 1e6:
        m = {"role": "assistant" if len(messages) % 2 == 0 else "user",
             "content": " ".join(rnd.choice(_WORDS) for _ in range(12))}
        messages.append(m)
        size += len(json.dumps(m)) + 2
    if messages[-1]["role"] == "user":
        messages.pop()
    return messages


def _generated(megabytes: float, shape: str) -> tuple[list, list]:
    """Generated ecommerce turns in 200-turn pieces with different seeds (call ids carry the
    seed, so they stay unique; one system prompt), trimmed to the size at the end of a turn."""
    messages: list = []
    tools: list = []
    size, seed = 0, 1
    while size < megabytes * 1e6:
        data = export(generate("ecommerce", turns=200, rounds_per_turn=4, seed=seed, **SHAPES[shape]), "openai").data
        part = [m for m in data["messages"] if not (messages and m.get("role") == "system")]
        size += len(json.dumps(part).encode())
        messages += part
        tools = tools or data.get("tools", [])
        seed += 1
    while len(messages) > 2 and (size > megabytes * 1e6 or messages[-1].get("role") != "assistant"
                                 or messages[-1].get("tool_calls")):
        size -= len(json.dumps(messages.pop()).encode()) + 2
    return messages, tools


def write_conversation(path: Path, megabytes: float, shape: str = "large-results") -> int:
    """Write a conversation of about ``megabytes`` MB (OpenAI chat JSON); returns its size in
    bytes. ``shape``: generated turns with tool results of ~1,000 tokens (as in
    benchmarks/bench_count.py), or of ~200 tokens with 4 parallel calls per round (about twice
    as many messages per MB), or ``short-chat``, short messages only (about 20x as many)."""
    messages, tools = (_short_chat(megabytes), []) if SHAPES[shape] is None else _generated(megabytes, shape)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"model": "gpt-4o", "messages": messages, "tools": tools}, f)
    return path.stat().st_size


_LAUNCHER = """
import json, os, subprocess, sys, time
t = time.perf_counter()
p = subprocess.Popen([sys.executable, "-m", "ctxlab", *sys.argv[1:]], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = p.stderr.read()
_, status, usage = os.wait4(p.pid, 0)
print(json.dumps([usage.ru_maxrss, time.perf_counter() - t, os.waitstatus_to_exitcode(status), err.decode(errors="replace")[-300:]]))
"""


def run_measured(argv: list[str]) -> tuple[float, float, int]:
    """(peak RSS in MB, wall seconds, exit code) of one ctxlab command in a fresh process.

    A small launcher process starts the command: a child forked straight from this process
    would start with this process's pages (the generated conversation) counted in its peak."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", _LAUNCHER, *argv], capture_output=True, text=True, env=env, check=True)
    maxrss_kib, wall, code, err = json.loads(out.stdout)
    if code:
        print(f"  ({argv[0]} exited {code}: {err.strip()})")
    return maxrss_kib / 1024, wall, code  # ru_maxrss is in KiB on Linux


_PARSE = """
import gc, json, sys, time
from ctxlab.formats import load_all
path = sys.argv[1]
data = open(path, "rb").read()
def timed(f):
    gc.collect()
    w, c = time.perf_counter(), time.process_time()
    f()
    return time.perf_counter() - w, time.process_time() - c
best = {"json": [9e9, 9e9], "ctxlab": [9e9, 9e9]}
for _ in range(5):
    for name, f in (("json", lambda: json.load(open(path, encoding="utf-8"))), ("ctxlab", lambda: load_all(data))):
        best[name] = [min(a, b) for a, b in zip(best[name], timed(f))]
print(json.dumps(best))
"""


def parse_ratio(path: Path) -> None:
    """Print the time of ctxlab's parsing (``load_all``: decode, JSON, depth check, detection,
    reading, checks) against ``json.load`` of the same file, wall and CPU, best of 5 (alternating;
    on this shared 2-core machine two runs left the ratio to the machine's noise), in a fresh
    process (target, at most 2x on the short-message file)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", _PARSE, str(path)], capture_output=True, text=True, env=env,
                         check=True)
    best = json.loads(out.stdout)
    (jw, jc), (cw, cc) = best["json"], best["ctxlab"]
    print(f"parsing: json.load wall {jw:.2f} s, CPU {jc:.2f} s; ctxlab load_all wall {cw:.2f} s, CPU {cc:.2f} s: "
          f"ratio {cw / jw:.2f}x wall, {cc / jc:.2f}x CPU (target <= 2x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=48.0, help="conversation size (the CLI refuses over 50 MiB)")
    ap.add_argument("--shape", choices=sorted(SHAPES), action="append",
                    help="conversation shape(s) to measure (default: all)")
    ap.add_argument("--keep", help="directory to keep the conversations in instead of a temporary one")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tiny = Path(tmp) / "tiny.json"
        tiny.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
        print(f"load average {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
        base_rss, base_wall, _ = run_measured(["count", str(tiny)])
        print(f"fixed cost (count of a 1-message file): {base_rss:.0f} MB peak RSS, {base_wall:.2f} s")
        for shape in a.shape or sorted(SHAPES):
            big = Path(a.keep or tmp) / f"conversation-{shape}.json"
            size = write_conversation(big, a.mb, shape)
            n = len(json.loads(big.read_text())["messages"])
            print(f"\n{shape}: {size / 1e6:.1f} MB, {n:,} messages")
            _measure(big, size, base_rss)
            parse_ratio(big)


def _measure(big: Path, size: int, base_rss: float) -> None:
    """Print peak RSS, its ratio to the file size, and wall time of count and apply on ``big``."""
    for argv in (["count", str(big)], ["apply", str(big), "--strategy", "sliding_window"]):
        rss, wall, _ = run_measured(argv)
        ratio = rss * 1024 * 1024 / size
        print(f"ctxlab {argv[0]:<6} peak RSS {rss:7.0f} MB  ({ratio:.1f}x the file, target <= {TARGET_RATIO:.0f}x; "
              f"{(rss - base_rss) * 1024 * 1024 / size:.1f}x above the fixed cost)  wall {wall:6.2f} s")


if __name__ == "__main__":
    main()
