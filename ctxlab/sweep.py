"""Sweeps: many parameter values and budgets, over many conversations, and a pick by a stated rule.

``run_sweep(conversations, Grid.parse(["sliding_window"], ["sliding_window.buffer_ratio=0.1,0.3"]),
budgets=[3000, 6000])`` replays every point (a strategy, its parameters, a context limit) on every
conversation, measures each replay (tokens, fit, provider validity, fact retention,
``needed_recall``, cost with prompt cache) and aggregates per point. ``SweepResult`` holds the
points, the Pareto front on two axes and the recommendation (``RECOMMENDATION_RULE``).

Work is split by conversation into chunks that run on local processes (``workers``, every core by
default) or on a Dask cluster (``scheduler="tcp://host:port"``); results are gathered in
conversation order, so they are identical whatever the executor or the number of workers (only
``plan_ms``, a timing, differs).
"""
from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import math
import os
import random
import sys
import time
import types
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from .conversation import Conversation
from .i18n import N_, T, Tn, _, listing
from .errors import CtxlabError
from .fidelity import needed_facts
from .measure import measure
from .pricing import Price, PriceTable, load_prices
from .strategies import STRATEGIES, Budget, StrategyError, get_strategy, parse_param
from .tokens import TokenCounter
from .tools_per_call import TOOL_MODES, tools_per_call
from .validate import FindingKey, input_finding_keys, introduced_findings, validate

DEFAULT_MIN_RECALL = 0.95
DASK_CONNECT_TIMEOUT = 10  # seconds to reach a scheduler before saying it cannot be reached
DEFAULT_AXES = ("cost_usd", "needed_recall")
RECOMMENDATION_RULE = N_("The cheapest point (lowest cost_usd; input_tokens_total when the model has no price) "
                       "whose every model call fits the limit (calls_over_limit = 0), whose needed_recall is at least "
                       "{min_recall:.2f} and whose output no provider rejects (invalid = 0); among points within 1% of "
                       "that cost, one whose strategy has a native framework export is preferred, then the higher "
                       "needed_recall, then the earlier point. When no point fits every call, the point with the "
                       "fewest calls over the limit is named instead, and the notes say it does not fit.")
UNRECOVERABLE_RULE = N_("Unrecoverable losses are a hard constraint: a point that loses a needed fact no tool call can "
                        "bring back (unrecoverable > 0: a fact the user gave, or from a result that changed since) is "
                        "picked only when every otherwise qualifying point loses one.")
"""Appended to the rule unless the sweep allows unrecoverable losses (``allow_unrecoverable``)."""
TOTAL_COST_RULE = N_("Cost here is total_cost_usd: cost_usd plus the modelled re-fetches of lost facts (one more "
                     "call each, with the prompt at that point and the result's tokens: a model, not a bill).")
"""Appended to the rule when the sweep ranks by ``total_cost_usd``."""
NATIVE_TIE = 0.01
"""Points whose cost is within this share of the cheapest qualifying point count as equals."""
MAXIMIZE = {"needed_recall", "retention", "fits_rate", "saved", "cached_share"}
"""Columns where more is better (the others, calls_over_limit and worst_prompt included, are minimized)."""
COLUMNS = ("strategy", "params", "max_tokens", "conversations", "calls", "calls_over_limit", "worst_prompt",
           "fits_rate", "needed_recall", "cost_usd", "cost_vs_none", "total_cost_usd", "tokens_final_mean",
           "tokens_final_p95", "saved", "invalid", "retention", "input_tokens_total", "cached_share", "cache_breaks",
           "cache_tokens_lost", "read_backs_model", "refetches", "refetch_tokens", "refetch_cost_usd", "unrecoverable",
           "plan_ms")


class SweepError(CtxlabError):
    """A grid, budget list or conversation set a sweep cannot run."""


def _split_values(raw: str) -> list[str]:
    """``a,b,[c,d]``: commas split values except inside brackets (list-valued parameters)."""
    out, depth, cur = [], 0, ""
    for ch in raw:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch == "["
        depth -= ch == "]"
        cur += ch
    out.append(cur)
    return [v.strip() for v in out]


