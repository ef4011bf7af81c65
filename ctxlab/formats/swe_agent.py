"""SWE-agent trajectories (``.traj``): ``{"history": [...], "trajectory": [...], "info": ...}``.

``history`` is what the model saw. In function-calling runs it is OpenAI Chat messages (an
assistant message with ``tool_calls``, a ``tool`` message with ``tool_call_ids``). In text-action
runs the model wrote its command in text (``action``) and the next ``user`` message is the
observation: each action becomes one tool call (named by the command's first word, arguments
``{"command": action}``, content the ``thought``) and the observation that follows its result.
Demonstration messages (``is_demo``) stay user messages, with a note.
"""
from __future__ import annotations

import json
from typing import Any

from ..conversation import Message, ToolCall
from ..errors import ShapeError
from . import openai_chat
from ._base import Format
from ._trace import Trace, TraceFormat, content_text, never, sub_read

NAME = "swe_agent"
#: fields of a history message that carry something a converted file would lose (noted when set)
_UNKEPT = ("thinking_blocks", "cache_control")
_DROP_KEYS = ("agent", "message_type", "thought", "action", "is_demo", "tool_call_ids", "cache_control", "thinking_blocks")


def detect_doc(doc: Any) -> bool:
    """An object with a ``history`` list of role messages, and ``trajectory`` or ``info``."""
    if not (isinstance(doc, dict) and isinstance(doc.get("history"), list) and doc["history"]):
        return False
    head = doc["history"][:50]
    return all(isinstance(m, dict) and "role" in m for m in head) and (
        "trajectory" in doc or "info" in doc or any({"agent", "message_type", "action"} & m.keys() for m in head))


def _command_name(action: str) -> str:
    """The tool a text action calls: its first word (``open``, ``edit``, ``python``...)."""
    word = action.strip().split(None, 1)[0] if action.strip() else "command"
    return word[:64]


class _Reader:
    def __init__(self) -> None:
        self.trace = Trace(meta={})
        self.open_action: str | None = None  # id of a text action waiting for its observation
        self.actions = 0
        self.demos = 0

    def text_action(self, k: int, m: dict) -> None:
        """An assistant text action as one tool call."""
        self.actions += 1
        cid = f"action-{k}"
        action = m["action"]
        content = m["thought"] if isinstance(m.get("thought"), str) else \
            content_text(m.get("content"), f"$.history[{k}].content")
        self.trace.add([Message("assistant", content, tool_calls=(
            ToolCall(cid, _command_name(action), json.dumps({"command": action}, ensure_ascii=False)),))])
        self.open_action = cid

    def message(self, k: int, m: Any) -> None:
        where = f"$.history[{k}]"
        if not isinstance(m, dict):
            raise ShapeError(f"expected a message object, found {type(m).__name__}", where=where)
        at = len(self.trace.messages)
        self._message(k, m, where)
        if len(self.trace.messages) > at:
            self.trace.note_unkept(at, [f for f in _UNKEPT if m.get(f)], "SWE-agent")

    def _message(self, k: int, m: dict, where: str) -> None:
        role = m.get("role")
        if m.get("is_demo"):
            self.demos += 1
        if role == "assistant" and not m.get("tool_calls") and isinstance(m.get("action"), str) and m["action"].strip():
            self.text_action(k, m)
            return
        if role == "user" and self.open_action is not None and not m.get("is_demo"):
            content = m.get("content")
            self.trace.add([Message("tool", content if isinstance(content, str) else _text(content),
                                    tool_call_id=self.open_action)])
            self.open_action = None
            return
        self.open_action = None
        if role == "tool" and isinstance(m.get("tool_call_ids"), list) and "tool_call_id" not in m:
            ids = [i for i in m["tool_call_ids"] if isinstance(i, str)]
            for n, cid in enumerate(ids or [f"missing-{k}"]):
                item = {"role": "tool", "content": m.get("content") if n == 0 else "", "tool_call_id": cid}
                sub_read(openai_chat.read, item, self.trace, where)
            return
        item = {key: v for key, v in m.items() if key not in _DROP_KEYS}
        sub_read(openai_chat.read, item, self.trace, where)

    def last_observation(self, doc: dict) -> None:
        """The history ends at an action (``submit``): its observation, from ``trajectory``, answers it."""
        t = self.trace
        last = t.messages[-1] if t.messages else None
        steps = doc.get("trajectory") if isinstance(doc.get("trajectory"), list) else []
        if last is None or last.role != "assistant" or not last.tool_calls or not steps:
            return
        step = steps[-1] if isinstance(steps[-1], dict) else {}
        obs = step.get("observation")
        t.add([Message("tool", obs if isinstance(obs, str) else "", tool_call_id=c.id) for c in last.tool_calls])
        t.notes.append(f"message {len(t.messages) - 1}: the history ends at an action; its observation is taken from "
                       "'trajectory' (the model never saw it: no call came after)")

    def finish(self, doc: dict) -> Trace:
        t = self.trace
        self.last_observation(doc)
        if self.actions:
            t.notes.append(f"text-action run: {self.actions:,} actions the model wrote as text are read as tool calls "
                           "(named by the command's first word), each observation as its result; the model saw "
                           "them as text, so their tokens are counted as tool calls here")
        if self.demos:
            t.notes.append(f"{self.demos:,} demonstration message(s) (is_demo) kept as user messages")
        info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
        for key in ("exit_status", "submission"):
            if isinstance(info.get(key), str) and key == "exit_status":
                t.meta[key] = info[key]
        stats = info.get("model_stats")
        if isinstance(stats, dict):
            t.meta["model_stats"] = {k: v for k, v in stats.items() if isinstance(v, (int, float))}
        t.notes.append("a .traj keeps no tool definitions (SWE-agent's config lists them): counts leave them out")
        return t


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def read_doc(doc: Any, lines: tuple[int, ...] | None) -> Trace:
    """Read a SWE-agent trajectory's history into messages."""
    if not isinstance(doc, dict) or not isinstance(doc.get("history"), list):
        raise ShapeError("a SWE-agent trajectory is an object with a 'history' list", where="$",
                         hint="Give the .traj file as SWE-agent wrote it")
    reader = _Reader()
    for k, m in enumerate(doc["history"]):
        reader.message(k, m)
    return reader.finish(doc)


def _read_items(items: list[Any], ctx) -> list:
    return read_doc({"history": items}, None).messages


FORMAT = Format(NAME, "SWE-agent trajectory (.traj)", never, _read_items)
TRACE = TraceFormat(FORMAT, detect_doc, read_doc)
