"""What every writer shares after it wrote the messages: the top-level fields, and the check that
no field a reader kept vanished without a note.

* :func:`carry_top_level`: the input's other top-level fields (``title``, ``facts``, request
  parameters such as ``temperature`` or ``tool_choice``) go into the written body. A field that is
  a request parameter of another API is kept when the target accepts it in the same shape,
  renamed where the target names it otherwise (``max_tokens`` -> ``max_output_tokens`` for
  Responses), and named in a note where the target has no place for it. Fields that are no API's
  request parameter (``title``, ``facts``, ``planted``) are ctxlab's own and always kept.
* :func:`unplaced_fields`: every provider field a reader kept (a message's or a part's or a
  tool's unmodelled field: ``cache_control``, ``citations``, ``usage``, ``strict``, MCP
  ``annotations``...) must be in the written body with its value, or named in a note.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from ..conversation import Conversation
from ..errors import shown_keys
from ._base import INTERNAL_EXTRA, MODEL_NAMED

_COMMON = {"temperature", "top_p", "stream", "metadata", "service_tier"}
#: top-level request parameters of each API (besides messages, tools, model, system, input)
PARAMS: dict[str, set[str]] = {
    "openai": _COMMON | {"max_tokens", "max_completion_tokens", "tool_choice", "parallel_tool_calls", "stop", "n",
                         "seed", "response_format", "frequency_penalty", "presence_penalty", "logit_bias", "logprobs",
                         "top_logprobs", "user", "stream_options", "store", "reasoning_effort", "modalities", "audio",
                         "prediction", "web_search_options", "verbosity", "prompt_cache_key", "safety_identifier"},
    "anthropic": _COMMON | {"max_tokens", "tool_choice", "stop_sequences", "top_k", "thinking", "container",
                            "mcp_servers"},
    "responses": _COMMON | {"max_output_tokens", "tool_choice", "parallel_tool_calls", "previous_response_id",
                            "store", "reasoning", "text", "truncation", "user", "include", "background",
                            "max_tool_calls", "prompt", "prompt_cache_key", "safety_identifier", "top_logprobs",
                            "conversation"},
}
PARAMS["langchain"] = set()  # a LangGraph state: no request parameters, but any key may sit in it
_ALL_PARAMS = set().union(*PARAMS.values())
#: (source format, target format) -> {source name: target name}
RENAMES: dict[tuple[str, str], dict[str, str]] = {
    ("openai", "responses"): {"max_tokens": "max_output_tokens", "max_completion_tokens": "max_output_tokens"},
    ("openai", "anthropic"): {"max_completion_tokens": "max_tokens", "stop": "stop_sequences"},
    ("responses", "openai"): {"max_output_tokens": "max_completion_tokens"},
    ("responses", "anthropic"): {"max_output_tokens": "max_tokens"},
    ("anthropic", "openai"): {"stop_sequences": "stop"},
    ("anthropic", "responses"): {"max_tokens": "max_output_tokens"},
}
_SAME_SHAPE_STRINGS = {"tool_choice"}  # "auto" / "none" / "required" mean the same in OpenAI Chat and Responses


def _fits(key: str, value: Any, source: str, target: str) -> bool:
    """Whether ``key`` with ``value`` (a request parameter of ``source``) is valid in ``target``."""
    if source == target or target == "langchain" or source == "langchain":
        return True
    if key not in PARAMS.get(target, set()):
        return False
    if key in _SAME_SHAPE_STRINGS:  # objects differ between APIs; OpenAI's strings mean the same in Responses
        return isinstance(value, str) and {source, target} <= {"openai", "responses"}
    if key == "stop" and isinstance(value, str):
        return target == "openai"
    return True


def carry_top_level(conv: Conversation, target: str, body: dict[str, Any], title: str) -> list[str]:
    """Put the input's other top-level fields into ``body`` (in place); notes for those left out."""
    notes: list[str] = []
    source = conv.format or target
    left: list[str] = []
    for key, value in conv.metadata.items():
        if key in body or key == MODEL_NAMED:  # the model's name as the file wrote it: written as "model"
            continue
        if key not in _ALL_PARAMS:
            body[key] = value  # ctxlab's own or the user's field: every format's file keeps it
            continue
        name = RENAMES.get((source, target), {}).get(key, key)
        if name != key and name not in body and name in PARAMS.get(target, set()):
            body[name] = [value] if name == "stop_sequences" and isinstance(value, str) else value
            notes.append(f"top-level {shown_keys([key])} is written as {name} for {title}")
        elif _fits(key, value, source, target):
            body[key] = value
        else:
            left.append(key)
    if left:
        notes.append(f"top-level field(s) {shown_keys(left)} have no place in {title} requests in that form; left out")
    if conv.facts and "facts" not in body:
        body["facts"] = list(conv.facts)
    return notes


#: part fields ctxlab models (an image's URL or data, a thinking signature): each writer converts
#: them or notes the whole part
_MODELED_PART_KEYS = frozenset({"url", "detail", "signature", "data", "media_type", "file_id", "source"})


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True, default=str)


def _written_pairs(node: Any, keys: set[str], out: set[int]) -> None:
    """Hashes of every ``key: value`` of the written body whose key is one of ``keys``."""
    stack = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                if k in keys:
                    out.add(hash((k, _compact(v))))
                if isinstance(v, (dict, list)):
                    stack.append(v)
        elif isinstance(node, list):
            stack.extend(v for v in node if isinstance(v, (dict, list)))


def _kept_fields(conv: Conversation) -> Iterable[tuple[str, str, Any]]:
    """(where, key, value) of every field a reader kept without modelling it."""
    for i, m in enumerate(conv.messages):
        for k, v in m.extra.items():
            if k not in INTERNAL_EXTRA:
                yield f"message {i}", k, v
        anth = m.extra.get("anthropic") or {}  # block, message and tool_use fields the Anthropic reader kept
        fields = [anth.get("block") or {}, anth.get("message") or {}, *(anth.get("tool_use") or {}).values()]
        for group in fields:
            for k, v in (group.items() if isinstance(group, dict) else ()):
                yield f"message {i}", k, v
        if not isinstance(m.content, str):
            for p in m.content:
                for k, v in p.data.items():
                    if not (p.modeled and k in _MODELED_PART_KEYS):
                        yield f"message {i}", k, v
        if m.id is not None:
            yield f"message {i}", "id", m.id
    for t in conv.tools:
        for k, v in t.extra.items():
            yield f"tool {t.name}", k, v


def unplaced_fields(conv: Conversation, body: Any, notes: list[str], title: str) -> list[str]:
    """Notes for the kept fields that are not in ``body`` with their value and that no note of
    the writer names already."""
    fields = list(_kept_fields(conv))
    if not fields:
        return []
    written: set[int] = set()
    _written_pairs(body, {k for _, k, _ in fields}, written)
    named = " ".join(notes)
    missing: dict[str, list[str]] = {}
    for where, key, value in fields:
        if hash((key, _compact(value))) not in written and key not in named and shown_keys([key]) not in named:
            missing.setdefault(where, [])
            if key not in missing[where]:
                missing[where].append(key)
    servers = {t.name: t.extra["type"] for t in conv.tools if "type" in t.extra}
    return [f"{where}: server tool of type {servers[where[5:]]} has no place in {title}; left out"
            if where.startswith("tool ") and "type" in keys and where[5:] in servers else
            f"{where}: field(s) {shown_keys(keys)} have no place in {title}; left out" for where, keys in missing.items()]
