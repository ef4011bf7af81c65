"""What the strategies that rewrite each tool result on its own (``head_tail``, ``offload``) share: one
decision per result, and the plan built from them."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ..conversation import Message
from ..i18n import T
from .plan import Plan, make_plan
from .view import MEMO_EXTENDERS, MEMO_REPLACERS, Budget, View, shared_memo

Decide = Callable[[int], tuple[str, "tuple[Message, int] | None"]]
"""For result ``i``: the reason, and its replacement with its tokens (None: sent as is)."""


def per_result_plan(strategy: Any, view: View, budget: Budget, decide: Decide, counts: tuple[str, str],
                    idle: Callable[[int], str]) -> Plan:
    """The plan of a strategy that replaces tool results one by one (action ``truncate``): ``decide``
    each result; ``counts`` names the stats of results replaced and tokens saved; ``idle(results)`` says
    why nothing was replaced."""
    n = len(view)
    actions, reasons = ["keep"] * n, [T("sent as is: not a tool result")] * n
    replacements: dict[int, Message] = {}
    counted: dict[int, int] = {}
    results = [i for i, r in enumerate(view.roles) if r == "tool"]
    for i in results:
        reasons[i], new = decide(i)
        if new is not None:
            replacements[i], counted[i] = new
            actions[i] = "truncate"
    saved = sum(view.tokens[i] - counted[i] for i in counted)
    stats = {"results": len(results), counts[0]: len(replacements), counts[1]: saved}
    return make_plan(view, budget, strategy.name, strategy.params(), actions, reasons, replacements=replacements,
                     replacement_tokens=counted, stats=stats, idle=lambda: idle(len(results)))


class RewritesEachResult:
    """For a strategy that rewrites tool results one by one (``_decide(view, i)`` gives a result's
    reason and its copy, or None when it is sent as is): whether it rewrites a result, the copies
    made once per view and parameters, and "nothing to do" known from a count kept with the view."""

    def rewrites(self, view: View, i: int) -> bool:
        """Whether result ``i`` would be rewritten."""
        return self._decide(view, i)[1] is not None  # type: ignore[attr-defined]

    def quick_idle(self, view: View, budget: Budget) -> bool:
        """No result would be rewritten (and no state to change)."""
        return not view.state and rewrites(self, view) == 0

    @staticmethod
    def _copy(view: View, table: str, key: tuple, i: int, make: Callable[[Message], Any]) -> Any:
        """``make(message i)`` under ``key`` in the view's shared ``table`` (``view.shared_memo``),
        made again only when the message at ``i`` is another one (a view on another branch)."""
        memo = shared_memo(view, table)
        m = view.message_at(i)
        hit = memo.get(key)
        if hit is None or hit[0] is not m:
            hit = memo[key] = (m, make(m))
        return hit[1]


REWRITES = "per_result.rewrites"
"""``View.memo`` key: per strategy, how many of the view's results it would rewrite."""


def rewrites(strategy: Any, view: View) -> int:
    """How many results of ``view`` the strategy would rewrite (``strategy.rewrites(view, i)``). Kept
    with the view and, for a view grown by ``append``, counted for the new messages only: a replay
    asks before every call whether there is anything to do, and the answer must not cost the
    whole history each time."""
    table = view.memo.setdefault(REWRITES, {})
    count = table.get(strategy)
    if count is None:
        count = table[strategy] = sum(strategy.rewrites(view, i) for i, r in enumerate(view.roles) if r == "tool")
    return count


def _grown_rewrites(old: View, new: View, known: dict) -> dict | None:
    if new.pins != old.pins:  # a pinned result is never rewritten: count again
        return None
    fresh = range(len(old), len(new))
    return {s: c + sum(s.rewrites(new, i) for i in fresh if new.role_of(i) == "tool") for s, c in known.items()}


def _replaced_rewrites(old: View, new: View, known: dict, replaced: Sequence[int]) -> dict | None:
    """The counts of a view whose messages at ``replaced`` were swapped for copies (a plan applied in
    place): those results counted again, the others as they were."""
    results = [i for i in replaced if new.role_of(i) == "tool"]
    return {s: c - sum(s.rewrites(old, i) for i in results) + sum(s.rewrites(new, i) for i in results)
            for s, c in known.items()}


MEMO_EXTENDERS[REWRITES] = _grown_rewrites
MEMO_REPLACERS[REWRITES] = _replaced_rewrites


__all__ = ["Decide", "REWRITES", "RewritesEachResult", "per_result_plan", "rewrites"]
