"""The re-plan step of ``key_messages`` after ``View.append`` (see ``replan``).

``key_messages`` keeps its recent window (the last ``recent`` messages, widened back to a turn's
start) and, older than the window, key messages up to a cap. While the window's start does not
move -- the message ``recent`` back stays in the same turn, and no user message arrives -- nothing
older than the window changes: the same turns are older, the same key messages are taken, the
same task is kept. The grown view's plan is then the parent's with the new messages kept, for the
reason the window gives. Any other step (the start moves, a new user message, a pin added, a
compaction summary, a warning to write) returns None and the strategy plans from scratch.
"""
from __future__ import annotations

from bisect import bisect_left
from typing import Any

from ..plan import Plan, minimum_warning
from ..view import Budget, View
from .replan import extend, fact_counts, recall, remember


def key_state(view: View, plan: Plan, start: int, within: str, what: str, needed: int, stats: dict) -> dict | None:
    """What ``key_step`` needs from a ``key_messages`` plan made from scratch (None when the plan
    is not one it extends): the window's ``start``, the reason ``within`` it, the minimum's
    description ``what`` and tokens ``needed``, the strategy's ``stats``, and the pins."""
    if plan.notes or plan.warnings or view.compactions or view.newest_user() is None or start <= 0:
        return None
    if plan.actions[start:].count("keep") != len(view) - start:
        return None
    return {"start": start, "within": within, "what": what, "needed": needed, "stats": stats,
            "pins": view.pins, "counts": None}


def key_step(strategy: Any, view: View, budget: Budget) -> Plan | None:
    """``key_messages``' plan of ``view`` from its parent's, when the window's start stayed put."""
    hit = recall(view, strategy, budget)
    if hit is None:
        return None
    parent, plan, st = hit
    log, n0, n = view._log, parent, len(view)
    starts, groups, group_of, roles = log.starts, log.groups, log.group_of, log.roles
    if view.pins != st["pins"] or any(roles[i] == "user" for i in range(n0, n)):
        return None
    first = max(n - strategy.recent, 0)  # turn_aligned_start, on the log
    turn = log.turn_of[first] if first > 0 else -1
    if turn < 0:
        return None
    turns = bisect_left(starts, n)
    start = groups[group_of[first]][0] if turn == turns - 1 and first > starts[turn] else starts[turn]
    if start != st["start"]:
        return None
    for i in range(n0, n):
        if groups[group_of[i]][0] < start:  # a result joining a call older than the window
            return None
        m = log.messages[i]
        if m.extra.get("ctxlab_compaction") or m.extra.get("ctxlab_task"):
            return None
    needed = st["needed"] + sum(log.tokens[n0:n])
    if minimum_warning(view, budget, st["what"], needed) is not None:
        return None
    if st["counts"] is None:
        st["counts"] = fact_counts(view, plan)
    made = extend(view, parent, plan, st["counts"], {}, st["within"], strategy.params(), warnings=(),
                  stats=dict(st["stats"]), idle=lambda: strategy._idle(view, start))
    if made is None:
        return None
    out, counts = made
    return remember(view, strategy, budget, out, {**st, "needed": needed, "counts": counts})
