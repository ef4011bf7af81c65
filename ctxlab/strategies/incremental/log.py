"""The append-only columns behind the views of one growing conversation.

``View.append`` used to copy every per-message tuple of its parent (messages, counts, segments,
...), so a replay that extends a view at every model call was quadratic in the messages. A
``Log`` holds those columns as growable lists shared by a view and every view appended from it;
a view is a log and a length, and builds the tuple it is asked for from the first ``n`` entries
on first use. Entries below a view's length never change: an appended message only adds entries,
except that a tool result joins the group and round of its call, and that change is recorded
(``changes``) so a view taken before it still sees the group as it was.

Appending to a view that is not the newest of its log (a branch) copies the log's first ``n``
entries into a new log, unless the messages appended are the very ones the log holds next (then
the two views share the log).
"""
from __future__ import annotations

from bisect import bisect_left
from itertools import accumulate
from typing import Sequence

from ...conversation import Message, starts_turn
from ...segments import Segments

_COLUMNS = ("messages", "tokens", "categories", "fact_masks", "origin", "roles",
            "turn_of", "group_of", "round_of", "cum", "ngroups", "nrounds", "norphans")


class Log:
    """Per-message columns (lists) and the segment tables of the longest view over them."""

    __slots__ = (*_COLUMNS, "starts", "closed", "groups", "rounds", "round_group", "orphans", "caller",
                 "change_at", "changes", "first_system")

    def __init__(self) -> None:
        for name in _COLUMNS:
            setattr(self, name, [])
        self.starts: list[int] = []  # index of each user message (turn starts)
        self.closed: list[tuple[int, int]] = []  # span of every turn but the newest (ended by the next user message)
        self.groups: list[tuple[int, ...]] = []
        self.rounds: list[tuple[int, ...]] = []
        self.round_group: list[int] = []
        self.orphans: list[int] = []
        self.caller: dict[str, int] = {}  # call id -> round of the latest call with that id
        self.change_at: list[int] = []  # message index of each change to an existing group or round
        self.changes: list[tuple[int, int, tuple[int, ...]]] = []  # (0 group / 1 round, which, before)
        self.first_system: int | None = None

    def __len__(self) -> int:
        return len(self.messages)

    @classmethod
    def of(cls, messages: Sequence[Message], tokens: Sequence[int], categories: Sequence[str],
           fact_masks: Sequence[int], origin: Sequence[int | None]) -> "Log":
        """A log holding these columns (segments found in one pass)."""
        log = cls()
        log.extend(messages, tokens, categories, fact_masks, origin)
        return log

    def branch(self, n: int) -> "Log":
        """A new log holding the first ``n`` messages of this one (what a view of length ``n`` sees)."""
        out = Log()
        for name in _COLUMNS:
            setattr(out, name, getattr(self, name)[:n])
        seg = self.segments(n)
        out.starts = self.starts[:bisect_left(self.starts, n)]
        out.closed = self.closed[:max(len(out.starts) - 1, 0)]
        out.groups, out.rounds, out.orphans = list(seg.groups), list(seg.rounds), list(seg.orphans)
        out.round_group = self.round_group[:len(out.rounds)]
        for r, members in enumerate(out.rounds):
            for c in out.messages[members[0]].tool_calls:
                out.caller[c.id] = r
        out.first_system = self.first_system if self.first_system is not None and self.first_system < n else None
        return out

    def with_replaced(self, replaced: Sequence[tuple[int, Message, int, int]]) -> "Log":
        """A copy of this log (every entry) with messages replaced in place: ``(index, message, tokens,
        fact mask)``. The copy is C-speed list copies; the segments stay, so a replacement must keep
        the message's role, call id and tool calls' ids (the caller checks)."""
        out = Log()
        for name in self.__slots__:
            value = getattr(self, name)
            setattr(out, name, value.copy() if isinstance(value, (list, dict)) else value)
        first = len(self.messages)
        for i, m, tokens, mask in replaced:
            out.messages[i], out.tokens[i], out.fact_masks[i] = m, tokens, mask
            first = min(first, i)
        cum, tokens = out.cum, out.tokens
        running = cum[first - 1] if first else 0
        for k in range(first, len(tokens)):  # replacements are mostly the newest messages: a short tail
            running += tokens[k]
            cum[k] = running
        return out

    def holds(self, n: int, messages: Sequence[Message], origin: Sequence[int | None]) -> bool:
        """Whether the entries from ``n`` on are already exactly ``messages`` with ``origin``."""
        end = n + len(messages)
        if len(self.messages) < end:
            return False
        return all(a is b for a, b in zip(self.messages[n:end], messages)) and self.origin[n:end] == list(origin)

    def extend(self, messages: Sequence[Message], tokens: Sequence[int], categories: Sequence[str],
               fact_masks: Sequence[int], origin: Sequence[int | None]) -> None:
        """Add messages at the end, with their counts, categories, facts and origins; segments are
        extended as ``segments.segment`` would find them."""
        base = len(self.messages)
        self.messages.extend(messages)
        self.tokens.extend(tokens)
        self.categories.extend(categories)
        self.fact_masks.extend(fact_masks)
        self.origin.extend(origin)
        running = accumulate(tokens, initial=self.cum[-1] if self.cum else 0)
        next(running)  # the previous total, already there
        self.cum.extend(running)
        for k, m in enumerate(messages):
            self._segment(base + k, m)

    def _segment(self, i: int, m: Message) -> None:
        role = m.role
        self.roles.append(role)
        if role == "user" and starts_turn(m):  # a harness's message (trace readers mark it) opens no turn
            if self.starts:
                self.closed.append((self.starts[-1], i))
            self.starts.append(i)
        elif role == "system" and self.first_system is None:
            self.first_system = i
        self.turn_of.append(len(self.starts) - 1)
        r = self.caller.get(m.tool_call_id) if role == "tool" and m.tool_call_id is not None else None
        if r is not None:
            g = self.round_group[r]
            self.change_at += (i, i)
            self.changes += ((0, g, self.groups[g]), (1, r, self.rounds[r]))
            self.groups[g] += (i,)
            self.rounds[r] += (i,)
            self.group_of.append(g)
            self.round_of.append(r)
        else:
            if role == "tool":
                self.orphans.append(i)
            g = len(self.groups)
            self.groups.append((i,))
            self.group_of.append(g)
            if role == "assistant" and m.tool_calls:
                r = len(self.rounds)
                self.rounds.append((i,))
                self.round_group.append(g)
                for c in m.tool_calls:
                    self.caller[c.id] = r
                self.round_of.append(r)
            else:
                self.round_of.append(-1)
        self.ngroups.append(len(self.groups))
        self.nrounds.append(len(self.rounds))
        self.norphans.append(len(self.orphans))

    # ------------------------------------------------------------------ what a view of length n sees
    def column(self, name: str, n: int) -> tuple:
        """The first ``n`` entries of a column, as a tuple."""
        items = getattr(self, name)
        return tuple(items) if len(items) == n else tuple(items[:n])

    def total(self, n: int) -> int:
        """Tokens of the first ``n`` messages."""
        return self.cum[n - 1] if n else 0

    def turn_starts(self, n: int) -> list[int]:
        """Indexes of the user messages among the first ``n``."""
        return self.starts[:bisect_left(self.starts, n)]

    def newest_user(self, n: int) -> int | None:
        """Index of the newest user message among the first ``n``."""
        k = bisect_left(self.starts, n)
        return self.starts[k - 1] if k else None

    def preamble(self, n: int) -> tuple[int, int]:
        """The messages before the first user message, among the first ``n``."""
        return (0, self.starts[0]) if self.starts and self.starts[0] < n else (0, n)

    def segments(self, n: int) -> Segments:
        """The segments of the first ``n`` messages: the same as ``segment(messages[:n])``."""
        k = bisect_left(self.starts, n)  # turns among the first n: all closed but the last
        turns = (*self.closed[:k - 1], (self.starts[k - 1], n)) if k else ()
        if not n:
            return Segments((), (), (), (0, 0), (), (), (), ())
        groups = self.groups[:self.ngroups[n - 1]]
        rounds = self.rounds[:self.nrounds[n - 1]]
        first = bisect_left(self.change_at, n)
        for k in range(len(self.changes) - 1, first - 1, -1):  # undo, newest first, what came after n
            kind, which, before = self.changes[k]
            table = groups if kind == 0 else rounds
            if which < len(table):
                table[which] = before
        return Segments(self.column("turn_of", n), self.column("group_of", n), self.column("round_of", n),
                        self.preamble(n), turns, tuple(groups), tuple(rounds),
                        tuple(self.orphans[:self.norphans[n - 1]]))
