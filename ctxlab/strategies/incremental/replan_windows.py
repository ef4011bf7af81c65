"""The re-plan steps of ``none``, ``sliding_window`` and ``turn_safe`` after ``View.append`` (see
``replan``).

``sliding_window`` keeps the longest run of newest groups whose tokens fit its room (the
messages it always keeps aside): groups cost nothing less when messages arrive, so the run's
first group only moves forward, and the step walks forward from the parent's first group,
over the groups that no longer fit. The layout of its plan, checked when it is remembered:

    [preamble] [pe, W) dropped, outside the window   [W, s) dropped, to start on a user message
    [s, n) kept (the window)                          (+ the system prompt and newest user message)

``turn_safe``'s window of the last N messages, widened back to a turn start, moves forward too,
except when a new user message ends the turn it cut into (then it widens back to that turn's start).
A step that would change anything else (a new user message, a group cut in two, a system
message in the trimmed part, a compaction summary) returns None and the strategy plans from scratch.
"""
from __future__ import annotations

from bisect import bisect_left
from typing import Any

from ..plan import Plan
from ..view import Budget, View
from ..keep_rules import window_idle
from .replan import extend, fact_counts, recall, remember


def window_state(view: View, plan: Plan, first: int, used: int, room: int, reasons: tuple,
                 warnings: list) -> dict | None:
    """What ``window_step`` needs from a ``sliding_window`` plan made from scratch (None when its
    layout is not the one ``window_step`` extends): ``first``, the window's first group; ``used``,
    the tokens of the window's groups; ``room``, what the window may hold; ``reasons``, the
    reasons given outside and inside the window; ``warnings``, the strategy's own warnings."""
    u, seg, n = view.newest_user(), view.seg, len(view)
    outside, inside = reasons
    if u is None or view.compactions or plan.notes or not 0 < first < len(seg.groups) or None in reasons:
        return None
    pe, fs, w = view.preamble[1], view.first_system(), seg.groups[first][0]
    if w <= pe or (fs is not None and fs >= pe):
        return None
    t = seg.turn_of[w]
    s = w if u < w or seg.turns[t][0] == w else seg.turns[t + 1][0]
    acts = plan.actions
    if acts[pe:s].count("drop") != s - pe - (pe <= u < s) or acts[s:].count("keep") != n - s:
        return None
    trim = plan.reasons[w] if w < s and view.role_of(w) != "system" else None
    return {"first": first, "used": used, "room": room, "w": w, "s": s, "u": u, "outside": outside,
            "inside": inside, "must": plan.reasons[u], "trim": trim, "warnings": warnings, "counts": None}


def window_step(strategy: Any, view: View, budget: Budget, limit: int, target: int) -> Plan | None:
    """``sliding_window``'s plan of ``view`` from its parent's (None: plan from scratch)."""
    hit = recall(view, strategy, budget)
    if hit is None:
        return None
    parent, plan, st = hit
    log, n0, n = view._log, parent, len(view)
    roles, groups, group_of, tokens = log.roles, log.groups, log.group_of, log.tokens
    first, used, u, room, w0 = st["first"], st["used"], st["u"], st["room"], st["w"]
    nu, ngroups = log.newest_user(n), log.ngroups[n - 1]  # the log may go on past this view
    if nu != u:  # a new user message: it is kept always, the one before is one of the window's groups now
        if st["warnings"] or any(_kept_always(log.messages[i]) for i in
                                 log.starts[bisect_left(log.starts, n0):bisect_left(log.starts, n)]):
            return None
        room += tokens[u] - tokens[nu]
        if target - room > budget.available:  # the minimum no longer fits: a warning to write
            return None
        used += tokens[u] if u >= w0 else 0
    for i in range(n0, n):
        if group_of[i] < first:  # a result joining a call outside the window
            return None
        used += tokens[i] if i != nu else 0
    if nu != u and used + sum(map(tokens.__getitem__, _members(groups[first - 1], n))) <= room:
        return None  # a shorter newest user message leaves room for older groups: the window grows back
    while used > room:  # the groups that no longer fit leave the window, oldest first
        if first >= ngroups - 1:
            return None
        members = _members(groups[first], n)
        if nu not in members:  # the newest user message's group is kept whatever it costs
            if members[-1] - members[0] != len(members) - 1:
                return None
            used -= sum(map(tokens.__getitem__, members))
        first += 1
    w = groups[first][0]
    s = w if nu < w else log.starts[bisect_left(log.starts, w)]
    if s > n0:
        return None
    acts, whys, outside, trim = plan.actions, plan.reasons, st["outside"], st["trim"]
    edits: dict[int, tuple[str, str]] = {}
    for i in range(w0, s):
        if i == nu:
            continue
        if group_of[i] < first:  # outside the window: a group's members need not be neighbours (a second result)
            want = outside
        elif roles[i] == "system" or trim is None:  # settle would treat it apart: plan from scratch
            return None
        else:
            want = trim
        if acts[i] != "drop" or whys[i] != want:
            edits[i] = ("drop", want)
    if nu != u:
        edits[nu] = ("keep", st["must"])
        if u < w0:
            edits[u] = ("drop", outside)
        elif u >= s:
            edits[u] = ("keep", st["inside"])
    if st["counts"] is None:
        st["counts"] = fact_counts(view, plan)
    made = extend(view, parent, plan, st["counts"], edits, st["inside"], strategy.params(), warnings=st["warnings"],
                  stats={"window_tokens": target, "room_left": max(room - used, 0)},
                  idle=lambda: strategy._idle(view, budget, limit, target))
    if made is None:
        return None
    out, counts = made
    return remember(view, strategy, budget, out, {**st, "first": first, "used": used, "w": w, "s": s, "u": nu,
                                                  "room": room, "counts": counts})


