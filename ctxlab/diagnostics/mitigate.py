"""Apply a finding's mitigation and measure before and after: tokens, findings, facts kept.

Each kind goes through the engine's public API: ``strategy`` through
``ctxlab.strategies.apply_strategy``; ``tool_retrieval`` through ``ctxlab.retrieval.ToolIndex.select``
(top k by the hybrid score, no category expansion; a Chroma index in a temporary directory
unless one is passed); ``quarantine`` through ``split_into_subagents``;
``prune`` drops the named tool rounds whole and replaces a named text message (a false claim, a
summary) by a short placeholder, so the result stays a valid conversation.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any, Sequence

from ..conversation import Conversation, Message, ToolDef
from ..segments import segment
from .base import DiagnosticsError, Finding, Mitigation, diagnose

PRUNED = "[removed: contradicted or poisoned content]"


@dataclass(frozen=True)
class MitigationResult:
    """Before and after one mitigation. ``after`` is the conversation as it would be sent (None for
    a quarantine, whose result is ``subagents``); token counts include tool definitions; for a
    quarantine ``tokens_after`` is the largest sub-agent context and ``findings_after`` the
    sub-agents' findings, their message indexes mapped back to the original conversation."""

    mitigation: Mitigation
    after: Conversation | None
    tokens_before: int
    tokens_after: int
    findings_before: tuple[Finding, ...]
    findings_after: tuple[Finding, ...]
    facts_before: float | None
    facts_after: float | None
    tools_before: tuple[str, ...]
    tools_after: tuple[str, ...]
    subagents: tuple[Conversation, ...] = ()
    subagent_tokens: tuple[int, ...] = ()
    plan: Any = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (without the conversations)."""
        return {"mitigation": self.mitigation.to_dict(), "tokens_before": self.tokens_before,
                "tokens_after": self.tokens_after, "findings_before": [f.to_dict() for f in self.findings_before],
                "findings_after": [f.to_dict() for f in self.findings_after], "facts_before": self.facts_before,
                "facts_after": self.facts_after, "tools_before": list(self.tools_before),
                "tools_after": list(self.tools_after), "subagent_tokens": list(self.subagent_tokens)}


def facts_kept(original: Conversation, messages: Sequence[Message]) -> float | None:
    """Share of ``original.facts`` still present (message text or tool-call arguments)."""
    if not original.facts:
        return None
    texts = [m.text for m in messages] + [c.arguments for m in messages for c in m.tool_calls]
    return sum(any(f in t for t in texts) for f in original.facts) / len(original.facts)


def prune(conv: Conversation, indexes: Sequence[int]) -> Conversation:
    """``conv`` without the tool rounds of ``indexes`` (each dropped whole) and with the other named
    messages' text replaced by a placeholder. The first system prompt and the newest user message
    cannot be pruned."""
    messages = conv.messages
    seg = segment(messages)
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    drop: set[int] = set()
    blank: set[int] = set()
    for i in indexes:
        if not 0 <= i < len(messages):
            raise DiagnosticsError(f"message {i} does not exist", where="mitigation.messages",
                                   hint=f"The conversation has {len(messages)} messages")
        if (i == 0 and messages[0].role == "system") or (users and i == users[-1]):
            raise DiagnosticsError(f"message {i} is the system prompt or the newest user message",
                                   where="mitigation.messages", hint="Those always stay in the context")
        if messages[i].tool_calls or messages[i].role == "tool":
            drop.update(seg.group_members(i))
        else:
            blank.add(i)
    out = [m.with_content(PRUNED) if i in blank else m for i, m in enumerate(messages) if i not in drop]
    return conv.with_messages(out)


_SCRATCH: list[str] = []


def _scratch_dir() -> str:
    """A temporary Chroma directory for this process, removed at exit. (An in-memory Chroma client
    is one per process and refuses a second one with other settings, so a directory is safer.)"""
    if not _SCRATCH:
        import atexit
        import shutil
        import tempfile
        _SCRATCH.append(tempfile.mkdtemp(prefix="ctxlab-mitigation-"))
        atexit.register(shutil.rmtree, _SCRATCH[0], ignore_errors=True)
    return _SCRATCH[0]


def _scratch_index(tools: Sequence[ToolDef], provider: Any):
    from ..retrieval import ToolCatalog, ToolIndex
    digest = hashlib.sha1("\0".join(t.name + t.description for t in tools).encode()).hexdigest()[:10]
    catalog = ToolCatalog.from_tools(tools, name=f"mitigation-{digest}")
    index = ToolIndex(catalog, provider, path=_scratch_dir(), rebuild=True)
    index.build()
    return index


def apply_mitigation(conv: Conversation, mitigation: Mitigation, *, model: str | None = None,
                     context_limit: int | None = None, tools: Sequence[ToolDef] | None = None,
                     query: str | None = None, provider: Any = "local", index: Any = None) -> MitigationResult:
    """Apply ``mitigation`` to ``conv`` and diagnose before and after (same tools, query, model and
    provider). ``index`` is a built ``ToolIndex`` for tool retrieval (else one is built in a
    temporary directory; the page should pass its own to reuse the embeddings)."""
    from ..tokens import count_tokens
    from .quarantine import quarantine_report
    model = model or conv.model or "gpt-4o"
    catalog = tuple(tools) if tools is not None else conv.tools
    base = replace(conv, tools=catalog)
    kw = dict(query=query, model=model, provider=provider)
    before = tuple(diagnose(base, **kw))
    tokens_before = count_tokens(base, model).total
    names = tuple(t.name for t in catalog)
    common = dict(mitigation=mitigation, tokens_before=tokens_before, findings_before=before,
                  facts_before=facts_kept(conv, conv.messages), tools_before=names)
    if mitigation.kind == "quarantine":
        report = quarantine_report(base, model)
        after: list[Finding] = []
        for part in report.subagents:
            source = part.metadata["subagent"]["source_messages"]
            after += [replace(f, messages=tuple(source[i] for i in f.messages)) for f in diagnose(part, **kw)]
        kept = [m for p in report.subagents for m in p.messages]
        return MitigationResult(after=None, tokens_after=report.largest, findings_after=tuple(after),
                                facts_after=facts_kept(conv, kept), tools_after=names, subagents=report.subagents,
                                subagent_tokens=report.subagent_tokens, **common)
    plan = None
    if mitigation.kind == "strategy":
        from ..strategies import apply_strategy
        plan = apply_strategy(base, mitigation.strategy or "", model=model, context_limit=context_limit,
                              **dict(mitigation.params))
        result = base.with_messages(plan.messages)
    elif mitigation.kind == "prune":
        result = prune(base, mitigation.messages)
    else:  # tool_retrieval
        if not catalog:
            raise DiagnosticsError("there are no tools to retrieve from", where="tools",
                                   hint="Pass a tool catalog (--tools CATALOG)")
        index = index or _scratch_index(catalog, provider)
        result = replace(base, tools=loadout(index, conv, catalog, before, mitigation.k or 5, query, model))
    return MitigationResult(after=result, tokens_after=count_tokens(result, model).total,
                            findings_after=tuple(diagnose(result, **kw)),
                            facts_after=facts_kept(conv, result.messages),
                            tools_after=tuple(t.name for t in result.tools), plan=plan, **common)


def loadout(index: Any, conv: Conversation, catalog: Sequence[ToolDef], findings: Sequence[Finding], k: int,
            query: str | None, model: str) -> tuple[ToolDef, ...]:
    """The ``k`` tools a loadout sends: the best-ranked for the query (no threshold, no category
    expansion: ``k`` tools, as the mitigation's label says), taking only the best-ranked tool of
    each look-alike cluster the diagnosis found (``overlapping_tools``), so neither the noise nor
    the look-alikes reach the model."""
    from ..retrieval import conversation_query
    # a query passed in is ranked as given; the conversation's own is read like select() reads a
    # turn: a short follow-up with the earlier user messages folded in
    text, earlier = (query, ()) if query is not None else conversation_query(conv)
    ranking = index.select(text, context=earlier, top_k=len(catalog), threshold=None,
                           expand_categories=False, model=model, no_match="off").tool_defs
    cluster = {name: f.tools for f in findings if f.code == "overlapping_tools" for name in f.tools}
    sent: list[ToolDef] = []
    names: set[str] = set()
    for tool in ranking:
        if any(other in names for other in cluster.get(tool.name, ())):
            continue  # a look-alike of a tool already sent
        sent.append(tool)
        names.add(tool.name)
        if len(sent) == k:
            break
    return tuple(sent)
