"""OpenTelemetry GenAI spans in OTLP JSON (an exporter's file, a collector's ``file`` exporter, a
backend's trace download).

Follows the OpenTelemetry semantic conventions for generative AI as of v1.37-v1.39 (status
Development): an inference span (``gen_ai.operation.name`` ``chat``, ``text_completion`` or
``generate_content``) holds the prompt in ``gen_ai.input.messages`` (messages of typed parts:
``text``, ``tool_call``, ``tool_call_response``, ``reasoning``, ``blob``/``file``/``uri``; the
schema of ``gen-ai-input-messages.json``), the reply in ``gen_ai.output.messages``, the system
prompt in ``gen_ai.system_instructions``, the tools in ``gen_ai.tool.definitions`` and the usage
in ``gen_ai.usage.input_tokens`` (which, by the convention, includes cached tokens),
``gen_ai.usage.output_tokens``, ``gen_ai.usage.cache_read.input_tokens`` and
``gen_ai.usage.cache_creation.input_tokens`` (``cache_write`` in later drafts; the deprecated
``cache_read_input_tokens`` spellings are read too). An attribute holding structured content may be
an OTLP ``arrayValue``/``kvlistValue`` or a JSON string: both are read.

The file format is OTLP/JSON: ``resourceSpans`` / ``scopeSpans`` / ``spans``, attributes as
``{"key", "value": {"stringValue" | "intValue" | ...}}``, int64 written as text, ids in hex. A JSONL
file of such documents (one export request a line) is read too.

One conversation per agent run: the inference spans under one ``invoke_agent`` span (the nearest
one: a sub-agent's calls are its own run), else those of one trace id; in start-time order.
``execute_tool`` spans that ended in error mark the matching tool result as an error.

Not carried (said in notes): spans of other operations (embeddings, retrieval), the older
convention that logged content as span events (``gen_ai.user.message``, ``gen_ai.choice``) or as
``gen_ai.prompt.N.*`` attributes, choices after the first, and a call whose span logged no
content (capture is opt-in): its reply and usage are kept when logged, its prompt cannot be.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from typing import Any, Iterator

from ..conversation import Message, Part, ToolCall, compact_json
from ..errors import ShapeError, shown
from .tools import parse_tools
from ._runs import CallRecord, assemble, int64_text, usage_of, whole
from ._trace import Trace, note_gaps, trace_format

NAME = "otel_genai"
INFERENCE = ("chat", "text_completion", "generate_content")
AGENT = "invoke_agent"
TOOL = "execute_tool"
_ERROR_CODES = (2, "2", "STATUS_CODE_ERROR", "ERROR")


# ---------------------------------------------------------------------- OTLP JSON


def _values(holder: Any) -> list:
    values = holder.get("values") if isinstance(holder, dict) else None
    return values if isinstance(values, list) else []


def _value(v: Any) -> Any:
    """An OTLP AnyValue as Python data (anything malformed reads as None: the attribute that
    needs it then says what is wrong)."""
    if not isinstance(v, dict):
        return v
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        raw = v["intValue"]
        number = int64_text(raw)
        return raw if number is None else number
    if "arrayValue" in v:
        return [_value(x) for x in _values(v["arrayValue"])]
    if "kvlistValue" in v:
        return {kv["key"]: _value(kv.get("value")) for kv in _values(v["kvlistValue"])
                if isinstance(kv, dict) and isinstance(kv.get("key"), str)}
    return None


def attributes(span: dict) -> dict[str, Any]:
    """A span's attributes as a dict (OTLP's key/value list; a plain object is taken as is)."""
    raw = span.get("attributes") or []
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, list):
        return {}
    return {a["key"]: _value(a.get("value")) for a in raw if isinstance(a, dict) and isinstance(a.get("key"), str)}


def _documents(doc: Any) -> list[dict]:
    return [d for d in (doc if isinstance(doc, list) else [doc]) if isinstance(d, dict)]


#: key of a one-run document (see ``runs``) listing where each of its spans is in the file it came from
WHERE = "x-ctxlab-where"


def spans(doc: Any, lines: tuple[int, ...] | None = None) -> Iterator[tuple[dict, str]]:
    """Every span of an OTLP JSON document (or JSONL of them), with its JSON path (``JSONL line 4:
    $.resourceSpans[0]...`` in a JSONL file; in a one-run document, the path in the file it came from)."""
    wheres = doc.get(WHERE) if isinstance(doc, dict) else None
    if isinstance(wheres, list):
        found = [sp for _, sp in _spans(doc, None)]
        if len(found) == len(wheres) and all(isinstance(w, str) for w in wheres):
            yield from ((sp, w[:300]) for sp, w in zip(found, wheres))
            return
    yield from ((sp, where) for where, sp in _spans(doc, lines))


def _spans(doc: Any, lines: tuple[int, ...] | None) -> Iterator[tuple[str, dict]]:
    for n, d in enumerate(_documents(doc)):
        base = (f"JSONL line {lines[n]}: $" if lines is not None and n < len(lines) else f"$[{n}]") \
            if isinstance(doc, list) else "$"
        for i, rs in enumerate(_list(d.get("resourceSpans"))):
            rs = rs if isinstance(rs, dict) else {}
            for j, ss in enumerate(_list(rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans"))):
                for k, sp in enumerate(_list(ss.get("spans") if isinstance(ss, dict) else None)):
                    if isinstance(sp, dict):
                        yield f"{base}.resourceSpans[{i}].scopeSpans[{j}].spans[{k}]", sp


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _op(attrs: dict) -> str | None:
    op = attrs.get("gen_ai.operation.name")
    return op if isinstance(op, str) else None


def detect_doc(doc: Any) -> bool:
    """OTLP JSON with at least one span carrying ``gen_ai.*`` attributes."""
    docs = doc if isinstance(doc, list) else [doc]
    if not docs or not all(isinstance(d, dict) and isinstance(d.get("resourceSpans"), list) for d in docs):
        return False
    for n, (sp, _) in enumerate(spans(doc)):
        if any(k.startswith("gen_ai.") for k in attributes(sp)):
            return True
        if n > 2000:
            break
    return False


# ---------------------------------------------------------------------- runs


def _start(sp: dict, where: str) -> int:
    """A span's start time in nanoseconds (0 when absent); a value that is no integer is an error
    naming the span (it orders the calls)."""
    raw = sp.get("startTimeUnixNano")
    if raw is None or raw == "":
        return 0
    number = raw if raw.__class__ is int else int64_text(raw)
    if number is None:
        raise ShapeError(f"startTimeUnixNano must be an integer of nanoseconds (or one written as text), found "
                         f"{shown(raw, 40)}", where=f"{where}.startTimeUnixNano")
    return number


def _run_of(doc: Any) -> dict[str, tuple[str, str | None]]:
    """span id -> (trace id, id of the nearest invoke_agent span at or above it, or None)."""
    info: dict[str, tuple[str, str | None, str]] = {}
    for sp, _ in spans(doc):
        sid = str(sp.get("spanId", ""))
        info[sid] = (str(sp.get("traceId", "")), str(sp.get("parentSpanId") or "") or None,
                     _op(attributes(sp)) or "")
    agent_of = _nearest_agents({sid: (parent, op == AGENT) for sid, (_, parent, op) in info.items()})
    return {sid: (tid, agent_of[sid]) for sid, (tid, _, _) in info.items()}


def _nearest_agents(tree: dict[str, tuple[str | None, bool]]) -> dict[str, str | None]:
    """span id -> the nearest agent span at or above it (None when there is none), for ``tree``
    of span id -> (parent id, whether it is an agent span). Each span is walked once: a walk up
    stops at the first span already answered, and its answer is given to every span on the way
    (a chain of 100,000 spans is 100,000 steps, not 5 billion); a parent loop ends the walk."""
    out: dict[str, str | None] = {}
    for start in tree:
        path: list[str] = []
        on_path: set[str] = set()
        cur: str | None = start
        found: str | None = None
        while cur is not None and cur in tree and cur not in on_path:
            if cur in out:
                found = out[cur]
                break
            if tree[cur][1]:
                found = cur
                break
            path.append(cur)
            on_path.add(cur)
            cur = tree[cur][0]
        for sid in path:
            out[sid] = found
        if start not in out:  # the start is itself an agent span
            out[start] = found
    return out


def runs(doc: Any, lines: tuple[int, ...] | None) -> list[dict]:
    """The file split into one OTLP document per agent run (its inference and tool spans, and
    the agent span), runs ordered by their first call."""
    run_of = _run_of(doc)
    groups: dict[tuple[str, str | None], list[dict]] = {}
    wheres: dict[tuple[str, str | None], list[str]] = {}
    first: dict[tuple[str, str | None], int] = {}
    for sp, where in spans(doc, lines):
        key = run_of.get(str(sp.get("spanId", "")), (str(sp.get("traceId", "")), None))
        attrs = attributes(sp)
        op = _op(attrs)
        if op != AGENT and any(k.startswith("gen_ai.") for k in attrs) or str(sp.get("spanId")) == key[1]:
            groups.setdefault(key, []).append(sp)  # other GenAI spans go along, to be noted
            wheres.setdefault(key, []).append(where)
            if op in INFERENCE:
                first[key] = min(first.get(key, _start(sp, where)), _start(sp, where))
    keys = sorted((k for k in groups if k in first), key=lambda k: (first[k], k[0], k[1] or ""))
    for k in [k for k in groups if k not in first]:  # GenAI spans outside any run with calls: noted there
        home = next((h for h in keys if h[0] == k[0]), None)
        if home is not None:
            groups[home] += groups[k]
            wheres[home] += wheres[k]
    if not keys:
        raise ShapeError("the OTLP file has no GenAI inference span (gen_ai.operation.name chat, "
                         "text_completion or generate_content)", where="$.resourceSpans",
                         hint="Export the spans of the model calls, not only the agent's")
    return [{"resourceSpans": [{"scopeSpans": [{"spans": groups[k]}]}], WHERE: wheres[k]} for k in keys]


# ---------------------------------------------------------------------- messages


def _structured(value: Any, where: str) -> Any:
    """Content logged as a JSON string or as OTLP structure."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise ShapeError("the attribute is not valid JSON", where=where,
                             hint="gen_ai.*.messages hold a JSON array of messages") from None
    return value


