"""The conversation model every format reads into and writes from.

Provider-neutral and close to OpenAI Chat Completions (the format most tools speak): a message
has a role (system, user, assistant, tool), content that is either a string or a tuple of
typed parts, and for assistants a tuple of tool calls. Tool-call arguments are kept as the
original text so that token counts never drift through a re-serialization.

Objects are frozen: strategies read them, they never change them.
"""
from __future__ import annotations

import copyreg
import json
from dataclasses import MISSING, dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any, Iterator, Literal, Mapping

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _empty() -> Mapping[str, Any]:
    """The default of every mapping field: one shared, read-only empty mapping."""
    return _EMPTY


def _read_only(data: dict) -> Mapping[str, Any]:
    """A read-only mapping again, after pickling."""
    return MappingProxyType(data)


# read-only mappings (Message.extra, Part.data) travel to sweep worker processes as copies
copyreg.pickle(MappingProxyType, lambda m: (_read_only, (dict(m),)))
#: part types ctxlab models (counts, shows, converts between formats); any other type a reader
#: meets is kept whole in ``Part.data`` and written back as it came (see ``Part.modeled``)
MODELED_PART_TYPES = frozenset({"text", "image", "thinking", "redacted_thinking", "refusal"})


#: Message.extra marks a trace reader sets on what it read (formats/_trace.py re-exports them):
#: an assistant message whose tool calls stand for an action the model wrote as text (the text
#: holds it: the calls add no tokens to a count, as the model never received them as calls)
TEXT_ACTION = "ctxlab_text_action"
#: a user-role message the agent's harness wrote (a format error, a step-limit warning), not the
#: person: it starts no user turn
HARNESS = "ctxlab_harness"
#: the last message of a run that ended (a submission, an exit): no model call follows it
FINAL = "ctxlab_final"
#: a message whose tokens are given, not counted (the part of the prompt a trace does not log,
#: inferred from the bill: see ``ctxlab.prefix``)
FIXED_TOKENS = "ctxlab_tokens"
#: the unlogged prefix's segment: how its size was found (``ctxlab.prefix.Prefix.to_dict``)
UNLOGGED = "ctxlab_unlogged"


def starts_turn(m: "Message") -> bool:
    """Whether a message opens a user turn: a user message the person sent (not the harness's)."""
    return m.role == "user" and not (m.extra and m.extra.get(HARNESS))


