"""Sub-agent isolation, measured: a Claude Code session's sub-agents as logged (each in its own
context, the parent seeing only what it returned) against the same work done inline (the
sub-agent's calls and results in the parent's context).

``isolation(text)`` reads a main session (the JSONL text Claude Code wrote) and each of its
sub-agents, replays them call by call with ``none`` (what was sent) and reports:

* ``isolated``: the parent's prompt tokens over its calls, the sub-agents' over theirs, the largest
  parent prompt, and the total;
* ``inline``: the same work with each sub-agent's messages spliced into the parent right before
  the call that started it (what the parent would have carried had it done the work itself);
* ``parent_needs``: the facts the parent's later calls use that first appeared inside a sub-agent
  (found on the inline conversation), and where an isolated parent has them before it uses them: in
  a returned result, in its own messages, or nowhere (none on a run as logged; with a cap, what the
  cap loses);
* with ``return_cap`` tokens, the returned results cut to their first ``return_cap`` tokens: the
  parent's tokens and the needs still served (Context-Folding, arXiv 2510.11967, and Anthropic's
  multi-agent research system return short results on purpose).

With a ``strategy`` and a ``budget``, ``measured`` holds the same three forms replayed under that
strategy through ``ctxlab.measure.measure`` (the figures every page shows): the isolated parent
(returned results capped as above), each sub-agent in its own context (the same limit), and the
inline conversation. Per form: prompt tokens over its calls, the largest prompt, calls over the
limit, cost with the prompt cache (None where the model has no price) and the needed recall of the
parent's own calls: of the facts the parent's model calls (not the sub-agents') used from earlier
messages of that form, the share their prompts held. The calls that started a sub-agent are left out
in both forms: inline, the model puts the sub-agent's work before them, so their prompts would hold
what in the run came after (on the tests' session, the Task call's 5 needs of 8).

A model of the alternative, not a replay of it: the inline run assumes the parent would have made
the same calls and got the same results.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

from .conversation import Conversation, Message
from .errors import CtxlabError
from .fidelity import NeededFacts, needed_facts
from .formats import load_all
from .formats.claude_agents import agent_records, session_records, subagent_text
from .i18n import N_
from .prefix import with_unlogged_prefix
from .replay import replay
from .strategies import Budget
from .tokens import TokenCounter

BIG_BUDGET = 10_000_000
"""The replays of ``none`` measure what was sent; no call is judged against a limit here."""


def _sent(conv: Conversation, model: str) -> tuple[int, int, int]:
    """Prompt tokens over all calls, the largest prompt, and the number of calls, as sent."""
    r = replay(conv, "none", Budget(BIG_BUDGET), model=model)
    calls = [c for c in r.calls if not c.pending]
    return sum(c.tokens_after for c in calls), max((c.tokens_after for c in calls), default=0), len(calls)


def _body(sub: Conversation) -> list[Message]:
    """A sub-agent's messages the parent would carry inline: its work, not its prompt or prefix."""
    msgs = [m for m in sub.messages if m.role != "system"]
    return msgs[1:] if msgs and msgs[0].role == "user" else msgs


def _calling(parent: Conversation, returned_at: int) -> int | None:
    """The index of the assistant message whose call the result at ``returned_at`` answers."""
    cid = parent.messages[returned_at].tool_call_id
    return next((i for i in range(returned_at - 1, -1, -1)
                 if any(c.id == cid for c in parent.messages[i].tool_calls)), None)


def _cap(m: Message, tokens: int, counter: TokenCounter) -> Message:
    """``m`` with its text cut to about its first ``tokens`` tokens (a marker says it was cut)."""
    text = m.text
    if counter.text(text) <= tokens:
        return m
    lo, hi = 0, len(text)
    while lo < hi:  # the longest start within the cap
        mid = (lo + hi + 1) // 2
        if counter.text(text[:mid]) <= tokens:
            lo = mid
        else:
            hi = mid - 1
    return m.with_content(text[:lo] + f"\n[... result cut to {tokens:,} tokens ...]")


@dataclass(frozen=True)
class Forms:
    """A main session's work in its two forms: the parent as logged (``parent``: its unlogged prefix
    at its head, returned results capped when asked) with each sub-agent in its own context
    (``subs``: the parent's metadata row and the sub-agent's conversation), and ``inline``: the
    parent with each sub-agent's work spliced before the call that started it. ``from_sub``: the
    inline messages that came from a sub-agent; ``callers``: the inline messages that started one;
    ``parent_callers``: the same messages in ``parent``."""

    model: str
    return_cap: int | None
    parent: Conversation
    subs: tuple[tuple[dict, Conversation], ...]
    inline: Conversation
    from_sub: frozenset[int]
    callers: frozenset[int]
    parent_callers: frozenset[int]

    def parents_need(self, need: Any) -> bool:
        """Whether an inline need is one of the parent's own calls (see the module docstring)."""
        return need.needed_by not in self.from_sub and not (need.needed_by in self.callers
                                                            and need.source in self.from_sub)

    def in_recall(self, need: Any, inline: bool) -> bool:
        """Whether a need (or a miss) of that form counts in the parent's needed recall: one of the parent's
        own calls, not one that started a sub-agent (see the module docstring)."""
        if inline:
            return need.needed_by not in self.from_sub and need.needed_by not in self.callers
        return need.needed_by not in self.parent_callers


