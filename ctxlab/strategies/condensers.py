"""The condensers coding agents ship, as strategies: ``observation_masking`` (SWE-agent's
``last_n_observations`` history processor, the form JetBrains Research measured in "The Complexity
Trap", 2025), ``recent_events`` and ``amortized_forgetting`` (OpenHands' ``recent`` and
``amortized`` condensers).

They count messages where OpenHands counts events: an assistant message with three tool calls is
one message here and three action events there (``ctxlab.configs.coding_agents`` says so when it
exports). The system prompt is never counted or removed (OpenHands keeps it outside the events);
``keep_first`` counts from the first message after it, usually the task.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import is_, not_
from typing import Any, ClassVar

from ..i18n import N_, T
from ..conversation import Message
from .base import EXTENDS, EXTENDS_WHOLE, ON_WHAT_IT_LEFT, Strategy, budget_window, param, register, works_on_param
from .plan import Plan, make_plan, positions, texts
from .incremental.replan import remember
from .incremental.replan_clear import masking_state, masking_step
from .incremental.replan_recent import recent_state, recent_step
from .view import MEMO_EXTENDERS, Budget, View, message_text
from .keep_rules import answer_lone_users, set_at
from .windows import preamble_systems
from .summarizers import structured  # noqa: F401  (registers the structured and llm_structured summarizers)

SWE_AGENT_PLACEHOLDER = "Old environment output: ({lines} lines omitted)"
"""SWE-agent's text for an elided observation (its docs: "Old environment output: (n lines omitted)")."""


def _body(view: View) -> list[int]:
    """Indexes of the messages a condenser counts: all but the system prompt before the first user."""
    skip = set(preamble_systems(view))
    return [i for i in range(len(view)) if i not in skip]


MEMO_EXTENDERS["observation_masking"] = lambda old, new, masked: {  # by index: the same results; a copy, since
    placeholder: dict(copies) for placeholder, copies in masked.items()}  # a sibling's new indexes are other messages


def masked_reasons(view: View, count: int, window: int, upto: int) -> list[str]:
    """The reasons of the oldest ``upto`` of ``count`` observations masked with a ``window``: one
    text per position, kept in the view's texts (a re-plan of the same count makes none again)."""
    lists = texts(view).setdefault(("masked",), {})
    known = lists.get((count, window))
    if known is None:
        if len(lists) >= 4:  # a list per count of results: keep the newest few
            lists.clear()
        known = lists[count, window] = []
    for k in range(len(known), upto):
        known.append(T("masked: observation {count:,} of {n_results:,}, older than the newest {window:,}",
                       count=k + 1, n_results=count, window=window))
    return known


