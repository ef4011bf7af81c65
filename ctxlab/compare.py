"""Several plans of one conversation side by side: what each strategy did to every message (aligned
in columns), what each costs and keeps, what the providers would say of each result, and a verdict.

``plan_metrics(plan, label)`` gives a plan's figures and its findings under the OpenAI and Anthropic
rules; ``action_table`` lines the plans' decisions up by input message; ``ctxlab.measure.measure``
gives what each strategy serves and costs call by call; ``verdict_by_recall`` picks one by the rule in
``VERDICT_RULE`` (highest needed_recall, then lowest cost).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .i18n import N_, _, local
from .fidelity import KINDS, RECOVERIES, Miss
from .measure import ReplayMeasures
from .strategies.plan import Plan
from .findings import Finding, diff_findings
from .validate import FindingKey, introduced_findings, validate

ACTION_WORDS: dict[str, str] = {
    "keep": N_("kept"), "summarize": N_("summarized"), "clear": N_("cleared"), "truncate": N_("truncated"),
    "drop": N_("dropped"), "insert": N_("inserted summary"), "removed": N_("removed earlier"),
    "future": N_("not yet arrived"),
}
"""The word for each action (and, in a replay, for a message removed earlier or not arrived yet),
used by tables and figures alike: words, not emoji, which a browser without an emoji font shows
as empty boxes."""

DEFAULT_STRATEGIES: tuple[str, ...] = ("sliding_window", "tool_rounds", "summarize", "clear_tool_results")
"""The strategies the columns start with, one per column (different ones, so the first screen compares)."""

MIN_COLUMNS, MAX_COLUMNS = 2, 4
RULE_SETS: tuple[str, ...] = ("openai", "anthropic")

VERDICT_RULE = N_("Among the strategies whose every model call fits the budget on the call-by-call replay and that "
                "no provider rejects (OpenAI and Anthropic rules), the highest needed_recall wins; a tie goes to the "
                "lowest cost over the conversation's life (prompt cache included; input tokens when the model has "
                "no price), then to the leftmost column. When none fits, the one with the fewest calls over the "
                "limit is named, and the verdict says it does not fit.")


@dataclass(frozen=True)
class PlanMetrics:
    """One plan's figures for the comparison: tokens before and after, messages removed (dropped or
    folded into a summary), fact retention (None when the conversation has no facts), whether it fits
    the prompt limit, its findings per rule set, and its warnings."""

    label: str
    tokens_before: int
    tokens_after: int
    removed: int
    retention: float | None
    fits: bool
    findings: Mapping[str, tuple[Finding, ...]]
    warnings: tuple[str, ...]

    @property
    def saved(self) -> int:
        """Tokens saved."""
        return self.tokens_before - self.tokens_after

    @property
    def saved_share(self) -> float:
        """Tokens saved as a share of the prompt before (0 for an empty prompt)."""
        return self.saved / self.tokens_before if self.tokens_before else 0.0

    def errors(self, rules: str) -> int:
        """How many findings under ``rules`` are errors (requests the provider rejects)."""
        return sum(f.severity == "error" for f in self.findings[rules])

    @property
    def accepted(self) -> bool:
        """True when no rule set finds an error in the result."""
        return all(self.errors(r) == 0 for r in self.findings)

    def row(self) -> dict[str, Any]:
        """One row of the metrics table (strings where a number would mislead)."""
        return {"strategy": self.label, "tokens after": self.tokens_after, "saved": f"{self.saved_share:.1%}",
                "tokens saved": self.saved, "messages removed": self.removed,
                "retention": "n/a" if self.retention is None else f"{self.retention:.0%}",
                "fits": "yes" if self.fits else "no",
                **{f"{r} findings": len(self.findings[r]) for r in self.findings},
                "warnings": len(self.warnings)}


def column_labels(names: Sequence[str], columns: Sequence[int] | None = None) -> list[str]:
    """A unique label per column (``1 · sliding_window``): the same strategy may fill two columns.
    ``columns`` gives each name's column number (1-based) when some columns are left out."""
    numbers = list(columns) if columns is not None else list(range(1, len(names) + 1))
    if len(numbers) != len(names) or len(set(numbers)) != len(numbers):
        raise ValueError(f"need one distinct column number per name, got {numbers} for {len(names)} names")
    return [f"{k} · {n}" for k, n in zip(numbers, names)]


