"""OpenHands event streams and trajectories: V0 events (a list, ``{"history": [...]}`` from
evaluation output, a JSONL of events, or the older list of ``[action, observation]`` pairs) and
V1 (software-agent-sdk) events told by ``kind`` (a list, a JSONL, or the agent server's
``{"items": [...]}``): SystemPromptEvent, MessageEvent, ActionEvent (joined by ``llm_response_id``),
ObservationEvent / AgentErrorEvent (results), CondensationSummaryEvent (a compaction summary).

An action event from a tool call carries ``tool_call_metadata``: the actions of one model response
(same ``model_response.id``) form one assistant message with that response's text and one tool call
each (arguments from the response); the observation with the same ``tool_call_id`` is its result.
An action without it (older, text-based runs) becomes a tool call named by its action (``run``,
``edit``...) with its ``args``, and the observation whose ``cause`` is its id its result. User and
agent ``message`` actions are user and assistant messages; a ``system`` action the system prompt; a
``condensation`` action's summary a user message marked as a compaction summary. Events the model
never saw (agent state changes, recalls, null observations) are counted in a note. An action's
``llm_metrics.token_usages`` entry for its model response (else the evaluation output's
``metrics.token_usages`` entry with that response id) is that response's billed Usage.
"""
from __future__ import annotations

import json
from collections import Counter
from typing import Any

from dataclasses import replace

from ..conversation import Message, ToolCall, Usage
from ..errors import ShapeError, shown
from ._trace import Trace, call_arguments, chat_usage, trace_format, compaction, usage_from

NAME = "openhands"
_SILENT = ("change_agent_state", "agent_state_changed", "null", "recall", "message_from_user_ignored",
           "user_rejected", "agent_think_observation")
_META = ("id", "timestamp", "source", "message", "action", "observation", "cause", "tool_call_metadata",
         "llm_metrics", "timeout", "hidden", "extras", "args", "security_risk", "is_confirmed", "action_risk",
         "keep_prompt", "images_urls", "image_urls", "wait_for_response", "kernel_init_code")


_V1_KINDS = ("SystemPromptEvent", "MessageEvent", "ActionEvent", "ObservationEvent", "AgentErrorEvent",
             "UserRejectObservation", "Condensation", "CondensationSummaryEvent", "CondensationRequest", "PauseEvent",
             "ConversationStateUpdateEvent", "LLMCompletionLogEvent", "TokenEvent", "HookExecutionEvent")


def _events(doc: Any) -> list[Any] | None:
    """The event list of a document (None when it is not one)."""
    if isinstance(doc, dict) and isinstance(doc.get("history"), list):
        doc = doc["history"]
    elif isinstance(doc, dict) and isinstance(doc.get("items"), list):  # the V1 agent server's event search
        doc = doc["items"]
    if not isinstance(doc, list) or not doc:
        return None
    if all(isinstance(p, list) and len(p) == 2 for p in doc):  # old [action, observation] pairs
        return [e for pair in doc for e in pair]
    return doc


def detect_doc(doc: Any) -> bool:
    """Events with ``action`` or ``observation`` keys and OpenHands' fields."""
    events = _events(doc)
    if not events or not all(isinstance(e, dict) for e in events[:200]):
        return False
    if all(isinstance(e.get("kind"), str) and e["kind"].endswith(("Event", "Observation", "Condensation",
                                                                    "CondensationRequest")) for e in events[:200]):
        return any(e["kind"] in _V1_KINDS for e in events[:200])
    typed = [e for e in events[:200] if "action" in e or "observation" in e]
    return len(typed) == len(events[:200]) and any(isinstance(e.get("action"), str) for e in typed)


def _args(e: dict) -> dict:
    """An action's arguments: ``args``, or the event's own fields in the flat older layout."""
    if isinstance(e.get("args"), dict):
        return e["args"]
    return {k: v for k, v in e.items() if k not in _META}


