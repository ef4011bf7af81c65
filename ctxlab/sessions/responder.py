"""Who answers in a live session, and the agent loop that drives one turn.

* ``ScriptedResponder(conv)`` replays a bundled conversation turn by turn, offline: at turn t (the
  t-th user message of the session) its j-th reply is the j-th assistant message of the script's
  turn t, tool calls included. Past the script's end it says so instead of inventing anything.
* ``ModelResponder()`` asks the configured model (``ctxlab.llm``: ``OPENAI_BASE_URL`` /
  ``OPENAI_API_KEY`` / ``CTXLAB_LLM_MODEL``, or the app's settings) with the context the session
  builds; the session's tools are sent with it (ctxlab.llm asks for a text answer).
* ``CannedTools(conv)`` answers tool calls from a conversation's recorded results: the same call
  id, else the same tool and arguments, else the same tool. A call it cannot answer is left for
  the user to type (``pending_calls``).
* ``run_turn(session, text, responder, tools)`` adds the user message and loops: build the context
  (the strategy runs at the start of the turn), get a reply, answer its tool calls, until a reply
  without tool calls, a call nobody can answer, or ``max_steps``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

from ..conversation import Conversation
from ..formats import export, load
from .db import SessionError
from .session import Session

MAX_STEPS = 12


class Responder(Protocol):
    """Anything that answers: ``reply(messages, *, history, tools) -> assistant message dict``."""

    name: str

    def reply(self, messages: Sequence[Mapping[str, Any]], *, history: Sequence[Mapping[str, Any]],
              tools: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
        """The assistant message answering ``messages`` (what is sent); ``history`` is the full one."""


def _openai_messages(conv: Conversation) -> list[dict[str, Any]]:
    return list(export(conv, "openai").data["messages"])


def _turns(messages: Sequence[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], list[Mapping[str, Any]]]]:
    """(user message, the assistant and tool messages after it) per user turn."""
    out: list[tuple[Mapping[str, Any], list[Mapping[str, Any]]]] = []
    for m in messages:
        if m.get("role") == "user":
            out.append((m, []))
        elif out and m.get("role") in ("assistant", "tool"):
            out[-1][1].append(m)
    return out


def _position(history: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """(turn index, assistant replies given in that turn so far) of a session's history."""
    turn, replies = -1, 0
    for m in history:
        if m.get("role") == "user":
            turn, replies = turn + 1, 0
        elif m.get("role") == "assistant":
            replies += 1
    return turn, replies


