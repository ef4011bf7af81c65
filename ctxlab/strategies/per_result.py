"""What the strategies that rewrite each tool result on its own (``head_tail``, ``offload``) share: one
decision per result, and the plan built from them."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ..conversation import Message
from ..i18n import T
from .plan import Plan, make_plan
from .view import MEMO_EXTENDERS, MEMO_REPLACERS, Budget, View

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


def shared_copies(view: View, key: str) -> dict:
    """The view's table of rewritten copies of its messages under ``key``, shared with every view
    grown from it: an entry is ``(message, copy)`` and counts only while the message at its index is
    that very message (a view grown on another branch holds other messages past the fork)."""
    MEMO_EXTENDERS.setdefault(key, _same_table)
    MEMO_REPLACERS.setdefault(key, _same_table)
    return view.memo.setdefault(key, {})


def _same_table(old: View, new: View, known: dict, *replaced: object) -> dict:
    return known  # entries name the message they were made from: a replaced one is not matched


MEMO_EXTENDERS[REWRITES] = _grown_rewrites
MEMO_REPLACERS[REWRITES] = _replaced_rewrites


__all__ = ["Decide", "REWRITES", "per_result_plan", "rewrites", "shared_copies"]