def _loads(arguments: str) -> dict:
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _id(value: Any, where: str, field: str) -> str | None:
    """An id read from an event (a response id, a call id, an event id): text, or a number written
    as text; None when absent; a list or an object is an error naming the event and the field."""
    if value is None:
        return None
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return str(value)
    raise ShapeError(f"{field} must be a string id, found {type(value).__name__}", where=f"{where}: $.{field}",
                     hint="Give OpenHands events as its event stream or trajectory export wrote them")


def _typed(value: Any, kind: type, where: str, field: str) -> Any:
    """``value`` when it is absent or of ``kind``, else an error naming the event and the field."""
    if value is None or isinstance(value, kind):
        return value
    raise ShapeError(f"{field} must be a {'list' if kind is list else 'JSON object'}, found {type(value).__name__}",
                     where=f"{where}: $.{field}")


def _text(value: Any) -> str:
    if isinstance(value, list):  # the text parts (an image part has no text: noted by _unkept_parts)
        return "\n".join(str(p["text"]) for p in value if isinstance(p, dict) and p.get("text") is not None)
    return "" if value is None else str(value)


def _unkept_parts(value: Any) -> list[str]:
    """The kinds of the parts of a V1 content list that are not text (images...): not carried."""
    if not isinstance(value, list):
        return []
    kinds = [p.get("type") for p in value if isinstance(p, dict) and p.get("text") is None]
    return [f"{shown(k, 30) if not isinstance(k, str) or len(k) > 30 else k} part" for k in dict.fromkeys(kinds)]


