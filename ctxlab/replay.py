"""Replay a conversation call by call under a strategy: what the model saw at each model call.

An agent calls the model once per step: user message, call, tool results, call, ..., answer.
Every assistant message of a trace is one model call; when the trace does not end with an
assistant message, one more call is *pending* (the call the agent is about to make). The prompt
of call c is what the strategy left at its last application plus every message that arrived
since. Where the strategy runs is its ``apply_at`` parameter:

* ``every_call`` (the default): before every model call, as LangChain's agent middleware,
  Anthropic context editing and OpenHands condensers do;
* ``turn_start``: only when a user message has arrived (a trim node right after START in a
  LangGraph graph): it never cuts inside a turn, so a long turn can overflow.

The strategy's ``state`` (a running summary, what it already folded) carries from application to
application, and a message removed at call c never comes back. The replay extends one view
message by message (``View.append``) instead of rebuilding it, and keeps per call only figures and
the changes of state per message, so memory grows with the messages, not with calls x messages;
the full prompt of a call is kept while the total stays small and recomputed on demand past it.

``replay(conv, "summarize", Budget(16_000))`` returns a ``Replay``: one ``Call`` per model call
(prompt tokens before and after the strategy, over the limit or not, what it removed), the state
of every message at every call (``cell``, ``matrix``, ``codes``), the prompt of any call
(``context_at``), and totals: ``fits`` is true only when every call fits.
"""
from __future__ import annotations

import dataclasses
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from .conversation import FINAL, Conversation, Message, Usage, starts_turn
from .errors import CtxlabError
from .i18n import T
from .segments import segment
from .strategies.base import APPLY_AT, Strategy, get_strategy
from .strategies.plan import REMOVED, Plan
from .strategies.step import FULL_HISTORY, Compression, as_arrived, before_call, due, works_on
from .strategies.view import Budget, View, auto_facts, make_view
from .tokens import TokenCounter

FUTURE = "future"
HISTORY_LIMIT = 10
DETAIL_LIMIT = 400_000
"""Prompts are kept (for ``context_at``) while what they hold adds up to at most this many entries:
one per call whose prompt is a snapshot of a grown view (a log and a length), the messages of the
plan's input and output for a call the strategy planned; past it a call's prompt is recomputed when
asked for."""

Observer = Callable[["Call", View], None]


def observers(*fns: Observer) -> Observer:
    """One observer that hands every call to each of ``fns`` in turn (several measures, one pass)."""
    def observe(call: "Call", view: View) -> None:
        for fn in fns:
            fn(call, view)
    return observe


@dataclass(frozen=True, slots=True)
class Call:
    """One model call. ``number`` counts calls from 0; ``index`` is the assistant message it
    produced (``len(messages)`` for the pending call); ``turn`` the user turn it belongs to (-1
    before the first user message). ``applied``: the strategy ran before it; ``triggered``: it
    changed something. ``tokens_before`` / ``tokens_after`` are whole prompts (messages, tool
    definitions, reply priming) before and after the strategy; ``over_limit`` when the prompt sent
    exceeds the budget's prompt limit. ``shared_tokens`` are the message tokens of the prefix this
    prompt shares with the previous call's, ``extends_previous`` says the previous prompt is a
    prefix of this one (what a prompt cache reads). ``reported`` is the usage the trace logged for
    this call (a production trace's billed figures; None when it has none): it is what the
    original prompt cost, not the prompt the strategy leaves."""

    number: int
    index: int
    turn: int
    applied: bool
    triggered: bool
    tokens_before: int
    tokens_after: int
    over_limit: bool
    messages: int
    messages_removed: int
    shared_tokens: int
    extends_previous: bool
    pending: bool = False
    reported: Usage | None = None
    question_lost: bool = False
    """The prompt sent lacks the newest user message that has arrived (the model cannot see the question)."""
    task_lost: bool = False
    """The prompt sent lacks the task of a coding agent's run (its first user message, ``ctxlab_task``)."""
    tools: Any = None
    """The tools sent at this call (a ``tools_per_call.ToolsAt``) when the replay was given them per call;
    None: the budget's ``tools_tokens`` at every call."""

    @property
    def saved(self) -> int:
        """Tokens the strategy removed from this call's prompt."""
        return self.tokens_before - self.tokens_after

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"call": self.number, "index": self.index, "turn": self.turn, "pending": self.pending,
                "applied": self.applied, "triggered": self.triggered, "prompt_tokens": self.tokens_after,
                "tokens_before": self.tokens_before, "over_limit": self.over_limit, "messages": self.messages,
                "messages_removed": self.messages_removed,
                **({} if self.reported is None else {"reported_prompt_tokens": self.reported.prompt_tokens,
                                                     "reported_cached_tokens": self.reported.cached_tokens}),
                **({"question_lost": True} if self.question_lost else {}),
                **({"task_lost": True} if self.task_lost else {}),
                **({} if self.tools is None else self.tools.to_dict())}


