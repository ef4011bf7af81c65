"""Re-planning after ``View.append`` from the parent view's plan, not from the whole history.

A live agent appends a message and plans again; most of the plan for the grown view is the plan
of its parent: a window's cut only moves forward, the messages before it stay dropped for the
same reason, the new messages are kept; a result cleared stays cleared with the same placeholder.
A strategy that can say how its decisions changed
``remember``s, with each plan it makes, the state its next step needs (where its window starts,
what the window holds); the grown view's plan starts from ``recall`` (the parent's plan and
state, while the parent is alive) and ``extend`` builds the new Plan from the parent's plan with
a few edits at C speed. When a step does not fit what the strategy can extend (a new user
message, a group cut in two, a summary, ...) the strategy plans from scratch, as before; either
way the plan is the same (``tests/strategies/test_strategy_replan.py`` checks it against a from-scratch plan).

What is kept per view: the newest few (strategy, budget) pairs, so a slider dragged over many
budgets does not pile up plans.
"""
from __future__ import annotations

from bisect import bisect_left
from itertools import compress
from operator import is_not
from typing import Any, Callable, Mapping, Sequence

from ...conversation import Message
from ..plan import REMOVED, Plan, _finish, replacement_mask
from ..view import Budget, View

KEEP = 6
"""Plans remembered per view (the oldest goes when more are made)."""
_REMOVED = frozenset(REMOVED)
KEY = "_replan"
"""The entry of a view's ``__dict__`` holding its remembered plans (``View.with_state`` leaves it out)."""


def remember(view: View, strategy: Any, budget: Budget, plan: Plan, state: Any) -> Plan:
    """Keep ``plan`` and the ``state`` the next step needs with ``view``; returns ``plan``.
    ``state`` None keeps nothing (the next step plans from scratch)."""
    key = (strategy, budget)
    try:
        hash(key)
    except TypeError:  # a strategy holding an unhashable parameter: nothing to key it by
        return plan
    cache = view.__dict__.setdefault(KEY, {})
    cache.pop(key, None)
    if state is None:
        return plan
    while len(cache) >= KEEP:
        cache.pop(next(iter(cache)))
    cache[key] = (plan, state)
    return plan


def recall(view: View, strategy: Any, budget: Budget) -> tuple[int, Plan, Any] | None:
    """The length of the parent view, its plan by ``strategy`` under ``budget`` and that plan's state,
    when ``view`` was grown by ``append`` from a view planned so; else None."""
    parent = view.__dict__.get("_replan_parent")
    if parent is None or view.__dict__.get("_log") is None:
        return None
    try:
        hit = parent[1].get((strategy, budget))
    except TypeError:
        return None
    return None if hit is None else (parent[0], hit[0], hit[1])


def fact_counts(view: View, plan: Plan) -> list[int]:
    """Per fact of ``view``, how many messages of ``plan``'s output hold it (the output being input
    messages, as they are or replaced: a cleared or truncated copy holds the facts found in it)."""
    counts = [0] * len(view.facts)
    masks, given = view.entries("fact_masks"), view.entries("messages")
    found = list(map(masks.__getitem__, plan.origin))
    for k in compress(range(len(found)), map(is_not, plan.messages, map(given.__getitem__, plan.origin))):
        found[k] = replacement_mask(view, plan.messages[k], masks[plan.origin[k]])
    for mask in filter(None, found):
        while mask:
            low = mask & -mask
            counts[low.bit_length() - 1] += 1
            mask ^= low
    return counts


def _count(counts: list[int], mask: int, step: int) -> None:
    while mask:
        low = mask & -mask
        counts[low.bit_length() - 1] += step
        mask ^= low


