"""OpenAI Chat Completions messages: parallel ``tool_calls``, ``name`` fields, content parts,
the ``developer`` role, and the legacy ``function_call`` / ``role: "function"`` form.

DeepSeek's ``reasoning_content`` on an assistant message (thinking mode; other OpenAI-compatible
servers use the same field) is read into a leading ``thinking`` part, so it is counted, validated
and kept like an Anthropic thinking block, and written back as ``reasoning_content``."""
from __future__ import annotations

from typing import Any

from ..errors import ShapeError, shown, shown_keys
from ..conversation import Conversation, Message, Part, ToolCall
from ._base import (INTERNAL_EXTRA, Export, Format, ReadContext, check_arguments, check_not_empty, expect_dict,
                    role_of, text_or_parts)
from .tools import tools_to_openai

_KNOWN_KEYS = {"role", "content", "name", "tool_calls", "tool_call_id", "function_call", "reasoning_content"}
_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


def _part(raw: Any, ctx: ReadContext, index: int, k: int) -> Part:
    if isinstance(raw, str):
        return Part("text", raw)
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        raise ShapeError("a content part must be an object with a 'type' string",
                         where=ctx.where(index, "content", k))
    kind = raw["type"]
    if kind == "text":
        return Part("text", str(raw.get("text", "")))
    if kind == "image_url":
        img = raw.get("image_url")
        img = {"url": img} if isinstance(img, str) else img
        if not isinstance(img, dict) or not isinstance(img.get("url"), str):
            raise ShapeError("an image_url part needs a URL string",
                             where=ctx.where(index, "content", k, "image_url"))
        return Part("image", data=dict(img))
    if kind == "refusal":
        return Part("refusal", str(raw.get("refusal", "")))
    ctx.unmodeled_part(index, kind)
    return Part(kind, data={key: v for key, v in raw.items() if key != "type"})


