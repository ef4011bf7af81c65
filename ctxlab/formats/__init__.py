"""Reading and writing conversations in the formats people have.

``loads(text)`` detects the format (or takes ``format=``), reads the messages and the tools, and
returns a Conversation; ``load_all`` returns every conversation of a JSONL file. ``export(conv,
"anthropic")`` writes it back. Formats register in ``FORMATS`` the way a plugin would.
"""
from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

from ..errors import CtxlabError, ShapeError, UnknownFormatError, path_key, shown
from ..conversation import FIXED_TOKENS, UNLOGGED, Conversation, Message, Part
from ..i18n import T
from ._base import Export, Format, ReadContext, adopt_model, check_call_ids, group_notes, shared_shape
from ._carry import carry_top_level, unplaced_fields
from ._plain import PlainMessages, has_plain, role_sample, trace_probe, undo
from ._json import (DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, JSONText, SourceObjects, decode_text, dumps, load_json_documents,
                    parse_documents, size_check)
from .tools import parse_tools, tools_to_anthropic, tools_to_mcp, tools_to_openai
from .registry import FORMATS, detect, get_format, register
from ._trace import TRACES, TraceFormat, detect_trace, read_trace_documents, run_documents

_OWN_KEYS = ("tools", "system", "instructions", "model", "facts")


def _envelope(doc: Any, where: str) -> tuple[list[Any], str, dict[str, Any]]:
    """Split a document into (message items, their JSON path, top-level fields)."""
    if isinstance(doc, list):
        return doc, where, {}
    if not isinstance(doc, dict):
        raise ShapeError(T("expected a list of messages or an object with 'messages', found {kind}",
                           kind=type(doc).__name__), where=where)
    for key in ("messages", "input"):
        if key in doc:
            items = doc[key]
            if isinstance(items, str) and key == "input":  # Responses API: input may be one string
                items = [{"type": "message", "role": "user", "content": items}]
            if not isinstance(items, list):
                raise ShapeError(f"'{key}' must be a list, found {type(items).__name__}", where=f"{where}.{key}")
            return items, f"{where}.{key}", {k: v for k, v in doc.items() if k != key}
    raise ShapeError(
        T("object has no 'messages' (keys: {keys})", keys=", ".join(shown(k, 20) for k in sorted(doc)[:6]) or T("none")),
        where=where,
        hint=T("Expected a list of messages, {\"messages\": [...]} (optionally with tools, system, model), or JSONL"),
    )


def _system_from_top(top: dict[str, Any], where: str) -> list[Message]:
    """Anthropic's top-level ``system`` and Responses' ``instructions`` as system messages."""
    out = []
    for key in ("system", "instructions"):
        value = top.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            out.append(Message("system", value, extra={"top_level": key}))
        elif isinstance(value, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in value):
            parts = tuple(Part("text", str(b.get("text", "")), {k: v for k, v in b.items() if k not in ("type", "text")})
                          for b in value)
            out.append(Message("system", parts, extra={"top_level": key}))
        else:
            raise ShapeError(f"top-level '{key}' must be a string or a list of text blocks",
                             where=f"{where}{path_key(key)}")
    return out


def _conversation(doc: Any, where: str, format: str | None, lines: list[int] | None = None,
                  max_depth: int = DEFAULT_MAX_DEPTH, source: SourceObjects | None = None) -> Conversation:
    items, base, top = _envelope(doc, where)
    ctx = ReadContext(base=base, lines=tuple(lines) if lines else None, max_depth=max_depth, source=source)
    if isinstance(items, PlainMessages):  # plain chat messages, made as parsed (see _plain)
        if (format or _top_hint(top) or detect(role_sample(items), ctx)) == "openai":
            return _finish(_system_from_top(top, where) + items, top, where, "openai", ctx)
        items = undo(items)
    with shared_shape(items):  # detection's pass over the items also serves the reader
        name = format or (_top_hint(top) or detect(items, ctx))
        fmt = get_format(name)
        try:
            messages = _system_from_top(top, where) + fmt.read(items, ctx)
        except CtxlabError as e:
            if format:
                e.args = (f"{e.args[0]} (read as {fmt.title}, as asked)",)
            raise
    return _finish(messages, top, where, name, ctx)


