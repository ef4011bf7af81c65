"""Checked against agents: what ctxlab says a compaction lost, against what the agent fetched again.

Real Claude Code sessions that compacted (a ``compact_boundary`` line and an ``isCompactSummary``
user message): after the summary, the model saw only the summary and what arrived since. For each
session:

* **re-fetched** (the agents' side): the fetches made before the compaction (a ``Read`` of a path,
  the same ``Bash`` command, the same ``Grep`` / ``Glob`` / other read-only call) that the agent made
  again after it. ``Edit``, ``Write``, ``TodoWrite``, ``Task``... are actions, not fetches.
* **lost** (ctxlab's side): ctxlab's own measure (``ctxlab.fidelity``: ``needed_facts``, checked by
  ``FactCheck`` on each call's prompt) replays the logged compaction itself: the prompt of a call
  after the summary is the summary and the messages since, less the results of the agent's
  re-fetches (they are the agent's answer to the loss, not what the compaction kept). A miss whose
  fact came from a tool result before the compaction predicts a re-fetch of the latest call before the
  compaction whose result held it (``pricing.REFETCH_MODEL`` prices that call).

Agreement per fetch (a path read, a command run): precision = predicted and re-fetched / predicted,
recall = predicted and re-fetched / re-fetched. Sessions: the five compacted transcripts of
marot/spotter ``8cc42b0bd39d04e71e509d7d58e6782ab435329f`` ``test/fixtures/transcripts/*.jsonl``
(MIT). ``ae4a77f8`` (manual ``/compact``) was read to write the fetch keys below (``TUNED``); the
four auto-compacted ones are reported apart as held out.

    python benchmarks/compaction_agreement.py [--mirrors /work/.mirror] [--show]

``--show`` lists each disagreement (the fetch and, for a predicted one, the facts that predicted it).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ctxlab.fidelity import REFETCH, FactCheck, needed_facts  # noqa: E402
from ctxlab.formats import load_all  # noqa: E402

REPO, COMMIT = "marot/spotter", "8cc42b0bd39d04e71e509d7d58e6782ab435329f"
SESSIONS = ("258c7280-ae70-4798-800f-63464d01a85d", "4d5611e5-241a-462a-8d15-5122611a9569",
            "8463c716-a2ea-4c14-9efa-87158ebd9f20", "ae4a77f8-aedd-4bc1-888f-c94edc91af04",
            "fa812bfe-b295-4cca-9c2f-fdf01028cb46")
TUNED = ("ae4a77f8-aedd-4bc1-888f-c94edc91af04",)
ACTIONS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit", "TodoWrite", "Task", "TaskOutput", "KillShell",
                     "AskUserQuestion", "ExitPlanMode", "Skill", "SlashCommand"})
"""Calls that act rather than fetch: running one again is not a re-fetch."""


def fetch_key(name: str, arguments: str) -> str | None:
    """What a call fetches, as a key two calls share when one fetches again what the other did: a
    ``Read``'s path (whatever its offset), a ``Bash`` command, a search's pattern and place; None
    for an action."""
    if name in ACTIONS:
        return None
    try:
        args = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return f"{name} {arguments}"
    if not isinstance(args, dict):
        return f"{name} {arguments}"
    if name == "Read":
        return f"Read {args.get('file_path')}"
    if name == "Bash":
        return f"Bash {str(args.get('command', '')).strip()}"
    keep = {k: v for k, v in args.items() if k not in ("description", "timeout", "run_in_background")}
    return f"{name} {json.dumps(keep, sort_keys=True)}"


WRITES = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
"""Calls that change files: a command run again after one is a check of a new state, not a re-fetch."""


def _written(m, need) -> str | None:
    """``Read PATH`` when the agent's own call ``m`` wrote the fact into file PATH (read back to re-fetch it)."""
    for c in m.tool_calls:
        args = json.loads(c.arguments) if c.name in WRITES else {}
        path = args.get("file_path") or args.get("notebook_path")
        if path and any(isinstance(v, str) and need.fact.lower()[:200] in v.lower() or
                        (need.lines and all(ln in str(v).lower() for ln in need.lines)) for v in args.values()):
            return f"Read {path}"
    return None


def _load(mirrors: Path, session: str):
    git_dir = mirrors / REPO.replace("/", "+") / "repo"
    raw = subprocess.check_output(["git", "--git-dir", str(git_dir), "show",
                                   f"{COMMIT}:test/fixtures/transcripts/{session}.jsonl"])
    [conv] = load_all(raw.decode())
    return conv


