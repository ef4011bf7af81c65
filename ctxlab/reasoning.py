"""Reasoning a provider requires back: which messages must keep it.

Reasoning is a ``thinking`` part of an assistant message (DeepSeek's ``reasoning_content`` and
Anthropic's thinking blocks are read into it; ``redacted_thinking`` counts for Anthropic). What the
providers require, from their documentation:

* **DeepSeek, thinking mode** (api-docs.deepseek.com, guides/thinking_mode, "tool calls"): an
  assistant message that made tool calls must carry its ``reasoning_content`` in every later
  request, or the API answers 400 ("The reasoning_content in the thinking mode must be passed back
  to the API"). Reasoning of an assistant message without tool calls is not needed (the API drops
  it from earlier turns), so a strategy may drop it.
* **Anthropic, extended thinking** (docs.claude.com, build-with-claude/extended-thinking, "preserving
  thinking blocks"): during tool use the thinking blocks of the assistant turn in progress (the
  assistant messages since the last user message, whose tool calls are being answered) must be
  sent back whole, signature included; a turn's last assistant message must start with one. Thinking
  blocks of earlier turns may be left out (the API strips them).

``required_reasoning(messages, provider)`` gives the indexes whose reasoning must survive any
strategy; ``lost_reasoning(messages, plan_messages, origin, provider)`` the ones a plan lost.
"""
from __future__ import annotations

from typing import Sequence

from .conversation import Message, Part

PROVIDERS = ("deepseek", "anthropic")
_ANTHROPIC_KINDS = ("thinking", "redacted_thinking")


def reasoning_parts(m: Message, provider: str = "deepseek") -> tuple[Part, ...]:
    """The reasoning parts of a message (for Anthropic, redacted thinking too)."""
    kinds = _ANTHROPIC_KINDS if provider == "anthropic" else ("thinking",)
    return tuple(p for p in m.parts if p.type in kinds)


def _last_user(messages: Sequence[Message]) -> int:
    return max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)


def needs_reasoning(messages: Sequence[Message], provider: str) -> list[int]:
    """Indexes of the assistant messages the provider wants reasoning on (when thinking is on),
    whether or not they carry it."""
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r}; known: {', '.join(PROVIDERS)}")
    start = _last_user(messages) + 1 if provider == "anthropic" else 0
    return [i for i in range(start, len(messages))
            if messages[i].role == "assistant" and messages[i].tool_calls]


def required_reasoning(messages: Sequence[Message], provider: str = "deepseek") -> set[int]:
    """Indexes of messages whose reasoning parts a strategy must keep as they are: the messages
    the provider wants reasoning on that carry some. Pure: reads ``messages`` only."""
    return {i for i in needs_reasoning(messages, provider) if reasoning_parts(messages[i], provider)}


def lost_reasoning(messages: Sequence[Message], kept: Sequence[Message], origin: Sequence[int | None],
                   provider: str = "deepseek") -> list[int]:
    """Original indexes of required messages that reach ``kept`` with their reasoning changed or
    gone; ``origin[j]`` is the original index of ``kept[j]`` (None for inserted messages). A
    message dropped whole is not lost reasoning: its tool calls went with it."""
    required = required_reasoning(messages, provider)
    return sorted({o for o, m in zip(origin, kept) if o in required
                   and reasoning_parts(m, provider) != reasoning_parts(messages[o], provider)})


__all__ = ["PROVIDERS", "lost_reasoning", "needs_reasoning", "reasoning_parts", "required_reasoning"]