@dataclass(frozen=True, slots=True)
class Prompt:
    """The prompt of one call: its messages, the original index of each (None for an inserted
    summary), their tokens, and the plan made before it (None when the strategy did not run)."""

    messages: tuple[Message, ...]
    origins: tuple[int | None, ...]
    tokens: tuple[int, ...]
    plan: Plan | None
    inputs: tuple[int | None, ...] = ()


@dataclass(frozen=True, eq=False)
class Replay:
    """A strategy replayed over a conversation, call by call (see the module docstring).

    ``calls`` has one ``Call`` per model call. ``arrived[i]`` is the first call whose prompt held
    message i (None if none did: the last assistant message is only an output); ``removed_at[i]``
    the call before which it was dropped or folded, and ``events`` every change of a message's
    state (call, message, action), so ``cell(c, i)`` says what message i was at call c: ``future``,
    ``keep``, ``clear`` / ``truncate`` (sent as a replaced copy), or the action that removed it.
    """

    strategy: str
    budget: Budget
    apply_at: str
    size: int
    turn_starts: tuple[int, ...]
    calls: tuple[Call, ...]
    arrived: tuple[int | None, ...]
    removed_at: tuple[int | None, ...]
    events: tuple[tuple[int, int, str], ...]
    history: tuple[Compression, ...]
    _prompts: dict[int, "Prompt | _Kept"] = field(repr=False)
    _rerun: Callable[[int], Prompt] = field(repr=False)
    _walk: Callable[[Observer], None] = field(repr=False)

    # ------------------------------------------------------------------ totals
    @property
    def turns(self) -> int:
        """How many user turns the conversation has."""
        return len(self.turn_starts)

    @property
    def calls_over_limit(self) -> int:
        """How many calls sent a prompt over the budget's limit."""
        return sum(c.over_limit for c in self.calls)

    @property
    def fits(self) -> bool:
        """True only when every call's prompt fits the limit."""
        return not any(c.over_limit for c in self.calls)

    @property
    def calls_without_question(self) -> int:
        """How many calls sent a prompt without the newest user message (a fit that hides a loss)."""
        return sum(c.question_lost for c in self.calls)

    @property
    def calls_without_task(self) -> int:
        """How many calls sent a prompt without the run's task (every strategy but a baseline keeps it)."""
        return sum(c.task_lost for c in self.calls)

    @property
    def warnings(self) -> list[str]:
        """What a user must see beside ``fits``: calls whose prompt lost the question or the task."""
        out = []
        if self.calls_without_question:
            out.append(T("{strategy} sent {n:,} of {calls:,} calls without the newest user message: they fit, but "
                         "the model could not see the question", strategy=self.strategy,
                         n=self.calls_without_question, calls=len(self.calls)))
        if self.calls_without_task:
            out.append(T("{strategy} sent {n:,} of {calls:,} calls without the run's task (its first user "
                         "message), which every other strategy keeps", strategy=self.strategy,
                         n=self.calls_without_task, calls=len(self.calls)))
        return out

    @property
    def worst(self) -> Call | None:
        """The call with the largest prompt."""
        return max(self.calls, key=lambda c: (c.tokens_after, -c.number)) if self.calls else None

    @property
    def times_triggered(self) -> int:
        """Applications that changed something."""
        return sum(c.triggered for c in self.calls)

    @property
    def applications(self) -> int:
        """How many times the strategy ran."""
        return sum(c.applied for c in self.calls)

    @property
    def tokens_saved(self) -> int:
        """Tokens removed over all applications."""
        return sum(c.saved for c in self.calls if c.applied)

    @property
    def messages_removed(self) -> int:
        """Original messages removed over all applications."""
        return sum(c.messages_removed for c in self.calls)

    # ------------------------------------------------------------------ cells
    def _call(self, c: int) -> int:
        if not -len(self.calls) <= c < len(self.calls):
            raise CtxlabError(f"call {c} is not in this replay", where="call",
                              hint=f"Calls go from 0 to {len(self.calls) - 1}" if self.calls else "It has no model call")
        return c % len(self.calls)

    def codes(self, order: Sequence[str], rows: Sequence[int] | None = None) -> "Any":
        """An int8 array (calls x messages; only ``rows`` when given) of each cell's position in
        ``order`` (``future``, ``keep``, ``clear``, ...), built from the events in linear time per row."""
        import numpy as np
        rows = list(range(len(self.calls))) if rows is None else list(rows)
        index = {a: k for k, a in enumerate(order)}
        out = np.full((len(rows), self.size), index[FUTURE], dtype=np.int8)
        state = np.full(self.size, index[FUTURE], dtype=np.int8)
        arrivals = sorted((a, i) for i, a in enumerate(self.arrived) if a is not None)
        ev, ar, at = 0, 0, 0
        for c in range(len(self.calls)):
            while ar < len(arrivals) and arrivals[ar][0] <= c:
                state[arrivals[ar][1]] = index["keep"]
                ar += 1
            while ev < len(self.events) and self.events[ev][0] <= c:
                _, i, a = self.events[ev]
                state[i] = index.get(a, index.get("removed", 0))
                ev += 1
            if at < len(rows) and rows[at] == c:
                out[at] = state
                at += 1
                if at == len(rows):
                    break
        return out

    def cell(self, c: int, i: int) -> str:
        """What message ``i`` was at call ``c`` (see the class docstring)."""
        c = self._call(c)
        a = self.arrived[i]
        if a is None or a > c:
            return FUTURE
        state = "keep"
        for when, k, action in self.events:
            if when > c:
                break
            if k == i:
                state = action
        return state

    @property
    def matrix(self) -> tuple[tuple[str, ...], ...]:
        """Every cell, calls x messages (quadratic: for small replays and tests; figures use ``codes``)."""
        order = (FUTURE, "keep", "drop", "summarize", "clear", "truncate")
        codes = self.codes(order)
        return tuple(tuple(order[k] for k in row) for row in codes.tolist())

    # ------------------------------------------------------------------ prompts
    def prompt(self, c: int) -> Prompt:
        """The prompt of call ``c`` (kept, or recomputed by replaying up to it)."""
        c = self._call(c)
        found = self._prompts.get(c)
        if not isinstance(found, Prompt):
            found = self._prompts[c] = self._rerun(c) if found is None else found.prompt()
        return found

    def kept_prompt(self, c: int) -> Prompt | None:
        """The prompt of call ``c`` if the replay kept it (None past ``DETAIL_LIMIT``: see ``prompt``)."""
        found = self._prompts.get(c)
        if isinstance(found, _Kept):
            found = self._prompts[c] = found.prompt()
        return found

    def walk(self, observe: Observer) -> None:
        """Replay again, calling ``observe(call, prompt_view)`` at every call (one pass, nothing kept)."""
        self._walk(observe)

    def context_at(self, c: int) -> tuple[Message, ...]:
        """The messages the model saw at call ``c``."""
        return self.prompt(c).messages

    def plan_at(self, c: int) -> Plan | None:
        """The plan made before call ``c`` (None when the strategy did not run before it, or ran
        below its trigger: ``Strategy.quick_idle`` said it would keep everything)."""
        return self.prompt(c).plan

    def origins_at(self, c: int) -> tuple[int | None, ...]:
        """The original index of each message of ``context_at(c)`` (None for a summary)."""
        return self.prompt(c).origins

    def calls_of_turn(self, t: int) -> list[Call]:
        """The calls of user turn ``t``."""
        return [c for c in self.calls if c.turn == t]

    def to_dict(self, *, matrix: bool = False) -> dict[str, Any]:
        """JSON-ready summary: calls, fit, totals, history (the state matrix only when asked)."""
        worst = self.worst
        out = {"strategy": self.strategy, "apply_at": self.apply_at, "budget": self.budget.to_dict(),
               "turn_starts": list(self.turn_starts), "calls": [c.to_dict() for c in self.calls],
               "calls_over_limit": self.calls_over_limit, "fits": self.fits,
               "over_limit_calls": [c.number for c in self.calls if c.over_limit],
               "worst_call": None if worst is None else {"call": worst.number, "index": worst.index,
                                                          "prompt_tokens": worst.tokens_after},
               "removed_at": list(self.removed_at),
               "history": [h.to_dict() for h in self.history],
               "applications": self.applications, "times_triggered": self.times_triggered,
               "tokens_saved": self.tokens_saved, "messages_removed": self.messages_removed}
        if self.warnings:
            out.update(calls_without_question=self.calls_without_question, calls_without_task=self.calls_without_task,
                       warnings=list(self.warnings))
        if matrix:
            out["matrix"] = [list(row) for row in self.matrix]
        return out


