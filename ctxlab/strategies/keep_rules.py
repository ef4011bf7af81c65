"""Rules that strategies removing whole rounds or turns share: keep what is pinned with its group and
its turn's user message, give a kept user message of an older turn a reply, and the small helpers
they count removals with (``tool_rounds``, ``key_messages``, ``clear_tool_results``, the condensers),
and why a window removed nothing (``window_idle``: the windows and ``key_messages``)."""
from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence

from ..i18n import T
from .plan import REMOVED, _kept_indexes
from .view import View


def keep_members(actions: list[str], reasons: list[str], members: Sequence[int], reason: str) -> None:
    """Keep those of ``members`` not kept yet, for ``reason``."""
    for i in members:
        if actions[i] in REMOVED:
            actions[i], reasons[i] = "keep", reason


def keep_pinned(view: View, actions: list[str], reasons: list[str]) -> None:
    """Keep every pinned message with its whole group and the user message of its turn."""
    seg = view.seg
    for p in sorted(view.pins):
        members = seg.group_members(p)
        if all(actions[i] not in REMOVED for i in members):
            continue
        keep_members(actions, reasons, [p], "pinned")
        keep_members(actions, reasons, members, T("kept with pinned message {p}", p=p))
        if seg.turn_of[p] >= 0:
            keep_members(actions, reasons, [seg.turns[seg.turn_of[p]][0]], T("kept: its turn has pinned message {p}", p=p))


def turn_reply(view: View, start: int, end: int) -> tuple[int, ...]:
    """What best answers the user message of turn ``start..end``: its last assistant message
    without tool calls, else its newest tool round (empty when the turn has neither)."""
    seg, messages = view.seg, view.messages
    for i in range(end - 1, start, -1):
        if messages[i].role == "assistant" and not messages[i].tool_calls:
            return (i,)
    for i in range(end - 1, start, -1):
        if seg.round_of[i] >= 0:
            return seg.group_members(i)
    return ()


def answer_lone_users(view: View, actions: list[str], reasons: list[str]) -> None:
    """Give a kept user message of an older turn with nothing kept after it a reply, so that it
    survives (two user turns in a row are invalid, and ``settle`` would remove it). When fewer
    messages are kept than there are turns (a long history mostly forgotten), only the turns of
    kept messages are looked at; a reply is never a user message, so which turns start kept does
    not change on the way."""
    turns = view.seg.turns
    if len(turns) < 2:
        return
    candidates: Iterable[tuple[int, int]] = turns[:-1]
    if actions.count("keep") < len(turns):  # cheap bound first, as settle's
        kept, _ = _kept_indexes(actions)
        if len(kept) < len(turns):
            turn_of, last = view.seg.turn_of, len(turns) - 1
            candidates = [turns[t] for i, t in zip(kept, map(turn_of.__getitem__, kept))
                          if 0 <= t < last and turns[t][0] == i]
    for start, end in candidates:
        if actions[start] in REMOVED:
            continue
        rest = actions[start + 1:end]
        if rest.count("drop") + rest.count("summarize") < len(rest):  # something after it is kept
            continue
        keep_members(actions, reasons, turn_reply(view, start, end),
              T("kept so that user message {start} has a reply (two user turns in a row are invalid)", start=start))


def removed_tokens(view: View, actions: list[str]) -> int:
    """Tokens of the removed messages (walking the smaller of the kept and the removed)."""
    kept, removed = _kept_indexes(actions)
    if removed is not None:
        return sum(map(view.tokens.__getitem__, removed))
    return view.total - sum(map(view.tokens.__getitem__, kept))


def set_at(items: list, indexes: Sequence[int], values: Iterable) -> None:
    """``items[i] = value`` for each pair, at C speed."""
    deque(map(items.__setitem__, indexes, values), maxlen=0)


def window_idle(name: str, param_name: str, size: int, view: View, start: int) -> str:
    """Why a window of the newest ``size`` messages, starting at ``start``, removed nothing."""
    head = T("{name} keeps the last {size:,} messages ({param_name})", name=name, size=size, param_name=param_name)
    n = len(view)
    if n <= size:
        return T("{head} and the conversation has {n:,}", head=head, n=n)
    before = T("nothing lies before it") if start == 0 else T("only the system prompt lies before it")
    return (T("{head}, widened back to the start of their turn at message {start:,}: {before}, so the window "
            "holds the whole conversation ({n:,} messages)", head=head, start=start, before=before, n=n))
