"""The context of a session as the design describes it, as pure functions (no database here).

The record holds a ``layout``: what the last application of the strategy left, in order, without
the system prompt: ``{"seq": n}`` for a history message sent as is, ``{"seq": n, "body": {...}}``
for one sent changed (a cleared or truncated tool result), ``{"insert": {...}, "summary": true}``
for a message the strategy inserted (the running summary). The messages sent to the model are
the system prompt, then the layout, then every message that arrived after the last application.

Before a model call (every call, or only when a user message arrived since the last application:
the strategy's ``apply_at``, ``strategies.step.due``) the strategy is applied to exactly that list,
with the state it left last time (the running summary, what it already folded): the same step
(``strategies.step.before_call``) ``ctxlab.replay`` takes call by call; its result becomes the new
layout. A changed entry also records the action that changed it (``"action": "clear"``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..conversation import Message
from ..errors import CtxlabError
from ..formats._base import ReadContext
from ..formats.openai_chat import message_to_openai, read as read_openai
from ..strategies import Budget, Plan, Strategy, make_view
from ..strategies.step import FULL_HISTORY, before_call, works_on
from ..fidelity import extract_facts
from ..strategies.summarizers.summarize import SUMMARY_EXTRA, is_summary, summary_body, summary_message
from ..tokens import TokenCounter
from .db import SessionError

SYSTEM_ORIGIN = -1  # the origin given to the system prompt in the strategy's view


def to_message(body: Mapping[str, Any], where: str = "message") -> Message:
    """An OpenAI Chat message dict as a ctxlab Message; a bad one raises naming ``where``."""
    if not isinstance(body, Mapping):
        raise SessionError(f"a message must be an OpenAI Chat message dict, got {type(body).__name__}", where=where,
                           hint='For example {"role": "user", "content": "Hello"}')
    try:
        return read_openai([dict(body)], ReadContext())[0]
    except CtxlabError as e:  # the reader names the field of its message 0; say which message it is
        path = (e.where or "").partition("(")[2].rstrip(")").replace("$[0]", "$")
        raise SessionError(e.problem, where=f"{where} ({path})" if path else where, hint=e.hint) from None


def checked_body(body: Any, where: str) -> dict[str, Any]:
    """The message dict to store: valid OpenAI Chat, and JSON (a copy, so later edits do not leak in)."""
    to_message(body, where)
    try:  # NaN and Infinity are not JSON: PostgreSQL refuses them and SQLite would store them
        return json.loads(json.dumps(body, ensure_ascii=False, allow_nan=False))
    except ValueError as e:
        if "Out of range float" in str(e):
            raise SessionError("the message holds a number that is not finite (NaN or Infinity), which is not JSON",
                               where=where, hint="Write such a value as a string") from None
        raise SessionError(f"the message is not JSON-serializable ({e})", where=where) from None
    except TypeError as e:
        raise SessionError(f"the message is not JSON-serializable ({e})", where=where) from None


def to_dict(m: Message) -> dict[str, Any]:
    """A Message as an OpenAI Chat dict (what is sent)."""
    return message_to_openai(m, 0, [])


def _insert_message(entry: Mapping[str, Any]) -> Message:
    body = entry["insert"]
    if entry.get("summary"):
        return Message("system", body.get("content") or "", extra=SUMMARY_EXTRA)
    return to_message(body, "inserted message")


def assemble(system_prompt: str, layout: Sequence[Mapping[str, Any]], bodies: Mapping[int, dict],
             applied_through: int) -> list[dict[str, Any]]:
    """The messages to send now: system prompt, the layout, then what arrived since."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    for entry in layout:
        if "seq" in entry:
            out.append(entry.get("body") or bodies[entry["seq"]])
        else:
            out.append(to_dict(_insert_message(entry)))
    out += [bodies[s] for s in sorted(bodies) if s > applied_through]
    return out


def _view_input(system_prompt: str, layout: Sequence[Mapping[str, Any]], bodies: Mapping[int, dict],
                applied_through: int) -> tuple[list[Message], list[int | None], set[int]]:
    """What the strategy reads: messages, their origin (history seq; -1 system prompt; None inserted),
    and the seqs sent changed."""
    msgs: list[Message] = [Message("system", system_prompt)] if system_prompt else []
    origin: list[int | None] = [SYSTEM_ORIGIN] if system_prompt else []
    changed: set[int] = set()
    for entry in layout:
        if "seq" in entry:
            seq = entry["seq"]
            msgs.append(to_message(entry.get("body") or bodies[seq], f"message {seq}"))
            origin.append(seq)
            if entry.get("body"):
                changed.add(seq)
        else:
            msgs.append(_insert_message(entry))
            origin.append(None)
    for s in sorted(bodies):
        if s > applied_through:
            msgs.append(to_message(bodies[s], f"message {s}"))
            origin.append(s)
    return msgs, origin, changed


def _json_state(state: Mapping[str, Any]) -> dict[str, Any]:
    def plain(o: Any) -> Any:
        if isinstance(o, (set, frozenset, tuple)):
            return list(o)
        return str(o)
    return json.loads(json.dumps(dict(state), default=plain))