# ---------------------------------------------------------------------- the walk


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


def call_points(messages: Sequence[Message]) -> list[int]:
    """The index of every model call: each assistant message, plus ``len(messages)`` when the
    conversation does not end with an assistant message (the pending call), unless the run ended
    there (a submission or an exit the reader marked ``FINAL``: no call came after it)."""
    points = [i for i, m in enumerate(messages) if m.role == "assistant"]
    if messages and messages[-1].role != "assistant" and not messages[-1].extra.get(FINAL):
        points.append(len(messages))
    return points


def _turn_index(starts: Sequence[int]) -> Callable[[int], int]:
    from bisect import bisect_right
    return lambda i: bisect_right(starts, i) - 1


def _shared(prev: Sequence[Message] | None, cur: Sequence[Message], tokens: Sequence[int]) -> tuple[int, bool]:
    """Message tokens of the common prefix of two prompts, and whether ``prev`` is all of it."""
    if prev is None:
        return 0, False
    k, shared, n = 0, 0, min(len(prev), len(cur))
    while k < n and (prev[k] is cur[k] or prev[k] == cur[k]):
        shared += tokens[k]
        k += 1
    return shared, k == len(prev)


_WHOLE: "OrderedDict[tuple[int, str | None, tuple[str, ...]], tuple[tuple[Message, ...], View]]" = OrderedDict()
WHOLE_CACHE = 2
"""Conversations whose whole view (counts, categories, fact masks) replays reuse: a sweep or a
comparison replays one conversation once per strategy or grid point before the next, and finds its
facts once. Kept small: each holds a view as long as its conversation."""


