"""Token counts as OpenAI bills them, per message and per category, cached by content.

The framing follows the numbers the OpenAI API itself reported in OpenAI's cookbook notebook
"How to count tokens with tiktoken" (reproduced by the tests):

* every message costs ``tokens_per_message`` (3; 4 on gpt-3.5-turbo-0301) plus the tokens of its
  role and content, plus ``tokens_per_name`` and the name's tokens when it has a ``name``;
* every request adds 3 tokens that prime the reply;
* tool definitions cost, per function, ``func_init`` (7 on o200k models, 10 on cl100k ones) plus
  ``name:description`` (one trailing period dropped), then ``prop_init`` once and, per property,
  ``prop_key`` plus ``name:type:description``, with ``enum_init`` and ``enum_item`` + item per enum
  value; ``func_end`` (12) once after all functions.

OpenAI publishes no rule for tool calls and tool results inside messages, nor for nested
parameter schemas; ctxlab extends the same framing to them and says so in ``approximations``.
Texts are counted once per encoding and remembered, so a recount after one edit only encodes
the edited text.

Models with a chat template (DeepSeek, Qwen; ``ModelSpec.template``) are counted differently:
the request is rendered as the model reads it (``ctxlab.chat_templates``) and the rendered text is
counted with the model's own tokenizer, so the total is the tokenizer's count of the prompt. Each
message gets the tokens of its own stretch of the prompt (a stretch that joins the next one inside
ordinary text is counted with it, and the difference goes to the larger of the two). A message
counted alone (``message``) is rendered as if nothing came before or after it, which can differ
from its place in a request by a few framing tokens (a tool result's enclosing block).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from ._bpe_count import count_text, count_texts
from ._encodings import get_encoding
from .chat_templates import group_pieces, render
from .conversation import FIXED_TOKENS, TEXT_ACTION, Conversation, Message, Part, ToolDef
from .model_specs import ModelSpec, resolve_model

CATEGORIES = ("system", "tool_definitions", "user", "assistant_text", "tool_calls", "tool_results",
              "reply_priming")
TOOL_CALL_FRAMING = 3
IMAGE_TOKENS_LOW = 85
IMAGE_TOKENS_DEFAULT = 765  # a 1024x1024 image at detail "high": 4 tiles x 170 + 85
_CACHE_LIMIT = 500_000
_CACHE_CHAR_LIMIT = 64_000_000  # characters of text kept alive as keys, at most (a 50 MB file fits)


class _Counts(dict):
    """text -> tokens for one encoding; knows how many characters its keys hold, so a cache
    never keeps more than ``_CACHE_CHAR_LIMIT`` of text alive after its conversation is gone."""

    chars = 0


_CACHES: dict[str, _Counts] = {}

NOTE_CALLS = ("tool calls: OpenAI publishes no rule; counted as the function name and arguments text "
              f"plus {TOOL_CALL_FRAMING} per call")
NOTE_RESULTS = "tool results: counted as a message (framing, role, content); the call id is not counted"
NOTE_IMAGES = (f"images: estimated at {IMAGE_TOKENS_LOW} tokens (detail low) or {IMAGE_TOKENS_DEFAULT} "
               "(other detail, size unknown)")
NOTE_NESTED = "nested parameter schemas: counted with the flat-property rule applied at each level"
TEXT_PARTS = ("text", "refusal", "thinking")
"""Content-part kinds counted as their text; ``image`` is estimated; any other kind (audio, files,
blocks a reader kept as it found them) is counted as the tokens of its JSON text and listed."""


@dataclass(frozen=True)
class TokenCount:
    """The count of one request: per message (framing included), tool definitions, total."""

    model: str
    encoding: str
    exact: bool
    message_tokens: tuple[int, ...]
    message_categories: tuple[str, ...]
    tools_tokens: int
    tool_tokens: Mapping[str, int]
    reply_priming: int
    total: int
    by_category: Mapping[str, int]
    approximations: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the CLI's ``count`` output)."""
        return {
            "model": self.model, "encoding": self.encoding, "exact": self.exact,
            "messages": len(self.message_tokens), "message_tokens": list(self.message_tokens),
            "tools_tokens": self.tools_tokens, "tool_tokens": dict(self.tool_tokens),
            "reply_priming": self.reply_priming, "total_tokens": self.total,
            "by_category": dict(self.by_category), "approximations": list(self.approximations),
        }


def _strip_period(text: str) -> str:
    return text[:-1] if text.endswith(".") else text


