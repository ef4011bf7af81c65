"""Needs precision on coding traces the rules were not tuned on, and how many code names
and shell/patch edits are found there.

A random sample of needs (seed ``SEED``) over the ``needs_report`` split (see ``coding_traces.py``:
mini-swe-agent runs of bucket 1, SWE-agent's and mini-swe-agent's test trajectories) is kept in
``benchmarks/data/needs_precision_sample.json`` with a hand label and a one-line reason for each
need, given by reading the trace around it (the message the fact came from and the call that typed
it). Labels: ``real`` (the call could not have typed it without that earlier message), ``weak``
(taken from earlier, but a generic or guessable value), ``false`` (a coincidence: the call did not
take it from there). Precision = real / labelled.

    python benchmarks/needs_precision.py [--traces DIR] [--before /path/to/older/checkout] [--draw]

``--traces``: where the split's files are (written there from /work/.mirror when missing).
``--before``: also count the needs of another checkout of ctxlab (run in a subprocess).
``--draw``: draw the sample again (keeping labels of needs already labelled) and write the file.
"""
from __future__ import annotations

import importlib.util
import json
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SAMPLE = HERE / "data" / "needs_precision_sample.json"
SEED, SIZE = 27, 60
DEFAULT_TRACES = Path("/tmp/ctxlab-coding-traces/needs_report")


def _code_facts():
    """This checkout's ``code_facts`` loaded by path, so an older ctxlab is classified the same way."""
    import ctxlab  # noqa: F401  (its relative imports resolve in whichever ctxlab is imported)
    spec = importlib.util.spec_from_file_location("ctxlab._code_facts_rule", ROOT / "ctxlab" / "code_facts.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def kind_of(need, message, fact_re, specific) -> str:
    """identifier, shell/patch edit, editor edit, or other (ids, paths, amounts, literals)."""
    if need.lines:
        editor = any(k in c.arguments for c in message.tool_calls for k in ('"old_string"', '"old_str"'))
        return "edit (editor)" if editor else "edit (shell/patch)"
    if fact_re.fullmatch(need.fact) is None and not need.literal and specific(need.fact):
        return "identifier"
    return "other"


def all_needs(traces: list[Path]) -> tuple[list[dict], float]:
    """Every need of every trace, as dicts, and the seconds ``needed_facts`` took in all."""
    from ctxlab import fidelity
    from coding_traces import load_trace
    cf = _code_facts()
    out, spent = [], 0.0
    for path in traces:
        conv = load_trace(path)
        t = time.perf_counter()
        nf = fidelity.needed_facts(conv)
        spent += time.perf_counter() - t
        for n in nf.needs:
            out.append({"trace": path.name, "needed_by": n.needed_by, "source": n.source, "fact": n.fact[:200],
                        "kind": kind_of(n, conv.messages[n.needed_by], fidelity._FACT, cf.specific)})
    return out, spent


def _key(n: dict) -> tuple:
    return n["trace"], n["needed_by"], n["source"], n["fact"]


def counts(needs: list[dict]) -> dict:
    return dict(sorted(Counter(n["kind"] for n in needs).items())) | {"all": len(needs)}


def main(argv: list[str]) -> None:
    traces_dir = Path(argv[argv.index("--traces") + 1]) if "--traces" in argv else DEFAULT_TRACES
    sys.path.insert(0, str(HERE))
    if "--ctxlab" in argv:  # a subprocess counting another checkout
        sys.path.insert(0, argv[argv.index("--ctxlab") + 1])
        needs, spent = all_needs(sorted(traces_dir.iterdir()))
        print(json.dumps({"counts": counts(needs), "seconds": spent}))
        return
    sys.path.insert(0, str(ROOT))
    from coding_traces import materialize
    traces = materialize("needs_report", traces_dir)
    needs, spent = all_needs(traces)
    kept = json.loads(SAMPLE.read_text()) if SAMPLE.exists() else {"sample": []}
    if "--draw" in argv:
        labels = {_key(n): n for n in kept["sample"]}
        drawn = random.Random(SEED).sample(needs, min(SIZE, len(needs)))
        kept["sample"] = [labels.get(_key(n), n | {"label": None, "reason": ""}) for n in drawn]
        SAMPLE.write_text(json.dumps(kept, indent=1, ensure_ascii=False) + "\n")
        print(f"drew {len(drawn)} needs into {SAMPLE}")
    now = {_key(n) for n in needs}
    sample = kept["sample"]
    gone = [n for n in sample if _key(n) not in now]
    labels = Counter(n.get("label") for n in sample)
    labelled = sum(v for k, v in labels.items() if k)
    print(f"needs_report split: {len(traces)} traces, {len(needs):,} needs; needed_facts took {spent:.2f} s in all")
    print(f"sample (seed {SEED}): {len(sample)} needs, labels {dict(labels)}; "
          f"{len(gone)} sampled needs are no longer found")
    if labelled:
        print(f"precision (real / labelled) = {labels['real']}/{labelled} = {labels['real'] / labelled:.1%}; "
              f"real or weak = {(labels['real'] + labels['weak']) / labelled:.1%}")
        by_kind = Counter((n["kind"], n.get("label")) for n in sample)
        for k in sorted({n["kind"] for n in sample}):
            print(f"  {k:20} " + ", ".join(f"{lab} {by_kind[(k, lab)]}" for lab in ("real", "weak", "false")
                                             if by_kind[(k, lab)]))
    print("counts now:   ", counts(needs))
    before = kept.get("before")
    if "--before" in argv:
        out = subprocess.check_output([sys.executable, __file__, "--ctxlab", argv[argv.index("--before") + 1],
                                       "--traces", str(traces_dir)])
        before = json.loads(out)
    if before:
        print("counts before:", before["counts"], f"({before.get('checkout', 'given checkout')}, "
              f"needed_facts {before['seconds']:.2f} s)")


if __name__ == "__main__":
    main(sys.argv[1:])
