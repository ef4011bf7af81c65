"""Strategies that work on tool rounds: ``tool_rounds`` (keep only the newest rounds),
``key_messages`` (a recent window plus the key messages of older history) and
``clear_tool_results`` (Anthropic-style clearing of old tool results, every call kept)."""
from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from itertools import chain, dropwhile, repeat
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from ..i18n import N_, T, listing, role_text
from ..conversation import Message
from .base import Strategy, budget_trigger, budget_window, works_on_param, param, register
from .plan import REMOVED, Plan, _kept_indexes, make_plan, minimum_warning, settle
from .view import MEMO_EXTENDERS, Budget, View
from .incremental.replan import remember
from .incremental.replan_keys import key_state, key_step
from .windows import preamble_systems, task_of_window, turn_aligned_start, window_idle


def _keep(actions: list[str], reasons: list[str], members: Sequence[int], reason: str) -> None:
    """Keep those of ``members`` not kept yet, for ``reason``."""
    for i in members:
        if actions[i] in REMOVED:
            actions[i], reasons[i] = "keep", reason


def keep_pinned(view: View, actions: list[str], reasons: list[str]) -> None:
    """Keep every pinned message with its whole group and the user message of its turn."""
    seg = view.seg
    for p in sorted(view.pins):
        members = seg.group_members(p)
        if all(actions[i] not in REMOVED for i in members):
            continue
        _keep(actions, reasons, [p], "pinned")
        _keep(actions, reasons, members, T("kept with pinned message {p}", p=p))
        if seg.turn_of[p] >= 0:
            _keep(actions, reasons, [seg.turns[seg.turn_of[p]][0]], T("kept: its turn has pinned message {p}", p=p))


def turn_reply(view: View, start: int, end: int) -> tuple[int, ...]:
    """What best answers the user message of turn ``start..end``: its last assistant message
    without tool calls, else its newest tool round (empty when the turn has neither)."""
    seg, messages = view.seg, view.messages
    for i in range(end - 1, start, -1):
        if messages[i].role == "assistant" and not messages[i].tool_calls:
            return (i,)
    for i in range(end - 1, start, -1):
        if seg.round_of[i] >= 0:
            return seg.group_members(i)
    return ()


def answer_lone_users(view: View, actions: list[str], reasons: list[str]) -> None:
    """Give a kept user message of an older turn with nothing kept after it a reply, so that it
    survives (two user turns in a row are invalid, and ``settle`` would remove it)."""
    for start, end in view.seg.turns[:-1]:
        if actions[start] in REMOVED:
            continue
        rest = actions[start + 1:end]
        if rest.count("drop") + rest.count("summarize") < len(rest):  # something after it is kept
            continue
        _keep(actions, reasons, turn_reply(view, start, end),
              T("kept so that user message {start} has a reply (two user turns in a row are invalid)", start=start))


def _removed_tokens(view: View, actions: list[str]) -> int:
    """Tokens of the removed messages (walking the smaller of the kept and the removed)."""
    kept, removed = _kept_indexes(actions)
    if removed is not None:
        return sum(map(view.tokens.__getitem__, removed))
    return view.total - sum(map(view.tokens.__getitem__, kept))


def _set(items: list, indexes: Sequence[int], values: Iterable) -> None:
    """``items[i] = value`` for each pair, at C speed."""
    deque(map(items.__setitem__, indexes, values), maxlen=0)


def _outside_round(role: str) -> tuple[str, str]:
    """The action and reason of a message outside every tool round."""
    if role == "tool":
        return "drop", T("a tool result that answers no earlier call")
    if role == "assistant":
        return "keep", T("kept: assistant text (no tool calls)")
    return "keep", T("kept: {role} message", role=role_text(role))


def _extend_layout(old: View, new: View, known: tuple) -> tuple | None:
    """``_round_layout`` of a grown view from the parent's, while no round is added (the reasons
    count the rounds): new messages outside rounds get their entries, results joining the newest
    round are added to it; anything else derives the layout again (None)."""
    seg = new.seg
    total = len(seg.rounds)
    if total != len(old.seg.rounds) or (not old.seg.turns and seg.turns):
        return None
    actions, reasons, flat, older, offsets, firsts = known
    actions, reasons, flat, older, offsets = list(actions), list(reasons), list(flat), list(older), list(offsets)
    for i in range(len(old), len(new)):
        r = seg.round_of[i]
        if r < 0:
            action, reason = _outside_round(new.roles[i])
        elif r == total - 1:
            action, reason = "keep", ""
            flat.append(i)
            older.append(T("older tool round (round {count:,} of {total:,})", count=r + 1, total=total))
            offsets[-1] += 1
        else:
            return None
        actions.append(action)
        reasons.append(reason)
    return tuple(actions), tuple(reasons), tuple(flat), tuple(older), tuple(offsets), firsts


