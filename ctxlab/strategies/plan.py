"""A Plan: what a strategy decided for every message, why, and what results.

Strategies fill two lists (an action and a reason per message) plus any replacements (cleared
or truncated messages) and inserted summaries, then call ``make_plan``. ``settle`` first makes
the decisions safe for every provider, by construction:

1. the first system prompt, the newest user message and a compaction summary a trace carries
   (``View.compactions``) are always kept;
2. an atomic group (a tool call and all of its results) is kept or removed whole;
3. a turn whose user message is removed is removed whole, so no assistant reply is left
   answering nothing and no two assistant turns meet;
4. a user message is never removed to keep turns alternating: when nothing of its turn is kept,
   the output merges it with the next kept user message into one (some providers and chat
   templates reject two user messages in a row), and the plan says so in a warning.

Each extra removal says which rule caused it. Settling only ever removes more, so a plan that
fitted the budget still fits.
"""
from __future__ import annotations

from bisect import bisect_left
from collections import deque
from dataclasses import dataclass, field
from itertools import compress, repeat
from functools import reduce
from operator import attrgetter, or_
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..i18n import T
from ..conversation import Message
from ..tokens import CATEGORIES
from .view import MEMO_EXTENDERS, Budget, View, fact_mask, message_text, shared_memo

ACTIONS = ("keep", "drop", "summarize", "clear", "truncate")
OVER_BUDGET = "the result needs "
"""How the warning a plan adds when its result is over the budget begins (a page that already says
the result does not fit leaves it out)."""
REMOVED = ("drop", "summarize")
SUMMARY = "summary"


@dataclass(frozen=True, slots=True)
class Decision:
    """What happens to message ``index`` and why."""

    index: int
    action: str
    reason: str


@dataclass(frozen=True, slots=True)
class Insertion:
    """A message the plan inserts (a summary) before view index ``position``; ``covers`` lists the
    indexes it stands for."""

    position: int
    message: Message
    covers: tuple[int, ...] = ()


@dataclass(frozen=True, eq=False)
class Plan:
    """The outcome of one strategy on one view and budget.

    ``actions`` / ``reasons`` have one entry per input message; ``messages`` is the result, with
    ``origin`` giving the input index of each (None for inserted summaries). Tokens before and
    after are whole prompts (messages, tool definitions, reply priming), also split by category.
    """

    strategy: str
    params: Mapping[str, Any]
    budget: Budget
    actions: tuple[str, ...]
    reasons: tuple[str, ...]
    messages: tuple[Message, ...]
    origin: tuple[int | None, ...]
    output_tokens: tuple[int, ...]
    before: Mapping[str, int]
    after: Mapping[str, int]
    warnings: tuple[str, ...] = ()
    stats: Mapping[str, Any] = field(default_factory=dict)
    state: Mapping[str, Any] = field(default_factory=dict)
    retention: float | None = None
    facts_kept: tuple[str, ...] = ()
    facts_lost: tuple[str, ...] = ()
    idle: str | None = None
    notes: tuple[str, ...] = ()
    """What the plan did to stay valid that is not a problem (user messages merged, ...)."""
    edited_from: tuple[tuple[str, ...], tuple[int, ...]] | None = field(default=None, repr=False)
    """When the plan was made from the plan of the view it grew from (``incremental.replan.extend``):
    that plan's ``actions`` and the input indexes whose decision may differ from it (the others hold
    the same action; new messages past it are kept). Lets a replay list what changed since the
    previous call without comparing every message. None: made from scratch."""

    @property
    def tokens_before(self) -> int:
        """The whole prompt before the strategy."""
        return sum(self.before.values())

    @property
    def tokens_after(self) -> int:
        """The whole prompt after the strategy."""
        return sum(self.after.values())

    @property
    def saved(self) -> int:
        """Tokens saved."""
        return self.tokens_before - self.tokens_after

    @property
    def removed(self) -> int:
        """Input messages removed (dropped or folded into a summary)."""
        return sum(a in _REMOVED for a in self.actions)

    @property
    def fits(self) -> bool:
        """Whether the result fits the budget's prompt limit."""
        return self.tokens_after <= self.budget.prompt_limit

    def decisions(self) -> list[Decision]:
        """One Decision per input message."""
        return [Decision(i, a, r) for i, (a, r) in enumerate(zip(self.actions, self.reasons))]

    def count(self, action: str) -> int:
        """How many input messages got ``action``."""
        return self.actions.count(action)

    def to_dict(self, *, lazy: bool = False) -> dict[str, Any]:
        """JSON-ready summary (without the messages; the CLI adds them in the format asked).
        ``lazy``: the decisions as a generator of dicts, which ``formats._json.iter_dumps``
        writes one by one (the CLI: half a million decision dicts are never alive together)."""
        decisions = ({"index": i, "action": a, "reason": r} for i, (a, r) in enumerate(zip(self.actions, self.reasons)))
        return {
            "strategy": self.strategy, "params": dict(self.params), "budget": self.budget.to_dict(),
            "before": {"tokens": self.tokens_before, "messages": len(self.actions), "by_category": dict(self.before)},
            "after": {"tokens": self.tokens_after, "messages": len(self.messages), "by_category": dict(self.after)},
            "saved": self.saved, "fits": self.fits, "idle": self.idle,
            "decisions": decisions if lazy else list(decisions),
            "warnings": list(self.warnings), "notes": list(self.notes), "stats": dict(self.stats),
            "retention": self.retention,
            "facts_lost": list(self.facts_lost),
        }


