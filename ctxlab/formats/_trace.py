"""What the readers of coding-agent trace files share.

A trace file is not a message list: it is a whole document (a session JSONL of typed lines, a
SWE-agent ``.traj`` object, an OpenHands event list) whose records a reader turns into messages.
Each trace format registers a ``Format`` (so ``--format`` and the registry know it) and a
document detector; ``read_trace_document`` picks the reader and builds the Conversation.

A compaction summary found in a trace (Claude Code's ``/compact``, Codex's ``compacted``) is
marked ``Message.extra["ctxlab_compaction"] = True`` (see ``COMPACTION``); a text action read as a
tool call ``TEXT_ACTION`` (it adds no tokens), a harness's message ``HARNESS`` (no user turn), the
end of a run ``FINAL`` (no pending call), all defined in ``ctxlab.conversation``.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from ..conversation import FINAL, Conversation, Message, ToolDef, Usage
from ..errors import CtxlabError, ShapeError, shown
from ._base import Format, ReadContext, adopt_model, check_arguments, check_call_ids, group_notes
from ._json import DEFAULT_MAX_DEPTH, SourceObjects

#: the Message.extra key that marks a compaction summary the agent itself wrote into its context
COMPACTION = "ctxlab_compaction"
#: the Message.extra key that marks the task: the first user message of a coding agent's run,
#: which every strategy keeps by default (an agent that loses its task wanders)
TASK = "ctxlab_task"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def usage_from(u: dict, model: str | None, prompt: str, output: str, cached: str, written: str) -> Usage | None:
    """A Usage from the token counts a trace's usage record names (keys given in Usage's order);
    None when its prompt count is not a whole number."""
    if _int(u.get(prompt)) is None:
        return None
    return Usage(u[prompt], _int(u.get(output)), _int(u.get(cached)), _int(u.get(written)), model)


def chat_usage(u: Any, model: str | None = None) -> Usage | None:
    """An OpenAI Chat Completions ``usage`` (as litellm writes it, for any provider) as a call's
    Usage: ``prompt_tokens`` billed, cached from ``prompt_tokens_details.cached_tokens`` (or
    litellm's ``cache_read_input_tokens``), written from ``cache_creation_input_tokens``. None
    when it holds no whole prompt_tokens."""
    if not isinstance(u, dict) or _int(u.get("prompt_tokens")) is None:
        return None
    details = u.get("prompt_tokens_details") if isinstance(u.get("prompt_tokens_details"), dict) else {}
    cached = _int(details.get("cached_tokens"))
    cached = cached if cached is not None else _int(u.get("cache_read_input_tokens"))
    return Usage(u["prompt_tokens"], _int(u.get("completion_tokens")), cached,
                 _int(u.get("cache_creation_input_tokens")), model)


def marked(m: Message, key: str, value: Any = True, usage: Usage | None = None) -> Message:
    """A copy of ``m`` with ``extra[key] = value`` (and ``usage`` when given)."""
    return Message(m.role, m.content, m.name, m.tool_calls, m.tool_call_id, m.is_error, m.id,
                   {**m.extra, key: value}, usage if usage is not None else m.usage)


def mark_final(trace: "Trace", why: str) -> None:
    """Mark the trace's last message as the end of the run (no model call follows it), with a note."""
    if trace.messages and trace.messages[-1].role != "assistant":
        trace.messages[-1] = marked(trace.messages[-1], FINAL)
        trace.notes.append(f"message {len(trace.messages) - 1}: the run ended here ({why}): no model call follows")


@dataclass
class Trace:
    """What a trace reader returns: messages, the model if the trace names one, metadata kept on
    the Conversation (session id, working directory, compactions...), notes, and the tool
    definitions when the trace logs them."""

    messages: list[Message] = field(default_factory=list)
    model: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    tools: tuple[ToolDef, ...] = ()

    def add(self, msgs: list[Message]) -> None:
        """Append messages."""
        self.messages.extend(msgs)

    def note_unkept(self, index: int, fields: list[str], source: str) -> None:
        """Note the fields of message ``index``'s record that no message field carries (a converted
        file has no place for them), so a conversion never drops them silently."""
        if fields:
            items = ", ".join(f if len(f) <= 40 and f.isprintable() else shown(f, 40) for f in fields[:6])
            more = f" and {len(fields) - 6} more" if len(fields) > 6 else ""
            owner = source + ("'" if source.endswith("s") else "'s")
            self.notes.append(f"message {index}: {owner} {items}{more} not carried (ctxlab keeps a message's "
                              "role, text and tool calls), so a conversion leaves them out")

@dataclass(frozen=True)
class TraceFormat:
    """A trace format: ``detect(doc)`` says whether a whole document is one of its files (doc is
    the parsed JSON, or the list of JSONL line objects); ``read(doc, lines)`` reads it. A format
    whose files hold several agent runs (production traces) has ``runs(doc, lines)``: the file
    split into one document per run (each a document of the same format, read on its own)."""

    format: Format
    detect: Callable[[Any], bool]
    read: Callable[[Any, "tuple[int, ...] | None"], Trace]
    runs: "Callable[[Any, tuple[int, ...] | None], list[Any]] | None" = None


TRACES: dict[str, TraceFormat] = {}


def trace_format(name: str, title: str, detect: Callable[[Any], bool],
                 read: Callable[[Any, "tuple[int, ...] | None"], Trace],
                 runs: "Callable[[Any, tuple[int, ...] | None], list[Any]] | None" = None) -> TraceFormat:
    """A trace format with its registry ``Format`` (detected as a whole document, never as a
    message list; a list of its records handed to the Format is read whole). ``runs`` splits a
    file of several agent runs (see ``TraceFormat``)."""
    def read_items(items: list[Any], ctx: ReadContext) -> list[Message]:
        return read(items, None).messages
    return TraceFormat(Format(name, title, never, read_items), detect, read, runs)


def never(items: list[Any]) -> int:
    """Message-list detection score of a trace format: 0 (traces are detected as documents)."""
    return 0


_NOTE_INDEX = re.compile(r"message (\d+): ")


def sub_read(read: Callable[[list[Any], ReadContext], list[Message]], item: dict, trace: Trace,
             where: str, max_depth: int = DEFAULT_MAX_DEPTH) -> list[Message]:
    """Read one provider-shaped message (an Anthropic turn, an OpenAI message, a Responses item)
    with that format's reader; its notes are renumbered to the trace's messages and its errors say
    where in the trace file the record is (``where``)."""
    ctx = ReadContext(base="$", max_depth=max_depth)
    try:
        out = read([item], ctx)
    except CtxlabError as e:
        e.where = f"{where} ({e.where})" if e.where else where
        e.args = (f"{e.where}: {e.problem}" + (f". {e.hint}" if e.hint else ""),)
        raise
    at = len(trace.messages)
    trace.notes.extend(_NOTE_INDEX.sub(lambda m: f"message {at + int(m[1])}: ", n, count=1) for n in ctx.notes)
    trace.add(out)
    return out


def line_where(lines: tuple[int, ...] | None, k: int, what: str = "$") -> str:
    """``JSONL line 12`` for record ``k`` of a JSONL trace, else ``$[k]`` / ``what[k]``."""
    if lines is not None and k < len(lines):
        return f"JSONL line {lines[k]}"
    return f"{what}[{k}]"


def content_text(value: Any, where: str) -> str:
    """The text of a message's content read by a trace reader that needs text (a text action's
    thought, a command's message): a string, the text parts of a list joined by newlines, or ""
    when absent; anything else is an error naming ``where``."""
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, list):
        return "\n".join(p["text"] if isinstance(p, dict) and isinstance(p.get("text"), str) else
                         p if isinstance(p, str) else "" for p in value)
    raise ShapeError(f"content must be text or a list of text parts, found {type(value).__name__}", where=where)


