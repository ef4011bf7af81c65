"""LangChain / LangGraph messages: ``messages_to_dict`` items (``{"type", "data"}``), the
serialized constructor form (``{"lc": 1, "type": "constructor", "id": [...], "kwargs"}``) and
flat message dicts; a LangGraph state (``{"messages": [...]}``) is unwrapped by the envelope code.

Items are validated by building langchain-core message objects with ``messages_from_dict``
(pydantic models only: ``langchain_core.load`` is never called on input). Two things that
langchain-core's own converters lose are kept here: Anthropic ``tool_use`` blocks left in the
content are read as tool calls, and the original arguments text is taken from
``additional_kwargs["tool_calls"]`` so token counts do not drift.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # langchain-core is imported where a message object is built (half a second to import)
    from langchain_core.messages import AIMessage, BaseMessage

from ..errors import ExportError, ShapeError, ToolArgumentsError, UnknownRoleError, shown
from ..conversation import FIXED_TOKENS, TEXT_ACTION, Conversation, Message, Part, ToolCall, Usage, compact_json
from ._base import Export, Format, ReadContext, check_arguments, check_not_empty, expect_dict, list_shape
from ._base import INTERNAL_EXTRA, model_as_written
from .anthropic import anthropic_only_note, block_type, read_block, tool_result_message, tool_use_call
from .tools import tools_to_openai

_BASE_ROLE = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool",
              "chat": "chat"}
_CLASS_TYPE = {"HumanMessage": "human", "AIMessage": "ai", "SystemMessage": "system", "ToolMessage": "tool",
               "ChatMessage": "chat", "FunctionMessage": "function"}
_CHUNK_TYPE = {f"{cls}Chunk": kind for cls, kind in _CLASS_TYPE.items()}
#: every LangChain message type (as in ``messages_to_dict``) and the role or kind it stands for
ROLE_OF_TYPE = {**_BASE_ROLE, **{chunk: _BASE_ROLE[kind] for chunk, kind in _CHUNK_TYPE.items()}}
_CHAT_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant",
               "system": "system", "developer": "system"}
_OWN_KWARGS = ("tool_calls", "function_call", "__openai_role__", "__ctxlab_counts__")
#: the marks that change how ctxlab counts a message (a text action's calls add no tokens; the
#: unlogged prefix has a given size), kept in ``additional_kwargs["__ctxlab_counts__"]`` so a count
#: of the LangChain messages (``trim_messages``' token counter, a round trip) is the same
COUNT_MARKS = (TEXT_ACTION, FIXED_TOKENS)
_FUNCTION_TYPES = ("function", "FunctionMessageChunk")  # legacy results: matched by name, no tool_call_id

Path = tuple[str | int, ...]


@dataclass
class _State:
    """What reading carries from one message to the next."""

    legacy: list[tuple[str, str]] = field(default_factory=list)  # (name, id) of unanswered function_calls
    metadata_at: list[int] = field(default_factory=list)


# ---------------------------------------------------------------- reading


def _unwrap(item: dict, ctx: ReadContext, i: int) -> tuple[str, dict, Path]:
    """(LangChain message type, its fields, the path of the fields) for any of the three forms."""
    if "lc" in item:
        ids = item.get("id")
        if item.get("type") != "constructor" or not isinstance(ids, list) or not ids:
            raise ShapeError("a serialized LangChain item must be a message constructor", where=ctx.where(i))
        cls = ids[-1] if isinstance(ids[-1], str) else ""
        kind = _CLASS_TYPE.get(cls) or (cls if cls in _CHUNK_TYPE else None)
        if kind is None:
            raise UnknownRoleError(f"unknown LangChain message class {shown(ids[-1])}", where=ctx.where(i, "id"),
                                   hint=f"Message classes are {', '.join(_CLASS_TYPE)}")
        data, path = item.get("kwargs", {}), ("kwargs",)
    elif "data" in item:
        kind, data, path = item.get("type"), item["data"], ("data",)
    else:
        kind, data, path = item.get("type"), item, ()
    if not isinstance(kind, str) or kind not in ROLE_OF_TYPE:
        raise UnknownRoleError(f"unknown LangChain message type {shown(kind)}", where=ctx.where(i, "type"),
                               hint="LangChain types are human, ai, system, tool, chat and function")
    if not isinstance(data, dict):
        raise ShapeError("the message fields must be an object", where=ctx.where(i, *path))
    return kind, data, path


def _prepared(kind: str, data: dict, ctx: ReadContext, i: int, path: Path) -> dict:
    """The fields checked for what ctxlab reports better than pydantic, content defaulted."""
    kw = data.get("additional_kwargs") or {}
    if not isinstance(kw, dict):
        raise ShapeError("additional_kwargs must be an object", where=ctx.where(i, *path, "additional_kwargs"))
    calls = data.get("tool_calls") or []
    if not isinstance(calls, list) or not all(isinstance(tc, dict) for tc in calls):
        raise ShapeError("tool_calls must be a list of objects", where=ctx.where(i, *path, "tool_calls"))
    for k, tc in enumerate(calls):
        if not isinstance(tc.get("args", {}), dict):
            raise ToolArgumentsError(f"tool-call args must be a JSON object, found {type(tc['args']).__name__}",
                                     where=ctx.where(i, *path, "tool_calls", k, "args"))
    content = data.get("content")
    check_not_empty(ROLE_OF_TYPE[kind], content, bool(calls or kw.get("tool_calls") or kw.get("function_call")),
                    ctx, i)
    if content is not None and not isinstance(content, (str, list)):
        raise ShapeError(f"content must be a string or a list of blocks, found {type(content).__name__}",
                         where=ctx.where(i, *path, "content"))
    if ROLE_OF_TYPE[kind] == "tool" and kind not in _FUNCTION_TYPES and not (
            isinstance(data.get("tool_call_id"), str) and data["tool_call_id"]):
        raise ShapeError("a tool message has no tool_call_id", where=ctx.where(i, *path, "tool_call_id"),
                         hint="Set it to the id of the tool call this result answers")
    return {**data, "content": "" if content is None else content}


def _built(kind: str, data: dict, ctx: ReadContext, i: int, path: Path) -> BaseMessage:
    """The langchain-core message object; its validation errors become ShapeErrors."""
    from langchain_core.messages import messages_from_dict
    try:
        return messages_from_dict([{"type": kind, "data": data}])[0]
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise ShapeError(f"LangChain rejects this {kind} message ({_reason(e)})", where=ctx.where(i, *path)) from None


def _reason(e: Exception) -> str:
    """The first problem of a pydantic ValidationError (field: message), or the error text."""
    errors = getattr(e, "errors", None)
    if callable(errors) and errors():
        first = errors()[0]
        text = f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
    else:
        text = f"missing {e}" if isinstance(e, KeyError) else str(e)
    return text if len(text) <= 160 else f"{text[:120]}... ({len(text):,} characters)"  # it can echo input


def _image(raw: dict, ctx: ReadContext, i: int, path: Path) -> Part:
    """LangChain's own image blocks (``url``, ``base64`` + ``mime_type``, or legacy
    ``source_type``) as ``Part("image")`` with a URL; Anthropic ``source`` blocks too."""
    if "source" in raw:
        return read_block(raw, ctx, i, path)
    rest = {k: v for k, v in raw.items() if k not in ("type", "source_type")}
    if isinstance(rest.get("url"), str):
        return Part("image", data=rest)
    b64 = rest.pop("base64", None) or (rest.pop("data", None) if raw.get("source_type") == "base64" else None)
    if b64 is None:
        return Part("image", data=rest)  # file ids and the like: kept as given
    mime = rest.pop("mime_type", None)
    if not isinstance(b64, str) or not isinstance(mime, str):
        raise ShapeError("a base64 image block needs string data and a mime_type", where=ctx.where(i, *path))
    return Part("image", data={"url": f"data:{mime};base64,{b64}", **rest})


def _block(raw: dict, kind: str, ctx: ReadContext, i: int, path: Path) -> Part:
    if kind == "image_url":
        img = raw.get("image_url")
        if not isinstance(img, (str, dict)):
            raise ShapeError("image_url must be a URL or an object with a url", where=ctx.where(i, *path, "image_url"))
        rest = {k: v for k, v in raw.items() if k not in ("type", "image_url")}
        return Part("image", data={**({"url": img} if isinstance(img, str) else img), **rest})
    if kind == "image":
        return _image(raw, ctx, i, path)
    if kind == "reasoning":  # OpenAI Responses summaries, or the v1 standard {"reasoning": text}
        rest = {k: v for k, v in raw.items() if k not in ("type", "reasoning")}
        summary = raw.get("summary") if isinstance(raw.get("summary"), list) else []
        text = "\n".join(str(s.get("text", "")) for s in summary if isinstance(s, dict)) or str(
            raw.get("reasoning", ""))
        return Part("thinking", text, rest)
    if kind == "refusal":
        return Part("refusal", str(raw.get("refusal", "")))
    return read_block(raw, ctx, i, path)


def _content(content: str | list, ctx: ReadContext, i: int, path: Path,
             role: str) -> tuple[str | tuple[Part, ...], list[ToolCall], list[Message]]:
    """(content, tool calls found as blocks, tool results found as blocks)."""
    if isinstance(content, str):
        return content, [], []
    parts: list[Part] = []
    calls: list[ToolCall] = []
    results: list[Message] = []
    for k, raw in enumerate(content):
        if isinstance(raw, str):
            parts.append(Part("text", raw))
            continue
        kind = block_type(raw, ctx, i, (*path, k))
        if kind in ("tool_use", "tool_call") and role == "assistant":
            raw = {**raw, "input": raw.get("args", {})} if kind == "tool_call" else raw
            calls.append(tool_use_call(raw, ctx, i, (*path, k), from_source=False))
        elif kind == "tool_result" and role == "user":
            results.append(tool_result_message(raw, ctx, i, (*path, k)))
        elif kind in ("tool_use", "tool_call", "tool_result"):
            raise ShapeError(f"a {kind} block cannot be in a {role} message", where=ctx.where(i, *path, k))
        else:
            parts.append(_block(raw, kind, ctx, i, (*path, k)))
    return tuple(parts), calls, results


def _arguments_text(args: dict, text: Any) -> str:
    """The original arguments text when it still says the same as ``args``, else compact JSON."""
    if isinstance(text, str):
        try:
            if (json.loads(text) if text.strip() else {}) == args:
                return text
        except ValueError:
            pass
    return compact_json(args)


def _ai_calls(msg: AIMessage, blocks: list[ToolCall], ctx: ReadContext, i: int, path: Path,
              state: _State) -> tuple[ToolCall, ...]:
    """Tool calls of an AI message: ``tool_calls`` with their original text, plus tool_use blocks
    that ``tool_calls`` does not list (the langchain-core gap), plus a legacy function_call."""
    kw = msg.additional_kwargs
    if msg.invalid_tool_calls:
        bad = msg.invalid_tool_calls[0]
        raise ToolArgumentsError(f"tool-call arguments are not a JSON object: {shown(str(bad.get('args')))}",
                                 where=ctx.where(i, *path, "additional_kwargs", "tool_calls"))
    entries = kw.get("tool_calls") if isinstance(kw.get("tool_calls"), list) else []
    texts = {e["id"]: e["function"].get("arguments") for e in entries
             if isinstance(e, dict) and isinstance(e.get("id"), str) and isinstance(e.get("function"), dict)}
    calls = []
    for k, tc in enumerate(msg.tool_calls):
        for key in ("id", "name"):
            if not tc.get(key):
                raise ShapeError(f"a tool call has no {key}", where=ctx.where(i, *path, "tool_calls", k, key),
                                 hint="Every tool call needs an id (its result refers to it) and a tool name")
        calls.append(ToolCall(tc["id"], tc["name"], _arguments_text(tc["args"], texts.get(tc["id"]))))
    calls += [c for c in blocks if c.id not in {d.id for d in calls}]
    fc = kw.get("function_call")
    if calls and fc is not None:
        ctx.notes.append(f"message {i}: additional_kwargs.function_call beside tool_calls is not kept (the "
                         "tool calls are)")
    if not calls and isinstance(fc, dict):
        cid = f"call_legacy_{i}"
        args = check_arguments(fc.get("arguments"), ctx, i, *path, "additional_kwargs", "function_call", "arguments")
        calls.append(ToolCall(cid, str(fc.get("name", "")), args))
        state.legacy.append((str(fc.get("name", "")), cid))
        ctx.notes.append(f"message {i}: legacy function_call given the id {cid}")
    return tuple(calls)


def _role(kind: str, msg: BaseMessage, ctx: ReadContext, i: int, path: Path) -> str:
    role = ROLE_OF_TYPE[kind]
    if role != "chat":
        return role
    if msg.role not in _CHAT_ROLES:
        raise UnknownRoleError(f"unknown chat message role {shown(msg.role)}", where=ctx.where(i, *path, "role"),
                               hint=f"ctxlab maps the chat roles {', '.join(_CHAT_ROLES)}")
    return _CHAT_ROLES[msg.role]


def _tool_call_id(msg: BaseMessage, kind: str, i: int, ctx: ReadContext, state: _State) -> str:
    if kind not in _FUNCTION_TYPES:
        return msg.tool_call_id
    match = next((p for p in state.legacy if p[0] == msg.name), None)
    if match:
        state.legacy.remove(match)
        return match[1]
    ctx.notes.append(f"message {i}: function result {shown(msg.name)} follows no function_call")
    return f"call_legacy_unmatched_{i}"


def _messages(kind: str, msg: BaseMessage, ctx: ReadContext, i: int, path: Path, state: _State) -> list[Message]:
    """One langchain-core message as ctxlab messages (a human message carrying tool_result
    blocks becomes the tool messages, then the user message with the rest)."""
    role = _role(kind, msg, ctx, i, path)
    body, blocks, results = _content(msg.content, ctx, i, (*path, "content"), role)
    kw = msg.additional_kwargs
    extra = {k: v for k, v in kw.items() if k not in _OWN_KWARGS and v is not None}
    if kw.get("__openai_role__") == "developer":
        extra["openai_role"] = "developer"
    extra.update(count_marks(kw))
    if msg.response_metadata or getattr(msg, "artifact", None) is not None:
        state.metadata_at.append(i)
    common = {"name": msg.name, "id": msg.id, "extra": extra}
    if role == "assistant":
        return [Message("assistant", body, tool_calls=_ai_calls(msg, blocks, ctx, i, path, state),
                        usage=reported_usage(msg), **common)]
    if role == "tool":
        return [Message("tool", body, tool_call_id=_tool_call_id(msg, kind, i, ctx, state),
                        is_error=getattr(msg, "status", "success") == "error", **common)]
    if not results:
        return [Message(role, body, **common)]
    return results + ([Message("user", body, **common)] if body else [])


def reported_usage(msg: BaseMessage) -> Usage | None:
    """An AI message's ``usage_metadata`` as the call's reported Usage (LangChain's
    ``input_tokens`` includes the cache; ``input_token_details`` splits it)."""
    u = getattr(msg, "usage_metadata", None)
    if not u or not isinstance(u.get("input_tokens"), int):
        return None
    details = u.get("input_token_details") or {}
    model = (msg.response_metadata or {}).get("model_name") or (msg.response_metadata or {}).get("model")
    return Usage(u["input_tokens"], u.get("output_tokens"), details.get("cache_read"), details.get("cache_creation"),
                 model if isinstance(model, str) else None)


def usage_metadata(u: Usage) -> dict[str, Any]:
    """A reported Usage as LangChain's ``usage_metadata``."""
    details = {k: v for k, v in (("cache_read", u.cached_tokens), ("cache_creation", u.cache_write_tokens))
               if v is not None}
    out = u.output_tokens or 0
    return {"input_tokens": u.prompt_tokens, "output_tokens": out, "total_tokens": u.prompt_tokens + out,
            **({"input_token_details": details} if details else {})}


