"""Strategies that keep a recent window: ``none`` (the baseline), ``sliding_window`` and
``turn_safe``."""
from __future__ import annotations

from dataclasses import dataclass
from itertools import compress
from typing import ClassVar

from ..i18n import N_, T
from .base import EXTENDS, Strategy, budget_window, param, register, works_on_param
from .plan import Plan, make_plan, minimum_warning
from .view import Budget, View
from .incremental.replan import remember
from .keep_rules import window_idle
from .incremental.replan_windows import (keep_all_state, keep_all_step, turn_state, turn_stats, turn_step, window_state,
                              window_step)


def preamble_systems(view: View) -> list[int]:
    """Indexes of the system messages before the first user message (the system prompt)."""
    start, end = view.seg.preamble
    return [i for i in range(start, end) if view.messages[i].role == "system"]


def turn_aligned_start(view: View, last_n: int) -> int:
    """Start of the last ``last_n`` messages, moved back to the user message of its turn (to 0
    when it falls in the preamble and the conversation has a user message). Inside the newest
    turn (an agent's long run of calls) it moves back only to the start of a whole group, so a
    call keeps its results: the window cuts inside the turn, and ``task_of_window`` names the
    user message to keep with it."""
    start = max(len(view) - last_n, 0)
    if start == 0:
        return 0
    turn = view.seg.turn_of[start]
    if turn >= 0 and turn == len(view.seg.turns) - 1 and start > view.seg.turns[turn][0]:
        return view.seg.groups[view.seg.group_of[start]][0]
    if turn >= 0:
        return view.seg.turns[turn][0]
    return 0 if view.newest_user() is not None else start


def task_of_window(view: View, start: int) -> int | None:
    """The user message of the turn a window starting at ``start`` cuts into (the task the agent is
    working on), or None when the window starts on a turn's user message or in the preamble."""
    turn = view.seg.turn_of[start] if 0 <= start < len(view) else -1
    if turn < 0 or view.seg.turns[turn][0] == start:
        return None
    return view.seg.turns[turn][0]


def trim_to_first_user(view: View, actions: list[str], reasons: list[str], why: str) -> None:
    """Drop kept non-system messages before the first kept user message, so the window starts on
    a user turn, as providers expect. A conversation with no user message at all is left as it is:
    there is no user turn to start on, and emptying it would help no one."""
    if view.newest_user() is None:
        return
    roles = view.roles
    for i in compress(range(len(actions)), map("drop".__ne__, actions)):  # skips the dropped at C speed
        role = roles[i]
        if role == "system":
            continue
        if role == "user":
            return
        actions[i], reasons[i] = "drop", why


@register
@dataclass(frozen=True)
class NoStrategy(Strategy):
    """Send everything: the baseline every other strategy is measured against."""

    name: ClassVar[str] = "none"
    cost_per_call: ClassVar[str] = EXTENDS
    title: ClassVar[str] = N_("None (send everything)")
    summary: ClassVar[str] = N_("Sends every message as is; warns when that is over budget.")

    def quick_idle(self, view: View, budget: Budget) -> bool:
        """Always: it sends everything."""
        return True

    def apply(self, view: View, budget: Budget) -> Plan:
        """Keep every message (after ``view.append``, the parent's plan with the new messages)."""
        plan = keep_all_step(self, view, budget)
        if plan is not None:
            return plan
        n = len(view)
        plan = make_plan(view, budget, self.name, self.params(), ["keep"] * n, [T("sent as is")] * n,
                         settle_first=False, idle=T("none sends every message as is: it is the baseline the "
                                                   "other strategies are measured against"))
        return remember(view, self, budget, plan, keep_all_state(view, plan))


