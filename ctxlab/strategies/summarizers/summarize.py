"""The ``summarize`` strategy: fold the oldest turns into one running summary.

When the view holds more than ``trigger_messages`` messages, or its messages use more than
``trigger_ratio`` of what the budget leaves for messages, the oldest whole turns are folded into a
summary: ONE system message, marked ``extra={"ctxlab_summary": True}``, placed right after the
system prompt. The newest ``keep_recent`` messages stay as they are (widened back to the start of
their turn), and more old turns are folded until the result fits ``target_ratio`` of the budget.

Summaries are incremental. The plan's ``state`` holds ``{"summary": text, "summarized": origin
indexes folded so far}``; a later application that receives this state (replay, a pipeline)
summarizes only what it newly folds and merges it into the previous text; a summary message already
in the view is replaced by the merged one. Messages already summarized are never summarized again.

Summarizers are pluggable: ``SUMMARIZERS`` maps a name to an object with
``summarize(messages, previous) -> str`` (``register_summarizer`` adds one). The built-in
``extractive`` works offline and deterministically. Whatever a summarizer returns is bounded to
``max_summary_tokens`` by dropping its least important lines.
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from itertools import accumulate
from types import MappingProxyType
from typing import Any, ClassVar, Iterable, Sequence

from ...i18n import N_, T, Tn
from ...conversation import Message
from ..base import ON_WHAT_IT_LEFT, Strategy, StrategyError, budget_window, param, register
from ..plan import REMOVED, Insertion, Plan, make_plan, minimum_warning, positions, settle
from ..view import MEMO_EXTENDERS, Budget, View
from .extractive import SUMMARIZERS, ExtractiveSummarizer, Summarizer, register_summarizer, trim_summary  # noqa: F401
from ..windows import preamble_systems
from .llm import SummaryResult, check_prompt  # also registers the "llm" summarizer

MARKER = "Summary of earlier conversation"
SUMMARY_EXTRA = MappingProxyType({"ctxlab_summary": True})
_MARKER_ALLOWANCE = 40  # tokens for the marker line and message framing, when planning the fit


def _spans(indexes: Sequence[int], limit: int) -> tuple[list[list[int]], bool]:
    """The first ``limit`` runs of consecutive sorted indexes, and whether there are more. A run is
    skipped at C speed: its end is where the value still matches its position."""
    spans: list[list[int]] = []
    k, n = 0, len(indexes)
    while k < n:
        if len(spans) == limit:
            return spans, True
        first = indexes[k]
        lo, hi = k, n - 1  # the last position whose value is first + (position - k)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if indexes[mid] - first == mid - k:
                lo = mid
            else:
                hi = mid - 1
        spans.append([first, indexes[lo]])
        k = lo + 1
    return spans, False


def covered_label(indexes: Sequence[int]) -> str:
    """``"messages 1-14, 20"`` for sorted indexes (at most 8 ranges shown)."""
    spans, more = _spans(indexes, 9)
    if more or len(spans) > 8:  # more than 8 ranges: the first 4 and the last 3
        tail = [[-b, -a] for a, b in _spans([-i for i in reversed(indexes)], 3)[0]][::-1]
        spans = spans[:4] + [None] + tail  # type: ignore[list-item]
    parts = ["…" if sp is None else f"{sp[0]}-{sp[1]}" if sp[0] != sp[1] else f"{sp[0]}" for sp in spans]
    return ("messages " if len(indexes) > 1 else "message ") + ", ".join(parts)


def summary_message(body: str, covered: Sequence[int]) -> Message:
    """The summary as a system message: a marker line naming what it covers, then the body."""
    head = f"{MARKER} ({covered_label(covered)}):" if covered else f"{MARKER}:"
    return Message("system", f"{head}\n{body}" if body else head, extra=SUMMARY_EXTRA)


def is_summary(m: Message) -> bool:
    """Whether ``m`` is a summary this strategy inserted."""
    return m.role == "system" and bool(m.extra.get("ctxlab_summary"))


def summary_body(m: Message) -> str:
    """The text of a summary message without its marker line."""
    head, _, rest = m.text.partition("\n")
    return rest if head.startswith(MARKER) else m.text


class Covered:
    """The origin indexes a running summary covers, as the sorted tuple the state carries.

    It grows with the conversation, and a summary folds the oldest turns first, so what is newly
    folded comes after all of it: membership is a binary search and a union appends, instead of a
    set of every index summarized so far being built at every application."""

    __slots__ = ("indexes",)

    def __init__(self, indexes: Sequence[int] = ()) -> None:
        # the state written by a plan holds a sorted tuple; one read back from JSON may not
        self.indexes = indexes if isinstance(indexes, tuple) else tuple(sorted(set(indexes)))

    def __contains__(self, i: object) -> bool:
        if not isinstance(i, int):  # an inserted message has no origin index
            return False
        ix = self.indexes
        k = bisect_left(ix, i)  # type: ignore[type-var]
        return k < len(ix) and ix[k] == i

    def __bool__(self) -> bool:
        return bool(self.indexes)

    def __len__(self) -> int:
        return len(self.indexes)

    def union(self, more: Iterable[int]) -> tuple[int, ...]:
        """The sorted indexes of both."""
        add = sorted(set(more))
        ix = self.indexes
        if not add:
            return ix
        if not ix or add[0] > ix[-1]:  # the usual case: the oldest turns not yet folded
            return ix + tuple(add)
        return tuple(sorted(set(ix).union(add)))


def running_summary(view: View, old: Sequence[int]) -> tuple[str | None, Covered]:
    """The running summary (from the state, or else from summary messages in the view) and the
    origin indexes summarized so far."""
    text = view.state.get("summary") or "\n".join(b for i in old if (b := summary_body(view.messages[i])))
    return (text or None), Covered(view.state.get("summarized", ()))


def check_summarizer(strategy: str, value: Any) -> None:
    """A strategy's ``summarizer`` parameter names a registered summarizer, or it is an error."""
    if value not in SUMMARIZERS:
        raise StrategyError(f"summarizer must be one of {', '.join(SUMMARIZERS)}, got {value!r}",
                            where=f"{strategy}.summarizer")


