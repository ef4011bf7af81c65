"""Claude Code session files (``~/.claude/projects/<dir>/<session>.jsonl``).

One line per record. ``user`` and ``assistant`` lines carry an Anthropic message in ``message``;
one API response is spread over several ``assistant`` lines that share ``message.id`` (one line
per content block), which reading joins back into one assistant message. Lines of other types
(``progress``, ``file-history-snapshot``, ``queue-operation``, ``summary`` titles, ``system``
events...) carry no message the model saw and are counted in a note. Sidechain lines belong to a
sub-agent's own conversation and are left out, with a note, unless every line is one (a sub-agent's
own file: read as its conversation); a main session lists its sub-agents in ``subagents`` (see
``claude_agents``) and marks each Task result with the sub-agent it came from. A ``/compact`` leaves a
``compact_boundary`` system line and a user message flagged ``isCompactSummary``: that message is
marked as a compaction summary. When the person rewinds (or edits a prompt), the new prompt is a
second child of the same parent line: the earlier branch is left out, with a note. The session
file logs no system prompt and no tool definitions. Each response's ``message.usage`` (the last
line's: the final output count) is kept as the assistant message's reported Usage.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from ..conversation import Usage

from ..errors import ShapeError, shown
from . import anthropic
from ._trace import Trace, trace_format, as_records, compaction, line_where, marked, sub_read
from .claude_agents import agent_records, returned_agent

#: Message.extra key of a Task result: the id of the sub-agent whose result it is
SUBAGENT = "ctxlab_subagent"

NAME = "claude_code"
_MESSAGE_TYPES = ("user", "assistant")
_KNOWN_TYPES = ("user", "assistant", "system", "summary", "progress", "file-history-snapshot", "queue-operation",
                "attachment", "custom-title", "ai-title", "last-prompt", "permission-mode", "mode", "worktree-state",
                "pr-link", "agent-name", "tag")


def _clean(blocks: Any) -> Any:
    """Content blocks without null fields (some exporters write ``"is_error": null``), and a tool
    result's nested blocks likewise."""
    if not isinstance(blocks, list):
        return blocks
    out = []
    for b in blocks:
        if isinstance(b, dict):
            b = {k: (_clean(v) if k == "content" else v) for k, v in b.items() if v is not None and k != "agentId"}
        out.append(b)
    return out


def detect_doc(doc: Any) -> bool:
    """A JSONL of records where user/assistant lines have a ``message`` and Claude Code's fields
    (``sessionId``, ``uuid`` or ``parentUuid``), at least as many as the lines that are broken."""
    records = doc if isinstance(doc, list) else [doc]
    good = bad = 0  # a broken line among good ones is still this format: the reader then names its line
    for r in records[:200]:
        if not isinstance(r, dict) or "type" not in r:
            bad += 1
        elif r["type"] in _MESSAGE_TYPES:
            if isinstance(r.get("message"), dict) and {"sessionId", "uuid", "parentUuid"} & r.keys():
                good += 1
            else:
                bad += 1
    return good > 0 and good >= bad


