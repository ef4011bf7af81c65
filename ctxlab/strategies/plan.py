"""A Plan: what a strategy decided for every message, why, and what results.

Strategies fill two lists (an action and a reason per message) plus any replacements (cleared
or truncated messages) and inserted summaries, then call ``make_plan``. ``settle`` first makes
the decisions safe for every provider, by construction:

1. the first system prompt and the newest user message are always kept;
2. an atomic group (a tool call and all of its results) is kept or removed whole;
3. a turn whose user message is removed is removed whole, so no assistant reply is left
   answering nothing and no two assistant turns meet;
4. a kept user message with nothing kept after it before the next user message is removed, so
   no two user turns meet (Anthropic rejects them).

Each extra removal says which rule caused it. Settling only ever removes more, so a plan that
fitted the budget still fits.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..conversation import Message
from ..tokens import CATEGORIES
from .view import Budget, View, fact_mask

ACTIONS = ("keep", "drop", "summarize", "clear", "truncate")
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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (without the messages; the CLI adds them in the format asked)."""
        return {
            "strategy": self.strategy, "params": dict(self.params), "budget": self.budget.to_dict(),
            "before": {"tokens": self.tokens_before, "messages": len(self.actions), "by_category": dict(self.before)},
            "after": {"tokens": self.tokens_after, "messages": len(self.messages), "by_category": dict(self.after)},
            "saved": self.saved, "fits": self.fits, "idle": self.idle,
            "decisions": [{"index": i, "action": a, "reason": r}
                          for i, (a, r) in enumerate(zip(self.actions, self.reasons))],
            "warnings": list(self.warnings), "stats": dict(self.stats), "retention": self.retention,
            "facts_lost": list(self.facts_lost),
        }


_REMOVED = frozenset(REMOVED)


def settle(view: View, actions: list[str], reasons: list[str]) -> None:
    """Make decisions safe for every provider (see the module docstring); edits in place.
    Linear in the number of messages: it runs inside every slider move."""
    protected = set()
    for i, why in ((view.first_system(), "always kept: the system prompt"),
                   (view.newest_user(), "always kept: the newest user message")):
        if i is not None:
            protected.add(i)
            if actions[i] in _REMOVED:
                actions[i], reasons[i] = "keep", why
    for members in view.multi_groups:
        gone = None
        for i in members:
            if actions[i] in _REMOVED:
                gone = actions[i]
                break
        if gone is not None:
            why = f"{gone} with its tool call and results (message {members[0]})"
            for i in members:
                if actions[i] not in _REMOVED:
                    actions[i], reasons[i] = gone, why
    for start, end in view.seg.turns:
        gone = actions[start]
        if gone in _REMOVED:
            why = f"its turn's user message ({start}) is removed"
            for i in range(start + 1, end):
                if actions[i] not in _REMOVED and i not in protected:
                    actions[i], reasons[i] = gone, why
    _drop_lone_users(view, actions, reasons)


def _drop_lone_users(view: View, actions: list[str], reasons: list[str]) -> None:
    last_user: int | None = None
    for i, role in enumerate(view.roles):
        if actions[i] in _REMOVED:
            continue
        if role == "user":
            if last_user is not None:
                actions[last_user] = "drop"
                reasons[last_user] = "nothing of its turn is kept: two user turns in a row are invalid"
            last_user = i
        elif role != "system":
            last_user = None


def _with_budget(sums: Mapping[str, int], budget: Budget) -> dict[str, int]:
    out = dict.fromkeys((*CATEGORIES, SUMMARY), 0)
    out.update(sums)
    out["tool_definitions"] = budget.tools_tokens
    out["reply_priming"] = budget.reply_priming
    return out


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
    before = _with_budget(view.category_sums, budget)
    after = _with_budget(sums, budget)
    warnings = list(warnings)
    total_after = sum(after.values())
    if total_after > budget.prompt_limit and not any("budget" in w for w in warnings):
        warnings.append(f"the result needs {total_after:,} tokens; the budget allows {budget.prompt_limit:,} "
                        f"({budget.max_tokens:,} less a {budget.reserve:.0%} reserve)")
    kept = tuple(f for k, f in enumerate(view.facts) if mask >> k & 1)
    lost = tuple(f for k, f in enumerate(view.facts) if not mask >> k & 1)
    retention = len(kept) / len(view.facts) if view.facts else None
    why_idle = idle_reason(strategy, actions, messages, idle)
    return Plan(strategy, dict(params), budget, tuple(actions), tuple(reasons), tuple(messages), tuple(origin),
                tuple(out_tokens), before, after, tuple(warnings), dict(stats or {}), dict(state or {}),
                retention, kept, lost, why_idle)


def idle_reason(strategy: str, actions: Sequence[str], messages: Sequence[Message],
                idle: "str | Callable[[], str] | None") -> str | None:
    """None when the decisions change something; else the strategy's sentence for why not."""
    if len(messages) != len(actions) or actions.count("keep") != len(actions):
        return None
    text = idle() if callable(idle) else idle
    return text or f"{strategy} kept every message as it is"


def make_plan(view: View, budget: Budget, strategy: str, params: Mapping[str, Any], actions: list[str],
              reasons: list[str], *, replacements: Mapping[int, Message] | None = None,
              insertions: Sequence[Insertion] = (), warnings: Sequence[str] = (),
              stats: Mapping[str, Any] | None = None, state: Mapping[str, Any] | None = None,
              settle_first: bool = True, replacement_tokens: Mapping[int, int] | None = None,
              idle: "str | Callable[[], str] | None" = None) -> Plan:
    """Settle the decisions, assemble the resulting messages, and build the Plan.
    ``replacement_tokens`` may give the exact tokens of replacements the strategy already counted;
    ``idle`` says why nothing changed, when nothing did (see ``Plan.idle``)."""
    if settle_first:
        settle(view, actions, reasons)
    replacements = replacements or {}
    vm = view.messages
    origin: list[int | None] = [i for i, a in enumerate(actions) if a not in _REMOVED]
    messages: list[Message] = [replacements.get(i, vm[i]) if replacements else vm[i] for i in origin]
    for ins in reversed(sorted(insertions, key=lambda x: x.position)):  # equal positions keep their order
        at = next((k for k, o in enumerate(origin) if o is not None and o >= ins.position), len(origin))
        messages.insert(at, ins.message)
        origin.insert(at, None)
    return build_plan(view, budget, strategy, params, actions, reasons, messages, origin,
                      warnings=warnings, stats=stats, state=state, known_tokens=replacement_tokens, idle=idle)


def minimum_warning(view: View, budget: Budget, what: str, needed: int) -> str | None:
    """The warning a plan carries when even its minimum does not fit the budget."""
    if needed <= budget.available:
        return None
    return (f"even {what} alone needs {needed:,} tokens; the budget leaves {budget.available:,} for messages "
            f"({budget.max_tokens:,} less the {budget.reserve:.0%} reserve, tool definitions and reply priming)")
