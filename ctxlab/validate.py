"""Would a provider accept these messages? Findings, not exceptions.

``validate(messages, rules="openai")`` checks a message list (or a Conversation) against the rules
a provider's API enforces and returns a sorted list of ``Finding`` objects: an ``error`` is a
request the provider rejects, a ``warning`` is accepted but probably not what was meant. A
strategy's output is checked this way before it is shown or exported; ``is_valid`` says whether a
list of findings has no error.

Rules shared by both providers (tool calls and their results):

* ``empty_conversation``: there is no message to send.
* ``orphan_tool_result``: a tool message whose ``tool_call_id`` matches no call of the assistant
  message it follows (the nearest assistant message before it). OpenAI and Anthropic both want
  results right after the assistant message that made the calls.
* ``unanswered_tool_call``: a call with no result before the next non-tool message (or the end);
  reported at the assistant message, once per call.
* ``duplicate_tool_result``: a second result for the same call.
* ``result_not_adjacent``: a result for a call of the assistant message it follows, but after a
  user or system message that came in between.

Each tool message gets at most one of the last three (in that order of precedence).

Anthropic only (messages rendered as Anthropic's API sees them): system messages at the top become
the ``system`` parameter, a later one is ``system_not_at_start``; consecutive tool messages form one
user turn of ``tool_result`` blocks, and a user message right after them joins that turn; any other
two user turns in a row are ``consecutive_user_turns`` (a tool result after user text cannot join
it, since ``tool_result`` blocks must come first in a turn); two assistant turns in a row are
``consecutive_assistant_turns``; an assistant message first is ``first_turn_not_user`` (warning);
a user or assistant message with no content and no tool calls is ``empty_content``, except a final
assistant message. OpenAI only: an assistant message with no content and no tool calls is an
``empty_content`` warning (the API takes it; it adds nothing). A system message anywhere is fine.
Both: a content block of a type the provider does not accept (``{"type": "teleport"}``, kept as
sent when read) is ``unknown_block_type``, once per message (``ANTHROPIC_BLOCK_TYPES``,
``OPENAI_PART_TYPES``).

Reasoning, when thinking is on (``ctxlab.reasoning`` says what each provider requires):
``deepseek-thinking`` is OpenAI's rules plus ``missing_reasoning_content`` (an error at every
assistant message with tool calls that carries no reasoning; the API answers 400);
``anthropic-thinking`` is Anthropic's rules plus ``missing_thinking_block`` (an assistant message
with tool calls in the turn in progress that does not start with a thinking or redacted thinking
block) and ``unsigned_thinking_block`` (a thinking block there without the signature the API
checks). ``deepseek`` (thinking off) is OpenAI's rules.

Everything runs in one pass per rule set: linear in the number of messages and tool calls.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Literal, Sequence

from .errors import CtxlabError
from .i18n import T, role_text
from .conversation import Conversation, Message, ToolCall
from .findings import Finding, rule_finding

Severity = Literal["error", "warning"]


class UnknownRulesError(CtxlabError):
    """A rule set name that is not in ``RULES``."""


def _is_empty(m: Message) -> bool:
    """True when a message shows nothing: no part, or only blank text parts."""
    return all(p.type == "text" and not p.text.strip() for p in m.parts)


def _call_label(call: ToolCall) -> str:
    """How a call is named in a finding: tool name and id."""
    return f"{call.name} (id {call.id!r})"


class _ToolPairing:
    """The shared rules: every call answered right after it, every result answering a call."""

    def __init__(self, rules: str) -> None:
        self.rules = rules
        self.findings: list[Finding] = []
        self.last_assistant: int | None = None  # nearest assistant message so far
        self.calls: dict[str, ToolCall] = {}  # its calls by id
        self.block_open = False  # only tool messages since that assistant message
        self.interruption: int | None = None  # first non-tool message after it
        self.answered: set[tuple[int, str]] = set()  # (assistant index, call id)
        self.call_site: dict[str, int] = {}  # call id -> index of the latest assistant making it

    def add(self, code: str, index: int | None, message: str, severity: Severity = "error") -> None:
        """Record a finding."""
        self.findings.append(rule_finding(code, severity, index, message, self.rules))

    def close_block(self) -> None:
        """Report the calls of the open block that got no result, and close it."""
        if not self.block_open:
            return
        self.block_open = False
        k = self.last_assistant
        assert k is not None
        for call in self.calls.values():
            if (k, call.id) not in self.answered:
                self.add("unanswered_tool_call", k,
                         T("Message {k} (assistant) calls {call_label} but no tool message answers it "
                         "right after: add a tool message with tool_call_id {id!r} after message {k}, "
                         "or remove the call.", k=k, call_label=_call_label(call), id=call.id))

    def see(self, i: int, m: Message) -> None:
        """Take message ``i`` into account."""
        if m.role == "tool":
            self.see_result(i, m)
            return
        self.close_block()
        if m.role == "assistant":
            self.last_assistant = i
            self.calls = {c.id: c for c in m.tool_calls}
            self.block_open = bool(m.tool_calls)
            self.interruption = None
            for c in m.tool_calls:
                self.call_site[c.id] = i
        elif self.interruption is None:
            self.interruption = i

    def see_result(self, i: int, m: Message) -> None:
        """Check tool message ``i`` against the calls of the assistant message it follows."""
        cid = m.tool_call_id
        k = self.last_assistant
        if k is None or cid is None or cid not in self.calls:
            self.add("orphan_tool_result", i, self._orphan_text(i, cid))
        elif (k, cid) in self.answered:
            self.add("duplicate_tool_result", i,
                     T("Message {i} (tool) is a second result for call {cid!r} of message {k}: "
                     "drop one of the two results.", i=i, cid=cid, k=k))
        elif not self.block_open:
            self.answered.add((k, cid))
            self.add("result_not_adjacent", i,
                     T("Message {i} (tool) answers call {cid!r} of message {k}, but message "
                     "{interruption} comes in between: move the result right after message {k} "
                     "and its other results.", i=i, cid=cid, k=k, interruption=self.interruption))
        else:
            self.answered.add((k, cid))

    def _orphan_text(self, i: int, cid: str | None) -> str:
        """The sentence for an orphan result, saying where its call is if there is one."""
        if cid is None:
            return (T("Message {i} (tool) has no tool_call_id: give it the id of the call it answers, "
                    "or drop it.", i=i))
        k = self.last_assistant
        site = self.call_site.get(cid)
        follows = T("no assistant message") if k is None else T("message {k}", k=k)
        if site is not None:
            return (T("Message {i} (tool) answers call {cid!r} of message {site}, but it follows {follows}: "
                    "move it right after message {site}, or drop it.", i=i, cid=cid, site=site, follows=follows))
        return (T("Message {i} (tool) answers call {cid!r}, which no assistant message before it made "
                "(it follows {follows}): drop it, or restore the assistant message that made the call.", i=i, cid=cid, follows=follows))

    def finish(self) -> list[Finding]:
        """Close the last block and return the findings."""
        self.close_block()
        return self.findings


def _tool_findings(messages: Sequence[Message], rules: str) -> list[Finding]:
    """The shared tool-pairing findings of ``messages``."""
    pairing = _ToolPairing(rules)
    for i, m in enumerate(messages):
        pairing.see(i, m)
    return pairing.finish()


def _empty_conversation(rules: str) -> Finding:
    """The finding for a conversation with no message at all."""
    return rule_finding("empty_conversation", "error", None,
                   T("The conversation has no messages: add at least one user message."), rules)


def check_openai(messages: Sequence[Message]) -> list[Finding]:
    """The OpenAI Chat Completions rules (unsorted; ``validate`` sorts)."""
    if not messages:
        return [_empty_conversation("openai")]
    found = _tool_findings(messages, "openai")
    for i, m in enumerate(messages):
        if m.role == "assistant" and not m.tool_calls and _is_empty(m):
            found.append(rule_finding("empty_content", "warning", i,
                                 T("Message {i} (assistant) has no content and no tool calls: "
                                 "remove it or give it text.", i=i), "openai"))
    return found + _unknown_parts(messages, OPENAI_PART_TYPES, frozenset(), "OpenAI", "openai")


def _anthropic_turn(i: int, m: Message, prev: str | None) -> tuple[str, Finding | None]:
    """The kind of turn message ``i`` leaves open and a finding if it cannot follow ``prev``.

    Kinds: ``results`` (a user turn that began with tool results; a user message may still join
    it), ``user`` and ``assistant``.
    """
    if m.role == "assistant":
        if prev == "assistant":
            return "assistant", rule_finding(
                "consecutive_assistant_turns", "error", i,
                T("Message {i} (assistant) follows another assistant turn: merge the two assistant "
                "messages into one, or drop one.", i=i), "anthropic")
        return "assistant", None
    if m.role == "tool":
        if prev == "results":
            return "results", None
        kind = "results"
    elif prev == "results":
        return "user", None
    else:
        kind = "user"
    if prev in ("user", "results"):
        return kind, rule_finding(
            "consecutive_user_turns", "error", i,
            T("Message {i} ({role}) makes a second user turn in a row: merge it into the user "
            "message before it, or put an assistant message in between.", i=i, role=role_text(m.role)), "anthropic")
    return kind, None


def _anthropic_empty(i: int, m: Message, last: int) -> Finding | None:
    """An ``empty_content`` finding for message ``i`` if Anthropic would reject it as empty."""
    if m.role not in ("user", "assistant") or m.tool_calls or not _is_empty(m):
        return None
    if m.role == "assistant" and i == last:
        return None
    return rule_finding("empty_content", "error", i,
                   T("Message {i} ({role}) has no content and no tool calls: Anthropic rejects empty "
                   "turns; remove it or give it text.", i=i, role=role_text(m.role)), "anthropic")


def check_anthropic(messages: Sequence[Message]) -> list[Finding]:
    """The Anthropic Messages API rules (unsorted; ``validate`` sorts)."""
    if not messages:
        return [_empty_conversation("anthropic")]
    found = _tool_findings(messages, "anthropic")
    prev: str | None = None
    last = len(messages) - 1
    for i, m in enumerate(messages):
        if m.role == "system":
            if prev is not None:
                found.append(rule_finding("system_not_at_start", "error", i,
                                     T("Message {i} (system) comes after the conversation started: "
                                     "Anthropic takes system text only at the top; move it there or "
                                     "make it a user message.", i=i), "anthropic"))
            continue
        if prev is None and m.role == "assistant":
            found.append(rule_finding("first_turn_not_user", "warning", i,
                                 T("Message {i} (assistant) is the first turn: Anthropic expects a user "
                                 "turn first; add a user message before it.", i=i), "anthropic"))
        prev, finding = _anthropic_turn(i, m, prev)
        empty = _anthropic_empty(i, m, last)
        found.extend(f for f in (finding, empty) if f is not None)
    if prev is None:
        found.append(rule_finding("empty_conversation", "error", None,
                             T("The conversation has only system messages: Anthropic needs at least one "
                             "user message."), "anthropic"))
    return found + _unknown_parts(messages, ANTHROPIC_BLOCK_TYPES, ANTHROPIC_LEFT_OUT, "Anthropic", "anthropic")


ANTHROPIC_BLOCK_TYPES = frozenset({
    "text", "image", "document", "search_result", "thinking", "redacted_thinking", "tool_use", "tool_result",
    "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
    "bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "tool_search_tool_result",
    "container_upload", "mcp_tool_use", "mcp_tool_result", "mcp_tool_listing", "compaction", "advisor_tool_result",
    "fallback", "tool_addition", "tool_removal"})
"""Content block types the Anthropic Messages API takes in a request (the Python SDK 2.14.0's
``ContentBlockParam`` and, for beta features such as compaction, ``BetaContentBlockParam``)."""
ANTHROPIC_LEFT_OUT = frozenset({"refusal", "input_audio", "audio", "file", "input_file", "video"})
"""Part types ctxlab's Anthropic writer leaves out with a note (no place in Anthropic): not sent, not rejected."""
OPENAI_PART_TYPES = frozenset({"text", "image", "image_url", "input_audio", "file", "refusal",
                               "thinking", "redacted_thinking"})
