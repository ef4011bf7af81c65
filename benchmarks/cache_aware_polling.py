"""Does a budget-scaled ``polling`` > 1 for observation_masking keep the needed recall for less money?

Cache-aware defaults. Masking before every call (polling 1) rewrites an early
result at almost every call, so the prompt cache breaks; SWE-agent masks in steps (``polling``).
For each dataset (the 100 tau-bench airline runs in ../shared/data, the coding traces in
tests/data/coding) the runs are split in two by their order (even positions tune, odd ones report).
On the tune half, at each of two limits, every ``polling`` in POLLINGS is replayed call by call with
the other parameters at their budget-scaled defaults (``ctxlab.replay``, gpt-4o, bundled prices with
the prompt cache); the pick is the cheapest polling whose needed recall is at least polling 1's and
whose calls over the limit are no more than polling 1's. The report half is then measured with
polling 1 and the pick, and the script says whether the pick still holds there (same conditions).

    python benchmarks/cache_aware_polling.py [--data ../shared/data] [--only tau|coding]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from techniques import BUDGETS, _measure, _tools, coding_runs, tau_runs

from ctxlab.conversation import Conversation
from ctxlab.fidelity import needed_facts
from ctxlab.pricing import load_prices
from ctxlab.strategies import STRATEGIES, Budget, get_strategy

POLLINGS = (1, 2, 3, 5, 10)
MODEL = "gpt-4o"


def measure(convs: list[Conversation], facts: list[Any], polling: int, limit: int) -> dict[str, Any]:
    """observation_masking with ``polling`` at ``limit`` over ``convs``: totals and recall."""
    prices = load_prices()
    rows = []
    for conv, nf in zip(convs, facts):
        budget = Budget.for_model(MODEL, max_tokens=limit, tools_tokens=_tools(conv, MODEL))
        params = {**STRATEGIES["observation_masking"].scaled_defaults(budget), "polling": polling}
        rows.append(_measure(conv, nf, get_strategy("observation_masking", **params), budget, MODEL, prices, "all"))
    t = {k: sum(r[k] for r in rows) for k in ("calls", "over", "needed", "served", "input", "cost", "breaks")}
    t["recall"] = t["served"] / t["needed"] if t["needed"] else 1.0
    return t


def holds(p: dict[str, Any], base: dict[str, Any]) -> bool:
    """A polling qualifies: no lower recall, no more calls over the limit, and cheaper than polling 1."""
    return p["recall"] >= base["recall"] and p["over"] <= base["over"] and p["cost"] < base["cost"]


def _row(half: str, limit: int, polling: int, t: dict[str, Any], base: dict[str, Any]) -> str:
    return (f"| {half} | {limit:,} | {polling} | {t['over']:,} of {t['calls']:,} | {t['recall']:.3f} | "
            f"{t['input']:,} | ${t['cost']:.3f} | {t['cost'] / base['cost'] - 1:+.1%} | {t['breaks']:,} |")


def study(label: str, convs: list[Conversation]) -> None:
    """Tune on the even-positioned runs, report on the odd ones, at the dataset's two limits."""
    tune, report = convs[0::2], convs[1::2]
    ftune, freport = [needed_facts(c) for c in tune], [needed_facts(c) for c in report]
    print(f"## {label}: tune on {len(tune)} runs, report on {len(report)}, {MODEL}")
    print("| half | limit | polling | calls over limit | needed recall | input tokens | cost (cache) | vs polling 1 "
          "| cache breaks |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for limit in BUDGETS[label]:
        t0 = time.perf_counter()
        tuned = {p: measure(tune, ftune, p, limit) for p in POLLINGS}
        base = tuned[1]
        for p, t in tuned.items():
            print(_row("tune", limit, p, t, base))
        good = [p for p in POLLINGS[1:] if holds(tuned[p], base)]
        pick = min(good, key=lambda p: tuned[p]["cost"]) if good else 1
        shown = {1: measure(report, freport, 1, limit)}
        if pick != 1:
            shown[pick] = measure(report, freport, pick, limit)
        for p, t in shown.items():
            print(_row("report", limit, p, t, shown[1]))
        verdict = "no polling > 1 qualifies on the tune half" if pick == 1 else \
            f"pick polling {pick}: {'holds' if holds(shown[pick], shown[1]) else 'does NOT hold'} on the report half"
        print(f"\n{label} at {limit:,}: {verdict} ({time.perf_counter() - t0:.0f} s)\n")


def main() -> None:
    """Parse the arguments and print the tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    ap.add_argument("--only", choices=("tau", "coding"))
    args = ap.parse_args()
    if args.only != "tau":
        study("coding", coding_runs())
    if args.only != "coding":
        study("tau", tau_runs(Path(args.data)))


if __name__ == "__main__":
    main()
