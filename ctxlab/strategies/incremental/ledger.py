"""Removal bookkeeping shared by ``middle_out`` and ``oldest_first``: which groups must stay, and
a ledger that removes whole groups while keeping its books the way ``settle`` will (a user message
whose turn has nothing else left stays, merged into the next user message), so the tokens it counts
are the tokens the settled plan sends."""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ...i18n import T
from ..plan import positions
from ..view import View

LONE = T("nothing else of its turn is kept: two user turns in a row are invalid")


def _protect(view: View, must: Iterable[int]) -> list[bool]:
    """Per group, whether it must stay: groups of ``must``, the user message of any turn holding one
    of those, and the last reply (assistant or tool message) of a kept user message's turn."""
    seg, msgs, newest = view.seg, view.messages, view.newest_user()
    prot = [False] * len(seg.groups)
    todo = [seg.group_of[i] for i in must]
    while todo:
        g = todo.pop()
        if prot[g]:
            continue
        prot[g] = True
        for i in seg.groups[g]:
            t = seg.turn_of[i]
            if t < 0:
                continue
            start, end = seg.turns[t]
            if i != start:
                todo.append(seg.group_of[start])
            elif i != newest:
                reply = next((k for k in range(end - 1, start, -1) if msgs[k].role in ("assistant", "tool")), None)
                if reply is not None:
                    todo.append(seg.group_of[reply])
    return prot


def _positions(items: tuple[str, ...], value: str) -> Iterator[int]:
    """Indexes where ``value`` occurs (fast when it is rare)."""
    i = -1
    while True:
        try:
            i = items.index(value, i + 1)
        except ValueError:
            return
        yield i


class _Ledger:
    """Decisions under construction, with the tokens and messages they leave (settle mirrored)."""

    def __init__(self, view: View, must: Iterable[int]) -> None:
        seg = self.seg = view.seg
        self.view, n = view, len(view)
        self.actions, self.reasons = ["keep"] * n, [""] * n
        self.total, self.kept, self.groups_removed = sum(view.tokens), n, 0
        self.protected = _protect(view, must)
        self.starts = [start for start, _ in seg.turns]
        self.alive = [end - start - 1 for start, end in seg.turns]  # kept replies (assistant, tool) per turn
        self.last_turn = len(seg.turns) - 1
        self.roles = view.roles  # roles, not categories: an inserted summary is a system message
        self._hot = (self.actions, self.reasons, view.tokens, self.roles, self.alive, self.starts, seg.turn_of)
        for i in _positions(self.roles, "system"):
            if seg.turn_of[i] >= 0:
                self.alive[seg.turn_of[i]] -= 1

    def drop_group(self, g: int, reason: str) -> None:
        """Remove group ``g``, and the user message of a turn it leaves empty."""
        actions, reasons, tokens, roles, alive, starts, turn_of = self._hot
        removed = count = 0
        for i in self.seg.groups[g]:
            if actions[i] != "keep":
                continue
            actions[i] = "drop"
            reasons[i] = reason
            removed += tokens[i]
            count += 1
            t = turn_of[i]
            if t >= 0 and i != starts[t] and roles[i] != "system":
                alive[t] -= 1  # a user message left alone stays (settle merges it into the next one)
        self.total -= removed
        self.kept -= count
        self.groups_removed += 1

    def drop_turn(self, t: int, why_user: str, why_rest: str) -> None:
        """Remove turn ``t`` from its user message on (what settle does to a removed user message)."""
        start, end = self.seg.turns[t]
        if self.actions[start] == "keep":
            self.actions[start], self.reasons[start] = "drop", why_user
            self.total, self.kept, self.groups_removed = (self.total - self.view.tokens[start], self.kept - 1,
                                                          self.groups_removed + 1)
        for i in range(start + 1, end):
            g = self.seg.group_of[i]
            if self.actions[i] == "keep" and not self.protected[g]:
                self.drop_group(g, why_rest)

    def cost(self, g: int) -> int:
        """How many messages removing group ``g`` takes away (its user message too, if left alone)."""
        seg, actions = self.seg, self.actions
        members = [i for i in seg.groups[g] if actions[i] == "keep"]
        t = seg.turn_of[members[0]] if members else -1
        if t < 0:
            return len(members)
        start, end = seg.turns[t]
        if members[0] == start:
            return sum(1 for i in range(start, end) if actions[i] == "keep")
        return len(members)

    def fill(self, why_kept: str, spans: Iterable[tuple[int, int, str]] = (),
             why_protected: str = T("kept: its turn holds a message that must stay")) -> None:
        """Reasons for kept messages that have none: the system prompt, the newest user message and
        pins first, then ``spans`` (start, end, reason), then ``why_protected`` for a protected group,
        else ``why_kept``."""
        view, actions, reasons = self.view, self.actions, self.reasons
        prot, group_of = self.protected, self.seg.group_of
        special = [(view.first_system(), T("always kept: the system prompt")),
                   (view.newest_user(), T("always kept: the newest user message")),
                   *((i, T("pinned: never removed")) for i in sorted(view.pins))]
        for i, why in special:
            if i is not None and actions[i] == "keep" and not reasons[i]:
                reasons[i] = why
        for start, end, why in spans:
            for i in range(start, end):
                if actions[i] == "keep" and not reasons[i]:
                    reasons[i] = why
        for i in positions(reasons, ("",)):
            if actions[i] == "keep":
                reasons[i] = why_protected if prot[group_of[i]] else why_kept


@dataclass(frozen=True)
class _Decided:
    """Decisions before ``make_plan``: what ``hybrid`` compares without building two plans."""

    actions: list[str]
    reasons: list[str]
    warnings: list[str]
    stats: dict
    idle: str = ""  # why nothing was removed, when nothing was
