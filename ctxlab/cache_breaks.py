"""Which step broke the prompt cache, and what it cost.

A provider reads from its cache the longest prefix a prompt shares with an earlier one (OpenAI in
128-token steps past 1,024 tokens; Anthropic up to a breakpoint). A strategy that rewrites an early
message (masks an observation, clears a result, folds turns into a summary, drops a group) makes
the next prompt differ from there on, and everything after that point is billed at the full input
price again. ``cache_breaks(replay, conv)`` walks a replay once and, at every call whose prompt
does not extend the previous one, names the first message that differs, the action that caused
it, the tokens no longer read from the cache, and their price:

* ``position``: the index in the previous prompt of the first message that differs (its original
  index is ``origin``; None for an inserted summary);
* ``cause``: what the strategy did there at this call (``clear``, ``truncate``, ``drop``,
  ``summarize``), ``refold`` when a summary it inserted earlier was rewritten, ``tools`` when the
  tool definitions sent changed (a replay with tools per call, ``ctxlab.tools_per_call``; the
  position is then -1, before the first message), or ``changed`` when the message is sent
  differently for another reason;
* ``tokens_lost``: cache reads the call would have had if its prompt had extended the previous one,
  less those it had, under the model's cache rule (``ctxlab.pricing``);
* ``cost_usd``: those tokens at the input price less the cached price (a model: a cache write
  premium, where the provider charges one, is not in it).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence

from .conversation import Conversation, Message
from .pricing import OPENAI_MIN, Price, PriceTable, _cached, load_prices
from .strategies.plan import REMOVED

CAUSES = ("clear", "truncate", "drop", "summarize", "refold", "tools", "changed")


@dataclass(frozen=True, slots=True)
class CacheBreak:
    """One call whose prompt does not extend the previous call's (see the module docstring)."""

    call: int
    position: int
    origin: int | None
    cause: str
    tokens_lost: int
    cost_usd: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def _first_difference(prev: Sequence[Message], cur: Sequence[Message]) -> int:
    k, n = 0, min(len(prev), len(cur))
    while k < n and (prev[k] is cur[k] or prev[k] == cur[k]):
        k += 1
    return k


def _cause(replay: Any, call: int, origin: int | None, now: Sequence[int | None], k: int) -> str:
    """What the strategy did, at ``call``, to the message at the break (``origin``, original index)."""
    if origin is None:
        return "refold"
    state = replay.cell(call, origin)
    if state in REMOVED:
        return "summarize" if state == "summarize" else "drop"
    if state in ("clear", "truncate"):
        return state
    if k < len(now) and now[k] is None:
        return "summarize"
    return "changed"


def cache_breaks(replay: Any, source: Conversation | Sequence[Message], *, model: str | None = None,
                 price: Price | PriceTable | None = None) -> list[CacheBreak]:
    """Every break of the prompt cache in ``replay`` (of ``source``), in call order."""
    model = model or (source.model if isinstance(source, Conversation) else None) or "gpt-4o"
    chosen = price if isinstance(price, Price) else (price if isinstance(price, PriceTable) else
                                                    load_prices()).get(model)
    rule, minimum = (chosen.cache, chosen.cache_min_tokens) if chosen else ("openai", OPENAI_MIN)
    head = replay.budget.tools_tokens
    found: list[CacheBreak] = []
    prev: dict[str, Any] = {}

    def observe(call: Any, view: Any) -> None:
        messages, origins, tokens = view.messages, view.origin, view.tokens
        tools = call.tools
        total = (head if tools is None else tools.tokens) + sum(tokens)
        if prev and not call.extends_previous and not call.pending:
            k = -1 if tools is not None and tools.changed else _first_difference(prev["messages"], messages)
            shared = (head if tools is None else tools.prefix_tokens) + call.shared_tokens
            had, _ = _cached(rule, minimum, True, prev["total"], shared, False, total)
            could, _ = _cached(rule, minimum, True, prev["total"], prev["total"], True, max(total, prev["total"]))
            lost = max(could - had, 0)
            origin = prev["origins"][k] if 0 <= k < len(prev["origins"]) else None
            cost = None
            if chosen is not None and chosen.cached_input is not None:
                cost = lost * (chosen.input - chosen.cached_input) / 1_000_000
            cause = "tools" if k < 0 else _cause(replay, call.number, origin, origins, k)
            found.append(CacheBreak(call.number, k, origin, cause, lost, cost))
        prev.update(messages=messages, origins=origins, total=total)

    replay.walk(observe)
    return found


def summary(breaks: Sequence[CacheBreak]) -> dict[str, Any]:
    """Breaks, tokens and cost lost, in all and per cause."""
    per: dict[str, dict[str, Any]] = {}
    for b in breaks:
        row = per.setdefault(b.cause, {"breaks": 0, "tokens_lost": 0, "cost_usd": 0.0})
        row["breaks"] += 1
        row["tokens_lost"] += b.tokens_lost
        row["cost_usd"] = None if row["cost_usd"] is None or b.cost_usd is None else row["cost_usd"] + b.cost_usd
    costs = [b.cost_usd for b in breaks]
    return {"breaks": len(breaks), "tokens_lost": sum(b.tokens_lost for b in breaks),
            "cost_usd": None if any(c is None for c in costs) else sum(costs), "by_cause": per}


__all__ = ["CAUSES", "CacheBreak", "cache_breaks", "summary"]
