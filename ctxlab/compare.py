"""Several plans of one conversation side by side: what each strategy did to every message (aligned
in columns), what each costs and keeps, what the providers would say of each result, and a verdict.

``measure(plan, label)`` gives a plan's figures and its findings under the OpenAI and Anthropic
rules; ``action_table`` lines the plans' decisions up by input message; ``verdict`` picks one by
the rule in ``VERDICT_RULE``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .strategies.plan import Plan
from .validate import Finding, validate

DEFAULT_STRATEGIES: tuple[str, ...] = ("sliding_window", "tool_rounds", "summarize", "clear_tool_results")
"""The strategies the columns start with, one per column (different ones, so the first screen compares)."""

MIN_COLUMNS, MAX_COLUMNS = 2, 4
RULE_SETS: tuple[str, ...] = ("openai", "anthropic")

VERDICT_RULE = ("Among the strategies whose result fits the budget and has no error under the OpenAI or "
                "Anthropic rules, the one that keeps the most facts (retention) wins; a tie goes to the one "
                "that saves more tokens, then to the leftmost column.")


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


def measure(plan: Plan, label: str, rules: Sequence[str] = RULE_SETS) -> PlanMetrics:
    """A plan's figures, with its result validated under each rule set."""
    return PlanMetrics(label, plan.tokens_before, plan.tokens_after, plan.removed,
                       plan.retention, plan.fits, {r: tuple(validate(list(plan.messages), r)) for r in rules},
                       tuple(plan.warnings))


def action_table(roles: Sequence[str], tokens: Sequence[int], plans: Sequence[Plan], labels: Sequence[str],
                 action_labels: Mapping[str, str], show_reasons: Sequence[bool] = ()) -> list[dict[str, Any]]:
    """One row per input message (index, role, tokens) and one column per plan with its action,
    written with ``action_labels`` (e.g. ``🟥 dropped``); a plan whose ``show_reasons`` entry is true
    gets the label followed by the plan's reason instead."""
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
            text = action_labels.get(p.actions[i], p.actions[i])
            row[label] = f"{text}: {p.reasons[i]}" if why else text
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
                             "result message": f.index, "input message": origin, "finding": f.message})
    return rows


@dataclass(frozen=True)
class Verdict:
    """The column that wins under ``VERDICT_RULE`` (None when none qualifies) and a sentence."""

    winner: int | None
    text: str


def verdict(metrics: Sequence[PlanMetrics]) -> Verdict:
    """Pick a winner. Among the strategies whose result fits the budget and has no error under the
    OpenAI or Anthropic rules, the one that keeps the most facts (retention) wins; a tie goes to the
    one that saves more tokens, then to the leftmost column. (``VERDICT_RULE`` says the same; the
    page shows it.)"""
    ok = [k for k, m in enumerate(metrics) if m.fits and m.accepted]
    if not ok:
        over = [m.label for m in metrics if not m.fits]
        rejected = [m.label for m in metrics if not m.accepted]
        why = []
        if over:
            why.append(f"over the budget: {', '.join(over)}")
        if rejected:
            why.append(f"rejected by a provider: {', '.join(rejected)}")
        detail = f" ({'; '.join(why)})" if why else ""
        return Verdict(None, f"No strategy qualifies{detail}: raise the limit, or pick or tune other strategies.")
    best = min(ok, key=lambda k: (-(metrics[k].retention or 0.0), -metrics[k].saved, k))
    m = metrics[best]
    kept = "" if m.retention is None else f"keeps {m.retention:.0%} of the facts, "
    ties = [metrics[k].label for k in ok if k != best and metrics[k].retention == m.retention
            and metrics[k].saved == m.saved]
    tie = f" (tied with {', '.join(ties)}; the leftmost wins)" if ties else ""
    others = len(metrics) - len(ok)
    out = f"; {others} of {len(metrics)} did not qualify" if others else ""
    return Verdict(best, f"{m.label} wins: it fits, {kept}and saves {m.saved:,} tokens "
                         f"({m.saved_share:.0%}){tie}{out}.")
