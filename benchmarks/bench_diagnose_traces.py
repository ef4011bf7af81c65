"""``diagnose`` over a folder of coding agents' trace files: every finding, one a line, and the
count per code, so a person can read each against the trace and count the false ones.

Each file is read with ctxlab's detection (a file whose name starts with ``mini__`` as a
mini-swe-agent trajectory: a bare list of messages is also valid OpenAI Chat). The embedding
provider is ``hash`` (the traces carry no tool definitions, so the confusion detectors that
embed have nothing to compare). Files that fail to load are listed with the error.

    python benchmarks/bench_diagnose_traces.py DIR [--json]

The first measurement used the public trajectories of SWE-agent/SWE-agent (every ``*.traj`` at
3ea751c), All-Hands-AI/OpenHands (``tests/runtime/trajs/*.json`` and each line of
``tests/unit/resolver/mock_output/output.jsonl`` at 156d068), mini-swe-agent's
``tests/test_data/github_issue.traj.json`` (a83fcae) and ``sample_data/coding``'s session.
"""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctxlab.diagnostics import diagnose  # noqa: E402
from ctxlab.errors import CtxlabError  # noqa: E402
from ctxlab.formats import load  # noqa: E402

SIZE_CODES = ("oversized_results", "history_share", "context_length", "too_many_tools")
"""Findings that measure sizes: they state what the token ledger shows (read as true)."""


def findings(folder: Path) -> tuple[list[dict], list[str]]:
    """Every finding in every trace of ``folder``, and the files that did not load."""
    out, failed = [], []
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        try:
            conv = load(path, format="mini_swe_agent" if path.name.startswith("mini__") else None)
        except CtxlabError as e:
            failed.append(f"{path.name}: {e}")
            continue
        for f in diagnose(conv, provider="hash"):
            out.append({"file": path.name, "format": conv.format, "code": f.code, "messages": list(f.messages),
                        "evidence": f.evidence})
    return out, failed


def main(argv: list[str]) -> None:
    if not argv or not Path(argv[0]).is_dir():
        sys.exit("usage: python benchmarks/bench_diagnose_traces.py DIR [--json]")
    found, failed = findings(Path(argv[0]))
    if "--json" in argv:
        print(json.dumps({"findings": found, "failed": failed}, indent=1))
        return
    for f in found:
        print(f"{f['file'][:60]:60}  {f['code']:22}  {f['evidence'][:140]}")
    counts = Counter(f["code"] for f in found)
    size = sum(n for c, n in counts.items() if c in SIZE_CODES)
    print(f"\n{len(found)} findings in {len({f['file'] for f in found})} files: {dict(counts)}")
    print(f"size findings {size}, others {len(found) - size}; files that did not load: {len(failed)}")
    for line in failed:
        print("  ", line)


if __name__ == "__main__":
    main(sys.argv[1:])
