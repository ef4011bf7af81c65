"""``hybrid``: runs ``middle_out`` and ``oldest_first``, scores both results (facts kept, recent
messages kept, fit) and keeps the better.

Removes whole groups and keeps its books as ``middle_out`` does (see that module)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar


from ..i18n import N_, T, Text
from .base import Strategy, param, register
from .plan import Plan, _kept_indexes, _sums_and_facts, make_plan, settle, texts
from .view import Budget, View
from .middle_out import MiddleOut
from .oldest_first import OldestFirst


SCORE_WEIGHTS = {"retention": 0.6, "recent_kept": 0.3, "fits": 0.1}
OVER_BUDGET_FACTOR = 0.1


@register
@dataclass(frozen=True)
class Hybrid(Strategy):
    """Run ``middle_out`` and ``oldest_first`` (each with its defaults), score both results, keep
    the better.

    ``score = 0.6 * retention + 0.3 * recent_kept + 0.1 * fits``, where ``retention`` is the share of
    the conversation's facts still in the result (1 when there are none), ``recent_kept`` the share
    of the messages of the newest ``recent_turns`` turns that are kept, and ``fits`` 1 when the
    result fits the budget. A result that does not fit scores a tenth of that (at most 0.09): a
    provider rejects it, so it wins only against another result that does not fit. The analysis
    (messages, tool-result share of tokens, share of tokens over budget) goes into the stats and
    breaks a tie: ``oldest_first`` when tool results are at least half the tokens (it removes them
    first), else ``middle_out``. The plan is the winner's, and every reason says so.
    """

    name: ClassVar[str] = "hybrid"
    title: ClassVar[str] = N_("Hybrid (best of middle out and oldest first)")
    summary: ClassVar[str] = N_("Runs middle out and oldest first, scores both on facts kept, recent messages kept "
                              "and fit, and keeps the better.")
    recent_turns: int = param(3, min=1, max=10_000, help=N_("How many newest turns count as recent in the score."))

    def _score(self, view: View, budget: Budget, actions: list[str]) -> dict:
        """The score of settled decisions and its parts."""
        kept, removed = _kept_indexes(actions)  # middle_out and oldest_first only keep or drop
        sums, mask = _sums_and_facts(view, kept, removed, actions, {})
        kept_tokens = sum(sums.values())
        retention = mask.bit_count() / len(view.facts) if view.facts else 1.0
        turns = view.seg.turns
        start = turns[-min(self.recent_turns, len(turns))][0] if turns else 0
        recent_kept = actions[start:].count("keep") / (len(actions) - start) if len(actions) > start else 1.0
        fits = kept_tokens <= budget.available
        parts = {"retention": retention, "recent_kept": recent_kept, "fits": float(fits)}
        score = sum(SCORE_WEIGHTS[k] * v for k, v in parts.items()) * (1.0 if fits else OVER_BUDGET_FACTOR)
        return {"score": round(score, 4), **{k: round(v, 4) for k, v in parts.items()}}

    def apply(self, view: View, budget: Budget) -> Plan:
        """Plan with both strategies, keep the better by score."""
        total = view.total
        tool = view.category_sums.get("tool_results", 0)  # kept per view (and extended by append)
        analysis = {"messages": len(view), "tool_result_share": round(tool / total, 4) if total else 0.0,
                    "over_budget_fraction": round(max(total - budget.available, 0) / total, 4) if total else 0.0}
        decided, scores = {}, {}
        for s in (MiddleOut(), OldestFirst()):
            d = decided[s.name] = s.decide(view, budget)
            settle(view, d.actions, d.reasons)
            scores[s.name] = self._score(view, budget, d.actions)
        a, b = scores["middle_out"]["score"], scores["oldest_first"]["score"]
        if a != b:
            win, why = ("middle_out" if a > b else "oldest_first"), T("higher score")
        else:
            prefer_tools = analysis["tool_result_share"] >= 0.5
            win = "oldest_first" if prefer_tools else "middle_out"
            why = (T("a tie; tool results are at least half the tokens") if prefer_tools else
                   T("a tie; tool results are under half the tokens"))
        lose = "oldest_first" if win == "middle_out" else "middle_out"
        chose = dict(win=win, score=scores[win]['score'], other=scores[lose]['score'])
        head = (T("hybrid chose {win} (score {score:.2f} vs {other:.2f})", **chose) if a != b else
                T("hybrid chose {win} (score {score:.2f} vs {other:.2f}, {why})", why=why, **chose))
        d = decided[win]
        stats = {"chosen": win, "why": why, **analysis, **{f"score.{k}": v["score"] for k, v in scores.items()},
                 "score_parts": scores, **{f"{win}.{k}": v for k, v in d.stats.items()}}
        return make_plan(view, budget, self.name, self.params(), d.actions, _headed(view, head, d.reasons),
                         warnings=d.warnings, stats=stats, settle_first=False,
                         idle=T("hybrid chose {win}, which removed nothing: {idle}", win=win, idle=d.idle))


def _headed(view: View, head: Text, reasons: Sequence[str]) -> list[Text]:
    """Each reason behind ``head`` ("hybrid chose ...: reason"), one text per distinct reason (kept
    in the view's ``texts`` memo, so the next plan with the same head reuses them)."""
    made: dict[int, Text] = {}
    shared = texts(view)
    out = []
    for r in reasons:
        t = made.get(id(r))
        if t is None:
            key = ("headed", head, r, type(r))
            t = shared.get(key)
            if t is None:
                t = shared[key] = T("{head}: {reason}", head=head, reason=r)
            made[id(r)] = t
        out.append(t)
    return out