def plan_metrics(plan: Plan, label: str, rules: Sequence[str] = RULE_SETS,
            inherited: frozenset[FindingKey] = frozenset()) -> PlanMetrics:
    """A plan's figures, with its result validated under each rule set. Findings the input has at
    the same message (``inherited``, from ``validate.input_finding_keys``) are the input's and
    left out: a strategy is judged on what it changed."""
    found = {r: tuple(introduced_findings(validate(list(plan.messages), r), plan.origin, inherited)) for r in rules}
    return PlanMetrics(label, plan.tokens_before, plan.tokens_after, plan.removed,
                       plan.retention, plan.fits, found, tuple(plan.warnings))


def action_table(roles: Sequence[str], tokens: Sequence[int], plans: Sequence[Plan], labels: Sequence[str],
                 action_labels: Mapping[str, str] = ACTION_WORDS,
                 show_reasons: Sequence[bool] = ()) -> list[dict[str, Any]]:
    """One row per input message (index, role, tokens) and one column per plan with its action as a
    word (``action_labels``, by default ``dropped``, ``kept``...); a plan whose ``show_reasons``
    entry is true also gets a column ``"<label> reason"`` with the plan's reason for each message."""
    if len(plans) != len(labels):
        raise ValueError(f"{len(plans)} plans but {len(labels)} labels")
    for label, p in zip(labels, plans):
        if len(p.actions) != len(roles):
            raise ValueError(f"plan {label!r} decides {len(p.actions)} messages; the conversation has {len(roles)}")
    reasons = list(show_reasons) + [False] * (len(plans) - len(show_reasons))
    rows = []
    for i, (role, n) in enumerate(zip(roles, tokens)):
        row: dict[str, Any] = {"#": i, "role": role, "tokens": n}
        for label, p, why in zip(labels, plans, reasons):
            row[label] = action_labels.get(p.actions[i], p.actions[i])
            if why:
                row[f"{label} reason"] = local(p.reasons[i])
        rows.append(row)
    return rows


def finding_rows(metrics: Sequence[PlanMetrics], plans: Sequence[Plan]) -> list[dict[str, Any]]:
    """Every finding of every plan, with the input message it is about (a finding's index points
    into the plan's result; ``plan.origin`` maps it back; an inserted summary has none)."""
    rows = []
    for m, p in zip(metrics, plans):
        for rules, found in m.findings.items():
            for f in found:
                origin = p.origin[f.index] if f.index is not None and f.index < len(p.origin) else None
                rows.append({"strategy": m.label, "rules": rules, "severity": f.severity, "code": f.code,
                             "result message": f.index, "input message": origin, "finding": local(f.message)})
    return rows


@dataclass(frozen=True)
class Verdict:
    """The column that wins under ``VERDICT_RULE`` (None when none qualifies) and a sentence."""

    winner: int | None
    text: str


def _change(value: float) -> str:
    return (_("{pct:.0%} more") if value > 0 else _("{pct:.0%} less")).format(pct=abs(value))


def cost_sentence(m: ReplayMeasures) -> str:
    """Tokens and cost over the conversation's life against keeping everything (``none``), e.g.
    "input tokens: 33% less than keeping everything (61,808 vs 91,979); cost: 15% more ($0.10 vs
    $0.09)", so a strategy that saves tokens but loses the prompt cache shows it."""
    s = m.summary()
    c, n = m.cost, m.cost_none
    if s["tokens_vs_none"] is None:
        tokens = _("input tokens: {n:,} (keeping everything sends none)").format(n=c.input_tokens)
    elif c.input_tokens == n.input_tokens:
        tokens = _("input tokens: the same as keeping everything ({n:,})").format(n=c.input_tokens)
    else:
        tokens = _("input tokens: {change} than keeping everything ({n:,} vs {none:,}, {cached:.0%} vs "
                   "{none_cached:.0%} cached)").format(change=_change(s["tokens_vs_none"]), n=c.input_tokens,
                                                       none=n.input_tokens, cached=c.cached_share,
                                                       none_cached=n.cached_share)
    if c.cost_usd is None:
        text = _("{tokens}; cost: no price for {model}, so tokens only.").format(tokens=tokens, model=c.model)
    elif s["cost_vs_none"] is None or abs(c.cost_usd - (n.cost_usd or 0.0)) < 1e-12:
        text = _("{tokens}; cost: ${cost:.4f}, the same as keeping everything.").format(tokens=tokens, cost=c.cost_usd)
    else:
        text = _("{tokens}; cost: {change} (${cost:.4f} vs ${none:.4f}).").format(
            tokens=tokens, change=_change(s["cost_vs_none"]), cost=c.cost_usd, none=n.cost_usd)
    return text + read_back_sentence(c.read_backs)