_REMOVED = frozenset(REMOVED)
_ROLE = attrgetter("role")
MEMO_EXTENDERS["merged_users"] = lambda old, new, known: dict(known)  # by origins below the old length: still right


def settle(view: View, actions: list[str], reasons: list[str]) -> None:
    """Make decisions safe for every provider (see the module docstring); edits in place.
    It runs inside every slider move: rule 2 walks the smaller of the kept and the removed
    messages, rules 3 and 4 look at each turn through C-speed slice counts."""
    protected = set()
    for i, why in ((view.first_system(), T("always kept: the system prompt")),
                   (view.newest_user(), T("always kept: the newest user message"))):
        if i is not None:
            protected.add(i)
            if actions[i] in _REMOVED:
                actions[i], reasons[i] = "keep", why
    for i in view.compactions:  # the agent's own summary of what came before: never removed
        protected.add(i)
        if actions[i] in _REMOVED:
            actions[i], reasons[i] = "keep", (T("always kept: the task of the run") if view.messages[i].extra.get("ctxlab_task")
                                              else T("always kept: a compaction summary (the agent's summary of earlier work)"))
    _whole_groups(view, actions, reasons)
    for start, end in _turns_to_check(view, actions):
        gone = actions[start]
        if gone not in _REMOVED or _removed_in(actions, start + 1, end) == end - start - 1:
            continue
        why = T("its turn's user message ({start}) is removed", start=start)
        for i in range(start + 1, end):
            if actions[i] not in _REMOVED and i not in protected:
                actions[i], reasons[i] = gone, why


def _turns_to_check(view: View, actions: list[str]) -> Sequence[tuple[int, int]]:
    """The turns rule 3 may change: all of them, or, when fewer messages are kept than there are
    turns (a window over a long history), only the turns of a kept message whose user message is
    removed."""
    turns = view.seg.turns
    if actions.count("keep") >= len(turns):  # cheap bound first: keep is most kept messages
        return turns
    kept, _ = _kept_indexes(actions)
    if len(kept) >= len(turns):
        return turns
    turn_of, hit = view.seg.turn_of, set()
    for i in kept:
        t = turn_of[i]
        if t >= 0 and turns[t][0] != i and actions[turns[t][0]] in _REMOVED:
            hit.add(t)
    return [turns[t] for t in sorted(hit)]


TEXTS_LIMIT = 65_536
"""Entries ``texts`` holds before it starts again (a plan of 10,000 messages adds a few thousand)."""


def texts(view: View) -> dict[tuple, Any]:
    """The view's memo of reason texts by what fills them (a tag naming the sentence, then its
    parameters, with the type of any that may be a plain ``str`` or a ``Text``): a sentence filled
    per group or per message is made once, not at every plan. A ``Text`` is a function of its
    template and parameters alone, so the memo is handed on to the views grown from this one (a
    re-plan after an append finds the texts of the plan before it)."""
    memo = view.memo.get("texts")
    if memo is None or len(memo) > TEXTS_LIMIT:
        memo = view.memo["texts"] = {}
    return memo


MEMO_EXTENDERS["texts"] = lambda old, new, memo: memo  # texts depend on their parameters only