def _finish(messages: list[Message], top: dict[str, Any], where: str, name: str, ctx: ReadContext) -> Conversation:
    """The Conversation of read messages and the document's top-level fields."""
    if not messages:
        raise ShapeError("the conversation is empty (no messages)", where=ctx.base, hint="Give at least one message")
    check_call_ids(messages, ctx.notes)
    tools = parse_tools(top["tools"], f"{where}.tools") if top.get("tools") else ()
    facts = top.get("facts", [])
    if not isinstance(facts, list) or not all(isinstance(f, str) for f in facts):
        raise ShapeError("'facts' must be a list of strings", where=f"{where}.facts")
    meta = {k: v for k, v in top.items() if k not in _OWN_KEYS}
    model = adopt_model(top.get("model"), ctx.notes, meta)
    return Conversation(tuple(messages), tools, model, name, tuple(facts), meta, group_notes(ctx.notes))


def _top_hint(top: dict[str, Any]) -> str | None:
    if "instructions" in top and "responses" in FORMATS:
        return "responses"
    if isinstance(top.get("system"), (str, list)) and "anthropic" in FORMATS:
        return "anthropic"
    return None


def _is_message_like(doc: Any) -> bool:
    return isinstance(doc, dict) and ("role" in doc or doc.get("type") in _MESSAGE_TYPES)


_MESSAGE_TYPES = ("message", "function_call", "function_call_output", "reasoning", "constructor", "human", "ai",
                  "system", "tool", "chat", "function", "HumanMessageChunk", "AIMessageChunk",
                  "SystemMessageChunk", "ToolMessageChunk", "ChatMessageChunk", "FunctionMessageChunk")


def load_all(text: str | bytes, *, format: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
             max_depth: int = DEFAULT_MAX_DEPTH) -> list[Conversation]:
    """Every conversation in the text: one for JSON, one per line for JSONL of conversation
    objects, one for JSONL of messages. ``format`` skips detection."""
    if format is not None:
        get_format(format)
    # The cyclic garbage collector is paused while the document is parsed and read: every
    # container made then lives on (the parsed JSON until reading ends, the messages after), so
    # collections would only walk them again and again (half the time of reading half a million
    # short messages). It resumes as it was, whatever happens.
    collecting = gc.isenabled()
    gc.disable()
    try:
        size_check(text, max_bytes)
        text = decode_text(text)  # the bytes are freed here unless the caller keeps them
        docs, lines = parse_documents(text, max_depth, plain=True)
        # the exact text of Anthropic ``input`` objects is looked up in the source (one scanner:
        # conversations come in document order); other documents need no source, and the text,
        # as large as the file, is freed before reading
        source = SourceObjects(text) if '"input"' in text else None
        del text
        return _read_documents(docs, lines, format, max_depth, source)
    finally:
        if collecting:
            gc.enable()


def _read_documents(docs: list[Any], lines: list[int] | None, format: str | None, max_depth: int,
                    source: SourceObjects | None) -> list[Conversation]:
    """The conversations of parsed documents (see ``load_all``)."""
    kw: dict[str, Any] = {"max_depth": max_depth, "source": source}
    trace = format if format in TRACES else (detect_trace(trace_probe(docs), lines) if format is None else None)
    if trace is not None:  # a trace file: one conversation (a production trace: one per agent run)
        return read_trace_documents([undo(d) for d in docs] if has_plain(docs) else docs, lines, trace, **kw)
    if lines is not None and _is_message_like(docs[0]):
        misfit = next((k for k, d in enumerate(docs) if not _is_message_like(d)), None)
        if misfit is not None:
            bad = docs[misfit]
            seen = (f"keys {', '.join(shown(k, 20) for k in sorted(bad)[:6])}" if isinstance(bad, dict)
                    else f"a {type(bad).__name__}")
            raise ShapeError(f"not a message like line {lines[0]} (found {seen})", where=f"JSONL line {lines[misfit]}",
                             hint="A JSONL file holds one message a line, or one conversation a line")
        return [_conversation(docs, "$", format, lines, **kw)]
    if lines is None and isinstance(docs[0], list) and docs[0] and all(
            isinstance(d, dict) and isinstance(d.get("messages"), list) for d in docs[0]):
        return [_conversation(d, f"$[{i}]", format, **kw) for i, d in enumerate(docs[0])]
    if lines is None:
        return [_conversation(docs[0], "$", format, **kw)]
    return [_conversation(d, f"JSONL line {n}: $", format, **kw) for n, d in zip(lines, docs)]