def _arguments(value: Any) -> str:
    if value is None:
        return "{}"
    return value if isinstance(value, str) else compact_json(value)


def _response_text(part: dict) -> str:
    value = part.get("response", part.get("result"))
    return value if isinstance(value, str) else compact_json(value) if value is not None else ""


def _message(raw: Any, where: str, notes: list[str]) -> list[Message]:
    """One logged message (role + parts) as ctxlab messages (tool responses become tool messages)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("role"), str):
        raise ShapeError("a message must be an object with a role", where=where)
    role, parts = raw["role"], raw.get("parts")
    if not isinstance(parts, list):
        content = raw.get("content")
        parts = [{"type": "text", "content": content}] if isinstance(content, str) else []
    texts: list[Part] = []
    calls: list[ToolCall] = []
    tools: list[Message] = []
    for k, p in enumerate(parts):
        kind = p.get("type") if isinstance(p, dict) else None
        if kind == "text":
            texts.append(Part("text", str(p.get("content") or "")))
        elif kind == "reasoning":
            texts.append(Part("thinking", str(p.get("content") or "")))
        elif kind == "tool_call":
            calls.append(ToolCall(str(p.get("id") or f"call_{len(calls)}"), str(p.get("name") or ""),
                                  _arguments(p.get("arguments"))))
        elif kind == "tool_call_response":
            tools.append(Message("tool", _response_text(p), tool_call_id=str(p.get("id") or "").strip()))
        elif isinstance(p, dict) and isinstance(kind, str):
            texts.append(Part(kind, "", {k2: v for k2, v in p.items() if k2 != "type"}))
            notes.append(f"{where}.parts[{k}]: a {shown(kind, 20)} part is kept as sent (not modelled)")
        else:
            raise ShapeError("a part must be an object with a type", where=f"{where}.parts[{k}]")
    if role == "tool" and not tools:  # a tool message whose parts are plain text
        call_id = raw.get("tool_call_id") or raw.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise ShapeError("a tool message has no tool_call_response part and no id", where=where,
                             hint="Tool results are parts of type tool_call_response with the call's id")
        return [Message("tool", "\n".join(p.text for p in texts), tool_call_id=call_id)]
    if role == "tool" or (tools and not texts and not calls):
        return tools
    if role not in ("system", "user", "assistant"):
        notes.append(f"{where}: role {shown(role, 20)} read as user")
        role = "user"
    content: str | tuple[Part, ...] = (texts[0].text if len(texts) == 1 and texts[0].type == "text"
                                       else tuple(texts) if texts else "")
    out = [Message(role, content, tool_calls=tuple(calls))] if (texts or calls or not tools) else []
    return tools + out if role == "user" else out + tools


def _messages(value: Any, where: str, notes: list[str]) -> list[Message] | None:
    if value is None:
        return None
    value = _structured(value, where)
    if not isinstance(value, list):
        raise ShapeError(f"expected a list of messages, found {type(value).__name__}", where=where)
    out: list[Message] = []
    for k, raw in enumerate(value):
        out += _message(raw, f"{where}[{k}]", notes)
    return out


def _system(value: Any, where: str) -> list[Message]:
    if value is None:
        return []
    value = _structured(value, where)
    if isinstance(value, str):
        return [Message("system", value)]
    if not isinstance(value, list):
        raise ShapeError("gen_ai.system_instructions must be a list of parts", where=where)
    text = "\n".join(str(p.get("content") or "") for p in value if isinstance(p, dict) and p.get("type") == "text")
    return [Message("system", text)] if text else []


# ---------------------------------------------------------------------- reading


def _failed(sp: dict, attrs: dict) -> str | None:
    status = sp.get("status") or {}
    if isinstance(status, dict) and status.get("code") in _ERROR_CODES:
        return str(attrs.get("error.type") or status.get("message") or "error")
    return str(attrs["error.type"]) if attrs.get("error.type") else None


def _usage(attrs: dict, where: str, model: str | None):
    def num(*keys: str) -> int | None:
        for key in keys:
            if key in attrs:
                return whole(attrs[key], f"{where} (attribute {key})", key)
        return None
    return usage_of(num("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
                    num("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
                    num("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens",
                        "gen_ai.usage.input_tokens.cached"),
                    num("gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_write.input_tokens",
                        "gen_ai.usage.cache_creation_input_tokens"), model)


def _call(sp: dict, where: str, trace: Trace) -> CallRecord:
    attrs = attributes(sp)
    model = attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model")
    model = model if isinstance(model, str) else None
    system = _system(attrs.get("gen_ai.system_instructions"), f"{where} (gen_ai.system_instructions)")
    prompt = _messages(attrs.get("gen_ai.input.messages"), f"{where} (gen_ai.input.messages)", trace.notes)
    reply = _messages(attrs.get("gen_ai.output.messages"), f"{where} (gen_ai.output.messages)", trace.notes) or []
    if len([m for m in reply if m.role == "assistant"]) > 1:
        trace.notes.append(f"{where}: several choices: the first is kept")
        first = next(k for k, m in enumerate(reply) if m.role == "assistant")
        reply = [reply[first]]
    if prompt is not None and system and not any(m.role == "system" for m in prompt):
        prompt = system + prompt
    tools = attrs.get("gen_ai.tool.definitions")
    if tools is not None and not trace.tools:
        tools = _structured(tools, f"{where} (gen_ai.tool.definitions)")
        if isinstance(tools, list) and tools:
            trace.tools = parse_tools(tools, f"{where} (gen_ai.tool.definitions)")
    return CallRecord(prompt, reply, _usage(attrs, where, model), f"span {shown(sp.get('spanId'), 20)}",
                      _failed(sp, attrs), model)


def _mark_tool_errors(trace: Trace, failed_tools: dict[str, str]) -> None:
    for i, m in enumerate(trace.messages):
        if m.role == "tool" and m.tool_call_id in failed_tools and not m.is_error:
            trace.messages[i] = replace(m, is_error=True)
            trace.notes.append(f"message {i}: the tool's span ended in error ({shown(failed_tools[m.tool_call_id], 60)})")


def read_doc(doc: Any, lines: tuple[int, ...] | None) -> Trace:
    """Read the inference spans of an OTLP JSON document (one agent run) into a conversation."""
    trace = Trace(meta={})
    calls: list[tuple[int, CallRecord]] = []
    failed_tools: dict[str, str] = {}
    skipped: Counter[str] = Counter()
    traces: set[str] = set()
    for sp, where in spans(doc, lines):
        attrs = attributes(sp)
        op = _op(attrs)
        if op in INFERENCE:
            calls.append((_start(sp, where), _call(sp, where, trace)))
            traces.add(str(sp.get("traceId", "")))
        elif op == TOOL:
            err = _failed(sp, attrs)
            if err and attrs.get("gen_ai.tool.call.id"):
                failed_tools[str(attrs["gen_ai.tool.call.id"])] = err
        elif op == AGENT:
            for key in ("gen_ai.agent.name", "gen_ai.agent.id", "gen_ai.conversation.id"):
                if isinstance(attrs.get(key), str):
                    trace.meta.setdefault(key.removeprefix("gen_ai.").replace(".", "_"), attrs[key])
        else:
            skipped[op or "without gen_ai.operation.name"] += 1
    calls.sort(key=lambda c: c[0])
    assemble([c for _, c in calls], trace, "span")
    _mark_tool_errors(trace, failed_tools)
    if len(traces) > 1:
        trace.notes.append(f"the calls come from {len(traces)} trace ids, read as one run")
    if traces:
        trace.meta.setdefault("trace_id", sorted(traces)[0])
    note_gaps(trace, skipped, "spans of other operations", "span")
    return trace


TRACE = trace_format(NAME, "OpenTelemetry GenAI spans (OTLP JSON)", detect_doc, read_doc, runs)
FORMAT = TRACE.format