def read(items: list[Any], ctx: ReadContext) -> list[Message]:
    """Read LangChain messages (any of the three forms) into ctxlab messages."""
    out: list[Message] = []
    state = _State()
    for i, raw in enumerate(items):
        kind, data, path = _unwrap(expect_dict(raw, ctx, i), ctx, i)
        msg = _built(kind, _prepared(kind, data, ctx, i, path), ctx, i, path)
        out.extend(_messages(kind, msg, ctx, i, path, state))
    if state.metadata_at:
        ctx.notes.append(f"message(s) {', '.join(map(str, state.metadata_at))}: LangChain response_metadata "
                         "and artifact are not kept (they are not sent to the model)")
    return out


def detect(items: list[Any]) -> int:
    """Score 3 for ``{"type", "data"}`` items or the ``lc`` constructor form, 2 for flat
    dicts whose ``type`` is a LangChain message type, 0 otherwise."""
    if not items or not list_shape(items).dicts:
        return 0
    score = 3
    for it in items:
        if "lc" in it:
            if it.get("type") != "constructor":
                return 0
        elif not isinstance(it.get("type"), str) or it["type"] not in ROLE_OF_TYPE:
            return 0
        elif not isinstance(it.get("data"), dict):
            score = 2
    return score


# ---------------------------------------------------------------- writing


