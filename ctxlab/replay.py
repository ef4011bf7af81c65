"""Replay a conversation turn by turn under a strategy: what the model saw at each turn.

A strategy is applied where an agent applies it: at the start of each turn, the moment the t-th
user message arrives and before the agent runs (never inside a turn). The context at turn t is
what the strategy left at turn t-1 (its output, in order, summaries included) plus the messages
that arrived since, up to and including the new user message. The strategy's ``state`` (a running
summary, what it already folded) is carried from turn to turn, and a message removed at turn t
never comes back.

``replay(conv, "summarize", Budget(16_000))`` returns a ``Replay``: a matrix of actions (turns x
original messages), tokens before and after per turn, the plan of each turn, the compression
history of the last 10 turns, and totals.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from .errors import CtxlabError
from .conversation import Conversation, Message
from .segments import segment
from .strategies.base import Strategy, get_strategy
from .strategies.plan import REMOVED, Plan
from .strategies.view import Budget, View, auto_facts, make_view
from .tokens import TokenCounter

FUTURE = "future"
HISTORY_LIMIT = 10


@dataclass(frozen=True, slots=True)
class Compression:
    """One application of the strategy: at ``turn``, did it remove, clear, truncate or summarize
    anything (``triggered``), the whole prompt before and after, and how many original messages
    it removed (dropped or folded into a summary)."""

    turn: int
    triggered: bool
    tokens_before: int
    tokens_after: int
    tokens_saved: int
    messages_removed: int


@dataclass(frozen=True, eq=False)
class Replay:
    """A strategy replayed over a conversation, one application per user turn.

    ``matrix[t][i]`` is what happened to original message ``i`` at turn ``t``: the plan's action
    (keep, drop, summarize, clear, truncate) when the message was in the context; for a message
    removed at an earlier turn, the action that removed it, carried on (``removed_at[i]`` is that
    turn, so a view can grey it out); ``"future"`` for a message that had not arrived yet.
    ``turn_starts[t]`` is the index of turn t's user message; ``turn_tokens[t]`` the whole prompt
    (before, after) the strategy; ``inputs[t]`` the original index of each message the strategy
    read at turn t (None for a summary it inserted earlier), so ``plans[t].actions[k]`` is about
    message ``inputs[t][k]``; ``origins[t]`` the same for each message of ``context_at(t)``.
    ``history`` keeps the last 10 applications; the totals cover all of them.
    """

    strategy: str
    budget: Budget
    turn_starts: tuple[int, ...]
    matrix: tuple[tuple[str, ...], ...]
    removed_at: tuple[int | None, ...]
    turn_tokens: tuple[tuple[int, int], ...]
    plans: tuple[Plan, ...]
    inputs: tuple[tuple[int | None, ...], ...]
    origins: tuple[tuple[int | None, ...], ...]
    history: tuple[Compression, ...]
    times_triggered: int
    tokens_saved: int
    messages_removed: int

    @property
    def turns(self) -> int:
        """How many turns (applications) were replayed."""
        return len(self.plans)

    def _turn(self, t: int) -> int:
        if not -self.turns <= t < self.turns:
            raise CtxlabError(f"turn {t} is not in this replay", where="turn",
                              hint=f"Turns go from 0 to {self.turns - 1}" if self.turns else "It has no user turn")
        return t % self.turns

    def context_at(self, t: int) -> tuple[Message, ...]:
        """The messages the model saw at turn ``t`` (what the strategy left, summaries included)."""
        return self.plans[self._turn(t)].messages

    def plan_at(self, t: int) -> Plan:
        """The plan of turn ``t``."""
        return self.plans[self._turn(t)]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (matrix, tokens, history, totals; not the messages)."""
        return {"strategy": self.strategy, "budget": self.budget.to_dict(), "turn_starts": list(self.turn_starts),
                "matrix": [list(row) for row in self.matrix], "removed_at": list(self.removed_at),
                "turn_tokens": [list(pair) for pair in self.turn_tokens],
                "history": [{"turn": h.turn, "triggered": h.triggered, "tokens_before": h.tokens_before,
                             "tokens_after": h.tokens_after, "tokens_saved": h.tokens_saved,
                             "messages_removed": h.messages_removed} for h in self.history],
                "times_triggered": self.times_triggered, "tokens_saved": self.tokens_saved,
                "messages_removed": self.messages_removed}


