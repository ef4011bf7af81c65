"""False positives of ``ctxlab diagnose`` (all modes) per 100 findings on shell-heavy coding traces
no diagnose rule was written from: the ``diagnose_holdout`` split of ``coding_traces.py``
(79 mini-swe-agent runs of Gemini 3 Pro on SWE-bench, 9 SWE-agent CTF runs).

Every finding is compared with the hand labels kept in ``benchmarks/data/diagnose_fp_labels.json``
(how they were given is written there); a finding with no label is listed as such, to be read.
Two rates: ``false`` only, and ``strict`` (a finding whose claim holds for some of the messages it
lists but not all, ``partly``, counted false too).

    python benchmarks/diagnose_false_positives.py [--traces DIR] [--ctxlab /path/to/other/checkout]

``--ctxlab`` runs another checkout's ``diagnose`` (the figures before a change).
The embedding provider is ``hash``: the traces carry no tool definitions to embed.
"""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
LABELS = HERE / "data" / "diagnose_fp_labels.json"
DEFAULT_TRACES = Path("/tmp/ctxlab-coding-traces/diagnose_holdout")


def key(f: dict) -> str:
    """A finding's identity: trace, code and the messages it names."""
    return f"{f['file']}|{f['code']}|{','.join(map(str, f['messages']))}"


def findings(traces: list[Path]) -> list[dict]:
    """Every finding of every trace."""
    from ctxlab.diagnostics import diagnose
    from coding_traces import load_trace
    out = []
    for path in traces:
        for f in diagnose(load_trace(path), provider="hash"):
            out.append({"file": path.name, "code": f.code, "messages": list(f.messages), "evidence": f.evidence})
    return out


def main(argv: list[str]) -> None:
    traces_dir = Path(argv[argv.index("--traces") + 1]) if "--traces" in argv else DEFAULT_TRACES
    if "--ctxlab" in argv:
        sys.path.insert(0, argv[argv.index("--ctxlab") + 1])
    else:
        sys.path.insert(0, str(HERE.parent))
    sys.path.insert(1, str(HERE))
    from coding_traces import materialize
    traces = materialize("diagnose_holdout", traces_dir)
    found = findings(traces)
    labels = {lab["key"]: lab for lab in json.loads(LABELS.read_text())["labels"]}
    per: dict[str, Counter] = {}
    for f in found:
        lab = labels.get(key(f), {}).get("label", "unlabelled")
        per.setdefault(f["file"], Counter())[lab] += 1
        if lab != "true":
            print(f"  {lab:10} {f['file'][:48]:48} {f['code']:18} {f['evidence'][:110]}")
    print(f"\n{'trace':52} findings  true  partly  false  unlabelled")
    for name in sorted(per):
        c = per[name]
        print(f"{name[:52]:52} {sum(c.values()):8}  {c['true']:4}  {c['partly']:6}  {c['false']:5}  {c['unlabelled']:10}")
    total = Counter()
    for c in per.values():
        total.update(c)
    n = sum(total.values())
    print(f"\n{len(traces)} traces, {n} findings in {len(per)}: {dict(Counter(f['code'] for f in found))}")
    if n:
        print(f"false positives per 100 findings: {100 * total['false'] / n:.1f} (false only), "
              f"{100 * (total['false'] + total['partly']) / n:.1f} (strict: partly counted false); "
              f"unlabelled {total['unlabelled']}")


if __name__ == "__main__":
    main(sys.argv[1:])
