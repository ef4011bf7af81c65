"""The re-plan steps of the strategies that replace old tool results with a placeholder,
``clear_tool_results`` and ``observation_masking``, after ``View.append`` (see ``replan``).

Both keep every message and clear every tool result but the newest few. Messages only arrive, so
the results past the cut stay past it: a step clears the results the new ones push over the cut
(each with the placeholder copy a plan from scratch makes, the same object) and keeps the new
messages as they are. A step that would change anything else -- the trigger crossed, a pin
added, a new result cleared at once (a window of 0), clear_at_least not reached, call arguments
cleared too -- returns None and the strategy plans from scratch.
"""
from __future__ import annotations

from typing import Any, Callable

from ...i18n import T
from ..plan import Plan, minimum_warning
from ..view import Budget, View
from .replan import extend, fact_counts, recall, remember, replacement_mask


def clear_state(strategy: Any, view: View, plan: Plan) -> dict | None:
    """What ``clear_step`` needs from a ``clear_tool_results`` plan made from scratch (None when it
    is not one the step extends: below the trigger, nothing cleared, clear_at_least not reached,
    call arguments cleared, or a window of 0 that clears a result as it arrives)."""
    stats = plan.stats
    if (strategy.clear_tool_inputs or not strategy.keep or plan.notes or not stats.get("triggered")
            or "skipped" in stats or not stats.get("results_cleared")):
        return None
    return {"pins": view.pins, "stats": dict(stats), "counts": None}


def clear_step(strategy: Any, view: View, budget: Budget, tables: Callable[[], tuple[Any, dict]]) -> Plan | None:
    """``clear_tool_results``' plan of ``view`` from its parent's: the results the new ones push past
    the newest ``keep`` are cleared (or given the reason they are not). ``tables()`` gives the view's
    clearing table (results, tool names, placeholder info) and its placeholder copies by index."""
    hit = recall(view, strategy, budget)
    if hit is None:
        return None
    parent, plan, st = hit
    layout, cleared = tables()
    log, n0, n = view._log, parent, len(view)
    if view.pins != st["pins"]:
        return None
    results, names, info = layout
    roles = log.roles
    new = [i for i in range(n0, n) if roles[i] == "tool"]
    if len(new) > strategy.keep:
        return None  # a new result older than the newest keep: cleared as it arrives
    cut = len(results) - strategy.keep
    was = cut - len(new)
    edits: dict[int, tuple[str, str]] = {}
    replace: dict[int, tuple[Any, int, int]] = {}
    stats = dict(st["stats"])
    excluded = set(strategy.exclude_tools)
    masks, tokens, given = log.fact_masks, log.tokens, log.messages
    for k in range(max(was, 0), max(cut, 0)):
        i, name = results[k], names[k]
        text, gain, why = info[k]
        if name in excluded:
            edits[i] = ("keep", T("not cleared: {name} is excluded", name=name))
        elif i in view.pins:
            edits[i] = ("keep", T("pinned: never cleared"))
        elif gain <= 0:
            edits[i] = ("keep", why)
        else:
            m = cleared.get(i) or cleared.setdefault(i, given[i].with_content(text))
            t = tokens[i] - gain
            if t <= 0:
                return None  # a count make_plan would make itself
            edits[i] = ("clear", why)
            replace[i] = (m, t, replacement_mask(view, m, masks[i]))
            stats["results_cleared"] += 1
            stats["tokens_cleared"] += gain
    newest = T("one of the newest {keep:,} tool results: not cleared", keep=strategy.keep)
    for i in new:
        edits[i] = ("keep", newest)
    warn = minimum_warning(view, budget, T("the conversation with its old tool results cleared"),
                           view.total - stats["tokens_cleared"])
    if st["counts"] is None:
        st["counts"] = fact_counts(view, plan)
    made = extend(view, parent, plan, st["counts"], edits, T("sent as is: not a tool result"), strategy.params(),
                  warnings=[warn] if warn else [], stats=stats, idle=None, replace=replace)
    if made is None:
        return None
    out, counts = made
    return remember(view, strategy, budget, out, {**st, "stats": stats, "counts": counts})


def masking_state(view: View, plan: Plan, results: list[int], masked_n: int) -> dict | None:
    """What ``masking_step`` needs from an ``observation_masking`` plan made from scratch (None when
    it masked nothing): the tool results (``results``) and how many of the oldest it looked at to
    mask (``masked_n``)."""
    if plan.notes or not plan.stats.get("masked"):
        return None
    return {"pins": view.pins, "results": results, "masked_n": masked_n, "stats": dict(plan.stats), "counts": None}


def masking_step(strategy: Any, view: View, budget: Budget,
                 masked_reasons: Callable[[View, int, int, int], list[str]]) -> Plan | None:
    """``observation_masking``'s plan of ``view`` from its parent's. No new result: the new messages
    are sent as they are and nothing else changes. New results: the ones they push past the window
    are masked, and every masked result's reason names the new count ("observation 3 of 41"), so
    that step rewrites a reason per masked result (still no Python step per message).
    ``masked_reasons(view, count, window, upto)`` gives those reasons (the strategy's own texts)."""
    hit = recall(view, strategy, budget)
    if hit is None:
        return None
    parent, plan, st = hit
    log, n0, n = view._log, parent, len(view)
    if view.pins != st["pins"]:
        return None
    roles = log.roles
    new = [i for i in range(n0, n) if roles[i] == "tool"]
    stats = dict(st["stats"])
    edits: dict[int, tuple[str, str]] = {}
    replace: dict[int, tuple[Any, int, int]] = {}
    results, masked_n = st["results"], st["masked_n"]
    if new:
        results = results + new
        over = max(len(results) - strategy.window, 0)
        masked_n, was = over - over % strategy.polling, masked_n
        if masked_n > len(st["results"]):
            return None  # a new result masked as it arrives
        actions, whys, tokens, masks = plan.actions, plan.reasons, log.tokens, log.fact_masks
        count, window = len(results), strategy.window
        said = masked_reasons(view, count, window, masked_n)
        for k, i in enumerate(results[:masked_n]):
            if k < was:
                if actions[i] != "clear":
                    continue  # pinned, or the placeholder is not shorter: the same reason
            elif i in view.pins:
                edits[i] = ("keep", T("pinned: never masked"))
                continue
            else:
                m, t = strategy._masked(view, i)
                if t >= tokens[i]:
                    edits[i] = ("keep", T("sent as is: the placeholder would not be shorter"))
                    continue
                replace[i] = (m, t, replacement_mask(view, m, masks[i]))
                stats["masked"] += 1
                stats["tokens_masked"] += tokens[i] - t
            edits[i] = ("clear", said[k])
        newest = T("one of the newest {count:,} observations (window {window:,})", count=count - masked_n,
                   window=window)
        for i in results[masked_n:]:
            if i >= n0 or whys[i] != newest:
                edits[i] = ("keep", newest)
        stats["observations"] = count
    if st["counts"] is None:
        st["counts"] = fact_counts(view, plan)
    made_plan = extend(view, parent, plan, st["counts"], edits, T("sent as is: not an observation"),
                       strategy.params(), warnings=(), stats=stats, idle=None, replace=replace)
    if made_plan is None:
        return None
    out, counts = made_plan
    return remember(view, strategy, budget, out, {**st, "results": results, "masked_n": masked_n, "stats": stats,
                                                  "counts": counts})
