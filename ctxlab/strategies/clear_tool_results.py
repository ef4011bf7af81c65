"""``clear_tool_results``: Anthropic-style clearing of old tool results (context editing's
``clear_tool_uses``): every call is kept, the oldest results past the trigger are replaced by a
placeholder."""
from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from ..i18n import N_, T, listing
from ..conversation import Message
from .base import EXTENDS_WHOLE, Strategy, budget_trigger, param, register, works_on_param
from .plan import Plan, make_plan, minimum_warning
from .view import MEMO_EXTENDERS, Budget, View
from .keep_rules import set_at
from .incremental.replan import remember
from .incremental.replan_clear import clear_state, clear_step


def _tool_names(view: View) -> dict[int, str]:
    """Tool message index -> the name of the tool it answers (from its call, else its own name)."""
    seg, messages, out = view.seg, view.messages, {}
    for members in seg.rounds:
        calls = {c.id: c.name for c in messages[members[0]].tool_calls}
        for i in members[1:]:
            out[i] = calls.get(messages[i].tool_call_id) or messages[i].name or "unknown tool"
    for i in seg.orphans:
        out[i] = messages[i].name or "unknown tool"
    return out


def _clearing_layout(view: View) -> tuple[tuple[int, ...], tuple[str, ...], tuple[tuple[str, int, str], ...]]:
    """Once per view: the tool results, the tool each answers, and for each its placeholder, the
    tokens clearing it saves, and the reason a cleared (or too small) result gets."""
    cached = view.memo.get("clear_tool_results")
    if cached is not None:
        return cached
    tool_names, counter = _tool_names(view), view.counter
    framing = counter.message(Message("tool", ""))  # a tool message's tokens besides its content
    results = tuple(i for i, role in enumerate(view.roles) if role == "tool")
    names = tuple(tool_names[i] for i in results)
    seen: dict[tuple[str, int], tuple[str, int, str]] = {}
    info = []
    for i, name in zip(results, names):
        tokens = view.tokens[i]
        if (name, tokens) not in seen:
            seen[name, tokens] = _clearing_info(view, framing, name, tokens)
        info.append(seen[name, tokens])
    cached = view.memo["clear_tool_results"] = (results, names, tuple(info))
    return cached


def _clearing_info(view: View, framing: int, name: str, tokens: int) -> tuple[str, int, str]:
    """Placeholder, tokens saved, and reason, for a result of ``tokens`` tokens from tool ``name``."""
    text = f"[tool result cleared by ctxlab: {tokens:,} tokens]"
    gain = tokens - framing - view.counter.text(text)
    why = (T("old {name} result cleared ({tokens:,} tokens, {gain:,} saved)", name=name, tokens=tokens, gain=gain) if gain > 0 else
           T("not cleared: too small to gain from a placeholder ({tokens:,} tokens)", tokens=tokens))
    return text, gain, why


def _extend_clearing_layout(old: View, new: View, layout: tuple) -> tuple:
    """The clearing table of a grown view: the old entries stand (a result answers the call it
    answered), the new results are added."""
    results, names, info = layout
    log = new._log  # read on the log: the grown view's tuples of every message are not built for this
    added = [i for i in range(len(old), len(new)) if log.roles[i] == "tool"]
    if not added:
        return layout
    framing = new.counter.message(Message("tool", ""))
    messages = log.messages
    new_names = []
    for i in added:
        r = log.round_of[i]
        calls = {c.id: c.name for c in messages[log.rounds[r][0]].tool_calls} if r >= 0 else {}
        new_names.append(calls.get(messages[i].tool_call_id) or messages[i].name or "unknown tool")
    new_info = [_clearing_info(new, framing, name, log.tokens[i]) for i, name in zip(added, new_names)]
    return results + tuple(added), names + tuple(new_names), info + tuple(new_info)


MEMO_EXTENDERS["clear_tool_results"] = _extend_clearing_layout
def _grown_cleared(old: View, new: View, cleared: dict) -> dict:
    """The cleared copies by index, for a view grown from ``old``: shared along one line of views (an
    index holds the same message in each); a view grown on another branch (its own log) holds other
    messages past ``old``, so it gets only the copies of ``old``'s own messages."""
    if new._log is old._log:
        return cleared
    n = len(old)
    return {i: m for i, m in cleared.items() if i < n}


MEMO_EXTENDERS["clear_tool_results.cleared"] = _grown_cleared
MEMO_EXTENDERS["clear_tool_results.picked"] = lambda old, new, picked: (  # the same cut while no result is added
    picked if "tool" not in new._log.roles[len(old):len(new)] else None)
MEMO_EXTENDERS["clear_tool_results.placeholders"] = lambda old, new, known: known  # keyed by the picked mapping