def read_back_sentence(reads: int) -> str:
    """What the modelled read-backs of offloaded results add (" " and a sentence; "" when none)."""
    if not reads:
        return ""
    return " " + _("Included: {n:,} modelled read-back calls, each the prompt of the call that needed a fact left "
                   "out of an offloaded result's preview plus the whole result read back (a model, not a "
                   "bill).").format(n=reads)


def refetch_sentence(summary: Mapping[str, Any]) -> str:
    """How many modelled re-fetches of lost facts a total cost assumes, at what price, and how many
    lost facts nothing brings back, from a ``ReplayMeasures.summary()`` or a sweep point (one or two
    sentences; ``pricing.REFETCH_MODEL`` says what a re-fetch is)."""
    n, unrecoverable = summary.get("refetches", 0), summary.get("unrecoverable", 0)
    cost = summary.get("refetch_cost_usd")
    if n:
        price = f"${cost:.4f}" if cost is not None else _("{n:,} input tokens").format(n=summary.get("refetch_tokens", 0))
        text = _("The total cost assumes {n:,} modelled re-fetch call(s) of lost facts ({price}): each is one more "
                 "call with the prompt at that point plus the result read again; a model, not a bill.").format(
            n=n, price=price)
    else:
        text = _("The total cost assumes no re-fetch: no lost fact had to be fetched again.")
    if unrecoverable:
        text += " " + _("{n:,} lost fact(s) cannot be fetched again (the user gave them, or the result they came "
                        "from changed since).").format(n=unrecoverable)
    return text


def miss_rows(misses: Sequence[Miss]) -> list[dict[str, Any]]:
    """One row per missed need, with its kind and recovery in the language in use (the Lab's and
    Compare's tables of missed facts)."""
    return [{"fact": m.fact, "kind": _(KINDS.get(m.kind, m.kind)), "recovery": _(RECOVERIES.get(m.recovery, m.recovery)),
             "came from message": m.source, "needed by message": m.needed_by, "call": m.call, "turn": m.turn}
            for m in misses]


MISS_COLUMNS = ("fact", "kind", "recovery", "came from message", "needed by message", "call", "turn")
"""The columns of ``miss_rows``."""
MISS_COLUMN_HELP = {"kind": {"help": N_("What the fact is: an identifier, a path, an edit's old text, an id, a "
                                        "number...")},
                    "recovery": {"help": N_("Whether running a tool call again would bring it back (re-fetchable, "
                                            "priced as one more call), or nothing would (the user gave it, or the "
                                            "result changed since)")}}
"""Column help of the ``kind`` and ``recovery`` columns (English, translated where shown)."""


def pick_by_recall(labels: Sequence[str], fits: Sequence[bool], accepted: Sequence[bool],
                   measures: Sequence[ReplayMeasures]) -> tuple[int | None, str]:
    """The winner under ``VERDICT_RULE`` (None when none qualifies) and a sentence saying why."""
    ok = [k for k in range(len(labels)) if fits[k] and accepted[k]]
    if not ok:
        return None, _("No strategy qualifies (each sends a call over the budget or is rejected by a provider): "
                       "raise the limit or tune.")

    def cost(k: int) -> float:
        c = measures[k].cost
        return c.cost_usd if c.cost_usd is not None else float(c.input_tokens)
    best = min(ok, key=lambda k: (-(measures[k].needed_recall if measures[k].needed_recall is not None else 1.0),
                                  cost(k), k))
    m = measures[best].summary()
    recall = _("n/a (nothing needed)") if m["needed_recall"] is None else f"{m['needed_recall']:.0%}"
    money = f"${m['cost_usd']:.4f}" if m["cost_usd"] is not None else \
        _("{n:,} input tokens").format(n=m["input_tokens"])
    if m["cost_vs_none"] is not None:
        money = _("{money} ({change:+.0%} vs none)").format(money=money, change=m["cost_vs_none"])
    calls = _("all {n:,} of its model calls fit").format(n=m["calls"]) if m["calls"] != 1 else \
        _("its model call fits")
    text = _("{label} wins: {calls}, no provider rejects it, it serves {recall} of the needed facts, and costs "
             "{money} over the conversation.").format(label=labels[best], calls=calls, recall=recall, money=money)
    if m["input_tokens"] == m["none_input_tokens"]:
        text += " " + _("It saves nothing over keeping everything (it sends every call as is): at this limit no "
                        "strategy is needed, and keeping everything is as good.")
    return best, text


