"""Summarizers for the ``summarize`` strategy: the protocol, a registry, and the built-in offline
``extractive`` summarizer (user requests, tool calls with arguments, ids and amounts from results,
errors, decisions), plus the trimming that bounds any summary to a token budget."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Protocol, Sequence

from ...conversation import Message


class Summarizer(Protocol):
    """What the strategy calls: ``previous`` is the running summary to merge the new lines into."""

    def summarize(self, messages: Sequence[Message], previous: str | None) -> str:
        """A summary of ``messages``, merged into ``previous`` when given."""
        ...


_NOTABLE = re.compile(
    r"[$€£]\s?\d[\d,]*(?:\.\d+)?|[+-]\d[\d.]*%|\b(?:EUR|USD|GBP) ?\d[\d,]*(?:\.\d+)?|\b\d{4}-\d{2}-\d{2}(?:T[\d:]+Z?)?"
    r"|\b(?=[\w.-]*\d)[A-Za-z][A-Za-z0-9]*(?:[-_.][A-Za-z0-9]+)+\b|\b(?=\w*[A-Z])(?=\w*\d)[A-Z0-9]{6,}\b")
_PAIR = re.compile(r'"(\w[\w-]{0,40})" ?: ?("[^"\\\n]{0,80}"|-?\d[\d.]*|true|false)')
_KEY_PART = re.compile(r"_|-|(?<=[a-z])(?=[A-Z])")
_KEY_RANK = {**dict.fromkeys(("id", "ids", "no", "number", "ref", "reference", "code"), 0),
             **dict.fromkeys(("status", "state", "error"), 1),
             **dict.fromkeys(("amount", "total", "price", "balance", "cost", "fee", "revenue", "count", "pct"), 2),
             **dict.fromkeys(("date", "at", "until", "expires", "deadline"), 3), "name": 4}
_ERROR_START = ("error", "exception", "traceback", "failed", "failure")
_ERROR_KEY = re.compile(r'"errors?" ?: ?(?:"[^"]|\[ *[{"]|\{)|"(?:ok|success|valid)" ?: ?false', re.IGNORECASE)
_IMPORTANCE = (("User asked:", 4), ("Assistant answered:", 4), ("ERROR", 4), ("Called ", 3), ("Result of ", 2))


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text[: limit * 4].split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


@lru_cache(maxsize=8192)  # texts repeat across plans of the same conversation (a slider move re-summarizes)
def _with_extras(prefix: str, text: str, limit: int, scan: int) -> str:
    """``prefix`` + shortened text, plus ids, amounts and dates the cut left out (at most 6)."""
    short = shorten(text, limit)
    extras = list(dict.fromkeys(w for w in _NOTABLE.findall(text[:scan]) if w not in short))[:6]
    return prefix + short + (f" [also: {', '.join(extras)}]" if extras else "")


def is_error_text(text: str) -> bool:
    """Whether a tool result reads as a failure: it starts with "Error", "Exception", ..., or is
    JSON with a non-empty ``error``/``errors`` or ``"ok"/"success"/"valid": false`` near the top."""
    head = text[:400].lower()
    if head.lstrip().startswith(_ERROR_START):
        return True
    return ("error" in head or "false" in head) and _ERROR_KEY.search(head) is not None


@lru_cache(maxsize=4096)
def _key_rank(key: str) -> int | None:
    """How telling a JSON key is (0: ids, 1: statuses, 2: amounts, 3: dates, 4: names), None: skip."""
    return _KEY_RANK.get(_KEY_PART.split(key)[-1].lower())


class _CallNames:
    """Call id -> tool name, the latest call with that id winning, found by scanning the messages
    from the newest back only as far as a lookup needs (a summary reads the newest messages first
    and stops when it is full, so most of a long history is never scanned)."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages, self.next, self.names = messages, len(messages) - 1, {}

    def get(self, call_id: str, default: str) -> str:
        """The name of the latest call ``call_id``, else ``default``."""
        names = self.names
        while call_id not in names and self.next >= 0:
            for c in self.messages[self.next].tool_calls:
                names.setdefault(c.id, c.name)  # scanning backwards: the first seen is the latest
            self.next -= 1
        return names.get(call_id, default)


