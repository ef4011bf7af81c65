"""Context quarantine: a task split into sub-agent contexts, one per independent thread, instead
of one shared context that carries every thread's tool results into every other's.

Two turns belong to the same thread when they share an identifier (an order id, a booking
reference...) in the user's request or in tool-call arguments; threads are the connected groups
of turns. Each sub-agent context holds the preamble (system prompt), its thread's turns, and only
the tools its thread calls (all tools when it calls none).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..conversation import Conversation
from ..segments import segment
from .observations import argument_identifiers, identifiers_in


def threads(conv: Conversation) -> list[list[int]]:
    """Turn numbers grouped into independent threads, in order of their first turn."""
    seg = segment(conv.messages)
    parent = list(range(len(seg.turns)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    owner: dict[str, int] = {}
    for k, (start, end) in enumerate(seg.turns):
        ids: set[str] = set()
        for m in conv.messages[start:end]:
            if m.role == "user":
                ids.update(identifiers_in(m.text))
            for c in m.tool_calls:
                ids.update(argument_identifiers(c))
        for token in ids:
            if token in owner:
                a, b = root(owner[token]), root(k)
                parent[max(a, b)] = min(a, b)
            else:
                owner[token] = k
    groups: dict[int, list[int]] = {}
    for k in range(len(seg.turns)):
        groups.setdefault(root(k), []).append(k)
    return sorted(groups.values())


def split_into_subagents(conv: Conversation) -> list[Conversation]:
    """One conversation per independent thread (see the module docstring); a conversation with one
    thread gives a list of one. Each has ``metadata["subagent"]`` = {"index", "turns",
    "source_messages"} (indexes in ``conv``) and keeps the facts its messages contain."""
    seg = segment(conv.messages)
    preamble = list(range(seg.preamble[0], seg.preamble[1]))
    out = []
    for k, turns in enumerate(threads(conv)):
        indexes = preamble + [i for t in turns for i in range(*seg.turns[t])]
        messages = tuple(conv.messages[i] for i in indexes)
        called = {c.name for m in messages for c in m.tool_calls}
        tools = tuple(t for t in conv.tools if t.name in called) or conv.tools
        texts = [m.text for m in messages] + [c.arguments for m in messages for c in m.tool_calls]
        facts = tuple(f for f in conv.facts if any(f in t for t in texts))
        meta: dict[str, Any] = {**conv.metadata, "subagent": {"index": k, "turns": turns, "source_messages": indexes}}
        title = conv.metadata.get("title")
        if title:
            meta["title"] = f"{title}: sub-agent {k + 1}"
        out.append(replace(conv, messages=messages, tools=tools, facts=facts, metadata=meta))
    return out


@dataclass(frozen=True)
class QuarantineReport:
    """Tokens of the shared context against each sub-agent's context (tool definitions included)."""

    shared_tokens: int
    subagent_tokens: tuple[int, ...]
    subagents: tuple[Conversation, ...]

    @property
    def largest(self) -> int:
        """The largest sub-agent context: what one model call must hold at most."""
        return max(self.subagent_tokens, default=0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"shared_tokens": self.shared_tokens, "subagent_tokens": list(self.subagent_tokens),
                "largest": self.largest,
                "subagents": [c.metadata["subagent"] for c in self.subagents]}


def quarantine_report(conv: Conversation, model: str | None = None) -> QuarantineReport:
    """Split ``conv`` and count the shared context and each sub-agent's, as OpenAI bills them."""
    from ..tokens import count_tokens
    model = model or conv.model or "gpt-4o"
    parts = split_into_subagents(conv)
    return QuarantineReport(count_tokens(conv, model).total, tuple(count_tokens(p, model).total for p in parts),
                            tuple(parts))