def agreement(conv) -> dict:
    """Re-fetched and predicted fetches of one compacted conversation (see the module docstring)."""
    msgs = conv.messages
    s = next(i for i, m in enumerate(msgs) if m.extra.get("ctxlab_compaction"))
    key_of = {c.id: fetch_key(c.name, c.arguments) for m in msgs for c in m.tool_calls}
    result_key = {i: key_of.get(m.tool_call_id) for i, m in enumerate(msgs) if m.role == "tool"}
    before = {k for i, k in result_key.items() if i < s and k}
    again = [(i, k) for i, k in result_key.items() if i > s and k in before]
    refetched = {k for _, k in again}
    last_before = {k: i for i, k in result_key.items() if i < s and k}
    writes = [i for i, m in enumerate(msgs) if any(c.name in WRITES for c in m.tool_calls)]
    same = {k for i, k in again  # a read, or a command run again with no file written since its last run
            if k.startswith("Read ") or not any(last_before[k] < w < i for w in writes)}
    recovery = {i for i, _ in again}  # the agent's re-fetched results: not in the counterfactual prompt
    nf = needed_facts(conv)
    check = FactCheck(nf)
    for j in sorted({n.needed_by for n in nf.needs if n.needed_by > s and n.source < s}):
        keep = [i for i in range(s, j) if i not in recovery]
        check.check(SimpleNamespace(index=j, number=j), [msgs[i] for i in keep], keep)
    misses = [m for ms in check.misses.values() for m in ms]
    predicted: dict[str, list[str]] = {}
    for m in misses:
        if m.recovery != REFETCH or m.source >= s:
            continue
        need = next(n for n in nf.needs if n.needed_by == m.needed_by and n.fact == m.fact)
        held = [i for i in range(s) if msgs[i].role == "tool" and result_key.get(i) and need.served_by(nf.per_message[i])]
        key = result_key[held[-1]] if held else _written(msgs[m.source], need)
        if key:
            predicted.setdefault(key, []).append(m.fact[:60])
    return {"messages": len(msgs), "summary_at": s, "fetches_before": len(before), "refetched": refetched,
            "same": same,
            "predicted": predicted, "misses": len(misses), "unrecoverable": sum(m.unrecoverable for m in misses),
            "needs_after": sum(1 for n in nf.needs if n.needed_by > s and n.source < s)}


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def _row(name: str, a: dict) -> list[int]:
    pred = set(a["predicted"])
    hit, hit_same = len(pred & a["refetched"]), len(pred & a["same"])
    p, r, r_same = len(pred), len(a["refetched"]), len(a["same"])
    print(f"{name[:8]:<10}{a['messages']:>6}{a['summary_at']:>6}{a['needs_after']:>7}{a['misses']:>7}"
          f"{a['unrecoverable']:>7}{a['fetches_before']:>8}{r:>7}{r_same:>6}{p:>6}{hit:>6}{hit_same:>6}"
          f"{_ratio(hit, p):>7}{_ratio(hit, r):>7}{_ratio(hit_same, p):>7}{_ratio(hit_same, r_same):>7}")
    return [hit, p, r, hit_same, r_same]


def main() -> None:
    args = sys.argv[1:]
    mirrors = Path(args[args.index("--mirrors") + 1]) if "--mirrors" in args else Path("/work/.mirror")
    if not (mirrors / REPO.replace("/", "+") / "repo").exists():
        sys.exit(f"no mirror of {REPO} under {mirrors}: fetch it first (git clone --mirror, or the fetch tool)")
    t0 = time.perf_counter()
    print(f"{'session':<10}{'msgs':>6}{'summ':>6}{'needs':>7}{'missed':>7}{'unrec':>7}{'fetched':>8}{'again':>7}"
          f"{'same':>6}{'pred':>6}{'both':>6}{'both_s':>6}{'prec':>7}{'rec':>7}{'prec_s':>7}{'rec_s':>7}")
    totals = {"held out": [0] * 5, "tuned": [0] * 5}
    shown = []
    for session in SESSIONS:
        a = agreement(_load(mirrors, session))
        row = _row(session, a)
        part = totals["tuned" if session in TUNED else "held out"]
        for k in range(5):
            part[k] += row[k]
        shown.append((session, a))
    for part, (hit, p, r, hit_same, r_same) in totals.items():
        print(f"{part}: against every fetch run again: precision {hit}/{p} = {_ratio(hit, p)}, recall {hit}/{r} = "
              f"{_ratio(hit, r)}; against re-fetches (reads, and commands with no file written since): "
              f"precision {hit_same}/{p} = {_ratio(hit_same, p)}, recall {hit_same}/{r_same} = {_ratio(hit_same, r_same)}")
    if "--show" in args:
        for session, a in shown:
            print(f"\n== {session}")
            for k in sorted(set(a["predicted"]) - a["refetched"]):
                print(f"  predicted, not re-fetched: {k[:110]}  <- {a['predicted'][k][:3]}")
            for k in sorted(a["refetched"] - set(a["predicted"])):
                print(f"  run again, not predicted{'' if k in a['same'] else ' (a check after a file changed)'}: "
                      f"{k[:110]}")
    print(f"\n{time.perf_counter() - t0:.1f} s; load average {', '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
