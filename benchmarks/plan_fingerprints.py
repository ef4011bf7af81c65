"""Fingerprints of every strategy's plans, to show a speed change changed no decision.

    python benchmarks/plan_fingerprints.py --save /tmp/before.json   # before the change
    python benchmarks/plan_fingerprints.py --check /tmp/before.json  # after: lists any difference

Per strategy (defaults), over the bundled samples (sample_data/*.json), the 100 tau-bench airline
runs (../shared/data) and the live-agent benchmark's 10,000-message conversation (and that view
grown by one message), at budgets of 1,500 / 3,000 / 6,000 / 16,000 tokens: a SHA-256 of the
actions, reasons, messages, origin, output tokens, tokens by category, warnings, stats, state
keys, retention, facts kept and lost, and idle text of every plan.
"""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import ctxlab
from ctxlab.generate import generate
from ctxlab.strategies import STRATEGIES, Budget, get_strategy, make_view

HERE = Path(__file__).resolve().parent
BUDGETS = (1_500, 3_000, 6_000, 16_000)


def plan_text(plan) -> str:
    """Everything a user sees of a plan, as one string."""
    return repr((plan.actions, plan.reasons, [repr(m) for m in plan.messages], plan.origin, plan.output_tokens,
                 sorted(plan.before.items()), sorted(plan.after.items()), plan.warnings,
                 json.dumps(plan.stats, sort_keys=True, default=repr), sorted(plan.state),
                 plan.retention, plan.facts_kept, plan.facts_lost, plan.idle))


def views(data: Path) -> list[tuple[str, object]]:
    """(label, view) for every input checked."""
    out = [(p.name, make_view(ctxlab.load(p))) for p in sorted((HERE.parent / "sample_data").glob("*.json"))
           if not p.name.startswith("tools_")]  # tool catalogs are not conversations
    tau = data / "tau-bench" / "airline_trajectories_trials01.json"
    if tau.is_file():
        for k, run in enumerate(json.loads(tau.read_text())):
            out.append((f"tau{k}", make_view(ctxlab.loads(json.dumps({"messages": run["traj"]})), "gpt-4o")))
    conv = generate("ecommerce", turns=500, rounds_per_turn=9, result_tokens=200, seed=1)
    base = make_view(conv.messages[:10_000], "gpt-4o")
    out.append(("gen10000", base))
    out.append(("gen10000+1", base.append(conv.messages[10_000])))
    return out


def fingerprints(data: Path) -> dict[str, str]:
    """Strategy name -> SHA-256 over every input and budget (plus one per input for diagnosis)."""
    out: dict[str, str] = {}
    all_views = views(data)
    for name in STRATEGIES:
        whole = hashlib.sha256()
        for label, view in all_views:
            budgets = BUDGETS + ((128_000,) if label.startswith("gen") else ())
            h = hashlib.sha256()
            for b in budgets:
                h.update(plan_text(get_strategy(name).apply(view, Budget(b, reserve=0))).encode())
            out[f"{name}/{label}"] = h.hexdigest()[:16]
            whole.update(h.digest())
        out[name] = whole.hexdigest()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--save")
    ap.add_argument("--check")
    ap.add_argument("--data", default=str(HERE.parent.parent / "shared" / "data"))
    a = ap.parse_args()
    got = fingerprints(Path(a.data))
    if a.save:
        Path(a.save).write_text(json.dumps(got, indent=0, sort_keys=True))
    if a.check:
        want = json.loads(Path(a.check).read_text())
        diff = sorted(k for k in want.keys() | got.keys() if want.get(k) != got.get(k))
        print(f"{len(diff)} differences" + (": " + ", ".join(diff[:40]) if diff else ""))
    for name in STRATEGIES:
        print(name, got[name][:16])


if __name__ == "__main__":
    main()