class _Reader:
    def __init__(self, lines: tuple[int, ...] | None = None, run_usages: dict[Any, dict] | None = None) -> None:
        self.lines = lines
        self.where = "event 0"  # the event being read, for errors
        self.trace = Trace(meta={})
        self.run_usages = run_usages or {}  # response id -> its usage, from an evaluation output's metrics
        self.response_at: dict[str, int] = {}  # model_response.id -> message index
        self.synthetic: dict[Any, str] = {}     # event id -> call id of an action without tool_call_metadata
        self.skipped: Counter[str] = Counter()
        self.text_actions = 0
        self.unsourced = 0
        self.open_synthetic: str | None = None
        self.billed: set[Any] = set()  # response ids whose usage was given to a message

    def tool_action(self, e: dict, meta: dict) -> None:
        """An action from a tool call: joins the assistant message of its model response."""
        resp = meta.get("model_response") if isinstance(meta.get("model_response"), dict) else {}
        choice = (resp.get("choices") or [{}])[0] if isinstance(resp.get("choices"), list) else {}
        msg = choice.get("message") if isinstance(choice, dict) and isinstance(choice.get("message"), dict) else {}
        base = "tool_call_metadata.model_response"
        cid = str(_id(meta.get("tool_call_id"), self.where, "tool_call_metadata.tool_call_id"))
        calls = _typed(msg.get("tool_calls"), list, self.where, f"{base}.choices[0].message.tool_calls") or []
        k, raw = next(((k, c) for k, c in enumerate(calls) if isinstance(c, dict) and c.get("id") == cid), (0, None))
        fn = _typed(raw.get("function"), dict, self.where, f"{base}.choices[0].message.tool_calls[{k}].function") \
            if raw else None
        fn = fn or {}
        args = call_arguments(fn["arguments"], f"{self.where}: $.{base}.choices[0].message.tool_calls[{k}].function"
                              ".arguments") if isinstance(fn.get("arguments"), str) else \
            json.dumps(_args(e), ensure_ascii=False)
        call = ToolCall(cid, str(meta.get("function_name") or e.get("action")), args)
        rid = _id(resp.get("id"), self.where, f"{base}.id")
        at = self.response_at.get(rid) if rid is not None else None
        if at is not None:
            m = self.trace.messages[at]
            self.trace.messages[at] = replace(m, tool_calls=m.tool_calls + (call,))
            return
        self.trace.add([Message("assistant", _text(msg.get("content")) or _text(_args(e).get("thought")),
                                tool_calls=(call,))])
        if rid is not None:
            self.response_at[rid] = len(self.trace.messages) - 1

    def action(self, e: dict) -> None:
        kind, args = e.get("action"), _args(e)
        if kind in _SILENT or e.get("source") == "environment":
            self.skipped[f"{kind} action"] += 1
        elif kind == "system":
            self.trace.add([Message("system", _text(args.get("content")) or _text(e.get("message")))])
        elif kind == "condensation":
            summary = args.get("summary")
            if summary:
                self.trace.add([compaction(Message("user", _text(summary)))])
                i = len(self.trace.messages) - 1
                self.trace.meta.setdefault("compactions", []).append({"message": i})
                self.trace.notes.append(f"message {i}: OpenHands condensation summary: it replaced the events it "
                                        "forgot, which are kept here as history")
            else:
                self.skipped["condensation action without a summary"] += 1
        elif isinstance(e.get("tool_call_metadata"), dict):
            self.tool_action(e, e["tool_call_metadata"])
        elif kind == "message":
            source = e.get("source") or ("user" if not self.trace.messages else None)
            if source is None:  # the flat older layout names no source: after the first, the agent's
                source = "agent"
                self.unsourced += 1
            role = "user" if source == "user" else "assistant"
            self.trace.add([Message(role, _text(args.get("content")) or _text(e.get("message")))])
        elif kind == "finish":  # the agent's last word, written as text in text-based runs
            rest = args.get("outputs") if args.get("outputs") not in (None, {}, "{}") else ""
            self.trace.add([Message("assistant", _text(args.get("thought")) or _text(e.get("message"))
                                    or _text(rest) or "(finished)")])
        else:  # a text-based action: a tool call named by its action
            self.text_actions += 1
            eid = _id(e.get("id"), self.where, "id")
            cid = f"event-{len(self.trace.messages) if eid is None else eid}"
            self.synthetic[eid] = cid
            self.open_synthetic = cid
            rest = {k: v for k, v in args.items() if k != "thought"}
            self.trace.add([Message("assistant", _text(args.get("thought")), tool_calls=(
                ToolCall(cid, str(kind), json.dumps(rest, ensure_ascii=False, default=str)),))])

    def observation(self, e: dict) -> None:
        kind = e.get("observation")
        meta = e.get("tool_call_metadata") if isinstance(e.get("tool_call_metadata"), dict) else None
        cid = _id(meta.get("tool_call_id"), self.where, "tool_call_metadata.tool_call_id") if meta else None
        cid = cid or self.synthetic.get(_id(e.get("cause"), self.where, "cause"))
        if cid is None and "cause" not in e and kind not in _SILENT:  # flat layout: it answers the open action
            cid = self.open_synthetic
        self.open_synthetic = None
        if cid is None:
            self.skipped[f"{kind} observation" if kind in _SILENT else f"{kind} observation answering no action"] += 1
            return
        content = e.get("content") if e.get("content") is not None else e.get("message")
        self.trace.add([Message("tool", _text(content), tool_call_id=cid, is_error=kind == "error")])

    def v1(self, e: dict) -> None:
        """An OpenHands V1 (software-agent-sdk) event, told by its ``kind``."""
        kind = e["kind"]
        if kind == "SystemPromptEvent":
            prompt = e.get("system_prompt")
            self.trace.add([Message("system", _text([prompt]) if isinstance(prompt, dict) else _text(prompt))])
            if e.get("tools"):
                self.trace.notes.append("the tool definitions in the SystemPromptEvent are not carried: counts "
                                        "leave them out")
        elif kind == "MessageEvent":
            llm = e.get("llm_message") if isinstance(e.get("llm_message"), dict) else {}
            role = llm.get("role") if llm.get("role") in ("user", "assistant", "system") else \
                ("user" if e.get("source") == "user" else "assistant")
            self.trace.add([Message(role, _text(llm.get("content")))])
            self.trace.note_unkept(len(self.trace.messages) - 1, _unkept_parts(llm.get("content")) + [
                f for f in ("reasoning_content", "thinking_blocks") if llm.get(f)], "OpenHands")
        elif kind == "ActionEvent" and isinstance(e.get("tool_call"), dict):
            tc = e["tool_call"]
            call = ToolCall(str(_id(tc.get("id"), self.where, "tool_call.id") or
                                _id(e.get("tool_call_id"), self.where, "tool_call_id")),
                            str(tc.get("name") or e.get("tool_name")),
                            call_arguments(tc.get("arguments"), f"{self.where}: $.tool_call.arguments"))
            rid = _id(e.get("llm_response_id"), self.where, "llm_response_id")
            at = self.response_at.get(rid) if rid is not None else None
            self.trace.note_unkept(len(self.trace.messages) if at is None else at,
                                   [f for f in ("reasoning_content", "thinking_blocks") if e.get(f)], "OpenHands")
            if at is not None:
                m = self.trace.messages[at]
                self.trace.messages[at] = replace(m, tool_calls=m.tool_calls + (call,))
            else:
                self.trace.add([Message("assistant", _text(e.get("thought")), tool_calls=(call,))])
                if rid is not None:
                    self.response_at[rid] = len(self.trace.messages) - 1
        elif kind in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation") and e.get("tool_call_id"):
            obs = e.get("observation") if isinstance(e.get("observation"), dict) else {}
            text = _text(obs.get("content")) if obs else str(e.get("error") or e.get("rejection_reason") or "")
            self.trace.add([Message("tool", text, tool_call_id=_id(e["tool_call_id"], self.where, "tool_call_id"),
                                    is_error=kind != "ObservationEvent" or bool(obs.get("is_error")))])
            self.trace.note_unkept(len(self.trace.messages) - 1, _unkept_parts(obs.get("content")), "OpenHands")
        elif kind in ("CondensationSummaryEvent", "Condensation") and e.get("summary"):
            self.trace.add([compaction(Message("user", _text(e["summary"])))])
            i = len(self.trace.messages) - 1
            self.trace.meta.setdefault("compactions", []).append({"message": i})
            self.trace.notes.append(f"message {i}: OpenHands condensation summary: it replaced the events it "
                                    "forgot, which are kept here as history")
        else:
            self.skipped[f"{kind}"] += 1

    def event(self, k: int, e: Any) -> None:
        self.where = f"event {k}" if self.lines is None or k >= len(self.lines) else \
            f"event {k} (JSONL line {self.lines[k]})"
        if not isinstance(e, dict):
            raise ShapeError(f"expected an event object, found {type(e).__name__}", where=self.where)
        if isinstance(e.get("kind"), str) and "action" not in e and "observation" not in e or \
                e.get("kind") in _V1_KINDS:
            self.v1(e)
        elif "action" in e:
            self.action(e)
            self.bill(e)
        elif "observation" in e:
            self.observation(e)
        else:
            raise ShapeError("an event has neither 'action' nor 'observation'", where=self.where,
                             hint="Give OpenHands events as its event stream or trajectory export wrote them")

    def bill(self, e: dict) -> None:
        """The billed usage of the model response an action came from, given once to the assistant
        message of that response: its ``llm_metrics.token_usages`` entry with the response's id (the
        last entry for an action without ``tool_call_metadata``), else the evaluation output's entry
        with that id, else the response's own ``usage`` (``tool_call_metadata.model_response``)."""
        metrics = e.get("llm_metrics") if isinstance(e.get("llm_metrics"), dict) else {}
        usages = [u for u in metrics.get("token_usages") if isinstance(u, dict)] \
            if isinstance(metrics.get("token_usages"), list) else []
        last = len(self.trace.messages) - 1
        meta = e.get("tool_call_metadata") if isinstance(e.get("tool_call_metadata"), dict) else {}
        resp = meta.get("model_response") if isinstance(meta.get("model_response"), dict) else {}
        rid = resp.get("id") if isinstance(resp.get("id"), (str, int)) else None
        at = self.response_at.get(rid, last) if rid else last
        if last < 0 or e.get("source") == "user" or (rid or len(usages)) in self.billed or \
                self.trace.messages[at].role != "assistant":
            return
        usage = self._usage(usages, rid, resp)
        if usage is not None:
            self.billed.add(rid or len(usages))
            self.trace.messages[at] = replace(self.trace.messages[at], usage=usage)
            self.trace.model = self.trace.model or usage.model  # an unknown name: read_trace_document notes it

    def _usage(self, usages: list[dict], rid: Any, resp: dict) -> Usage | None:
        entry = next((u for u in reversed(usages) if u.get("response_id") == rid), self.run_usages.get(rid)) \
            if rid else (usages[-1] if usages else None)
        if entry is not None:
            model = entry.get("model") if isinstance(entry.get("model"), str) else None
            return usage_from(entry, model, "prompt_tokens", "completion_tokens", "cache_read_tokens",
                              "cache_write_tokens")
        return chat_usage(resp.get("usage"), resp.get("model") if isinstance(resp.get("model"), str) else None)

    def final_finish(self) -> None:
        """A run ends with a ``finish`` call that no observation answers: the agent's last word, kept as
        its text (the call would leave the conversation unanswered for every provider)."""
        t = self.trace
        last = t.messages[-1] if t.messages else None
        if last is None or last.role != "assistant" or not last.tool_calls or \
                any(c.name != "finish" for c in last.tool_calls):
            return
        words = [last.text] + [str(_loads(c.arguments).get(k, "")) for c in last.tool_calls
                               for k in ("message", "final_thought", "outputs")]
        text = "\n".join(w for w in words if w and w not in ("{}", "None")) or "(finished)"
        t.messages[-1] = Message("assistant", text)
        t.notes.append(f"message {len(t.messages) - 1}: the run ends with a finish call no observation answers; "
                       "kept as the assistant's text (its arguments' message), without the call")

    def finish(self) -> Trace:
        t = self.trace
        self.final_finish()
        if self.text_actions:
            t.notes.append(f"{self.text_actions:,} action(s) without tool_call_metadata read as tool calls named by "
                           "their action, with their args as arguments")
        if self.unsourced:
            t.notes.append(f"{self.unsourced:,} message action(s) name no source: read as the agent's (the first "
                           "message as the user's)")
        if self.skipped:
            kinds = ", ".join(f"{n:,} {shown(k, 40)[1:-1]}" for k, n in self.skipped.most_common(8))
            t.notes.append(f"events the model never saw were left out ({kinds})")
        if not any(m.role == "system" for m in t.messages):
            t.notes.append("no system prompt in these events (OpenHands adds it at call time): counts leave it out")
        t.notes.append("tool definitions are not in the events: counts leave them out")
        return t


def read_doc(doc: Any, lines: tuple[int, ...] | None) -> Trace:
    """Read OpenHands events into messages."""
    events = _events(doc)
    if events is None:
        raise ShapeError("expected a list of OpenHands events or an object with 'history'", where="$")
    reader = _Reader(lines if events is doc else None, _run_usages(doc))
    for k, e in enumerate(events):
        reader.event(k, e)
    return reader.finish()


def _run_usages(doc: Any) -> dict[Any, dict]:
    """An evaluation output's ``metrics.token_usages`` (one per model response) by response id: the
    events' own ``llm_metrics`` hold running totals only there."""
    metrics = doc.get("metrics") if isinstance(doc, dict) and isinstance(doc.get("metrics"), dict) else {}
    usages = metrics.get("token_usages") if isinstance(metrics.get("token_usages"), list) else []
    return {u["response_id"]: u for u in usages if isinstance(u, dict) and isinstance(u.get("response_id"), str)}


TRACE = trace_format(NAME, "OpenHands events / trajectory", detect_doc, read_doc)
FORMAT = TRACE.format
