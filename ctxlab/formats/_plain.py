"""Plain chat messages made while the JSON is parsed, never held as dicts.

A file of half a million short ``{"role": ..., "content": ...}`` messages parsed by ``json``
holds one dict per message: with its key table, about three times the file's size; once the
messages are read and the dicts freed, the key tables leave holes among the content strings
that later objects of other sizes cannot reuse (measured: the process stayed at 4.7x the file
after reading, for 2.1x of live data). ``load_all`` therefore parses a JSON document with
:meth:`PlainParse.hook`, which turns each object of exactly ``role`` (system, user or
assistant) then ``content`` (a string) into the ``Message`` the OpenAI reader would make, and
:meth:`PlainParse.settle` makes sure such Messages stand only where they mean that:

* when every one of them is an item of the document's message list (the document itself, or
  its ``messages``) and every item of that list is one, the list becomes a
  :class:`PlainMessages`, which ``formats._conversation`` takes as read when the format is
  OpenAI Chat (see :func:`role_sample`);
* anywhere else (a message list that also has other items, a nested object that happens to
  have those two keys, a shallow ``max_depth``) each goes back to the dict it was parsed from
  (same keys, same order, same strings), so every other path sees what ``json`` gives.

Trace detectors look at a document's first 200 records at most (Langfuse's "any GENERATION"
follows a check of the first 200), so :func:`trace_probe` gives them those as dicts.
"""
from __future__ import annotations

from dataclasses import MISSING, fields
from itertools import islice
from typing import Any

from ..conversation import _EMPTY, Message, _empty

_ROLES = {r: r for r in ("system", "user", "assistant")}  # one shared string per role
_PROBE = 200  #: records a trace detector may look at (see the module docstring)


class PlainMessages(list):
    """The items of a message list that were all plain chat messages: ``Message`` objects."""

    __slots__ = ()


def as_dict(m: Message) -> dict[str, Any]:
    """The object a plain Message was parsed from."""
    return {"role": m.role, "content": m.content}


class _Unfrozen:
    """Message's slots without its frozen ``__setattr__``: see :func:`_make_plain`."""

    __slots__ = Message.__slots__


def _defaults() -> dict[str, Any] | None:
    """Message's default per field after role and content, or None when a field has a default
    :func:`_make_plain` cannot copy (then the plain path calls ``Message`` itself)."""
    out: dict[str, Any] = {}
    for f in fields(Message)[2:]:
        if f.default is not MISSING:
            out[f.name] = f.default
        elif f.default_factory is _empty:
            out[f.name] = _EMPTY
        else:
            return None
    return out


def _make_plain(role: str, content: str, _new: type = _Unfrozen, _cls: type = Message) -> Message:
    """``Message(role, content)``, twice as fast: a frozen dataclass's ``__init__`` stores each of
    its nine fields through a descriptor call, which was half the time of reading half a million
    short messages. The slots are filled on an object of the same layout that is not frozen,
    which then becomes a Message (``__class__`` assignment checks that the layouts match)."""
    m = _new()
    m.role = role
    m.content = content
    m.name = m.tool_call_id = m.id = m.usage = None
    m.tool_calls = ()
    m.is_error = False
    m.extra = _EMPTY
    m.__class__ = _cls
    return m


def _plain_maker() -> Any:
    """:func:`_make_plain` when it makes what ``Message(role, content)`` makes, else Message."""
    try:
        made = _make_plain("user", "x")
    except (AttributeError, TypeError):  # a changed Message: other slots or layout
        return Message
    same = _defaults() == {f.name: getattr(made, f.name) for f in fields(Message)[2:]} and \
        [f.name for f in fields(Message)[:2]] == ["role", "content"]
    return _make_plain if same and made == Message("user", "x") else Message


MAKE_PLAIN = _plain_maker()
"""Makes the Message of a plain chat message (role, content)."""