def _tool_calls(raw: Any, ctx: ReadContext, index: int) -> tuple[ToolCall, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ShapeError("tool_calls must be a list", where=ctx.where(index, "tool_calls"))
    calls = []
    for k, tc in enumerate(raw):
        if not isinstance(tc, dict) or not isinstance(tc.get("function"), dict):
            raise ShapeError("a tool call needs a 'function' object with a name and arguments",
                             where=ctx.where(index, "tool_calls", k))
        fn = tc["function"]
        if not isinstance(fn.get("name"), str) or not fn["name"]:
            raise ShapeError("a tool call has no function name",
                             where=ctx.where(index, "tool_calls", k, "function", "name"))
        if not isinstance(tc.get("id"), str) or not tc["id"]:
            raise ShapeError("a tool call has no id",
                             where=ctx.where(index, "tool_calls", k, "id"),
                             hint="Every tool call needs the id its result refers to")
        args = check_arguments(fn.get("arguments"), ctx, index, "tool_calls", k, "function", "arguments")
        calls.append(ToolCall(tc["id"], fn["name"], args))
    return tuple(calls)


def _reasoning(m: dict, role: str, ctx: ReadContext, i: int) -> str | None:
    """The ``reasoning_content`` of an assistant message (None when absent or null)."""
    value = m.get("reasoning_content")
    if value is None:
        return None
    if role != "assistant" or not isinstance(value, str):
        problem = ("reasoning_content belongs on assistant messages" if role != "assistant"
                   else f"reasoning_content must be a string, found {type(value).__name__}")
        raise ShapeError(problem, where=ctx.where(i, "reasoning_content"))
    return value


def read(items: list[Any], ctx: ReadContext) -> list[Message]:
    """Read OpenAI Chat Completions messages."""
    out: list[Message] = []
    pending_legacy: list[tuple[str, str]] = []  # (name, synthesized id) of unanswered function_calls
    for i, raw in enumerate(items):
        m = expect_dict(raw, ctx, i)
        role = role_of(m, _ROLES, ctx, i, f"OpenAI roles are {', '.join(_ROLES)}; or pick the format explicitly")
        content = m.get("content")
        calls = _tool_calls(m.get("tool_calls"), ctx, i) if role == "assistant" else ()
        extra = {k: v for k, v in m.items() if k not in _KNOWN_KEYS}
        if role == "assistant" and isinstance(m.get("function_call"), dict):
            fc = m["function_call"]
            cid = f"call_legacy_{i}"
            args = check_arguments(fc.get("arguments"), ctx, i, "function_call", "arguments")
            calls = calls + (ToolCall(cid, str(fc.get("name", "")), args),)
            pending_legacy.append((str(fc.get("name", "")), cid))
            ctx.notes.append(f"message {i}: legacy function_call given the id {cid}")
        reasoning = _reasoning(m, role, ctx, i)
        check_not_empty(role, content, bool(calls) or reasoning is not None, ctx, i)
        body = text_or_parts(content if content is not None else "", ctx, i, _part)
        if reasoning is not None:
            body = (Part("thinking", reasoning),) + (body if isinstance(body, tuple) else
                                                     ((Part("text", body),) if body else ()))
        name = m.get("name")
        if name is not None and not isinstance(name, str):
            raise ShapeError(f"name must be a string, found {type(name).__name__}", where=ctx.where(i, "name"))
        if role == "developer":
            role, extra = "system", {**extra, "openai_role": "developer"}
        if role == "function":
            match = next((p for p in pending_legacy if p[0] == name), None)
            if match:
                pending_legacy.remove(match)
                cid = match[1]
            else:
                cid = f"call_legacy_unmatched_{i}"
                ctx.notes.append(f"message {i}: function result {shown(name)} follows no function_call")
            out.append(Message("tool", body, name=name, tool_call_id=cid, extra=extra))
            continue
        if role == "tool":
            tcid = m.get("tool_call_id")
            if not isinstance(tcid, str) or not tcid:
                raise ShapeError("a tool message has no tool_call_id", where=ctx.where(i, "tool_call_id"),
                                 hint="Set it to the id of the tool call this result answers")
            out.append(Message("tool", body, name=name, tool_call_id=tcid, extra=extra))
            continue
        out.append(Message(role, body, name=name, tool_calls=calls, extra=extra))
    return out


def detect(items: list[Any]) -> int:
    """Score: role-keyed messages with OpenAI-only features score high."""
    if not items or not all(isinstance(m, dict) and "role" in m for m in items):
        return 0
    score = 1
    for m in items:
        if m.get("role") in ("tool", "function", "developer") or "tool_calls" in m or "function_call" in m:
            score = 3
        if m.get("role") not in _ROLES:
            return 0
        c = m.get("content")
        if isinstance(c, list) and any(isinstance(p, dict) and p.get("type") in ("tool_use", "tool_result", "thinking") for p in c):
            return 0
    return score


def _part_out(p: Part, i: int, dropped: list[str]) -> dict | None:
    if p.type == "text":
        return {"type": "text", "text": p.text}
    if p.type == "image":
        img = {k: v for k, v in p.data.items() if k in ("url", "detail")}
        left = sorted(set(p.data) - set(img))
        if left:
            dropped.append(f"message {i}: image fields {shown_keys(left)} have no place in OpenAI Chat; left out")
        return {"type": "image_url", "image_url": img}
    if p.type == "refusal":
        return {"type": "refusal", "refusal": p.text}
    if p.type == "thinking" and not p.data.get("signature"):
        return None  # written as the message's reasoning_content
    if p.type in ("thinking", "redacted_thinking"):
        dropped.append(f"message {i}: {p.type} block has no place in OpenAI Chat messages; left out")
        return None
    return {"type": p.type, **p.data}


def message_to_openai(m: Message, i: int, notes: list[str]) -> dict:
    """One message as an OpenAI Chat Completions dict (arguments text kept verbatim)."""
    role = m.extra.get("openai_role", m.role)
    extra = {k: v for k, v in m.extra.items() if k not in INTERNAL_EXTRA}
    out: dict[str, Any] = {"role": role}
    if isinstance(m.content, str):
        out["content"] = m.content if (m.content or not m.tool_calls) else None
    else:
        parts = [q for q in (_part_out(p, i, notes) for p in m.content) if q is not None]
        if m.role in ("assistant", "tool") and len(parts) == 1 and parts[0]["type"] == "text":
            out["content"] = parts[0]["text"]  # what Anthropic-born single text blocks become
        elif not parts:
            out["content"] = None if m.tool_calls else ""
        else:
            out["content"] = parts
    reasoning = [p.text for p in m.parts if p.type == "thinking" and not p.data.get("signature")]
    if reasoning and m.role == "assistant":
        out["reasoning_content"] = "".join(reasoning)
    if m.name is not None:
        out["name"] = m.name
    if m.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in m.tool_calls
        ]
    if m.role == "tool":
        out["tool_call_id"] = m.tool_call_id
        if m.is_error:
            notes.append(f"message {i}: the tool error flag has no field in OpenAI Chat; the result text is kept")
    for k, v in extra.items():
        out.setdefault(k, v)
    return out


def write(conv: Conversation) -> Export:
    """The conversation as an OpenAI Chat Completions request body."""
    notes: list[str] = []
    body: dict[str, Any] = {}
    if conv.model:
        body["model"] = conv.model
    body["messages"] = [message_to_openai(m, i, notes) for i, m in enumerate(conv.messages)]
    if conv.tools:
        body["tools"] = tools_to_openai(conv.tools)
    return Export(body, tuple(notes))


FORMAT = Format("openai", "OpenAI Chat Completions", detect, read, write)
