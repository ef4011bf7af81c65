"""OpenAI Responses API input items: ``message`` items (typed or "easy" role/content ones),
``function_call`` / ``function_call_output`` items and ``reasoning`` items.

Responses spreads one assistant turn over several items; reading gathers them back: an assistant
message item and the ``function_call`` items right after it form one assistant Message, and a
``reasoning`` item becomes a thinking Part of the assistant message that follows it.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import ShapeError, UnknownRoleError, shown, shown_keys
from ..conversation import Conversation, Message, Part, ToolCall
from ._base import Export, Format, ReadContext, check_arguments, check_not_empty, expect_dict, list_shape
from ._base import INTERNAL_EXTRA
from .anthropic import anthropic_only_note
from .tools import tools_to_responses

_ROLES = ("user", "assistant", "system", "developer")
_ITEM_TYPES = ("message", "function_call", "function_call_output", "reasoning")
_TEXT_TYPES = ("input_text", "output_text", "text")
_STRONG_PARTS = ("input_text", "output_text", "input_image")
_STRONG_ITEMS = frozenset({"function_call", "function_call_output", "reasoning"})
_THINKING = ("thinking", "redacted_thinking")


# ---------------------------------------------------------------- reading


def _part(raw: Any, ctx: ReadContext, index: int, path: tuple) -> Part:
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        raise ShapeError("a content part must be an object with a 'type'", where=ctx.where(index, *path))
    kind = raw["type"]
    rest = {k: v for k, v in raw.items() if k != "type"}
    if kind in _TEXT_TYPES:
        text = rest.pop("text", "")
        if not isinstance(text, str):
            raise ShapeError("'text' must be a string", where=ctx.where(index, *path, "text"))
        return Part("text", text, rest)
    if kind == "input_image":
        url = rest.pop("image_url", None)
        return Part("image", data={"url": url, **rest} if isinstance(url, str) else rest)
    if kind == "refusal":
        return Part("refusal", str(rest.get("refusal", "")))
    ctx.unmodeled_part(index, kind)
    return Part(kind, data=rest)


def _content(value: Any, ctx: ReadContext, index: int, key: str) -> str | tuple[Part, ...]:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return tuple(_part(p, ctx, index, (key, k)) for k, p in enumerate(value))
    raise ShapeError(f"'{key}' must be a string or a list of parts, found {type(value).__name__}",
                     where=ctx.where(index, key))


def _required(item: dict, key: str, ctx: ReadContext, index: int, what: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise ShapeError(f"a {item.get('type')} item has no {key}", where=ctx.where(index, key), hint=what)
    return value


@dataclass
class _Reader:
    """Gathers items into messages: pending reasoning waits for the next assistant message, and
    ``open_call`` says whether the last message may take the next function_call."""

    ctx: ReadContext
    out: list[Message] = field(default_factory=list)
    thinking: list[Part] = field(default_factory=list)
    thinking_at: int = 0
    open_call: bool = False
    item_ids: list[int] = field(default_factory=list)

    def flush_thinking(self) -> None:
        """Reasoning that no assistant message follows becomes its own assistant message."""
        if self.thinking:
            self.out.append(Message("assistant", tuple(self.thinking)))
            self.ctx.notes.append(f"item {self.thinking_at}: reasoning not followed by an assistant message "
                                  "is kept as an assistant message of its own")
            self.thinking = []

    def take_thinking(self, body: str | tuple[Part, ...]) -> str | tuple[Part, ...]:
        """Content with the pending reasoning in front of it."""
        if not self.thinking:
            return body
        parts = tuple(self.thinking) + (body if isinstance(body, tuple) else ((Part("text", body),) if body else ()))
        self.thinking = []
        return parts

    def message(self, it: dict, i: int) -> None:
        """A message item (typed or easy)."""
        role = it.get("role")
        if role not in _ROLES:
            raise UnknownRoleError(f"unknown role {shown(role)}", where=self.ctx.where(i, "role"),
                                   hint=f"Responses roles are {', '.join(_ROLES)}; or pick the format explicitly")
        content = it.get("content")
        check_not_empty(role, content, False, self.ctx, i)
        body = _content(content, self.ctx, i, "content")
        extra = {k: v for k, v in it.items() if k not in ("type", "role", "content", "id")}
        if role == "developer":
            role, extra = "system", {**extra, "openai_role": "developer"}
        mid = it.get("id") if isinstance(it.get("id"), str) else None
        if role == "assistant":
            body = self.take_thinking(body)
        else:
            self.flush_thinking()
        self.out.append(Message(role, body, id=mid, extra=extra))
        self.open_call = role == "assistant"

    def function_call(self, it: dict, i: int) -> None:
        """A function_call item: joins the assistant message right before it, or starts one."""
        cid = _required(it, "call_id", self.ctx, i, "Every call needs the call_id its output refers to")
        name = _required(it, "name", self.ctx, i, "Give the name of the function called")
        call = ToolCall(cid, name, check_arguments(it.get("arguments"), self.ctx, i, "arguments"))
        self.ctx.unkept_call_fields(i, it, ("type", "call_id", "name", "arguments", "id"))
        if "id" in it:
            self.item_ids.append(i)
        if self.open_call and not self.thinking and self.out and self.out[-1].role == "assistant":
            self.out[-1] = replace(self.out[-1], tool_calls=self.out[-1].tool_calls + (call,))
        else:
            self.out.append(Message("assistant", self.take_thinking(""), tool_calls=(call,)))
        self.open_call = True

    def output(self, it: dict, i: int) -> None:
        """A function_call_output item as a tool message."""
        self.flush_thinking()
        cid = _required(it, "call_id", self.ctx, i, "Set it to the call_id of the function_call it answers")
        self.ctx.unkept_call_fields(i, it, ("type", "call_id", "output", "id"))
        if "id" in it:
            self.item_ids.append(i)
        self.out.append(Message("tool", _content(it.get("output", ""), self.ctx, i, "output"), tool_call_id=cid))
        self.open_call = False

    def reasoning(self, it: dict, i: int) -> None:
        """A reasoning item: its summary text becomes a thinking Part, the item is kept in data."""
        summary = it.get("summary", [])
        if not isinstance(summary, list):
            raise ShapeError("a reasoning summary must be a list", where=self.ctx.where(i, "summary"))
        texts = [s.get("text", "") for s in summary if isinstance(s, dict)]
        if not texts and isinstance(it.get("content"), list):
            texts = [c.get("text", "") for c in it["content"] if isinstance(c, dict)]
        if not self.thinking:
            self.thinking_at = i
        self.thinking.append(Part("thinking", "\n".join(str(t) for t in texts),
                                  {k: v for k, v in it.items() if k != "type"}))
        self.open_call = False


def read(items: list[Any], ctx: ReadContext) -> list[Message]:
    """Read Responses API input items into ctxlab messages."""
    reader = _Reader(ctx)
    for i, raw in enumerate(items):
        it = expect_dict(raw, ctx, i)
        kind = it.get("type", "message" if "role" in it else None)
        if kind not in _ITEM_TYPES:
            raise ShapeError(f"item type {shown(kind)} is not supported", where=ctx.where(i, "type"),
                             hint=f"ctxlab reads Responses items of type {', '.join(_ITEM_TYPES)}")
        getattr(reader, "output" if kind == "function_call_output" else kind)(it, i)
    reader.flush_thinking()
    if reader.item_ids:
        ctx.notes.append(f"item(s) {', '.join(map(str, reader.item_ids))}: function_call item ids are not kept "
                         "(the calls keep their call_id)")
    return reader.out


def detect(items: list[Any]) -> int:
    """Score 3 for function_call / function_call_output / reasoning items or input_text /
    output_text parts, 2 for typed message items, 0 otherwise."""
    shape = list_shape(items) if items else None
    if shape is None or not shape.dicts:
        return 0
    if shape.types & _STRONG_ITEMS:
        return 3
    for i, content in shape.lists:
        if items[i].get("type") in ("message", None) and any(isinstance(p, dict) and p.get("type") in _STRONG_PARTS
                                                             for p in content):
            return 3
    return 2 if "message" in shape.types else 0


# ---------------------------------------------------------------- writing


def _text_out(p: Part, i: int, text_type: str, notes: list[str]) -> dict:
    kept = ("annotations", "logprobs") if text_type == "output_text" else ()
    left = sorted(k for k, v in p.data.items() if k not in kept and v)
    if left:
        notes.append(f"message {i}: text-part fields {shown_keys(left)} have no place in Responses; left out")
    return {"type": text_type, "text": p.text, **{k: v for k, v in p.data.items() if k in kept}}


def _image_out(p: Part, i: int, notes: list[str]) -> dict | None:
    data = dict(p.data)
    url, file_id = data.pop("url", None), data.pop("file_id", None)
    out: dict[str, Any] = {"type": "input_image", "detail": data.pop("detail", None) or "auto"}
    if url is None and file_id is None:
        notes.append(f"message {i}: an image with neither a URL nor a file_id has no place in Responses; left out")
        return None
    out.update({k: v for k, v in (("image_url", url), ("file_id", file_id)) if v is not None})
    if any(data.values()):
        notes.append(f"message {i}: image fields {shown_keys(sorted(data))} have no place in Responses; left out")
    return out


def _part_out(p: Part, i: int, text_type: str, notes: list[str]) -> dict | None:
    if p.type == "text":
        return _text_out(p, i, text_type, notes)
    if p.type == "image":
        return _image_out(p, i, notes)
    if p.type == "refusal":
        return {"type": "refusal", "refusal": p.text}
    return {"type": p.type, **p.data}


def _message_item(m: Message, i: int, notes: list[str]) -> dict:
    text_type = "output_text" if m.role == "assistant" else "input_text"
    parts = [q for q in (_part_out(p, i, text_type, notes) for p in m.parts if p.type not in _THINKING) if q]
    item: dict[str, Any] = {"type": "message", "role": m.extra.get("openai_role", m.role), "content": parts}
    if m.id is not None and m.id.startswith("msg_"):
        item["id"] = m.id
    if m.extra.get("status") in _STATUSES:  # a message item's own field
        item["status"] = m.extra["status"]
    return item


_STATUSES = ("in_progress", "completed", "incomplete")


def _reasoning_item(p: Part, i: int, notes: list[str]) -> dict | None:
    """A thinking Part read from Responses goes back as its reasoning item; thinking of other
    providers (an Anthropic signature, no reasoning id) cannot be sent to OpenAI."""
    if p.type != "thinking" or "signature" in p.data or not isinstance(p.data.get("id"), str):
        notes.append(f"message {i}: {p.type} of another provider cannot be sent as a Responses reasoning item; "
                     "left out")
        return None
    summary = p.data["summary"] if "summary" in p.data else [{"type": "summary_text", "text": p.text}]
    return {"type": "reasoning", **p.data, "summary": summary}


def _assistant_items(m: Message, i: int, notes: list[str]) -> list[dict]:
    items = [r for r in (_reasoning_item(p, i, notes) for p in m.parts if p.type in _THINKING) if r]
    if any(p.type not in _THINKING for p in m.parts) or not (m.tool_calls or items):
        items.append(_message_item(m, i, notes))
    items += [{"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments}
              for c in m.tool_calls]
    return items


def _output_item(m: Message, i: int, notes: list[str]) -> dict:
    if m.is_error:
        notes.append(f"message {i}: the tool error flag has no field in Responses; the result text is kept")
    output = m.content if isinstance(m.content, str) else [
        q for q in (_part_out(p, i, "input_text", notes) for p in m.content) if q]
    return {"type": "function_call_output", "call_id": m.tool_call_id, "output": output}


def _field_notes(m: Message, i: int, call_names: dict[str, str], notes: list[str]) -> None:
    if m.name is not None:  # a tool result's name is noted without its value, so one note lists them all
        value = "" if m.role == "tool" else f" ({shown(m.name)})"
        notes.append(f"message {i}: the name field{value} has no place in Responses; left out")
    fields = sorted(k for k, v in m.extra.items() if k not in INTERNAL_EXTRA and v is not None
                    and not (k == "status" and v in _STATUSES and m.role != "tool"))
    if fields:
        notes.append(f"message {i}: field(s) {shown_keys(fields)} have no place in Responses; left out")
    anthropic_only_note(m, i, "Responses", notes)


def _joins(last: dict, first: dict) -> bool:
    """Whether reading gathers ``first`` into the assistant message that ``last`` ends."""
    if last["type"] == "reasoning":
        return True
    return first["type"] == "function_call" and (last["type"] == "function_call" or last.get("role") == "assistant")


def write(conv: Conversation) -> Export:
    """The conversation as a Responses API request body (``input`` items)."""
    notes: list[str] = []
    items: list[dict] = []
    call_names = {c.id: c.name for m in conv.messages for c in m.tool_calls}
    for i, m in enumerate(conv.messages):
        _field_notes(m, i, call_names, notes)
        if m.role == "tool":
            items.append(_output_item(m, i, notes))
            continue
        new = _assistant_items(m, i, notes) if m.role == "assistant" else [_message_item(m, i, notes)]
        if m.role == "assistant" and items and _joins(items[-1], new[0]):
            notes.append(f"messages {i - 1} and {i}: two assistant messages in a row read back as one in Responses")
        items += new
    body: dict[str, Any] = {"model": conv.model} if conv.model else {}
    body["input"] = items
    if conv.tools:
        body["tools"] = tools_to_responses(conv.tools)
    written = {it.get("id") for it in items if it["type"] == "message"}
    dropped = [str(i) for i, m in enumerate(conv.messages) if m.id is not None and m.id not in written]
    if dropped:
        notes.append(f"message ids (messages {', '.join(dropped)}) have no place in Responses; left out")
    return Export(body, tuple(notes))


FORMAT = Format("responses", "OpenAI Responses API input items", detect, read, write)