def _removed_in(actions: list[str], start: int, end: int) -> int:
    """How many of ``actions[start:end]`` remove their message."""
    part = actions[start:end]
    return part.count("drop") + part.count("summarize")


def group_reason(made: dict, gone: str, first: int) -> str:
    """The reason of a tool round's member removed with the round (``gone``: drop or summarize, as its
    first removed member), one text per round kept in the view's ``texts`` (``made``)."""
    why = made.get((gone, first))
    if why is None:
        why = made[gone, first] = (
            T("drop with its tool call and results (message {first})", first=first) if gone == "drop" else
            T("summarize with its tool call and results (message {first})", first=first))
    return why


def _whole_groups(view: View, actions: list[str], reasons: list[str]) -> None:
    """Rule 2: a tool round with a removed member is removed whole, with the first removed
    member's action."""
    groups, group_of = view.seg.groups, view.seg.group_of
    drops, folds = actions.count("drop"), actions.count("summarize")
    removed_n = drops + folds
    if removed_n == 0 or removed_n == len(actions):
        return
    if removed_n <= len(actions) - removed_n:
        side = _removed_indexes(actions, drops, folds)
    else:
        side = _kept_indexes(actions, (drops, folds))[0]
    seen: set[int] = set()
    made = texts(view)
    for i in side:
        g = group_of[i]
        members = groups[g]
        if len(members) == 1 or g in seen:
            continue
        seen.add(g)
        gone = next((actions[k] for k in members if actions[k] in _REMOVED), None)
        if gone is None:
            continue
        why = group_reason(made, gone, members[0])
        for k in members:
            if actions[k] not in _REMOVED:
                actions[k], reasons[k] = gone, why


def _with_budget(sums: Mapping[str, int], budget: Budget) -> dict[str, int]:
    out = dict.fromkeys((*CATEGORIES, SUMMARY), 0)
    out.update(sums)
    out["tool_definitions"] = budget.tools_tokens
    out["reply_priming"] = budget.reply_priming
    return out


def positions(items: Sequence[str], values: Iterable[str], hits: int | None = None) -> list[int]:
    """Sorted indexes of the entries of ``items`` equal to one of ``values``, found by C-speed scans:
    the cost grows with the number found, not with the length of ``items``. ``hits``, when the
    caller already counted the entries, saves a counting pass per value."""
    values = tuple(values)
    if hits is None:
        hits = sum(map(items.count, values))
    if hits * 8 > len(items):  # many: one C-speed pass beats a Python step per hit
        wanted = frozenset(values)
        return list(compress(range(len(items)), map(wanted.__contains__, items)))
    found: list[int] = []
    for value in values:
        i = -1
        try:
            while True:
                i = items.index(value, i + 1)
                found.append(i)
        except ValueError:
            pass
    if len(values) > 1:
        found.sort()
    return found


def _uncount(counts: list[int], mask: int) -> None:
    """Take one occurrence of every fact of ``mask`` out of ``counts``."""
    while mask:
        low = mask & -mask
        counts[low.bit_length() - 1] -= 1
        mask ^= low


def build_plan(view: View, budget: Budget, strategy: str, params: Mapping[str, Any], actions: Sequence[str],
               reasons: Sequence[str], messages: Sequence[Message], origin: Sequence[int | None], *,
               warnings: Sequence[str] = (), stats: Mapping[str, Any] | None = None,
               state: Mapping[str, Any] | None = None, known_tokens: Mapping[int, int] | None = None,
               idle: "str | Callable[[], str] | None" = None) -> Plan:
    """A Plan from final decisions and output: counts what is new (unless ``known_tokens`` gives
    the tokens of a replaced input message), measures retention, warns when the result does not
    fit. ``idle`` says why nothing changed (a text, or a function called only when nothing did)."""
    known_tokens = known_tokens or {}
    out_tokens: list[int] = []
    sums: dict[str, int] = {}
    mask = 0
    vm, vt, vc, vf = view.messages, view.tokens, view.categories, view.fact_masks
    for m, o in zip(messages, origin):
        if o is not None and m is vm[o]:
            n, cat = vt[o], vc[o]
            mask |= vf[o]
        elif o is None:  # an inserted summary: look for every fact
            n, cat = view.counter.message(m), SUMMARY
            mask |= fact_mask(m, view.facts)
        else:  # cleared or truncated: it can only keep facts the original had
            n, cat = known_tokens.get(o) or view.counter.message(m), vc[o]
            if vf[o]:
                mask |= fact_mask(m, view.facts, only=vf[o])
        out_tokens.append(n)
        sums[cat] = sums.get(cat, 0) + n
    return _finish(view, budget, strategy, params, actions, reasons, messages, origin, out_tokens, sums, mask,
                   warnings, stats, state, idle)