def run_texts(text: str | bytes, *, max_bytes: int = DEFAULT_MAX_BYTES) -> list[str] | None:
    """Each agent run of a production trace file (OpenTelemetry, Langfuse, LangSmith) as a JSON
    text of its own, which ``loads`` reads as one conversation; None for any other input."""
    size_check(text, max_bytes)
    docs, lines = parse_documents(decode_text(text))
    name = detect_trace(docs, lines)
    runs = run_documents(docs, lines, name) if name is not None else None
    return None if runs is None else [dumps(r) for r in runs]


def loads(text: str | bytes, *, format: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
          max_depth: int = DEFAULT_MAX_DEPTH) -> Conversation:
    """One conversation from JSON or JSONL text; several conversations are an error here
    (use ``load_all``)."""
    convs = load_all(text, format=format, max_bytes=max_bytes, max_depth=max_depth)
    if len(convs) != 1:
        raise ShapeError(f"the input holds {len(convs)} conversations, expected one", where="input",
                         hint="Use load_all(), or pick one with --index on the CLI")
    return convs[0]


def load(path: str | Path, **kw: Any) -> Conversation:
    """One conversation from a file (see ``loads``)."""
    return loads(Path(path).read_bytes(), **kw)


def export(conv: Conversation, to: str) -> Export:
    """The conversation written in format ``to``, with notes on anything left out."""
    fmt = get_format(to)
    if fmt.write is None:
        raise UnknownFormatError(f"format {shown(to)} can be read but not written", where="to",
                                 hint=f"Writable: {', '.join(n for n, f in FORMATS.items() if f.write)}")
    head: list[str] = []
    if conv.messages and UNLOGGED in conv.messages[0].extra and FIXED_TOKENS in conv.messages[0].extra:
        # ctxlab's measure of what the trace left out: a size, no text
        conv = conv.with_messages(conv.messages[1:])
        head.append("the unlogged prefix (message 0, the size of a system prompt and tools the trace did not log) "
                    "is not written: it holds no text to send")
    out = fmt.write(conv)
    notes = head + list(out.notes)
    if isinstance(out.data, dict):  # top-level fields, then the net: nothing a reader kept vanishes unnoted
        notes += carry_top_level(conv, fmt.name, out.data, fmt.title)
    notes += unplaced_fields(conv, out.data, notes, fmt.title)
    reported = sum(m.usage is not None for m in conv.messages)
    if reported and fmt.name not in USAGE_WRITERS:
        notes.append(f"the usage {reported:,} call(s) reported is not written: {fmt.title} messages have no place "
                     "for it (LangChain's usage_metadata has)")
    return Export(out.data, group_notes(notes))


USAGE_WRITERS = {"langchain"}
"""Formats whose writer puts a message's reported usage back (LangChain: ``usage_metadata``)."""


MESSAGE_FORMATS = ("openai_chat", "anthropic", "langchain", "responses")
"""The modules of the message-list formats, in the order detection prefers them (each defines ``FORMAT``)."""
TRACE_FORMATS = ("claude_code", "codex", "swe_agent", "mini_swe_agent", "openhands",  # coding agents' traces
                 "otel", "langfuse", "langsmith")  # production traces: one conversation per agent run
"""The modules of the trace formats (each defines ``TRACE``). A new format is one module plus its name here."""


def _module(name: str) -> Any:
    import importlib
    return importlib.import_module(f"{__name__}.{name}")


for _name in MESSAGE_FORMATS:
    register(_module(_name).FORMAT)


def register_trace(tf: TraceFormat) -> TraceFormat:
    """Add a coding-agent trace format: its Format (for ``--format`` and the registry) and its
    whole-document detector and reader."""
    register(tf.format)
    TRACES[tf.format.name] = tf
    return tf


for _name in TRACE_FORMATS:
    register_trace(_module(_name).TRACE)

__all__ = ["FORMATS", "Export", "Format", "JSONText", "ReadContext", "detect", "dumps", "export", "get_format",
           "decode_text", "load", "load_all", "load_json_documents", "loads", "parse_tools", "register",
           "register_trace", "run_texts", "TRACES", "tools_to_anthropic", "tools_to_mcp", "tools_to_openai"]