def extend(view: View, parent: int, plan: Plan, counts: list[int], edits: Mapping[int, tuple[str, str]],
           new_reason: str, params: Mapping[str, Any], *, warnings: Sequence[str], stats: Mapping[str, Any],
           idle: "str | Callable[[], str] | None",
           replace: Mapping[int, tuple[Message, int, int]] | None = None) -> tuple[Plan, list[int]] | None:
    """The plan of ``view`` (its first ``parent`` messages and new ones, each kept as it is for
    ``new_reason``), made from ``plan``, the plan of the first ``parent``, with ``edits`` (index ->
    action, reason): a reason changed, a kept message of the parent's dropped, or one it sent as it
    is replaced, when ``replace`` gives that index its replacement, tokens and facts (mask). ``plan``
    may replace messages (clear, truncate) but must insert and merge none, and ``counts`` be its
    ``fact_counts``. Returns the plan and its fact counts, or None when an edit is outside that (the
    caller plans from scratch). What ``settle`` would change is the caller's to know: the edits are
    final decisions."""
    replace = replace or {}
    if plan.notes or len(plan.messages) != len(plan.origin):
        return None
    log, n0, n = view._log, parent, len(view)
    if not _plain_arrivals(log, n0, n):
        return None
    actions, reasons = list(plan.actions), list(plan.reasons)
    gone: list[int] = []
    swapped: list[int] = []
    actions += ["keep"] * (n - n0)
    reasons += [new_reason] * (n - n0)
    for i, (action, why) in edits.items():
        if i >= n0 and (action != "keep" or i in replace):
            return None  # a new message not sent as it is: not an extension
        was = actions[i]
        if action in _REMOVED:
            if was not in _REMOVED:
                gone.append(i)
        elif i in replace:
            if was != "keep":
                return None  # replacing a replacement, or bringing a message back: not an extension
            swapped.append(i)
        elif was in _REMOVED or was != action:
            return None  # bringing a message back or replacing it: not an extension
        actions[i], reasons[i] = action, why
    if len(swapped) != len(replace):
        return None  # a replacement without its edit
    origin, messages, out_tokens = list(plan.origin), list(plan.messages), list(plan.output_tokens)
    counts = list(counts)
    sums = {k: v for k, v in plan.after.items() if k not in ("tool_definitions", "reply_priming")}
    tokens, cats, masks, given = log.tokens, log.categories, log.fact_masks, log.messages
    whole = len(origin) == n0  # the parent sent every message: output position = index
    for i in swapped:
        k = i if whole else bisect_left(origin, i)
        if k >= len(origin) or origin[k] != i or messages[k] is not given[i]:
            return None
        m, t, mask = replace[i]
        sums[cats[i]] += t - out_tokens[k]
        _count(counts, masks[i], -1)
        _count(counts, mask, 1)
        messages[k], out_tokens[k] = m, t
    if gone:
        gone.sort()
        at = [bisect_left(origin, i) for i in gone]
        if any(k >= len(origin) or origin[k] != i or messages[k] is not given[i] for k, i in zip(at, gone)):
            return None  # not sent, or sent replaced (its facts are not the original's)
        for k in reversed(at):  # few, and deleting from the end keeps the earlier positions right
            del origin[k], messages[k], out_tokens[k]
        for i in gone:
            sums[cats[i]] -= tokens[i]
            _count(counts, masks[i], -1)
    origin += range(n0, n)
    messages += given[n0:n]
    out_tokens += tokens[n0:n]
    for i in range(n0, n):
        sums[cats[i]] = sums.get(cats[i], 0) + tokens[i]
        _count(counts, masks[i], 1)
    mask = sum(1 << k for k, c in enumerate(counts) if c > 0)
    out = _finish(view, plan.budget, plan.strategy, params, actions, reasons, messages, origin, out_tokens, sums,
                  mask, warnings, stats, plan.state, idle, (plan.actions, tuple(edits)), removed=len(origin) < n)
    return out, counts


def _plain_arrivals(log: Any, n0: int, n: int) -> bool:
    """Whether the messages ``n0..n`` of ``log`` are ones a plan from scratch sends as they are:
    no tool result that answers no call (an orphan) or answers a call already answered (a second
    result): settle drops those, so a step that keeps them is not an extension."""
    if log.norphans[n - 1] != (log.norphans[n0 - 1] if n0 else 0):
        return False
    roles, messages, rounds, round_of = log.roles, log.messages, log.rounds, log.round_of
    for i in range(n0, n):
        if roles[i] == "tool":
            cid = messages[i].tool_call_id
            if any(k < i and roles[k] == "tool" and messages[k].tool_call_id == cid for k in rounds[round_of[i]]):
                return False
    return True