class _Reader:
    """Walks the records. Assistant lines are joined by ``message.id`` into the message where the
    id first appeared (a result line can come between two blocks of one response)."""

    def __init__(self, lines: tuple[int, ...] | None, own_sidechain: bool = False):
        self.lines = lines
        self.own_sidechain = own_sidechain  # a sub-agent's own file: its sidechain lines are the conversation
        self.returned: dict[int, str] = {}  # message index of a Task result -> the sub-agent it came from
        self.trace = Trace(meta={})
        self.entries: list[tuple[int, str, Any]] = []  # (record index, "assistant" | "user", payload)
        self.by_id: dict[str, dict] = {}
        self.skipped: Counter[str] = Counter()
        self.sidechain = 0
        self.usage: dict[str, dict] = {}
        self.model: dict[str, str] = {}

    def assistant(self, k: int, msg: dict) -> None:
        """Join the blocks of one response (same message.id)."""
        blocks = msg.get("content")
        if not isinstance(blocks, (str, list, type(None))):
            raise ShapeError(f"an assistant line's content must be text or a list of blocks, found "
                             f"{type(blocks).__name__}", where=f"{line_where(self.lines, k)}: $.message.content")
        blocks = [{"type": "text", "text": blocks}] if isinstance(blocks, str) else list(_clean(blocks) or [])
        mid = msg.get("id") if isinstance(msg.get("id"), str) else None
        if mid is not None and isinstance(msg.get("usage"), dict):
            self.usage[mid] = msg["usage"]  # every line of a response repeats it; the last has the final count
        if mid is not None and mid in self.by_id:
            self.by_id[mid]["content"].extend(blocks)
            return
        item = {"role": "assistant", "content": blocks, **({"id": mid} if mid else {})}
        if mid is not None:
            self.by_id[mid] = item
        self.entries.append((k, "assistant", item))
        if isinstance(msg.get("model"), str) and msg["model"] != "<synthetic>":
            self.trace.model = msg["model"]
            if mid is not None:
                self.model[mid] = msg["model"]

    def record(self, k: int, rec: Any) -> None:
        """One JSONL record."""
        if not isinstance(rec, dict):
            raise ShapeError(f"expected a record object, found {type(rec).__name__}", where=line_where(self.lines, k))
        kind = rec.get("type")
        if rec.get("isSidechain") and not self.own_sidechain:
            self.sidechain += 1
            return
        if kind == "system" and rec.get("subtype") == "compact_boundary":
            meta = rec.get("compactMetadata") if isinstance(rec.get("compactMetadata"), dict) else {}
            self.entries.append((k, "boundary", {"trigger": meta.get("trigger"), "pre_tokens": meta.get("preTokens")}))
            return
        if kind not in _MESSAGE_TYPES:
            self.skipped[f"{kind}" if kind in _KNOWN_TYPES else f"unknown type {shown(kind, 30)}"] += 1
            return
        msg = rec.get("message")
        if not isinstance(msg, dict):
            raise ShapeError(f"a {kind} line has no message object", where=f"{line_where(self.lines, k)}: $.message")
        for key in ("sessionId", "cwd", "gitBranch", "version"):
            if isinstance(rec.get(key), str) and rec[key]:
                self.trace.meta.setdefault(key, rec[key])
        if kind == "assistant":
            self.assistant(k, msg)
        elif msg.get("content") in (None, [], ""):
            self.skipped["user line with no content"] += 1
        else:
            self.entries.append((k, "user", (_clean(msg["content"]), bool(rec.get("isCompactSummary")),
                                             returned_agent(rec))))

    def user(self, k: int, content: Any, summary: bool, agent: str | None, boundary: dict | None) -> None:
        """A user line: the user's text, tool results (a sub-agent's result marked), or a compaction summary."""
        out = sub_read(anthropic.read, {"role": "user", "content": content}, self.trace, line_where(self.lines, k))
        if agent is not None:
            for i in range(len(self.trace.messages) - len(out), len(self.trace.messages)):
                if self.trace.messages[i].role == "tool":
                    self.trace.messages[i] = marked(self.trace.messages[i], SUBAGENT, agent)
                    self.returned.setdefault(i, agent)
        if not (summary and out):
            return
        i = len(self.trace.messages) - 1
        self.trace.messages[i] = compaction(self.trace.messages[i])
        info = {"message": i, **(boundary or {})}
        self.trace.meta.setdefault("compactions", []).append(info)
        how = f" ({info['trigger']})" if info.get("trigger") else ""
        self.trace.notes.append(f"message {i}: compaction summary{how}: the model saw it in place of every "
                                "message before it; those are kept here as history")

    def finish(self) -> Trace:
        """Read the entries in order and write the notes on what was left out."""
        boundary = None
        for k, kind, payload in self.entries:
            if kind == "boundary":
                boundary = payload
            elif kind == "assistant":
                out = sub_read(anthropic.read, payload, self.trace, line_where(self.lines, k))
                usage = anthropic_usage(self.usage.get(payload.get("id", "")), self.model.get(payload.get("id", "")))
                if out and usage is not None:
                    self.trace.messages[-1] = replace(self.trace.messages[-1], usage=usage)
            else:
                self.user(k, *payload, boundary)
                boundary = None if payload[1] else boundary
        t = self.trace
        if self.own_sidechain:
            t.notes.append("a sub-agent's own transcript (every line a sidechain line): read as its conversation")
        if self.sidechain:
            t.notes.append(f"{self.sidechain:,} sidechain line(s) left out: they are sub-agents' own conversations "
                           "(a sub-agent's context is not this session's; open one with --agent, or the sidebar's "
                           "sub-agent picker)")
        if self.skipped:
            kinds = ", ".join(f"{n:,} {kind}" for kind, n in self.skipped.most_common())
            t.notes.append(f"lines that carry no message the model saw were left out ({kinds})")
        t.notes.append("Claude Code logs no system prompt and no tool definitions: counts here leave out both")
        return t