def _finish(view: View, budget: Budget, strategy: str, params: Mapping[str, Any], actions: Sequence[str],
            reasons: Sequence[str], messages: Sequence[Message], origin: Sequence[int | None],
            out_tokens: Sequence[int], sums: Mapping[str, int], mask: int, warnings: Sequence[str],
            stats: Mapping[str, Any] | None, state: Mapping[str, Any] | None,
            idle: "str | Callable[[], str] | None",
            edited_from: tuple[tuple[str, ...], tuple[int, ...]] | None = None, removed: bool | None = None) -> Plan:
    """The Plan, from the output's tokens, its tokens per category and the facts it holds.
    ``removed``: whether any input message is removed, when the caller knows (else the actions are
    scanned: two passes over every action when nothing is removed)."""
    if removed is None:
        removed = "drop" in actions or "summarize" in actions
    merged = (merge_lone_users(view, messages, origin, out_tokens, sums, reasons)
              if removed else None)  # only a removal leaves users alone
    notes: tuple[str, ...] = ()
    if merged is not None:
        messages, origin, out_tokens, sums, reasons, note, extra = merged
        notes = (note,)
        mask |= extra
    before = _with_budget(view.category_sums, budget)
    after = _with_budget(sums, budget)
    warnings = list(warnings)
    total_after = sum(after.values())
    if total_after > budget.prompt_limit and not any("budget" in w for w in warnings):
        warnings.append(T("the result needs {tokens:,} tokens; the budget allows {limit:,} "
                          "({max_tokens:,} less a {reserve:.0%} reserve)", tokens=total_after,
                          limit=budget.prompt_limit, max_tokens=budget.max_tokens, reserve=budget.reserve))
    kept = tuple(f for k, f in enumerate(view.facts) if mask >> k & 1)
    lost = tuple(f for k, f in enumerate(view.facts) if not mask >> k & 1)
    retention = len(kept) / len(view.facts) if view.facts else None
    why_idle = idle_reason(strategy, actions, messages, idle)
    return Plan(strategy, dict(params), budget, tuple(actions), tuple(reasons), tuple(messages), tuple(origin),
                tuple(out_tokens), before, after, tuple(warnings), dict(stats or {}), dict(state or {}),
                retention, kept, lost, why_idle, notes, edited_from)


def _joined(a: Message, b: Message) -> Message:
    """One user message holding ``a`` then ``b`` (text joined by a blank line; parts kept in order)."""
    if isinstance(a.content, str) and isinstance(b.content, str):
        content: Any = f"{a.content}\n\n{b.content}" if a.content and b.content else a.content + b.content
    else:
        content = (*a.parts, *b.parts)
    return Message("user", content, name=b.name, id=b.id, extra={**a.extra, **b.extra, "ctxlab_merged": True})


def _joined_run(run: Sequence[Message]) -> Message:
    """The run of user messages joined into one, as ``_joined`` folds them from the last one back;
    in one step when every content is text (a long run would copy its growing text once per message)."""
    if not all(isinstance(m.content, str) for m in run):
        m = run[-1]
        for a in reversed(run[:-1]):
            m = _joined(a, m)
        return m
    extra: dict[str, Any] = {}
    for m in run:
        extra.update(m.extra)
    extra["ctxlab_merged"] = True
    last = run[-1]
    return Message("user", "\n\n".join(m.content for m in run if m.content), name=last.name, id=last.id,
                   extra=extra)