def _source(source: Conversation | View | Sequence[Message], model: str | None,
            pins: Iterable[int]) -> tuple[tuple[Message, ...], TokenCounter, tuple[str, ...], frozenset[int]]:
    """Messages, counter, facts and pins of what was passed in."""
    pins = frozenset(pins)
    if isinstance(source, View):
        return source.messages, source.counter, source.facts, pins | source.pins
    if isinstance(source, Conversation):
        messages, facts = source.messages, source.facts
        model = model or source.model
    else:
        messages, facts = tuple(source), ()
    return messages, TokenCounter(model), tuple(facts or auto_facts(messages)), pins


def _record(t: int, plan: Plan, origin: Sequence[int | None]) -> Compression:
    """What one application did."""
    removed = sum(1 for k, a in enumerate(plan.actions) if a in REMOVED and origin[k] is not None)
    triggered = any(a != "keep" for a in plan.actions)
    return Compression(t, triggered, plan.tokens_before, plan.tokens_after, plan.saved, removed)


def replay(source: Conversation | View | Sequence[Message], strategy: Strategy | str, budget: Budget, *,
           model: str | None = None, pins: Iterable[int] = ()) -> Replay:
    """Apply ``strategy`` at the start of every user turn of ``source``, each time to what it
    left before plus what arrived since, carrying its state (see the module docstring).

    ``source`` is a Conversation, a message list, or a View (its counter, facts and pins are used).
    ``pins`` are original message indexes; ``model`` picks the tokenizer (default: the
    conversation's model). A conversation without a user message gives an empty replay.
    """
    strategy = get_strategy(strategy) if isinstance(strategy, str) else strategy
    messages, counter, facts, pins = _source(source, model, pins)
    bad = sorted(p for p in pins if not 0 <= p < len(messages))
    if bad:
        raise CtxlabError(f"pinned index {bad[0]} is not a message of this conversation", where="pins",
                          hint=f"Pin indexes from 0 to {len(messages) - 1}")
    starts = tuple(s for s, _ in segment(messages).turns)
    context: list[Message] = []
    origin: list[int | None] = []
    state: Mapping[str, Any] = {}
    row = [FUTURE] * len(messages)
    removed_at: list[int | None] = [None] * len(messages)
    matrix, plans, inputs, origins, records = [], [], [], [], []
    arrived = 0
    for t, start in enumerate(starts):
        context += messages[arrived:start + 1]
        origin += range(arrived, start + 1)
        arrived = start + 1
        view = make_view(context, counter=counter, facts=facts, origin=origin, state=state,
                         pins=[k for k, o in enumerate(origin) if o in pins])
        plan = strategy.apply(view, budget)
        row = list(row)
        for k, o in enumerate(origin):
            if o is not None:
                row[o] = plan.actions[k]
                if plan.actions[k] in REMOVED:
                    removed_at[o] = t
        records.append(_record(t, plan, origin))
        matrix.append(tuple(row))
        plans.append(plan)
        inputs.append(tuple(origin))
        origin = [origin[k] if k is not None else None for k in plan.origin]
        context, state = list(plan.messages), dict(plan.state)
        origins.append(tuple(origin))
    return Replay(plans[0].strategy if plans else strategy.name, budget, starts, tuple(matrix), tuple(removed_at),
                  tuple((p.tokens_before, p.tokens_after) for p in plans), tuple(plans), tuple(inputs), tuple(origins),
                  tuple(records[-HISTORY_LIMIT:]), sum(r.triggered for r in records), sum(p.saved for p in plans),
                  sum(r.messages_removed for r in records))