def anthropic_usage(u: Any, model: str | None) -> Usage | None:
    """An Anthropic ``usage`` as the call's Usage: the billed prompt is ``input_tokens`` (what the
    cache did not serve) plus the cache reads and writes."""
    if not isinstance(u, dict) or not all(isinstance(u.get(k, 0), int) for k in
                                          ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")):
        return None
    if "input_tokens" not in u:
        return None
    read, write = u.get("cache_read_input_tokens") or 0, u.get("cache_creation_input_tokens") or 0
    out = u.get("output_tokens")
    return Usage(u["input_tokens"] + read + write, out if isinstance(out, int) else None, read, write, model)


def _is_prompt(rec: Any) -> bool:
    """A user line the person typed (not a tool result, not a compaction summary)."""
    if not isinstance(rec, dict) or rec.get("type") != "user" or rec.get("isCompactSummary") or rec.get("isSidechain"):
        return False
    content = rec.get("message", {}).get("content") if isinstance(rec.get("message"), dict) else None
    return isinstance(content, str) or (isinstance(content, list) and not any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content))


def abandoned(records: list[Any]) -> set[int]:
    """Indexes of records on abandoned branches: when the person rewinds (or edits a prompt), the
    new prompt is a second child of the same parent; the earlier prompt and everything that
    descends from it are no longer in the context."""
    children: dict[str, list[int]] = {}
    uid: dict[int, str] = {}
    for k, r in enumerate(records):
        if isinstance(r, dict) and isinstance(r.get("uuid"), str):
            uid[k] = r["uuid"]
            if isinstance(r.get("parentUuid"), str):
                children.setdefault(r["parentUuid"], []).append(k)
    gone: set[int] = set()
    for kids in children.values():
        prompts = [k for k in kids if _is_prompt(records[k])]
        stack = prompts[:-1]
        while stack:
            k = stack.pop()
            if k not in gone:
                gone.add(k)
                stack.extend(children.get(uid.get(k, ""), []))
    return gone


def _own_sidechain(records: list[Any]) -> bool:
    """Whether every message line is a sidechain line (a sub-agent's own file)."""
    lines = [r for r in records if isinstance(r, dict) and r.get("type") in _MESSAGE_TYPES]
    return bool(lines) and all(r.get("isSidechain") for r in lines)


def _list_subagents(trace: Trace, records: list[Any], returned: dict[int, str]) -> None:
    """The session's sub-agents in its metadata (``subagents``) and a note on each: its task, its
    responses, where its result came back to this conversation."""
    back = {agent: i for i, agent in sorted(returned.items(), reverse=True)}
    found = agent_records(records)
    rows = [{"id": a.id, "prompt": a.prompt, "records": len(a.records), "responses": a.responses,
             "returned_at": back.get(a.id)} for a in found]
    rows += [{"id": agent, "prompt": "", "records": 0, "responses": 0, "returned_at": i}
             for agent, i in back.items() if agent not in {a.id for a in found}]
    if not rows:
        return
    trace.meta["subagents"] = rows
    for r in rows:
        where = f"its result came back at message {r['returned_at']}" if r["returned_at"] is not None else \
            "no result came back in this file"
        logged = f"{r['responses']:,} response(s) logged here" if r["records"] else "its lines are in its own file"
        task = f" ({shown(r['prompt'], 60)})" if r["prompt"] else ""
        trace.notes.append(f"sub-agent {r['id']}{task}: {logged}; {where}")


def read_doc(doc: Any, lines: tuple[int, ...] | None) -> Trace:
    """Read a Claude Code session file (its records) into messages; records on abandoned
    branches (a rewind) are left out with a note. A sub-agent's own file (every message line a
    sidechain line) reads as its conversation; a main session lists its sub-agents."""
    records = as_records(doc, lines)
    gone = abandoned(records)
    own = _own_sidechain(records)
    reader = _Reader(lines, own)
    for k, rec in enumerate(records):
        if k not in gone:
            reader.record(k, rec)
    trace = reader.finish()
    if not own:
        _list_subagents(trace, records, reader.returned)
    if gone:
        trace.notes.append(f"{len(gone):,} line(s) on abandoned branches left out: the session was rewound (or a "
                           "prompt edited) and the model no longer saw them")
    return trace


TRACE = trace_format(NAME, "Claude Code session (JSONL)", detect_doc, read_doc)
FORMAT = TRACE.format
