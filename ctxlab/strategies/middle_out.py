"""``middle_out``: the middle of the conversation goes first (OpenRouter's middle-out transform),
its groups removed from the middle outward until the prompt fits.

It, ``oldest_first`` and ``hybrid`` remove atomic groups whole and keep their own books the way ``settle`` will: a user
message whose turn has nothing else left is removed with it (two user turns in a row are
invalid), and a message that must stay (preserved, pinned, the system prompt, the newest user
message) keeps its turn's user message and, for a user message, the last reply of its turn. So
the tokens they count are the tokens the settled plan sends."""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..i18n import N_, T
from .base import Strategy, works_on_param, param, register
from .plan import Plan, make_plan, minimum_warning
from .incremental.batch import apply as apply_removal, simulate, tables as batch_tables
from .incremental.ledger import LONE, _Decided, _Ledger
from .view import Budget, View


def _middle_out_order(firsts: list[int], mid: float) -> Iterator[int]:
    """Positions into ``firsts`` (sorted), nearest ``mid`` first, then alternately right and left
    (the definition ``_middle_out_positions`` computes as an array; the tests compare the two)."""
    left = bisect_left(firsts, mid) - 1
    right = left + 1
    go_right = right < len(firsts) and (left < 0 or firsts[right] - mid <= mid - firsts[left])
    while left >= 0 or right < len(firsts):
        if (go_right and right < len(firsts)) or left < 0:
            yield right
            right += 1
        else:
            yield left
            left -= 1
        go_right = not go_right


def _middle_out_positions(firsts: np.ndarray, mid: float) -> np.ndarray:
    """``_middle_out_order`` as an array: the two sides, nearest first, interleaved, then the rest
    of the longer side."""
    left = int(np.searchsorted(firsts, mid, side="left")) - 1
    right = left + 1
    rights, lefts = np.arange(right, len(firsts)), np.arange(left, -1, -1)
    go_right = right < len(firsts) and (left < 0 or firsts[right] - mid <= mid - firsts[left])
    a, b = (rights, lefts) if go_right else (lefts, rights)
    k = min(len(a), len(b))
    both = np.empty(2 * k, dtype=np.int64)
    both[0::2], both[1::2] = a[:k], b[:k]
    return np.concatenate((both, a[k:], b[k:]))


@register
@dataclass(frozen=True)
class MiddleOut(Strategy):
    """Keep the first and the last messages; remove whole groups from the middle outwards.

    The middle is everything between the first ``preserve_start`` and the last ``preserve_end``
    messages. Removal starts at the group nearest the centre of the middle and alternates towards
    both ends until the messages fit ``target_ratio`` of what the budget leaves for messages. User
    messages are not removed on their own: one goes when its turn has nothing else left. The system
    prompt, the newest user message and pinned messages are never removed; a preserved message keeps
    its turn's user message, and a preserved user message keeps its turn's last reply.
    """

    name: ClassVar[str] = "middle_out"
    title: ClassVar[str] = N_("Middle out")
    summary: ClassVar[str] = N_("Keeps the start (the task) and the end (the latest work); removes whole tool rounds "
                              "and messages from the middle outwards until the rest fits.")
    works_on: str = works_on_param("full_history")  # OpenRouter's middle-out transform, per request
    preserve_start: int = param(2, min=0, max=100_000, help=N_("Messages at the start that are always kept."))
    preserve_end: int = param(10, min=0, max=100_000, help=N_("Messages at the end that are always kept."))
    target_ratio: float = param(1.0, min=0.1, max=1.0, help=N_("Share of the budget's message room to fill."))

    def decide(self, view: View, budget: Budget) -> _Decided:
        """Decisions and stats, before settling."""
        n, ps, pe = len(view), self.preserve_start, self.preserve_end
        lo, hi = min(ps, n), max(n - pe, min(ps, n))
        target = int(budget.available * self.target_ratio)
        must = [*range(lo), *range(hi, n), *view.pins, *view.compactions]
        must += [i for i in (view.first_system(), view.newest_user()) if i is not None]
        book = _Ledger(view, must)
        table = batch_tables(view)
        cands = np.flatnonzero(~np.fromiter(book.protected, dtype=bool, count=len(table.firsts)) & ~table.user_first)
        firsts = table.firsts[cands]
        why = T("removed from the middle to fit {target:,} tokens", target=target)
        order = cands[_middle_out_positions(firsts, (lo + hi) / 2)]
        removal = simulate(book, order, target)
        if removal is not None:
            apply_removal(book, removal, order, lambda acted: [why] * len(acted),
                          lambda user: T("removed with its turn's user message ({user})", user=user), LONE)
        else:  # a shape the batch does not model: the loop it stands for
            for g in order.tolist():
                if book.total <= target:
                    break
                if book.actions[view.seg.groups[g][0]] == "keep":
                    book.drop_group(g, why)
        book.fill(T("kept: the rest fits {target:,} tokens", target=target), [(0, lo, T("kept: among the first {ps} messages", ps=ps)),
                                                              (hi, n, T("kept: among the last {pe} messages", pe=pe))])
        warn = None if book.total <= target else minimum_warning(
            view, budget, T("the first {ps} and the last {pe} messages (whole rounds and turns)", ps=ps, pe=pe), book.total)
        stats = {"target_tokens": target, "removed": n - book.kept, "groups_removed": book.groups_removed,
                 "tokens_removed": view.total - book.total, "middle": [lo, hi]}
        head = (T("middle_out removes from the middle only until the messages fit {target:,} tokens ("
                "{target_ratio:.0%} of the budget's message room, target_ratio)", target=target, target_ratio=self.target_ratio))
        idle = (T("{head} and they hold {total:,}", head=head, total=view.total) if view.total <= target else
                T("{head}; they hold {total:,} but everything outside the first {ps} (preserve_start) and the "
                "last {pe} (preserve_end) messages must stay", head=head, total=view.total, ps=ps, pe=pe))
        return _Decided(book.actions, book.reasons, [warn] if warn else [], stats, idle)

    def apply(self, view: View, budget: Budget) -> Plan:
        """Remove from the middle outwards until the rest fits."""
        d = self.decide(view, budget)
        return make_plan(view, budget, self.name, self.params(), d.actions, d.reasons, warnings=d.warnings,
                         stats=d.stats, idle=d.idle)

