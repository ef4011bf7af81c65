"""OpenAI Chat Completions messages: parallel ``tool_calls``, ``name`` fields, content parts,
the ``developer`` role, and the legacy ``function_call`` / ``role: "function"`` form.

DeepSeek's ``reasoning_content`` on an assistant message (thinking mode; other OpenAI-compatible
servers use the same field) is read into a leading ``thinking`` part, so it is counted, validated
and kept like an Anthropic thinking block, and written back as ``reasoning_content``."""
from __future__ import annotations

from itertools import repeat
from typing import Any

from ..errors import ExportError, ShapeError, shown, shown_keys
from ..conversation import _EMPTY, Conversation, Message, Part, ToolCall
from ..i18n import T
from ._base import (INTERNAL_EXTRA, Export, Format, ReadContext, check_arguments, check_not_empty, expect_dict,
                    list_shape, role_of, text_or_parts)
from ._base import model_as_written
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
        if not isinstance(raw.get("text", ""), str):  # never a Python repr of a number or a list
            raise ShapeError(f"a text part's text must be a string, found {type(raw['text']).__name__}",
                             where=ctx.where(index, "content", k, "text"))
        return Part("text", raw.get("text", ""), data={key: v for key, v in raw.items() if key not in ("type", "text")})
    if kind == "image_url":
        img = raw.get("image_url")
        img = {"url": img} if isinstance(img, str) else img
        if not isinstance(img, dict) or not isinstance(img.get("url"), str):
            raise ShapeError("an image_url part needs a URL string",
                             where=ctx.where(index, "content", k, "image_url"))
        return Part("image", data=dict(img))
    if kind == "refusal":
        if not isinstance(raw.get("refusal", ""), str):
            raise ShapeError(f"a refusal part's refusal must be a string, found {type(raw['refusal']).__name__}",
                             where=ctx.where(index, "content", k, "refusal"))
        return Part("refusal", raw.get("refusal", ""))
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
            raise ShapeError(T("a tool call needs a 'function' object with a name and arguments"),
                             where=ctx.where(index, "tool_calls", k))
        fn = tc["function"]
        if not isinstance(fn.get("name"), str) or not fn["name"]:
            raise ShapeError(T("a tool call has no function name"),
                             where=ctx.where(index, "tool_calls", k, "function", "name"))
        if not isinstance(tc.get("id"), str) or not tc["id"]:
            raise ShapeError(T("a tool call has no id"),
                             where=ctx.where(index, "tool_calls", k, "id"),
                             hint=T("Every tool call needs the id its result refers to"))
        args = check_arguments(fn.get("arguments"), ctx, index, "tool_calls", k, "function", "arguments")
        ctx.unkept_call_fields(index, tc, ("id", "type", "function"))
        ctx.unkept_call_fields(index, fn, ("name", "arguments"))
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


_ROLE_HINT = f"OpenAI roles are {', '.join(_ROLES)}; or pick the format explicitly"
#: a message of only these keys, with string content, is read by the short path (half a million
#: short chat messages in a 50 MB file); it makes the Message the full path would
_PLAIN_KEYS = frozenset({"role", "content"})
_PLAIN_ROLES = {r: r for r in ("system", "user", "assistant")}  # one shared string per role


def _all_plain(items: list[Any]) -> bool:
    """Whether every item is a plain chat message: a role of system, user or assistant and string
    content, nothing else (a file of half a million short messages)."""
    shape = list_shape(items)
    return (shape.with_role and shape.keys <= _PLAIN_KEYS and shape.roles is not None
            and shape.roles <= _PLAIN_ROLES.keys() and shape.content_types == _STR_ONLY)


_STR_ONLY = frozenset({str})


def read(items: list[Any], ctx: ReadContext) -> list[Message]:
    """Read OpenAI Chat Completions messages."""
    if items and _all_plain(items):  # the same messages the loop below makes, without its per-item steps
        roles, contents = map(dict.get, items, repeat("role")), map(dict.get, items, repeat("content"))
        return list(map(Message, map(_PLAIN_ROLES.__getitem__, roles), contents))
    out: list[Message] = []
    pending_legacy: list[tuple[str, str]] = []  # (name, synthesized id) of unanswered function_calls
    plain_keys, plain_roles, append = _PLAIN_KEYS, _PLAIN_ROLES, out.append
    for i, raw in enumerate(items):
        if raw.__class__ is dict and raw.keys() <= plain_keys:
            role, content = raw.get("role"), raw.get("content")
            if role.__class__ is str and content.__class__ is str and role in plain_roles:
                append(Message(plain_roles[role], content))
                continue
        m = expect_dict(raw, ctx, i)
        role = role_of(m, _ROLES, ctx, i, _ROLE_HINT)
        content = m.get("content")
        calls = _tool_calls(m.get("tool_calls"), ctx, i) if role == "assistant" else ()
        extra = {k: v for k, v in m.items() if k not in _KNOWN_KEYS} if m.keys() - _KNOWN_KEYS else _EMPTY
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
                raise ShapeError(T("a tool message has no tool_call_id"), where=ctx.where(i, "tool_call_id"),
                                 hint=T("Set it to the id of the tool call this result answers"))
            out.append(Message("tool", body, name=name, tool_call_id=tcid, extra=extra))
            continue
        out.append(Message(role, body, name=name, tool_calls=calls, extra=extra))
    return out


_ROLE_SET = frozenset(_ROLES)
_OPENAI_ONLY_ROLES = frozenset({"tool", "function", "developer"})
_FOREIGN_BLOCKS = ("tool_use", "tool_result", "thinking")


def detect(items: list[Any]) -> int:
    """Score: role-keyed messages with OpenAI-only features score high (3), plain role-keyed
    messages 1; a role OpenAI does not have, or an Anthropic block in the content, 0."""
    shape = list_shape(items) if items else None
    if shape is None or not shape.with_role or shape.roles is None or not shape.roles <= _ROLE_SET:
        return 0
    for _, c in shape.lists:
        if any(isinstance(p, dict) and p.get("type") in _FOREIGN_BLOCKS for p in c):
            return 0
    strong = shape.roles & _OPENAI_ONLY_ROLES or "tool_calls" in shape.keys or "function_call" in shape.keys
    return 3 if strong else 1


def _part_out(p: Part, i: int, dropped: list[str]) -> dict | None:
    if p.type == "text":
        return {"type": "text", "text": p.text, **p.data}
    if p.type == "image":
        if not isinstance(p.data.get("url"), str):  # a Responses file_id image: Chat takes a URL or data only
            dropped.append(f"message {i}: an image given by {shown_keys(sorted(p.data)) or 'nothing'} (no URL) has no "
                           "place in OpenAI Chat; left out")
            return None
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
        elif not parts and not m.tool_calls and m.role != "assistant":  # OpenAI refuses it; say so, not ""
            raise ExportError(f"nothing of this message can be written for OpenAI Chat (its "
                              f"{', '.join(sorted({p.type for p in m.parts}))} content has no place there)",
                              where=f"message {i}", hint="Replace that content with text before converting")
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
        body["model"] = model_as_written(conv)
    body["messages"] = [message_to_openai(m, i, notes) for i, m in enumerate(conv.messages)]
    if conv.tools:
        body["tools"] = tools_to_openai(conv.tools)
    return Export(body, tuple(notes))


FORMAT = Format("openai", "OpenAI Chat Completions", detect, read, write)