MEMO_EXTENDERS["tool_rounds"] = _extend_layout


def _round_layout(view: View) -> tuple:
    """What ``tool_rounds`` derives from the view alone, once per view: the action and reason of
    every message outside the rounds, the round members in round order with the reason each gets
    when its round is dropped, and where each round starts in that order."""
    cached = view.memo.get("tool_rounds")
    if cached is not None:
        return cached
    seg, roles = view.seg, view.roles
    total = len(seg.rounds)
    actions, reasons = ["keep"] * len(view), [""] * len(view)
    for i, role in enumerate(roles):
        if seg.round_of[i] < 0:
            actions[i], reasons[i] = _outside_round(role)
    if seg.turns:
        reasons[seg.turns[0][0]] = T("kept: the original request")
    flat: list[int] = []
    older: list[str] = []
    offsets = [0]
    for r, members in enumerate(seg.rounds):
        flat.extend(members)
        older.extend([T("older tool round (round {count:,} of {total:,})", count=r + 1, total=total)] * len(members))
        offsets.append(len(flat))
    cached = view.memo["tool_rounds"] = (tuple(actions), tuple(reasons), tuple(flat), tuple(older), tuple(offsets),
                                         tuple(members[0] for members in seg.rounds))
    return cached


@register
@dataclass(frozen=True)
class ToolRounds(Strategy):
    """The multi-round optimization: keep the system messages, every user message (the first is
    the original request), assistant answers, and only the newest ``keep_rounds`` tool rounds.

    An older round (an assistant message with tool calls and all of its results) goes whole.
    Exceptions, on top of ``keep_rounds``: a round holding a pinned message, and the newest round
    of an older turn that has no other reply (its user message could not stay without one).
    A tool result that answers no call is dropped: no provider accepts it.
    """

    name: ClassVar[str] = "tool_rounds"
    title: ClassVar[str] = N_("Newest tool rounds")
    summary: ClassVar[str] = N_("Keeps system, user and answer messages and only the newest tool rounds; "
                              "older tool calls go with all their results.")
    keep_rounds: int = param(1, min=0, max=10_000, help=N_("How many of the newest tool rounds to keep whole."))

    def apply(self, view: View, budget: Budget) -> Plan:
        """Drop every tool round older than the newest ``keep_rounds``."""
        seg = view.seg
        total = len(seg.rounds)
        oldest_kept = min(max(total - self.keep_rounds, 0), total)
        newest = T("newest tool round") if self.keep_rounds == 1 else T("among the newest {keep_rounds:,} tool rounds", keep_rounds=self.keep_rounds)
        base_actions, base_reasons, flat, older, offsets, firsts = _round_layout(view)
        actions, reasons = list(base_actions), list(base_reasons)
        cut = offsets[oldest_kept]
        _set(actions, flat[:cut], repeat("drop", cut))
        _set(reasons, flat[:cut], older[:cut])
        for r in range(oldest_kept, total):
            why = T("{newest} (round {count:,} of {total:,})", newest=newest, count=r + 1, total=total)
            for i in seg.rounds[r]:
                reasons[i] = why
        keep_pinned(view, actions, reasons)
        answer_lone_users(view, actions, reasons)
        settle(view, actions, reasons)
        removed = sum(map(REMOVED.__contains__, map(actions.__getitem__, firsts)))
        saved = _removed_tokens(view, actions)
        what = T("the system, user and answer messages and the newest {keep_rounds:,} tool round(s)", keep_rounds=self.keep_rounds)
        warn = minimum_warning(view, budget, what, view.total - saved)
        return make_plan(view, budget, self.name, self.params(), actions, reasons, warnings=[warn] if warn else [],
                         stats={"rounds_total": total, "rounds_removed": removed, "tokens_saved": saved},
                         settle_first=False, idle=lambda: self._idle(total))

    def _idle(self, total: int) -> str:
        """Why no tool round was removed."""
        head = T("tool_rounds keeps the newest {keep_rounds:,} tool round(s) (keep_rounds)", keep_rounds=self.keep_rounds)
        if total <= self.keep_rounds:
            return T("{head} and the conversation has {total:,}", head=head, total=total)
        return (T("{head}; each of the {count:,} older round(s) holds a pinned message or is "
                "the only reply to its turn's user message, so it stays", head=head, count=total - self.keep_rounds))