@register
@dataclass(frozen=True)
class ObservationMasking(Strategy):
    """Keep the newest ``window`` tool results (observations) as they are; replace the content of
    every older one with a placeholder. Every call keeps its result, so nothing is unpaired, and
    the agent's own reasoning and actions all stay."""

    name: ClassVar[str] = "observation_masking"
    cost_per_call: ClassVar[str] = EXTENDS_WHOLE
    title: ClassVar[str] = N_("Observation masking")
    summary: ClassVar[str] = N_("Keeps the last N tool results (observations) and replaces older ones with a short "
                              "placeholder; every action and all reasoning stay (SWE-agent, JetBrains).")
    works_on: str = works_on_param("full_history")  # SWE-agent's history processors, OpenHands' masking condenser
    window: int = param(5, min=0, max=1_000_000,
                        help=N_("How many of the newest observations stay as they are (SWE-agent's configs use 5)."))
    placeholder: str = param(SWE_AGENT_PLACEHOLDER,
                             help=N_("Text that replaces a masked observation; {lines} becomes its line count."))
    polling: int = param(1, min=1, max=10_000,
                         help=N_("Mask in steps of this many observations (SWE-agent's polling): between window and "
                              "window + polling stay, so the prompt prefix changes less often (prompt cache)."))

    def _masked(self, view: View, i: int) -> tuple[Message, int]:
        """The masked copy of result ``i`` and its tokens (made once per view and placeholder)."""
        return self._masked_all(view, [i])[0]

    def _masked_all(self, view: View, results: Sequence[int]) -> list[tuple[Message, int]]:
        """The masked copy of each of ``results`` and its tokens (made once per view and placeholder)."""
        memo = view.memo.setdefault("observation_masking", {}).setdefault(self.placeholder, {})
        found = list(map(memo.get, results))
        if None in found:
            given = view.entries("messages")
            for k in compress(range(len(found)), map(is_, found, repeat(None))):
                i = results[k]
                m = given[i]
                lines = message_text(m).count("\n") + 1 if message_text(m) else 0
                new = m.with_content(self.placeholder.replace("{lines}", f"{lines:,}"))
                found[k] = memo[i] = (new, view.counter.message(new))
        return found

    def apply(self, view: View, budget: Budget) -> Plan:
        """Mask all observations but the newest ``window`` (rounded to ``polling`` steps); after
        ``view.append``, from the parent's plan. The thousands of older results of a long history
        are decided in C-speed passes over their lists, not one Python step each."""
        plan = masking_step(self, view, budget, masked_reasons)
        if plan is not None:
            return plan
        n, tokens = len(view), view.tokens
        results = positions(view.roles, ("tool",))
        count = len(results)
        over = max(count - self.window, 0)
        masked_n = over - over % self.polling
        actions, reasons = ["keep"] * n, [T("sent as is: not an observation")] * n
        set_at(reasons, results[masked_n:], repeat(T("one of the newest {count:,} observations (window {window:,})",
                                                     count=count - masked_n, window=self.window), count - masked_n))
        older = results[:masked_n]
        copies = self._masked_all(view, older)
        counts = [t for _, t in copies]
        shorter = list(map(int.__lt__, counts, map(tokens.__getitem__, older)))
        if view.pins:
            pinned = [i in view.pins for i in older]
            set_at(reasons, compress(older, pinned), repeat(T("pinned: never masked")))
            shorter = [s and not p for s, p in zip(shorter, pinned)]
            longer = [not s and not p for s, p in zip(shorter, pinned)]
        else:
            longer = list(map(not_, shorter))
        set_at(reasons, compress(older, longer), repeat(T("sent as is: the placeholder would not be shorter")))
        masked = list(compress(older, shorter))
        set_at(actions, masked, repeat("clear", len(masked)))
        set_at(reasons, masked, compress(masked_reasons(view, count, self.window, masked_n), shorter))
        replacements = dict(zip(masked, (m for m, _ in compress(copies, shorter))))
        counted = dict(zip(masked, compress(counts, shorter)))
        saved = sum(map(tokens.__getitem__, masked)) - sum(counted.values())
        stats = {"observations": count, "masked": len(replacements), "tokens_masked": saved}
        plan = make_plan(view, budget, self.name, self.params(), actions, reasons, replacements=replacements,
                         replacement_tokens=counted, stats=stats, idle=lambda: self._idle(count, masked_n))
        return remember(view, self, budget, plan, masking_state(view, plan, results, masked_n))

    def _idle(self, results: int, masked_n: int) -> str:
        """Why nothing was masked."""
        if results <= self.window:
            return (T("observation_masking keeps the newest {window:,} observations (window) and the conversation "
                    "has {results:,}", window=self.window, results=results))
        if masked_n == 0:
            return (T("observation_masking masks in steps of {polling:,} (polling); {count:,} "
                    "observation(s) past the window is less than one step", polling=self.polling, count=results - self.window))
        return T("observation_masking found no older observation that a placeholder would make shorter")


@register
@dataclass(frozen=True)
class RecentEvents(Strategy):
    """Keep the first ``keep_first`` messages (the task) and the newest ones up to ``max_events``
    in all; forget the middle. OpenHands' ``recent`` condenser."""

    name: ClassVar[str] = "recent_events"
    cost_per_call: ClassVar[str] = EXTENDS
    title: ClassVar[str] = N_("Recent events")
    summary: ClassVar[str] = N_("Keeps the first messages (the task) and the newest ones, up to a maximum; "
                              "forgets the middle (OpenHands' recent condenser).")
    scaling: ClassVar[str] = N_("Scaled to the budget, max_events is the number of 1,000-token messages that fill half "
                              "of what the budget leaves for messages.")
    works_on: str = works_on_param("full_history")  # OpenHands' recent-events condenser: a function of the whole view
    keep_first: int = param(1, min=0, max=1_000_000, help=N_("How many of the first messages after the system prompt "
                                                          "always stay (default 1: the task, OpenHands' default)."))
    max_events: int = param(100, min=1, max=1_000_000,
                            help=N_("How many messages stay at most, the first ones included (OpenHands' default 100)."))

    @classmethod
    def budget_scaled(cls, budget: Budget) -> dict:
        """``max_events``: half the budget's message room, in messages of 1,000 tokens."""
        return {"max_events": max(budget_window(budget), 2)}

    def apply(self, view: View, budget: Budget) -> Plan:
        """Keep the head and the newest tail; drop the middle (made provider-valid by ``settle``).
        The body is the preamble's non-system messages, then every message from the first user
        message on, so its three parts are set by slices (a plan of 10,000 messages makes no
        Python step per message). After ``view.append``, the parent's plan is kept up to the turn
        where the forgotten middle now ends."""
        plan = recent_step(self, view, budget)
        if plan is not None:
            return plan
        n, pe = len(view), view.preamble[1]
        pre = [i for i in range(pe) if view.role_of(i) != "system"]
        body_n = len(pre) + n - pe
        head = min(self.keep_first, self.max_events)
        tail = self.max_events - head
        cut = max(head, body_n - tail)  # body positions [head, cut) are forgotten
        actions, reasons = ["keep"] * n, [T("always kept: the system prompt")] * n
        _set_body(reasons, pre, pe, 0, min(head, body_n), T("one of the first {head:,} messages (keep_first)", head=head))
        if cut < body_n:
            _set_body(reasons, pre, pe, cut, body_n, T("one of the newest {tail:,} messages", tail=tail))
        if head < cut:
            _set_body(actions, pre, pe, head, cut, "drop")
            _set_body(reasons, pre, pe, head, cut, T("forgotten: after the first {head:,} and before the newest "
                                                     "{tail:,} messages (max_events {max_events:,})", head=head,
                                                     tail=tail, max_events=self.max_events))
        answer_lone_users(view, actions, reasons)  # a kept task of an older turn keeps its reply
        dropped = actions.count("drop")
        plan = make_plan(view, budget, self.name, self.params(), actions, reasons, stats={"forgotten": dropped},
                         idle=lambda: (T("recent_events keeps up to {max_events:,} messages (max_events) and the "
                                       "conversation has {n_body:,} besides the system prompt", max_events=self.max_events, n_body=body_n)))
        return remember(view, self, budget, plan, recent_state(view, plan, pre, dropped))