class PlainParse:
    """One parse: the ``object_pairs_hook`` and the check of where its Messages went."""

    __slots__ = ("made",)

    def __init__(self) -> None:
        self.made = 0

    def hook(self, pairs: list[tuple[str, Any]], _roles: dict[str, str] = _ROLES, _str: type = str,
             _fast: bool = MAKE_PLAIN is _make_plain, _new: type = _Unfrozen, _cls: type = Message,
             _e: Any = _EMPTY, _dict: type = dict) -> Any:
        """``json`` object_pairs_hook: a Message for ``{"role": <chat role>, "content": <str>}``,
        else the dict ``json`` would make (the last of repeated keys wins, as there). The
        Message is made as in :func:`_make_plain`, inline (one call less per message)."""
        if len(pairs) == 2:
            (k1, role), (k2, content) = pairs
            if k1 == "role" and k2 == "content" and content.__class__ is _str and role.__class__ is _str \
                    and role in _roles:
                self.made += 1
                if not _fast:
                    return _cls(_roles[role], content)
                m = _new()
                m.role = _roles[role]
                m.content = content
                m.name = m.tool_call_id = m.id = m.usage = None
                m.tool_calls = ()
                m.is_error = False
                m.extra = _e
                m.__class__ = _cls
                return m
        return _dict(pairs)

    def settle(self, doc: Any, max_depth: int) -> Any:
        """``doc`` with its message list as PlainMessages when it is all plain messages and
        holds every Message made; otherwise every Message back as its dict."""
        if not self.made:
            return doc
        if doc.__class__ is Message:  # the document is one plain message object
            return as_dict(doc)
        items = doc if doc.__class__ is list else doc.get("messages") if doc.__class__ is dict else None
        inside = list(map(type, items)).count(Message) if items.__class__ is list else 0
        if inside == self.made == len(items) and max_depth >= 3:  # a dict message nests 3 deep at most
            if doc.__class__ is list:
                return PlainMessages(doc)
            doc["messages"] = PlainMessages(items)
            return doc
        if inside:
            items[:] = [as_dict(m) if m.__class__ is Message else m for m in items]
        if inside < self.made:
            _restore(doc)
        return doc


def _restore(doc: Any) -> None:
    """Turn every Message inside ``doc`` back into its dict (an explicit stack: any depth)."""
    stack = [doc]
    while stack:
        node = stack.pop()
        pairs = node.items() if node.__class__ is dict else enumerate(node)
        for key, value in list(pairs):
            cls = value.__class__
            if cls is Message:
                node[key] = as_dict(value)
            elif cls is dict or cls is list:
                stack.append(value)


def undo(doc: Any) -> Any:
    """``doc`` with a PlainMessages list (the document, or its ``messages``) as a list of dicts."""
    if isinstance(doc, PlainMessages):
        return list(map(as_dict, doc))
    if isinstance(doc, dict) and isinstance(doc.get("messages"), PlainMessages):
        return {**doc, "messages": list(map(as_dict, doc["messages"]))}
    return doc


def has_plain(docs: list[Any]) -> bool:
    """Whether a parsed document holds a PlainMessages list."""
    return any(isinstance(d, PlainMessages) or (isinstance(d, dict) and isinstance(d.get("messages"), PlainMessages))
               for d in docs)


def trace_probe(docs: list[Any]) -> list[Any]:
    """``docs`` as trace detectors may see them: a PlainMessages list as the dicts of its first
    records (see the module docstring)."""
    out = []
    for d in docs:
        if isinstance(d, PlainMessages):
            d = list(map(as_dict, islice(d, _PROBE)))
        elif isinstance(d, dict) and isinstance(d.get("messages"), PlainMessages):
            d = {**d, "messages": list(map(as_dict, islice(d["messages"], _PROBE)))}
        out.append(d)
    return out


def role_sample(items: PlainMessages) -> list[dict[str, Any]]:
    """One dict per distinct role, in order of first appearance: the same list shape (keys,
    roles, string content) as the whole list, which is all the message-list detectors score
    (``_base.ListShape``; LangChain's rejects a dict without ``type`` at its first item)."""
    first: dict[str, Message] = {}
    for m in items:
        if m.role not in first:
            first[m.role] = m
            if len(first) == len(_ROLES):
                break
    return [as_dict(m) for m in first.values()]
