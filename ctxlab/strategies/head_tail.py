"""``head_tail``: each large tool result cut to its head and its tail, as Codex sends command output.

Codex (openai/codex, ``MODEL_FORMAT_*`` in codex-rs, from PR #2096) sends the model at most 256
lines and 10 KiB of a command's output: the first 128 lines and the last 128, with a marker saying
how many lines were left out between them; past 10 KiB the head keeps its first 5 KiB and the tail
the rest of the 10 KiB. Everything in the cut middle is gone for the model: an error printed in the
middle of a build log reads, from its head and tail, like a build that went through (openai/codex
#6415). Needed facts in the middle count as lost, as any removed text does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..conversation import Message
from ..i18n import N_, T
from .base import PER_RESULT, Strategy, param, register
from .per_result import RewritesEachResult, per_result_plan
from .plan import Plan
from .view import Budget, View, message_text

CODEX_MAX_BYTES = 10 * 1024
CODEX_MAX_LINES = 256
CODEX_MARKER = "[... omitted {omitted} of {total} lines ...]"
BYTES_MARKER = "[... omitted {omitted:,} of {total:,} bytes ...]"
"""The marker when the cut falls inside lines (one long line): the bytes left out."""


def _head_bytes(text: str, limit: int) -> str:
    """The longest start of ``text`` of at most ``limit`` UTF-8 bytes, cut at a character boundary."""
    return text.encode("utf-8")[:limit].decode("utf-8", "ignore")


def _tail_bytes(text: str, limit: int) -> str:
    """The longest end of ``text`` of at most ``limit`` UTF-8 bytes, cut at a character boundary."""
    raw = text.encode("utf-8")
    return raw[max(len(raw) - limit, 0):].decode("utf-8", "ignore") if limit > 0 else ""


def head_tail(text: str, max_lines: int = CODEX_MAX_LINES, max_bytes: int = CODEX_MAX_BYTES,
              marker: str = CODEX_MARKER) -> str | None:
    """``text`` cut to its first ``max_lines // 2`` lines and its last ones, within ``max_bytes``
    (the head at most half of it), with ``marker`` between (``{omitted}`` and ``{total}`` lines);
    None when it is within both limits."""
    lines = text.splitlines(keepends=True)
    if len(lines) <= max_lines and len(text.encode("utf-8")) <= max_bytes:
        return None
    head_n = max_lines // 2
    tail_n = max_lines - head_n
    if len(lines) > max_lines:
        head, tail = "".join(lines[:head_n]), "".join(lines[len(lines) - tail_n:]) if tail_n else ""
        omitted = len(lines) - head_n - tail_n
    else:
        head, tail, omitted = text, "", 0
    head = _head_bytes(head, max_bytes // 2)
    tail = _tail_bytes(tail if tail else text[len(head):], max_bytes - len(head.encode("utf-8")))
    kept = head.count("\n") + tail.count("\n") + (1 if tail and not tail.endswith("\n") else 0)
    omitted = max(omitted, len(lines) - kept)
    if omitted:
        mark = marker.replace("{omitted}", f"{omitted:,}").replace("{total}", f"{len(lines):,}")
    else:  # cut inside lines (a long line): say how many bytes went
        total = len(text.encode("utf-8"))
        gone = total - len(head.encode("utf-8")) - len(tail.encode("utf-8"))
        mark = BYTES_MARKER.format(omitted=gone, total=total)
    return head + ("" if head.endswith("\n") or not head else "\n") + mark + "\n" + tail


@register
@dataclass(frozen=True)
class HeadTail(RewritesEachResult, Strategy):
    """Cut every tool result over ``max_lines`` lines or ``max_bytes`` bytes to its head and tail,
    as Codex does before the model sees a command's output (defaults: Codex's 256 lines, 10 KiB)."""

    name: ClassVar[str] = "head_tail"
    cost_per_call: ClassVar[str] = PER_RESULT
    title: ClassVar[str] = N_("Head and tail of each result")
    summary: ClassVar[str] = N_("Cuts each large tool result to its first and last lines with a marker between "
                                "(Codex's rule: 256 lines, 10 KiB); what was in the middle is lost, an error too.")
    max_lines: int = param(CODEX_MAX_LINES, min=2, max=1_000_000,
                           help=N_("Lines of a result sent at most: half from its start, half from its end (Codex: "
                                   "256)."))
    max_bytes: int = param(CODEX_MAX_BYTES, min=64, max=100_000_000,
                           help=N_("Bytes of a result sent at most (UTF-8); the head takes at most half (Codex: "
                                   "10 KiB)."))
    marker: str = param(CODEX_MARKER, help=N_("Text put where the middle was cut; {omitted} and {total} become line "
                                              "counts."))

    def _cut(self, view: View, i: int) -> tuple[Message, int] | None:
        """The cut copy of result ``i`` and its tokens, or None when it is within the limits
        (made once per view and parameters)."""
        def make(m: Message) -> tuple[Message, int] | None:
            text = message_text(m)
            cut = head_tail(text, self.max_lines, self.max_bytes, self.marker) if text else None
            if cut is None:
                return None
            new = m.with_content(cut)
            return new, view.counter.message(new)
        return self._copy(view, "head_tail", (i, self.max_lines, self.max_bytes, self.marker), i, make)

    def apply(self, view: View, budget: Budget) -> Plan:
        """Cut every result past the limits (pinned ones stay whole)."""
        return per_result_plan(self, view, budget, lambda i: self._decide(view, i), ("cut", "tokens_cut"), self._idle)

    def _decide(self, view: View, i: int) -> tuple[str, tuple[Message, int] | None]:
        """Result ``i``'s reason, and its cut copy with its tokens when it is cut."""
        if i in view.pins:
            return T("pinned: never cut"), None
        cut = self._cut(view, i)
        if cut is None:
            return T("sent as is: within {lines:,} lines and {bytes:,} bytes", lines=self.max_lines,
                     bytes=self.max_bytes), None
        if cut[1] >= view.tokens_at(i):
            return T("sent as is: its head and tail would not be shorter"), None
        return T("cut to its head and tail: {before:,} -> {after:,} tokens", before=view.tokens_at(i), after=cut[1]), cut

    def _idle(self, results: int) -> str:
        """Why nothing was cut."""
        if not results:
            return T("head_tail cuts tool results and the conversation has none")
        return T("head_tail cuts results over {lines:,} lines or {bytes:,} bytes (max_lines, max_bytes); none of the "
                 "{results:,} results is", lines=self.max_lines, bytes=self.max_bytes, results=results)


__all__ = ["CODEX_MARKER", "CODEX_MAX_BYTES", "CODEX_MAX_LINES", "HeadTail", "head_tail"]
