"""What every format module shares: the reader context (error positions, notes) and the
registry entry a format adds itself with."""
from __future__ import annotations

import json
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Callable, Iterator

from ..errors import (DuplicateToolCallIdError, EmptyMessageError, NestingTooDeepError, NotJSONError, ShapeError, ToolArgumentsError, UnknownRoleError,
                      path_key, shown, shown_keys)
from ..conversation import Conversation, Message, Part
from ..i18n import T
from ._json import DEFAULT_MAX_DEPTH, SourceObjects, decode_error_text, depth_check, strict_loads


#: keys ctxlab itself puts in Message.extra; writers never copy them out as provider fields
INTERNAL_EXTRA = ("top_level", "openai_role", "anthropic", "ctxlab_summary", "ctxlab_compaction", "ctxlab_task",
                  "ctxlab_text_action", "ctxlab_harness", "ctxlab_final", "ctxlab_subagent", "ctxlab_unlogged",
                  "ctxlab_tokens", "ctxlab_offloaded")


@dataclass
class ReadContext:
    """Where the messages sit in the input (a JSON path prefix) and what import noted."""

    base: str = "$"
    notes: list[str] = field(default_factory=list)
    #: for JSONL of messages, the line each item was read from
    lines: tuple[int, ...] | None = None
    max_depth: int = DEFAULT_MAX_DEPTH
    #: the source text's objects, for readers that keep the exact text of an object (Anthropic
    #: tool_use inputs become arguments text); None when reading parsed data
    source: SourceObjects | None = None

    def where(self, index: int, *path: str | int) -> str:
        """``message 3 ($.messages[3].tool_calls[0])`` for error messages, or ``message 3 (JSONL
        line 5: $.tool_calls[0])`` when the messages came one a line."""
        if self.lines is not None and 0 <= index < len(self.lines):
            jp = f"JSONL line {self.lines[index]}: $"
        else:
            jp = f"{self.base}[{index}]"
        return T("message {index} ({path})", index=index, path=jp + "".join(path_key(p) for p in path))

    def unkept_call_fields(self, index: int, raw: Any, known: tuple[str, ...]) -> None:
        """Note the fields of a tool call that ctxlab does not keep (it keeps a call's id, name and
        arguments): a streamed call's ``index``, a Responses call's ``status``, a block's
        ``cache_control``. Named on import, so a conversion never drops them silently."""
        left = [k for k in raw if k not in known] if isinstance(raw, dict) else []
        if left:
            self.notes.append(f"message {index}: tool-call field(s) {shown_keys(left)} are not kept (ctxlab keeps a "
                              "call's id, name and arguments)")

    def unmodeled_part(self, index: int, kind: str) -> None:
        """Note a content part ctxlab keeps but does not model (an unknown block type, an audio
        part...): it is written back as it came, and its tokens are estimated from its JSON."""
        self.notes.append(f"message {index}: content part of type {shown(kind, 30)} is kept as sent; ctxlab "
                          "does not model it, so its tokens are an estimate from its JSON")


_NOTE = re.compile(r"message (\d+): (.*)", re.DOTALL)


def group_notes(notes: list[str] | tuple[str, ...], listed: int = 100) -> tuple[str, ...]:
    """Notes with duplicates removed and ``message N: X`` notes of the same X merged into one
    ``messages 3, 5, 9: X`` note (the first ``listed`` indexes, then how many more), in order of
    first appearance."""
    order: dict[str, dict[int, None] | None] = {}
    for note in notes:
        m = _NOTE.fullmatch(note)
        if m is None:
            order.setdefault(note, None)
            continue
        idx = order.setdefault(m[2], {})
        if idx is not None:
            idx[int(m[1])] = None
    out = []
    for text, idx in order.items():
        if idx is None:
            out.append(text)
            continue
        first = list(idx)[:listed]
        more = f" and {len(idx) - listed:,} more ({len(idx):,} in all)" if len(idx) > listed else ""
        out.append(f"message {first[0]}: {text}" if len(idx) == 1
                   else f"messages {', '.join(map(str, first))}{more}: {text}")
    return tuple(out)


def noted(notes: tuple[str, ...] | list[str], index: int, words: str) -> bool:
    """Whether a note names message ``index`` and contains ``words`` (grouped notes too)."""
    for n in notes:
        head, _, rest = n.partition(": ")
        listed = head.split(" ", 1)[1].split(" and ")[0].split(", ") if head.startswith("message") else []
        if words in rest and str(index) in listed:
            return True
    return False


