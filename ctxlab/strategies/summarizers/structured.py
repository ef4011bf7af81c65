"""Structured summaries of a coding agent's work, for the ``summarize`` strategy (OpenHands'
``structured`` condenser keeps this kind of state: the task, files, commands, errors, tests).

* ``structured`` (offline, deterministic): sections extracted from the folded messages, merged
  section by section into the previous summary: TASK (the first user request), FILES_READ,
  FILES_CHANGED, COMMANDS (the newest, each with ok / failed), ERRORS (the newest error lines),
  TESTS (the newest test-run outcome). It has no PENDING section: knowing what is left to do
  needs a model.
* ``llm_structured``: a model writes the same sections (plus PENDING and DECISIONS) from the
  span, with :data:`STRUCTURED_PROMPT` / :data:`STRUCTURED_MERGE_PROMPT` unless the strategy's
  prompts are edited. When no model answers, the offline ``structured`` summary is used, with a
  warning naming the failure (the ``llm`` summarizer's fallback rules: cooldown, cache).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from ...i18n import T
from ...conversation import Message, json_leaves
from .llm import LLMSummarizer, SummaryResult
from .extractive import is_error_text, register_summarizer, shorten

SECTIONS = ("TASK", "FILES_READ", "FILES_CHANGED", "COMMANDS", "ERRORS", "TESTS")
_PATH = re.compile(r"(?<![\w.])((?:[\w.~-]*/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,5})(?![\w/])")
_EDIT = re.compile(r"^(edit|write|create|str_replace|apply_patch|insert|multiedit|notebookedit)", re.I)
_READ = re.compile(r"^(read|open|view|cat|grep|glob|find|search|ls|head|tail|sed -n)", re.I)
_TESTS = re.compile(r"\b\d+ (passed|failed|errors?)\b.*", re.I)
_FILE_ARGS = ("file_path", "path", "filename", "file", "notebook_path")


def _args(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _command(args: dict[str, Any]) -> str:
    for key in ("command", "cmd", "code", "pattern", "query"):
        if isinstance(args.get(key), str):
            return args[key]
    return " ".join(str(v) for v in json_leaves(args) if isinstance(v, str))


def _paths(args: dict[str, Any]) -> list[str]:
    """Files a call names: its file arguments (not directories), else paths in its command."""
    named = [args[k] for k in _FILE_ARGS if isinstance(args.get(k), str) and _PATH.fullmatch(args[k])]
    return named or _PATH.findall(_command(args))[:3]


@dataclass
class _State:
    """The sections being built, each an ordered set of lines."""

    lines: dict[str, dict[str, None]] = field(default_factory=lambda: {s: {} for s in SECTIONS})

    def add(self, section: str, line: str, key: str | None = None) -> None:
        """Add a line (a repeat moves to the end, the newest); ``key``: drop lines starting with it first."""
        if key is not None:
            for old in [ln for ln in self.lines[section] if ln.startswith(key)]:
                del self.lines[section][old]
        self.lines[section].pop(line, None)
        self.lines[section][line] = None

    @classmethod
    def parse(cls, text: str | None) -> "_State":
        """Read a previous structured summary back (other text lands in TASK)."""
        state, section = cls(), "TASK"
        for raw in (text or "").splitlines():
            head = raw.strip().rstrip(":")
            if head in SECTIONS:
                section = head
            elif raw.strip().startswith("- "):
                state.lines[section][raw.strip()[2:]] = None
        return state

    def render(self, limits: dict[str, int]) -> str:
        out = []
        for s in SECTIONS:
            items = list(self.lines[s])[-limits.get(s, 20):]
            if items:
                out.append(f"{s}:")
                out.extend(f"- {line}" for line in items)
        return "\n".join(out)


@dataclass(frozen=True)
class StructuredSummarizer:
    """Offline structured summary of a coding agent's messages (see the module docstring)."""

    limits: tuple[tuple[str, int], ...] = (("TASK", 2), ("FILES_READ", 25), ("FILES_CHANGED", 25),
                                           ("COMMANDS", 12), ("ERRORS", 6), ("TESTS", 2))
    line_chars: int = 160

    def summarize(self, messages: Sequence[Message], previous: str | None) -> str:
        """The previous structured summary extended with what ``messages`` show."""
        state = _State.parse(previous)
        calls: dict[str, tuple[str, dict[str, Any]]] = {}
        for m in messages:
            if m.role == "user" and m.text.strip() and not state.lines["TASK"]:
                state.add("TASK", shorten(m.text.strip(), 400))
            for c in m.tool_calls:
                calls[c.id] = (c.name, _args(c.arguments))
            if m.role == "tool" and m.tool_call_id in calls:
                self._result(state, *calls[m.tool_call_id], m)
        return state.render(dict(self.limits))

    def _result(self, state: _State, name: str, args: dict[str, Any], m: Message) -> None:
        command = _command(args)
        verb = name if name.lower() not in ("bash", "shell", "exec_command", "execute_bash", "run", "local_shell") \
            else command
        failed = m.is_error or is_error_text(m.text[:2000])
        for path in _paths(args):
            if _EDIT.match(verb.strip()) or _EDIT.match(name):
                state.add("FILES_CHANGED", path)
            elif _READ.match(verb.strip()) or _READ.match(name):
                state.add("FILES_READ", path)
        shown = shorten(" ".join(command.split()), self.line_chars) if command else name
        if command and not _READ.match(name) and not _EDIT.match(name):  # the newest outcome of each command
            state.add("COMMANDS", f"{shown} -> {'failed' if failed else 'ok'}", key=f"{shown} -> ")
        text = m.text[:4000]
        tests = _TESTS.search(text)
        if tests:
            state.lines["TESTS"] = {shorten(tests.group(0).strip("= "), self.line_chars): None}
        if failed:
            last = next((ln.strip(" =") for ln in reversed(text.splitlines()) if ln.strip(" =")), "")
            state.add("ERRORS", f"{shown}: {shorten(last, self.line_chars)}", key=f"{shown}: ")
        else:  # the same command now succeeds: its error is resolved
            for old in [ln for ln in state.lines["ERRORS"] if ln.startswith(f"{shown}: ")]:
                del state.lines["ERRORS"][old]


