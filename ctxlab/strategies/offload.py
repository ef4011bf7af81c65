"""``offload``: each large tool result written to a store; the prompt keeps a pointer and a preview.

Manus ("context engineering" lessons, 2025-07), Cursor ("dynamic context discovery", 2026-01) and
LangChain Deep Agents' ``FilesystemMiddleware`` (``tool_token_limit_before_evict``, default 20,000
tokens; the result goes to ``/large_tool_results/<tool_call_id>``) do it as the result arrives: the
history holds the pointer from then on, so the prompt prefix never changes after it (the strategy
works on its kept history). The agent reads the file back when it needs what the preview lacks:
``ctxlab.fidelity.FactCheck`` records a ``ReadBack`` at each call that needed a fact sitting only in
an offloaded part, and ``ctxlab.pricing.replay_cost`` prices each as one more call (a model, not a bill).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..conversation import FIXED_TOKENS, Message
from ..i18n import N_, T
from .base import PER_RESULT, Strategy, param, register, works_on_param
from .per_result import RewritesEachResult, per_result_plan
from .plan import Plan
from .view import Budget, View, message_text

OFFLOADED = "ctxlab_offloaded"
"""The ``extra`` key of an offloaded copy: the path written, the original message's tokens."""
DEEP_AGENTS_LIMIT = 20_000
"""Deep Agents' ``tool_token_limit_before_evict`` default, in tokens."""
CHARS_PER_TOKEN = 4
"""Characters per token of a preview, as Deep Agents sizes its own (``NUM_CHARS_PER_TOKEN``)."""
POINTER = ("[Tool result of {tokens:,} tokens saved to {path}; read the file for the rest. Preview:]")
TAIL_MARK = "[...]"


def preview_text(text: str, tokens: int, tail: bool) -> str:
    """About ``tokens`` tokens of ``text``: its start and end (``tail``) or its start only."""
    chars = tokens * CHARS_PER_TOKEN
    if len(text) <= chars:
        return text
    if not tail:
        return text[:chars]
    half = chars // 2
    return text[:half] + "\n" + TAIL_MARK + "\n" + text[len(text) - (chars - half):]


def is_offloaded(m: Message) -> bool:
    """Whether ``m`` is an offloaded copy (a pointer and a preview)."""
    return OFFLOADED in m.extra


