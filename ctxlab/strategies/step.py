"""One step of a strategy's life inside an agent: before a model call, apply it to the prompt so far
and carry what it leaves to the next call.

``ctxlab.replay`` walks a trace through this step call by call; a live session
(``ctxlab.sessions``) takes the same step before each call it serves. Both ask the same three
questions, answered here once:

* is the strategy due (``due``): before every call (``apply_at="every_call"``), or only when a
  user message arrived since it last ran (``turn_start``);
* what is sent (``before_call``): the plan's result, carrying the strategy's ``state`` (a running
  summary, what it folded) to the next call; a strategy that ``works_on`` the ``full_history`` is
  given the whole history as it arrived at every call and carries nothing;
* what changed (``Step.changes``): each original message whose state differs from what the
  previous prompt sent it as (``was``), so a message cleared at call 3 and still cleared at call 9
  is one change, and on the whole history a message removed earlier and kept now comes back.

A ``Compression`` is the record of one application that made a plan, in a replay or a session.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from itertools import compress
from operator import ne
from typing import Any, Callable

from .base import result_view
from .plan import REMOVED, Plan
from .view import Budget, View

KEPT_HISTORY, FULL_HISTORY = "kept_history", "full_history"


def works_on(strategy: Any) -> str:
    """What ``strategy`` is given at each call: what it left last time (``kept_history``), or the
    whole history as it arrived (``full_history``)."""
    return getattr(strategy, "works_on", KEPT_HISTORY)


def due(apply_at: str, user_arrived: bool) -> bool:
    """Whether the strategy runs before this call: always at ``every_call``; at ``turn_start`` only
    when a user message arrived since it last ran."""
    return apply_at == "every_call" or user_arrived


@dataclass(frozen=True, slots=True)
class Step:
    """What one application did. ``plan`` is None when the strategy made none (an empty prompt, or
    below its trigger: ``Strategy.quick_idle``); ``sent`` is the prompt that goes out (a View whose
    ``origin`` holds the original indexes), carrying the state for the next call; ``changes`` are
    (original index, new state) of every message whose state changed."""

    plan: Plan | None
    given: View
    sent: View
    triggered: bool
    changes: tuple[tuple[int, str], ...]

    @property
    def removed(self) -> int:
        """Original messages this application dropped or folded into a summary."""
        return sum(a in REMOVED for _, a in self.changes)


def as_arrived(view: View, was: Callable[[int], str]) -> Step:
    """The step of a ``full_history`` strategy that makes no plan: the whole history goes out as it
    arrived, which brings back what an earlier call removed or cleared."""
    back = tuple((o, "keep") for o in view.origin if o is not None and was(o) != "keep")
    return Step(None, view, view, False, back)


def before_call(strategy: Any, view: View, budget: Budget, was: Callable[[int], str], *,
                quick: bool = True, previous: tuple[str, ...] | None = None) -> Step:
    """Apply ``strategy`` to ``view`` (the prompt so far) under ``budget``. ``was(i)`` is the state
    original message ``i`` was sent in at the previous call (``keep``, ``clear``, ``truncate``, or
    the action that removed it). ``quick``: skip the plan when ``Strategy.quick_idle`` says it would
    keep everything (a live session passes False: its record holds every application's plan).
    ``previous``: for a ``full_history`` strategy, the actions of the plan applied at the previous
    call when ``was`` is exactly what that plan left; a plan grown from it (``Plan.edited_from``)
    then lists its changes from the few decisions it edited instead of comparing every message."""
    full = works_on(strategy) == FULL_HISTORY
    if not len(view) or (quick and strategy.quick_idle(view, budget)):
        return as_arrived(view, was) if full else Step(None, view, view, False, ())
    plan = strategy.apply(view, budget)
    triggered = plan.idle is None
    edited = plan.edited_from
    if full and previous is not None and len(plan.actions) >= len(previous):
        # ``was`` is what the previous plan decided for the view this one grew from, so only the
        # decisions that differ from it can be changes, and the new messages arrive kept (what
        # ``was`` says of a message never sent): a grown plan names the ones it edited; otherwise
        # the two plans' actions are compared at C speed, not message by message in Python
        origin, actions = view.entries("origin"), plan.actions
        if edited is not None and edited[0] is previous:
            differ: Any = edited[1]
        else:
            m = len(previous)
            differ = [*compress(range(m), map(ne, actions, previous)),
                      *(i for i in range(m, len(actions)) if actions[i] != "keep")]
        changes = tuple((o, a) for o, a in ((origin[i], actions[i]) for i in differ)
                        if o is not None and a != was(o))
    else:
        # kept history: a message the plan keeps is sent as the last application left it; full
        # history: as it arrived, so a message removed or cleared at an earlier call comes back
        changes = tuple((o, a) for o, a in zip(view.origin, plan.actions)
                        if o is not None and a != was(o) and (full or a != "keep"))
    sent = view
    if triggered:
        sent = result_view(view, plan)
        if not full:
            sent = sent.with_state(dict(plan.state))
    elif plan.state != view.state and not full:
        sent = view.with_state(dict(plan.state))
    return Step(plan, view, sent, triggered, changes)


@dataclass(frozen=True, slots=True)
class Compression:
    """One application of a strategy that made a plan: did it change anything, the whole prompt's
    tokens before and after, and how many original messages it removed. A replay gives ``call``
    (the model call it ran before); a live session gives when (``applied_at``), at which ``turn``
    (user messages so far), under which ``strategy``, the prompt's messages before and after, and
    the history ``seq`` of what it summarized, dropped or cleared."""

    triggered: bool
    tokens_before: int
    tokens_after: int
    messages_removed: int = 0
    call: int | None = None
    applied_at: datetime | None = None
    turn: int | None = None
    strategy: str = ""
    messages_before: int | None = None
    messages_after: int | None = None
    summarized: tuple[int, ...] = ()
    dropped: tuple[int, ...] = ()
    cleared: tuple[int, ...] = ()

    @property
    def tokens_saved(self) -> int:
        """Tokens the application saved."""
        return self.tokens_before - self.tokens_after

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: the fields this record has (a replay's or a session's) and tokens_saved."""
        live = self.applied_at is not None
        out: dict[str, Any] = {}
        for k, v in asdict(self).items():
            if v is None or (not live and k in _SESSION_ONLY):
                continue
            out[k] = v.isoformat() if isinstance(v, datetime) else list(v) if isinstance(v, tuple) else v
        out["tokens_saved"] = self.tokens_saved
        return out


_SESSION_ONLY = frozenset({"strategy", "summarized", "dropped", "cleared"})


__all__ = ["Compression", "FULL_HISTORY", "KEPT_HISTORY", "Step", "as_arrived", "before_call", "due", "works_on"]