@dataclass(frozen=True)
class Export:
    """The result of writing a conversation: JSON-ready data plus notes on anything the target
    format has no place for (each note names the messages concerned)."""

    data: Any
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Format:
    """A conversation format: how to recognise it, read its message list, and write it.

    ``detect`` scores a message list (0 = not this format); the highest score wins.
    ``read(items, ctx)`` returns messages; ``write(conversation)`` returns an Export.
    """

    name: str
    title: str
    detect: Callable[[list[Any]], int]
    read: Callable[[list[Any], ReadContext], list[Message]]
    write: Callable[[Conversation], Export] | None = None


# ---------------------------------------------------------------- detection over whole lists
# Detectors score every item of a list (one misfit spoils it). On a file of half a million
# messages, each pass over the items is memory traffic that costs about a third of parsing the
# file, so the built-in detectors read one summary of the list, made in one pass and, inside
# ``shared_shape(items)`` (which ``formats.detect`` opens around the detectors), made once.


@dataclass(frozen=True)
class ListShape:
    """What the message-list detectors look at, gathered in one pass over the items."""

    #: every item is a dict
    dicts: bool
    #: every item is a dict with a "role" key
    with_role: bool = False
    #: the distinct role values (None when one is unhashable: no format's role)
    roles: frozenset[Any] | None = frozenset()
    #: the distinct hashable "type" values
    types: frozenset[Any] = frozenset()
    #: every key that some item has
    keys: frozenset[str] = frozenset()
    #: (index, content) of the items whose content is a list
    lists: tuple[tuple[int, list], ...] = ()
    #: the classes of the "content" values (NoneType when absent)
    content_types: frozenset[type] = frozenset()


_ABSENT = object()
_SHAPES = threading.local()


def _list_shape(items: list[Any]) -> ListShape:
    roles: set[Any] | None = set()
    types: set[Any] = set()
    keys: set[str] = set()
    lists: list[tuple[int, list]] = []
    content_types: set[type] = set()
    with_role = True
    for i, m in enumerate(items):
        if not isinstance(m, dict):
            return ListShape(False)
        keys.update(m)
        role = m.get("role", _ABSENT)
        if role is _ABSENT:
            with_role = False
        elif roles is not None:
            try:
                roles.add(role)
            except TypeError:
                roles = None
        kind = m.get("type")
        if kind is not None:
            try:
                types.add(kind)
            except TypeError:
                pass
        content = m.get("content")
        cls = content.__class__
        content_types.add(cls)
        if cls is not str and isinstance(content, list):
            lists.append((i, content))
    return ListShape(True, with_role, None if roles is None else frozenset(roles), frozenset(types),
                     frozenset(keys), tuple(lists), frozenset(content_types))


def list_shape(items: list[Any]) -> ListShape:
    """The summary of ``items`` (made once per list inside ``shared_shape``)."""
    memo = getattr(_SHAPES, "memo", None)
    if memo is None or memo[0] is not items:
        return _list_shape(items)
    if memo[1] is None:
        _SHAPES.memo = memo = (items, _list_shape(items))
    return memo[1]


@contextmanager
def shared_shape(items: list[Any]) -> Iterator[None]:
    """Within this block, ``list_shape(items)`` is computed once."""
    outer = getattr(_SHAPES, "memo", None)
    if outer is not None and outer[0] is items:  # already shared by an enclosing block
        yield
        return
    _SHAPES.memo = (items, None)
    try:
        yield
    finally:
        _SHAPES.memo = outer


#: Conversation.metadata key of the model name a file wrote when ctxlab counts it as another (see adopt_model)
MODEL_NAMED = "model_named"


def adopt_model(name: Any, notes: list[str], meta: dict[str, Any]) -> str | None:
    """The model a file names, as ctxlab will count it: the name itself when ctxlab knows it; for a
    new name (``gpt-5.1-codex-max``), the closest known family (``model_specs.closest_model``), the
    name as written kept in ``meta["model_named"]`` and a note saying which tokenizer stands in.
    So a trace of a model released last week is read and counted, never refused."""
    if not isinstance(name, str) or not name.strip():
        return None
    from ..model_specs import closest_model
    spec, note = closest_model(name)
    if note is None:
        return name
    meta[MODEL_NAMED] = name
    notes.append(note)
    return spec.name


def model_as_written(conv: Conversation) -> str | None:
    """The model name a writer puts back in the file: the one the source wrote (a name ctxlab counts
    as a stand-in family is written as it came), else the conversation's model."""
    named = conv.metadata.get(MODEL_NAMED)
    return named if isinstance(named, str) else conv.model


def expect_dict(item: Any, ctx: ReadContext, index: int) -> dict:
    """The item as a dict, or a ShapeError naming its position."""
    if not isinstance(item, dict):
        raise ShapeError(
            T("expected a message object, found {kind}", kind=type(item).__name__),
            where=ctx.where(index),
            hint=T("Each message must be a JSON object with a role"),
        )
    return item


