"""The re-plan step of ``recent_events`` after ``View.append`` (see ``replan``).

``recent_events`` keeps the first messages of the body and its newest ``tail``; the messages
between are forgotten, then ``answer_lone_users`` and ``settle`` widen what is removed to whole
tool rounds and turns. An appended message pushes the oldest messages of the tail into the
forgotten middle; nothing before the turn those messages belong to changes (its turns and tool
rounds end before it). The step decides that turn and everything after it as a plan from scratch
would -- the same rules, on those messages alone -- and checks that doing so for the parent gives
the parent's decisions there. A step it cannot decide so (a group reaching back before that turn,
a compaction summary or a system prompt in it, a first message of the body moving, a region too
long to be cheap) returns None and the strategy plans from scratch.
"""
from __future__ import annotations

from bisect import bisect_left
from typing import Any

from ...i18n import T
from ..plan import REMOVED, Plan, group_reason, texts
from ..view import Budget, View
from .replan import extend, fact_counts, recall, remember

REGION = 512
"""A step decides again from the start of the turn its forgotten middle now ends in when that start
is at most this many messages back; else (a long turn: an agent's run) from the tool round there."""
LIMIT = 4_096
"""The most messages a step decides again (more: the strategy plans from scratch)."""
_REMOVED = frozenset(REMOVED)


def recent_state(view: View, plan: Plan, pre: list[int], forgotten: int) -> dict | None:
    """What ``recent_step`` needs from a ``recent_events`` plan made from scratch (None when it
    forgot nothing, merged user messages, or the conversation has no user message yet): ``pre``,
    the non-system messages before the first user message, and ``forgotten``, its stat."""
    if plan.notes or not forgotten or view.newest_user() is None:
        return None
    return {"pre": pre, "forgotten": forgotten, "counts": None}


def recent_step(strategy: Any, view: View, budget: Budget) -> Plan | None:
    """``recent_events``' plan of ``view`` from its parent's: the turn where the forgotten middle
    now ends, and what follows, decided again."""
    hit = recall(view, strategy, budget)
    if hit is None:
        return None
    parent, plan, st = hit
    log, n0, n = view._log, parent, len(view)
    pre, pe = st["pre"], log.preamble(n)[1]
    head = min(strategy.keep_first, strategy.max_events)
    tail = strategy.max_events - head
    cut0 = max(head, len(pre) + n0 - pe - tail)
    x0 = pe + cut0 - len(pre)  # the first message the parent kept in its tail
    if cut0 < len(pre) or x0 >= n0 or log.turn_of[x0] < 0:
        return None
    s0 = log.starts[log.turn_of[x0]]
    groups, group_of, messages = log.groups, log.group_of, log.messages
    lead = None
    if n - s0 <= REGION:
        r0 = s0
    else:  # a long turn (an agent's run): from the tool round the tail now leaves, knowing how its turn starts
        r0 = groups[group_of[x0]][0]
        if n - r0 > LIMIT or _kept_always(messages[s0]):
            return None
        was, now = (_start_action(strategy, log, m, s0, pe, len(pre)) for m in (n0, n))
        if was is None or was != now:
            return None
        lead = (s0, now)
    fs = view.first_system()
    if fs is not None and fs >= r0:
        return None
    for i in range(r0, n):
        if groups[group_of[i]][0] < r0:
            return None  # a tool round reaching back before the region
    for i in log.starts[bisect_left(log.starts, r0):bisect_left(log.starts, n)]:
        if _kept_always(messages[i]):
            return None
    made = texts(view)
    old, old_drops = _region(strategy, log, made, n0, r0, pe, len(pre), lead)
    if old[0] != list(plan.actions[r0:n0]) or old[1] != list(plan.reasons[r0:n0]):
        return None
    (acts, whys), drops = _region(strategy, log, made, n, r0, pe, len(pre), lead)
    s0 = r0
    within = T("one of the newest {tail:,} messages", tail=tail)
    edits: dict[int, tuple[str, str]] = {}
    for k in range(n - s0):
        i = s0 + k
        if i >= n0:
            if acts[k] != "keep":
                return None
            if whys[k] != within:
                edits[i] = ("keep", whys[k])
        elif acts[k] != old[0][k] or whys[k] != old[1][k]:
            edits[i] = (acts[k], whys[k])
    forgotten = st["forgotten"] - old_drops + drops
    body_n = len(pre) + n - pe
    if st["counts"] is None:
        st["counts"] = fact_counts(view, plan)
    made_plan = extend(view, parent, plan, st["counts"], edits, within, strategy.params(), warnings=(),
                       stats={"forgotten": forgotten},
                       idle=lambda: T("recent_events keeps up to {max_events:,} messages (max_events) and the "
                                      "conversation has {n_body:,} besides the system prompt",
                                      max_events=strategy.max_events, n_body=body_n))
    if made_plan is None:
        return None
    out, counts = made_plan
    return remember(view, strategy, budget, out, {**st, "forgotten": forgotten, "counts": counts})


def _kept_always(m: Any) -> bool:
    """A compaction summary or the task of a run (``View.compactions``): settle keeps it."""
    return bool(m.extra.get("ctxlab_compaction") or m.extra.get("ctxlab_task"))