def verdict_by_recall(metrics: Sequence[PlanMetrics], measures: Sequence[ReplayMeasures]) -> Verdict:
    """The winner under ``VERDICT_RULE`` (``pick_by_recall``): among the strategies whose
    every model call fits on the call-by-call replay and that no provider rejects, the highest
    needed_recall, then the lowest cost."""
    fits = [r.replay.fits for r in measures]
    winner, text = pick_by_recall([m.label for m in metrics], fits, [m.accepted for m in metrics], measures)
    if winner is None:
        over = [_("{label} ({k} of {n} calls)").format(label=m.label, k=r.replay.calls_over_limit,
                                                         n=len(r.replay.calls))
                for m, r, f in zip(metrics, measures, fits) if not f]
        rejected = [m.label for m in metrics if not m.accepted]
        why = _("; ").join(x for x in (
            _("calls over the limit: {labels}").format(labels=_(", ").join(over)) if over else "",
            _("rejected by a provider: {labels}").format(labels=_(", ").join(rejected)) if rejected else "") if x)
        return Verdict(None, _("No strategy qualifies ({why}): raise the limit, or pick or tune other "
                               "strategies.").format(why=why))
    others = len(metrics) - sum(f and m.accepted for m, f in zip(metrics, fits))
    out = (" " + _("{k} of {n} did not qualify.").format(k=others, n=len(metrics))) if others else ""
    return Verdict(winner, text + out)


@dataclass(frozen=True)
class FindingChanges:
    """How a plan changed the input's own errors under one rule set: the input's errors,
    ``repaired`` (input errors the result no longer has: the strategy removed or changed the
    messages at fault, by chance, not by design), ``remaining`` (input errors still in the result,
    as the result's findings) and ``introduced`` (the result's errors the input did not have)."""

    rules: str
    input: tuple[Finding, ...]
    repaired: tuple[Finding, ...]
    remaining: tuple[Finding, ...]
    introduced: tuple[Finding, ...]


def finding_changes(input_findings: Sequence[Finding], result_findings: Sequence[Finding],
                    origin: Sequence[int | None], rules: str) -> FindingChanges:
    """Match the errors of the input with those of a plan's result (``origin`` maps each result
    message to its input index): an error is the same when its code and input message are
    (``findings.diff_findings``)."""
    errors_in = tuple(f for f in input_findings if f.severity == "error")
    diff = diff_findings(errors_in, [f for f in result_findings if f.severity == "error"], origin)
    return FindingChanges(rules, errors_in, diff.gone, diff.still, diff.new)


RULE_NAMES: dict[str, str] = {"openai": "OpenAI", "anthropic": "Anthropic"}


@dataclass(frozen=True)
class Note:
    """One thing to tell the user about a plan's outcome: ``level`` is ``success`` (all good: it
    acted, fits and passes), ``info``, ``warning`` or ``caption`` (neutral), and a sentence."""

    level: str
    text: str


def _where(f: Finding, origin: Sequence[int | None] | None) -> str:
    if f.index is None:
        return ""
    if origin is None:
        return _(" at message #{i}").format(i=f.index)
    src = origin[f.index] if f.index < len(origin) else None
    return _(" (result message {i} is input message #{src})").format(i=f.index, src=src) if src is not None else \
        _(" at result message {i}").format(i=f.index)


def _grouped(findings: Mapping[str, Sequence[Finding]]) -> list[tuple[str, Finding]]:
    """Errors found by several rule sets at the same place once, with the providers' names."""
    seen: dict[tuple[str, int | None], list[str]] = {}
    first: dict[tuple[str, int | None], Finding] = {}
    for rules, found in findings.items():
        for f in found:
            if f.severity == "error":
                seen.setdefault((f.code, f.index), []).append(RULE_NAMES.get(rules, rules))
                first.setdefault((f.code, f.index), f)
    return [(_(" and ").join(names), first[k]) for k, names in seen.items()]


