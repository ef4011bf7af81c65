"""Greedy group removal at numpy speed: what ``_Ledger.drop_group`` / ``drop_turn`` do one Python
step per group (``middle_out``, ``oldest_first``), worked out for a whole removal order at once.

A ledger walks an order of groups and, while the kept tokens exceed a target, removes the next
group still kept; a user message's group removes its whole turn, and a turn left with no reply
keeps its user message (``settle`` merges it into the next one). Each message's removal step is
therefore known before anything is removed: its group's place in the order, or its turn's removal
step (its user message's place), whichever comes first. The greedy loop stops at the first
step at which the kept tokens fit, found by a cumulative sum. The result (decisions, reasons and
counters) is the loop's, message for message; shapes the reasoning does not cover (a group spread
over two turns) return None and the caller walks the loop.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from itertools import repeat
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from ..view import MEMO_EXTENDERS

if TYPE_CHECKING:
    from .ledger import _Ledger
    from ..view import View

_NEVER = np.iinfo(np.int64).max // 2


@dataclass(frozen=True)
class _Tables:
    """Per view, as arrays: group and turn of each message, tokens, whether a message counts as a
    reply of its turn (not its user message, not a system message), turn starts, group firsts."""

    group_of: np.ndarray
    turn_of: np.ndarray
    tokens: np.ndarray
    reply: np.ndarray
    starts: np.ndarray
    firsts: np.ndarray
    user_first: np.ndarray  # per group, whether its first message is a user message
    lengths: np.ndarray  # per group, its number of messages
    ends: np.ndarray  # per turn, the index after its last message
    simple: bool  # every group inside one turn


def tables(view: "View") -> _Tables:
    """The arrays of ``view`` (built once per view)."""
    cached = view.memo.get("batch.tables")
    if cached is not None:
        return cached
    seg = view.seg
    group_of = np.array(seg.group_of, dtype=np.int64)
    turn_of = np.array(seg.turn_of, dtype=np.int64)
    starts = np.array([s for s, _ in seg.turns], dtype=np.int64)
    ends = np.array([e for _, e in seg.turns], dtype=np.int64)
    firsts = np.array([g[0] for g in seg.groups], dtype=np.int64)
    is_start = np.zeros(len(view), dtype=bool)
    is_start[starts] = True
    roles = np.array(view.roles, dtype=object)
    reply = (turn_of >= 0) & ~is_start & (roles != "system")
    simple = bool(np.all(turn_of == turn_of[firsts[group_of]])) if len(view) else True
    cached = view.memo["batch.tables"] = _Tables(group_of, turn_of, np.array(view.tokens, dtype=np.int64),
                                                  reply, starts, firsts, roles[firsts] == "user",
                                                  np.fromiter(map(len, seg.groups), dtype=np.int64, count=len(firsts)),
                                                  ends, simple)
    return cached


def _extend_tables(old: "View", new: "View", known: _Tables) -> _Tables:
    """The tables of a grown view from those of the view it grew from: rows for the new messages,
    groups and turns added; the sizes of groups the new messages joined and the last turn's end
    redone."""
    seg, n0, n = new.seg, len(old), len(new)
    fresh = range(n0, n)
    group_of = np.concatenate((known.group_of, np.array(seg.group_of[n0:], dtype=np.int64)))
    turn_of = np.concatenate((known.turn_of, np.array(seg.turn_of[n0:], dtype=np.int64)))
    g0, t0 = len(known.firsts), len(known.starts)
    starts = np.concatenate((known.starts, np.array([s for s, _ in seg.turns[t0:]], dtype=np.int64)))
    ends = np.concatenate((known.ends, np.zeros(len(seg.turns) - t0, dtype=np.int64)))
    for t in range(max(t0 - 1, 0), len(seg.turns)):
        ends[t] = seg.turns[t][1]
    new_groups = seg.groups[g0:]
    firsts = np.concatenate((known.firsts, np.array([g[0] for g in new_groups], dtype=np.int64)))
    roles = new.roles
    user_first = np.concatenate((known.user_first, np.array([roles[g[0]] == "user" for g in new_groups], dtype=bool)))
    lengths = np.concatenate((known.lengths, np.array([len(g) for g in new_groups], dtype=np.int64)))
    for g in {seg.group_of[i] for i in fresh if seg.group_of[i] < g0}:
        lengths[g] = len(seg.groups[g])
    starts_set = set(starts[t0:].tolist())
    reply = np.concatenate((known.reply, np.array([seg.turn_of[i] >= 0 and i not in starts_set and roles[i] != "system"
                                                   for i in fresh], dtype=bool)))
    simple = known.simple and all(seg.turn_of[i] == seg.turn_of[seg.groups[seg.group_of[i]][0]] for i in fresh)
    return _Tables(group_of, turn_of, np.concatenate((known.tokens, np.array(new.tokens[n0:], dtype=np.int64))),
                   reply, starts, firsts, user_first, lengths, ends, simple)


MEMO_EXTENDERS["batch.tables"] = _extend_tables


@dataclass
class Removal:
    """What walking ``order`` would do: the entries walked, each message's removal step, which
    entries removed something themselves, and the removal reasons' kinds."""

    stop: int                 # entries walked before the kept tokens fit (or all of them)
    step: np.ndarray          # per message, the step it is removed at (_NEVER: kept)
    acted: np.ndarray         # the entries (< stop) that removed their own group
    dropped: np.ndarray       # indexes of the messages removed, ascending
    by_user: np.ndarray       # per turn: removed through its user message's own entry (else the cascade)
    kept_before: Callable[[np.ndarray], np.ndarray]  # kept messages before each given entry


