"""When retrieval is unsure: the "no good match" rule, and the values tuned for it.

A query matches nothing well when its best ranking score is below a floor, or when the best
score stands less than a gap above the score at rank ``gap_rank`` (a flat head: no tool stands
out, which is what keyboard mashes, chit-chat and questions from another domain look like). The
gap test needs at least ``gap_rank`` ranked tools; smaller catalogs are judged by the floor alone.

Scores are on the scale of one embedding model, so the tuned values apply only to the model
they were tuned for (:data:`TUNED_RULES`, keyed by model id and hybrid on/off). For any other
model the rule is off and only "no tool reached the threshold" makes a selection unsure.

The values are chosen by ``benchmarks/bench_tools_zh.py`` per model, on the tuning half of each
set the model is the default for (a query is in the tuning half when the sha256 of its ``qid``
is even) and the tuning half of the junk queries: the rule (and the cosine at which two tools
count as copies) that flags the most junk while flagging at most 2% of each set's real tuning
queries. all-MiniLM-L6-v2 (English catalogs): BFCL multi-turn, MetaTool, two near-duplicate
catalogs (BFCL's tools offered by three servers; BFCL + MetaTool numbered copies) and ACEBench
English. USE multilingual (Chinese catalogs) and multilingual-e5-small: this project's Chinese /
mixed catalog and ACEBench Chinese (USE: ACEBench English too). The held-out halves, and the bundled e-commerce queries, report how they do.
Real queries are ranked as ``select()`` ranks them by default: a short follow-up with the earlier
user turns folded in (:mod:`ctxlab.retrieval.context`); the values were re-tuned with that.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import CtxlabError
from ..i18n import T

#: what to send when the query matches nothing well: no tools (only the always-included ones),
#: or every tool of the catalog
ON_NO_MATCH = ("all", "none")
#: "all": a real query wrongly judged unsure still gets the tool it needs (it costs one request's
#: worth of tool tokens), where "none" would leave the agent unable to act on it
DEFAULT_ON_NO_MATCH = "all"
LOCAL_MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
E5_MODEL_ID = "multilingual-e5-small-q4"
USE_MODEL_ID = "use-multilingual-v3"

#: two tools whose vectors are at least this alike count as copies of one tool when the rule
#: judges a ranking: the gap is measured among distinct tools, so a catalog offering the same
#: tool several times (several servers) does not look like a flat head. Per model (cosine scales
#: differ), tuned with the rule (benchmarks/bench_tools_zh.py); other models: DUPLICATE_COSINE.
DUPLICATE_COSINE = 0.95
TUNED_DUPLICATE_COSINE: dict[str, float] = {LOCAL_MODEL_ID: 0.85, E5_MODEL_ID: 0.94, USE_MODEL_ID: 0.85}


def duplicate_cosine(model_id: str) -> float:
    """The cosine at and above which two tools count as copies, for this model."""
    return TUNED_DUPLICATE_COSINE.get(model_id, DUPLICATE_COSINE)


class ConfidenceError(CtxlabError):
    """A bad no-match rule or policy."""


@dataclass(frozen=True)
class NoMatchRule:
    """Unsure when the best score < ``floor``, or best - score at rank ``gap_rank`` < ``gap``
    (``None`` turns a test off)."""

    floor: float | None
    gap: float | None = None
    gap_rank: int = 10
    tuned_for: str = ""

    def __post_init__(self) -> None:
        for name in ("floor", "gap"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, (int, float)) or not -1.0 <= value <= 2.0):
                raise ConfidenceError(f"the no-match {name} must be a score between -1 and 2, got {value!r}",
                                      where=f"no_match.{name}", hint="Use None to turn this test off")
        if not isinstance(self.gap_rank, int) or self.gap_rank < 2:
            raise ConfidenceError(f"gap_rank must be a whole number of at least 2, got {self.gap_rank!r}",
                                  where="no_match.gap_rank")

    def judge(self, scores: Sequence[float]) -> str | None:
        """Why the ranking (scores, best first) matches nothing well, or None when it does."""
        if not scores:
            return T("no tool was ranked")
        best = scores[0]
        if self.floor is not None and best < self.floor:
            return T("the best score {best:.3f} is below the floor {floor:.2f}", best=best, floor=self.floor)
        if self.gap is not None and len(scores) >= self.gap_rank:
            ref = scores[self.gap_rank - 1]
            if best - ref < self.gap:
                return T("no tool stands out: the best score {best:.3f} is only {lead:.3f} above "
                         "rank {rank}'s {ref:.3f} (needs a gap of {gap:.2f})", best=best, lead=best - ref,
                         rank=self.gap_rank, ref=ref, gap=self.gap)
        return None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"floor": self.floor, "gap": self.gap, "gap_rank": self.gap_rank, "tuned_for": self.tuned_for}


#: (model id, hybrid) -> the rule tuned for it (see the module docstring for how)
TUNED_RULES: dict[tuple[str, bool], NoMatchRule] = {
    (LOCAL_MODEL_ID, True): NoMatchRule(0.31, 0.075, 10, f"{LOCAL_MODEL_ID}, hybrid"),
    (E5_MODEL_ID, True): NoMatchRule(0.0, 0.015, 10, f"{E5_MODEL_ID}, hybrid"),
    (USE_MODEL_ID, True): NoMatchRule(0.0, 0.08, 10, f"{USE_MODEL_ID}, hybrid"),  # with short follow-ups folded
    (LOCAL_MODEL_ID, False): NoMatchRule(0.10, 0.05, 10, f"{LOCAL_MODEL_ID}, dense"),
}


#: model id -> the selection threshold tuned for it (``threshold="auto"``; other models: none)
TUNED_THRESHOLDS: dict[str, float] = {LOCAL_MODEL_ID: 0.26, E5_MODEL_ID: 0.83, USE_MODEL_ID: 0.13}


def threshold_for(threshold: float | str | None, model_id: str) -> float | None:
    """The threshold to apply: ``"auto"`` is the one tuned for this model (None when there is none)."""
    if threshold == "auto":
        return TUNED_THRESHOLDS.get(model_id)
    return threshold  # type: ignore[return-value]


def rule_for(no_match: NoMatchRule | str | None, model_id: str, hybrid: bool) -> NoMatchRule | None:
    """The rule to apply: ``"auto"`` picks the tuned one for this model (None when there is none),
    ``None`` or ``"off"`` turns it off, a :class:`NoMatchRule` is used as given."""
    if isinstance(no_match, NoMatchRule) or no_match is None:
        return no_match
    if no_match == "off":
        return None
    if no_match == "auto":
        return TUNED_RULES.get((model_id, bool(hybrid)))
    raise ConfidenceError(f"unknown no-match rule {no_match!r}", where="no_match",
                          hint="Use 'auto', 'off', None or a NoMatchRule")


def check_policy(on_no_match: str) -> str:
    """The policy, checked."""
    if on_no_match not in ON_NO_MATCH:
        raise ConfidenceError(f"on_no_match must be one of {', '.join(ON_NO_MATCH)}, got {on_no_match!r}",
                              where="on_no_match", hint="'all' sends every tool, 'none' sends none")
    return on_no_match