@register
@dataclass(frozen=True)
class KeyMessages(Strategy):
    """A recent window plus, from older history, the key messages: every user request and the
    tool rounds that call a key tool (for a SQL agent, the generated and the executed SQL).

    Older key messages are taken newest first until ``max_key`` messages are kept. A user message
    kept this way needs a reply: its turn's key rounds, else its final answer; a turn with neither
    loses its user message too. Pinned messages (with their group and turn's user message) come
    on top of the cap.
    """

    name: ClassVar[str] = "key_messages"
    title: ClassVar[str] = N_("Recent window + key messages")
    summary: ClassVar[str] = N_("Keeps the recent messages, and from older history the user requests and the "
                              "results of key tools; everything else older is dropped.")
    scaling: ClassVar[str] = N_("Scaled to the budget, recent and max_key are each the number of 1,000-token "
                              "messages that fill half of what the budget leaves for messages.")
    recent: int = param(50, min=1, max=100_000,
                        help=N_("Size of the recent window in messages (widened back to the start of its turn). "
                             "Default 50 (fixed); the budget-scaled value is half the budget's message room in "
                             "1,000-token messages."))
    key_tools: tuple[str, ...] = param(("generate_sql", "run_sql"),
                                       help=N_("Tools whose calls and results are key messages in older history."))
    max_key: int = param(50, min=0, max=100_000,
                         help=N_("At most this many older messages are kept, newest first. Default 50 (fixed); "
                              "budget-scaled like recent."))

    @classmethod
    def budget_scaled(cls, budget: Budget) -> dict:
        """``recent`` and ``max_key``: half the budget's message room, in messages of 1,000 tokens."""
        window = budget_window(budget)
        return {"recent": window, "max_key": window}

    def quick_idle(self, view: View, budget: Budget) -> bool:
        """The conversation has no more than ``recent`` messages."""
        return len(view) <= self.recent

    def apply(self, view: View, budget: Budget) -> Plan:
        """Keep the window, then older key messages newest first up to the cap (from the parent
        view's plan when an append left the window's start where it was: ``incremental.replan_keys``)."""
        plan = key_step(self, view, budget)
        if plan is not None:
            return plan
        n = len(view)
        start = turn_aligned_start(view, self.recent)
        older = T("older than the recent window and not a key message")
        within = T("within the last {recent:,} messages (turn-aligned)", recent=self.recent)
        actions, reasons = ["drop"] * start + ["keep"] * (n - start), [older] * start + [within] * (n - start)
        _keep(actions, reasons, [i for i in preamble_systems(view) if i < start], T("always kept: the system prompt"))
        task = task_of_window(view, start)
        if task is not None:
            _keep(actions, reasons, [task], T("kept: the task (the user message of the turn the recent window cuts into)"))
        keep_pinned(view, actions, reasons)
        key_rounds = self._key_rounds(view)
        taken = self._take_keys(view, actions, reasons, start, key_rounds)
        answer_lone_users(view, actions, reasons)
        settle(view, actions, reasons)
        head = actions[:start]
        older_kept = start - sum(map(head.count, REMOVED))  # at C speed
        systems = sum(view.tokens[i] for i in preamble_systems(view) if i < start)
        what = T("the system prompt and the last {recent:,} messages", recent=self.recent)
        needed = systems + sum(view.tokens[start:])
        warn = minimum_warning(view, budget, what, needed)
        stats = {"window_start": start, "key_kept": taken, "older_kept": older_kept,
                 "older_dropped": start - older_kept, "tokens_saved": _removed_tokens(view, actions)}
        plan = make_plan(view, budget, self.name, self.params(), actions, reasons, warnings=[warn] if warn else [],
                         stats=dict(stats), settle_first=False, idle=lambda: self._idle(view, start))
        return remember(view, self, budget, plan, key_state(view, plan, start, within, what, needed, stats))

    def _idle(self, view: View, start: int) -> str:
        """Why nothing older than the window was dropped."""
        if not any(view.roles[i] != "system" for i in range(start)):
            return window_idle(self.name, "recent", self.recent, view, start)
        return (T("key_messages keeps the last {recent:,} messages (recent, from message {start:,}), and every "
                "older message is a system prompt, a pinned message, a user request or key message within the cap "
                "of {max_key:,} (max_key), or the reply such a request needs", recent=self.recent, start=start, max_key=self.max_key))

    def _key_rounds(self, view: View) -> dict[int, str]:
        """Round number -> the first key tool it calls."""
        keys = set(self.key_tools)
        calls, rounds_of = _round_calls(view)
        candidates = sorted({r for k in keys for r in rounds_of.get(k, ())})  # only rounds calling a key tool
        return {r: next(name for name in calls[r] if name in keys) for r in candidates}

    def _take_keys(self, view: View, actions: list[str], reasons: list[str], start: int,
                   key_rounds: dict[int, str]) -> int:
        """Keep older key messages, newest turn first, until the cap; returns how many were kept."""
        seg, room = view.seg, self.max_key
        older = dropwhile(lambda turn: turn[1] > start, reversed(seg.turns))  # lazily: the cap ends the walk early
        blocks = chain(((s, e, True) for s, e in older), [(seg.preamble[0], min(seg.preamble[1], start), False)])
        for s, e, has_user in blocks:
            items = [] if not key_rounds else [(seg.rounds[seg.round_of[i]], T("key message: {key_rounds} call or result", key_rounds=key_rounds[seg.round_of[i]]))
                     for i in range(e - 1, s - 1, -1)
                     if seg.round_of[i] in key_rounds and seg.rounds[seg.round_of[i]][0] == i]
            if has_user and not items:
                reply = turn_reply(view, s, e)
                if not reply or view.messages[reply[0]].tool_calls:
                    if actions[s] in REMOVED:
                        reasons[s] = T("older than the recent window; its turn has no key result or answer to keep")
                    continue
                items = [(reply, T("kept so that user message {s} has a reply (two user turns in a row are invalid)", s=s))]
            head = [s] if has_user else []
            for members, why in items:
                cost = sum(1 for i in (*head, *members) if actions[i] in REMOVED)
                if cost > room:
                    self._mark_capped(view, actions, reasons, start, key_rounds)
                    return self.max_key - room
                room -= cost
                _keep(actions, reasons, head, T("key message: a user request from older history"))
                _keep(actions, reasons, members, why)
                head = []
        return self.max_key - room

    def _mark_capped(self, view: View, actions: list[str], reasons: list[str], start: int,
                     key_rounds: dict[int, str]) -> None:
        """Say why the older key messages left out are dropped."""
        why = T("older than the recent window; the cap of {max_key:,} older key messages is reached", max_key=self.max_key)
        seg = view.seg
        users = (s for s, _ in seg.turns if s < start)
        keyed = (i for r in key_rounds for i in seg.rounds[r] if i < start)
        for i in (*users, *keyed):
            if actions[i] in REMOVED:
                reasons[i] = why