def merge_lone_users(view: View, messages: Sequence[Message], origin: Sequence[int | None],
                     out_tokens: Sequence[int], sums: Mapping[str, int], reasons: Sequence[str]) -> tuple | None:
    """Merge each user message of the output that follows another user message only because
    what stood between them was removed (rule 4 of ``settle``). None when there is nothing to merge."""
    users = positions(list(map(_ROLE, messages)), ("user",))  # C-speed scans: users are few in a long output
    pairs = [k for j, k in zip(users, users[1:]) if k == j + 1 and origin[k] is not None
             and origin[j] is not None and origin[k] - origin[j] > 1]
    if not pairs:
        return None
    sums, reasons = dict(sums), list(reasons)
    extra_mask, joined = 0, []
    runs: list[list[int]] = []  # [first, last] output positions of each run of user messages to merge
    for k in pairs:
        if runs and runs[-1][1] == k - 1:
            runs[-1][1] = k
        else:
            runs.append([k - 1, k])
    # a fact can span the separator of two merged texts only if it holds a line break
    spanning = any("\n" in f for f in view.facts)
    merged: list[tuple[int, int, Message, int]] = []
    known = view.memo.setdefault("merged_users", {})  # runs of the view's own messages, merged before
    if len(known) > 4 * len(view):  # bounded: each plan may merge other runs
        known.clear()
    vm = view.messages
    made = texts(view)
    for start, end in reversed(runs):  # from the end, so a run of three merges into one
        key = tuple(origin[start:end + 1])
        hit = known.get(key) if all(messages[k] is vm[o] for k, o in enumerate(key, start)) else None
        second, m = origin[end], hit[0] if hit else _joined_run(messages[start:end + 1])
        for k in range(end, start, -1):
            first = origin[k - 1]
            reason = reasons[first]
            tag = ("merged", reason, type(reason), second)
            why = made.get(tag)
            if why is None:
                why = made[tag] = T("{reason}; merged into user message {second}: nothing else of its turn "
                                    "is kept, and some providers reject two user messages in a row",
                                    reason=reason, second=second)
            reasons[first] = why
            joined.append((first, second))
        if hit:
            _, n, mask = hit
        else:
            n, mask = view.counter.message(m), 0  # the run's final message only: the steps before it are not sent
            for k in range(start, end + 1):  # its facts: those of its parts (and any across a separator)
                o = origin[k]
                mask |= view.fact_masks[o] if messages[k] is vm[o] else fact_mask(messages[k], view.facts)
            if spanning:
                mask |= fact_mask(m, view.facts)
            if all(messages[k] is vm[o] for k, o in enumerate(key, start)):
                known[key] = (m, n, mask)
        sums["user"] = sums.get("user", 0) - sum(out_tokens[start:end + 1]) + n
        extra_mask |= mask
        merged.append((start, end, m, n))
    messages, origin, out_tokens = _splice(merged[::-1], messages, origin, out_tokens)
    shown = ", ".join(f"{a}+{b}" for a, b in reversed(joined[-5:]))
    note = (T("{count} user message(s) kept by merging into the next user message ({shown}): nothing of "
            "their turn is left, and some providers and chat templates need user and assistant to alternate", count=len(joined), shown=shown))
    return messages, origin, out_tokens, sums, reasons, note, extra_mask


def _splice(merged: Sequence[tuple[int, int, Message, int]], messages: Sequence[Message],
            origin: Sequence[int | None], out_tokens: Sequence[int]) -> tuple[list, list, list]:
    """The output with each run ``(start, end, message, tokens)`` (in order) replaced by its merged
    message, which takes the origin of the run's last message; in one pass."""
    out_m: list[Message] = []
    out_o: list[int | None] = []
    out_t: list[int] = []
    prev = 0
    for start, end, m, n in merged:
        out_m += messages[prev:start]
        out_o += origin[prev:start]
        out_t += out_tokens[prev:start]
        out_m.append(m)
        out_o.append(origin[end])
        out_t.append(n)
        prev = end + 1
    return out_m + list(messages[prev:]), out_o + list(origin[prev:]), out_t + list(out_tokens[prev:])


def idle_reason(strategy: str, actions: Sequence[str], messages: Sequence[Message],
                idle: "str | Callable[[], str] | None") -> str | None:
    """None when the decisions change something; else the strategy's sentence for why not."""
    if len(messages) != len(actions) or actions.count("keep") != len(actions):
        return None
    text = idle() if callable(idle) else idle
    return text or T("{strategy} kept every message as it is", strategy=strategy)


_KEPT_ACTIONS = tuple(a for a in ACTIONS if a not in REMOVED)


def _removed_indexes(actions: list[str], drops: int, folds: int) -> list[int]:
    """Indexes of the removed input messages, given how many are dropped and folded."""
    if not folds:
        return positions(actions, ("drop",), drops)
    if not drops:
        return positions(actions, ("summarize",), folds)
    return positions(actions, REMOVED, drops + folds)