@dataclass
class TokenCounter:
    """Counts texts, messages, tools and whole requests for one model.

    >>> TokenCounter("gpt-4o").text("tiktoken is great!")
    6
    """

    model: str | None = None
    spec: ModelSpec = field(init=False)

    def __post_init__(self) -> None:
        self.spec = resolve_model(self.model)
        self.model = self.model or self.spec.name
        self._enc = get_encoding(self.spec.encoding)
        self._cache = _CACHES.setdefault(self.spec.encoding, _Counts())

    @property
    def encoding(self) -> str:
        """The tiktoken encoding name."""
        return self.spec.encoding

    def text(self, text: str) -> int:
        """Tokens of a plain text (special-token text counts as ordinary text, as the API does)."""
        n = self._cache.get(text)
        if n is None:
            n = count_text(self._enc, text)
            self._remember(text, n)
        return n

    def _remember(self, text: str, n: int) -> None:
        cache = self._cache
        if len(cache) >= _CACHE_LIMIT or cache.chars + len(text) > _CACHE_CHAR_LIMIT:
            cache.clear()
            cache.chars = 0
        cache[text] = n
        cache.chars += len(text)

    def prime(self, texts: Iterable[str]) -> int:
        """Count every uncached text at once (serially when they are few and small, else on
        threads; see ``ctxlab._bpe_count``); returns how many were counted."""
        todo = list({t: None for t in texts if t not in self._cache})
        if todo:
            for t, n in zip(todo, count_texts(self._enc, todo)):
                self._remember(t, n)
        return len(todo)

    def _content(self, m: Message, notes: set[str]) -> int:
        if isinstance(m.content, str):
            return self.text(m.content)
        n = 0
        for p in m.content:
            if p.type == "image":
                notes.add(NOTE_IMAGES)
                n += IMAGE_TOKENS_LOW if p.data.get("detail") == "low" else IMAGE_TOKENS_DEFAULT
            elif p.type in TEXT_PARTS:
                n += self.text(p.text) if p.text else 0
            else:
                n += self.text(part_json(p))
        return n

    def message_split(self, m: Message, notes: set[str] | None = None) -> tuple[str, int, int]:
        """(category, tokens of the message itself, tokens of its tool calls)."""
        notes = set() if notes is None else notes
        s = self.spec
        if m.extra:
            fixed = m.extra.get(FIXED_TOKENS)
            if isinstance(fixed, int):  # the unlogged part of a prompt: its size is given (ctxlab.prefix)
                return _category(m), fixed, 0
            m = as_sent(m)
        if s.template:
            pieces = render(s.template, [m], (), s.thinking, notes)
            return _category(m), sum(self.text(p.text) for p in pieces if p.kind == "message"), 0
        n = s.tokens_per_message + self.text(m.role) + self._content(m, notes)
        if m.name is not None and m.role != "tool":
            n += s.tokens_per_name + self.text(m.name)
        calls = 0
        for c in m.tool_calls:
            calls += TOOL_CALL_FRAMING + self.text(c.name) + self.text(c.arguments)
        if m.tool_calls:
            notes.add(NOTE_CALLS)
        if m.role == "tool":
            notes.add(NOTE_RESULTS)
            return "tool_results", n, 0
        if m.role == "assistant":
            return ("assistant_text" if m.text else "tool_calls"), n, calls
        return m.role, n, 0

    def message(self, m: Message) -> int:
        """Tokens one message adds to a request, framing included."""
        _, n, calls = self.message_split(m)
        return n + calls

    def tool(self, t: ToolDef, notes: set[str] | None = None, index: int | None = None) -> int:
        """Tokens one tool definition adds (without the per-request ``func_end``).

        A schema the API would refuse (``parameters`` or ``properties`` that is not an object)
        is counted as its JSON text and noted in ``notes`` with its path; ``index`` is the tool's
        place in the list, for that path."""
        f = self.spec.tools
        notes = notes if notes is not None else set()
        if self.spec.template:
            return self.text("\n" + _json_text_spaced(_schema_of(t)))
        where = f"tools[{index}] ({t.name!r})" if index is not None else f"tool {t.name!r}"
        n = f.func_init + self.text(f"{t.name}:{_strip_period(t.description)}")
        if not isinstance(t.parameters, Mapping):
            notes.add(_note_odd_schema(where, "parameters", t.parameters))
            return n + f.prop_init + self.text(_json_text(t.parameters))
        props = t.parameters.get("properties")
        if props:
            n += f.prop_init + self._properties(props, notes, 0, where, "parameters.properties")
        return n

    def _properties(self, props: Any, notes: set[str], depth: int, where: str, path: str) -> int:
        if not isinstance(props, Mapping):
            notes.add(_note_odd_schema(where, path, props))
            return self.text(_json_text(props))
        f = self.spec.tools
        n = 0
        for key, schema in props.items():
            n += f.prop_key
            if not isinstance(schema, Mapping):
                notes.add(_note_odd_schema(where, f"{path}.{key}", schema))
                n += self.text(f"{key}:{_json_text(schema)}")
                continue
            if isinstance(schema.get("enum"), list):
                n += f.enum_init + sum(f.enum_item + self.text(str(v)) for v in schema["enum"])
            ptype = schema.get("type", "")
            ptype = "|".join(map(str, ptype)) if isinstance(ptype, list) else str(ptype)
            n += self.text(f"{key}:{ptype}:{_strip_period(str(schema.get('description', '')))}")
            nested, sub = schema.get("properties"), f"{path}.{key}.properties"
            items = schema.get("items")
            if not nested and isinstance(items, Mapping):
                nested, sub = items.get("properties"), f"{path}.{key}.items.properties"
            if nested and depth < 8:
                notes.add(NOTE_NESTED)
                n += f.prop_init + self._properties(nested, notes, depth + 1, where, sub)
        return n

    def tools(self, tools: Sequence[ToolDef], notes: set[str] | None = None) -> int:
        """Tokens of a tool list as sent with one request (``func_end`` once when non-empty)."""
        if not tools:
            return 0
        if self.spec.template:
            pieces = render(self.spec.template, [], tools, self.spec.thinking, notes)
            return sum(self.text(p.text) for p in pieces if p.kind == "tools")
        return sum(self.tool(t, notes, i) for i, t in enumerate(tools)) + self.spec.tools.func_end

    def count(self, conv: Conversation | Sequence[Message], tools: Sequence[ToolDef] | None = None) -> TokenCount:
        """Count a whole request: every message, the tools, the reply priming."""
        messages = conv.messages if isinstance(conv, Conversation) else tuple(conv)
        if tools is None:
            tools = conv.tools if isinstance(conv, Conversation) else ()
        if self.spec.template:
            return self._count_rendered(messages, tools)
        notes: set[str] = set()
        if self.spec.provider == "Anthropic":
            messages = _without_old_thinking(messages, notes)
        self.prime(_texts(messages))
        by_cat = dict.fromkeys(CATEGORIES, 0)
        per_msg, cats = [], []
        other_parts: dict[str, list[int]] = {}
        for i, m in enumerate(messages):
            cat, n, calls = self.message_split(m, notes)
            by_cat[cat] += n
            by_cat["tool_calls"] += calls
            per_msg.append(n + calls)
            cats.append(cat)
            if not isinstance(m.content, str):
                for p in m.content:
                    if p.type not in TEXT_PARTS and p.type != "image":
                        other_parts.setdefault(p.type, []).append(i)
        notes.update(_note_other_parts(kind, where) for kind, where in other_parts.items())
        tool_each: dict[str, int] = {}
        tools_total = self.spec.tools.func_end if tools else 0
        for i, t in enumerate(tools):
            n = self.tool(t, notes, i)
            tool_each[t.name] = tool_each.get(t.name, 0) + n  # a repeated name is still sent twice
            tools_total += n
        by_cat["tool_definitions"] = tools_total
        by_cat["reply_priming"] = self.spec.reply_priming
        if not self.spec.exact:
            notes.add(self.spec.note)
        total = sum(per_msg) + tools_total + self.spec.reply_priming
        return TokenCount(self.model, self.encoding, self.spec.exact and not notes, tuple(per_msg), tuple(cats),
                          tools_total, tool_each, self.spec.reply_priming, total, by_cat, tuple(sorted(notes)))


    def _count_rendered(self, messages: Sequence[Message], tools: Sequence[ToolDef]) -> TokenCount:
        """Count a request of a template model: render it, count each run of pieces."""
        s, notes = self.spec, set()
        messages = [as_sent(m) for m in messages]
        pieces = render(s.template, messages, tools, s.thinking, notes)
        runs = group_pieces(pieces, self._enc.specials)
        self.prime([p.text for p in pieces] + ["".join(p.text for p in r) for r in runs if len(r) > 1])
        per_msg, tools_total, priming = [0] * len(messages), 0, 0
        for run in runs:
            counts = [self.text(p.text) for p in run]
            if len(run) > 1:
                whole = self.text("".join(p.text for p in run))
                counts[counts.index(max(counts))] += whole - sum(counts)
            for p, n in zip(run, counts):
                if p.kind == "message":
                    per_msg[p.index] += n
                elif p.kind == "tools":
                    tools_total += n
                else:
                    priming += n
        by_cat = dict.fromkeys(CATEGORIES, 0)
        cats = tuple(_category(m) for m in messages)
        for c, n in zip(cats, per_msg):
            by_cat[c] += n
        by_cat["tool_definitions"], by_cat["reply_priming"] = tools_total, priming
        tool_each: dict[str, int] = {}
        for t in tools:
            tool_each[t.name] = tool_each.get(t.name, 0) + self.tool(t)
        if not s.exact:
            notes.add(s.note)
        for i, m in enumerate(messages):
            if m.extra and isinstance(m.extra.get(FIXED_TOKENS), int):
                per_msg[i] = m.extra[FIXED_TOKENS]
        total = sum(per_msg) + tools_total + priming
        return TokenCount(self.model, self.encoding, s.exact and not notes, tuple(per_msg), cats, tools_total,
                          tool_each, priming, total, by_cat, tuple(sorted(notes)))