def counted(kinds: "Counter[str]", most: int = 8) -> str:
    """``2 TOOL, 1 AGENT``: the most common kinds a reader left out, each name cut to one short
    phrase (a kind is read from the file: it can be 5,000 characters long)."""
    return ", ".join(f"{n:,} {k if len(k) <= 60 else shown(k, 60)}" for k, n in kinds.most_common(most))


def note_gaps(trace: "Trace", skipped: Counter, others: str, call: str) -> None:
    """The notes a production reader ends with: the records it left out, counted by kind
    (``others``: "spans of other operations"), and, when no ``call`` logged its tool definitions,
    that counts leave them out."""
    if skipped:
        trace.notes.append(f"{others} left out ({counted(skipped, 6)})")
    if not trace.tools:
        trace.notes.append(f"no {call} logs its tool definitions: counts leave them out")


def call_arguments(text: Any, where: str) -> str:
    """Tool-call arguments a trace reader found, held to the rule of every format (a JSON object
    within the depth limit, see ``check_arguments``); an error names ``where``."""
    try:
        return check_arguments(text, ReadContext(), 0)
    except CtxlabError as e:
        e.where = where
        e.args = (f"{where}: {e.problem}" + (f". {e.hint}" if e.hint else ""),)
        raise


def as_records(doc: Any, lines: tuple[int, ...] | None) -> list[Any]:
    """The records of a JSONL trace: the line objects (a one-line file parses as one object)."""
    if lines is not None:
        return doc
    return doc if isinstance(doc, list) else [doc]