def _round_calls(view: View) -> tuple[list[tuple[str, ...]], dict[str, list[int]]]:
    """Once per view: the tool names each round calls, in order, and the rounds calling each tool."""
    cached = view.memo.get("key_messages.calls")
    if cached is None:
        cached = view.memo["key_messages.calls"] = _add_round_calls(view, [], {})
    return cached


def _add_round_calls(view: View, calls: list[tuple[str, ...]],
                     rounds_of: dict[str, list[int]]) -> tuple[list[tuple[str, ...]], dict[str, list[int]]]:
    """``calls`` and ``rounds_of`` completed with the rounds of ``view`` they do not cover yet."""
    for r in range(len(calls), len(view.seg.rounds)):
        names = tuple(c.name for c in view.messages[view.seg.rounds[r][0]].tool_calls)
        calls.append(names)
        for name in dict.fromkeys(names):
            rounds_of.setdefault(name, []).append(r)
    return calls, rounds_of


MEMO_EXTENDERS["key_messages.calls"] = lambda old, new, table: _add_round_calls(
    new, list(table[0]), {k: list(v) for k, v in table[1].items()})  # a round's calls never change


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
    framing = new.counter.message(Message("tool", ""))
    added = [i for i in range(len(old), len(new)) if new.roles[i] == "tool"]
    seg, messages = new.seg, new.messages
    new_names = []
    for i in added:
        r = seg.round_of[i]
        calls = {c.id: c.name for c in messages[seg.rounds[r][0]].tool_calls} if r >= 0 else {}
        new_names.append(calls.get(messages[i].tool_call_id) or messages[i].name or "unknown tool")
    new_info = [_clearing_info(new, framing, name, new.tokens[i]) for i, name in zip(added, new_names)]
    return results + tuple(added), names + tuple(new_names), info + tuple(new_info)


MEMO_EXTENDERS["clear_tool_results"] = _extend_clearing_layout
MEMO_EXTENDERS["clear_tool_results.cleared"] = lambda old, new, cleared: cleared  # by index: still right
MEMO_EXTENDERS["clear_tool_results.picked"] = lambda old, new, picked: (  # the same cut while no result is added
    picked if "tool" not in new.roles[len(old):] else None)
MEMO_EXTENDERS["clear_tool_results.placeholders"] = lambda old, new, known: known  # keyed by the picked mapping
MEMO_EXTENDERS["replacement_fact_masks"] = lambda old, new, masks: masks  # by text and facts: still right
MEMO_EXTENDERS["replacement_fact_masks.by_object"] = lambda old, new, masks: masks  # same objects, same facts


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
        """Clear old tool results (and their calls' arguments) when the trigger is passed."""
        return self._apply(view, budget)

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
        _set(actions, list(replacements), repeat("clear", len(replacements)))
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
        _set(reasons, newest, repeat(T("one of the newest {keep:,} tool results: not cleared", keep=self.keep), len(newest)))
        excluded = set(self.exclude_tools)
        if not excluded and not view.pins:  # the common case, at C speed: every older result with a gain
            _set(reasons, results[:cut], (why for _, _, why in info[:cut]))
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