@dataclass(frozen=True, slots=True)
class Part:
    """One piece of multi-part content.

    ``type`` is ``text``, ``image``, ``thinking``, ``redacted_thinking``, ``audio``, ``file`` or
    any other provider block type. ``text`` holds the text of text and thinking parts; ``data``
    holds everything else the provider sent (image URL or source, thinking signature, ...).
    """

    type: str
    text: str = ""
    data: Mapping[str, Any] = field(default_factory=_empty)

    @property
    def modeled(self) -> bool:
        """Whether ctxlab models this part type; an unmodeled part (an unknown block type, an
        audio part...) is kept as sent, and a counter can only estimate it from its JSON."""
        return self.type in MODELED_PART_TYPES

    def raw_json(self) -> str:
        """The part as compact JSON, the way a provider would receive it (``type`` first):
        what a counter measures for a part it does not model."""
        return compact_json({"type": self.type, **({"text": self.text} if self.text else {}), **self.data})


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call an assistant asks for. ``arguments`` is the exact JSON text, as received."""

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> Any:
        """The arguments as Python data (they were checked to be valid JSON on import)."""
        return json.loads(self.arguments) if self.arguments.strip() else {}


@dataclass(frozen=True, slots=True)
class Usage:
    """The usage a provider reported for one model call (a production trace's billed figures).

    ``prompt_tokens`` is the whole prompt as billed, cached tokens included (OpenAI's
    ``prompt_tokens``, OpenTelemetry's ``gen_ai.usage.input_tokens``; for Anthropic, input +
    cache read + cache write). ``cached_tokens`` were read from the provider's prompt cache,
    ``cache_write_tokens`` written to it (Anthropic's ``cache_creation_input_tokens``); either is
    None when the trace does not say. ``model`` is the model that billed the call, when known.
    """

    prompt_tokens: int
    output_tokens: int | None = None
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    model: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (fields that are None left out)."""
        return {k: getattr(self, k) for k in self.__slots__ if getattr(self, k) is not None}


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message.

    ``tool_call_id`` links a ``tool`` message to the call it answers; ``is_error`` marks a tool
    result the tool reported as failed (Anthropic ``is_error``, LangChain ``status="error"``).
    ``extra`` keeps provider fields ctxlab does not model (e.g. ``refusal``), so export can
    write them back where the target format allows. ``usage`` is what the provider reported for
    the call that produced this (assistant) message, when a trace carries it; it is never sent
    to a model and never counted.
    """

    role: Role
    content: str | tuple[Part, ...] = ""
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False
    id: str | None = None
    extra: Mapping[str, Any] = field(default_factory=_empty)
    usage: Usage | None = None

    @property
    def text(self) -> str:
        """The visible text: the string content, or the text parts joined by newlines."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.text for p in self.content if p.type == "text")

    @property
    def parts(self) -> tuple[Part, ...]:
        """The content as parts (a string content is one text part, or none when empty)."""
        if isinstance(self.content, str):
            return (Part("text", self.content),) if self.content else ()
        return self.content

    def with_content(self, content: str | tuple[Part, ...]) -> "Message":
        """A copy with other content (used for cleared or truncated tool results)."""
        return Message(self.role, content, self.name, self.tool_calls, self.tool_call_id, self.is_error, self.id,
                       self.extra, self.usage)


def _slot_init(cls: type) -> None:
    """Give a frozen slots dataclass a faster ``__init__`` with the same signature: each field is
    stored through its slot's descriptor, and the shared empty mapping is a plain default, not a
    factory call. The dataclass's own frozen ``__init__`` calls ``object.__setattr__`` once per
    field, which made building ``Message`` objects a third of reading a file of half a million
    short messages. Instances stay as frozen as before: only ``__init__`` writes the slots."""
    ns: dict[str, Any] = {"_NO": object()}
    params, body, kw_only = [], [], False
    for f in fields(cls):
        ns[f"_set_{f.name}"] = cls.__dict__[f.name].__set__
        if f.kw_only and not kw_only:
            params.append("*")
            kw_only = True
        if f.default is not MISSING:
            ns[f"_d_{f.name}"] = f.default
            params.append(f"{f.name}=_d_{f.name}")
        elif f.default_factory is _empty:
            ns[f"_d_{f.name}"] = _EMPTY
            params.append(f"{f.name}=_d_{f.name}")
        elif f.default_factory is not MISSING:
            ns[f"_f_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_NO")
            body.append(f" if {f.name} is _NO: {f.name} = _f_{f.name}()")
        else:
            params.append(f.name)
        body.append(f" _set_{f.name}(self, {f.name})")
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body), ns)  # noqa: S102 (names from fields())
    init = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = dict(cls.__init__.__annotations__)
    cls.__init__ = init  # type: ignore[misc]


for _cls in (Part, ToolCall, Message):
    _slot_init(_cls)


@dataclass(frozen=True, slots=True)
class ToolDef:
    """A tool definition: name, description, JSON-schema parameters, optional category."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    category: str | None = None
    extra: Mapping[str, Any] = field(default_factory=_empty)


@dataclass(frozen=True)
class Conversation:
    """Messages plus the tools offered with them, the model, and what the source said.

    ``format`` names the format the conversation was read from; ``facts`` lists strings a good
    context must keep (sample data carries them); ``metadata`` keeps other top-level keys;
    ``notes`` records what import had to interpret (e.g. ids made up for legacy
    ``function_call`` messages), so nothing is changed silently.
    """

    messages: tuple[Message, ...]
    tools: tuple[ToolDef, ...] = ()
    model: str | None = None
    format: str = "openai"
    facts: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=_empty)
    notes: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.messages)

    def with_messages(self, messages: tuple[Message, ...] | list[Message]) -> "Conversation":
        """A copy with other messages and everything else kept."""
        return replace(self, messages=tuple(messages))


def json_leaves(value: Any) -> Iterator[Any]:
    """Every scalar inside a parsed JSON value (tool-call arguments), depth first, in order."""
    if isinstance(value, dict):
        for v in value.values():
            yield from json_leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from json_leaves(v)
    else:
        yield value


def compact_json(value: Any) -> str:
    """JSON text without spaces, the way current OpenAI models write tool-call arguments."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


__all__ = ["FINAL", "FIXED_TOKENS", "HARNESS", "MODELED_PART_TYPES", "ROLES", "TEXT_ACTION", "UNLOGGED",
           "compact_json", "Conversation", "json_leaves", "Message", "Part", "starts_turn", "ToolCall",
           "ToolDef", "Usage"]
