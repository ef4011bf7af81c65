"""Tiny message builders for readable tests."""
from __future__ import annotations

from ctxlab.conversation import Message, ToolCall


def system(text: str = "Be brief.") -> Message:
    """A system message."""
    return Message("system", text)


def user(text: str = "Hi") -> Message:
    """A user message."""
    return Message("user", text)


def assistant(text: str = "", *call_ids: str) -> Message:
    """An assistant message calling tool ``t_<id>`` for each id."""
    return Message("assistant", text, tool_calls=tuple(ToolCall(c, f"t_{c}") for c in call_ids))


def tool(call_id: str | None, text: str = "ok", is_error: bool = False) -> Message:
    """A tool result for ``call_id``."""
    return Message("tool", text, tool_call_id=call_id, is_error=is_error)
