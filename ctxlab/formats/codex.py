"""Codex CLI session files (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

One record a line, ``{"timestamp", "type", "payload"}``. ``response_item`` payloads are OpenAI
Responses API items (messages, reasoning, function calls and their outputs): what the model saw.
They are read by the Responses reader, after ``custom_tool_call`` (a freeform tool such as
``apply_patch``) and ``local_shell_call`` items are turned into function calls. ``event_msg``
records repeat what the items hold for the UI (user_message, agent_message) and are left out,
except ``token_count``: its ``last_token_usage`` is the billed Usage of the reply just before
it; ``turn_context`` gives the model; ``session_meta`` the working directory and, in newer
versions, the system prompt (``base_instructions``). A ``compacted`` record holds the summary that
replaced the history: it is read as a user message marked as a compaction summary. Older rollouts
(items directly on the lines, a first line with ``instructions``) are read too.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from typing import Any

from ..conversation import Message, Usage
from ..errors import ShapeError, shown
from . import responses
from ._base import ReadContext
from ._trace import Trace, counted, trace_format, as_records, compaction, line_where, usage_from

NAME = "codex"
_ITEM_TYPES = ("message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
               "custom_tool_call_output", "local_shell_call")
_RECORD_TYPES = ("session_meta", "turn_context", "response_item", "event_msg", "compacted")


def detect_doc(doc: Any) -> bool:
    """Codex rollouts: records with ``type`` and ``payload``, one of them ``session_meta`` or
    ``response_item``; or an old rollout (a first line with ``id`` and ``instructions``)."""
    records = doc if isinstance(doc, list) else [doc]
    if not records or not all(isinstance(r, dict) for r in records[:200]):
        return False
    head = records[0]
    if {"id", "timestamp"} <= head.keys() and "instructions" in head and "role" not in head:
        return True
    typed = [r for r in records[:200] if "payload" in r and isinstance(r.get("type"), str)]
    return len(typed) == len(records[:200]) and any(r["type"] in ("session_meta", "response_item") for r in typed)


def _output_text(value: Any) -> str | list:
    """An output as the Responses reader takes it: a string or a list of text parts."""
    if isinstance(value, (str, list)):
        return value
    return json.dumps(value, ensure_ascii=False) if value is not None else ""


def _item(p: dict, notes: list[str], where: str) -> dict | None:
    """A response item the Responses reader understands (None when it is left out)."""
    kind = p.get("type")
    if kind == "message":
        return {"type": "message", "role": p.get("role"), "content": p.get("content")}
    if kind == "reasoning":
        if p.get("encrypted_content"):
            notes.append(f"{where}: encrypted reasoning is not carried (only its summary text): the model saw more "
                         "tokens than are counted here")
        return {"type": "reasoning", "summary": p.get("summary") or []}
    if kind == "function_call":
        return {"type": "function_call", "call_id": p.get("call_id"), "name": p.get("name"),
                "arguments": p.get("arguments")}
    if kind in ("function_call_output", "custom_tool_call_output"):
        return {"type": "function_call_output", "call_id": p.get("call_id"), "output": _output_text(p.get("output"))}
    if kind == "custom_tool_call":
        notes.append(f"{where}: freeform tool call {shown(p.get('name'), 30)} kept as a function call with "
                     "arguments {\"input\": ...}")
        return {"type": "function_call", "call_id": p.get("call_id"), "name": p.get("name"),
                "arguments": json.dumps({"input": p.get("input", "")}, ensure_ascii=False)}
    if kind == "local_shell_call":
        return {"type": "function_call", "call_id": p.get("call_id") or p.get("id"), "name": "local_shell",
                "arguments": json.dumps(p.get("action") or {}, ensure_ascii=False)}
    return None


class _Reader:
    """Gathers response items (with the line each came from) and what the other records say."""

    def __init__(self, lines: tuple[int, ...] | None):
        self.lines = lines
        self.trace = Trace(meta={})
        self.items: list[dict] = []
        self.item_lines: list[int] = []
        self.summaries: list[str] = []
        self.skipped: Counter[str] = Counter()
        self.bills: list[tuple[int, Usage]] = []  # (items read before the event, the call's usage)
        self.last_total: Any = None

    def add(self, k: int, item: dict) -> None:
        """Queue one Responses item read from record ``k``."""
        self.items.append(item)
        self.item_lines.append(self.lines[k] if self.lines is not None else k + 1)

    def meta(self, p: dict) -> None:
        """session_meta: working directory, session id, and the system prompt when logged."""
        for key in ("id", "cwd", "cli_version", "originator"):
            if isinstance(p.get(key), str):
                self.trace.meta.setdefault(key if key != "id" else "session_id", p[key])
        base = p.get("base_instructions") or p.get("instructions")
        text = base.get("text") if isinstance(base, dict) else base
        if isinstance(text, str) and text:
            self.items.insert(0, {"type": "message", "role": "system", "content": text})
            self.item_lines.insert(0, 1)

    def record(self, k: int, rec: Any) -> None:
        """One JSONL record."""
        where = line_where(self.lines, k)
        if not isinstance(rec, dict):
            raise ShapeError(f"expected a record object, found {type(rec).__name__}", where=where)
        kind, p = rec.get("type"), rec.get("payload")
        if "payload" not in rec:  # an old rollout: items on the lines, state records, a first meta line
            if "instructions" in rec and k == 0:
                self.meta(rec)
            elif kind in _ITEM_TYPES:
                self.record(k, {"type": "response_item", "payload": rec})
            else:
                self.skipped["record_type " + str(rec.get("record_type", kind))] += 1
            return
        if not isinstance(p, dict):
            raise ShapeError("the payload must be an object", where=f"{where}: $.payload")
        if kind == "session_meta":
            self.meta(p)
        elif kind == "turn_context":
            if isinstance(p.get("model"), str):
                self.trace.model = p["model"]
        elif kind == "compacted":
            text = p.get("message") if isinstance(p.get("message"), str) else ""
            self.summaries.append(text)
            self.add(k, {"type": "message", "role": "user", "content": text or "(compacted)"})
        elif kind == "response_item":
            item = _item(p, self.trace.notes, where)
            if item is None:
                self.skipped[f"{p.get('type')} item"] += 1
            else:
                self.add(k, item)
        elif kind == "event_msg" and p.get("type") == "token_count" and self.token_count(p.get("info")):
            return
        else:
            self.skipped[f"{kind}" + (f" {p.get('type')}" if kind == "event_msg" else "")] += 1

    def token_count(self, info: Any) -> bool:
        """A ``token_count`` event: the usage of the model call just made (``last_token_usage``);
        a repeat of the previous event (same ``total_token_usage``) or one without figures is skipped."""
        if not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict):
            return False
        if info.get("total_token_usage") is not None and info.get("total_token_usage") == self.last_total:
            return False
        self.last_total = info.get("total_token_usage")
        usage = usage_from(info["last_token_usage"], self.trace.model, "input_tokens", "output_tokens",
                           "cached_input_tokens", "cache_write_input_tokens")
        if usage is None:
            return False
        self.bills.append((len(self.items), usage))
        return True

    def finish(self) -> Trace:
        """Read the items with the Responses reader; mark compaction summaries; write notes."""
        ctx = ReadContext(base="$", lines=tuple(self.item_lines))
        msgs = responses.read(self.items, ctx)
        self.trace.notes.extend(n.replace("item(s)", "item(s) of the session's response items")
                                for n in ctx.notes if not n.startswith("item(s)"))
        self.trace.messages = _bill(_mark_summaries(msgs, self.summaries, self.trace), self.items, self.bills,
                                    self.trace.notes)
        if self.skipped:
            kinds = counted(self.skipped)
            self.trace.notes.append(f"records that repeat or describe the items for the UI were left out ({kinds})")
        if not any(m.role == "system" for m in self.trace.messages):
            self.trace.notes.append("this rollout logs no system prompt and no tool definitions: counts leave out both")
        return self.trace


def _is_reply(item: dict) -> bool:
    return item.get("type") in ("reasoning", "function_call") or (
        item.get("type") == "message" and item.get("role") == "assistant")


def _bill(msgs: list[Message], items: list[dict], bills: list[tuple[int, Usage]], notes: list[str]) -> list[Message]:
    """Give each assistant message the usage of the ``token_count`` event that followed its items:
    the k-th run of reply items (reasoning, message, calls) is the k-th assistant message read."""
    if not bills:
        return msgs
    run_of: list[int] = []  # per item: the number of the reply run it belongs to (-1: not a reply)
    runs = 0
    for k, item in enumerate(items):
        if _is_reply(item):
            if k == 0 or not _is_reply(items[k - 1]):
                runs += 1
            run_of.append(runs - 1)
        else:
            run_of.append(-1)
    replies = [i for i, m in enumerate(msgs) if m.role == "assistant"]
    if runs != len(replies):
        notes.append(f"{len(bills):,} token_count event(s) not matched to replies ({runs:,} runs of reply items, "
                     f"{len(replies):,} assistant messages): no billed usage is attached")
        return msgs
    out, matched = list(msgs), 0
    for at, usage in bills:
        if at > 0 and run_of[at - 1] >= 0:
            i = replies[run_of[at - 1]]
            out[i] = replace(out[i], usage=usage)
            matched += 1
    if matched < len(bills):
        notes.append(f"{len(bills) - matched:,} token_count event(s) follow no reply: left out")
    return out


def _mark_summaries(msgs: list[Message], summaries: list[str], trace: Trace) -> list[Message]:
    """Mark the user messages that hold a compacted record's summary."""
    out, want = list(msgs), list(summaries)
    for i, m in enumerate(out):
        if want and m.role == "user" and m.text == (want[0] or "(compacted)"):
            out[i] = compaction(m)
            want.pop(0)
            trace.meta.setdefault("compactions", []).append({"message": i})
            trace.notes.append(f"message {i}: compaction summary: the model saw it in place of the history before it; "
                               "that history is kept here")
    return out


def read_doc(doc: Any, lines: tuple[int, ...] | None) -> Trace:
    """Read a Codex rollout (its records) into messages."""
    reader = _Reader(lines)
    for k, rec in enumerate(as_records(doc, lines)):
        reader.record(k, rec)
    return reader.finish()


TRACE = trace_format(NAME, "Codex CLI session (JSONL)", detect_doc, read_doc)
FORMAT = TRACE.format
