"""``llm_attention``: a model picks which messages to keep (OpenHands' ``llm_attention`` condenser).

When the messages after the system prompt pass ``max_size``, the first ``keep_first`` stay and the
model is shown the others, numbered, with the task, and asked for the numbers of the ones the
agent still needs, at most enough to bring the history down to half of ``max_size``; the rest are
forgotten. One condensation of the conversation as it stands (OpenHands condenses again each time
the history regrows to ``max_size``; a replay that applies the strategy per call does the same).

Offline fallback: when no model is configured or it fails, or its reply names no usable message,
the newest messages are kept instead (what ``recent_events`` would keep at that size), with a
warning that names the failure. The model's choice is cached per view and parameters, so moving a
slider does not call it again.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from ..i18n import N_, T, error_text
from ..llm import LLMError, require_configured
from .base import ON_WHAT_IT_LEFT, Strategy, budget_window, param, register
from .summarizers.llm import render_span
from .plan import Plan, make_plan
from .condensers import _body
from .keep_rules import answer_lone_users
from .view import MEMO_EXTENDERS, Budget, View

ATTENTION_PROMPT = """A coding agent's context is too long. Below are its earlier messages, each numbered [#N]. The agent works on this task:
{task}

Reply with a JSON list of the numbers of the messages the agent still needs to finish the task (files it will edit, errors it has not fixed, decisions, results it will use), at most {keep} of them, and nothing else.

{span}"""
_LIST = re.compile(r"\[[\d,\s]*\]")


def _numbered(view: View, indexes: list[int], chars: int = 600) -> str:
    """The candidate messages as text, each under its number (each message rendered once for a view
    and the views grown from it: a re-plan after an append renders only the new messages)."""
    lines = view.memo.setdefault(f"llm_attention.lines.{chars}", {})  # index -> (message, its line)
    messages, out = view.messages, []
    for i in indexes:
        hit = lines.get(i)
        if hit is None or hit[0] is not messages[i]:  # another view grown from the same one holds another
            text = render_span([messages[i]], message_chars=chars, total_chars=chars)
            hit = lines[i] = (messages[i], f"[#{i}] {text}")
        out.append(hit[1])
    return "\n".join(out)


MEMO_EXTENDERS["llm_attention.lines.600"] = lambda old, new, lines: lines  # checked by message identity


def _parse(reply: str, candidates: set[int], keep: int) -> list[int]:
    """The usable numbers of a reply (a JSON list anywhere in it), at most ``keep``."""
    found = _LIST.search(reply)
    if not found:
        return []
    try:
        values = json.loads(found.group(0))
    except ValueError:
        return []
    picked = [v for v in dict.fromkeys(values) if isinstance(v, int) and v in candidates]
    return picked[:keep]


@register
@dataclass(frozen=True)
class LLMAttention(Strategy):
    """Past ``max_size`` messages, a model chooses which of the older ones stay (see module docstring)."""

    name: ClassVar[str] = "llm_attention"
    cost_per_call: ClassVar[str] = ON_WHAT_IT_LEFT
    title: ClassVar[str] = N_("LLM attention")
    summary: ClassVar[str] = N_("Past a maximum, a model picks the earlier messages the agent still needs and the "
                              "rest are forgotten; offline, the newest are kept (OpenHands' llm_attention).")
    scaling: ClassVar[str] = N_("Scaled to the budget, max_size is the number of 1,000-token messages that fill what "
                              "the budget leaves for messages.")
    max_size: int = param(100, min=2, max=1_000_000,
                          help=N_("Condense when the messages after the system prompt pass this many (OpenHands' 100)."))
    keep_first: int = param(1, min=0, max=1_000_000, help=N_("How many of the first messages always stay (the task)."))

    @classmethod
    def budget_scaled(cls, budget: Budget) -> dict:
        """``max_size``: the budget's message room, in messages of 1,000 tokens."""
        return {"max_size": max(2 * budget_window(budget), 2)}

    def _choose(self, view: View, head: list[int], candidates: list[int], keep: int) -> tuple[list[int], str | None]:
        """The candidates the model keeps, or the newest ``keep`` and why the model was not used."""
        memo = view.memo.setdefault("llm_attention", {})
        key = (self.max_size, self.keep_first)
        if key in memo:
            return memo[key]
        why = None
        try:
            llm = require_configured()  # offline, say so before writing a prompt of every candidate
            task = view.messages[head[0]].text[:2000] if head else "(not given)"
            prompt = ATTENTION_PROMPT.replace("{task}", task).replace("{keep}", str(keep)).replace(
                "{span}", _numbered(view, candidates))
            reply = llm.chat([{"role": "user", "content": prompt}], max_tokens=400)
            picked = _parse(reply.text, set(candidates), keep)
            if not picked:
                why = T("the model's reply named no message to keep ({text!r})", text=reply.text[:60])
        except LLMError as e:
            picked, why = [], error_text(e)
        if why is not None:
            picked = candidates[len(candidates) - keep:] if keep else []
        memo[key] = (sorted(picked), why)
        return memo[key]

    def apply(self, view: View, budget: Budget) -> Plan:
        """Keep the head and the model's choice among the rest; forget the others."""
        body = _body(view)
        n = len(view)
        actions, reasons = ["keep"] * n, [T("always kept: the system prompt")] * n
        if len(body) <= self.max_size:
            for i in body:
                reasons[i] = T("sent as is: the history is not over max_size")
            return make_plan(view, budget, self.name, self.params(), actions, reasons, idle=(
                T("llm_attention condenses only past {max_size:,} messages (max_size); this one has "
                "{n_body:,} besides the system prompt", max_size=self.max_size, n_body=len(body))))
        head = body[:min(self.keep_first, self.max_size // 2)]
        candidates = body[len(head):]
        keep = max(self.max_size // 2 - len(head), 1)
        picked, why = self._choose(view, head, candidates, keep)
        chosen = set(picked)
        partner = {k: i for i in picked for k in view.seg.group_members(i) if k not in chosen}
        for i in head:
            reasons[i] = T("one of the first messages (keep_first)")
        for i in candidates:
            if i in partner:
                reasons[i] = T("kept with its tool call and results (message {partner} was chosen)", partner=partner[i])
            elif i in chosen:
                reasons[i] = T("kept: the newest (offline fallback)") if why else T("kept: the model chose it")
            else:
                actions[i] = "drop"
                reasons[i] = (T("forgotten: older than the newest kept (offline fallback)") if why
                              else T("forgotten: the model did not choose it"))
        answer_lone_users(view, actions, reasons)  # a kept task of an older turn keeps its reply
        warnings = [T("LLM attention unavailable, kept the newest {keep:,} messages instead: {why}", keep=keep, why=why)] if why else []
        stats: dict[str, Any] = {"candidates": len(candidates), "kept": len(picked), "chooser": "newest" if why
                                 else "model"}
        return make_plan(view, budget, self.name, self.params(), actions, reasons, warnings=warnings, stats=stats)
