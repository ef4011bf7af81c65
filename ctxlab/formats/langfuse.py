"""Langfuse trace exports: the UI's JSON download of a trace, and the public API's observations.

Follows the Langfuse public API as documented for v3 (``GET /api/public/traces/{id}``: a trace
with its ``observations``; ``GET /api/public/observations``: ``{"data": [...], "meta": {...}}``).
Two shapes are read:

* a trace: ``{"id", "name", ..., "observations": [...]}`` (the UI's "download as JSON" and the
  trace endpoint), or a list of such traces;
* an observations page: ``{"data": [observation, ...], "meta": ...}`` (or a bare list, or JSONL of
  observations): grouped by ``traceId``, one conversation per trace.

Every ``GENERATION`` observation is one model call, in ``startTime`` order. Its ``input`` is the
prompt as the integration logged it (a message list, or ``{"messages", "tools"}``: OpenAI,
Anthropic or LangChain messages, detected), its ``output`` the reply (an assistant message, a
chat completion with ``choices``, an Anthropic response, or text). Usage comes from
``usageDetails``: Langfuse's ``input`` counts the prompt tokens *not* served from the cache, so
the billed prompt is ``input`` plus the cache keys (``input_cached_tokens``,
``cache_read_input_tokens``, ``input_cache_read``; writes: ``cache_creation_input_tokens``,
``input_cache_creation``); older exports' ``usage.input`` / ``promptTokens`` are read when
``usageDetails`` is absent. A generation with ``level`` ``ERROR`` and no output is a failed call;
a ``TOOL`` observation with ``level`` ``ERROR`` marks its tool result as an error when its
output names the call id.

Not carried (said in notes): observations other than generations and tools (spans, events,
retrievers, scores), ``costDetails`` (ctxlab prices calls itself), prompt references, and media
Langfuse stored apart from the observation (``@@@langfuseMedia`` references stay as text).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from ..errors import ShapeError, shown
from .tools import parse_tools
from ._runs import CallRecord, assemble, read_items, usage_of, whole
from ._trace import Trace, note_gaps, trace_format

NAME = "langfuse"
_CACHE_READ = ("input_cached_tokens", "cache_read_input_tokens", "input_cache_read", "cached_tokens")
_CACHE_WRITE = ("cache_creation_input_tokens", "input_cache_creation", "input_cache_write")


def _is_observation(o: Any) -> bool:
    return isinstance(o, dict) and "type" in o and ("traceId" in o or "startTime" in o) and "id" in o


def _is_trace(t: Any) -> bool:
    return isinstance(t, dict) and isinstance(t.get("observations"), list) and "id" in t


def detect_doc(doc: Any) -> bool:
    """A Langfuse trace (with observations), a list of them, an observations page, or a list /
    JSONL of observations with at least one GENERATION."""
    if _is_trace(doc):
        return True
    if isinstance(doc, dict) and isinstance(doc.get("data"), list) and isinstance(doc.get("meta"), dict):
        doc = doc["data"]
    if isinstance(doc, list) and doc:
        if all(_is_trace(t) for t in doc[:50]):
            return True
        return all(_is_observation(o) for o in doc[:200]) and any(o.get("type") == "GENERATION" for o in doc)
    return False


def _observations(doc: Any) -> list[tuple[dict, str]]:
    if isinstance(doc, dict) and isinstance(doc.get("observations"), list):
        return [(o, f"$.observations[{k}]") for k, o in enumerate(doc["observations"])]
    if isinstance(doc, dict) and isinstance(doc.get("data"), list):
        return [(o, f"$.data[{k}]") for k, o in enumerate(doc["data"])]
    if isinstance(doc, list):
        return [(o, f"$[{k}]") for k, o in enumerate(doc)]
    raise ShapeError("expected a Langfuse trace or a list of observations", where="$")


def runs(doc: Any, lines: tuple[int, ...] | None) -> list[Any]:
    """One document per trace: a trace as it is, observations grouped by ``traceId`` (in the
    order each trace first appears)."""
    if _is_trace(doc):
        return [doc]
    if isinstance(doc, list) and doc and all(_is_trace(t) for t in doc):
        return list(doc)
    groups: dict[str, list[dict]] = {}
    for o, where in _observations(doc):
        if not isinstance(o, dict):
            raise ShapeError(f"an observation must be an object, found {type(o).__name__}", where=where)
        groups.setdefault(str(o.get("traceId", "")), []).append(o)
    return [{"data": obs, "meta": {"traceId": tid}} for tid, obs in groups.items()
            if any(o.get("type") == "GENERATION" for o in obs)] or [{"data": [], "meta": {}}]


def _prompt(value: Any, where: str, trace: Trace) -> list | None:
    """The message items of a generation's input (and its tools, kept on the trace)."""
    if value is None:
        return None
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if isinstance(value, dict):
        if isinstance(value.get("tools"), list) and value["tools"] and not trace.tools:
            trace.tools = parse_tools(value["tools"], f"{where}.tools")
        items = value.get("messages")
        if not isinstance(items, list):
            raise ShapeError("the input is an object without 'messages'", where=where,
                             hint="A generation's input is a message list or {\"messages\": [...]}")
        system = value.get("system")
        return ([{"role": "system", "content": system}] if isinstance(system, (str, list)) else []) + items
    if isinstance(value, list):
        return value
    raise ShapeError(f"a generation's input must be messages, found {type(value).__name__}", where=where)