STRUCTURED_PROMPT = """You write the state of a coding agent's work from the earlier part of its session, which the agent will continue with your summary in place of these messages. Write these sections, each a heading line then "- " items, and keep every path, symbol, command, version and error text exactly as written:
TASK: what the user asked for, with its constraints
FILES_READ: files read and what matters in them
FILES_CHANGED: files edited and the change made
COMMANDS: commands run and their outcome
ERRORS: errors still unresolved
TESTS: the last test outcome
DECISIONS: choices made and why
PENDING: what is left to do
At most {max_tokens} tokens, no preamble.

Messages to summarize:
{span}"""

STRUCTURED_MERGE_PROMPT = """You keep the state of a coding agent's work, in sections (TASK, FILES_READ, FILES_CHANGED, COMMANDS, ERRORS, TESTS, DECISIONS, PENDING; a heading line then "- " items). The state so far:
{summary}

Update it with the newly summarized messages below: keep what still matters, add what they add, move fixed errors out of ERRORS, update PENDING. Keep every path, symbol, command and error text exactly as written. Return the whole state, at most {max_tokens} tokens, no preamble.

New messages:
{span}"""


@dataclass
class StructuredLLMSummarizer(LLMSummarizer):
    """The structured sections written by a model; the offline ``structured`` summary when none answers."""

    fallback: StructuredSummarizer = field(default_factory=StructuredSummarizer)  # type: ignore[assignment]

    def summarize_span(self, messages: Sequence[Message], previous: str | None, *, summary_prompt: str = "",
                       merge_prompt: str = "", **kw: Any) -> SummaryResult:
        """The ``llm`` summarizer's call with the structured prompts (unless the strategy's are edited)."""
        return super().summarize_span(messages, previous, summary_prompt=summary_prompt or STRUCTURED_PROMPT,
                                      merge_prompt=merge_prompt or STRUCTURED_MERGE_PROMPT, **kw)

    def _fall_back(self, messages: Sequence[Message], previous: str | None, why: str) -> SummaryResult:
        text = self.fallback.summarize(messages, previous)
        return SummaryResult(text, {"summarizer": "structured (fallback)", "error": why},
                             T("LLM summary unavailable, used the offline structured summary instead: {why}", why=why))


register_summarizer("structured", StructuredSummarizer())
register_summarizer("llm_structured", StructuredLLMSummarizer())

__all__ = ["SECTIONS", "STRUCTURED_MERGE_PROMPT", "STRUCTURED_PROMPT", "StructuredLLMSummarizer",
           "StructuredSummarizer"]
