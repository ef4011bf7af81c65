"""What the readers of production traces share: model calls in, one conversation out.

A production trace (OpenTelemetry GenAI spans, a Langfuse trace, a LangSmith run tree) logs each
model call on its own: the prompt it sent, the reply it got, and the usage the provider billed.
The conversation of one agent run is rebuilt from its calls in order: the first call's prompt,
its reply, then whatever each next prompt adds after the previous reply (tool results, a user
message), then that call's reply, and so on. Every reply is one assistant message carrying the
call's reported ``Usage``, so a replay finds the billed figures on the message each call
produced.

When a prompt does not extend the previous one (the agent trimmed or summarized its own
history before that call), the messages it holds after the previous reply are appended, and a
note says the model saw less than the history kept here. A call that failed without a reply is
left out with a note (its prompt is repeated by the call that follows).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any, Sequence

from ..conversation import Message, Usage
from ..errors import CtxlabError, ShapeError, shown
from ._base import ReadContext
from ._trace import Trace
from .registry import detect, get_format


@dataclass
class CallRecord:
    """One model call read from a trace: its prompt (None when the trace did not log it), its
    reply (assistant messages; empty when the call failed), the usage it reported, where it is in
    the file, and the error it ended with."""

    prompt: list[Message] | None
    reply: list[Message]
    usage: Usage | None
    where: str
    error: str | None = None
    model: str | None = None


def _key(m: Message) -> tuple:
    """What makes two logged messages the same message (usage, ids and extra fields aside)."""
    content = m.content if isinstance(m.content, str) else tuple((p.type, p.text) for p in m.content)
    calls = tuple((c.id, c.name, _canon(c.arguments)) for c in m.tool_calls)
    return m.role, content if content != () else "", calls, m.tool_call_id


def _canon(arguments: str) -> str:
    """Tool-call arguments in one spelling (a trace may log them as an object in one place and as
    text in another)."""
    try:
        return json.dumps(json.loads(arguments), sort_keys=True, separators=(",", ":"))
    except (ValueError, TypeError):
        return arguments


def _after_last_reply(prompt: list[Message], reply_keys: set[tuple]) -> list[Message]:
    """The messages of a prompt after the last one that is a previous reply (else after its last
    assistant message, else all but its system messages)."""
    for k in range(len(prompt) - 1, -1, -1):
        if _key(prompt[k]) in reply_keys:
            return prompt[k + 1:]
    for k in range(len(prompt) - 1, -1, -1):
        if prompt[k].role == "assistant":
            return prompt[k + 1:]
    return [m for m in prompt if m.role != "system"]


def assemble(calls: Sequence[CallRecord], trace: Trace, what: str = "call") -> None:
    """Append the conversation of ``calls`` (in order) to ``trace``, with notes."""
    history: list[Message] = []
    keys: list[tuple] = []
    replies: set[tuple] = set()
    failed, unlogged, rewritten = [], [], []
    for n, call in enumerate(calls):
        if not call.reply:
            failed.append(f"{call.where}" + (f" ({shown(call.error, 80)})" if call.error else ""))
            continue
        prompt = call.prompt
        if prompt is None:
            unlogged.append(call.where)
            prompt = []
        pk = [_key(m) for m in prompt]
        if not history:
            new = prompt
        elif pk[:len(keys)] == keys:
            new = prompt[len(keys):]
        else:
            new = _after_last_reply(prompt, replies)
            if prompt:
                rewritten.append(f"{call.where} ({len(prompt):,} messages sent, {len(history) + len(new):,} kept)")
        history += new
        keys += [_key(m) for m in new]
        first_reply = len(history)
        for m in call.reply:
            history.append(m)
            keys.append(_key(m))
            replies.add(_key(m))
        if call.usage is not None:  # the usage belongs to the reply: on its first assistant message
            k = next((i for i in range(first_reply, len(history)) if history[i].role == "assistant"), None)
            if k is not None:
                history[k] = replace(history[k], usage=call.usage)
        if call.model:
            trace.model = call.model
    trace.add(history)
    if failed:
        trace.notes.append(f"{len(failed):,} {what}(s) ended without a reply and are left out (their prompt is "
                           f"repeated by the next call): {', '.join(failed[:5])}" + (" ..." if len(failed) > 5 else ""))
    if unlogged:
        trace.notes.append(f"{len(unlogged):,} {what}(s) logged no prompt (content capture off?): only their reply "
                           f"is kept, so counts miss what they sent: {', '.join(unlogged[:5])}")
    if rewritten:
        trace.notes.append(f"{len(rewritten):,} prompt(s) do not extend the call before them: the agent trimmed or "
                           "summarized its history, so the model saw less than the history kept here: "
                           f"{', '.join(rewritten[:5])}")
    if not any(c.usage for c in calls):
        trace.notes.append(f"no {what} reports its usage: there is no billed figure to compare with")


def read_items(items: list[Any], where: str, notes: list[str]) -> list[Message]:
    """Provider-shaped messages (OpenAI, Anthropic, LangChain, Responses: detected) read by that
    format's reader; errors say where in the trace they are, notes are kept."""
    if not items:
        return []
    ctx = ReadContext(base=where)
    try:
        msgs = get_format(detect(items, ctx)).read(items, ctx)
    except CtxlabError as e:
        if not e.where or not e.where.startswith(where):
            e.where = f"{where} ({e.where})" if e.where else where
            e.args = (f"{e.where}: {e.problem}" + (f". {e.hint}" if e.hint else ""),)
        raise
    notes.extend(f"{where}: {n}" for n in ctx.notes)
    return msgs


_INT64_TEXT = re.compile(r"-?[0-9]{1,19}")  # ASCII digits only: "\u00b2".isdigit() is True, int() refuses it
INT64_MAX = 2**63 - 1


def int64_text(value: Any) -> int | None:
    """An integer written as text the way OTLP JSON writes int64 (ASCII digits, an optional minus,
    at most 19 digits), else None: superscripts, other scripts' digits, ``--5`` and 5,000-digit
    strings are not numbers here."""
    if value.__class__ is not str or not _INT64_TEXT.fullmatch(value.strip()):
        return None
    number = int(value)
    return number if -INT64_MAX - 1 <= number <= INT64_MAX else None


def whole(value: Any, where: str, what: str) -> int | None:
    """A token count from a trace (an int, or an int written as text, as OTLP JSON writes int64);
    None when absent; an error when it is something else (negative, beyond int64, not a number)."""
    if value is None:
        return None
    if isinstance(value, str) and int64_text(value) is not None:
        value = int64_text(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT64_MAX:
        raise ShapeError(f"{what} must be a whole number of tokens, found {shown(value, 40)}", where=where)
    return value


def usage_of(prompt: int | None, output: int | None, cached: int | None, written: int | None,
             model: str | None) -> Usage | None:
    """A Usage, or None when the call reported no prompt tokens."""
    if prompt is None:
        return None
    return Usage(prompt, output, cached, written, model)


__all__ = ["CallRecord", "assemble", "int64_text", "read_items", "usage_of", "whole"]