@register
@dataclass(frozen=True)
class SlidingWindow(Strategy):
    """Keep the system prompt, the newest user message, and the newest whole groups that fit."""

    name: ClassVar[str] = "sliding_window"
    cost_per_call: ClassVar[str] = EXTENDS
    title: ClassVar[str] = N_("Sliding window")
    summary: ClassVar[str] = N_("Keeps the newest whole messages that fit the window (a tool call and its results "
                              "count as one); older ones are dropped.")
    works_on: str = works_on_param("full_history")  # a trim in a pre-model hook (LangChain trim_messages)
    max_tokens: int | None = param(None, type="int", min=1, help=N_("Window size in tokens; empty = what the budget leaves for messages."))
    buffer_ratio: float = param(0.1, min=0.0, max=0.9, help=N_("Share of the window left free as a safety margin."))

    def quick_idle(self, view: View, budget: Budget) -> bool:
        """The whole conversation fits the window and nothing but system messages precedes its first user message."""
        limit = min(self.max_tokens or budget.available, budget.available)
        if view.total > int(limit * (1 - self.buffer_ratio)):
            return False
        start, end = view.preamble
        return view.newest_user() is None or all(view.role_of(i) == "system" for i in range(start, end))

    def apply(self, view: View, budget: Budget) -> Plan:
        """Fill the window from the newest group backwards; stop at the first that does not fit.
        After ``view.append`` of messages that are not user messages, the parent's plan is
        extended instead (``incremental.replan``): the window's start only moves forward."""
        limit = min(self.max_tokens or budget.available, budget.available)
        target = int(limit * (1 - self.buffer_ratio))
        plan = window_step(self, view, budget, limit, target)
        return plan if plan is not None else self._plan(view, budget, limit, target)

    def _plan(self, view: View, budget: Budget, limit: int, target: int) -> Plan:
        """The plan from scratch (and what the next step's ``_window_step`` needs, remembered)."""
        n = len(view)
        must = set(preamble_systems(view)) | set(view.compactions)
        if view.newest_user() is not None:
            must.add(view.newest_user())
        must_tokens = sum(view.tokens[i] for i in must)
        actions, reasons = ["drop"] * n, [T("outside the {target:,}-token window", target=target)] * n
        outside = reasons[0] if n else None  # the reasons as given, for the next step's extension
        for i in must:
            actions[i], reasons[i] = "keep", (
                T("always kept: the system prompt") if view.messages[i].role == "system" else
                T("always kept: a compaction summary") if i in view.compactions else T("always kept: the newest user message"))
        room = target - must_tokens
        groups, tokens, first = view.seg.groups, view.tokens, 0
        must_groups = {view.seg.group_of[i] for i in must}
        for g in range(len(groups) - 1, -1, -1):
            if g in must_groups:
                continue
            members = groups[g]
            cost = tokens[members[0]] if len(members) == 1 else sum(map(tokens.__getitem__, members))
            if cost > room:
                first = g + 1  # the window's first group: the window is every group from here on
                break
            room -= cost
            for i in members:
                actions[i], reasons[i] = "keep", T("inside the {target:,}-token window", target=target)
        inside = next((reasons[groups[g][0]] for g in range(first, len(groups)) if g not in must_groups), None)
        trim_to_first_user(view, actions, reasons, T("the window starts on a user message"))
        warn = minimum_warning(view, budget, T("the system prompt and the newest user message"), must_tokens)
        plan = make_plan(view, budget, self.name, self.params(), actions, reasons, warnings=[warn] if warn else [],
                         stats={"window_tokens": target, "room_left": max(room, 0)},
                         idle=lambda: self._idle(view, budget, limit, target))
        state = window_state(view, plan, first, target - must_tokens - room, target - must_tokens,
                              (outside, inside), [warn] if warn else [])
        return remember(view, self, budget, plan, state)

    def _idle(self, view: View, budget: Budget, limit: int, target: int) -> str:
        """Why the window removed nothing."""
        source = (T("max_tokens {max_tokens:,}", max_tokens=self.max_tokens) if self.max_tokens and self.max_tokens < budget.available
                  else T("the {available:,} tokens the budget leaves for messages", available=budget.available))
        window = T("sliding_window keeps the newest messages that fit its {target:,}-token window ({source})", target=target, source=source)
        window = T("sliding_window keeps the newest messages that fit its {target:,}-token window ({source} less a {buffer_ratio:.0%} buffer)", target=target, source=source, buffer_ratio=self.buffer_ratio) if self.buffer_ratio else window
        if view.total <= target:
            return T("{window} and the conversation's messages hold {total:,} tokens", window=window, total=view.total)
        return T("{window}; the conversation holds only the messages it always keeps (system prompt, newest user message)", window=window)


@register
@dataclass(frozen=True)
class TurnSafe(Strategy):
    """Keep the last N messages, extended back to the user message that starts their turn."""

    name: ClassVar[str] = "turn_safe"
    cost_per_call: ClassVar[str] = EXTENDS
    title: ClassVar[str] = N_("Turn-safe window")
    summary: ClassVar[str] = N_("Keeps the last N messages plus the system prompt, extended back so the window "
                              "starts on a user message: no older turn is cut in half. A newest turn longer than N "
                              "(an agent's run of calls) is cut at a whole tool round, keeping its user message.")
    scaling: ClassVar[str] = N_("Scaled to the budget, last_n is the number of 1,000-token messages that fill half "
                              "of what the budget leaves for messages.")
    works_on: str = works_on_param("full_history")  # trim_messages by count in a pre-model hook
    last_n: int = param(100, min=1, max=100_000,
                        help=N_("How many of the newest messages to keep. Default 100 (fixed); the budget-scaled "
                             "value is half the budget's message room in 1,000-token messages."))

    @classmethod
    def budget_scaled(cls, budget: Budget) -> dict:
        """``last_n``: half the budget's message room, in messages of 1,000 tokens."""
        return {"last_n": budget_window(budget)}

    def quick_idle(self, view: View, budget: Budget) -> bool:
        """The conversation has no more than ``last_n`` messages."""
        return len(view) <= self.last_n

    def apply(self, view: View, budget: Budget) -> Plan:
        """Window of the last ``last_n`` messages, widened to a turn start (after ``view.append``, the
        parent's plan extended when the window only moved forward, see ``incremental.replan_windows``)."""
        plan = turn_step(self, view, budget)
        if plan is not None:
            return plan
        n = len(view)
        start = turn_aligned_start(view, self.last_n)
        actions = ["drop"] * start + ["keep"] * (n - start)
        reasons = ([T("older than the last {last_n} messages", last_n=self.last_n)] * start
                   + [T("within the last {last_n} messages (turn-aligned)", last_n=self.last_n)] * (n - start))
        given = (reasons[0] if start else None, reasons[-1] if n > start else None)  # for the next step
        for i in preamble_systems(view):
            if i < start:
                actions[i], reasons[i] = "keep", T("always kept: the system prompt")
        task = task_of_window(view, start)
        if task is not None:
            actions[task], reasons[task] = "keep", (T("kept: the task (the user message of the turn the last "
                                                    "{last_n} messages cut into)", last_n=self.last_n))
        plan = make_plan(view, budget, self.name, self.params(), actions, reasons,
                         stats=turn_stats(n, self.last_n, start),
                         idle=lambda: window_idle(self.name, "last_n", self.last_n, view, start))
        return remember(view, self, budget, plan, turn_state(view, plan, start, task, given))