def _kept_indexes(actions: list[str], counts: tuple[int, int] | None = None) -> tuple[list[int], list[int] | None]:
    """Indexes of the kept input messages, in order, and of the removed ones when that list was
    cheaper to find (None otherwise); the cost grows with the smaller of the two."""
    n = len(actions)
    drops, folds = counts or (actions.count("drop"), actions.count("summarize"))
    removed_n = drops + folds
    if removed_n == 0:
        return list(range(n)), []
    if removed_n <= n - removed_n:
        removed = _removed_indexes(actions, drops, folds)
        kept: list[int] = []
        prev = 0
        for r in removed:
            kept.extend(range(prev, r))
            prev = r + 1
        kept.extend(range(prev, n))
        return kept, removed
    keeps = actions.count("keep")
    if keeps == n - removed_n:  # only "keep" among the kept: one scan finds them
        return positions(actions, ("keep",), keeps), None
    kept = positions(actions, _KEPT_ACTIONS)
    if len(kept) != n - removed_n:  # an action outside ACTIONS: counted as kept, as the plan always did
        kept = [i for i, a in enumerate(actions) if a not in _REMOVED]
    return kept, None


def _sums_and_facts(view: View, kept: list[int], removed: list[int] | None, actions: list[str],
                    replaced: Mapping[int, Message]) -> tuple[dict[str, int], int]:
    """Tokens per category and facts of the kept messages as they are (replaced ones left out),
    by subtracting what is gone when that is the smaller side, else by adding what stays."""
    vt, vc, vf = view.tokens, view.categories, view.fact_masks
    if removed is not None and len(removed) + len(replaced) <= len(kept):
        sums = dict(view.category_sums)
        gone = [*removed, *replaced]
        _add_by_category(sums, list(map(vc.__getitem__, gone)), map(vt.__getitem__, gone), -1)
        if 8 * (len(removed) + len(replaced)) < len(kept):  # few gone: take their facts out of the counts
            counts = list(view.fact_counts)
            for i in gone:
                if vf[i]:
                    _uncount(counts, vf[i])
            return sums, sum(1 << k for k, c in enumerate(counts) if c > 0)
        # many: an OR of the kept masks at C speed beats a Python step per fact of each message gone
        if len(kept) == len(vf):  # every message kept: a kept message's position is its index
            masks = list(vf)
            deque(map(masks.__setitem__, replaced, repeat(0)), maxlen=0)
        else:
            masks = list(map(vf.__getitem__, kept))
            for i in replaced:
                masks[bisect_left(kept, i)] = 0
        return sums, reduce(or_, masks, 0)
    sums, mask = {}, 0
    for i in kept:
        if i in replaced:
            continue
        c = vc[i]
        sums[c] = sums.get(c, 0) + vt[i]
        mask |= vf[i]
    return sums, mask


def _add_by_category(sums: dict[str, int], cats: list[str], values: Iterable[int], sign: int) -> None:
    """Add ``sign`` times each of ``values`` to the sum of its category in ``cats``; one C-speed sum
    when they share one category (the tool results a clearing strategy replaces)."""
    if not cats:
        return
    if cats.count(cats[0]) == len(cats):
        sums[cats[0]] = sums.get(cats[0], 0) + sign * sum(values)
        return
    for c, v in zip(cats, values):
        sums[c] = sums.get(c, 0) + sign * v


def _put_replaced(view: View, replaced: Mapping[int, Message], known: Mapping[int, int], origin: list[int],
                  whole: bool, messages: list[Message], out_tokens: list[int], sums: dict[str, int],
                  covered: int = 0) -> int:
    """Put replaced (cleared, truncated) messages in the output, add their tokens to ``sums``, and
    return the facts they still hold, but for those in ``covered`` (facts the output holds anyway:
    a replacement holds only facts of its original, so one whose original holds none else is not
    searched); at C speed for the thousands a clearing strategy replaces."""
    vc, vf = view.categories, view.fact_masks
    keys = list(replaced)
    ks = keys if whole else [bisect_left(origin, i) for i in keys]
    ns = list(map(known.get, keys))
    if not all(ns):  # not counted by the strategy (or counted as 0): count it now
        ns = [n or view.counter.message(replaced[i]) for i, n in zip(keys, ns)]
    deque(map(messages.__setitem__, ks, replaced.values()), maxlen=0)
    deque(map(out_tokens.__setitem__, ks, ns), maxlen=0)
    _add_by_category(sums, list(map(vc.__getitem__, keys)), ns, 1)
    mask = 0
    need = reduce(or_, map(vf.__getitem__, keys), 0) & ~covered
    if not need:
        return mask
    for i in compress(keys, map(need.__and__, map(vf.__getitem__, keys))):
        mask |= replacement_mask(view, replaced[i], vf[i])
    return mask


