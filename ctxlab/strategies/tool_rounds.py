"""``tool_rounds``: keep only the newest tool rounds (a round is an assistant message with tool calls
and their results); messages outside every round stay."""
from __future__ import annotations

from itertools import repeat
from dataclasses import dataclass
from typing import ClassVar

from ..i18n import N_, T, role_text
from .base import Strategy, param, register
from .plan import REMOVED, Plan, make_plan, minimum_warning, settle
from .view import MEMO_EXTENDERS, Budget, View
from .keep_rules import answer_lone_users, keep_pinned, removed_tokens, set_at


def _outside_round(role: str) -> tuple[str, str]:
    """The action and reason of a message outside every tool round."""
    if role == "tool":
        return "drop", T("a tool result that answers no earlier call")
    if role == "assistant":
        return "keep", T("kept: assistant text (no tool calls)")
    return "keep", T("kept: {role} message", role=role_text(role))


def _extend_layout(old: View, new: View, known: tuple) -> tuple | None:
    """``_round_layout`` of a grown view from the parent's, while no round is added (the reasons
    count the rounds): new messages outside rounds get their entries, results joining the newest
    round are added to it; anything else derives the layout again (None)."""
    seg = new.seg
    total = len(seg.rounds)
    if total != len(old.seg.rounds) or (not old.seg.turns and seg.turns):
        return None
    actions, reasons, flat, older, offsets, firsts = known
    actions, reasons, flat, older, offsets = list(actions), list(reasons), list(flat), list(older), list(offsets)
    for i in range(len(old), len(new)):
        r = seg.round_of[i]
        if r < 0:
            action, reason = _outside_round(new.roles[i])
        elif r == total - 1:
            action, reason = "keep", ""
            flat.append(i)
            older.append(T("older tool round (round {count:,} of {total:,})", count=r + 1, total=total))
            offsets[-1] += 1
        else:
            return None
        actions.append(action)
        reasons.append(reason)
    return tuple(actions), tuple(reasons), tuple(flat), tuple(older), tuple(offsets), firsts


MEMO_EXTENDERS["tool_rounds"] = _extend_layout


def _round_layout(view: View) -> tuple:
    """What ``tool_rounds`` derives from the view alone, once per view: the action and reason of
    every message outside the rounds, the round members in round order with the reason each gets
    when its round is dropped, and where each round starts in that order."""
    cached = view.memo.get("tool_rounds")
    if cached is not None:
        return cached
    seg, roles = view.seg, view.roles
    total = len(seg.rounds)
    actions, reasons = ["keep"] * len(view), [""] * len(view)
    for i, role in enumerate(roles):
        if seg.round_of[i] < 0:
            actions[i], reasons[i] = _outside_round(role)
    if seg.turns:
        reasons[seg.turns[0][0]] = T("kept: the original request")
    flat: list[int] = []
    older: list[str] = []
    offsets = [0]
    for r, members in enumerate(seg.rounds):
        flat.extend(members)
        older.extend([T("older tool round (round {count:,} of {total:,})", count=r + 1, total=total)] * len(members))
        offsets.append(len(flat))
    cached = view.memo["tool_rounds"] = (tuple(actions), tuple(reasons), tuple(flat), tuple(older), tuple(offsets),
                                         tuple(members[0] for members in seg.rounds))
    return cached


@register
@dataclass(frozen=True)
class ToolRounds(Strategy):
    """The multi-round optimization: keep the system messages, every user message (the first is
    the original request), assistant answers, and only the newest ``keep_rounds`` tool rounds.

    An older round (an assistant message with tool calls and all of its results) goes whole.
    Exceptions, on top of ``keep_rounds``: a round holding a pinned message, and the newest round
    of an older turn that has no other reply (its user message could not stay without one).
    A tool result that answers no call is dropped: no provider accepts it.
    """

    name: ClassVar[str] = "tool_rounds"
    title: ClassVar[str] = N_("Newest tool rounds")
    summary: ClassVar[str] = N_("Keeps system, user and answer messages and only the newest tool rounds; "
                              "older tool calls go with all their results.")
    keep_rounds: int = param(1, min=0, max=10_000, help=N_("How many of the newest tool rounds to keep whole."))

    def apply(self, view: View, budget: Budget) -> Plan:
        """Drop every tool round older than the newest ``keep_rounds``."""
        seg = view.seg
        total = len(seg.rounds)
        oldest_kept = min(max(total - self.keep_rounds, 0), total)
        newest = T("newest tool round") if self.keep_rounds == 1 else T("among the newest {keep_rounds:,} tool rounds", keep_rounds=self.keep_rounds)
        base_actions, base_reasons, flat, older, offsets, firsts = _round_layout(view)
        actions, reasons = list(base_actions), list(base_reasons)
        cut = offsets[oldest_kept]
        set_at(actions, flat[:cut], repeat("drop", cut))
        set_at(reasons, flat[:cut], older[:cut])
        for r in range(oldest_kept, total):
            why = T("{newest} (round {count:,} of {total:,})", newest=newest, count=r + 1, total=total)
            for i in seg.rounds[r]:
                reasons[i] = why
        keep_pinned(view, actions, reasons)
        answer_lone_users(view, actions, reasons)
        settle(view, actions, reasons)
        removed = sum(map(REMOVED.__contains__, map(actions.__getitem__, firsts)))
        saved = removed_tokens(view, actions)
        what = T("the system, user and answer messages and the newest {keep_rounds:,} tool round(s)", keep_rounds=self.keep_rounds)
        warn = minimum_warning(view, budget, what, view.total - saved)
        return make_plan(view, budget, self.name, self.params(), actions, reasons, warnings=[warn] if warn else [],
                         stats={"rounds_total": total, "rounds_removed": removed, "tokens_saved": saved},
                         settle_first=False, idle=lambda: self._idle(total))

    def _idle(self, total: int) -> str:
        """Why no tool round was removed."""
        head = T("tool_rounds keeps the newest {keep_rounds:,} tool round(s) (keep_rounds)", keep_rounds=self.keep_rounds)
        if total <= self.keep_rounds:
            return T("{head} and the conversation has {total:,}", head=head, total=total)
        return (T("{head}; each of the {count:,} older round(s) holds a pinned message or is "
                "the only reply to its turn's user message, so it stays", head=head, count=total - self.keep_rounds))

