"""Two providers' own context handling, simulated offline so Tune can compare it with the rest.

``server_compaction``: one summary of everything before the trigger point, once the messages pass
an input-token trigger. It is what these peers do:

* Anthropic ``compact_20260112`` (Messages API, beta ``compact-2026-01-12``): past ``trigger``
  input tokens (default 150,000, at least 50,000) the API writes a compaction block and drops every
  message block before it on later requests; ``instructions`` add to the summary prompt;
  ``pause_after_compaction`` returns the block to the client before the reply (nothing to simulate:
  a replay measures prompts, not round trips).
* Claude Code auto-compact: the same (a summary replaces the whole history) at a share of the
  window (``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE``).
* OpenAI ``/responses/compact`` and server-side compaction (``context_management`` with
  ``compact_threshold``): the API reference says the compacted output is "all user messages,
  followed by a single compaction item" (an opaque, encrypted item); Codex CLI keeps the user
  messages too. ``keep_user_messages=True`` simulates this.

``truncation_auto``: the Responses API's ``truncation: "auto"``. The openai SDK (3.57) documents
it as dropping items from the beginning of the conversation when the input exceeds the context
window, where the window may already be reduced by the model's maximum output allowance.

Both are valid by construction, as every strategy: a tool call and its results are folded or
dropped together, the system prompt and the newest user message (the task) always stay, so where a
provider would fold or drop the task too, ctxlab keeps it and the plan says so. Pins are not
honoured beyond that: the providers have none.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

from ..i18n import N_, T
from ..conversation import Message
from .base import ON_WHAT_IT_LEFT, Strategy, StrategyError, budget_trigger, param, register
from .summarizers.llm import MERGE_PROMPT, SUMMARY_PROMPT, SummaryResult
from .plan import REMOVED, Insertion, Plan, make_plan, minimum_warning, settle
from .summarizers.summarize import (Covered, UsesSummarizer, is_summary, max_summary_tokens_param, running_summary,
                                    summarizer_param, summary_message)
from .summarizers.extractive import SUMMARIZERS, trim_summary
from .view import Budget, View
from .windows import preamble_systems

ANTHROPIC_DEFAULT_TRIGGER = 150_000
"""``compact_20260112``'s default trigger (input tokens), from Anthropic's API reference."""


def _with_instructions(template: str, instructions: str) -> str:
    return f"{template}\n\nAdditional instructions: {instructions}" if instructions else ""


@register
@dataclass(frozen=True)
class ServerCompaction(UsesSummarizer, Strategy):
    """Past an input-token trigger, one summary replaces everything before the newest user message
    (Anthropic compaction, Claude Code auto-compact), or everything but the user messages (OpenAI
    compaction, Codex)."""

    name: ClassVar[str] = "server_compaction"
    cost_per_call: ClassVar[str] = ON_WHAT_IT_LEFT
    title: ClassVar[str] = N_("Server-side compaction")
    summary: ClassVar[str] = N_("Past an input-token trigger, replaces the whole history before the newest user message "
                              "with one summary, as Anthropic compaction and Claude Code auto-compact do; or keeps "
                              "every user message and summarizes the rest, as OpenAI compaction and Codex do.")
    scaling: ClassVar[str] = N_("Scaled to the budget, trigger_tokens is 80% of what the budget leaves for messages.")
    trigger_tokens: int = param(ANTHROPIC_DEFAULT_TRIGGER, min=1, max=10_000_000,
                                help=N_("Compact when the messages hold more tokens than this. Default 150,000 "
                                     "(Anthropic's default trigger; its minimum is 50,000). The exports add the "
                                     "tool definitions, which the providers count as input."))
    keep_user_messages: bool = param(False, help=N_("False: only the newest user message stays beside the summary "
                                                 "(Anthropic, Claude Code). True: every user message stays verbatim "
                                                 "(OpenAI /responses/compact, Codex)."))
    summarizer: str = summarizer_param()
    max_summary_tokens: int = max_summary_tokens_param()
    instructions: str = param("", help=N_("Added to the summary prompt (Anthropic's compaction instructions); "
                                       "summarizer=llm only: the extractive summarizer has no prompt."))

    @classmethod
    def budget_scaled(cls, budget: Budget) -> dict:
        """``trigger_tokens``: 80% of the budget's message room (at least 1)."""
        return {"trigger_tokens": max(budget_trigger(budget), 1)}

    def quick_idle(self, view: View, budget: Budget) -> bool:
        """Not over the trigger (the state it left is kept as it is)."""
        return view.total <= self.trigger_tokens

    def apply(self, view: View, budget: Budget) -> Plan:
        """Below the trigger keep everything; above it fold everything but the kept messages."""
        n, total = len(view), view.total
        old = [i for i in range(n) if is_summary(view.messages[i])]
        previous, done = running_summary(view, old)
        if total <= self.trigger_tokens:
            idle = (T("server_compaction triggers above {trigger_tokens:,} message tokens (trigger_tokens); "
                    "this conversation's messages hold {total:,}", trigger_tokens=self.trigger_tokens, total=total))
            return self._keep_all(view, budget, T("below the trigger ({total:,} of {trigger_tokens:,} tokens)", total=total, trigger_tokens=self.trigger_tokens),
                                  previous, done, old, triggered=False, idle=idle)
        actions, reasons = self._decide(view, set(old))
        settle(view, actions, reasons)
        if not any(a == "summarize" for i, a in enumerate(actions) if i not in old):
            idle = (T("server_compaction is over its trigger ({total:,} message tokens) but has nothing to fold: "
                    "the system prompt and the user messages it keeps are all there is", total=total))
            return self._keep_all(view, budget, T("kept: over the trigger, nothing else to fold"), previous, done, old,
                                  triggered=True, idle=idle)
        for i in old:  # settle keeps a first system message, but an old summary gives way to the new one
            actions[i], reasons[i] = "summarize", T("replaced by the new compaction summary")
        return self._compacted(view, budget, actions, reasons, previous, done, set(old))

    def _decide(self, view: View, old: set[int]) -> tuple[list[str], list[str]]:
        """Fold everything but the system prompt, the newest user message and (keep_user_messages)
        the other user messages."""
        n, newest = len(view), view.newest_user()
        actions = ["summarize"] * n
        reasons = [T("folded into the compaction summary (everything before the trigger point)")] * n
        for i in preamble_systems(view):
            if i not in old:
                actions[i], reasons[i] = "keep", T("always kept: the system prompt (outside what is compacted)")
        for i, m in enumerate(view.messages):
            if m.role != "user":
                continue
            if i == newest:
                actions[i], reasons[i] = "keep", (T("kept: the newest user message (the task; a provider's compaction "
                                                  "folds it too, ctxlab keeps it verbatim)")
                                                  if not self.keep_user_messages else T("kept: a user message"))
            elif self.keep_user_messages:
                actions[i], reasons[i] = "keep", T("kept: compaction keeps every user message verbatim")
        return actions, reasons

    def _compacted(self, view: View, budget: Budget, actions: list[str], reasons: list[str], previous: str | None,
                   done: Covered, old: set[int]) -> Plan:
        """Summarize what is newly folded, merged into the previous summary, and insert it."""
        n = len(view)
        origin = view.origin if len(view.origin) == n else tuple(range(n))
        folded = [i for i, a in enumerate(actions) if a == "summarize" and i not in old]
        new = [i for i in folded if origin[i] is None or origin[i] not in done]
        written = self._write([view.messages[i] for i in new], previous, view) if new else None
        body = trim_summary(written.text if written is not None else (previous or ""), self.max_summary_tokens,
                            view.counter.text)
        covered = done.union(o for i in folded if (o := origin[i]) is not None)
        message = summary_message(body, covered)
        systems = [i for i in preamble_systems(view) if i not in old and actions[i] not in REMOVED]
        summary_tokens = view.counter.message(message)
        needed = summary_tokens + sum(t for i, t in enumerate(view.tokens) if actions[i] not in REMOVED)
        warn = minimum_warning(view, budget, T("the system prompt, the compaction summary and the user messages it "
                                             "keeps"), needed)
        stats = {"triggered": True, "messages_folded": len(folded), "messages_summarized": len(new),
                 "summary_tokens": summary_tokens}
        if written is not None and written.record:
            stats["summary_by"] = written.record
        warnings = [w for w in (warn, written.warning if written is not None else None) if w]
        return make_plan(view, budget, self.name, self.params(), actions, reasons,
                         insertions=[Insertion(systems[-1] + 1 if systems else 0, message, tuple(folded))],
                         warnings=warnings, stats=stats, state={"summary": body, "summarized": covered},
                         settle_first=False)

    def _write(self, messages: list[Message], previous: str | None, view: View) -> SummaryResult:
        """The new summary text: a summarizer with ``summarize_span`` (the LLM one) gets the
        instructions added to its prompts; the others summarize as they do."""
        summarizer = SUMMARIZERS.get(self.summarizer)
        if summarizer is None:
            raise StrategyError(f"summarizer {self.summarizer!r} is no longer registered",
                                where=f"{self.name}.summarizer", hint=f"Known summarizers: {', '.join(SUMMARIZERS)}")
        if hasattr(summarizer, "summarize_span"):
            return summarizer.summarize_span(messages, previous,
                                             summary_prompt=_with_instructions(SUMMARY_PROMPT, self.instructions),
                                             merge_prompt=_with_instructions(MERGE_PROMPT, self.instructions),
                                             max_tokens=self.max_summary_tokens, count=view.counter.text)
        return SummaryResult(summarizer.summarize(messages, previous), {})

    def _keep_all(self, view: View, budget: Budget, why: str, previous: str | None, done: Covered,
                  old: Sequence[int], *, triggered: bool, idle: str) -> Plan:
        """Everything kept (the summary so far, if any, carried on in the state)."""
        n = len(view)
        reasons = [why] * n
        for i in old:
            reasons[i] = T("the compaction summary so far")
        state = {"summary": previous or "", "summarized": done.indexes} if previous or done else {}
        stats = {"triggered": triggered, "messages_folded": 0, "messages_summarized": 0,
                 "summary_tokens": sum(view.tokens[i] for i in old)}
        return make_plan(view, budget, self.name, self.params(), ["keep"] * n, reasons, stats=stats, state=state,
                         settle_first=False, idle=idle)