@dataclass(frozen=True)
class ExtractiveSummarizer:
    """Offline, deterministic summary, one line per event: user requests (shortened), tool calls
    with their arguments, key values of results (ids, amounts, dates, statuses), errors flagged,
    assistant answers (shortened). Merging appends the new lines to the previous summary.

    Bounded: at most ``max_chars`` characters of new lines per importance level, the newest
    first (the ones ``trim_summary`` would keep), so a huge span costs no more than a small one.
    """

    user_chars: int = 200
    answer_chars: int = 240
    call_chars: int = 160
    result_chars: int = 200
    keys_per_result: int = 6
    values_per_key: int = 3
    scan_chars: int = 4000
    max_chars: int = 16_000

    def summarize(self, messages: Sequence[Message], previous: str | None) -> str:
        """The previous summary (if any) followed by one line per event of ``messages``."""
        names = _CallNames(messages)
        room = dict.fromkeys((1, 2, 3, 4), self.max_chars)
        picked: list[str] = []
        for m in reversed(messages):
            if room[2] <= 0 and room[3] <= 0 and room[4] <= 0:
                break
            for line in reversed(self._lines(m, names, room)):
                rank = importance(line)
                if room[rank] > 0:
                    picked.append(line)
                    room[rank] -= len(line) + 1
        head = [previous.strip()] if previous and previous.strip() else []
        return "\n".join(head + picked[::-1])

    def _lines(self, m: Message, names: "_CallNames", room: dict[int, int]) -> list[str]:
        if m.role == "user":
            return [_with_extras("User asked: ", m.text, self.user_chars, self.scan_chars)] if room[4] > 0 else []
        if m.role == "tool":
            return self._result(m, names.get(m.tool_call_id or "", "a tool"), room)
        if m.role == "system":
            return [f"System note: {shorten(m.text, 120)}"] if m.text.strip() else []
        out = []
        if m.text.strip() and room[1 if m.tool_calls else 4] > 0:
            prefix = "Assistant said: " if m.tool_calls else "Assistant answered: "
            out.append(_with_extras(prefix, m.text, self.answer_chars, self.scan_chars))
        if room[3] > 0:
            out.extend(f"Called {c.name} {shorten(c.arguments, self.call_chars)}" for c in m.tool_calls)
        return out

    def _result(self, m: Message, name: str, room: dict[int, int]) -> list[str]:
        error, line = self._result_line(m.text, name, m.is_error)
        return [line] if room[4 if error else 2] > 0 else []

    @lru_cache(maxsize=8192)  # noqa: B019  (the summarizer is a frozen value; results repeat across plans)
    def _result_line(self, full_text: str, name: str, is_error: bool) -> tuple[bool, str]:
        """Whether a result is an error, and its summary line."""
        text = full_text[: self.scan_chars]
        if is_error or is_error_text(text):
            return True, f"ERROR from {name}: {shorten(text, 160)}"
        found: dict[str, list[str]] = {}
        for key, value in _PAIR.findall(text):
            if _key_rank(key) is None:
                continue
            values = found.setdefault(key, []) if len(found) < 2 * self.keys_per_result else found.get(key)
            value = value.strip('"')
            if values is not None and value not in values and len(values) < self.values_per_key:
                values.append(value)
        ranked = sorted(found, key=_key_rank)[: self.keys_per_result]
        pairs = "; ".join(f"{k}={', '.join(found[k])}" for k in ranked)
        return False, f"Result of {name}: " + shorten(pairs or text or "(empty)", self.result_chars)


SUMMARIZERS: dict[str, Summarizer] = {"extractive": ExtractiveSummarizer()}
"""Summarizers by name; ``Summarize(summarizer=name)`` picks one."""


def register_summarizer(name: str, summarizer: Summarizer) -> None:
    """Make ``summarizer`` available as ``Summarize(summarizer=name)`` (built-ins do the same)."""
    SUMMARIZERS[name] = summarizer


def importance(line: str) -> int:
    """How much a summary line matters: requests, answers and errors 4; calls 3; results 2; others 1."""
    for prefix, rank in _IMPORTANCE:
        if line.startswith(prefix):
            return rank
    return 1


def trim_summary(text: str, max_tokens: int, count: Callable[[str], int]) -> str:
    """``text`` within ``max_tokens`` (by ``count``): the least important lines go first, the
    oldest first among equals; the kept lines stay in their order."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or len(text.encode()) <= max_tokens or (len(text) <= 12 * max_tokens and count(text) <= max_tokens):
        return "\n".join(lines)
    order = sorted(range(len(lines)), key=lambda k: (-importance(lines[k]), -k))
    chosen, chars = [], 0
    for k in order:  # a cheap cut first (12 characters a token is more than text ever packs), then exact counts
        chars += len(lines[k]) + 1
        if chars > max_tokens * 12:
            break
        chosen.append(k)
    total = sum(count(lines[k]) + 1 for k in chosen)
    while chosen:
        if total <= max_tokens and count(out := "\n".join(lines[k] for k in sorted(chosen))) <= max_tokens:
            return out
        total -= count(lines[chosen.pop()]) + 1
    line = lines[order[0]][: max_tokens * 4]  # even the most important line is too long: cut it
    while line and count(line) > max_tokens:
        line = line[: int(len(line) * 0.8)]
    return line
