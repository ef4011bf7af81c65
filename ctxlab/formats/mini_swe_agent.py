"""mini-swe-agent trajectories (``*.traj.json``): ``{"info", "messages", "trajectory_format":
"mini-swe-agent-1.x"}``, or a bare list of its messages (older files; give ``--format
mini_swe_agent``, since a bare list is also valid OpenAI Chat).

Text-based runs: the model writes one bash command in a fenced block (```` ```mswea_bash_command````
or ```` ```bash````); it is read as one tool call ``bash`` with ``{"command": ...}`` (the actions
recorded in ``extra.actions`` when present), and the next user message (the observation) as its
result. Tool-calling runs are OpenAI Chat messages already. ``exit`` messages (the run's end) are
left out with a note, as is each message's ``extra`` (costs, raw responses).
"""
from __future__ import annotations

import json
import re
from typing import Any

from ..conversation import Message, ToolCall
from ..errors import ShapeError
from . import openai_chat
from ._trace import Trace, content_text, trace_format, sub_read

NAME = "mini_swe_agent"
_BLOCK = re.compile(r"```(?:mswea_bash_command|bash)\s*\n(.*?)\n```", re.DOTALL)
_OPENAI_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")


def detect_doc(doc: Any) -> bool:
    """An object whose ``trajectory_format`` starts with ``mini-swe-agent``."""
    return (isinstance(doc, dict) and str(doc.get("trajectory_format", "")).startswith("mini-swe-agent")
            and isinstance(doc.get("messages"), list))


def _actions(m: dict) -> list[str]:
    """The commands of a text-based assistant message: ``extra.actions``, else its fenced blocks."""
    extra = m.get("extra") if isinstance(m.get("extra"), dict) else {}
    acts = extra.get("actions")
    if isinstance(acts, list) and acts and all(isinstance(a, dict) and "tool_call_id" not in a for a in acts):
        return [str(a.get("command", "")) for a in acts]
    if m.get("tool_calls"):
        return []
    return [b.strip() for b in _BLOCK.findall(m.get("content") or "")] if isinstance(m.get("content"), str) else []


class _Reader:
    def __init__(self) -> None:
        self.trace = Trace(meta={})
        self.open: list[str] = []
        self.text_actions = 0
        self.exits = 0

    def message(self, k: int, m: Any) -> None:
        where = f"$.messages[{k}]"
        if not isinstance(m, dict):
            raise ShapeError(f"expected a message object, found {type(m).__name__}", where=where)
        at = len(self.trace.messages)
        self._message(k, m, where)
        if len(self.trace.messages) > at:  # 'extra' (costs, raw responses) has its own note
            self.trace.note_unkept(at, [f for f, v in m.items() if f not in (*_OPENAI_KEYS, "extra") and v],
                                   "mini-swe-agent")

    def _message(self, k: int, m: dict, where: str) -> None:
        role = m.get("role")
        if role == "exit":
            self.exits += 1
            return
        if role == "user" and self.open:
            content = m.get("content") if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
            for n, cid in enumerate(self.open):  # one observation answers all of the message's commands
                self.trace.add([Message("tool", content if n == 0 else "", tool_call_id=cid)])
            self.open = []
            return
        self.open = []
        acts = _actions(m) if role == "assistant" else []
        if acts:
            self.text_actions += len(acts)
            calls = tuple(ToolCall(f"action-{k}-{n}", "bash", json.dumps({"command": a}, ensure_ascii=False))
                          for n, a in enumerate(acts))
            self.trace.add([Message("assistant", content_text(m.get("content"), f"{where}.content"), tool_calls=calls)])
            self.open = [c.id for c in calls]
            return
        sub_read(openai_chat.read, {key: v for key, v in m.items() if key in _OPENAI_KEYS}, self.trace, where)

    def finish(self, info: dict) -> Trace:
        t = self.trace
        if self.text_actions:
            t.notes.append(f"text-based run: {self.text_actions:,} bash commands the model wrote in fenced blocks are "
                           "read as tool calls 'bash', each observation as the result; the model saw them as text, "
                           "and the command also stays in the assistant's text")
        if self.exits:
            t.notes.append(f"{self.exits:,} 'exit' message(s) (the run's end, never sent to the model) left out")
        t.notes.append("each message's 'extra' (cost, raw response, timestamps) is not carried")
        if isinstance(info.get("exit_status"), str):
            t.meta["exit_status"] = info["exit_status"]
        cfg = info.get("config") if isinstance(info.get("config"), dict) else {}
        model = cfg.get("model") if isinstance(cfg.get("model"), dict) else {}
        if isinstance(model.get("model_name"), str):
            t.model = model["model_name"]
        return t


def read_doc(doc: Any, lines: tuple[int, ...] | None) -> Trace:
    """Read a mini-swe-agent trajectory into messages."""
    messages = doc.get("messages") if isinstance(doc, dict) else doc
    if not isinstance(messages, list):
        raise ShapeError("a mini-swe-agent trajectory has a 'messages' list", where="$",
                         hint="Give the .traj.json file as mini-swe-agent wrote it")
    reader = _Reader()
    for k, m in enumerate(messages):
        reader.message(k, m)
    return reader.finish(doc.get("info", {}) if isinstance(doc, dict) and isinstance(doc.get("info"), dict) else {})


TRACE = trace_format(NAME, "mini-swe-agent trajectory", detect_doc, read_doc)
FORMAT = TRACE.format
