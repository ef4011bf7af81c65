"""Anthropic Messages: content blocks (text, image, tool_use, tool_result, thinking,
redacted_thinking), tool results carried inside user turns, and the top-level ``system``.

Reading splits a user turn into one ``tool`` message per ``tool_result`` block, then one user
message with the other blocks; writing merges them back. Block keys ctxlab does not model
(``cache_control``, ``citations``...) stay in ``Part.data``; those of ``tool_use`` and
``tool_result`` blocks stay in ``Message.extra["anthropic"]``, so writing back restores them.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from ..errors import ExportError, ShapeError, ToolArgumentsError, shown, shown_keys
from ..conversation import MODELED_PART_TYPES, Conversation, Message, Part, ToolCall, compact_json
from ._base import (INTERNAL_EXTRA, Export, Format, ReadContext, check_not_empty, expect_dict, list_shape,
                    role_of)
from ._base import model_as_written
from ._json import JSONText
from .tools import tools_to_anthropic

_ROLES = ("user", "assistant", "system")
_ROLE_SET = frozenset(_ROLES)
_STRONG_BLOCKS = ("tool_use", "tool_result", "thinking", "redacted_thinking")
_OPENAI_PARTS = ("image_url", "input_text", "output_text", "input_image", "refusal")
#: part types of other providers that an Anthropic request cannot carry
_FOREIGN_PARTS = ("refusal", "input_audio", "audio", "file", "input_file", "video")
_TEXT_KEYS = ("cache_control", "citations")
_DATA_URL = re.compile(r"data:(?P<media>[^;,]+);base64,(?P<data>.*)", re.DOTALL)

Path = tuple[str | int, ...]


# ---------------------------------------------------------------- reading


def block_type(raw: Any, ctx: ReadContext, index: int, path: Path) -> str:
    """The ``type`` of a content block; a block that is not an object with a type is an error."""
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        raise ShapeError("a content block must be an object with a 'type'", where=ctx.where(index, *path),
                         hint="Anthropic blocks look like {\"type\": \"text\", \"text\": \"...\"}")
    return raw["type"]


def _rest(raw: dict, *known: str) -> dict[str, Any]:
    return {k: v for k, v in raw.items() if k not in ("type", *known)}


def _string(raw: dict, key: str, ctx: ReadContext, index: int, path: Path) -> str:
    value = raw.get(key, "")
    if not isinstance(value, str):
        raise ShapeError(f"'{key}' must be a string, found {type(value).__name__}",
                         where=ctx.where(index, *path, key))
    return value


def image_part(raw: dict, ctx: ReadContext, index: int, path: Path) -> Part:
    """An Anthropic image block as ``Part("image")``: a base64 source becomes a ``data:`` URL
    and a url source a plain URL (the OpenAI shape); other keys are kept."""
    src = raw.get("source")
    rest = _rest(raw, "source")
    if not isinstance(src, dict):
        raise ShapeError("an image block needs a 'source' object", where=ctx.where(index, *path, "source"))
    if src.get("type") == "base64":
        media = _string(src, "media_type", ctx, index, (*path, "source"))
        data = _string(src, "data", ctx, index, (*path, "source"))
        return Part("image", data={"url": f"data:{media};base64,{data}", **rest})
    if src.get("type") == "url":
        return Part("image", data={"url": _string(src, "url", ctx, index, (*path, "source")), **rest})
    return Part("image", data={"source": src, **rest})  # file sources and future kinds: kept as sent


def read_block(raw: Any, ctx: ReadContext, index: int, path: Path) -> Part:
    """One non-tool content block as a Part (text, image, thinking, redacted_thinking, or any
    other block type kept whole in ``data``)."""
    kind = block_type(raw, ctx, index, path)
    if kind == "text":
        return Part("text", _string(raw, "text", ctx, index, path), _rest(raw, "text"))
    if kind == "image" and "source" in raw:
        return image_part(raw, ctx, index, path)
    if kind == "thinking":
        return Part("thinking", _string(raw, "thinking", ctx, index, path), _rest(raw, "thinking"))
    if kind not in MODELED_PART_TYPES:
        ctx.unmodeled_part(index, kind)
    return Part(kind, data=_rest(raw))


def tool_use_call(raw: dict, ctx: ReadContext, index: int, path: Path, from_source: bool = True) -> ToolCall:
    """A ``tool_use`` block as a ToolCall. Its arguments are the exact text of ``input`` in the
    source (what :func:`ctxlab.formats.dumps` wrote, so OpenAI -> Anthropic -> OpenAI keeps
    every byte), or the compact JSON of ``input`` when there is no source text to take it from or
    that text spans lines (a pretty-printed file)."""
    for key in ("id", "name"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise ShapeError(f"a tool_use block has no {key}", where=ctx.where(index, *path, key),
                             hint="Every tool_use needs an id (its result refers to it) and a tool name")
    args = raw.get("input", {})
    if not isinstance(args, dict):
        raise ToolArgumentsError(f"tool_use input must be a JSON object, found {type(args).__name__}",
                                 where=ctx.where(index, *path, "input"))
    text = ctx.source.take(args) if from_source and ctx.source is not None else None
    if text is None or "\n" in text:  # a pretty-printed file's indentation is not the arguments' text
        text = compact_json(args)
    return ToolCall(raw["id"], raw["name"], text)


def tool_result_message(raw: dict, ctx: ReadContext, index: int, path: Path) -> Message:
    """A ``tool_result`` block as a ``tool`` message (content, ``is_error``, other keys kept)."""
    tid = raw.get("tool_use_id")
    if not isinstance(tid, str) or not tid:
        raise ShapeError("a tool_result block has no tool_use_id", where=ctx.where(index, *path, "tool_use_id"),
                         hint="Set it to the id of the tool_use this result answers")
    is_error = raw.get("is_error", False)
    if not isinstance(is_error, bool):
        raise ShapeError("is_error must be true or false", where=ctx.where(index, *path, "is_error"))
    content = raw.get("content", "")
    if isinstance(content, list):
        content = tuple(_result_part(b, ctx, index, (*path, "content", j)) for j, b in enumerate(content))
    elif not isinstance(content, str):
        raise ShapeError("tool_result content must be a string or a list of blocks",
                         where=ctx.where(index, *path, "content"))
    extra = _rest(raw, "tool_use_id", "is_error", "content")
    return Message("tool", content, tool_call_id=tid, is_error=is_error,
                   extra={"anthropic": {"block": extra}} if extra else {})


def _result_part(raw: Any, ctx: ReadContext, index: int, path: Path) -> Part:
    if block_type(raw, ctx, index, path) in ("tool_use", "tool_result"):
        raise ShapeError("a tool_result cannot contain tool blocks", where=ctx.where(index, *path))
    return read_block(raw, ctx, index, path)


def _turn(role: str, blocks: list, ctx: ReadContext, i: int) -> list[Message]:
    """One Anthropic turn with a block list as ctxlab messages (results first, then the rest)."""
    parts: list[Part] = []
    calls: list[ToolCall] = []
    results: list[Message] = []
    call_extra: dict[str, dict] = {}
    for k, raw in enumerate(blocks):
        kind = block_type(raw, ctx, i, ("content", k))
        if kind == "tool_use":
            if role != "assistant":
                raise ShapeError("tool_use blocks belong in assistant turns", where=ctx.where(i, "content", k))
            calls.append(tool_use_call(raw, ctx, i, ("content", k)))
            if _rest(raw, "id", "name", "input"):
                call_extra[raw["id"]] = _rest(raw, "id", "name", "input")
        elif kind == "tool_result":
            if role != "user":
                raise ShapeError("tool_result blocks belong in user turns", where=ctx.where(i, "content", k))
            if parts and not results:
                ctx.notes.append(f"message {i}: text before the tool results was placed after them")
            results.append(tool_result_message(raw, ctx, i, ("content", k)))
        else:
            parts.append(read_block(raw, ctx, i, ("content", k)))
    extra = {"anthropic": {"tool_use": call_extra}} if call_extra else {}
    if not results:
        return [Message(role, tuple(parts), tool_calls=tuple(calls), extra=extra)]
    return results + ([Message("user", tuple(parts))] if parts else [])


def read(items: list[Any], ctx: ReadContext) -> list[Message]:
    """Read Anthropic Messages turns into ctxlab messages."""
    out: list[Message] = []
    for i, raw in enumerate(items):
        m = expect_dict(raw, ctx, i)
        role = role_of(m, _ROLES, ctx, i, "Anthropic roles are user and assistant (tool results are "
                                          "tool_result blocks in a user turn); or pick the format explicitly")
        content = m.get("content")
        check_not_empty(role, content, False, ctx, i)
        if isinstance(content, str):
            msgs = [Message(role, content)]
        elif isinstance(content, list):
            msgs = _turn(role, content, ctx, i)
        else:
            raise ShapeError(f"content must be a string or a list of blocks, found {type(content).__name__}",
                             where=ctx.where(i, "content"))
        msgs[0] = _with_message_fields(msgs[0], m)
        out.extend(msgs)
    return out


def _with_message_fields(msg: Message, raw: dict) -> Message:
    """Keep a turn's id and unknown keys (logs add them) on its first message."""
    unknown = _rest(raw, "role", "content", "id")
    mid = raw.get("id") if isinstance(raw.get("id"), str) else None
    if not unknown and mid is None:
        return msg
    if not unknown:
        return replace(msg, id=mid)
    anth = {**msg.extra.get("anthropic", {}), "message": unknown}
    return replace(msg, id=mid, extra={**msg.extra, "anthropic": anth})


