"""OTel run grouping against span depth: an OTLP JSON file of N inference
spans each the parent of the next (one chain under an invoke_agent span) against the same N spans
all children of the agent span (flat). Prints the seconds of ``load_all`` for each and their
ratio; grouping linear in spans keeps the ratio near 1 (before the fix a 5,000-span chain took
114 s against 0.5 s flat).

    python benchmarks/bench_otel_chain.py [--spans 100000]
"""
from __future__ import annotations

import argparse
import json
import os
import time

from ctxlab.formats import load_all


def _attr(key: str, value: object) -> dict:
    kind = "intValue" if isinstance(value, int) else "stringValue"
    return {"key": key, "value": {kind: str(value) if kind == "intValue" else value}}


def otlp_text(n: int, chain: bool) -> str:
    """N chat spans (reply and usage logged, prompt capture off) under one invoke_agent span."""
    spans = [{"traceId": "t" * 32, "spanId": "agent", "name": "invoke_agent a", "startTimeUnixNano": "1",
              "attributes": [_attr("gen_ai.operation.name", "invoke_agent")]}]
    reply = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}])
    for k in range(n):
        parent = f"s{k - 1}" if chain and k else "agent"
        spans.append({"traceId": "t" * 32, "spanId": f"s{k}", "parentSpanId": parent, "name": "chat m",
                      "startTimeUnixNano": str(2 + k), "attributes": [
                          _attr("gen_ai.operation.name", "chat"), _attr("gen_ai.request.model", "gpt-4o"),
                          _attr("gen_ai.output.messages", reply), _attr("gen_ai.usage.input_tokens", 10 + k)]})
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})


def seconds(text: str) -> float:
    t0 = time.perf_counter()
    load_all(text, max_bytes=len(text) + 1)
    return time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spans", type=int, default=100_000)
    n = p.parse_args().spans
    flat, chain = seconds(otlp_text(n, False)), seconds(otlp_text(n, True))
    print(f"load average {os.getloadavg()[0]:.2f}; {n:,} inference spans under one agent span")
    print(f"flat (every span a child of the agent span): {flat:7.2f} s")
    print(f"one chain (each span the parent of the next): {chain:7.2f} s   ratio {chain / flat:.2f}x (linear: ~1x)")


if __name__ == "__main__":
    main()