"""Part types OpenAI Chat takes (text, image_url, input_audio, file, refusal) or that ctxlab's OpenAI
writer turns into one (``image``) or leaves out with a note (thinking blocks)."""


def _unknown_parts(messages: Sequence[Message], known: frozenset[str], skip: frozenset[str],
                   provider: str, rules: str) -> list[Finding]:
    """An ``unknown_block_type`` error per message holding a part type the provider rejects."""
    found = []
    for i, m in enumerate(messages):
        if isinstance(m.content, str):  # plain text: nothing to check (and no part to make)
            continue
        bad = sorted({p.type for p in m.content if p.type not in known and p.type not in skip})
        if bad:
            found.append(rule_finding("unknown_block_type", "error", i, T(
                "Message {i} ({role}) holds a content block of a type {provider} does not accept ({types}): the "
                "request is rejected; remove the block or convert it to text.", i=i, role=role_text(m.role),
                provider=provider, types=", ".join(bad)), rules))
    return found


def _relabel(found: list[Finding], rules: str) -> list[Finding]:
    return [replace(f, source=rules) for f in found]


def check_deepseek(messages: Sequence[Message]) -> list[Finding]:
    """DeepSeek's API with thinking off: OpenAI's rules."""
    return _relabel(check_openai(messages), "deepseek")