def _block_out(p: Part) -> dict:
    """A Part as a LangChain content block (OpenAI image_url, Anthropic thinking, Responses
    reasoning: the shapes the chat-model integrations accept)."""
    if p.type == "text":
        return {"type": "text", "text": p.text, **p.data}
    if p.type == "image":
        data = dict(p.data)
        if not isinstance(data.get("url"), str):
            return {"type": "image", **data}  # an Anthropic source or a file id: kept as given
        img = {k: data.pop(k) for k in ("url", "detail") if k in data}
        return {"type": "image_url", "image_url": img, **data}
    if p.type == "thinking" and "summary" in p.data:
        return {"type": "reasoning", **p.data}
    if p.type == "thinking":
        return {"type": "thinking", "thinking": p.text, **p.data}
    if p.type == "refusal":
        return {"type": "refusal", "refusal": p.text}
    return {"type": p.type, **p.data}


def _kwargs(m: Message, i: int, notes: list[str]) -> dict[str, Any]:
    """``additional_kwargs``: provider fields from ``extra``, the developer role, and the
    original arguments text of each tool call (OpenAI shape) so a round trip keeps it."""
    kw = {k: v for k, v in m.extra.items() if k not in INTERNAL_EXTRA}
    if m.extra.get("openai_role") == "developer":
        kw["__openai_role__"] = "developer"
    marks = {k: m.extra[k] for k in COUNT_MARKS if k in m.extra}
    if marks:
        kw["__ctxlab_counts__"] = marks
    anthropic_only_note(m, i, "LangChain messages", notes)
    if m.tool_calls:
        kw["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                            for c in m.tool_calls]
    return kw


def count_marks(kwargs: Any) -> dict[str, Any]:
    """The counting marks a LangChain message's ``additional_kwargs`` carries (see ``COUNT_MARKS``)."""
    marks = kwargs.get("__ctxlab_counts__") if isinstance(kwargs, dict) else None
    if not isinstance(marks, dict):
        return {}
    return {k: v for k, v in marks.items() if (k == TEXT_ACTION and v is True) or
            (k == FIXED_TOKENS and isinstance(v, int) and not isinstance(v, bool) and v >= 0)}


def to_langchain(m: Message, i: int, notes: list[str]) -> BaseMessage:
    """One message as a langchain-core message object; a field LangChain rejects (say a
    non-string name read from a lenient source) is an ExportError naming the message."""
    try:
        return _lc_message(m, i, notes)
    except ValueError as e:  # pydantic's ValidationError
        raise ExportError(f"LangChain rejects this message ({_reason(e)})", where=f"message {i}",
                          hint="Fix that field in the source, then export again") from None


def _lc_message(m: Message, i: int, notes: list[str]) -> BaseMessage:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
    common: dict[str, Any] = {
        "content": m.content if isinstance(m.content, str) else [_block_out(p) for p in m.content],
        "additional_kwargs": _kwargs(m, i, notes), "name": m.name, "id": m.id}
    if m.role == "system":
        return SystemMessage(**common)
    if m.role == "user":
        return HumanMessage(**common)
    if m.role == "tool":
        return ToolMessage(tool_call_id=m.tool_call_id, status="error" if m.is_error else "success", **common)
    calls = [{"id": c.id, "name": c.name, "args": c.parsed_arguments(), "type": "tool_call"} for c in m.tool_calls]
    if m.usage is not None:  # the call's reported usage has a place here
        common["usage_metadata"] = usage_metadata(m.usage)
    return AIMessage(tool_calls=calls, **common)


def write(conv: Conversation) -> Export:
    """The conversation as a LangGraph-style state: ``{"messages": messages_to_dict(...)}``,
    with the tools (OpenAI shape) and model beside it."""
    from langchain_core.messages import messages_to_dict
    notes: list[str] = []
    body: dict[str, Any] = {"model": model_as_written(conv)} if conv.model else {}
    body["messages"] = messages_to_dict([to_langchain(m, i, notes) for i, m in enumerate(conv.messages)])
    if conv.tools:
        body["tools"] = tools_to_openai(conv.tools)
    return Export(body, tuple(notes))


FORMAT = Format("langchain", "LangChain / LangGraph messages", detect, read, write)