@dataclass(frozen=True)
class Grid:
    """Strategies and, per strategy, the values to try for some of its parameters (the others keep
    their defaults). ``combos()`` is the full product in a fixed order; ``sample(n, seed)`` a seeded
    random subset of it."""

    strategies: tuple[str, ...]
    values: Mapping[str, Mapping[str, tuple[Any, ...]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.strategies:
            raise SweepError("a sweep needs at least one strategy", where="--strategy",
                             hint=f"Known strategies: {', '.join(STRATEGIES)}")
        for name in self.strategies:
            if name not in STRATEGIES:
                raise SweepError(f"unknown strategy {name!r}", where="--strategy",
                                 hint=f"Known strategies: {', '.join(STRATEGIES)}")
        for name in self.values:
            if name not in self.strategies:
                raise SweepError(f"the grid names {name!r}, which is not one of the strategies swept",
                                 where="--grid", hint=f"Add --strategy {name}, or fix the name")
        for name, params in self.combos():  # every value is checked when the grid is made
            get_strategy(name, **params)

    @classmethod
    def parse(cls, strategies: Sequence[str], specs: Sequence[str] = ()) -> "Grid":
        """From ``NAME.KEY=V1,V2`` strings (values typed by the strategy's schema; a list value is
        written ``[a,b]``)."""
        values: dict[str, dict[str, tuple[Any, ...]]] = {}
        for spec in specs:
            key, sep, raw = spec.partition("=")
            name, dot, param = key.strip().partition(".")
            if not sep or not dot or not param:
                raise SweepError(f"bad grid {spec!r}", where="--grid", hint="Write NAME.KEY=V1,V2, e.g. sliding_window.buffer_ratio=0.1,0.3")
            if name not in STRATEGIES:
                raise SweepError(f"unknown strategy {name!r} in grid {spec!r}", where="--grid",
                                 hint=f"Known strategies: {', '.join(STRATEGIES)}")
            items = _split_values(raw)
            if not raw.strip() or any(v == "" for v in items):
                raise SweepError(f"grid {spec!r} has an empty value", where="--grid", hint="List values separated by commas")
            typed = []
            for v in items:
                try:
                    bare = v[1:-1] if v.startswith("[") and v.endswith("]") and '"' not in v else v
                    typed.append(parse_param(STRATEGIES[name], f"{param}={bare}")[1])
                except StrategyError as e:
                    raise SweepError(f"grid {spec!r}: {e.problem}", where="--grid", hint=e.hint) from None
            values.setdefault(name, {})[param] = tuple(dict.fromkeys(typed))
        return cls(tuple(dict.fromkeys(strategies)), values)

    @classmethod
    def from_dict(cls, spec: Mapping[str, Mapping[str, Sequence[Any]]]) -> "Grid":
        """From ``{"sliding_window": {"buffer_ratio": [0.1, 0.3]}, "summarize": {}}``."""
        return cls(tuple(spec), {n: {k: tuple(v) for k, v in p.items()} for n, p in spec.items() if p})

    def combos(self) -> list[tuple[str, dict[str, Any]]]:
        """Every (strategy, params) of the grid, strategy by strategy, in the order given."""
        out = []
        for name in self.strategies:
            axes = self.values.get(name, {})
            keys = list(axes)
            for combo in itertools.product(*(axes[k] for k in keys)):
                out.append((name, dict(zip(keys, combo))))
        return out

    def sample(self, n: int, seed: int = 0) -> list[tuple[str, dict[str, Any]]]:
        """``n`` combos drawn without replacement with ``random.Random(seed)``, in grid order."""
        combos = self.combos()
        if n <= 0:
            raise SweepError(f"a sample needs at least one point, got {n}", where="--sample")
        keep = sorted(random.Random(seed).sample(range(len(combos)), min(n, len(combos))))
        return [combos[k] for k in keep]


@dataclass(frozen=True)
class PointSpec:
    """One point: a strategy, its parameters and a context limit."""

    strategy: str
    params: Mapping[str, Any]
    max_tokens: int


class _Checks:
    """The sweep's observer of a replay (beside the measure's own): provider validity of the prompt at
    every call where the strategy changed something, and at the last call."""

    def __init__(self, validate_prompts: bool, inherited: frozenset[FindingKey] = frozenset()) -> None:
        self.validate_prompts = validate_prompts
        self.inherited = inherited  # the input's own errors: never the strategy's fault
        self.invalid = False
        self.final: Any = None  # the last call's prompt view

    def _check(self, view: Any) -> None:
        """Invalid when the prompt has an error the input does not have at the same message."""
        found = [f for rules in ("openai", "anthropic") for f in validate(list(view.messages), rules)
                 if f.severity == "error"]
        self.invalid = bool(introduced_findings(found, view.origin, self.inherited))

    def __call__(self, call: Any, view: Any) -> None:
        self.final = view
        if self.validate_prompts and not self.invalid and call.triggered:
            self._check(view)


def _measure(conv: Conversation, nf: Any, point: PointSpec | None, model: str, price: Price | None,
             tools_tokens: int, reserve: float, max_tokens: int,
             inherited: frozenset[FindingKey] = frozenset(), per_call: Any = None) -> dict[str, Any]:
    """One conversation under one point (None: the ``none`` baseline), replayed call by call.
    Validity is checked on every call whose prompt the strategy changed and on the last call (a
    call where it changed nothing sends the prompt checked before plus original messages); an
    error the input has at the same message (``inherited``) is the input's, not the point's."""
    strategy = get_strategy("none") if point is None else get_strategy(point.strategy, **point.params)
    budget = Budget.for_model(model, reserve=reserve, tools_tokens=tools_tokens, max_tokens=max_tokens)
    checks = _Checks(point is not None, inherited)
    t0 = time.perf_counter()
    done = measure(conv, strategy, budget, model=model, price=price, facts=nf, tools=per_call, observe=[checks],
                   baseline=False)
    r, fid, cost, breaks = done.replay, done.fidelity, done.cost, done.breaks
    if checks.validate_prompts and checks.final is not None and not checks.invalid:
        checks._check(checks.final)
    seconds = time.perf_counter() - t0
    last = r.calls[-1] if r.calls else None
    return {"tokens_final": last.tokens_after if last else 0, "tokens_before": last.tokens_before if last else 0,
            "fits": r.fits, "calls": len(r.calls), "calls_over_limit": r.calls_over_limit,
            "worst": r.worst.tokens_after if r.worst else 0, "invalid": checks.invalid,
            "retention": _retention(checks.final),
            "needed": fid.needed, "served": fid.served, "input": cost.input_tokens, "cached": cost.cached_tokens,
            "cost": cost.cost_usd, "seconds": seconds, "applications": r.applications,
            "read_backs_model": cost.read_backs, "refetches": cost.refetches, "refetch_tokens": cost.refetch_tokens,
            "refetch_cost": cost.refetch_cost_usd, "unrecoverable": fid.unrecoverable, "cache_breaks": len(breaks),
            "cache_tokens_lost": sum(b.tokens_lost for b in breaks)}


def _retention(view: Any) -> float | None:
    """Share of the facts (the conversation's, or found automatically) the last prompt holds."""
    if view is None or not view.facts:
        return None
    mask = 0
    for m in view.fact_masks:
        mask |= m
    return bin(mask).count("1") / len(view.facts)


def evaluate_chunk(chunk: Sequence[tuple[int, Conversation]], points: Sequence[PointSpec], model: str | None,
                   price: Price | None, reserve: float, tools_mode: str = "all") -> list[dict[str, Any]]:
    """The work of one executor task: every point (and the ``none`` baseline) on each conversation
    of ``chunk``. Returns one record per conversation, in order."""
    out = []
    for index, conv in chunk:
        try:
            out.append(_evaluate_one(index, conv, points, model, price, reserve, tools_mode))
        except CtxlabError as e:  # say which conversation (and file) could not be measured
            source = conv.metadata.get(SOURCE_KEY)
            raise SweepError(f"conversation {index}{f' ({source})' if source else ''}: {e}") from None
    return out


SOURCE_KEY = "x-ctxlab-source"
"""Metadata key ``load_conversations`` sets to the file (and JSONL line) a conversation came from."""


def _evaluate_one(index: int, conv: Conversation, points: Sequence[PointSpec], model: str | None,
                  price: Price | None, reserve: float, tools_mode: str = "all") -> dict[str, Any]:
    m = model or conv.model or "gpt-4o"
    tools = TokenCounter(m).tools(conv.tools)
    per_call = None if tools_mode == "all" else tools_per_call(conv, tools_mode, model=m)
    nf = needed_facts(conv)
    inherited = input_finding_keys(conv)
    base = _measure(conv, nf, None, m, price, tools, reserve, max(p.max_tokens for p in points), per_call=per_call)
    return {"index": index, "none": base, "input_errors": sorted(inherited, key=_key_order),
            "points": [_measure(conv, nf, p, m, price, tools, reserve, p.max_tokens, inherited, per_call)
                       for p in points]}


def _key_order(key: FindingKey) -> tuple[str, str, int]:
    return key[0], key[1], -1 if key[2] is None else key[2]


def _p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return float(ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]) if ordered else 0.0


def _aggregate(spec: PointSpec, rows: Sequence[dict[str, Any]], none: Sequence[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    needed = sum(r["needed"] for r in rows)
    inputs = sum(r["input"] for r in rows)
    none_inputs = sum(r["input"] for r in none)
    costs = [r["cost"] for r in rows]
    cost = None if any(c is None for c in costs) else sum(costs)
    none_cost = None if any(r["cost"] is None for r in none) else sum(r["cost"] for r in none)
    refetch_cost = None if any(r["refetch_cost"] is None for r in rows) else sum(r["refetch_cost"] for r in rows)
    kept = [r["retention"] for r in rows if r["retention"] is not None]
    calls = sum(r["calls"] for r in rows)
    return {"strategy": spec.strategy, "params": dict(spec.params), "max_tokens": spec.max_tokens, "conversations": n,
            "calls": calls, "calls_over_limit": sum(r["calls_over_limit"] for r in rows),
            "worst_prompt": max((r["worst"] for r in rows), default=0),
            "tokens_final_mean": sum(r["tokens_final"] for r in rows) / n,
            "tokens_final_p95": _p95([r["tokens_final"] for r in rows]),
            "saved": 1 - inputs / none_inputs if none_inputs else 0.0,
            "fits_rate": sum(r["fits"] for r in rows) / n if n else 0.0, "invalid": sum(r["invalid"] for r in rows),
            "retention": sum(kept) / len(kept) if kept else None,
            "needed_recall": sum(r["served"] for r in rows) / needed if needed else None,
            "input_tokens_total": inputs, "cached_share": sum(r["cached"] for r in rows) / inputs if inputs else 0.0,
            "read_backs_model": sum(r.get("read_backs_model", 0) for r in rows),
            "refetches": sum(r["refetches"] for r in rows), "refetch_tokens": sum(r["refetch_tokens"] for r in rows),
            "refetch_cost_usd": refetch_cost, "unrecoverable": sum(r["unrecoverable"] for r in rows),
            "total_cost_usd": None if cost is None or refetch_cost is None else cost + refetch_cost,
            "cache_breaks": sum(r["cache_breaks"] for r in rows),
            "cache_tokens_lost": sum(r["cache_tokens_lost"] for r in rows),
            "cost_usd": cost, "cost_vs_none": (cost / none_cost - 1) if cost is not None and none_cost else None,
            "plan_ms": 1000 * sum(r["seconds"] for r in rows) / calls if calls else 0.0}


def _axis_value(point: Mapping[str, Any], axis: str) -> float | None:
    if axis == "total_cost_usd" and point.get("total_cost_usd") is None and point.get("input_tokens_total") is not None:
        return float(point["input_tokens_total"] + point.get("refetch_tokens", 0))  # no price: tokens, re-fetches in
    if axis == "cost_usd" and point.get("cost_usd") is None:
        axis = "input_tokens_total"
    v = point.get(axis)
    if v is None:
        return None
    return -float(v) if axis in MAXIMIZE else float(v)


def pareto_front(points: Sequence[Mapping[str, Any]], axes: tuple[str, str] = DEFAULT_AXES) -> list[int]:
    """Indexes of the points no other point beats on both axes (each axis minimized, except
    recall, retention, fit, savings and cached share, which are maximized); points missing a
    value are left out. ``cost_usd`` falls back to ``input_tokens_total`` without a price;
    ``total_cost_usd`` (cost with the modelled re-fetches of lost facts) to ``input_tokens_total``
    plus ``refetch_tokens``."""
    for a in axes:
        if a not in COLUMNS or a in ("strategy", "params"):
            raise SweepError(f"unknown axis {a!r}", where="axes", hint=f"Use two of {', '.join(COLUMNS[2:])}")
    vals = [(_axis_value(p, axes[0]), _axis_value(p, axes[1])) for p in points]
    front = []
    for k, (x, y) in enumerate(vals):
        if x is None or y is None:
            continue
        beaten = any(ox is not None and oy is not None and ox <= x and oy <= y and (ox < x or oy < y)
                     for ox, oy in vals)
        if not beaten:
            front.append(k)
    return front


def _has_native(strategy: str) -> bool:
    """Whether some framework export maps ``strategy`` (LangChain, Anthropic, OpenAI Agents...)."""
    from .configs import TARGETS  # the framework modules register themselves on import
    return any(strategy in exporters for exporters in TARGETS.values())


def recommend(points: Sequence[Mapping[str, Any]], min_recall: float = DEFAULT_MIN_RECALL, *,
              allow_unrecoverable: bool = False, cost: str = "cost_usd") -> int | None:
    """The index of the point ``RECOMMENDATION_RULE`` picks, or None when none qualifies.

    Unless ``allow_unrecoverable``, ``UNRECOVERABLE_RULE`` holds: among the points that qualify
    otherwise (the fitting ones, or all of them when none fits), those with ``unrecoverable`` = 0
    are the only candidates when there is one. ``cost``: the column ranked, ``cost_usd`` or
    ``total_cost_usd`` (re-fetches included, ``TOTAL_COST_RULE``)."""
    good = [k for k, p in enumerate(points) if p["invalid"] == 0 and _recall(p) >= min_recall]
    fitting = [k for k in good if points[k].get("calls_over_limit", 0) == 0]
    pool = fitting or good
    clean = [k for k in pool if not points[k].get("unrecoverable", 0)]
    if not allow_unrecoverable and clean:
        pool = clean
    if not fitting:
        if not pool:
            return None
        return min(pool, key=lambda k: (points[k].get("calls_over_limit", 0), _axis_value(points[k], cost),
                                        -_recall(points[k]), k))
    cheapest = min(_axis_value(points[k], cost) for k in pool)
    equals = [k for k in pool if _axis_value(points[k], cost) <= cheapest + abs(cheapest) * NATIVE_TIE]
    return min(equals, key=lambda k: (not _has_native(points[k].get("strategy", "")), -_recall(points[k]),
                                      _axis_value(points[k], cost), k))


def _recall(point: Mapping[str, Any]) -> float:
    """A point's needed recall; 1.0 when the conversations need no fact (nothing could be lost:
    ``recommendation_notes`` says the pick was made on cost and fit alone)."""
    r = point.get("needed_recall")
    return 1.0 if r is None else r


def recommendation_notes(points: Sequence[Mapping[str, Any]], pick: int | None, min_recall: float) -> list[str]:
    """What a reader must know about the pick: that it does not fit every call, or that none qualified."""
    if pick is None:
        return [T("no point serves at least {level:.0%} of the needed facts with a valid output: lower "
                  "--min-recall, raise the limit, or vary other parameters", level=min_recall)]
    p = points[pick]
    notes = []
    if "needed_recall" in p and p["needed_recall"] is None:
        notes.append(T("no needed fact was found in these conversations (no later call reuses an earlier value): "
                       "the pick is made on fit and cost alone"))
    if p.get("unrecoverable", 0):
        notes.append(T("the recommendation loses {n:,} needed fact(s) no re-fetch brings back (the user's, or from "
                       "a result that changed since)",
                       n=p["unrecoverable"]))
    if p.get("calls_over_limit", 0):
        notes.append(T("no point fits every model call: the recommendation is the closest, {over:,} of {calls:,} "
                       "calls over the {limit:,}-token limit (largest prompt {largest:,}); raise the limit or vary "
                       "other parameters", over=p["calls_over_limit"], calls=p["calls"], limit=p["max_tokens"],
                       largest=p["worst_prompt"]))
    return notes


def scaled_params(name: str, params: Mapping[str, Any], max_tokens: int, reserve: float,
                  tools_tokens: int = 0) -> dict[str, Any]:
    """``params`` over the strategy's budget-scaled values at ``max_tokens`` with ``tools_tokens``
    of tool definitions (as the Strategy Lab and ``ctxlab replay`` set them): a parameter the grid
    does not vary is scaled to the budget, not left at a peer's default that never acts at this
    limit (a 100,000-token trigger at a 3,000-token limit)."""
    cls = STRATEGIES[name]
    budget = Budget(max_tokens, reserve, tools_tokens)
    scaled = cls.budget_scaled(budget)
    resolved = cls.scaled_defaults(budget)
    return {**{k: resolved[k] for k in scaled if k in resolved}, **params}


@dataclass(frozen=True)
class SweepResult:
    """Aggregated points, the Pareto front, the recommendation, the ``none`` baseline, and notes."""

    points: tuple[dict[str, Any], ...]
    pareto: tuple[int, ...]
    recommendation: int | None
    baseline: Mapping[str, Any]
    axes: tuple[str, str]
    min_recall: float
    model: str | None
    notes: tuple[str, ...] = ()
    input_errors: tuple[dict[str, Any], ...] = ()
    """The errors the conversations have as logged (``conversation``, ``rules``, ``code``,
    ``message``), listed once: they count against no point."""
    allow_unrecoverable: bool = False
    """Whether the recommendation let unrecoverable losses pass (``recommend``)."""
    cost: str = "cost_usd"
    """The cost column the recommendation ranks: ``cost_usd`` or ``total_cost_usd``."""

    @property
    def rule(self) -> str:
        """The recommendation rule, with its recall level, the unrecoverable-loss constraint and the cost ranked."""
        parts = [_(RECOMMENDATION_RULE).format(min_recall=self.min_recall)]
        if not self.allow_unrecoverable:
            parts.append(_(UNRECOVERABLE_RULE))
        if self.cost == "total_cost_usd":
            parts.append(_(TOTAL_COST_RULE))
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """``{"points": [...], "pareto": [...], "recommendation": {point} or null, ...}``."""
        return {"points": [dict(p) for p in self.points], "pareto": list(self.pareto),
                "recommendation": None if self.recommendation is None else dict(self.points[self.recommendation]),
                "recommendation_index": self.recommendation, "rule": self.rule, "axes": list(self.axes),
                "allow_unrecoverable": self.allow_unrecoverable, "cost": self.cost,
                "baseline": dict(self.baseline), "model": self.model, "notes": list(self.notes),
                "input_errors": [dict(e) for e in self.input_errors]}

    def to_csv(self) -> str:
        """One row per point (params as JSON), plus ``pareto`` and ``recommended`` columns."""
        import json
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([*COLUMNS, "pareto", "recommended"])
        front = set(self.pareto)
        for k, p in enumerate(self.points):
            w.writerow([json.dumps(p[c], sort_keys=True) if c == "params" else ("" if p[c] is None else p[c])
                        for c in COLUMNS] + [k in front, k == self.recommendation])
        return buf.getvalue()


Progress = Callable[[int, int], None]


def _chunks(items: Sequence[tuple[int, Conversation]], size: int) -> list[list[tuple[int, Conversation]]]:
    return [list(items[k:k + size]) for k in range(0, len(items), size)]


@contextmanager
def workers_start_clean() -> Iterable[None]:
    """Let worker processes start while ``__main__`` is a script another runner executes.

    A process started by ``spawn`` or ``forkserver`` re-runs the parent's ``__main__`` file. Under
    Streamlit (and its AppTest) ``__main__`` is the page being run, which must not run again in a
    worker: it needs the app's session and, run bare, fails or redraws the page. When ``__main__``
    names a file that is not the program that started the process (``sys.argv[0]``), a bare module
    stands in for it while the workers start. A script run as ``python my_sweep.py`` keeps its
    ``__main__``, so classes it defines still reach the workers.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    argv0 = sys.argv[0] if sys.argv else ""
    try:
        borrowed = bool(path) and not (argv0 and os.path.samefile(path, argv0))
    except OSError:  # either file is gone or never was one (``python -c``)
        borrowed = bool(path)
    if not borrowed:
        yield
        return
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def _run_local(tasks: list[list[tuple[int, Conversation]]], args: tuple, workers: int,
               progress: Progress | None) -> list[list[dict[str, Any]]]:
    if workers <= 1 or len(tasks) <= 1:
        out = []
        for k, task in enumerate(tasks):
            out.append(evaluate_chunk(task, *args))
            if progress:
                progress(k + 1, len(tasks))
        return out
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["ctxlab.sweep"])
    results: list[Any] = [None] * len(tasks)
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        with workers_start_clean():  # processes start on the first submits
            futures = {pool.submit(evaluate_chunk, task, *args): k for k, task in enumerate(tasks)}
        for done, fut in enumerate(as_completed(futures), 1):
            results[futures[fut]] = fut.result()
            if progress:
                progress(done, len(tasks))
    return results


def _run_dask(tasks: list[list[tuple[int, Conversation]]], args: tuple, scheduler: Any,
              progress: Progress | None) -> list[list[dict[str, Any]]]:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise SweepError("a Dask scheduler needs the distributed package", where="--scheduler",
                         hint="pip install 'dask[distributed]'") from None
    own = not isinstance(scheduler, Client)
    try:
        client = Client(scheduler, timeout=DASK_CONNECT_TIMEOUT) if own else scheduler
    except (OSError, TimeoutError) as e:
        raise SweepError(f"cannot reach the Dask scheduler at {scheduler} ({e})", where="--scheduler",
                         hint="Start one with `dask scheduler` or give tcp://HOST:PORT of a running one") from None
    try:
        futures = [client.submit(evaluate_chunk, task, *args, pure=False) for task in tasks]
        index = {f.key: k for k, f in enumerate(futures)}
        results: list[Any] = [None] * len(tasks)
        for done, fut in enumerate(as_completed(futures), 1):
            results[index[fut.key]] = fut.result()
            if progress:
                progress(done, len(tasks))
        return results
    finally:
        if own:
            client.close()


def _price_for(prices: Price | PriceTable | None, model: str | None,
               convs: Sequence[Conversation]) -> Price | None:
    if isinstance(prices, Price):
        return prices
    table = prices or load_prices()
    return table.get(model or convs[0].model or "gpt-4o")


def run_sweep(conversations: Iterable[Conversation], grid: Grid, budgets: Sequence[int], *, model: str | None = None,
              prices: Price | PriceTable | None = None, workers: int | None = None, scheduler: Any = None,
              sample: int | None = None, seed: int = 0, min_recall: float = DEFAULT_MIN_RECALL,
              axes: tuple[str, str] = DEFAULT_AXES, reserve: float = 0.15, chunk_size: int | None = None,
              progress: Progress | None = None, tools: str = "all", allow_unrecoverable: bool = False) -> SweepResult:
    """Run every point of ``grid`` (or a seeded ``sample`` of its combos) at every budget on every
    conversation; aggregate per point; find the Pareto front on ``axes`` and the recommendation.

    ``workers`` local processes (default: every core; 1 runs in this process) or a Dask
    ``scheduler`` (an address or a ``distributed.Client``). ``prices`` is a Price, a PriceTable
    looked up by ``model`` (default: the conversations' model), or None for the bundled table.
    ``progress(done, total)`` is called as chunks finish. ``tools`` is what each replayed call sends of
    the tool definitions (``ctxlab.tools_per_call``: all, retrieval, deferred), counted in its prompt.
    ``allow_unrecoverable``: see ``recommend`` (default: a point losing a fact no re-fetch recovers is
    picked only when every other qualifying point does too); the recommendation ranks by
    ``total_cost_usd`` when it is one of the ``axes``, else by ``cost_usd``."""
    if tools not in TOOL_MODES:
        raise SweepError(f"tools must be one of {', '.join(TOOL_MODES)}, got {tools!r}", where="--tools")
    tools_mode = tools
    budgets = list(dict.fromkeys(budgets))
    if not budgets or any(not isinstance(b, int) or isinstance(b, bool) or b <= 0 for b in budgets):
        raise SweepError(f"budgets must be positive whole numbers of tokens, got {budgets}", where="--max-tokens",
                         hint="e.g. --max-tokens 3000,6000")
    if not 0 <= min_recall <= 1:
        raise SweepError(f"the recall level must be between 0 and 1, got {min_recall}", where="--min-recall")
    combos = grid.sample(sample, seed) if sample else grid.combos()
    convs = list(conversations)
    notes = [] if tools == "all" else [T("every replayed call sends the tool definitions of the {mode} mode "
                                         "(ctxlab.tools_per_call), counted in its prompt and budget", mode=tools)]
    usable = [(k, c) for k, c in enumerate(convs) if any(m.role == "user" for m in c.messages)]
    if len(usable) < len(convs):
        notes.append(T("{n} conversation(s) without a user message were left out", n=len(convs) - len(usable)))
    if not usable:
        raise SweepError("no conversation with a user turn to replay", where="conversations",
                         hint="Give conversations that have at least one user message")
    tools = _shared_tools_tokens([c for _, c in usable], model)
    specs = [PointSpec(name, scaled_params(name, params, b, reserve, tools), b) for name, params in combos
             for b in budgets]
    price = _price_for(prices, model, [c for _, c in usable])
    if price is None:
        notes.append(T("no price for model {model}: cost_usd is empty; the Pareto front and recommendation use "
                       "input_tokens_total", model=repr(model or usable[0][1].model or "gpt-4o")))
    n_workers = workers or os.cpu_count() or 1
    size = chunk_size or max(1, math.ceil(len(usable) / (max(n_workers, 1) * 4)))
    tasks = _chunks(usable, size)
    args = (specs, model, price, reserve, tools_mode)
    chunks = _run_dask(tasks, args, scheduler, progress) if scheduler is not None else \
        _run_local(tasks, args, n_workers, progress)
    records = [rec for chunk in chunks for rec in chunk]
    none = [rec["none"] for rec in records]
    points = tuple(_aggregate(spec, [rec["points"][k] for rec in records], none) for k, spec in enumerate(specs))
    baseline = _aggregate(PointSpec("none", {}, max(budgets)), none, none)
    front = tuple(pareto_front(points, axes))
    cost = "total_cost_usd" if "total_cost_usd" in axes else "cost_usd"
    pick = recommend(points, min_recall, allow_unrecoverable=allow_unrecoverable, cost=cost)
    input_errors = tuple({"conversation": rec["index"], "rules": r, "code": c, "message": i}
                         for rec in records for r, c, i in rec["input_errors"])
    if input_errors:
        notes.append(_input_errors_note(input_errors))
    notes += recommendation_notes(points, pick, min_recall)
    return SweepResult(points, front, pick, baseline, tuple(axes), min_recall, model or usable[0][1].model,
                       tuple(notes), input_errors, allow_unrecoverable, cost)


def _shared_tools_tokens(convs: Sequence[Conversation], model: str | None) -> int:
    """The tokens of the tool definitions when every conversation sends the same amount (one agent's
    sessions; a single conversation), so a point's scaled parameters are the ones the Strategy Lab
    and ``ctxlab replay`` pick for it; 0 when they differ (one set of parameters serves them all)."""
    counts = {TokenCounter(model or c.model or "gpt-4o").tools(c.tools) for c in convs}
    return counts.pop() if len(counts) == 1 else 0


def _input_errors_note(errors: Sequence[Mapping[str, Any]]) -> str:
    """One sentence for the errors the input has as logged: how many, in how many conversations, a
    few of them; they judge no point."""
    convs = sorted({e["conversation"] for e in errors})
    shown = sorted({(e["code"], e["conversation"], e["message"]) for e in errors},
                   key=lambda x: (x[1], -1 if x[2] is None else x[2], x[0]))
    listed = listing(T("{code} in conversation {conv} at message {i}", code=code, conv=conv, i=i)
                     for code, conv, i in shown[:3])
    return T("{n} conversation(s) break a provider's rules as logged ({listed}{more}): those errors are the "
             "input's, listed once under input_errors, and count against no point", n=len(convs), listed=listed,
             more=", ..." if len(shown) > 3 else "")




TRACE_SUFFIXES = (".json", ".jsonl", ".traj")
"""File endings a folder is searched for: every file ctxlab reads (``.traj.json`` ends in ``.json``)."""


def trace_files(folder: os.PathLike[str] | str, notes: list[str] | None = None) -> list[Path]:
    """Every file of ``folder`` and its subfolders (Codex keeps sessions in ``YYYY/MM/DD``) whose
    name ends in one of ``TRACE_SUFFIXES``, sorted by path. Links are followed once: a link back
    to a folder already searched (a loop) and a name that is not a regular file (a link to a
    device such as ``/dev/zero``, a pipe) are skipped with a note, and so are other files, counted."""
    root = Path(folder)
    found: list[Path] = []
    seen: set[Path] = set()
    others = 0
    stack = [root]
    while stack:
        d = stack.pop()
        real = d.resolve()
        if real in seen:
            _note(notes, T("skipped {path}: a link to a folder already searched (a loop)", path=str(d)))
            continue
        seen.add(real)
        try:
            entries = sorted(d.iterdir())
        except OSError as e:
            _note(notes, T("skipped {path}: cannot list it ({error})", path=str(d), error=e.strerror or str(e)))
            continue
        for f in entries:
            if f.is_dir():
                stack.append(f)
            elif not f.name.lower().endswith(TRACE_SUFFIXES):
                others += 1
            elif f.is_file():
                found.append(f)
            else:
                _note(notes, T("skipped {path}: not a regular file (a device, a pipe or a broken link)",
                               path=str(f)))
    if others:
        _note(notes, Tn("{n} file in {folder} is not .json, .jsonl or .traj: skipped",
                        "{n} files in {folder} are not .json, .jsonl or .traj: skipped", others, folder=str(root)))
    return sorted(found)


def _note(notes: list[str] | None, text: str) -> None:
    if notes is not None:
        notes.append(text)


def load_conversations(paths: Sequence[str], *, max_bytes: int = 50 * 1024 * 1024,
                       notes: list[str] | None = None) -> list[Conversation]:
    """Every conversation in the given files (JSON or JSONL, any format ctxlab reads) and folders
    (``trace_files``: their ``.json``, ``.jsonl`` and ``.traj`` files, subfolders included, sorted
    by path), in order. A file named on its own that is not a conversation is an error naming it;
    one found in a folder is skipped with a note appended to ``notes`` (a folder of samples holds
    tool catalogs too), and so is one larger than ``max_bytes`` (checked before it is read). A
    trace that logs no system prompt or tools gets its unlogged prefix (``ctxlab.prefix``), as the
    other commands and pages count it."""
    from .formats import load_all
    from .formats._json import read_path
    from .prefix import with_unlogged_prefix
    files: list[tuple[Path, bool]] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = trace_files(p, notes)
            if not found:
                raise SweepError(f"no .json, .jsonl or .traj file in folder {raw} or its subfolders", where="FILE")
            files += [(f, True) for f in found]
        elif p.is_file():
            files.append((p, False))
        else:
            raise SweepError(f"no such file or folder: {raw}", where="FILE",
                             hint="Give .json/.jsonl/.traj files or folders")
    out: list[Conversation] = []
    for f, in_folder in files:
        try:
            found = [with_unlogged_prefix(c) for c in  # a trace's unlogged prompt counted, as every command does
                     load_all(read_path(f, max_bytes), max_bytes=max_bytes)]  # the size checked before reading
            out += [dataclasses.replace(c, metadata={**c.metadata, SOURCE_KEY: str(f) if len(found) == 1 else
                                                     f"{f}, conversation {k}"}) for k, c in enumerate(found)]
        except (CtxlabError, OSError) as e:
            if not in_folder:
                raise SweepError(f"{f}: {e}", where="FILE") from None
            _note(notes, T("skipped {file}: not a conversation ({error})", file=str(f), error=str(e)))
    if not out:
        raise SweepError("no conversation found in the files given", where="FILE")
    return out


__all__ = ["COLUMNS", "DEFAULT_AXES", "DEFAULT_MIN_RECALL", "RECOMMENDATION_RULE", "TOTAL_COST_RULE",
           "UNRECOVERABLE_RULE", "Grid", "PointSpec",
           "SweepError", "SweepResult", "TRACE_SUFFIXES", "evaluate_chunk", "load_conversations", "pareto_front", "recommend",
           "recommendation_notes", "run_sweep", "scaled_params"]