def whole_view(messages: tuple[Message, ...], counter: TokenCounter, facts: tuple[str, ...]) -> View:
    """The view of all of ``messages`` (no pins), kept for the last few conversations replayed: the
    per-call replay reads each message's counts and facts from it instead of finding them again."""
    key = (id(messages), counter.model, facts)
    hit = _WHOLE.get(key)
    if hit is not None and hit[0] is messages:
        _WHOLE.move_to_end(key)
        return hit[1]
    view = make_view(messages, counter=counter, facts=facts)
    _WHOLE[key] = (messages, view)
    while len(_WHOLE) > WHOLE_CACHE:
        _WHOLE.popitem(last=False)
    return view


def _snapshot(view: View) -> View:
    """A view of the same messages that holds none of what ``view`` derived (its tuples, memo):
    kept per call, it costs a few references while its log is shared."""
    log = view._log
    if log is None:
        return view
    return View._over(log, len(view), view.counter, view.facts, view.pins, view.state)


@dataclass(frozen=True, slots=True)
class _Kept:
    """What a replay keeps of a call: the prompt sent, the plan made, the view it was made on."""

    sent: View
    plan: Plan | None
    given: View

    def prompt(self) -> Prompt:
        """The Prompt (its tuples built now)."""
        return Prompt(self.sent.messages, self.sent.origin, self.sent.tokens, self.plan, self.given.origin)


