"""What the strategies that rewrite each tool result on its own (``head_tail``, ``offload``) share: one
decision per result, and the plan built from them."""
from __future__ import annotations

from typing import Any, Callable

from ..conversation import Message
from ..i18n import T
from .plan import Plan, make_plan
from .view import Budget, View

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


__all__ = ["Decide", "per_result_plan"]