def detect(items: list[Any]) -> int:
    """Score 3 for Anthropic-only blocks, 1 for plain user/assistant turns, 0 for OpenAI traits."""
    shape = list_shape(items) if items else None
    if shape is None or not shape.with_role or shape.roles is None or not shape.roles <= _ROLE_SET or \
            "tool_calls" in shape.keys or "function_call" in shape.keys:
        return 0
    score = 1
    for _, content in shape.lists:
        for b in content:
            kind = b.get("type") if isinstance(b, dict) else None
            if kind in _STRONG_BLOCKS or (kind == "image" and "source" in b):
                score = 3
            elif kind in _OPENAI_PARTS:
                return 0
    return score


# ---------------------------------------------------------------- writing


def anthropic_only_note(m: Message, i: int, target: str, notes: list[str]) -> None:
    """Add a note when a message carries Anthropic block fields (e.g. ``cache_control`` on a
    tool_use or tool_result block) that another format has no place for."""
    anth = m.extra.get("anthropic") or {}
    names = set(anth.get("block", {})) | set(anth.get("message", {}))
    for fields in anth.get("tool_use", {}).values():
        names |= set(fields)
    if names:
        notes.append(f"message {i}: Anthropic field(s) {shown_keys(sorted(names))} have no place in {target}; left out")