def role_of(item: dict, roles: tuple[str, ...], ctx: ReadContext, index: int, hint: str) -> str:
    """The item's role, or an UnknownRoleError naming the message and the roles the format has."""
    role = item.get("role")
    if not isinstance(role, str) or role not in roles:
        raise UnknownRoleError(T("unknown role {role}", role=shown(role)), where=ctx.where(index, "role"), hint=hint)
    return role


def check_arguments(text: Any, ctx: ReadContext, index: int, *path: str | int) -> str:
    """Tool-call arguments as original text; they must parse to a JSON object."""
    if isinstance(text, dict):
        # some producers send an object instead of a string: keep its compact form
        return json.dumps(text, ensure_ascii=False, separators=(",", ":"))
    if text is None:
        return "{}"
    if not isinstance(text, str):
        raise ToolArgumentsError(
            f"tool-call arguments must be a JSON string, found {type(text).__name__}",
            where=ctx.where(index, *path),
        )
    if not text.strip():
        return text
    try:
        value = strict_loads(text, "")  # where: named below, only on error (38k calls in a 50 MB file)
    except NotJSONError as e:  # a number ctxlab does not read: NaN, Infinity, 1e400, 5,000 digits
        raise ToolArgumentsError(f"tool-call arguments are {e.problem}", where=ctx.where(index, *path),
                                 hint=e.hint) from None
    except json.JSONDecodeError as e:
        raise ToolArgumentsError(
            f"tool-call arguments are not valid JSON ({decode_error_text(e)}): {shown(text)}",
            where=ctx.where(index, *path),
            hint="Fix the arguments text; a model that emitted it would have been rejected too",
        ) from None
    except RecursionError:
        raise NestingTooDeepError("tool-call arguments nest too deep to read", where=ctx.where(index, *path),
                                  hint="Arguments never nest this deep; check the producer") from None
    try:
        depth_check(value, ctx.max_depth, "$")
    except NestingTooDeepError as e:
        raise NestingTooDeepError(f"tool-call arguments nest deeper than {ctx.max_depth} levels (at {e.where})",
                                  where=ctx.where(index, *path), hint=e.hint) from None
    if not isinstance(value, dict):
        raise ToolArgumentsError(
            f"tool-call arguments must be a JSON object, found {type(value).__name__}",
            where=ctx.where(index, *path),
        )
    return text


def text_or_parts(content: Any, ctx: ReadContext, index: int, parse_part: Callable) -> str | tuple[Part, ...]:
    """Content as a string, or as parts parsed by the format's ``parse_part``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return tuple(parse_part(p, ctx, index, k) for k, p in enumerate(content))
    raise ShapeError(
        f"content must be a string or a list of parts, found {type(content).__name__}",
        where=ctx.where(index, "content"),
    )


def check_not_empty(role: str, content: Any, has_calls: bool, ctx: ReadContext, index: int) -> None:
    """A message with neither content nor tool calls is an input error. Tool results may be
    empty (a tool can return nothing), and so may an empty string: the validator reports
    those where a provider rejects them."""
    if role != "tool" and not has_calls and content is None:
        raise EmptyMessageError(
            f"{role} message has neither content nor tool calls",
            where=ctx.where(index),
            hint="Give it content, or remove it",
        )


_TOOL_CALLS = attrgetter("tool_calls")


def check_call_ids(messages: list[Message], notes: list[str]) -> None:
    """Two calls with one id are ambiguous while the first is unanswered: an error. Real agents
    (gpt-4o in tau-bench) reuse an id after its result came back; that is kept, with a note."""
    if not any(map(_TOOL_CALLS, messages)):  # no call, nothing to match (one C-level pass)
        return
    open_calls: dict[str, int] = {}
    used: dict[str, int] = {}
    for i, m in enumerate(messages):
        if m.role == "tool" and m.tool_call_id is not None:
            open_calls.pop(m.tool_call_id, None)
        for c in m.tool_calls:
            if c.id in open_calls:
                first = open_calls[c.id]
                where = "in the same message" if first == i else f"first in message {first}, still unanswered"
                raise DuplicateToolCallIdError(
                    f"tool-call id {shown(c.id)} is used twice ({where})",
                    where=f"message {i}",
                    hint="Each tool call needs its own id, or its results cannot be matched",
                )
            if c.id in used:
                notes.append(f"message {i}: tool-call id {shown(c.id)} reused after its earlier call "
                             f"(message {used[c.id]}) was answered")
            open_calls[c.id] = used[c.id] = i
