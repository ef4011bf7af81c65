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
recall = predicted and re-fetched / re-fetched, against every fetch run again and against the
re-fetches proper (reads, and commands run again with no file written since their last run: a
``mix test`` after edits checks a new state, it fetches nothing lost). Sessions: the five compacted
transcripts of marot/spotter ``8cc42b0bd39d04e71e509d7d58e6782ab435329f``
``test/fixtures/transcripts/*.jsonl`` (MIT; four auto-compactions, one manual ``/compact``), read
from a local mirror, not copied. Nothing was tuned on them before the first run (the fetch keys
below were written from the tool list); the fixes that run led to (``ctxlab.fidelity``: a file the
agent wrote is re-fetchable, a value it typed first itself is not unrecoverable, ``OPTION_KEYS``)
were read off all five, so the figure after them is not held out: ``--ctxlab`` runs the measure as
it was before them (benchmarks/README.md gives both).

    python benchmarks/compaction_agreement.py [--mirrors /work/.mirror] [--show] [--coding] [--ctxlab DIR]

``--ctxlab DIR`` measures with another checkout's ``ctxlab`` (the parent of its package), e.g. an
earlier commit written out with ``git archive``, to compare before and after a fix.
``--show`` lists each disagreement (the fetch and, for a predicted one, the facts that predicted it).
``--coding`` also prints the priced loss of three strategies at two limits on the coding traces of
tests/data/coding: needs, misses, modelled re-fetches and their cost (claude-sonnet-4-5 prices),
unrecoverable losses, cost and total cost.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

_ARGS = sys.argv[1:]
sys.path.insert(0, _ARGS[_ARGS.index("--ctxlab") + 1] if "--ctxlab" in _ARGS else str(Path(__file__).resolve().parents[1]))

from ctxlab.fidelity import REFETCH, FactCheck, needed_facts  # noqa: E402
from ctxlab.formats import load_all  # noqa: E402

REPO, COMMIT = "marot/spotter", "8cc42b0bd39d04e71e509d7d58e6782ab435329f"
SESSIONS = ("258c7280-ae70-4798-800f-63464d01a85d", "4d5611e5-241a-462a-8d15-5122611a9569",
            "8463c716-a2ea-4c14-9efa-87158ebd9f20", "ae4a77f8-aedd-4bc1-888f-c94edc91af04",
            "fa812bfe-b295-4cca-9c2f-fdf01028cb46")
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
            "predicted": predicted, "misses": len(misses), "unrecoverable": sum(getattr(m, "unrecoverable", not m.refetchable) for m in misses),
            "needs_after": sum(1 for n in nf.needs if n.needed_by > s and n.source < s)}


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def _row(name: str, a: dict) -> list[int]:
    pred = set(a["predicted"])
    hit, hit_same = len(pred & a["refetched"]), len(pred & a["same"])
    p, r, r_same = len(pred), len(a["refetched"]), len(a["same"])
    print(f"{name[:8]:<10}{a['messages']:>6}{a['summary_at']:>6}{a['needs_after']:>7}{a['misses']:>7}"
          f"{a['unrecoverable']:>7}{a['fetches_before']:>8}{r:>7}{r_same:>6}{p:>6}{hit:>6}{hit_same:>8}"
          f"{_ratio(hit, p):>7}{_ratio(hit, r):>7}{_ratio(hit_same, p):>7}{_ratio(hit_same, r_same):>7}")
    return [hit, p, r, hit_same, r_same]


def coding_refetches() -> None:
    """The priced loss on tests/data/coding (see ``--coding``)."""
    from ctxlab.measure import measure
    from ctxlab.strategies import Budget
    from ctxlab.sweep import load_conversations
    convs = load_conversations([str(Path(__file__).resolve().parents[1] / "tests" / "data" / "coding")], notes=[])
    print(f"\n{len(convs)} coding traces of tests/data/coding, claude-sonnet-4-5 prices")
    print(f"{'strategy':<22}{'limit':>7}{'needed':>8}{'missed':>8}{'refetch':>8}{'unrec':>7}{'refetch $':>11}"
          f"{'cost $':>9}{'total $':>9}")
    for name in ("observation_masking", "sliding_window", "summarize"):
        for limit in (6_000, 16_000):
            t = dict.fromkeys(("needed", "missed", "refetches", "unrecoverable"), 0)
            money = [0.0, 0.0, 0.0]
            for conv in convs:
                s = measure(conv, name, Budget(limit), model="claude-sonnet-4-5", baseline=False).summary()
                for k in t:
                    t[k] += s[k]
                money = [money[0] + s["refetch_cost_usd"], money[1] + s["cost_usd"], money[2] + s["total_cost_usd"]]
            print(f"{name:<22}{limit:>7,}{t['needed']:>8}{t['missed']:>8}{t['refetches']:>8}{t['unrecoverable']:>7}"
                  f"{money[0]:>11.4f}{money[1]:>9.4f}{money[2]:>9.4f}")


def main() -> None:
    args = sys.argv[1:]
    mirrors = Path(args[args.index("--mirrors") + 1]) if "--mirrors" in args else Path("/work/.mirror")
    if not (mirrors / REPO.replace("/", "+") / "repo").exists():
        sys.exit(f"no mirror of {REPO} under {mirrors}: fetch it first (git clone --mirror, or the fetch tool)")
    t0 = time.perf_counter()
    print(f"{'session':<10}{'msgs':>6}{'summ':>6}{'needs':>7}{'missed':>7}{'unrec':>7}{'fetched':>8}{'again':>7}"
          f"{'same':>6}{'pred':>6}{'both':>6}{'both_s':>8}{'prec':>7}{'rec':>7}{'prec_s':>7}{'rec_s':>7}")
    totals = [0] * 5
    shown = []
    for session in SESSIONS:
        a = agreement(_load(mirrors, session))
        row = _row(session, a)
        for k in range(5):
            totals[k] += row[k]
        shown.append((session, a))
    hit, p, r, hit_same, r_same = totals
    print(f"all {len(SESSIONS)}: against every fetch run again: precision {hit}/{p} = {_ratio(hit, p)}, "
          f"recall {hit}/{r} = {_ratio(hit, r)}; against re-fetches (reads, and commands with no file written "
          f"since): precision {hit_same}/{p} = {_ratio(hit_same, p)}, recall {hit_same}/{r_same} = {_ratio(hit_same, r_same)}")
    if "--show" in args:
        for session, a in shown:
            print(f"\n== {session}")
            for k in sorted(set(a["predicted"]) - a["refetched"]):
                print(f"  predicted, not re-fetched: {k[:110]}  <- {a['predicted'][k][:3]}")
            for k in sorted(a["refetched"] - set(a["predicted"])):
                print(f"  run again, not predicted{'' if k in a['same'] else ' (a check after a file changed)'}: "
                      f"{k[:110]}")
    if "--coding" in args:
        coding_refetches()
    print(f"\n{time.perf_counter() - t0:.1f} s; load average {', '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