def image_block(p: Part, i: int, notes: list[str]) -> dict | None:
    """A ``Part("image")`` as an Anthropic image block: a ``data:`` URL becomes a base64 source,
    any other URL a url source. None (and a note) when there is nothing to send."""
    data = dict(p.data)
    url = data.pop("url", None)
    detail = data.pop("detail", None)
    if detail not in (None, "auto"):
        notes.append(f"message {i}: image detail {shown(detail)} has no place in Anthropic; left out")
    if isinstance(url, str):
        m = _DATA_URL.fullmatch(url)
        source = {"type": "base64", "media_type": m["media"], "data": m["data"]} if m else {"type": "url", "url": url}
        return {"type": "image", "source": source, **data}
    if "source" in data:
        return {"type": "image", **data}
    notes.append(f"message {i}: an image with neither a URL nor a source has no place in Anthropic; left out")
    return None


def _text_block(p: Part, i: int, notes: list[str]) -> dict:
    data = {k: v for k, v in p.data.items() if k in _TEXT_KEYS}
    foreign = sorted(k for k, v in p.data.items() if k not in _TEXT_KEYS and v)
    if foreign:
        notes.append(f"message {i}: text-part fields {shown_keys(foreign)} have no place in Anthropic; left out")
    return {"type": "text", "text": p.text, **data}


def _block_out(p: Part, i: int, notes: list[str]) -> dict | None:
    if p.type == "text":
        return _text_block(p, i, notes)
    if p.type == "image":
        return image_block(p, i, notes)
    if p.type == "thinking" and "signature" not in p.data:
        notes.append(f"message {i}: a thinking block without an Anthropic signature cannot be sent to "
                     "Anthropic; left out")
        return None
    if p.type == "thinking":
        return {"type": "thinking", "thinking": p.text, **p.data}
    if p.type in _FOREIGN_PARTS:
        notes.append(f"message {i}: {p.type} part has no place in Anthropic; left out")
        return None
    return {"type": p.type, **p.data}


def _blocks(m: Message, i: int, notes: list[str]) -> list[dict]:
    return [b for b in (_block_out(p, i, notes) for p in m.parts) if b is not None]


def _field_notes(m: Message, i: int, call_names: dict[str, str], notes: list[str]) -> None:
    """Notes for message fields Anthropic has no place for (a tool result's name is implied by
    its call, so only a name that differs from the call's is reported)."""
    if m.name is not None:  # a tool result's name is noted without its value, so one note lists them all
        value = "" if m.role == "tool" else f" ({shown(m.name)})"
        notes.append(f"message {i}: the name field{value} has no place in Anthropic; left out")
    fields = sorted(k for k, v in m.extra.items() if k not in INTERNAL_EXTRA and v is not None)
    if fields:
        notes.append(f"message {i}: field(s) {shown_keys(fields)} have no place in Anthropic; left out")


def _system_out(msgs: tuple[Message, ...], notes: list[str]) -> str | list[dict]:
    if len(msgs) == 1 and isinstance(msgs[0].content, str):
        _field_notes(msgs[0], 0, {}, notes)
        return msgs[0].content
    blocks = []
    for i, m in enumerate(msgs):
        _field_notes(m, i, {}, notes)
        for p in m.parts:
            if p.type == "text":
                blocks.append(_text_block(p, i, notes))
            else:
                notes.append(f"message {i}: {p.type} part cannot go in Anthropic's system text; left out")
    return blocks