@register
@dataclass(frozen=True)
class ClearToolResults(Strategy):
    """Tool-result clearing as Anthropic's API offers it (context editing, ``clear_tool_uses``):
    once the conversation passes a trigger, the content of every tool result but the newest few
    is replaced by a short placeholder; every call and its result stay, so nothing is unpaired.

    Anthropic's strategy triggers at 100,000 *input* tokens (system prompt and tool definitions
    included) and keeps the newest 3 tool uses; here the trigger counts message tokens only and
    ``keep`` counts tool results (one per call, so the same thing). ``clear_at_least``,
    ``exclude_tools`` and ``clear_tool_inputs`` follow Anthropic's options of the same names.
    Pinned results, and results too small to gain from a placeholder, are never cleared.
    """

    name: ClassVar[str] = "clear_tool_results"
    cost_per_call: ClassVar[str] = EXTENDS_WHOLE
    title: ClassVar[str] = N_("Clear old tool results")
    summary: ClassVar[str] = N_("Replaces the content of old tool results with a placeholder once the context "
                              "passes a trigger; every call keeps its result.")
    scaling: ClassVar[str] = N_("The defaults are Anthropic's (trigger 100,000 tokens, keep 3); scaled to the budget, "
                              "trigger_tokens is 80% of what the budget leaves for messages.")
    works_on: str = works_on_param("full_history")  # Anthropic context editing, LangChain's ClearToolUsesEdit
    trigger_tokens: int = param(100_000, min=0, max=10_000_000,
                                help=N_("Clear only when the messages hold more tokens than this (0 = always). Default "
                                     "100,000, Anthropic's clear_tool_uses_20250919 default; the budget-scaled value "
                                     "is 80% of the budget's message room."))
    keep: int = param(3, min=0, max=10_000, help=N_("How many of the newest tool results stay as they are "
                                                 "(default 3, Anthropic's)."))
    clear_at_least: int = param(0, min=0, max=10_000_000,
                                help=N_("Clear nothing unless clearing saves at least this many tokens."))
    exclude_tools: tuple[str, ...] = param((), help=N_("Tools whose results are never cleared."))
    clear_tool_inputs: bool = param(False, help=N_("Also replace the arguments of the cleared calls with {}."))

    @classmethod
    def budget_scaled(cls, budget: Budget) -> dict:
        """``trigger_tokens``: 80% of the budget's message room."""
        return {"trigger_tokens": budget_trigger(budget)}

    def apply(self, view: View, budget: Budget) -> Plan:
        """Clear old tool results (and their calls' arguments) when the trigger is passed (after
        ``view.append``, from the parent's plan when only the newest results moved)."""
        plan = clear_step(self, view, budget, lambda: (_clearing_layout(view),
                                                       view.memo.setdefault("clear_tool_results.cleared", {})))
        if plan is not None:
            return plan
        plan = self._apply(view, budget)
        return remember(view, self, budget, plan, clear_state(self, view, plan))

    def quick_idle(self, view: View, budget: Budget) -> bool:
        """Its messages are not over the trigger."""
        return bool(self.trigger_tokens) and view.total <= self.trigger_tokens

    def _apply(self, view: View, budget: Budget) -> Plan:
        n, total = len(view), view.total
        actions = ["keep"] * n
        stats: dict[str, Any] = {"triggered": False, "results_cleared": 0, "inputs_cleared": 0, "tokens_cleared": 0}
        if self.trigger_tokens and total <= self.trigger_tokens:
            why = T("sent as is: {total:,} message tokens, not over the {trigger_tokens:,}-token trigger", total=total, trigger_tokens=self.trigger_tokens)
            idle = (T("clear_tool_results triggers above {trigger_tokens:,} message tokens (trigger_tokens); "
                    "this conversation's messages hold {total:,}", trigger_tokens=self.trigger_tokens, total=total))
            return make_plan(view, budget, self.name, self.params(), actions, [why] * n, stats=stats, idle=idle)
        reasons = [T("sent as is: not a tool result")] * n
        results = self._pick_results(view, reasons)
        calls = self._pick_inputs(view, reasons, results) if self.clear_tool_inputs else {}
        saved = sum(g for _, g in results.values()) + sum(g for _, g in calls.values())
        stats["triggered"] = True
        if saved < self.clear_at_least:
            why = T("not cleared: clearing would save {saved:,} tokens, less than clear_at_least {clear_at_least:,}", saved=saved, clear_at_least=self.clear_at_least)
            for i in (*results, *calls):
                reasons[i] = why
            results, calls, saved, stats["skipped"] = {}, {}, 0, why
        replacements = dict(self._placeholders(view, results))
        for a, (ids, _) in calls.items():
            old = view.messages[a]
            replacements[a] = replace(old, tool_calls=tuple(replace(c, arguments="{}") if c.id in ids else c
                                                            for c in old.tool_calls))
        set_at(actions, list(replacements), repeat("clear", len(replacements)))
        stats.update(results_cleared=len(results), inputs_cleared=sum(len(ids) for ids, _ in calls.values()),
                     tokens_cleared=saved)
        warn = minimum_warning(view, budget, T("the conversation with its old tool results cleared"), total - saved)
        counted = {i: view.tokens[i] - gain for i, (_, gain) in results.items() if i not in calls}
        return make_plan(view, budget, self.name, self.params(), actions, reasons, replacements=replacements,
                         warnings=[warn] if warn else [], stats=stats, replacement_tokens=counted,
                         idle=lambda: self._idle(view, reasons, total, stats.get("skipped")))

    @staticmethod
    def _placeholders(view: View, results: dict[int, tuple[str, int]]) -> dict[int, Message]:
        """Result index -> its cleared copy (the same copy each plan; the whole mapping kept for the
        last set of results asked, so a re-plan of the same cut builds none of it again)."""
        last = view.memo.get("clear_tool_results.placeholders")
        if last is not None and last[0] is results:
            return last[1]
        cleared = view.memo.setdefault("clear_tool_results.cleared", {})  # the same placeholder copy each plan
        out = {i: cleared.get(i) or cleared.setdefault(i, view.messages[i].with_content(text))
               for i, (text, _) in results.items()}
        view.memo["clear_tool_results.placeholders"] = (results, out)
        return out

    def _idle(self, view: View, reasons: Sequence[str], total: int, skipped: str | None) -> str:
        """Why nothing was cleared although the trigger was passed."""
        head = (T("clear_tool_results is over its trigger ({total:,} message tokens, trigger_tokens "
                "{trigger_tokens:,})", total=total, trigger_tokens=self.trigger_tokens) if self.trigger_tokens else T("clear_tool_results clears at any size "
                                                                        "(trigger_tokens 0)"))
        if skipped:
            return T("{head} but clears nothing: clearing would save less than clear_at_least {clear_at_least:,}", head=head, clear_at_least=self.clear_at_least)
        results = [i for i, role in enumerate(view.roles) if role == "tool"]
        if not results:
            return T("{head} but the conversation has no tool result", head=head)
        kinds = {"one of the newest": N_("{count:,} among the newest {keep:,} (keep)"), "pinned:": N_("{count:,} pinned"),
                 "not cleared: too small": N_("{count:,} too small to gain from a placeholder"),
                 "not cleared:": N_("{count:,} of excluded tools")}
        counts = dict.fromkeys(kinds.values(), 0)
        for i in results:
            label = next((label for key, label in kinds.items() if reasons[i].startswith(key)), None)
            if label is not None:
                counts[label] += 1
        parts = listing([T(label, count=c, keep=self.keep) for label, c in counts.items() if c])
        return T("{head} but none of its {n_results:,} tool results can be cleared: {parts}", head=head, n_results=len(results), parts=parts)

    def _pick_results(self, view: View, reasons: list[str]) -> dict[int, tuple[str, int]]:
        """Tool result index -> (placeholder, tokens saved), for every result to clear; a reason
        for every tool message."""
        results, names, info = _clearing_layout(view)
        cut = max(len(results) - self.keep, 0) if self.keep else len(results)
        newest = results[cut:]
        set_at(reasons, newest, repeat(T("one of the newest {keep:,} tool results: not cleared", keep=self.keep), len(newest)))
        excluded = set(self.exclude_tools)
        if not excluded and not view.pins:  # the common case, at C speed: every older result with a gain
            set_at(reasons, results[:cut], (why for _, _, why in info[:cut]))
            picked = view.memo.get("clear_tool_results.picked")  # per view, for the last cut: read-only
            if picked is None or picked[0] != cut:
                picked = view.memo["clear_tool_results.picked"] = (
                    cut, {i: (text, gain) for i, (text, gain, _) in zip(results[:cut], info[:cut]) if gain > 0})
            return picked[1]
        out: dict[int, tuple[str, int]] = {}
        for i, name, (text, gain, why) in zip(results[:cut], names, info):
            if name in excluded:
                reasons[i] = T("not cleared: {name} is excluded", name=name)
            elif i in view.pins:
                reasons[i] = T("pinned: never cleared")
            else:
                reasons[i] = why
                if gain > 0:
                    out[i] = text, gain
        return out

    def _pick_inputs(self, view: View, reasons: list[str],
                     results: dict[int, tuple[str, int]]) -> dict[int, tuple[frozenset[str], int]]:
        """Assistant index -> (ids of the calls whose arguments to clear, tokens saved)."""
        counter, out = view.counter, {}
        empty = counter.text("{}")
        for members in view.seg.rounds:
            ids = frozenset(view.messages[i].tool_call_id for i in members[1:] if i in results)
            if not ids:
                continue
            a = members[0]
            gain = sum(counter.text(c.arguments) - empty for c in view.messages[a].tool_calls if c.id in ids)
            if gain > 0:
                out[a] = ids, gain
                reasons[a] = (T("inputs cleared: the arguments of {n_ids:,} call(s) whose results are cleared "
                              "({gain:,} saved)", n_ids=len(ids), gain=gain))
        return out
