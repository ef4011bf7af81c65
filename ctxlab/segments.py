"""Where a conversation can be cut: turns, tool rounds and atomic groups.

A context strategy keeps, clears or drops messages, but it must not cut a conversation anywhere:
a provider rejects a tool result whose call is gone, and a call whose result is gone. This module
names the units a strategy works with, in one pass over the messages:

* **turn**: a user message and everything after it until the next user message. Turns are
  numbered 0, 1, 2 ... in order. Messages before the first user message (the system prompt, an
  assistant greeting, ...) are the **preamble**, and their turn number is **-1**. This way
  ``turns[k]`` is always the turn that starts with the k-th user message, and "keep the last 3
  turns" never counts the system prompt as a turn. A user message the agent's harness wrote
  (marked ``HARNESS`` by a trace reader: a format error, a step-limit warning) opens no turn.
* **tool round**: an assistant message that asks for tool calls, plus every tool message that
  answers one of those calls. Rounds are numbered 0, 1, 2 ... in the order of their assistant
  message. A message in no round has round number -1.
* **atomic group**: the smallest set of messages a strategy may keep or drop as one. A tool round
  is one group (it can never be split, even when its results are not contiguous); every other
  message is a group of one. Groups are numbered in the order of their first message.
* **orphan**: a tool message that answers no call made before it. It is a group of one, listed in
  ``orphans`` so that the app and ``validate`` can point at it.

A tool message answers the latest earlier call with the same ``tool_call_id``. Only ``tool``
messages are results: a ``user`` message never answers a call, whatever it contains.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .conversation import Message, starts_turn

Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Segments:
    """Turns, tool rounds and atomic groups of a message list, by message index.

    Per message (tuples as long as the message list):
    ``turn_of[i]`` is the turn of message i (-1 in the preamble), ``group_of[i]`` its atomic group
    (an index into ``groups``), ``round_of[i]`` its tool round (an index into ``rounds``, or -1).

    Lists: ``preamble`` is the half-open range of messages before the first user message;
    ``turns[k]`` the half-open range ``(start, end)`` of turn k; ``groups[g]`` the message indexes
    of group g in ascending order; ``rounds[r]`` the indexes of tool round r (the assistant
    message first); ``orphans`` the indexes of tool messages that answer no earlier call.
    The preamble followed by the turns covers every index once, in order; the groups partition the
    indexes.
    """

    turn_of: tuple[int, ...]
    group_of: tuple[int, ...]
    round_of: tuple[int, ...]
    preamble: Span
    turns: tuple[Span, ...]
    groups: tuple[tuple[int, ...], ...]
    rounds: tuple[tuple[int, ...], ...]
    orphans: tuple[int, ...]

    def __len__(self) -> int:
        """The number of messages segmented."""
        return len(self.turn_of)

    def group_members(self, index: int) -> tuple[int, ...]:
        """Every message index that must be kept or dropped together with message ``index``."""
        return self.groups[self.group_of[index]]


def _turn_spans(messages: Sequence[Message], ints: list[int]) -> tuple[list[int], Span, list[Span]]:
    """Turn number per message, the preamble range and the turn ranges (numbers taken from
    ``ints``, ``list(range(len(messages) + 1))``)."""
    starts = [i for i, m in zip(ints, messages) if m.role == "user" and starts_turn(m)]
    n = len(messages)
    preamble = (0, starts[0] if starts else n)
    ends = starts[1:] + [ints[n]]
    turns = list(zip(starts, ends))
    turn_of = [-1] * preamble[1]
    for k, (start, end) in zip(ints, turns):
        turn_of.extend([k] * (end - start))
    return turn_of, preamble, turns


def segment(messages: Sequence[Message]) -> Segments:
    """Segment ``messages`` into turns, tool rounds and atomic groups in one O(n) pass.

    Works on any message list, valid or not: unmatched results become ``orphans``, calls without a
    result stay in their round alone, and two results for one call both join its round (``validate``
    reports such problems; segmenting never fails).
    """
    # one int object per index, shared by every table below (half a million messages: each
    # table of its own ints would add 15 MB)
    ints = list(range(len(messages) + 1))
    turn_of, preamble, turns = _turn_spans(messages, ints)
    group_of: list[int] = []
    round_of: list[int] = []
    # a group is the tuple (i,) until a result joins it (then a list): the half a million groups
    # of a long chat are made once, not as lists and again as tuples
    groups: list[tuple[int] | list[int]] = []
    round_groups: list[int] = []  # group id of each round
    orphans: list[int] = []
    caller: dict[str, int] = {}  # call id -> round number of the latest call with that id
    for i, m in zip(ints, messages):
        if m.role == "tool":
            r = caller.get(m.tool_call_id) if m.tool_call_id is not None else None
            if r is not None:
                g = round_groups[r]
                if groups[g].__class__ is tuple:
                    groups[g] = list(groups[g])
                groups[g].append(i)
                group_of.append(g)
                round_of.append(r)
                continue
            orphans.append(i)
        g = ints[len(groups)]
        groups.append((i,))
        group_of.append(g)
        if m.role == "assistant" and m.tool_calls:
            r = ints[len(round_groups)]
            round_groups.append(g)
            for call in m.tool_calls:
                caller[call.id] = r
            round_of.append(r)
        else:
            round_of.append(-1)
    return Segments(
        turn_of=tuple(turn_of),
        group_of=tuple(group_of),
        round_of=tuple(round_of),
        preamble=preamble,
        turns=tuple(turns),
        groups=tuple(g if g.__class__ is tuple else tuple(g) for g in groups),
        rounds=tuple(tuple(groups[g]) for g in round_groups),
        orphans=tuple(orphans),
    )


__all__ = ["segment", "Segments"]