def _plain_turn(m: Message, i: int, notes: list[str]) -> dict:
    anth = m.extra.get("anthropic", {})
    if isinstance(m.content, str) and not m.tool_calls:
        turn: dict[str, Any] = {"role": m.role, "content": m.content}
    else:
        uses = anth.get("tool_use", {})
        calls = [{"type": "tool_use", "id": c.id, "name": c.name, "input": _input(c, i, notes), **uses.get(c.id, {})}
                 for c in m.tool_calls]
        turn = {"role": m.role, "content": _blocks(m, i, notes) + calls}
    for k, v in anth.get("message", {}).items():
        turn.setdefault(k, v)
    return turn


def _input(c: ToolCall, i: int, notes: list[str]) -> dict:
    """A call's ``input``: the arguments object, carrying its original text (``dumps`` writes
    that text, so spacing and escapes survive). Only the whitespace around the object, or an
    empty arguments text (written as ``{}``), cannot be kept: a note says so."""
    text = c.arguments.strip()
    if not text:
        notes.append(f"message {i}: empty tool-call arguments are written as {{}} in Anthropic")
        return {}
    if text != c.arguments:
        notes.append(f"message {i}: whitespace around tool-call arguments has no place in Anthropic; left out")
    if "\n" in text:
        notes.append(f"message {i}: tool-call arguments written over several lines are read back from Anthropic "
                     "as compact JSON")
    return JSONText(c.parsed_arguments(), text)


def _result_block(m: Message, i: int, notes: list[str]) -> dict:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.tool_call_id,
                             "content": m.content if isinstance(m.content, str) else _blocks(m, i, notes)}
    if m.is_error:
        block["is_error"] = True
    for k, v in m.extra.get("anthropic", {}).get("block", {}).items():
        block.setdefault(k, v)
    return block


def _user_after_results(m: Message, i: int, notes: list[str]) -> list[dict]:
    if isinstance(m.content, str) and not m.content:
        notes.append(f"message {i}: an empty user message after tool results has no block in Anthropic; left out")
        return []
    return [{"type": "text", "text": m.content}] if isinstance(m.content, str) else _blocks(m, i, notes)


def _turns(msgs: tuple[Message, ...], start: int, notes: list[str]) -> list[dict]:
    """Messages after the leading system ones as Anthropic turns: a run of tool messages and the
    user message right after it form one user turn, tool_result blocks first."""
    call_names = {c.id: c.name for m in msgs for c in m.tool_calls}
    turns: list[dict] = []
    i = start
    while i < len(msgs):
        m = msgs[i]
        if m.role == "system":
            raise ExportError(
                f"message {i} is a system message after the conversation started", where=f"message {i}",
                hint="Anthropic accepts system text only at the top (the top-level 'system' field): move it "
                     "to the start, or make it a user message")
        if m.role != "tool":
            _field_notes(m, i, call_names, notes)
            turn = _plain_turn(m, i, notes)
            if turn.get("content") in ([], "") and m.parts and (m.role == "user" or i < len(msgs) - 1):
                # every part left out: Anthropic refuses an empty turn (only a final assistant one may be empty)
                raise ExportError(
                    f"nothing of this message can be written for Anthropic (its "
                    f"{', '.join(sorted({p.type for p in m.parts}))} content has no place there)", where=f"message {i}",
                    hint="Replace that content with text (a transcript, a description) before converting")
            turns.append(turn)
            i += 1
            continue
        blocks = []
        while i < len(msgs) and msgs[i].role == "tool":
            _field_notes(msgs[i], i, call_names, notes)
            blocks.append(_result_block(msgs[i], i, notes))
            i += 1
        if i < len(msgs) and msgs[i].role == "user":
            _field_notes(msgs[i], i, call_names, notes)
            blocks += _user_after_results(msgs[i], i, notes)
            i += 1
        turns.append({"role": "user", "content": blocks})
    return turns


def write(conv: Conversation) -> Export:
    """The conversation as an Anthropic Messages request body (system text at the top)."""
    notes: list[str] = []
    msgs = conv.messages
    lead = next((i for i, m in enumerate(msgs) if m.role != "system"), len(msgs))
    body: dict[str, Any] = {}
    if conv.model:
        body["model"] = model_as_written(conv)
    if lead:
        body["system"] = _system_out(msgs[:lead], notes)
    body["messages"] = _turns(msgs, lead, notes)
    if conv.tools:
        body["tools"] = tools_to_anthropic(conv.tools)
    with_ids = [str(i) for i, m in enumerate(msgs) if m.id is not None]
    if with_ids:
        notes.append(f"message ids (messages {', '.join(with_ids)}) have no place in Anthropic; left out")
    return Export(body, tuple(notes))


FORMAT = Format("anthropic", "Anthropic Messages", detect, read, write)