def as_sent(m: Message) -> Message:
    """The message as the model received it: an assistant message whose tool calls stand for an
    action the model wrote as text (``TEXT_ACTION``) without those calls (its text holds the action)."""
    if m.extra and m.extra.get(TEXT_ACTION) and m.tool_calls:
        return Message(m.role, m.content, m.name, (), m.tool_call_id, m.is_error, m.id, m.extra, m.usage)
    return m


NOTE_OLD_THINKING = ("thinking blocks of turns before the newest user message: not counted (Anthropic "
                     "strips them from the context)")


def _without_old_thinking(messages: Sequence[Message], notes: set[str]) -> Sequence[Message]:
    """Messages with the thinking blocks of earlier turns left out, as Anthropic's API does."""
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    out = list(messages)
    for i in range(last_user):
        m = out[i]
        if m.role == "assistant" and not isinstance(m.content, str) \
                and any(p.type in ("thinking", "redacted_thinking") for p in m.content):
            out[i] = m.with_content(tuple(p for p in m.content if p.type not in ("thinking", "redacted_thinking")))
            notes.add(NOTE_OLD_THINKING)
    return out


def _category(m: Message) -> str:
    if m.role == "tool":
        return "tool_results"
    if m.role == "assistant":
        return "assistant_text" if m.text else "tool_calls"
    return m.role