def forms(text: str | bytes, *, model: str | None = None, return_cap: int | None = None) -> Forms:
    """The isolated and inline forms of one Claude Code main session (see ``Forms``)."""
    (parent,) = load_all(text)[:1] or (None,)
    if parent is None or not parent.metadata.get("subagents"):
        raise CtxlabError(N_("this session ran no sub-agent (no Task call whose sub-agent is logged)"), where="FILE",
                          hint=N_("Give a Claude Code main session that ran Task sub-agents"))
    model = model or parent.model or "claude-sonnet-4"
    counter = TokenCounter(model)
    records = session_records(text)
    parent = with_unlogged_prefix(parent, model)  # its metadata's message indexes move with the prefix
    subs: list[tuple[dict, Conversation]] = []
    for row in parent.metadata["subagents"]:
        if row.get("returned_at") is None or not any(a.id == row["id"] for a in agent_records(records)):
            continue
        (sub,) = load_all(subagent_text(records, row["id"]))[:1]
        if parent.messages[row["returned_at"]].role != "tool":
            continue  # a result that is no tool message: nothing to splice before
        subs.append((row, with_unlogged_prefix(sub, model)))
    if not subs:
        raise CtxlabError(N_("none of this session's sub-agents has both its own records and a returned result"),
                          where="FILE")
    if return_cap is not None:
        capped = list(parent.messages)
        for row, _sub in subs:
            capped[row["returned_at"]] = _cap(capped[row["returned_at"]], return_cap, counter)
        parent = replace(parent, messages=tuple(capped))
    inline, from_sub = _inline(parent, subs)
    callers = {k + 1 for k in from_sub if k + 1 not in from_sub}  # the calls that started a sub-agent: in the
    # real run they came before its work (their prompt is the parent's own), so they need nothing from it
    started = {_calling(parent, row["returned_at"]) for row, _sub in subs} - {None}
    return Forms(model, return_cap, parent, tuple(subs), inline, frozenset(from_sub), frozenset(callers),
                 frozenset(started))


def isolation(source: str | bytes | Forms, *, model: str | None = None, return_cap: int | None = None,
              strategy: Any = None, budget: Budget | None = None, price: Any = None) -> dict[str, Any]:
    """The comparison of the module docstring for one Claude Code main session (its JSONL text, or
    its ``forms`` already built: ``model`` and ``return_cap`` are then theirs); with ``strategy``
    (an object or a name) and ``budget``, also ``measured``: the forms under that strategy
    (``price``: as ``ctxlab.measure.measure``)."""
    f = source if isinstance(source, Forms) else forms(source, model=model, return_cap=return_cap)
    model, parent, subs, inline = f.model, f.parent, f.subs, f.inline
    counter = TokenCounter(model)
    parent_tokens, parent_largest, parent_calls = _sent(parent, model)
    sub_figures = [_sent(sub, model) for _row, sub in subs]
    inline_tokens, inline_largest, inline_calls = _sent(inline, model)
    nf = needed_facts(inline)
    out = {"model": model, "subagents": [{"id": row["id"], "calls": fig[2], "prompt_tokens": fig[0],
                                          "tokens_back": counter.message(parent.messages[row["returned_at"]])}
                                         for (row, _s), fig in zip(subs, sub_figures)],
           "return_cap": f.return_cap,
           "isolated": {"parent_prompt_tokens": parent_tokens, "parent_largest_prompt": parent_largest,
                        "parent_calls": parent_calls, "subagent_prompt_tokens": sum(fig[0] for fig in sub_figures),
                        "total_prompt_tokens": parent_tokens + sum(fig[0] for fig in sub_figures)},
           "inline": {"parent_prompt_tokens": inline_tokens, "parent_largest_prompt": inline_largest,
                      "parent_calls": inline_calls, "total_prompt_tokens": inline_tokens},
           "parent_needs": _parent_needs(nf, f)}
    if strategy is not None:
        if budget is None:
            raise CtxlabError("a strategy needs a budget to be measured under", where="budget")
        out["measured"] = measured(f, strategy, budget, price=price, inline_facts=nf)
    return out


def _inline(parent: Conversation, subs: Sequence[tuple[dict, Conversation]]) -> tuple[Conversation, set[int]]:
    """The parent with each sub-agent's work before the call that started it, and the indexes (in
    the inline conversation) of the messages that came from a sub-agent."""
    at = {}
    for row, sub in subs:
        k = _calling(parent, row["returned_at"])
        if k is not None:
            at.setdefault(k, []).extend(_body(sub))
    out: list[Message] = []
    from_sub: set[int] = set()
    for i, m in enumerate(parent.messages):
        for extra in at.get(i, ()):
            from_sub.add(len(out))
            out.append(extra)
        out.append(m)
    return replace(parent, messages=tuple(out)), from_sub


