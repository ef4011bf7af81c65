"""What the detectors see in a conversation, gathered in one pass: every tool call with its
result and whether it failed, every identifier, and the entity records inside JSON tool results.

An **entity record** is a JSON object in a tool result that has an identifier key (``id``, a key
ending in ``_id`` or ``_ref``): the first such key names the entity (``{"order_id": "ORD-1",
"status": "shipped", "totals": {"total": 99.5}}`` is entity ``ORD-1`` with fields ``status`` and
``totals.total``). Nested objects without an identifier of their own add dotted fields to their
parent; objects in lists are records of their own (or nothing, without an identifier).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..conversation import Conversation, Message, ToolCall, json_leaves

READ_VERBS = ("get", "list", "search", "find", "fetch", "read", "lookup", "look", "query", "describe", "track",
              "check", "calculate", "think", "valid", "validate", "show", "view", "count", "retrieve", "browse",
              "inspect", "preview", "estimate", "compare", "generate", "compute", "explain", "analyze")
"""A tool whose name starts with one of these words only reads (or writes nothing the world keeps,
like ``generate_sql``); any other may change the world."""

MONEY_WORDS = ("amount", "total", "price", "fee", "balance", "cost", "revenue", "refund", "charge", "fare")
"""A numeric field whose last name part contains one of these words holds money."""

COMMON_STATUSES = ("pending", "processing", "shipped", "delivered", "in_transit", "cancelled", "canceled",
                   "refunded", "returned", "held", "confirmed", "booked", "failed", "succeeded", "active",
                   "inactive", "closed", "open", "approved", "rejected", "expired", "paid", "unpaid", "lost",
                   "pending_approval", "completed", "scheduled", "delayed", "available")
"""Status words recognised in assistant text besides those the tool results use."""

_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-]*[A-Za-z0-9]")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
_ERROR_TEXT = re.compile(r"^\s*(error\b|exception\b|traceback\b|failed\b|\{?\s*\"?error\"?\s*:)", re.I)


def is_identifier(text: str) -> bool:
    """Whether a token looks like an identifier: 4-64 characters of letters, digits, ``_`` and
    ``-`` with at least one digit and one letter (``ORD-482913``, ``mia_li_3668``), or 6+ capital
    letters (a booking reference like ``KQXTRM``); dates and plain numbers are not."""
    if not 4 <= len(text) <= 64 or _DATE.match(text) or not _TOKEN.fullmatch(text):
        return False
    has_digit = any(c.isdigit() for c in text)
    has_alpha = any(c.isalpha() for c in text)
    return (has_digit and has_alpha) or (len(text) >= 6 and text.isalpha() and text.isupper())


def identifiers_in(text: str) -> list[str]:
    """The identifier-shaped tokens of a text, in order."""
    return [t for t in _TOKEN.findall(text) if is_identifier(t)]


def is_read_tool(name: str) -> bool:
    """Whether a tool, by its name, only reads (``get_order``, ``search_flights``)."""
    first = re.split(r"[_\-.\s]|(?<=[a-z])(?=[A-Z])", name, maxsplit=1)[0].lower()
    return first in READ_VERBS


def is_money_field(name: str) -> bool:
    """Whether a (dotted) field name holds an amount of money."""
    last = name.rsplit(".", 1)[-1].lower()
    return any(w in last for w in MONEY_WORDS) and not last.endswith(("_id", "_count", "_pct", "_share"))


def is_id_key(key: str) -> bool:
    """Whether a JSON key holds an identifier (``id``, ``order_id``, ``booking_ref``)."""
    k = key.lower()
    return k == "id" or k.endswith("_id") or k.endswith("_ref") or key.endswith("Id")


def result_failed(message: Message) -> bool:
    """Whether a tool result reports a failure: ``is_error``, text starting with ``Error``, or a
    JSON object with a truthy ``error``, ``"ok": false``, ``"valid": false`` or a failed status."""
    if message.is_error:
        return True
    text = message.text.strip()
    if not text.startswith("{"):
        return bool(_ERROR_TEXT.match(text))
    try:
        doc = json.loads(text)
    except ValueError:
        return False
    if not isinstance(doc, dict):
        return False
    status = doc.get("status")
    return bool(doc.get("error")) or doc.get("ok") is False or doc.get("valid") is False or \
        doc.get("success") is False or (isinstance(status, str) and status.lower() in ("error", "failed"))


def canonical_arguments(call: ToolCall) -> str:
    """A call's arguments as sorted compact JSON (so key order and spacing do not matter)."""
    try:
        return json.dumps(call.parsed_arguments(), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return call.arguments.strip()


@dataclass(frozen=True)
class CallInfo:
    """One tool call: where it was asked for, where its result is, and whether it failed."""

    index: int
    call: ToolCall
    args_key: str
    result_index: int | None = None
    failed: bool = False

    @property
    def name(self) -> str:
        """The tool called."""
        return self.call.name

    @property
    def reads(self) -> bool:
        """Whether the tool only reads."""
        return is_read_tool(self.call.name)


@dataclass(frozen=True)
class Record:
    """One field of one entity as a tool result reported it."""

    entity: str
    field: str
    value: Any
    index: int
    call: CallInfo | None


@dataclass
class Observations:
    """Calls in order, records in order, and result index -> call."""

    calls: list[CallInfo] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    call_of_result: dict[int, CallInfo] = field(default_factory=dict)


def argument_identifiers(call: ToolCall) -> list[str]:
    """Identifier-shaped tokens in a call's argument values (whole values and tokens inside
    free text such as SQL), in order, without repeats."""
    try:
        args = call.parsed_arguments()
    except ValueError:
        return []
    out: dict[str, None] = {}
    for s in (v for v in json_leaves(args) if isinstance(v, str)):
        for t in ([s] if is_identifier(s) else identifiers_in(s)):
            out.setdefault(t)
    return list(out)


def records_in(doc: Any, container: str = "") -> Iterator[tuple[str, str, Any]]:
    """(entity, field, scalar value) of every entity record in a JSON document.

    A top-level object is identified by its first identifier key. An object inside a list or under
    a key is identified by its ``id`` key, or by a key named after its container (``order_id`` in
    ``orders``, ``event_id`` in ``processing_events``); other identifier keys there are references
    (``payment_id`` in ``payment_history``), so such an object is no record of its own."""
    if isinstance(doc, list):
        for item in doc:
            yield from records_in(item, container)
        return
    if not isinstance(doc, dict):
        return
    yield from _fields(doc, _identity(doc, container), "")


def _identity(doc: dict, container: str) -> str | None:
    def usable(v: Any) -> bool:
        return isinstance(v, (str, int)) and not isinstance(v, bool) and bool(str(v).strip())
    if not container:
        return next((str(v) for k, v in doc.items() if is_id_key(k) and usable(v)), None)
    if usable(doc.get("id")):
        return str(doc["id"])
    word = re.split(r"[_\-.]", container.lower())[-1]
    singular = word[:-3] + "y" if word.endswith("ies") else word[:-1] if word.endswith("s") else word
    for k, v in doc.items():
        stem = re.sub(r"(_id|_ref|id)$", "", k.lower())
        if is_id_key(k) and usable(v) and stem and (stem == singular or container.lower().endswith(stem)):
            return str(v)
    return None


def _fields(doc: dict, entity: str | None, prefix: str) -> Iterator[tuple[str, str, Any]]:
    for key, value in doc.items():
        if isinstance(value, dict):
            if any(is_id_key(k) for k in value):
                yield from records_in(value, key)
            else:
                yield from _fields(value, entity, f"{prefix}{key}.")
        elif isinstance(value, list):
            yield from records_in(value, key)
        elif entity is not None:
            yield entity, prefix + key, value


def observe(conv: Conversation) -> Observations:
    """Calls, their results and failures, and the entity records of every JSON tool result."""
    obs = Observations()
    open_calls: dict[str, CallInfo] = {}
    for i, m in enumerate(conv.messages):
        for c in m.tool_calls:
            info = CallInfo(i, c, canonical_arguments(c))
            open_calls[c.id] = info
        if m.role != "tool" or m.tool_call_id is None:
            continue
        info = open_calls.pop(m.tool_call_id, None)
        if info is not None:
            info = CallInfo(info.index, info.call, info.args_key, i, result_failed(m))
            obs.calls.append(info)
            obs.call_of_result[i] = info
        text = m.text.strip()
        if text[:1] in "{[":
            try:
                doc = json.loads(text)
            except ValueError:
                continue
            obs.records.extend(Record(e, f, v, i, info) for e, f, v in records_in(doc))
    obs.calls.sort(key=lambda c: (c.index, c.result_index or 0))
    return obs


def values_equal(a: Any, b: Any) -> bool:
    """Equal as a reader would judge: numbers to the cent, strings without case or spacing."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) < 0.005
    if isinstance(a, str) and isinstance(b, str):
        return norm_word(a) == norm_word(b)
    return a == b


def norm_word(text: str) -> str:
    """``In Transit`` -> ``in_transit``."""
    return re.sub(r"[\s\-]+", "_", text.strip().lower())


def within_one_edit(a: str, b: str) -> bool:
    """Whether two different strings are one typo apart: one character substituted, inserted or
    deleted, or two neighbouring characters swapped (``NB-20417`` / ``NB-20471``)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [k for k, (x, y) in enumerate(zip(a, b)) if x != y]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    return a[i:] == b[i + 1:]