def check_deepseek_thinking(messages: Sequence[Message]) -> list[Finding]:
    """DeepSeek's API in thinking mode: OpenAI's rules and reasoning on every tool-call message."""
    from .reasoning import needs_reasoning, reasoning_parts
    found = _relabel(check_openai(messages), "deepseek-thinking")
    for i in needs_reasoning(messages, "deepseek"):
        if not reasoning_parts(messages[i], "deepseek"):
            found.append(rule_finding(
                "missing_reasoning_content", "error", i,
                T("Message {i} (assistant) made tool calls without its reasoning_content: DeepSeek's thinking "
                "mode rejects the request; send the reasoning back with the message, or drop the message "
                "with its tool results.", i=i), "deepseek-thinking"))
    return found


def check_anthropic_thinking(messages: Sequence[Message]) -> list[Finding]:
    """Anthropic with extended thinking: Anthropic's rules and the turn in progress' thinking blocks."""
    from .reasoning import needs_reasoning
    found = _relabel(check_anthropic(messages), "anthropic-thinking")
    for i in needs_reasoning(messages, "anthropic"):
        parts = messages[i].parts
        if not parts or parts[0].type not in ("thinking", "redacted_thinking"):
            found.append(rule_finding(
                "missing_thinking_block", "error", i,
                T("Message {i} (assistant) calls tools in the turn in progress but does not start with its "
                "thinking block: with extended thinking on, Anthropic rejects it; send the block back "
                "unchanged.", i=i), "anthropic-thinking"))
        elif parts[0].type == "thinking" and not parts[0].data.get("signature"):
            found.append(rule_finding(
                "unsigned_thinking_block", "error", i,
                T("Message {i} (assistant) starts with a thinking block that has no signature: Anthropic "
                "checks it; send the block back as the API returned it.", i=i), "anthropic-thinking"))
    return found