def _parent_needs(nf: NeededFacts, f: Forms) -> dict[str, int]:
    """Needs of the parent's own calls whose first source is a sub-agent's message: how many an
    isolated parent still has before the call that uses them (in a returned result, or in its own
    messages: it read the file too), and how many it has not (on a run as logged, a measure that
    finds any of these is wrong; with ``return_cap``, what the cap would lose)."""
    inline, from_sub = f.inline, f.from_sub
    returned = {k for k in range(len(inline.messages)) if k not in from_sub and inline.messages[k].role == "tool"
                and any(inline.messages[k] is f.parent.messages[row["returned_at"]] for row, _s in f.subs)}
    needs = [n for n in nf.needs if n.source in from_sub and f.parents_need(n)]
    by_return = by_parent = 0
    for n in needs:
        before = [k for k in range(n.needed_by) if k not in from_sub and n.served_by(nf.per_message[k])]
        if any(k in returned for k in before):
            by_return += 1
        elif before:
            by_parent += 1
    return {"from_subagents": len(needs), "in_returned_results": by_return, "in_parent_messages": by_parent,
            "not_in_parent": len(needs) - by_return - by_parent}


FIGURES = ("calls", "prompt_tokens", "largest_prompt", "calls_over_limit", "cost_usd")
"""What ``measured`` reports of each conversation replayed (``ReplayMeasures.summary``'s calls,
input_tokens, worst_prompt, calls_over_limit and cost_usd)."""


def _figures(m: Any) -> dict[str, Any]:
    s = m.summary()
    return dict(zip(FIGURES, (s["calls"], s["input_tokens"], s["worst_prompt"], s["calls_over_limit"], s["cost_usd"])))


def _total(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The figures of several contexts together: sums, the largest prompt of any, the cost unless one has no price."""
    costs = [p["cost_usd"] for p in parts]
    return {"calls": sum(p["calls"] for p in parts), "prompt_tokens": sum(p["prompt_tokens"] for p in parts),
            "largest_prompt": max(p["largest_prompt"] for p in parts),
            "calls_over_limit": sum(p["calls_over_limit"] for p in parts),
            "cost_usd": None if any(c is None for c in costs) else sum(costs)}


def _parent_recall(nf: NeededFacts, m: Any, keep: Any) -> dict[str, Any]:
    """Needed, served and recall over the needs ``keep`` accepts (a ``Need`` or a ``Miss``: source, needed_by)."""
    needed = sum(1 for n in nf.needs if keep(n))
    served = needed - sum(1 for miss in m.fidelity.misses if keep(miss))
    return {"needed": needed, "served": served, "needed_recall": served / needed if needed else None}


def measured(f: Forms, strategy: Any, budget: Budget, *, price: Any = None,
             inline_facts: NeededFacts | None = None) -> dict[str, Any]:
    """The forms of ``f`` replayed under ``strategy`` and ``budget`` through ``ctxlab.measure.measure``
    (see the module docstring): ``isolated`` (``parent``, ``subagents``, ``total``) and ``inline``
    (``parent``, which is its ``total``); each parent also has ``needed``, ``served`` and
    ``needed_recall`` of its own calls."""
    from .measure import measure
    from .pricing import load_prices
    from .strategies import get_strategy
    strategy = get_strategy(strategy) if isinstance(strategy, str) else strategy
    price = price if price is not None else load_prices()

    def run(conv: Conversation, facts: NeededFacts | None = None) -> Any:
        return measure(conv, strategy, budget, model=f.model, price=price, facts=facts, baseline=False)

    parent_facts = needed_facts(f.parent)
    parent = run(f.parent, parent_facts)
    subs = [({"id": row["id"]}, _figures(run(sub))) for row, sub in f.subs]
    inline_facts = inline_facts if inline_facts is not None else needed_facts(f.inline)
    inline = run(f.inline, inline_facts)
    iso_parent = {**_figures(parent), **_parent_recall(parent_facts, parent, lambda n: f.in_recall(n, False))}
    inline_parent = {**_figures(inline), **_parent_recall(inline_facts, inline, lambda n: f.in_recall(n, True))}
    return {"strategy": strategy.name, "params": strategy.params(), "budget": budget.to_dict(),
            "prompt_limit": budget.prompt_limit,
            "isolated": {"parent": iso_parent, "subagents": [{**row, **fig} for row, fig in subs],
                         "total": _total([iso_parent, *(fig for _row, fig in subs)])},
            "inline": {"parent": inline_parent, "total": _figures(inline)}}


__all__ = ["Forms", "forms", "isolation", "measured"]