def _start_action(strategy: Any, log: Any, m: int, s0: int, pe: int, pre_n: int) -> str | None:
    """The final action of user message ``s0`` in ``recent_events``' plan of the first ``m`` messages,
    when its turn is the newest or it is forgotten (then ``answer_lone_users`` leaves its turn alone);
    else None. A user message is a group of its own, so only its place and settle's first rule decide it."""
    head = min(strategy.keep_first, strategy.max_events)
    body_n = pre_n + m - pe
    p = pre_n + s0 - pe
    newest = log.newest_user(m) == s0
    if p < min(head, body_n) or p >= max(head, body_n - (strategy.max_events - head)):
        return "keep" if newest else None
    return "keep" if newest else "drop"


def _region(strategy: Any, log: Any, made: dict, m: int, s0: int, pe: int, pre_n: int,
            lead: tuple[int, str] | None = None) -> tuple[tuple[list, list], int]:
    """The final actions and reasons of messages ``s0..m`` in ``recent_events``' plan of the first
    ``m`` messages of ``log`` (no tool round reaching back before ``s0``), and how many it forgets
    before ``settle``: ``RecentEvents.apply``, ``answer_lone_users`` and ``settle`` on those messages
    alone. ``s0`` starts a turn, or ``lead`` gives the start of the turn it is in and that user
    message's final action (its turn is the newest, or it is forgotten: ``_start_action``)."""
    head = min(strategy.keep_first, strategy.max_events)
    tail = strategy.max_events - head
    body_n = pre_n + m - pe
    cut = max(head, body_n - tail)
    size = m - s0
    first = min(max(min(head, body_n) - pre_n + pe - s0, 0), size)  # region positions [0, first): the head
    last = min(max(cut - pre_n + pe - s0, first), size)  # [first, last) forgotten, [last, size) the tail
    acts = ["keep"] * first + ["drop"] * (last - first) + ["keep"] * (size - last)
    whys = ([T("one of the first {head:,} messages (keep_first)", head=head)] * first
            + [T("forgotten: after the first {head:,} and before the newest {tail:,} messages (max_events "
                 "{max_events:,})", head=head, tail=tail, max_events=strategy.max_events)] * (last - first)
            + [T("one of the newest {tail:,} messages", tail=tail)] * (size - last))
    starts, groups, group_of, round_of, messages = log.starts, log.groups, log.group_of, log.round_of, log.messages
    turns = starts[bisect_left(starts, s0):bisect_left(starts, m)]
    ends = turns[1:] + [m]
    for start, end in zip(turns[:-1], ends):  # answer_lone_users: every turn but the newest
        if acts[start - s0] in _REMOVED:
            continue
        rest = acts[start + 1 - s0:end - s0]
        if rest.count("drop") < len(rest):
            continue
        reply = _reply(messages, round_of, groups, group_of, start, end, m)
        why = T("kept so that user message {start} has a reply (two user turns in a row are invalid)", start=start)
        for i in reply:
            if acts[i - s0] in _REMOVED:
                acts[i - s0], whys[i - s0] = "keep", why
    drops = acts.count("drop")
    u = turns[-1] if turns else None  # settle, rule 1: the newest user message (when the region holds it)
    if u is not None and acts[u - s0] in _REMOVED:
        acts[u - s0], whys[u - s0] = "keep", T("always kept: the newest user message")
    seen: set[int] = set()
    for k in range(size):  # rule 2: a tool round with a removed member is removed whole
        g = group_of[s0 + k]
        if g in seen:
            continue
        seen.add(g)
        members = _members(groups[g], m)
        if len(members) == 1:
            continue
        gone = next((acts[i - s0] for i in members if acts[i - s0] in _REMOVED), None)
        if gone is None:
            continue
        why = group_reason(made, gone, members[0])
        for i in members:
            if acts[i - s0] not in _REMOVED:
                acts[i - s0], whys[i - s0] = gone, why
    if lead is not None and lead[1] in _REMOVED:  # rule 3 on the turn the region starts inside
        why = T("its turn's user message ({start}) is removed", start=lead[0])
        for i in range(s0, turns[0] if turns else m):
            if acts[i - s0] not in _REMOVED:
                acts[i - s0], whys[i - s0] = lead[1], why
    for start, end in zip(turns, ends):  # rule 3: a turn whose user message is removed goes whole
        gone = acts[start - s0]
        rest = acts[start + 1 - s0:end - s0]
        if gone not in _REMOVED or rest.count("drop") + rest.count("summarize") == len(rest):
            continue
        why = T("its turn's user message ({start}) is removed", start=start)
        for i in range(start + 1, end):
            if acts[i - s0] not in _REMOVED and i != u:
                acts[i - s0], whys[i - s0] = gone, why
    return (acts, whys), drops


def _reply(messages: Any, round_of: Any, groups: Any, group_of: Any, start: int, end: int, m: int) -> tuple[int, ...]:
    """``keep_rules.turn_reply`` on the log, as the view of its first ``m`` messages sees it."""
    for i in range(end - 1, start, -1):
        if messages[i].role == "assistant" and not messages[i].tool_calls:
            return (i,)
    for i in range(end - 1, start, -1):
        if round_of[i] >= 0:
            return _members(groups[group_of[i]], m)
    return ()


def _members(group: tuple[int, ...], m: int) -> tuple[int, ...]:
    """The members of a group that the view of the first ``m`` messages sees."""
    return group if group[-1] < m else tuple(i for i in group if i < m)