@register
@dataclass(frozen=True)
class Offload(RewritesEachResult, Strategy):
    """Write every tool result over ``min_tokens`` to a store and send a pointer with a preview of
    ``preview_tokens`` (its head and tail, as Deep Agents 0.7.32 shows 5 lines of each, or its head only),
    as Deep Agents evicts large results."""

    name: ClassVar[str] = "offload"
    cost_per_call: ClassVar[str] = PER_RESULT
    title: ClassVar[str] = N_("Offload large results to files")
    summary: ClassVar[str] = N_("Writes each large tool result to a file and sends a pointer with a short preview "
                                "(Manus, Cursor, Deep Agents); a fact outside the preview costs a modelled read-back "
                                "call.")
    scaling: ClassVar[str] = N_("min_tokens: a tenth of the budget's message room when that is below Deep Agents' "
                                "20,000.")
    min_tokens: int = param(DEEP_AGENTS_LIMIT, min=1, max=10_000_000,
                            help=N_("Offload a tool result over this many tokens (Deep Agents' "
                                    "tool_token_limit_before_evict: 20,000)."))
    preview_tokens: int = param(200, min=0, max=1_000_000,
                                help=N_("Tokens of the result kept in the prompt as a preview (4 characters a "
                                        "token)."))
    preview_tail: bool = param(True, help=N_("The preview shows the result's end as well as its start, as Deep "
                                             "Agents does; off: its start only."))
    path: str = param("/large_tool_results/{tool_call_id}",
                      help=N_("Where the result is written; {tool_call_id} becomes the call's identifier (Deep "
                              "Agents' path)."))
    works_on: str = works_on_param("kept_history")

    @classmethod
    def budget_scaled(cls, budget: Budget) -> dict[str, Any]:
        """``min_tokens`` at a tenth of the message room when that is smaller than the default."""
        return {"min_tokens": max(min(DEEP_AGENTS_LIMIT, budget.available // 10), 1)}

    def quick_idle(self, view: View, budget: Budget) -> bool:
        """Nothing to offload: the whole view is within ``min_tokens``, or no result would be offloaded."""
        return view.total <= self.min_tokens or super().quick_idle(view, budget)

    def _pointer(self, view: View, i: int) -> tuple[Message, int]:
        """The offloaded copy of result ``i`` and its tokens (made once per view and parameters)."""
        def make(m: Message) -> tuple[Message, int]:
            where = self.path.replace("{tool_call_id}", m.tool_call_id or f"message_{view.entries('origin')[i]}")
            head = POINTER.format(tokens=view.tokens_at(i), path=where)
            text = head + "\n" + preview_text(message_text(m), self.preview_tokens, self.preview_tail)
            new = Message(m.role, text, m.name, m.tool_calls, m.tool_call_id, m.is_error, m.id,
                          {**{k: v for k, v in m.extra.items() if k != FIXED_TOKENS},  # the pointer is counted
                           OFFLOADED: {"path": where, "tokens": view.tokens_at(i)}}, m.usage)
            return new, view.counter.message(new)
        return self._copy(view, "offload", (i, self.preview_tokens, self.preview_tail, self.path), i, make)

    def apply(self, view: View, budget: Budget) -> Plan:
        """Offload every result over ``min_tokens`` (pinned ones and those already offloaded stay)."""
        return per_result_plan(self, view, budget, lambda i: self._decide(view, i), ("offloaded", "tokens_offloaded"),
                               self._idle)

    def _decide(self, view: View, i: int) -> tuple[str, tuple[Message, int] | None]:
        """Result ``i``'s reason, and its pointer with its tokens when it is offloaded."""
        if i in view.pins:
            return T("pinned: never offloaded"), None
        if is_offloaded(view.message_at(i)):
            return T("offloaded earlier: its pointer stays"), None
        if view.tokens_at(i) > self.min_tokens:
            new, tokens = self._pointer(view, i)
            if tokens < view.tokens_at(i):
                return T("offloaded to {path}: {before:,} -> {after:,} tokens (pointer and preview)",
                         path=new.extra[OFFLOADED]["path"], before=view.tokens_at(i), after=tokens), (new, tokens)
            return T("sent as is: its pointer and preview would not be shorter"), None
        return T("sent as is: {tokens:,} tokens, within {limit:,}", tokens=view.tokens_at(i), limit=self.min_tokens), None

    def _idle(self, results: int) -> str:
        """Why nothing was offloaded."""
        if not results:
            return T("offload writes tool results to files and the conversation has none")
        return T("offload writes results over {limit:,} tokens to files (min_tokens); none of the {results:,} "
                 "results is, or each is already offloaded", limit=self.min_tokens, results=results)


@dataclass(frozen=True, slots=True)
class ReadBack:
    """A modelled read of an offloaded result: before call ``call`` (whose prompt held ``prompt_tokens``),
    the agent reads message ``source`` back (``read_tokens``, the whole result) for ``facts``. With
    ``refetch``, the result was not offloaded but gone: the agent runs the call that gave it again
    (``ctxlab.fidelity``; priced the same way, ``pricing.REFETCH_MODEL``)."""

    call: int
    index: int
    turn: int
    source: int
    read_tokens: int
    prompt_tokens: int
    facts: tuple[str, ...]
    refetch: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"call": self.call, "message": self.index, "source": self.source, "read_tokens": self.read_tokens,
                "prompt_tokens": self.prompt_tokens, "facts": list(self.facts)}


__all__ = ["DEEP_AGENTS_LIMIT", "OFFLOADED", "Offload", "ReadBack", "is_offloaded", "preview_text"]
