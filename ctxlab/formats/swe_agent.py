"""SWE-agent trajectories (``.traj``): ``{"history": [...], "trajectory": [...], "info": ...}``.

``history`` is what the model saw. In function-calling runs it is OpenAI Chat messages (an
assistant message with ``tool_calls``, a ``tool`` message with ``tool_call_ids``). In text-action
runs the model wrote its command in text (``action``) and the next ``user`` message is the
observation: each action becomes one tool call (named by the command's first word, arguments
``{"command": action}``, content the model's whole text as sent, marked ``TEXT_ACTION`` so the call
adds no tokens) and the observation that follows its result. Demonstration messages (``is_demo``)
stay user messages, with a note. ``model_stats`` gives the run's billed totals (``billed_total``)
and how many calls the history leaves out; ``replay_config`` the model's name.
"""
from __future__ import annotations

import json
from typing import Any

from ..conversation import TEXT_ACTION, Message, ToolCall
from ..errors import ShapeError
from . import openai_chat
from ._base import Format
from ._trace import Trace, TraceFormat, content_text, mark_final, never, sub_read

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
        content = m["content"] if isinstance(m.get("content"), str) else m["thought"] if \
            isinstance(m.get("thought"), str) else content_text(m.get("content"), f"$.history[{k}].content")
        self.trace.add([Message("assistant", content, tool_calls=(
            ToolCall(cid, _command_name(action), json.dumps({"command": action}, ensure_ascii=False)),),
            extra={TEXT_ACTION: True})])
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

    def last_step(self, doc: dict) -> None:
        """The trajectory has one step more than the history has actions (the final ``submit`` is
        logged in ``trajectory`` only): that call happened; its reply is read from the step."""
        t = self.trace
        steps = doc.get("trajectory") if isinstance(doc.get("trajectory"), list) else []
        actions = sum(m.role == "assistant" for m in t.messages)
        step = steps[-1] if steps and isinstance(steps[-1], dict) else {}
        action = step.get("action")
        if len(steps) != actions + 1 or not isinstance(action, str) or not action.strip() or \
                not t.messages or t.messages[-1].role == "assistant":
            return
        reply = step.get("response") if isinstance(step.get("response"), str) else step.get("thought")
        self.text_action(len(doc.get("history") or ()), {"action": action, "content": reply or action})
        t.notes.append(f"message {len(t.messages) - 1}: the last step ({_command_name(action)}) is logged in "
                       "'trajectory' only: read from there")

    def finish(self, doc: dict) -> Trace:
        t = self.trace
        self.last_step(doc)
        self.last_observation(doc)
        if self.actions:
            t.notes.append(f"text-action run: {self.actions:,} actions the model wrote as text are read as tool calls "
                           "(named by the command's first word), each observation as its result; the model saw "
                           "them as text: the assistant's text as sent is counted, the calls add no tokens")
        if self.demos:
            t.notes.append(f"{self.demos:,} demonstration message(s) (is_demo) kept as user messages")
        info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
        if isinstance(info.get("exit_status"), str):
            t.meta["exit_status"] = info["exit_status"]
        _model_stats(t, info.get("model_stats"))
        t.model = _replay_model(doc.get("replay_config")) or t.model  # read_trace_document adopts it
        if isinstance(info.get("exit_status"), str) and info["exit_status"]:
            mark_final(t, f"exit status {info['exit_status']}")
        t.notes.append("a .traj keeps no tool definitions (SWE-agent's config lists them): counts leave them out")
        return t


def _model_stats(t: Trace, stats: Any) -> None:
    """SWE-agent's ``model_stats``: the run's billed totals (``billed_total`` in the metadata), and a
    note on the calls the history leaves out (re-queries after a format error, retries)."""
    if not isinstance(stats, dict):
        return
    t.meta["model_stats"] = {k: v for k, v in stats.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    calls, sent = stats.get("api_calls"), stats.get("tokens_sent")
    if not (isinstance(calls, int) and calls > 0 and isinstance(sent, int) and sent > 0):
        return
    received = stats.get("tokens_received")
    t.meta["billed_total"] = {"prompt_tokens": sent, "output_tokens": received if isinstance(received, int) else None,
                              "calls": calls}
    in_history = sum(m.role == "assistant" for m in t.messages)
    if calls > in_history:
        t.meta["unlogged_calls"] = calls - in_history
        t.notes.append(f"model_stats bills {calls:,} model calls, the history holds {in_history:,}: "
                       f"{calls - in_history:,} call(s) are not in it (re-queries after a format error or a "
                       "retry); their prompts are billed in tokens_sent but not replayed")


def _replay_model(config: Any) -> str | None:
    """The model a run used, from its ``replay_config`` (a JSON text or object: ``agent.model.name``)."""
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except ValueError:
            return None
    agent = config.get("agent") if isinstance(config, dict) else None
    model = agent.get("model") if isinstance(agent, dict) else None
    name = model.get("name") if isinstance(model, dict) else None
    return name if isinstance(name, str) and name and name != "replay" else None


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