def outcome_notes(plan: Plan, input_findings: Mapping[str, Sequence[Finding]],
                  result_findings: Mapping[str, Sequence[Finding]], *, idle: str | None = None,
                  limit: int = 5) -> list[Note]:
    """What to tell the user about a plan, most pressing first: that the strategy did nothing
    (``idle``, its own sentence), that the result does not fit, the result's errors, the input's own
    errors and which of them the strategy happened to repair; a ``success`` note only when the
    strategy acted, the result fits and passes every rule set and the input had no error of its own
    (never "all good" beside a problem). At most ``limit`` errors are listed per kind."""
    notes: list[Note] = []
    if idle:
        notes.append(Note("info", _("The strategy did not act: {why}.").format(why=idle.rstrip("."))))
    if not plan.fits:
        notes.append(Note("warning", _("The result does not fit: {n:,} tokens, {over:,} over the {limit:,}-token "
                                       "prompt limit.").format(n=plan.tokens_after,
                                                               over=plan.tokens_after - plan.budget.prompt_limit,
                                                               limit=plan.budget.prompt_limit)))
    changes = {r: finding_changes(input_findings.get(r, ()), result_findings[r], plan.origin, r)
               for r in result_findings}
    for r, ch in changes.items():
        for f in ch.introduced[:limit]:
            notes.append(Note("warning", _("{rules} would reject the result, {code}: {message}{where}").format(
                rules=RULE_NAMES.get(r, r), code=f.code, message=local(f.message), where=_where(f, plan.origin))))
        if len(ch.introduced) > limit:
            notes.append(Note("warning", _("{rules}: {n} more errors in the result").format(
                rules=RULE_NAMES.get(r, r), n=len(ch.introduced) - limit)))
    input_errors = _grouped(input_findings)
    if input_errors:
        listed = _("; ").join(f"{f.code}{_where(f, None)}: {local(f.message).rstrip('.。')}"  # the sentence ends it
                              for _n, f in input_errors[:limit])
        if len(input_errors) > limit:
            listed = _("{listed} (and {n} more)").format(listed=listed, n=len(input_errors) - limit)
        who = _(" and ").join(dict.fromkeys(n for names, _f in input_errors for n in names.split(_(" and "))))
        notes.append(Note("warning", _("The input itself breaks the rules: {who} would reject it as it is. "
                                       "{listed}.").format(who=who, listed=listed)))
        repaired = _grouped({r: ch.repaired for r, ch in changes.items()})
        remaining = _grouped({r: ch.remaining for r, ch in changes.items()})
        if repaired:
            at = _(", ").join(_("{code} at #{i}").format(code=f.code, i=f.index) for _n, f in repaired[:limit])
            notes.append(Note("info", _("The strategy happened to repair {n} of them ({at}): it removed or changed "
                                        "the messages at fault. That is chance, not a fix: another setting or a "
                                        "longer conversation can bring them back, so fix the input.").format(
                n=len(repaired), at=at)))
        if remaining:
            at = _(", ").join(f"{f.code}{_where(f, plan.origin)}" for _n, f in remaining[:limit])
            notes.append(Note("warning", _("{n} of them are still in the result: {at}.").format(n=len(remaining), at=at)))
    result_ok = not any(ch.introduced or ch.remaining for ch in changes.values())
    if result_ok and plan.fits and not idle and not input_errors:
        names = _(" and ").join(RULE_NAMES.get(r, r) for r in result_findings)
        notes.append(Note("success", _("The result fits the budget and passes the {names} rules: every tool call "
                                       "is still followed by its results.").format(names=names)))
    elif result_ok:
        names = _(" and ").join(RULE_NAMES.get(r, r) for r in result_findings)
        if input_errors:
            text = _("The result follows the {names} tool-call rules, only by chance: the input breaks them (see "
                     "above).")
        elif not plan.fits:
            text = _("The result follows the {names} tool-call rules, but it does not fit the budget.")
        else:
            text = _("The result follows the {names} tool-call rules, and fits: with nothing to do here, the "
                     "strategy sent the conversation as it is.")
        notes.append(Note("caption", text.format(names=names)))
    return notes


__all__ = ["ACTION_WORDS", "DEFAULT_STRATEGIES", "RULE_NAMES", "RULE_SETS", "VERDICT_RULE", "action_table",
           "column_labels", "cost_sentence", "finding_changes", "finding_rows", "FindingChanges", "Note",
           "outcome_notes", "pick_by_recall", "plan_metrics", "PlanMetrics", "read_back_sentence", "refetch_sentence",
           "miss_rows", "MISS_COLUMNS", "MISS_COLUMN_HELP",
           "ReplayMeasures", "Verdict", "verdict_by_recall"]