def simulate(book: "_Ledger", order: Sequence[int], target: int) -> Removal | None:
    """The removal ``book`` would make walking ``order`` (groups, each unprotected) until its kept
    tokens are at most ``target``; None when the view has a shape this does not model."""
    view = book.view
    t = tables(view)
    if not t.simple:
        return None
    n, order = len(view), np.asarray(order, dtype=np.int64)
    m = len(order)
    keep = np.fromiter(map("keep".__eq__, book.actions), dtype=bool, count=n)
    group_step = np.full(len(t.firsts), _NEVER, dtype=np.int64)
    group_step[order] = np.arange(m, dtype=np.int64)
    own = group_step[t.group_of]
    nturns = len(t.starts)
    # no cascade: a user message left alone stays (settle merges it into the next one); a turn goes
    # only at its own user message's entry
    user_kept = keep[t.starts]
    cascade = np.full(nturns, _NEVER, dtype=np.int64)
    by_own_user = group_step[t.group_of[t.starts]] if nturns else np.zeros(0, dtype=np.int64)
    by_own_user = np.where(user_kept, by_own_user, _NEVER)
    turn_step = np.minimum(by_own_user, cascade)
    prot = np.fromiter(book.protected, dtype=bool, count=len(t.firsts))
    in_turn = t.turn_of >= 0
    by_turn = (np.where(in_turn & ~prot[t.group_of], turn_step[np.where(in_turn, t.turn_of, 0)], _NEVER)
               if nturns else np.full(n, _NEVER, dtype=np.int64))
    step = np.where(keep, np.minimum(own, by_turn), _NEVER)
    if nturns:
        step[t.starts] = np.where(user_kept, turn_step, _NEVER)
    # the walk stops at the first entry before which the kept tokens fit
    need = book.total - target
    timed = np.flatnonzero(step < _NEVER)
    steps_sorted = np.sort(step[timed], kind="stable")
    by_step = timed[np.argsort(step[timed], kind="stable")]
    if need <= 0:
        stop = 0
    else:
        gone = np.cumsum(t.tokens[by_step])
        k = int(np.searchsorted(gone, need, side="left"))
        stop = m if k >= len(gone) else int(steps_sorted[k]) + 1
    removed = step < stop
    acted_firsts = t.firsts[order[:stop]]
    acted = np.flatnonzero(step[acted_firsts] == np.arange(stop))

    def kept_before(entries: np.ndarray) -> np.ndarray:
        return book.kept - np.searchsorted(steps_sorted, entries, side="left")
    return Removal(stop, step, acted, np.flatnonzero(removed), by_own_user <= cascade, kept_before)


def apply(book: "_Ledger", r: Removal, order: Sequence[int], whys: Callable[[np.ndarray], list[str]],
          why_rest: Callable[[int], str], lone: str) -> None:
    """Write ``r`` into ``book``: "drop" and a reason for each removed message (its entry's
    ``whys``, or its turn's: ``why_rest(user index)`` or ``lone``), and the counters."""
    t = tables(book.view)
    dropped = r.dropped
    if not len(dropped):
        return
    order = np.asarray(order, dtype=np.int64)
    groups = t.group_of[dropped]
    by_own = groups == order[r.step[dropped]]  # removed at its own group's entry
    reason_of_group = np.empty(len(t.firsts), dtype=object)
    reason_of_group[order[r.acted]] = whys(r.acted)
    texts = reason_of_group[groups]
    rest = np.flatnonzero(~by_own)
    if len(rest):
        texts[rest] = lone
        turns = t.turn_of[dropped[rest]]
        via_user = r.by_user[turns]
        for turn in np.unique(turns[via_user]).tolist():  # one text per turn removed with its user message
            texts[rest[via_user & (turns == turn)]] = why_rest(int(t.starts[turn]))
    texts = texts.tolist()
    idx = dropped.tolist()
    deque(map(book.actions.__setitem__, idx, repeat("drop")), maxlen=0)
    deque(map(book.reasons.__setitem__, idx, texts), maxlen=0)
    book.total -= int(t.tokens[dropped].sum())
    book.kept -= len(idx)
    book.groups_removed += int(np.count_nonzero(t.firsts[t.group_of[dropped]] == dropped))
    # book.alive is left as it was: nothing reads it once the removal is done