Rules = Callable[[Sequence[Message]], list[Finding]]

RULES: dict[str, Rules] = {"openai": check_openai, "anthropic": check_anthropic, "deepseek": check_deepseek,
                           "deepseek-thinking": check_deepseek_thinking,
                           "anthropic-thinking": check_anthropic_thinking}
"""Rule sets by name: each takes messages and returns findings in any order."""


def _sort_key(f: Finding) -> int:
    """Whole-conversation findings first, then by message index."""
    return -1 if f.index is None else f.index


def validate(messages_or_conversation: Sequence[Message] | Conversation,
             rules: str = "openai") -> list[Finding]:
    """Check messages against a provider's rules; findings sorted by message index.

    Findings at the same index keep a fixed order (shared rules first), so the result is
    deterministic. An unknown ``rules`` name raises ``UnknownRulesError`` listing the known ones.
    """
    try:
        check = RULES[rules]
    except KeyError:
        raise UnknownRulesError(f"unknown rules {rules!r}", where="rules",
                                hint=f"Known rules: {', '.join(sorted(RULES))}") from None
    if isinstance(messages_or_conversation, Conversation):
        messages: Sequence[Message] = messages_or_conversation.messages
    else:
        messages = messages_or_conversation
    return sorted(check(messages), key=_sort_key)


FindingKey = tuple[str, str, int | None]
"""A finding as ``(rules, code, input message index)``: where it sits in the conversation as logged."""


def input_finding_keys(messages: Sequence[Message] | Conversation,
                       rules: Sequence[str] = ("openai", "anthropic")) -> frozenset[FindingKey]:
    """The errors the input already has under each rule set, keyed by input message: what a
    strategy's output may carry without the strategy being blamed for it (Claude Code and Codex
    log a first turn as two user messages; no strategy made that)."""
    return frozenset((r, f.code, f.index) for r in rules for f in validate(messages, r) if f.severity == "error")


def introduced_findings(findings: Sequence[Finding], origin: Sequence[int | None],
                        inherited: frozenset[FindingKey]) -> list[Finding]:
    """The findings of a strategy's output (``origin`` maps each output message to its input index,
    None for an inserted summary) that the input does not have at the same message under the same
    rules and code: the ones the strategy introduced. A finding about the whole prompt, or about
    an inserted message, is always the strategy's."""
    out = []
    for f in findings:
        at = origin[f.index] if f.index is not None and f.index < len(origin) else None
        if at is None or (f.rules, f.code, at) not in inherited:
            out.append(f)
    return out


def is_valid(findings: Sequence[Finding]) -> bool:
    """True when no finding is an error (warnings are allowed)."""
    return not any(f.severity == "error" for f in findings)


__all__ = ["ANTHROPIC_BLOCK_TYPES", "ANTHROPIC_LEFT_OUT", "OPENAI_PART_TYPES", "RULES", "check_anthropic",
           "check_anthropic_thinking", "check_deepseek", "check_deepseek_thinking", "check_openai", "Finding",
           "FindingKey", "input_finding_keys", "introduced_findings", "is_valid", "UnknownRulesError",
           "validate"]