@register
@dataclass(frozen=True)
class TruncationAuto(Strategy):
    """OpenAI Responses ``truncation: "auto"``: over the window, drop the oldest items until it fits."""

    name: ClassVar[str] = "truncation_auto"
    cost_per_call: ClassVar[str] = ON_WHAT_IT_LEFT
    title: ClassVar[str] = N_("Truncation auto (OpenAI)")
    summary: ClassVar[str] = N_("Only when the prompt is over the window, drops the oldest messages (whole tool rounds) "
                              "until it fits, as the Responses API's truncation \"auto\" does; the system prompt and "
                              "the newest user message stay.")
    output_allowance: int = param(0, min=0, max=1_000_000,
                                  help=N_("Tokens the API holds back for the reply, taken from the window (OpenAI "
                                       "subtracts the model's maximum output even when max_output_tokens is lower). "
                                       "0 = the budget's reserve only."))

    def _limit(self, budget: Budget) -> int:
        """Tokens the messages may hold: the budget's room, less the output allowance beyond the reserve."""
        reserve = budget.max_tokens - budget.prompt_limit
        return budget.available - max(self.output_allowance - reserve, 0)

    def quick_idle(self, view: View, budget: Budget) -> bool:
        """The messages fit the window."""
        return view.total <= self._limit(budget)

    def apply(self, view: View, budget: Budget) -> Plan:
        """Drop whole groups from the beginning (the system prompt and the newest user message
        stay) until the rest fits."""
        n, total, limit = len(view), view.total, self._limit(budget)
        if total <= limit:
            idle = (T("truncation_auto drops only when the messages exceed the window ({total:,} of {limit:,} tokens "
                    "after the reserve and output allowance)", total=total, limit=limit))
            return make_plan(view, budget, self.name, self.params(), ["keep"] * n,
                             [T("fits the window ({total:,} of {limit:,} tokens)", total=total, limit=limit)] * n, idle=idle,
                             stats={"triggered": False, "messages_dropped": 0})
        actions = ["keep"] * n
        reasons = [T("kept: fits once the older messages are dropped")] * n
        protected = {view.first_system(), view.newest_user(), *preamble_systems(view), *view.compactions}
        seg, excess = view.seg, total - limit
        for g in dict.fromkeys(seg.group_of):
            if excess <= 0:
                break
            members = seg.groups[g]
            if any(i in protected for i in members):
                continue
            for i in members:
                actions[i], reasons[i] = "drop", T("dropped: oldest first, until the prompt fits the window")
                excess -= view.tokens[i]
        settle(view, actions, reasons)
        dropped = actions.count("drop")
        needed = sum(t for i, t in enumerate(view.tokens) if actions[i] == "keep")
        warn = minimum_warning(view, budget, T("the system prompt and the newest user message"), needed)
        return make_plan(view, budget, self.name, self.params(), actions, reasons, warnings=[w for w in (warn,) if w],
                         stats={"triggered": True, "messages_dropped": dropped}, settle_first=False)


__all__ = ["ANTHROPIC_DEFAULT_TRIGGER", "ServerCompaction", "TruncationAuto"]