class ScriptedResponder:
    """Replays a conversation's assistant messages turn by turn (see the module docstring)."""

    name = "scripted"

    def __init__(self, conv: Conversation | str | Path, *, label: str | None = None) -> None:
        self.conversation = conv if isinstance(conv, Conversation) else load(conv)
        self.label = label or str(self.conversation.metadata.get("title") or "scripted conversation")
        self.turns = [(u, [m for m in rest if m.get("role") == "assistant"])
                      for u, rest in _turns(_openai_messages(self.conversation))]

    @property
    def user_messages(self) -> list[str]:
        """The script's user messages, in order (what the page offers to send next)."""
        return [str(u.get("content") or "") for u, _ in self.turns]

    def next_user_message(self, history: Sequence[Mapping[str, Any]]) -> str | None:
        """The script's user message for the next turn of ``history``, or None past its end."""
        turn, _ = _position(history)
        return self.user_messages[turn + 1] if turn + 1 < len(self.turns) else None

    def reply(self, messages: Sequence[Mapping[str, Any]], *, history: Sequence[Mapping[str, Any]],
              tools: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
        """The script's next assistant message for this turn."""
        turn, given = _position(history)
        if turn < 0:
            raise SessionError("there is no user message to answer yet", where="responder",
                               hint="Add a user message first")
        if turn >= len(self.turns):
            return {"role": "assistant", "content": f"(The scripted conversation \u201c{self.label}\u201d has "
                                                    f"{len(self.turns)} turns and they are all played. Start a new "
                                                    "session, or configure a model to keep talking.)"}
        replies = self.turns[turn][1]
        if given >= len(replies):
            return {"role": "assistant", "content": "(The script has no further reply in this turn.)"}
        return json.loads(json.dumps(replies[given]))


class ModelResponder:
    """Replies from the configured model through ``ctxlab.llm`` (``llm``: an ``LLM``; default:
    the active one, from the environment or the app's settings)."""

    name = "model"

    def __init__(self, llm: Any = None) -> None:
        from ..llm import require_configured
        self.llm = require_configured(llm)

    @property
    def label(self) -> str:
        """Which model and server, never the key."""
        return self.llm.config.describe()

    def reply(self, messages: Sequence[Mapping[str, Any]], *, history: Sequence[Mapping[str, Any]],
              tools: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
        """The model's answer to the context sent."""
        result = self.llm.chat(list(messages), tools=list(tools) or None)
        return {"role": "assistant", "content": result.text or "(the model returned no text)"}


def model_configured() -> bool:
    """Whether a model is configured (a key or a base URL), so replies can come from it."""
    from ..llm import active_llm
    return active_llm().config.configured


class CannedTools:
    """Tool results recorded in a conversation, to answer tool calls offline."""

    def __init__(self, conv: Conversation | str | Path) -> None:
        conv = conv if isinstance(conv, Conversation) else load(conv)
        self.by_id: dict[str, str] = {}
        self.by_call: dict[tuple[str, str], str] = {}
        self.by_name: dict[str, str] = {}
        calls: dict[str, tuple[str, str]] = {}
        for m in _openai_messages(conv):
            for c in m.get("tool_calls") or ():
                calls[c["id"]] = (c["function"]["name"], _canonical(c["function"].get("arguments")))
            if m.get("role") == "tool" and m.get("tool_call_id") in calls:
                text = m["content"] if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
                name, args = calls[m["tool_call_id"]]
                self.by_id[m["tool_call_id"]], self.by_call[(name, args)], self.by_name[name] = text, text, text

    @property
    def tool_names(self) -> list[str]:
        """The tools it has a result for."""
        return sorted(self.by_name)

    def answer(self, call: Mapping[str, Any]) -> str | None:
        """The recorded result for an OpenAI tool call dict, or None."""
        fn = call.get("function") or {}
        name = str(fn.get("name", ""))
        return (self.by_id.get(str(call.get("id"))) or self.by_call.get((name, _canonical(fn.get("arguments"))))
                or self.by_name.get(name))


def _canonical(arguments: Any) -> str:
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True)
    except (TypeError, ValueError):
        return str(arguments)


def pending_calls(history: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls of the newest assistant message that no tool message answers yet."""
    last = next((k for k in range(len(history) - 1, -1, -1) if history[k].get("role") == "assistant"), None)
    if last is None:
        return []
    answered = {m.get("tool_call_id") for m in history[last + 1:] if m.get("role") == "tool"}
    return [dict(c) for c in history[last].get("tool_calls") or () if c.get("id") not in answered]


@dataclass
class TurnResult:
    """What a turn did: the replies added, the tool results added, the calls left for the user,
    and the size of what was sent at each model call (messages, in order)."""

    replies: list[dict[str, Any]] = field(default_factory=list)
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    sent: list[int] = field(default_factory=list)
    stopped: str = "answered"  # answered | pending | max_steps


def advance(session: Session, responder: Responder, tools: CannedTools | None = None, *,
            max_steps: int = MAX_STEPS) -> TurnResult:
    """Run the agent loop from where the session is (see the module docstring)."""
    out = TurnResult()
    waiting = pending_calls(session.history())
    for _ in range(max_steps):
        if waiting:
            for call in waiting:
                text = tools.answer(call) if tools is not None else None
                if text is None:
                    out.pending.append(call)
                else:
                    result = {"role": "tool", "tool_call_id": call["id"], "content": text}
                    session.add(result)
                    out.tool_results.append(result)
            if out.pending:
                out.stopped = "pending"
                return out
        sent = session.context()
        out.sent.append(len(sent))
        reply = responder.reply(sent, history=session.history(), tools=session.tools)
        session.add(reply)
        out.replies.append(reply)
        waiting = [dict(c) for c in reply.get("tool_calls") or ()]
        if not waiting:
            return out
    out.stopped = "max_steps"
    return out


def run_turn(session: Session, text: str, responder: Responder, tools: CannedTools | None = None, *,
             max_steps: int = MAX_STEPS) -> TurnResult:
    """Add the user message ``text`` and run the loop until the agent answers."""
    if not text.strip():
        raise SessionError("the message is empty", where="chat input", hint="Type something to send")
    if pending_calls(session.history()):
        raise SessionError("the agent is waiting for tool results", where="chat input",
                           hint="Answer the pending tool calls first")
    session.add({"role": "user", "content": text})
    return advance(session, responder, tools, max_steps=max_steps)