def reply_items(value: Any, where: str) -> list:
    """The assistant message items of a logged reply (a message, a chat completion, an
    Anthropic response, LangChain generations, or text)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"role": "assistant", "content": value}]
    if isinstance(value, list):
        return value
    if not isinstance(value, dict):
        raise ShapeError(f"a reply must be a message or text, found {type(value).__name__}", where=where)
    if isinstance(value.get("choices"), list) and value["choices"]:
        msg = value["choices"][0].get("message") if isinstance(value["choices"][0], dict) else None
        return [msg] if isinstance(msg, dict) else []
    if value.get("type") == "message" and isinstance(value.get("content"), list):  # an Anthropic response
        return [{"role": "assistant", "content": value["content"]}]
    if isinstance(value.get("generations"), list):  # LangChain LLMResult
        gens = value["generations"][0] if value["generations"] and isinstance(value["generations"][0], list) \
            else value["generations"]
        first = gens[0] if gens and isinstance(gens[0], dict) else {}
        return [first["message"]] if isinstance(first.get("message"), dict) else \
            ([{"role": "assistant", "content": first["text"]}] if isinstance(first.get("text"), str) else [])
    if isinstance(value.get("messages"), list):
        return value["messages"][-1:]
    if "role" in value or "type" in value or "lc" in value:
        return [value]
    if isinstance(value.get("content"), str):
        return [{"role": "assistant", "content": value["content"]}]
    raise ShapeError("the reply is an object this reader does not know (no role, choices or content)", where=where)


def _usage(o: dict, where: str, model: str | None):
    details = o.get("usageDetails") if isinstance(o.get("usageDetails"), dict) else None
    if details:
        def get(*keys: str) -> int | None:
            vals = [whole(details[k], f"{where}.usageDetails.{k}", k) for k in keys if k in details]
            return sum(v for v in vals if v is not None) if vals else None
        fresh, cached, written = get("input"), get(*_CACHE_READ), get(*_CACHE_WRITE)
        prompt = None if fresh is None and cached is None else (fresh or 0) + (cached or 0) + (written or 0)
        return usage_of(prompt, get("output"), cached, written, model)
    old = o.get("usage") if isinstance(o.get("usage"), dict) else {}
    prompt = whole(old.get("input", o.get("promptTokens")), f"{where}.usage.input", "usage.input")
    out = whole(old.get("output", o.get("completionTokens")), f"{where}.usage.output", "usage.output")
    return usage_of(prompt or None, out, None, None, model)


def _call(o: dict, where: str, trace: Trace) -> CallRecord:
    model = o.get("model") if isinstance(o.get("model"), str) else None
    items = _prompt(o.get("input"), f"{where}.input", trace)
    prompt = read_items(items, f"{where}.input", trace.notes) if items is not None else None
    reply = read_items(reply_items(o.get("output"), f"{where}.output"), f"{where}.output", trace.notes)
    error = str(o.get("statusMessage") or "ERROR") if o.get("level") == "ERROR" else None
    return CallRecord(prompt, [m for m in reply if m.role == "assistant"][:1], _usage(o, where, model),
                      f"generation {shown(o.get('id'), 40)}", error, model)


def _mark_tool_errors(trace: Trace, failed: list[dict]) -> None:
    """Mark as errors the tool results whose text is the output of a TOOL observation that
    ended in error (Langfuse links a tool observation to no call id)."""
    outputs = {o["output"]: o for o in failed if isinstance(o.get("output"), str)}
    marked = 0
    for i, m in enumerate(trace.messages):
        if m.role == "tool" and not m.is_error and m.text in outputs:
            trace.messages[i] = replace(m, is_error=True)
            marked += 1
            trace.notes.append(f"message {i}: the tool observation ended in error "
                               f"({shown(outputs[m.text].get('statusMessage') or 'ERROR', 60)})")
    if len(failed) > marked:
        trace.notes.append(f"{len(failed) - marked:,} tool observation(s) ended in error without a result the "
                           "conversation holds: not marked")


def read_doc(doc: Any, lines: tuple[int, ...] | None) -> Trace:
    """Read the generations of one Langfuse trace (or one trace's observations)."""
    trace = Trace(meta={})
    if isinstance(doc, dict):
        for key in ("id", "name", "sessionId", "userId"):
            if isinstance(doc.get(key), str):
                trace.meta.setdefault("trace_id" if key == "id" else key, doc[key])
        if isinstance(doc.get("meta"), dict) and isinstance(doc["meta"].get("traceId"), str):
            trace.meta.setdefault("trace_id", doc["meta"]["traceId"])
    calls: list[tuple[str, int, CallRecord]] = []
    skipped: Counter[str] = Counter()
    failed_tools: list[str] = []
    for k, (o, where) in enumerate(_observations(doc)):
        if not isinstance(o, dict):
            raise ShapeError(f"an observation must be an object, found {type(o).__name__}", where=where)
        kind = o.get("type")
        if kind == "GENERATION":
            calls.append((str(o.get("startTime") or ""), k, _call(o, where, trace)))
        elif kind == "TOOL" and o.get("level") == "ERROR":
            failed_tools.append(o)
        else:
            skipped[str(kind)] += 1
    calls.sort(key=lambda c: (c[0], c[1]))
    assemble([c for _, _, c in calls], trace, "generation")
    _mark_tool_errors(trace, failed_tools)
    note_gaps(trace, skipped, "observations other than generations", "generation")
    return trace


TRACE = trace_format(NAME, "Langfuse trace export (JSON)", detect_doc, read_doc, runs)
FORMAT = TRACE.format
