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

import bisect
from dataclasses import asdict, dataclass
from operator import itemgetter
from typing import Any, Sequence

from .conversation import Conversation, Message
from .i18n import N_
from .pricing import OPENAI_MIN, Price, PriceTable, _cached, load_prices
from .replay import FUTURE
from .strategies.plan import REMOVED

CAUSES = ("clear", "truncate", "drop", "summarize", "refold", "tools", "changed")
CAUSE_WORDS = {"clear": N_("cleared"), "truncate": N_("truncated"), "drop": N_("dropped"),
               "summarize": N_("folded into a summary"), "refold": N_("its summary rewritten"),
               "tools": N_("the tool list changed"), "changed": N_("sent differently")}
"""Each cause in words (English, marked for the catalogs; shown with ``_``)."""


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


_WHEN, _MESSAGE, _ACTION = itemgetter(0), itemgetter(1), itemgetter(2)


def _states(replay: Any, asked: Sequence[tuple[int, int | None]]) -> list[str | None]:
    """``replay.cell(call, origin)`` of each (call, origin) asked (None where origin is None), in one
    pass over the replay's events: ``cell`` reads the events up to its call, so asking it at every
    break of a long replay read millions of events per break."""
    order = sorted((c, k) for k, (c, o) in enumerate(asked) if o is not None)
    out: list[str | None] = [None] * len(asked)
    events, arrived, latest, ev = replay.events, replay.arrived, {}, 0
    for c, k in order:
        upto = bisect.bisect_right(events, c, lo=ev, key=_WHEN)  # events are in call order
        if upto > ev:  # the newest action per message, at C speed
            chunk = events[ev:upto]
            latest.update(zip(map(_MESSAGE, chunk), map(_ACTION, chunk)))
            ev = upto
        i = asked[k][1]
        a = arrived[i]
        out[k] = FUTURE if a is None or a > c else latest.get(i, "keep")
    return out


def _cause(state: str | None, summary_there: bool) -> str:
    """What the strategy did, at a break, to the message there (its ``Replay.cell``; None for an
    inserted summary, which has no original index)."""
    if state is None:
        return "refold"
    if state in REMOVED:
        return "summarize" if state == "summarize" else "drop"
    if state in ("clear", "truncate"):
        return state
    if summary_there:
        return "summarize"
    return "changed"


class BreakWatch:
    """An observer (``replay(..., observe=watch)`` or ``Replay.walk``) that notes every call whose
    prompt does not extend the previous one; ``breaks(replay)`` then names the causes from the
    finished replay. Lets a caller that already replays with an observer (the sweep) find the breaks
    in that same pass instead of walking the replay again."""

    def __init__(self, tools_tokens: int, *, model: str = "gpt-4o",
                 price: Price | PriceTable | None = None) -> None:
        self.head = tools_tokens
        self.price = price if isinstance(price, Price) else (price or load_prices()).get(model)
        self.rule, self.minimum = (self.price.cache, self.price.cache_min_tokens) if self.price else ("openai",
                                                                                                        OPENAI_MIN)
        self.noted: list[tuple[int, int, int | None, bool, int]] = []  # call, position, origin, summary there, lost
        self._prev: dict[str, Any] = {}

    def __call__(self, call: Any, view: Any) -> None:
        messages, origins, tools, prev = view.messages, view.origin, call.tools, self._prev
        total = (self.head if tools is None else tools.tokens) + view.total
        if prev and not call.extends_previous and not call.pending:
            k = -1 if tools is not None and tools.changed else _first_difference(prev["messages"], messages)
            shared = (self.head if tools is None else tools.prefix_tokens) + call.shared_tokens
            had, _ = _cached(self.rule, self.minimum, True, prev["total"], shared, False, total)
            could, _ = _cached(self.rule, self.minimum, True, prev["total"], prev["total"], True,
                               max(total, prev["total"]))
            origin = prev["origins"][k] if 0 <= k < len(prev["origins"]) else None
            self.noted.append((call.number, k, origin, 0 <= k < len(origins) and origins[k] is None,
                               max(could - had, 0)))
        prev.update(messages=messages, origins=origins, total=total)

    def breaks(self, replay: Any) -> list[CacheBreak]:
        """The breaks noted, with their causes read from the finished ``replay``, in call order."""
        p = self.price
        saved = None if p is None or p.cached_input is None else p.input - p.cached_input
        states = _states(replay, [(c, None if k < 0 else origin) for c, k, origin, _, _ in self.noted])
        return [CacheBreak(c, k, origin, "tools" if k < 0 else _cause(state, summary_there),
                           lost, None if saved is None else lost * saved / 1_000_000)
                for (c, k, origin, summary_there, lost), state in zip(self.noted, states)]


def cache_breaks(replay: Any, source: Conversation | Sequence[Message], *, model: str | None = None,
                 price: Price | PriceTable | None = None) -> list[CacheBreak]:
    """Every break of the prompt cache in ``replay`` (of ``source``), in call order (one more walk)."""
    model = model or (source.model if isinstance(source, Conversation) else None) or "gpt-4o"
    watch = BreakWatch(replay.budget.tools_tokens, model=model, price=price)
    replay.walk(watch)
    return watch.breaks(replay)


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


__all__ = ["CAUSES", "CAUSE_WORDS", "BreakWatch", "CacheBreak", "cache_breaks", "summary"]
