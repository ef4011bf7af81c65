"""The measure entry: a conversation, a strategy and a budget in; what the strategy served, what it
cost and where it broke the prompt cache, call by call, out.

``measure(conv, "summarize", Budget(16_000))`` replays the strategy before every model call (as
its framework runs it: ``ctxlab.replay``) and, in that same pass, checks every needed fact against
the prompt of the call that used it (``fidelity.FactCheck``) and notes every break of the prompt
cache (``cache_breaks.BreakWatch``); the cost of each call follows from the replay
(``pricing.replay_cost``), beside what sending everything costs. The Lab, Compare, Tune, sweeps,
the lessons and ``ctxlab replay`` all measure through it, so a figure means the same on every
page. A page that already holds the replay passes it (``replayed=``): it is walked once more, not
replayed; one that holds the baseline passes that (``baseline=``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from .conversation import Conversation
from .fidelity import FactCheck, Fidelity, NeededFacts, needed_facts


@dataclass(frozen=True, eq=False)
class ReplayMeasures:
    """A strategy replayed over a conversation, with what it lost (``fidelity``) and what it costs
    (``cost``), beside what keeping everything costs (``cost_none``; None when not asked for), and where its prompts broke the
    prompt cache (``breaks``: ``ctxlab.cache_breaks.CacheBreak`` in call order)."""

    replay: Any
    fidelity: Fidelity
    cost: Any
    cost_none: Any
    breaks: tuple[Any, ...] = ()

    @property
    def needed_recall(self) -> float | None:
        """served / needed over the conversation."""
        return self.fidelity.needed_recall

    def summary(self) -> dict[str, Any]:
        """The figures a table row shows: recall, tokens, cached share, cost, and the same for none; the
        modelled re-fetches of lost facts (count, prompt tokens, USD; ``pricing.REFETCH_MODEL``), the cost
        with them (``total_cost_usd``) and the losses no re-fetch recovers (``unrecoverable``)."""
        c, n, r = self.cost, self.cost_none, self.replay
        none = {} if n is None else {
            "none_input_tokens": n.input_tokens, "none_cost_usd": n.cost_usd,
            "tokens_vs_none": c.input_tokens / n.input_tokens - 1 if n.input_tokens else None,
            "cost_vs_none": c.cost_usd / n.cost_usd - 1 if c.cost_usd is not None and n.cost_usd else None}
        return {"needed_recall": self.needed_recall, "needed": self.fidelity.needed, "missed": len(self.fidelity.misses),
                "calls": len(r.calls), "calls_over_limit": r.calls_over_limit, "fits": r.fits,
                "worst_prompt": r.worst.tokens_after if r.worst else 0,
                "input_tokens": c.input_tokens, "cached_share": c.cached_share, "cost_usd": c.cost_usd,
                "read_backs_model": c.read_backs, "refetches": c.refetches, "refetch_tokens": c.refetch_tokens,
                "refetch_cost_usd": c.refetch_cost_usd, "total_cost_usd": c.total_cost_usd,
                "unrecoverable": self.fidelity.unrecoverable, "cache_breaks": len(self.breaks),
                "cache_tokens_lost": sum(b.tokens_lost for b in self.breaks), **none}


def measure(conv: Conversation, strategy: Any = None, budget: Any = None, *, model: str | None = None,
            price: Any = None, facts: NeededFacts | None = None, tools: Sequence[Any] | None = None,
            pins: Iterable[int] = (), apply_at: str | None = None, observe: Sequence[Any] = (),
            replayed: Any = None, baseline: Any = None, source: Any = None) -> ReplayMeasures:
    """Replay ``strategy`` (an object or a name) on ``conv`` under ``budget`` and measure it (see the
    module docstring).

    ``price``: a ``pricing.Price``, a ``PriceTable`` or None (the bundled table). ``facts``: the
    conversation's ``needed_facts``, when several strategies of it are measured. ``tools``,
    ``pins``, ``apply_at``: as ``ctxlab.replay.replay``. ``observe``: more observers that read every
    call's prompt in the same pass (a sweep's validity check). ``replayed``: a replay of this
    strategy already made (strategy and budget are then its own). ``baseline``: the replay of
    ``none`` to cost against (None: replayed here; False: not costed, ``cost_none`` is None).
    ``source``: what to replay when it is not ``conv`` itself but a view of it (``strategies.View``:
    its counter and pins, as the Lab replays), so a page measures a strategy it has not replayed yet
    in the replay's own pass instead of replaying it and then walking it again."""
    from .cache_breaks import BreakWatch
    from .pricing import load_prices, replay_cost
    from .replay import observers, replay
    model = model or conv.model or "gpt-4o"
    price = price if price is not None else load_prices()
    check = FactCheck(facts if facts is not None else needed_facts(conv))
    if replayed is not None:
        budget = replayed.budget
    watch = BreakWatch(budget.tools_tokens, model=model, price=price)
    walk = observers(check, watch, *observe)
    if replayed is None:
        replayed = replay(conv if source is None else source, strategy, budget, model=model, pins=pins,
                          apply_at=apply_at, observe=walk, tools=tools)
    else:
        replayed.walk(walk)
    fid = check.fidelity(replayed.strategy)
    if baseline is None:
        baseline = replay(conv, "none", budget, model=model, tools=tools)
    cost_none = replay_cost(baseline, conv, model=model, price=price) if baseline is not False else None
    return ReplayMeasures(replayed, fid, replay_cost(replayed, conv, model=model, price=price,
                                                     read_backs=fid.read_backs, refetches=fid.refetches),
                          cost_none, tuple(watch.breaks(replayed)))


__all__ = ["ReplayMeasures", "measure"]