class _Walk:
    """The state of one replay as it steps call by call."""

    def __init__(self, messages: tuple[Message, ...], counter: TokenCounter, facts: tuple[str, ...],
                 pins: frozenset[int], strategy: Strategy, budget: Budget, apply_at: str,
                 whole: View | None = None, tools: Sequence[Any] | None = None) -> None:
        self.messages, self.counter, self.facts, self.pins = messages, counter, facts, pins
        self.strategy, self.budget, self.apply_at = strategy, budget, apply_at
        self.works_on = works_on(strategy)
        self.starts = tuple(s for s, _ in segment(messages).turns)
        self.turn_of = _turn_index(self.starts)
        self.head = budget.tools_tokens + budget.reply_priming
        self.whole = whole if whole is not None else whole_view(messages, counter, facts)
        self.tools = tools

    def _budget_at(self, c: int) -> tuple[Budget, int, Any]:
        """The budget of call ``c`` (its tools' tokens in it), the prompt's fixed head, and its ToolsAt."""
        if self.tools is None:
            return self.budget, self.head, None
        at = self.tools[c]
        return dataclasses.replace(self.budget, tools_tokens=at.tokens), at.tokens + self.budget.reply_priming, at

    def run(self, observe: Observer | None = None, stop: int | None = None,
            keep: bool = True) -> tuple[list[Call], list[Compression], dict[int, "_Kept"], Prompt | None,
                                        list[int | None], list[int | None], list[tuple[int, int, str]]]:
        """Step through every call (up to ``stop``); returns what a Replay holds."""
        messages, n = self.messages, len(self.messages)
        arrived: list[int | None] = [None] * n
        removed_at: list[int | None] = [None] * n
        state_now: list[str] = ["keep"] * n
        events: list[tuple[int, int, str]] = []
        calls: list[Call] = []
        records: list[Compression] = []
        prompts: dict[int, _Kept] = {}
        kept_entries = 0
        base: View | None = None  # what arrivals extend: the prompt left (kept) or the whole history (full)
        full = self.works_on == FULL_HISTORY
        previous: tuple[str, ...] | None = None  # full history: the actions of the plan state_now holds
        upto = 0
        prev: View | None = None  # the previous call's prompt
        prev_changed = False  # the previous call's prompt was not its history as it arrived
        user_since = True  # a run starts a turn, even before its first user message
        question: int | None = None  # the newest user message arrived, and the run's task
        task: int | None = None
        for c, point in enumerate(call_points(messages)):
            new = messages[upto:point]
            user_since = user_since or any(starts_turn(m) for m in new)
            question, task = _question_and_task(new, upto, question, task)
            if base is None:
                at = slice(upto, point)
                base = View(new, self.whole.tokens[at], self.whole.categories[at], segment(new), self.counter,
                            self.facts, self.whole.fact_masks[at], frozenset(i for i in range(upto, point)
                                                                              if i in self.pins),
                            tuple(range(upto, point)))
            elif new:
                base = base._grow(new, tuple(range(upto, point)),
                                  frozenset(len(base) + k for k, i in enumerate(range(upto, point)) if i in self.pins),
                                  self.whole)
            view = base
            for i in range(upto, point):
                arrived[i] = c
            upto = point
            apply = due(self.apply_at, user_since)
            budget, head, tools_at = self._budget_at(c)
            before = view.total + head
            given = view
            if apply or full:
                step = before_call(self.strategy, view, budget, state_now.__getitem__, previous=previous) \
                    if apply else as_arrived(view, state_now.__getitem__)
                plan, view, triggered = step.plan, step.sent, step.triggered
                previous = plan.actions if full and plan is not None else None  # what state_now now holds
                for o, a in step.changes:
                    if a in REMOVED:
                        removed_at[o] = c
                    state_now[o] = a
                    events.append((c, o, a))
                removed = step.removed
                if apply and len(given):
                    user_since = False
                if plan is not None:
                    records.append(Compression(triggered, plan.tokens_before, plan.tokens_after, removed, call=c))
            else:
                plan, triggered, removed = None, False, 0
            if not full:
                base = view
            after = view.total + head
            if tools_at is not None and tools_at.changed:  # a new tool list rewrites the prompt's start
                shared, extends = 0, False
            elif triggered or prev is None or prev_changed:
                shared, extends = (0, False) if prev is None else _shared(prev.messages, view.messages, view.tokens)
            else:  # nothing changed: the previous prompt is a prefix of this one
                shared, extends = prev.total, True
            prev_changed = full and triggered
            call = Call(c, point, self.turn_of(point), bool(apply and len(view)), triggered, before, after,
                        after > self.budget.prompt_limit, len(view), removed, shared, extends,
                        point == n, messages[point].usage if point < n else None,
                        question is not None and state_now[question] in REMOVED,  # as sent now: on the whole
                        task is not None and state_now[task] in REMOVED, tools_at)  # history it can come back
            calls.append(call)
            if observe is not None:
                observe(call, view)
            if stop == c:
                return calls, records, prompts, _Kept(view, plan, given).prompt(), arrived, removed_at, events
            cost = 1 if plan is None else len(view) + len(given)  # a plan holds tuples as long as its input
            if keep and stop is None and kept_entries + cost <= DETAIL_LIMIT:
                prompts[c] = _Kept(_snapshot(view), plan, _snapshot(given))
                kept_entries += cost
            prev = view
        return calls, records, prompts, None, arrived, removed_at, events


