"""``key_messages``: a recent window plus, from older history, the key messages: every user request
and the tool rounds that call a key tool."""
from __future__ import annotations

from itertools import chain, dropwhile
from dataclasses import dataclass
from typing import ClassVar

from ..i18n import N_, T
from .base import EXTENDS, Strategy, budget_window, param, register
from .plan import REMOVED, Plan, make_plan, minimum_warning, settle
from .view import MEMO_EXTENDERS, Budget, View
from .incremental.replan import remember
from .incremental.replan_keys import key_state, key_step
from .windows import preamble_systems, task_of_window, turn_aligned_start
from .keep_rules import answer_lone_users, keep_members, keep_pinned, removed_tokens, turn_reply, window_idle


@register
@dataclass(frozen=True)
class KeyMessages(Strategy):
    """A recent window plus, from older history, the key messages: every user request and the
    tool rounds that call a key tool (for a SQL agent, the generated and the executed SQL).

    Older key messages are taken newest first until ``max_key`` messages are kept. A user message
    kept this way needs a reply: its turn's key rounds, else its final answer; a turn with neither
    loses its user message too. Pinned messages (with their group and turn's user message) come
    on top of the cap.
    """

    name: ClassVar[str] = "key_messages"
    cost_per_call: ClassVar[str] = EXTENDS
    title: ClassVar[str] = N_("Recent window + key messages")
    summary: ClassVar[str] = N_("Keeps the recent messages, and from older history the user requests and the "
                              "results of key tools; everything else older is dropped.")
    scaling: ClassVar[str] = N_("Scaled to the budget, recent and max_key are each the number of 1,000-token "
                              "messages that fill half of what the budget leaves for messages.")
    recent: int = param(50, min=1, max=100_000,
                        help=N_("Size of the recent window in messages (widened back to the start of its turn). "
                             "Default 50 (fixed); the budget-scaled value is half the budget's message room in "
                             "1,000-token messages."))
    key_tools: tuple[str, ...] = param(("generate_sql", "run_sql"),
                                       help=N_("Tools whose calls and results are key messages in older history."))
    max_key: int = param(50, min=0, max=100_000,
                         help=N_("At most this many older messages are kept, newest first. Default 50 (fixed); "
                              "budget-scaled like recent."))

    @classmethod
    def budget_scaled(cls, budget: Budget) -> dict:
        """``recent`` and ``max_key``: half the budget's message room, in messages of 1,000 tokens."""
        window = budget_window(budget)
        return {"recent": window, "max_key": window}

    def quick_idle(self, view: View, budget: Budget) -> bool:
        """The conversation has no more than ``recent`` messages."""
        return len(view) <= self.recent

    def apply(self, view: View, budget: Budget) -> Plan:
        """Keep the window, then older key messages newest first up to the cap (from the parent
        view's plan when an append left the window's start where it was: ``incremental.replan_keys``)."""
        plan = key_step(self, view, budget)
        if plan is not None:
            return plan
        n = len(view)
        start = turn_aligned_start(view, self.recent)
        older = T("older than the recent window and not a key message")
        within = T("within the last {recent:,} messages (turn-aligned)", recent=self.recent)
        actions, reasons = ["drop"] * start + ["keep"] * (n - start), [older] * start + [within] * (n - start)
        keep_members(actions, reasons, [i for i in preamble_systems(view) if i < start], T("always kept: the system prompt"))
        task = task_of_window(view, start)
        if task is not None:
            keep_members(actions, reasons, [task], T("kept: the task (the user message of the turn the recent window cuts into)"))
        keep_pinned(view, actions, reasons)
        key_rounds = self._key_rounds(view)
        taken = self._take_keys(view, actions, reasons, start, key_rounds)
        answer_lone_users(view, actions, reasons)
        settle(view, actions, reasons)
        head = actions[:start]
        older_kept = start - sum(map(head.count, REMOVED))  # at C speed
        systems = sum(view.tokens[i] for i in preamble_systems(view) if i < start)
        what = T("the system prompt and the last {recent:,} messages", recent=self.recent)
        needed = systems + sum(view.tokens[start:])
        warn = minimum_warning(view, budget, what, needed)
        stats = {"window_start": start, "key_kept": taken, "older_kept": older_kept,
                 "older_dropped": start - older_kept, "tokens_saved": removed_tokens(view, actions)}
        plan = make_plan(view, budget, self.name, self.params(), actions, reasons, warnings=[warn] if warn else [],
                         stats=dict(stats), settle_first=False, idle=lambda: self._idle(view, start))
        return remember(view, self, budget, plan, key_state(view, plan, start, within, what, needed, stats))

    def _idle(self, view: View, start: int) -> str:
        """Why nothing older than the window was dropped."""
        if not any(view.roles[i] != "system" for i in range(start)):
            return window_idle(self.name, "recent", self.recent, view, start)
        return (T("key_messages keeps the last {recent:,} messages (recent, from message {start:,}), and every "
                "older message is a system prompt, a pinned message, a user request or key message within the cap "
                "of {max_key:,} (max_key), or the reply such a request needs", recent=self.recent, start=start, max_key=self.max_key))

    def _key_rounds(self, view: View) -> dict[int, str]:
        """Round number -> the first key tool it calls."""
        keys = set(self.key_tools)
        calls, rounds_of = _round_calls(view)
        candidates = sorted({r for k in keys for r in rounds_of.get(k, ())})  # only rounds calling a key tool
        return {r: next(name for name in calls[r] if name in keys) for r in candidates}

    def _take_keys(self, view: View, actions: list[str], reasons: list[str], start: int,
                   key_rounds: dict[int, str]) -> int:
        """Keep older key messages, newest turn first, until the cap; returns how many were kept."""
        seg, room = view.seg, self.max_key
        older = dropwhile(lambda turn: turn[1] > start, reversed(seg.turns))  # lazily: the cap ends the walk early
        blocks = chain(((s, e, True) for s, e in older), [(seg.preamble[0], min(seg.preamble[1], start), False)])
        for s, e, has_user in blocks:
            items = [] if not key_rounds else [(seg.rounds[seg.round_of[i]], T("key message: {key_rounds} call or result", key_rounds=key_rounds[seg.round_of[i]]))
                     for i in range(e - 1, s - 1, -1)
                     if seg.round_of[i] in key_rounds and seg.rounds[seg.round_of[i]][0] == i]
            if has_user and not items:
                reply = turn_reply(view, s, e)
                if not reply or view.messages[reply[0]].tool_calls:
                    if actions[s] in REMOVED:
                        reasons[s] = T("older than the recent window; its turn has no key result or answer to keep")
                    continue
                items = [(reply, T("kept so that user message {s} has a reply (two user turns in a row are invalid)", s=s))]
            head = [s] if has_user else []
            for members, why in items:
                cost = sum(1 for i in (*head, *members) if actions[i] in REMOVED)
                if cost > room:
                    self._mark_capped(view, actions, reasons, start, key_rounds)
                    return self.max_key - room
                room -= cost
                keep_members(actions, reasons, head, T("key message: a user request from older history"))
                keep_members(actions, reasons, members, why)
                head = []
        return self.max_key - room

    def _mark_capped(self, view: View, actions: list[str], reasons: list[str], start: int,
                     key_rounds: dict[int, str]) -> None:
        """Say why the older key messages left out are dropped."""
        why = T("older than the recent window; the cap of {max_key:,} older key messages is reached", max_key=self.max_key)
        seg = view.seg
        users = (s for s, _ in seg.turns if s < start)
        keyed = (i for r in key_rounds for i in seg.rounds[r] if i < start)
        for i in (*users, *keyed):
            if actions[i] in REMOVED:
                reasons[i] = why


def _round_calls(view: View) -> tuple[list[tuple[str, ...]], dict[str, list[int]]]:
    """Once per view: the tool names each round calls, in order, and the rounds calling each tool."""
    cached = view.memo.get("key_messages.calls")
    if cached is None:
        cached = view.memo["key_messages.calls"] = _add_round_calls(view, [], {})
    return cached


def _add_round_calls(view: View, calls: list[tuple[str, ...]],
                     rounds_of: dict[str, list[int]]) -> tuple[list[tuple[str, ...]], dict[str, list[int]]]:
    """``calls`` and ``rounds_of`` completed with the rounds of ``view`` they do not cover yet."""
    for r in range(len(calls), len(view.seg.rounds)):
        names = tuple(c.name for c in view.messages[view.seg.rounds[r][0]].tool_calls)
        calls.append(names)
        for name in dict.fromkeys(names):
            rounds_of.setdefault(name, []).append(r)
    return calls, rounds_of


MEMO_EXTENDERS["key_messages.calls"] = lambda old, new, table: _add_round_calls(
    new, list(table[0]), {k: list(v) for k, v in table[1].items()})  # a round's calls never change