def _set_body(items: list, pre: list[int], pe: int, k0: int, k1: int, value: Any) -> None:
    """``items[i] = value`` for the body positions ``k0..k1`` (the body: ``pre``, then every index
    from ``pe`` on), by one slice for the part past the preamble."""
    np_ = len(pre)
    for i in pre[k0:min(k1, np_)]:
        items[i] = value
    a = max(k0, np_)
    if a < k1:
        items[pe + a - np_:pe + k1 - np_] = [value] * (k1 - a)


@register
@dataclass(frozen=True)
class AmortizedForgetting(Strategy):
    """OpenHands' ``amortized`` condenser, replayed over the conversation's growth: whenever the kept
    history passes ``max_size`` messages, forget all but the first ``keep_first`` and the newest
    ones, down to half of ``max_size``; then let it grow again. The prompt prefix changes only at
    those moments, so the prompt cache survives between them."""

    name: ClassVar[str] = "amortized_forgetting"
    cost_per_call: ClassVar[str] = ON_WHAT_IT_LEFT
    title: ClassVar[str] = N_("Amortized forgetting")
    summary: ClassVar[str] = N_("Lets the history grow to a maximum, then forgets the middle down to half of it, and "
                              "lets it grow again (OpenHands' amortized condenser).")
    scaling: ClassVar[str] = N_("Scaled to the budget, max_size is the number of 1,000-token messages that fill what "
                              "the budget leaves for messages.")
    max_size: int = param(100, min=2, max=1_000_000,
                          help=N_("Forget when the kept history passes this many messages (OpenHands' default 100)."))
    keep_first: int = param(1, min=0, max=1_000_000, help=N_("How many of the first messages after the system prompt "
                                                          "always stay (default 1: the task, OpenHands' default)."))

    @classmethod
    def budget_scaled(cls, budget: Budget) -> dict:
        """``max_size``: the budget's message room, in messages of 1,000 tokens."""
        return {"max_size": max(2 * budget_window(budget), 2)}

    def forget(self, body: list[int]) -> tuple[list[int], dict[int, tuple[int, int]]]:
        """Replay the growth: the kept indexes at the end, and for each forgotten one the
        condensation that forgot it and how many messages were kept just before it."""
        head = min(self.keep_first, self.max_size // 2)
        tail = max(self.max_size // 2 - head, 1)
        kept: list[int] = []
        gone: dict[int, tuple[int, int]] = {}
        rounds = 0
        for i in body:
            kept.append(i)
            if len(kept) > self.max_size:
                rounds += 1
                for j in kept[head:len(kept) - tail]:
                    gone[j] = (rounds, len(kept))
                kept = kept[:head] + kept[len(kept) - tail:]
        return kept, gone

    def apply(self, view: View, budget: Budget) -> Plan:
        """Drop what the replayed condensations forgot."""
        body = _body(view)
        kept, gone = self.forget(body)
        n = len(view)
        actions, reasons = ["keep"] * n, [T("always kept: the system prompt")] * n
        head = set(body[:min(self.keep_first, self.max_size // 2)])
        for i in kept:
            reasons[i] = (T("one of the first messages (keep_first)") if i in head
                          else T("kept: added since the last forgetting, or among the newest it kept"))
        for i, (r, size) in gone.items():
            actions[i], reasons[i] = "drop", (T("forgotten at condensation {r:,} (the history had reached {size:,} "
                                              "messages, over max_size {max_size:,})", r=r, size=size, max_size=self.max_size))
        answer_lone_users(view, actions, reasons)  # a kept task of an older turn keeps its reply
        stats: dict[str, Any] = {"condensations": max((r for r, _ in gone.values()), default=0), "forgotten": len(gone)}
        return make_plan(view, budget, self.name, self.params(), actions, reasons, stats=stats,
                         idle=lambda: (T("amortized_forgetting forgets only when the history passes {max_size:,} "
                                       "messages (max_size); this one has {n_body:,} besides the system prompt", max_size=self.max_size, n_body=len(body))))