def detect_trace(docs: list[Any], lines: list[int] | None) -> str | None:
    """The name of the trace format whose detector accepts the document, or None."""
    doc = docs if lines is not None else docs[0]
    for name, tf in TRACES.items():
        try:
            if tf.detect(doc):
                return name
        except (AttributeError, TypeError, KeyError, IndexError):
            continue
    return None


def read_trace_document(docs: list[Any], lines: list[int] | None, name: str,
                        max_depth: int = DEFAULT_MAX_DEPTH, source: SourceObjects | None = None) -> Conversation:
    """The Conversation of a trace document, read as trace format ``name``."""
    tf = TRACES[name]
    doc = docs if lines is not None else docs[0]
    trace = tf.read(doc, tuple(lines) if lines is not None else None)
    if not trace.messages:
        raise ShapeError(f"the {tf.format.title} file holds no messages", where="input",
                         hint="Check that this is the whole session file")
    check_call_ids(trace.messages, trace.notes)  # the same duplicate-id rule as every format
    messages = list(trace.messages)
    first = next((k for k, m in enumerate(messages) if m.role == "user" and not is_compaction(m)), None)
    if first is not None:  # the task: kept by every strategy (View.protected)
        m = messages[first]
        messages[first] = Message(m.role, m.content, m.name, m.tool_calls, m.tool_call_id, m.is_error, m.id,
                                  {**m.extra, TASK: True}, m.usage)
    model = adopt_model(trace.model, trace.notes, trace.meta)
    return Conversation(tuple(messages), trace.tools, model, name, (), trace.meta, group_notes(trace.notes))


def read_trace_documents(docs: list[Any], lines: list[int] | None, name: str,
                         max_depth: int = DEFAULT_MAX_DEPTH, source: SourceObjects | None = None) -> list[Conversation]:
    """Every conversation of a trace document: one per agent run for a format with ``runs``,
    else the one ``read_trace_document`` gives."""
    tf = TRACES[name]
    if tf.runs is None:
        return [read_trace_document(docs, lines, name, max_depth, source)]
    doc = docs if lines is not None else docs[0]
    return [read_trace_document([run], None, name, max_depth) for run in tf.runs(doc, tuple(lines) if lines else None)]


def run_documents(docs: list[Any], lines: list[int] | None, name: str) -> list[Any] | None:
    """The one-run documents of a trace file of several runs (None for a format without runs):
    what the app shows as one conversation each."""
    tf = TRACES[name]
    if tf.runs is None:
        return None
    return tf.runs(docs if lines is not None else docs[0], tuple(lines) if lines else None)


def compaction(m: Message) -> Message:
    """The message marked as a compaction summary (``extra["ctxlab_compaction"] = True``)."""
    return marked(m, COMPACTION)


def is_compaction(m: Message) -> bool:
    """Whether a message is a compaction summary read from a trace."""
    return bool(m.extra.get(COMPACTION))