def replacement_mask(view: View, m: Message, only: int) -> int:
    """The facts a replacement ``m`` (a cleared or cut copy) holds of those its original holds
    (``only``): each text searched once (placeholders repeat), and the same copy object, handed to
    plan after plan, found by identity first (the entry holds the object, so its id is not reused;
    bounded, since fresh copies would pile up). Shared by the views grown from one another."""
    if not only:
        return 0
    mine = shared_memo(view, "replacement_fact_masks.by_object")
    if len(mine) > 2 * len(view):
        mine.clear()
    hit = mine.get(id(m))
    if hit is None or hit[0] is not m or hit[1] != only:
        seen = shared_memo(view, "replacement_fact_masks")
        key = (message_text(m), only)
        if key not in seen:
            seen[key] = fact_mask(m, view.facts, only=only)
        hit = mine[id(m)] = (m, only, seen[key])
    return hit[2]


def make_plan(view: View, budget: Budget, strategy: str, params: Mapping[str, Any], actions: list[str],
              reasons: list[str], *, replacements: Mapping[int, Message] | None = None,
              insertions: Sequence[Insertion] = (), warnings: Sequence[str] = (),
              stats: Mapping[str, Any] | None = None, state: Mapping[str, Any] | None = None,
              settle_first: bool = True, replacement_tokens: Mapping[int, int] | None = None,
              idle: "str | Callable[[], str] | None" = None) -> Plan:
    """Settle the decisions, assemble the resulting messages, and build the Plan.
    ``replacement_tokens`` may give the exact tokens of replacements the strategy already counted;
    ``idle`` says why nothing changed, when nothing did (see ``Plan.idle``).

    Its cost grows with the smaller of what is kept and what is removed, plus C-speed copies: it
    runs in every re-plan."""
    if settle_first:
        settle(view, actions, reasons)
    vm, vt, facts = view.messages, view.tokens, view.facts
    known = replacement_tokens or {}
    origin, removed = _kept_indexes(actions)
    whole = len(origin) == len(vm)
    replaced = {i: m for i, m in (replacements or {}).items() if actions[i] not in _REMOVED}
    messages = list(vm) if whole else list(map(vm.__getitem__, origin))
    out_tokens = list(vt) if whole else list(map(vt.__getitem__, origin))
    sums, mask = _sums_and_facts(view, origin, removed, actions, replaced)
    if replaced:
        mask |= _put_replaced(view, replaced, known, origin, whole, messages, out_tokens, sums, mask)
    if insertions:
        ordered = sorted(insertions, key=lambda x: x.position)
        at = [bisect_left(origin, ins.position) for ins in ordered]
        origin = list(origin)
        for ins, k in reversed(list(zip(ordered, at))):  # equal positions keep their order
            n = view.counter.message(ins.message)
            messages.insert(k, ins.message)
            origin.insert(k, None)  # type: ignore[arg-type]
            out_tokens.insert(k, n)
            sums[SUMMARY] = sums.get(SUMMARY, 0) + n
            mask |= fact_mask(ins.message, facts)
    return _finish(view, budget, strategy, params, actions, reasons, messages, origin, out_tokens, sums, mask,
                   warnings, stats, state, idle, removed=removed is None or bool(removed))


def minimum_warning(view: View, budget: Budget, what: str, needed: int) -> str | None:
    """The warning a plan carries when even its minimum does not fit the budget."""
    if needed <= budget.available:
        return None
    return (T("even {what} alone needs {needed:,} tokens; the budget leaves {available:,} for messages "
            "({max_tokens:,} less the {reserve:.0%} reserve, tool definitions and reply priming)", what=what, needed=needed, available=budget.available, max_tokens=budget.max_tokens, reserve=budget.reserve))