def _question_and_task(new: Sequence[Message], start: int, question: int | None,
                       task: int | None) -> tuple[int | None, int | None]:
    """The newest user message and the task once ``new`` (from index ``start``) has arrived."""
    for k, m in enumerate(new):
        if m.role == "user":
            question = start + k
            if task is None and m.extra.get("ctxlab_task"):
                task = start + k
    return question, task


def replay(source: Conversation | View | Sequence[Message], strategy: Strategy | str, budget: Budget, *,
           model: str | None = None, pins: Iterable[int] = (), apply_at: str | None = None,
           observe: Observer | None = None, tools: Sequence[Any] | None = None) -> Replay:
    """Replay ``strategy`` over ``source`` call by call (see the module docstring).

    ``source`` is a Conversation, a message list, or a View (its counter, facts and pins are used).
    ``pins`` are original message indexes; ``model`` picks the tokenizer (default: the
    conversation's model). ``apply_at`` overrides the strategy's own. ``observe(call, prompt_view)``
    is called at every call with the prompt sent (a View whose ``origin`` holds original indexes),
    so a measure can read every prompt in the same pass without keeping them. ``tools`` (from
    ``ctxlab.tools_per_call.tools_per_call``, one per call) gives the tool definitions sent at each call:
    their tokens replace the budget's ``tools_tokens`` in that call's prompt and in the budget the
    strategy plans with."""
    strategy = get_strategy(strategy) if isinstance(strategy, str) else strategy
    where = apply_at or getattr(strategy, "apply_at", "every_call")
    if where not in APPLY_AT:
        raise CtxlabError(f"apply_at must be one of {', '.join(APPLY_AT)}, got {where!r}", where="apply_at",
                          hint="every_call: before every model call; turn_start: when a user message arrives")
    messages, counter, facts, pins = _source(source, model, pins)
    bad = sorted(p for p in pins if not 0 <= p < len(messages))
    if bad:
        raise CtxlabError(f"pinned index {bad[0]} is not a message of this conversation", where="pins",
                          hint=f"Pin indexes from 0 to {len(messages) - 1}")
    if tools is not None and len(tools) != len(call_points(messages)):
        raise CtxlabError(f"tools per call has {len(tools)} entries for {len(call_points(messages))} model calls",
                          where="tools", hint="Make them with ctxlab.tools_per_call.tools_per_call(conv, mode)")
    walk = _Walk(messages, counter, facts, pins, strategy, budget, where,
                 source if isinstance(source, View) else None, tools)
    calls, records, prompts, _, arrived, removed_at, events = walk.run(observe)

    def rerun(c: int) -> Prompt:
        found = walk.run(stop=c, keep=False)[3]
        assert found is not None
        return found

    def again(fn: Observer) -> None:
        walk.run(fn, keep=False)

    name = strategy.name if not hasattr(strategy, "steps") else " >> ".join(s.name for s in strategy.steps)
    return Replay(name, budget, where, len(messages), walk.starts, tuple(calls), tuple(arrived),
                  tuple(removed_at), tuple(events), tuple(records[-HISTORY_LIMIT:]), prompts, rerun, again)


__all__ = ["APPLY_AT", "Call", "Compression", "FUTURE", "Prompt", "Replay", "call_points", "observers",
           "replay"]