def _schema_of(t: ToolDef) -> dict:
    return {"name": t.name, "description": t.description, "parameters": t.parameters}


def _json_text_spaced(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def part_json(p: Part) -> str:
    """The JSON text a content part of a kind with no counting rule is counted as."""
    return p.raw_json()


def _kind_of(value: Any) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
            type(None): "null"}.get(type(value), type(value).__name__)


def _note_odd_schema(where: str, path: str, value: Any) -> str:
    return (f"{where}: {path} is {_kind_of(value)}, not an object (the API would refuse this schema); "
            "counted as its JSON text")


def _note_other_parts(kind: str, indices: list[int]) -> str:
    shown = ", ".join(map(str, indices[:5])) + (f" and {len(indices) - 5} more" if len(indices) > 5 else "")
    return (f"content blocks of type {kind!r} (message {shown}): no published rule; "
            "counted as the tokens of their JSON text")


def _texts(messages: Sequence[Message]) -> Iterable[str]:
    for m in messages:
        if isinstance(m.content, str):
            yield m.content
        else:
            for p in m.content:
                if p.type in TEXT_PARTS:
                    if p.text:
                        yield p.text
                elif p.type != "image":
                    yield part_json(p)
        for c in m.tool_calls:
            yield c.arguments


def count_tokens(conv: Conversation | Sequence[Message], model: str | None = None,
                 tools: Sequence[ToolDef] | None = None) -> TokenCount:
    """Count a conversation for ``model`` (default: the conversation's model, else gpt-4o)."""
    if model is None and isinstance(conv, Conversation):
        model = conv.model
    return TokenCounter(model).count(conv, tools)


__all__ = ["CATEGORIES", "IMAGE_TOKENS_DEFAULT", "IMAGE_TOKENS_LOW", "NOTE_CALLS", "NOTE_IMAGES",
           "NOTE_NESTED", "NOTE_OLD_THINKING", "NOTE_RESULTS", "TEXT_PARTS", "TOOL_CALL_FRAMING", "as_sent",
           "count_tokens", "part_json", "TokenCount", "TokenCounter"]
