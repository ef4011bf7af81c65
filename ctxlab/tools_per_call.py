"""The tool definitions sent at each model call of a trace: all of them, a retrieval's pick per call,
or deferred loading.

* ``all``: every definition of the conversation at every call (what a replay assumed before).
* ``retrieval``: the ``top_k`` tools a BM25 index (``ctxlab.retrieval.LexicalIndex``) ranks first for
  that call's context (the text of the last ``context_messages`` messages before it); the list changes
  from call to call, and a changed list rewrites the start of the prompt, so the prompt cache breaks
  there (``ctxlab.cache_breaks`` cause ``tools``). A tool the call used that the pick left out is
  ``missing``: the model could not have called it.
* ``deferred``: Anthropic's tool search (``defer_loading``, 2025-11): the request carries a search
  tool; the definitions a search finds are added after what was already sent, so the prefix stays
  and the cache with it. Modelled here: a tool's definition is loaded at the first call that uses
  it (``found``) and sent from then on; the search call itself is not counted (a model).

``tools_per_call(conv, "retrieval", top_k=5)`` gives one ``ToolsAt`` per model call; pass it to
``ctxlab.replay.replay(..., tools=...)`` so the tool tokens join each call's prompt and budget.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from .conversation import Conversation, Message, ToolDef
from .errors import CtxlabError
from .strategies.view import message_text
from .tokens import TokenCounter

TOOL_MODES = ("all", "retrieval", "deferred")
SEARCH_TOOL = ToolDef("tool_search", "Search the available tools by keywords; the definitions found are loaded for "
                      "the calls that follow.",
                      {"type": "object", "properties": {"query": {"type": "string", "description": "What the tool "
                                                                  "should do, in a few keywords."}},
                       "required": ["query"]})
"""The search tool a deferred request carries (shaped like Anthropic's BM25 tool search tool)."""


@dataclass(frozen=True, slots=True)
class ToolsAt:
    """The tools sent at model call ``call``: their names, their tokens as one request's list
    (``tokens``), the tokens of that list the previous call's prompt already had in the same place
    (``prefix_tokens``), ``changed`` when the list differs from the previous call's other than by
    additions at its end, ``found`` (deferred: definitions loaded at this call) and ``missing``
    (tools this call used that were not sent)."""

    call: int
    names: tuple[str, ...]
    tokens: int
    prefix_tokens: int
    changed: bool = False
    found: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"tools": list(self.names), "tools_tokens": self.tokens, "tools_changed": self.changed,
                **({"tools_found": list(self.found)} if self.found else {}),
                **({"tools_missing": list(self.missing)} if self.missing else {})}


def _query(messages: Sequence[Message], point: int, context_messages: int) -> str:
    """The retrieval query of the call at ``point``: the last messages before it."""
    return "\n".join(message_text(m) for m in messages[max(point - context_messages, 0):point])


def _retrieval(tools: Sequence[ToolDef], top_k: int) -> Any:
    from .retrieval.catalog import embedding_text
    from .retrieval.lexical import LexicalIndex
    index = LexicalIndex([t.name for t in tools], [embedding_text(t) for t in tools])
    return lambda query: tuple(index.scores(query, top=top_k))


def _used(m: Message | None) -> tuple[str, ...]:
    return tuple(dict.fromkeys(c.name for c in m.tool_calls)) if m is not None else ()


def tools_per_call(conv: Conversation, mode: str, *, model: str | None = None, top_k: int = 5,
                   context_messages: int = 3) -> tuple[ToolsAt, ...]:
    """One ``ToolsAt`` per model call of ``conv`` (see the module docstring)."""
    from .replay import call_points
    if mode not in TOOL_MODES:
        raise CtxlabError(f"tools must be one of {', '.join(TOOL_MODES)}, got {mode!r}", where="tools",
                          hint="all: every definition; retrieval: a pick per call; deferred: a search tool")
    if not isinstance(top_k, int) or top_k < 1:
        raise CtxlabError(f"top_k must be a whole number of at least 1, got {top_k!r}", where="tools.top_k")
    counter = TokenCounter(model or conv.model)
    by_name = {t.name: t for t in conv.tools}
    pick = _retrieval(conv.tools, top_k) if mode == "retrieval" and conv.tools else None
    messages, out, sent = conv.messages, [], ()
    prev: tuple[str, ...] | None = None
    for c, point in enumerate(call_points(messages)):
        used = _used(messages[point] if point < len(messages) else None)
        found: tuple[str, ...] = ()
        if mode == "all":
            sent = tuple(by_name)
        elif mode == "retrieval":
            sent = pick(_query(messages, point, context_messages)) if pick else ()
        else:
            found = tuple(n for n in used if n in by_name and n not in sent)
            sent = (sent or (SEARCH_TOOL.name,)) + found
        out.append(_at(c, sent, prev, counter, by_name, found, used))
        prev = sent
    return tuple(out)


def _at(c: int, sent: tuple[str, ...], prev: tuple[str, ...] | None, counter: TokenCounter,
        by_name: dict[str, ToolDef], found: tuple[str, ...], used: tuple[str, ...]) -> ToolsAt:
    """The ToolsAt of one call: its tokens and what it shares with the previous call's list."""
    defs = [by_name.get(n, SEARCH_TOOL) for n in sent]
    tokens = counter.tools(defs)
    if prev is None:
        return ToolsAt(c, sent, tokens, 0, False, found, tuple(n for n in used if n in by_name and n not in sent))
    extends = sent[:len(prev)] == prev
    prefix = counter.tools([by_name.get(n, SEARCH_TOOL) for n in prev]) if extends else 0
    return ToolsAt(c, sent, tokens, min(prefix, tokens), not extends, found,
                   tuple(n for n in used if n in by_name and n not in sent))


__all__ = ["SEARCH_TOOL", "TOOL_MODES", "ToolsAt", "tools_per_call"]