def _members(group: tuple[int, ...], n: int) -> tuple[int, ...]:
    """The members of a group of a log that a view of its first ``n`` messages sees."""
    return group if group[-1] < n else tuple(i for i in group if i < n)


def _kept_always(m) -> bool:
    """A compaction summary or the task of a run (``View.compactions``)."""
    return bool(m.extra.get("ctxlab_compaction") or m.extra.get("ctxlab_task"))


def keep_all_state(view: View, plan: Plan) -> dict | None:
    """What ``keep_all_step`` needs from a ``none`` plan: the reason every message is kept for."""
    return {"reason": plan.reasons[0], "counts": None} if plan.reasons and not plan.notes else None


def keep_all_step(strategy: Any, view: View, budget: Budget) -> Plan | None:
    """``none``'s plan of ``view`` from its parent's: the new messages are sent too."""
    hit = recall(view, strategy, budget)
    if hit is None:
        return None
    parent, plan, st = hit
    if st["counts"] is None:
        st["counts"] = fact_counts(view, plan)
    made = extend(view, parent, plan, st["counts"], {}, st["reason"], strategy.params(), warnings=(),
                  stats=None, idle=plan.idle)
    if made is None:
        return None
    out, counts = made
    return remember(view, strategy, budget, out, {**st, "counts": counts})


def turn_stats(n: int, last_n: int, start: int) -> dict[str, int]:
    """``turn_safe``'s stats: where its window starts, and how far that is before the last ``last_n``."""
    return {"window_start": start, "extended_by": max(n - last_n, 0) - start if n > last_n else 0}


def turn_state(view: View, plan: Plan, start: int, task: int | None, given: tuple) -> dict | None:
    """What ``turn_step`` needs from a ``turn_safe`` plan made from scratch (None when its layout is
    not ``[preamble] [pe, start) dropped but the task, [start, n) kept``): ``given``, the reasons
    for older and newer messages."""
    n, pe, fs = len(view), view.preamble[1], view.first_system()
    if (view.newest_user() is None or view.compactions or plan.notes or None in given or start <= pe
            or (fs is not None and fs >= pe)):
        return None
    acts = plan.actions
    if acts[pe:start].count("drop") != start - pe - (task is not None) or acts[start:].count("keep") != n - start:
        return None
    return {"start": start, "task": task, "older": given[0], "within": given[1],
            "task_reason": plan.reasons[task] if task is not None else None, "counts": None}


def turn_step(strategy: Any, view: View, budget: Budget) -> Plan | None:
    """``turn_safe``'s plan of ``view`` from its parent's, when its window only moved forward."""
    hit = recall(view, strategy, budget)
    if hit is None:
        return None
    parent, plan, st = hit
    log, n0, n = view._log, parent, len(view)
    starts, groups, group_of = log.starts, log.groups, log.group_of
    first = max(n - strategy.last_n, 0)  # turn_aligned_start, on the log
    turn, turns = log.turn_of[first], bisect_left(starts, n)
    if first == 0 or turn < 0:
        return None
    if turn == turns - 1 and first > starts[turn]:
        start = groups[group_of[first]][0]
    else:
        start = starts[turn]
    task = starts[turn] if start != starts[turn] else None
    was, was_task = st["start"], st["task"]
    if start < was or (task is not None and ((task < was and task != was_task) or not st["task_reason"])):
        return None
    if any(_kept_always(log.messages[i]) for i in starts[bisect_left(starts, n0):turns]):
        return None
    for i in range(n0, n):  # a result joining a call the window leaves out
        if groups[group_of[i]][0] < start:
            return None
    acts, whys, older = plan.actions, plan.reasons, st["older"]
    edits: dict[int, tuple[str, str]] = {}
    for i in range(was, start):
        if i == task:
            want = ("keep", st["task_reason"])
        elif _members(groups[group_of[i]], n)[-1] >= start:  # a group cut in two: settle's to decide
            return None
        else:
            want = ("drop", older)
        if (acts[i], whys[i]) != want:
            edits[i] = want
    if was_task is not None and was_task != task:
        edits[was_task] = ("drop", older)
    if st["counts"] is None:
        st["counts"] = fact_counts(view, plan)
    made = extend(view, parent, plan, st["counts"], edits, st["within"], strategy.params(), warnings=(),
                  stats=turn_stats(n, strategy.last_n, start),
                  idle=lambda: window_idle(strategy.name, "last_n", strategy.last_n, view, start))
    if made is None:
        return None
    out, counts = made
    return remember(view, strategy, budget, out, {**st, "start": start, "task": task, "counts": counts})
