"""The part of a prompt a trace does not log, inferred from the bill.

Claude Code logs no system prompt and no tool definitions; Codex, OpenHands and SWE-agent files
leave out some of either. Every call was billed for them all the same. Where a trace logs what each
call was billed, the difference on the first calls is that part: billed minus counted, with the
counter's tokenizer factor taken into account where it only estimates the model's tokenizer
(Claude: cl100k scaled by the growth factor of ``ctxlab.calibration``, measured on the same
trace). ``apply_prefix`` carries it as one system message at the head of the conversation whose
tokens are given, not counted (``FIXED_TOKENS``): every strategy keeps the first system message,
so it is a pinned segment of every prompt, and counts, fits, costs and figures include it. The
user can give the size instead (a number) or the real system prompt and tools (a text, counted).
Without usage, a note says the prompt is incomplete and, where measured, by how much.
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from .conversation import FIXED_TOKENS, UNLOGGED, Conversation, Message
from .errors import CtxlabError

FIRST_CALLS = 3
"""The prefix is the median gap over this many first calls (before any compaction)."""
TYPICAL = {"claude_code": "a Claude Code session's first call is billed 15,178-26,010 tokens more than the file "
                          "holds (5 public sessions measured)"}
"""Per format, the measured size of what its files leave out, for the note when a file has no usage."""
INCOMPLETE_FORMATS = ("claude_code", "codex", "openhands", "swe_agent")


class PrefixError(CtxlabError):
    """An override of the unlogged prefix that cannot be used."""


@dataclass(frozen=True)
class Prefix:
    """The unlogged part of every prompt: ``tokens``, how it was found (``source``: "inferred",
    "inferred-total" from a run's billed totals, "given", "file"), the calls it was inferred from
    and the tokenizer ``factor`` used."""

    tokens: int
    source: str
    calls: int = 0
    factor: float = 1.0

    def describe(self) -> str:
        """The sentence shown beside the segment."""
        how = {"inferred": f"inferred from the bill of the first {self.calls} call(s)"
                           + (f", tokenizer factor {self.factor:.3f}" if self.factor != 1.0 else ""),
               "inferred-total": f"inferred from the run's total bill over its {self.calls} call(s)",
               "given": "as given", "file": "counted from the given file"}[self.source]
        return f"unlogged: system prompt and tools, ~{self.tokens:,} tokens, {how}"

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {"tokens": self.tokens, "source": self.source, "calls": self.calls, "factor": round(self.factor, 4),
                "text": self.describe()}


def _factor(conv: Conversation, model: str, given: float | None = None) -> float:
    """1 for an exact tokenizer; else ``given``, or the growth factor billed/counted measured on
    this trace (``ctxlab.calibration``)."""
    from .calibration import calibrate_from_usage
    from .tokens import TokenCounter
    if TokenCounter(model).spec.exact:
        return 1.0
    if given is not None:
        return given
    growth = [c for c in calibrate_from_usage([conv], model=model) if c.method == "growth"]
    if sum(c.calls for c in growth) < 2:
        return 1.0
    return sum(c.reported for c in growth) / sum(c.counted for c in growth)  # every billing model's growth


def infer_prefix(conv: Conversation, model: str | None = None, first: int = FIRST_CALLS,
                 factor: float | None = None) -> Prefix | None:
    """The unlogged part of the prompt from the first ``first`` billed calls before any
    compaction: the median of billed - factor x counted. A run that logs only its billed totals
    (SWE-agent) gives the mean gap per call, when it bills as many calls as the file holds. None
    without a bill or when the file holds the whole prompt (the gap is not positive)."""
    from .formats._trace import is_compaction
    from .usage import compare_total, compare_usage, has_usage
    if not has_usage(conv):
        total = compare_total(conv, model=model)
        if total is None or total["billed_calls"] != total["counted_calls"] or not total["counted_calls"]:
            return None
        gap = round(total["prompt_difference"] / total["counted_calls"])
        return Prefix(gap, "inferred-total", total["counted_calls"]) if gap > 0 else None
    model = model or conv.model or "gpt-4o"
    marks = [i for i, m in enumerate(conv.messages) if is_compaction(m)]
    calls = [c for c in compare_usage(conv, model=model).calls if not marks or c.index < marks[0]][:first]
    if not calls:
        return None
    factor = _factor(conv, model, factor)
    gap = round(statistics.median(c.reported.prompt_tokens - factor * c.counted for c in calls))
    return Prefix(gap, "inferred", len(calls), factor) if gap > 0 else None


def check_against_bill(conv: Conversation, model: str | None = None, first: int = FIRST_CALLS, **kw):
    """``compare_usage`` of a conversation that carries its prefix segment. An inferred prefix is
    inferred again where the agent's unlogged part changes: per billing model, and after each
    compaction (the unlogged part of a Claude Code session grows after a ``/compact``): the median
    gap over the first ``first`` calls of that model in that part of the session. A prefix the user
    gave is used as given."""
    from dataclasses import replace as copy
    from .formats._trace import is_compaction
    from .usage import compare_usage
    cmp = compare_usage(conv, model=model, **kw)
    if not (cmp.calls and has_prefix(conv.messages)) or conv.messages[0].extra[UNLOGGED]["source"] != "inferred":
        return cmp
    marks = [i for i, m in enumerate(conv.messages) if is_compaction(m)]
    groups: dict[tuple[int, str | None], list] = {}
    for c in cmp.calls:
        groups.setdefault((sum(i < c.index for i in marks), c.reported.model), []).append(c)
    rows = []
    for c in cmp.calls:
        seen = groups[(sum(i < c.index for i in marks), c.reported.model)][:first]
        gap = statistics.median(r.reported.prompt_tokens - r.factor * (r.counted - r.counted_prefix) for r in seen)
        rows.append(copy(c, prefix=max(0, round(gap)), fitted=any(r is c for r in seen)))
    return copy(cmp, calls=tuple(rows))


def prefix_message(prefix: Prefix, text: str | None = None) -> Message:
    """The segment: a system message whose tokens are given (or, for a file, its text counted)."""
    extra = {UNLOGGED: prefix.to_dict()}
    if text is None:
        extra[FIXED_TOKENS] = prefix.tokens
    return Message("system", text if text is not None else f"({prefix.describe()})", extra=extra)


def has_prefix(messages: Sequence[Message]) -> bool:
    """Whether a conversation already carries the unlogged prefix."""
    return bool(messages) and UNLOGGED in messages[0].extra


def parse_override(value: str | int | None) -> int | str | None:
    """A ``--prefix`` value: a whole number of tokens, or the path of a text file (its text)."""
    if value is None or isinstance(value, int):
        if isinstance(value, int) and value < 0:
            raise PrefixError(f"the unlogged prefix must be 0 or more tokens, not {value}", where="--prefix")
        return value
    text = str(value).strip().replace(",", "").replace("_", "")
    if text.isdigit():
        return int(text)
    path = Path(str(value))
    if not path.is_file():
        raise PrefixError(f"--prefix {value!r} is neither a number of tokens nor a file", where="--prefix",
                          hint="Give a whole number (e.g. 18000) or the path of a file holding the system prompt "
                               "and the tool definitions")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise PrefixError(f"cannot read {path}: {e}", where="--prefix") from None


def apply_prefix(conv: Conversation, model: str | None = None, override: int | str | None = None,
                 factor: float | None = None) -> tuple[Conversation, Prefix | None, list[str]]:
    """The conversation with its unlogged prefix at the head (inferred from the bill, or the
    ``override``: a number of tokens, or the text of the real system prompt and tools), the
    prefix, and notes (what was inferred, or that the prompt is incomplete and by how much).
    ``factor`` fixes the tokenizer factor of an estimating counter (default: measured on the trace)."""
    from .tokens import TokenCounter
    from .usage import has_usage
    if has_prefix(conv.messages):
        return conv, None, []
    scale = (lambda: _factor(conv, model or conv.model or "gpt-4o", factor)) if has_usage(conv) else (lambda: 1.0)
    if isinstance(override, str):
        prefix = Prefix(TokenCounter(model or conv.model).text(override), "file", factor=scale())
        return _with(conv, prefix_message(prefix, override)), prefix, [prefix.describe()]
    inferred = None if _logs_whole_prompt(conv) or override is not None else infer_prefix(conv, model, factor=factor)
    prefix = Prefix(override, "given", factor=scale()) if override else inferred
    if prefix is not None and prefix.tokens > 0:
        return _with(conv, prefix_message(prefix)), prefix, [prefix.describe()]
    if override is not None:
        return conv, None, []
    if _logs_whole_prompt(conv):
        return conv, None, []
    if has_usage(conv) or "billed_total" in conv.metadata:
        return conv, None, ["no unlogged prefix: the bill is not larger than the count on the first calls"]
    if conv.format in INCOMPLETE_FORMATS and not _logs_whole_prompt(conv):
        typical = TYPICAL.get(conv.format, "by how much is not measured for this agent")
        return conv, None, [f"the prompt is incomplete: this file logs no bill to infer the system prompt and tool "
                            f"definitions it leaves out ({typical}); give them with --prefix"]
    return conv, None, []


def with_unlogged_prefix(conv: Conversation, model: str | None = None,
                         override: int | str | None = None) -> Conversation:
    """``apply_prefix``'s conversation with its notes among the conversation's own (what a page
    shows: the segment at the head, or the note that the prompt is incomplete)."""
    out, _, notes = apply_prefix(conv, model, override)
    extra = tuple(n for n in notes if n not in out.notes and not any(n in m for m in out.notes))
    return replace(out, notes=out.notes + extra) if extra else out


def _logs_whole_prompt(conv: Conversation) -> bool:
    return bool(conv.tools) and bool(conv.messages) and conv.messages[0].role == "system"


_AT = re.compile(r"\b(messages? )(\d+(?:(?:, | and |-)\d+(?![\d,]* more))*)")


def _shift(note: str) -> str:
    """A note with the message indexes it names (``message 4``, ``messages 2, 4 and 6``) moved by one."""
    return _AT.sub(lambda m: m[1] + re.sub(r"\d+", lambda d: str(int(d[0]) + 1), m[2]), note)


def _with(conv: Conversation, head: Message) -> Conversation:
    """``head`` before every message; the indexes notes and metadata name move by one."""
    notes = tuple(_shift(n) for n in conv.notes)
    notes += (f"message 0: {head.extra[UNLOGGED]['text']} (added at the head of every prompt; never removed, "
              "never exported)",)
    meta = dict(conv.metadata)
    for key, field in (("compactions", "message"), ("subagents", "returned_at")):
        if isinstance(meta.get(key), list):
            meta[key] = [{**row, field: row[field] + 1} if isinstance(row.get(field), int) else row
                         for row in meta[key]]
    return Conversation((head, *conv.messages), conv.tools, conv.model, conv.format, conv.facts, meta, notes)


def without_prefix(messages: Sequence[Message]) -> tuple[Message, ...]:
    """The messages without the unlogged prefix (what an export writes: the segment is a measure)."""
    return tuple(messages[1:]) if has_prefix(messages) else tuple(messages)


__all__ = ["Prefix", "PrefixError", "UNLOGGED", "apply_prefix", "check_against_bill", "has_prefix", "infer_prefix",
           "parse_override",
           "prefix_message", "with_unlogged_prefix", "without_prefix"]
