"""What every format module shares: the reader context (error positions, notes) and the
registry entry a format adds itself with."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import EmptyMessageError, ShapeError, ToolArgumentsError, UnknownRoleError
from ..conversation import Conversation, Message, Part


#: keys ctxlab itself puts in Message.extra; writers never copy them out as provider fields
INTERNAL_EXTRA = ("top_level", "openai_role", "anthropic", "ctxlab_summary")


@dataclass
class ReadContext:
    """Where the messages sit in the input (a JSON path prefix) and what import noted."""

    base: str = "$"
    notes: list[str] = field(default_factory=list)

    def where(self, index: int, *path: str | int) -> str:
        """``message 3 ($.messages[3].tool_calls[0])`` for error messages."""
        jp = f"{self.base}[{index}]"
        for p in path:
            jp += f"[{p}]" if isinstance(p, int) else f".{p}"
        return f"message {index} ({jp})"


@dataclass(frozen=True)
class Export:
    """The result of writing a conversation: JSON-ready data plus notes on anything the target
    format has no place for (each note names the messages concerned)."""

    data: Any
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Format:
    """A conversation format: how to recognise it, read its message list, and write it.

    ``detect`` scores a message list (0 = not this format); the highest score wins.
    ``read(items, ctx)`` returns messages; ``write(conversation)`` returns an Export.
    """

    name: str
    title: str
    detect: Callable[[list[Any]], int]
    read: Callable[[list[Any], ReadContext], list[Message]]
    write: Callable[[Conversation], Export] | None = None


def expect_dict(item: Any, ctx: ReadContext, index: int) -> dict:
    """The item as a dict, or a ShapeError naming its position."""
    if not isinstance(item, dict):
        raise ShapeError(
            f"expected a message object, found {type(item).__name__}",
            where=ctx.where(index),
            hint="Each message must be a JSON object with a role",
        )
    return item


def role_of(item: dict, roles: tuple[str, ...], ctx: ReadContext, index: int, hint: str) -> str:
    """The item's role, or an UnknownRoleError naming the message and the roles the format has."""
    role = item.get("role")
    if role not in roles:
        raise UnknownRoleError(f"unknown role {role!r}", where=ctx.where(index, "role"), hint=hint)
    return role


def check_arguments(text: Any, ctx: ReadContext, index: int, *path: str | int) -> str:
    """Tool-call arguments as original text; they must parse to a JSON object."""
    if isinstance(text, dict):
        # some producers send an object instead of a string: keep its compact form
        return json.dumps(text, ensure_ascii=False, separators=(",", ":"))
    if text is None:
        return "{}"
    if not isinstance(text, str):
        raise ToolArgumentsError(
            f"tool-call arguments must be a JSON string, found {type(text).__name__}",
            where=ctx.where(index, *path),
        )
    if not text.strip():
        return text
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise ToolArgumentsError(
            f"tool-call arguments are not valid JSON ({e.msg} at column {e.colno}): {text[:60]!r}",
            where=ctx.where(index, *path),
            hint="Fix the arguments text; a model that emitted it would have been rejected too",
        ) from None
    if not isinstance(value, dict):
        raise ToolArgumentsError(
            f"tool-call arguments must be a JSON object, found {type(value).__name__}",
            where=ctx.where(index, *path),
        )
    return text


def text_or_parts(content: Any, ctx: ReadContext, index: int, parse_part: Callable) -> str | tuple[Part, ...]:
    """Content as a string, or as parts parsed by the format's ``parse_part``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return tuple(parse_part(p, ctx, index, k) for k, p in enumerate(content))
    raise ShapeError(
        f"content must be a string or a list of parts, found {type(content).__name__}",
        where=ctx.where(index, "content"),
    )


def check_not_empty(role: str, content: Any, has_calls: bool, ctx: ReadContext, index: int) -> None:
    """A message with neither content nor tool calls is an input error. Tool results may be
    empty (a tool can return nothing), and so may an empty string: the validator reports
    those where a provider rejects them."""
    if role != "tool" and not has_calls and content is None:
        raise EmptyMessageError(
            f"{role} message has neither content nor tool calls",
            where=ctx.where(index),
            hint="Give it content, or remove it",
        )
