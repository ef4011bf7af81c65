"""Claude Code sub-agents: a Task (Agent) tool call runs a sub-agent with its own context.

Its conversation is logged in one of three places: in its own file (``subagents/agent-<id>.jsonl``,
every line ``isSidechain: true``), inline in the main session as sidechain lines (older versions),
or inside the main session's ``progress`` lines (``data.type == "agent_progress"``, the
sub-agent's records in ``data.message``). The result the parent got back is the Task call's
``tool_result``, whose line names the sub-agent (``agentId``, or ``toolUseResult.agentId``).

``agent_records`` groups a session's records by sub-agent; ``subagent_text`` gives one sub-agent's
records as a JSONL text of its own (read like a sub-agent's own file); ``returned_agent`` names the
sub-agent whose result a user line carries.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import CtxlabError, ShapeError, shown

_MESSAGES = ("user", "assistant")


@dataclass(frozen=True)
class SubAgent:
    """One sub-agent of a session: its id, the task it was given (its first prompt), and its records."""

    id: str
    prompt: str
    records: tuple[dict, ...]

    @property
    def responses(self) -> int:
        """Model responses (distinct assistant message ids) the sub-agent logged."""
        ids = {_text(r.get("message"), "id") for r in self.records if r.get("type") == "assistant"}
        return len(ids - {""})


def _text(d: Any, key: str) -> str:
    """``d[key]`` when ``d`` is a dict and it is a string, else "" (a hostile file's ids can be anything)."""
    value = d.get(key) if isinstance(d, dict) else None
    return value if isinstance(value, str) else ""


def returned_agent(rec: dict) -> str | None:
    """The sub-agent whose result a main-chain user line carries (None for any other line)."""
    result = rec.get("toolUseResult")
    agent = result.get("agentId") if isinstance(result, dict) else None
    agent = agent if isinstance(agent, str) else rec.get("agentId")
    return agent if isinstance(agent, str) and agent and not rec.get("isSidechain") else None


def _progress_record(rec: dict) -> dict | None:
    """A sub-agent's record carried in a main session's ``agent_progress`` line, as a sidechain line."""
    data = rec.get("data")
    if not (isinstance(data, dict) and data.get("type") == "agent_progress" and isinstance(data.get("agentId"), str)):
        return None
    inner = data.get("message")
    if not (isinstance(inner, dict) and inner.get("type") in _MESSAGES and isinstance(inner.get("message"), dict)):
        return None
    return {"type": inner["type"], "message": inner["message"], "uuid": _text(inner, "uuid") or None,
            "timestamp": inner.get("timestamp"), "sessionId": rec.get("sessionId"), "isSidechain": True,
            "agentId": data["agentId"]}


def _prompt(records: list[dict]) -> str:
    for r in records:
        if r.get("type") == "user":
            content = r["message"].get("content") if isinstance(r.get("message"), dict) else None
            text = content if isinstance(content, str) else " ".join(
                _text(b, "text") for b in (content if isinstance(content, list) else ()) if _text(b, "type") == "text")
            if text.strip():
                return " ".join(text.split())[:120]
    return ""


def agent_records(records: list[Any]) -> list[SubAgent]:
    """The sub-agents of a session's records, in order of first appearance. Inline sidechain lines
    join the sub-agent of their parent line (a line without ``agentId`` is joined through its
    ``parentUuid`` chain); progress lines carry their sub-agent's id. A record seen twice (the same
    ``uuid``) is kept once."""
    groups: dict[str, list[dict]] = {}
    root_of: dict[str, str] = {}  # uuid -> chain root uuid
    agent_of_root: dict[str, str] = {}
    chains: list[tuple[str, dict]] = []
    seen: set[Any] = set()
    for rec in records:
        if not isinstance(rec, dict):
            continue
        if rec.get("type") == "progress":
            inner = _progress_record(rec)
            if inner is not None and (inner["uuid"] is None or inner["uuid"] not in seen):
                seen.add(inner["uuid"])
                groups.setdefault(inner["agentId"], []).append(inner)
            continue
        if not rec.get("isSidechain") or rec.get("type") not in _MESSAGES:
            continue
        uid, parent = _text(rec, "uuid"), _text(rec, "parentUuid")
        root = root_of.get(parent) or uid or str(len(chains))
        if uid:
            root_of[uid] = root
        if isinstance(rec.get("agentId"), str):
            agent_of_root.setdefault(root, rec["agentId"])
        chains.append((root, rec))
    unnamed: dict[str, str] = {}
    for root, rec in chains:
        agent = agent_of_root.get(root) or unnamed.setdefault(root, f"sidechain-{len(unnamed) + 1}")
        groups.setdefault(agent, []).append(rec)
    return [SubAgent(a, _prompt(rs), tuple(rs)) for a, rs in groups.items()]


def subagent_text(records: list[Any], agent: str) -> str:
    """One sub-agent's records as a JSONL text of its own (every line a sidechain line): what
    reading gives for the sub-agent's own file. An unknown id is an error naming the known ones."""
    agents = agent_records(records)
    chosen = next((a for a in agents if a.id == agent), None)
    if chosen is None:
        known = ", ".join(a.id for a in agents) or "none"
        raise CtxlabError(f"no sub-agent {shown(agent, 40)} in this session", where="--agent",
                          hint=f"Sub-agents of this session: {known}")
    return "\n".join(json.dumps({**r, "isSidechain": True}, ensure_ascii=False) for r in chosen.records) + "\n"


def subagent_summary(conv: Any, model: str | None = None) -> list[dict]:
    """A main session's sub-agents (``metadata["subagents"]``) with the tokens each sent back:
    its Task result's message, counted for ``model`` (default the conversation's)."""
    from ..tokens import TokenCounter
    rows = conv.metadata.get("subagents") if isinstance(conv.metadata.get("subagents"), list) else []
    counter = TokenCounter(model or conv.model) if rows else None
    out = []
    for row in rows:
        at = row.get("returned_at")
        back = counter.message(conv.messages[at]) if isinstance(at, int) and 0 <= at < len(conv.messages) else None
        out.append({**row, "tokens_back": back})
    return out


def session_records(text: str | bytes) -> list[Any]:
    """The records of a Claude Code session text (one JSON object a line; blank lines skipped)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError as e:
                raise ShapeError(f"a sub-agent is read from a Claude Code session (one JSON object a line); line {n} "
                                 f"is not one ({e})", where=f"JSONL line {n}",
                                 hint="Give --agent with the session file as Claude Code wrote it") from None
    return out


__all__ = ["SubAgent", "agent_records", "returned_agent", "session_records", "subagent_summary", "subagent_text"]