@dataclass(frozen=True)
class Application:
    """One application of the strategy: the new layout and record fields, and what it did."""

    plan: Plan
    layout: list[dict[str, Any]]
    active_ids: list[int]
    summary: str
    state: dict[str, Any]
    summarized: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    cleared: list[int] = field(default_factory=list)

    @property
    def triggered(self) -> bool:
        """Whether the strategy removed, summarized, cleared or truncated anything."""
        return any(a != "keep" for a in self.plan.actions)

    @property
    def removed(self) -> int:
        """History messages removed from the context (dropped or folded into the summary)."""
        return len(self.summarized) + len(self.dropped)


def _sent_as(layout: Sequence[Mapping[str, Any]], bodies: Mapping[int, dict], applied_through: int) -> dict[int, str]:
    """The state each history message was sent in by the last application: ``keep``, the action that
    changed its body (``clear``, ``truncate``), or ``drop`` for one it removed."""
    sent = {seq: "drop" for seq in bodies if seq <= applied_through}
    sent.update({e["seq"]: e.get("action", "clear") if e.get("body") else "keep" for e in layout if "seq" in e})
    return sent


def apply(strategy: Strategy, budget: Budget, counter: TokenCounter, system_prompt: str,
          layout: Sequence[Mapping[str, Any]], state: Mapping[str, Any], bodies: Mapping[int, dict],
          applied_through: int) -> Application:
    """Apply ``strategy`` to the current context (see the module docstring): the step
    ``ctxlab.replay`` takes before every call (``strategies.step.before_call``). A strategy whose
    ``works_on`` is ``full_history`` is applied to the whole history as it arrived, with no state, at every
    application: what it left last time does not matter."""
    sent_as = _sent_as(layout, bodies, applied_through)
    if works_on(strategy) == FULL_HISTORY:
        layout, state, applied_through = [{"seq": seq} for seq in sorted(bodies)], {}, max(bodies, default=-1)
    msgs, origin, changed = _view_input(system_prompt, layout, bodies, applied_through)
    view = make_view(msgs, counter=counter, origin=origin, state=state)
    step = before_call(strategy, view, budget, lambda seq: sent_as.get(seq, "keep"), quick=False)
    plan = step.plan
    assert plan is not None  # quick=False: a plan is always made
    new_layout: list[dict[str, Any]] = []
    summary = ""
    for m, k, a in zip(plan.messages, plan.origin, _output_actions(plan)):
        seq = origin[k] if k is not None else None
        if seq == SYSTEM_ORIGIN:
            continue
        if seq is None:
            new_layout.append({"insert": to_dict(m), "summary": is_summary(m)})
            if is_summary(m):
                summary = summary_body(m)
        elif m is msgs[k] and seq not in changed:
            new_layout.append({"seq": seq})
        else:
            action = a if a in ("clear", "truncate") else sent_as.get(seq, "clear")
            new_layout.append({"seq": seq, "body": to_dict(m), "action": action})
    summary = str(plan.state.get("summary") or summary)
    previous = str((state or {}).get("summary") or "")
    plan_state = dict(plan.state)
    if summary and plan_state.get("summary") and previous:
        carried = carry_facts(previous, summary, budget.prompt_limit - plan.tokens_after, counter)
        if carried != summary:
            summary = plan_state["summary"] = carried
            for entry in new_layout:
                if entry.get("summary"):
                    entry["insert"] = to_dict(summary_message(carried, plan_state.get("summarized", ())))
    done: dict[str, list[int]] = {"summarize": [], "drop": [], "clear": []}
    for seq, a in step.changes:
        if seq >= 0 and a != "keep":
            done["clear" if a in ("clear", "truncate") else a].append(seq)
    return Application(plan, new_layout, [e["seq"] for e in new_layout if "seq" in e], summary,
                       _json_state(plan_state), done["summarize"], done["drop"], done["clear"])


def _output_actions(plan: Plan) -> list[str]:
    """The action of the input message each output message of ``plan`` came from (``keep`` for an inserted one)."""
    return [plan.actions[k] if k is not None else "keep" for k in plan.origin]


FACTS_LINE = "Facts from earlier turns: "
"""The line a live session's running summary carries its early facts on (see carry_facts)."""


def carry_facts(previous: str, summary: str, room: int, counter: TokenCounter) -> str:
    """``summary`` with the facts (identifiers, amounts, dates) of the ``previous`` summary that the
    merge lost, on one line at its end, earliest first, within ``room`` tokens. The summary is
    capped and drops its oldest lines first; a session lives for many turns, and its first turns'
    refund ids and amounts must not fall out of it one merge at a time."""
    body = "\n".join(line for line in summary.splitlines() if not line.startswith(FACTS_LINE))
    now = extract_facts(body)
    lost = [f for f in sorted(extract_facts(previous), key=lambda f: (previous.find(f), f)) if f not in now]
    if not lost or room <= 0:
        return summary
    room += counter.text(summary) - counter.text(body)  # the old facts line is replaced
    while lost:
        line = FACTS_LINE + ", ".join(lost)
        if counter.text("\n" + line) <= room:
            return f"{body}\n{line}"
        lost = lost[: max(0, min(len(lost) - 1, int(len(lost) * 0.8)))]  # the newest go first
    return summary