def summarizer_param() -> Any:
    """The ``summarizer`` parameter of a strategy that writes summaries (declare it with this)."""
    return param("extractive", help=N_("Who writes the summary: extractive (offline, deterministic) "
                                       "or another registered summarizer."))


def max_summary_tokens_param() -> Any:
    """The ``max_summary_tokens`` parameter of a strategy that writes summaries."""
    return param(400, min=20, max=20_000, help=N_("Longest summary text; the least important lines are dropped first."))


class UsesSummarizer:
    """For a strategy with a ``summarizer`` parameter (declared with ``summarizer_param()``, beside
    ``max_summary_tokens_param()``): the value must name a registered summarizer, and the schema
    offers the summarizers registered now as its choices."""

    def _check(self, f: Any, value: Any) -> None:
        super()._check(f, value)  # type: ignore[misc]
        if f.name == "summarizer":
            check_summarizer(self.name, value)  # type: ignore[attr-defined]

    @classmethod
    def schema(cls) -> list[dict[str, Any]]:
        """The parameter schema, with the summarizers registered now as the choices."""
        out = super().schema()  # type: ignore[misc]
        for spec in out:
            if spec["name"] == "summarizer":
                spec["choices"] = list(SUMMARIZERS)
        return out


@register
@dataclass(frozen=True)
class Summarize(UsesSummarizer, Strategy):
    """Fold the oldest whole turns into one running summary; keep the newest turns as they are."""

    name: ClassVar[str] = "summarize"
    cost_per_call: ClassVar[str] = ON_WHAT_IT_LEFT
    title: ClassVar[str] = N_("Running summary")
    summary: ClassVar[str] = N_("Past a size trigger, folds the oldest whole turns into one summary message after the "
                              "system prompt (merged with the earlier summary) and keeps the newest turns as they are.")
    scaling: ClassVar[str] = N_("Scaled to the budget, trigger_messages is the number of 1,000-token messages the "
                              "budget leaves room for, and keep_recent half that; the token trigger and target are "
                              "already shares of the budget.")
    trigger_messages: int = param(20, min=1, max=1_000_000,
                                  help=N_("Summarize when the context holds more messages than this. Default 20 "
                                       "(fixed); the budget-scaled value is the budget's message room in "
                                       "1,000-token messages."))
    trigger_ratio: float = param(0.8, min=0.01, max=1.0,
                                 help=N_("... or when its messages use more than this share of the budget."))
    target_ratio: float = param(0.5, min=0.01, max=1.0,
                                help=N_("Fold old turns until the result uses at most this share of the budget."))
    keep_recent: int = param(10, min=1, max=1_000_000,
                             help=N_("Newest messages never folded (widened back to the start of their turn). Default "
                                  "10 (fixed); the budget-scaled value is half the budget's message room in "
                                  "1,000-token messages."))
    summarizer: str = summarizer_param()
    max_summary_tokens: int = max_summary_tokens_param()
    summary_prompt: str = param("", help=N_("summarizer=llm: the prompt of the first summary ({span}: the folded "
                                         "messages, {max_tokens}: the cap); empty = the built-in prompt."))
    merge_prompt: str = param("", help=N_("summarizer=llm: the prompt that extends the running summary ({summary}: "
                                       "it, {span}: the newly folded messages); empty = the built-in prompt."))

    def _check(self, f: Any, value: Any) -> None:
        super()._check(f, value)
        if f.name in ("summary_prompt", "merge_prompt") and (problem := check_prompt(f.name, value)):
            raise StrategyError(problem, where=f"{self.name}.{f.name}", hint="Or leave it empty for the built-in prompt")

    @classmethod
    def budget_scaled(cls, budget: Budget) -> dict:
        """``trigger_messages``: the budget's message room in 1,000-token messages; ``keep_recent``: half that."""
        window = budget_window(budget)
        return {"trigger_messages": 2 * window, "keep_recent": window}

    def quick_idle(self, view: View, budget: Budget) -> bool:
        """Below both triggers (messages and tokens), with the state it left (kept as it is)."""
        return len(view) <= self.trigger_messages and view.total <= int(budget.available * self.trigger_ratio)

    def apply(self, view: View, budget: Budget) -> Plan:
        """Below the trigger keep everything; above it fold the oldest turns into the summary."""
        n, total = len(view), view.total
        old = [i for i in positions(view.categories, ("system", "summary")) if is_summary(view.messages[i])]
        previous, done = running_summary(view, old)
        limit = int(budget.available * self.trigger_ratio)
        if n <= self.trigger_messages and total <= limit:
            why = T("below the trigger ({n:,} of {trigger_messages:,} messages, {total:,} of {limit:,} tokens)", n=n, trigger_messages=self.trigger_messages, total=total, limit=limit)
            idle = (T("summarize triggers above {trigger_messages:,} messages (trigger_messages) or {limit:,} "
                    "message tokens ({trigger_ratio:.0%} of the {available:,} the budget leaves, "
                    "trigger_ratio); the conversation has {n:,} messages and {total:,} tokens", trigger_messages=self.trigger_messages, limit=limit, trigger_ratio=self.trigger_ratio, available=budget.available, n=n, total=total))
            return self._keep_all(view, budget, why, previous, done, old, triggered=False, idle=idle)
        first_kept, pinned = self._first_kept_turn(view, budget, old)
        actions, reasons = self._fold(view, first_kept, pinned, set(old), done)
        self._fold_inside(view, budget, actions, reasons, first_kept, set(old))
        if not any(a == "summarize" for i, a in enumerate(actions) if i not in old):
            why = (T("kept: over the trigger ({n:,} messages, {total:,} tokens) but every turn is recent (the newest "
                   "turn and the newest {keep_recent:,} messages are never folded)", n=n, total=total, keep_recent=self.keep_recent))
            idle = (T("summarize is over its trigger ({n:,} messages, {total:,} tokens) but has no whole turn to fold: "
                    "the newest turn and the newest {keep_recent:,} messages (keep_recent) are never folded, "
                    "and pinned turns stay", n=n, total=total, keep_recent=self.keep_recent))
            return self._keep_all(view, budget, why, previous, done, old, triggered=True, idle=idle)
        settle(view, actions, reasons)
        for i in old:  # settle keeps a first system message, but an old summary gives way to the new one
            actions[i], reasons[i] = "summarize", T("replaced by the updated summary")
        return self._folded_plan(view, budget, actions, reasons, previous, done, set(old))

    def _first_kept_turn(self, view: View, budget: Budget, old: Sequence[int]) -> tuple[int, frozenset[int]]:
        """The oldest turn kept: the one holding the newest ``keep_recent`` messages' start, moved
        later until the result fits ``target_ratio`` (the newest turn is always kept); and the
        turns kept because they hold a pinned message."""
        seg, count = view.seg, len(view.seg.turns)
        pinned = frozenset(t for p in view.pins if (t := seg.turn_of[p]) >= 0)
        if count < 2:
            return 0, pinned
        k = seg.turn_of[max(len(view) - self.keep_recent, seg.turns[0][0])]
        prefix = [0, *accumulate(view.tokens)]
        cost = [prefix[e] - prefix[s] for s, e in seg.turns]
        fixed = sum(view.tokens[i] for i in preamble_systems(view) if i not in old)
        kept = fixed + self.max_summary_tokens + _MARKER_ALLOWANCE + sum(cost[k:])
        kept += sum(cost[t] for t in pinned if t < k)
        target = int(budget.available * self.target_ratio)
        while k < count - 1 and kept > target:
            if k not in pinned:
                kept -= cost[k]
            k += 1
        return k, pinned

    def _fold_inside(self, view: View, budget: Budget, actions: list[str], reasons: list[str], k: int,
                     old: set[int]) -> None:
        """When every older turn is folded (or there is none) and the newest turn is long (an agent's
        run of calls), fold its older whole groups too: those before the newest ``keep_recent``
        messages, then more, oldest first, until the result fits ``target_ratio``. The turn's user
        message (the task), system messages, pinned groups and the newest group always stay."""
        seg, n = view.seg, len(view)
        count = len(seg.turns)
        if count == 0 or k < count - 1:
            return
        s, e = seg.turns[-1]
        groups = [g for g in dict.fromkeys(seg.group_of[i] for i in range(s + 1, e))]
        if len(groups) < 2:
            return
        recent = max(n - self.keep_recent, s + 1)
        tokens, roles = view.tokens, view.roles
        kept = sum(t for i, t in enumerate(tokens) if actions[i] not in REMOVED and i not in old)
        kept += self.max_summary_tokens + _MARKER_ALLOWANCE
        target = int(budget.available * self.target_ratio)
        folded = 0
        for g in groups[:-1]:  # the newest group (the latest call and its results) is never folded
            members = seg.groups[g]
            if members[0] >= recent and kept <= target:
                break
            if any(i in view.pins or roles[i] == "system" for i in members):
                continue
            for i in members:
                actions[i] = "summarize"
                reasons[i] = T("folded into the summary: an older step of the current turn")
                kept -= tokens[i]
                folded += 1
        if folded:
            for i in range(s + 1, e):
                if actions[i] == "keep":
                    reasons[i] = T("kept: a recent step of the current turn (its newest {keep_recent:,} messages or what fits)", keep_recent=self.keep_recent)

    def _fold(self, view: View, k: int, pinned: frozenset[int], old: set[int],
              done: Covered) -> tuple[list[str], list[str]]:
        """Actions and reasons: turns before ``k`` (and what precedes the first user message, except
        system messages) are folded, unless pinned; the rest is kept. Works on slices, not messages."""
        seg, n = view.seg, len(view)
        turns, newest = seg.turns, len(seg.turns) - 1
        if k == 0:
            return ["keep"] * n, [T("kept: no whole turn is old enough to fold")] * n
        actions, reasons = ["keep"] * n, [T("kept: recent (the newest {count:,} messages, whole turns)", count=n - turns[k][0])] * n
        cut = turns[k][0]
        actions[:cut] = ["summarize"] * cut
        reasons[: turns[0][0]] = [T("folded into the summary: before the first user message")] * turns[0][0]
        for t in range(k):
            s, e = turns[t]
            if t in pinned:
                actions[s:e], reasons[s:e] = ["keep"] * (e - s), [T("pinned: its turn is kept whole")] * (e - s)
            else:
                reasons[s:e] = [Tn("folded into the summary: {n:,} turn old", "folded into the summary: {n:,} turns old", newest - t)] * (e - s)
        for i in range(turns[0][0]):
            if view.messages[i].role == "system" and i not in old:
                actions[i], reasons[i] = "keep", T("always kept: the system prompt")
        for i in old:
            actions[i], reasons[i] = "summarize", T("replaced by the updated summary")
        if done:
            origin = view.origin if len(view.origin) == n else range(n)
            for i in range(cut):
                if actions[i] == "summarize" and origin[i] in done:
                    reasons[i] = T("already in the summary (folded earlier)")
        return actions, reasons

    def _folded_plan(self, view: View, budget: Budget, actions: list[str], reasons: list[str],
                     previous: str | None, done: Covered, old: set[int]) -> Plan:
        """Summarize what is newly folded, merge it into the previous summary, insert it."""
        n = len(view)
        origin = view.origin if len(view.origin) == n else tuple(range(n))
        folded = [i for i in positions(actions, ("summarize",)) if i not in old] if old else \
            positions(actions, ("summarize",))
        new = [i for i in folded if origin[i] is None or origin[i] not in done] if done else folded
        summarizer = SUMMARIZERS.get(self.summarizer)
        if summarizer is None:
            raise StrategyError(f"summarizer {self.summarizer!r} is no longer registered", where="summarize.summarizer",
                                hint=f"Known summarizers: {', '.join(SUMMARIZERS)}")
        written = self._write_summary(summarizer, new, previous, view) if new else None
        body = written.text if written is not None else (previous or "")
        body = trim_summary(body, self.max_summary_tokens, view.counter.text)
        folded_origins = set(map(origin.__getitem__, folded))
        folded_origins.discard(None)
        covered = done.union(folded_origins)
        message = summary_message(body, covered)
        systems = [i for i in preamble_systems(view) if i not in old]
        summary_tokens = view.counter.message(message)
        start, end = view.seg.turns[-1]
        needed = sum(view.tokens[i] for i in systems) + summary_tokens + sum(
            view.tokens[i] for i in range(start, end) if actions[i] not in REMOVED)
        warn = minimum_warning(view, budget, T("the system prompt, the summary and what it keeps of the newest turn"),
                               needed)
        stats = {"triggered": True, "messages_folded": len(folded), "messages_summarized": len(new),
                 "turns_folded": sum(actions[s] == "summarize" for s, _ in view.seg.turns),
                 "summary_tokens": summary_tokens}
        if written is not None and written.record:
            stats["summary_by"] = written.record  # who wrote it: model, tokens used, time taken
        warnings = [w for w in (warn, written.warning if written is not None else None) if w]
        return make_plan(view, budget, self.name, self.params(), actions, reasons,
                         insertions=[Insertion(systems[-1] + 1 if systems else 0, message, tuple(folded))],
                         warnings=warnings, stats=stats,
                         state={"summary": body, "summarized": covered}, settle_first=False)

    def _write_summary(self, summarizer: Summarizer, new: list[int], previous: str | None,
                       view: View) -> SummaryResult:
        """The new running summary of the messages at ``new``; a summarizer with ``summarize_span``
        (the LLM one, with its own cache) also gets the prompts and the cap and returns a record of
        who wrote it and any fallback warning. The extractive summarizer's text is kept per view and
        span (a slider move folding the same turns does not summarize them again)."""
        span = view.messages.__getitem__
        if hasattr(summarizer, "summarize_span"):
            return summarizer.summarize_span(list(map(span, new)), previous, summary_prompt=self.summary_prompt,
                                             merge_prompt=self.merge_prompt, max_tokens=self.max_summary_tokens,
                                             count=view.counter.text)
        if not isinstance(summarizer, ExtractiveSummarizer):  # only the built-in is known to be a pure function
            return SummaryResult(summarizer.summarize(list(map(span, new)), previous), {})
        known: dict = view.memo.setdefault("summarize.texts", {})
        key = (id(summarizer), tuple(new), previous)
        hit = known.get(key)
        if hit is None or hit[0] is not summarizer:
            if len(known) >= 64:  # a bound: one text per span a slider has visited
                known.clear()
            hit = known[key] = (summarizer, summarizer.summarize(list(map(span, new)), previous))
        return SummaryResult(hit[1], {})

    def _keep_all(self, view: View, budget: Budget, why: str, previous: str | None, done: Covered,
                  old: Sequence[int], *, triggered: bool, idle: str) -> Plan:
        """Everything kept (the running summary, if any, carried on in the state)."""
        n = len(view)
        reasons = [why] * n
        for i in old:
            reasons[i] = T("the running summary so far")
        state = {"summary": previous or "", "summarized": done.indexes} if previous or done else {}
        stats = {"triggered": triggered, "messages_folded": 0, "messages_summarized": 0, "turns_folded": 0,
                 "summary_tokens": sum(view.tokens[i] for i in old)}
        return make_plan(view, budget, self.name, self.params(), ["keep"] * n, reasons, stats=stats, state=state,
                         settle_first=False, idle=idle)


MEMO_EXTENDERS["summarize.texts"] = lambda old, new, known: dict(known)  # old indexes hold the same messages
