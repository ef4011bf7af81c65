"""The strategy protocol: a frozen object of parameters, checked when built, with one method,
``apply(view, budget) -> Plan``; a registry of them with parameter schemas; and composition,
``a >> b``: apply b to what a leaves."""
from __future__ import annotations

import dataclasses
import math
import json
from dataclasses import dataclass, field
from itertools import compress
from operator import is_not
from typing import Any, ClassVar

from ..i18n import N_, T
from ..errors import CtxlabError
from ..segments import segment
from .plan import Plan, build_plan, replacement_mask
from .view import MEMO_REPLACERS, Budget, View, fact_mask


class StrategyError(CtxlabError):
    """An unknown strategy, or a parameter out of its range."""


TYPICAL_MESSAGE_TOKENS = 1_000
"""The message size budget-scaled windows assume: a tool result of about 4,000 characters of JSON.
Chosen large on purpose: a window counted in messages overflows its budget when the messages are
bigger than assumed (tau-bench airline results reach 2.9K tokens, the bundled samples' 0.6-3.8K),
and under-fills it, harmlessly, when they are smaller."""
WINDOW_SHARE = 0.5
"""Share of the budget's message room that a budget-scaled window of recent messages fills."""
APPLY_AT = ("every_call", "turn_start")
"""Where a strategy runs in an agent loop: before every model call (LangChain agent middleware,
Anthropic context editing, OpenHands condensers), or only when a user message arrives (a trim node
right after START in a LangGraph graph). ``ctxlab.replay`` reads it; a plan on its own ignores it."""
WORKS_ON = ("kept_history", "full_history")
"""What a strategy works on at each model call, as its target framework runs it: ``kept_history``,
the history it keeps (what it left at its last application plus what arrived since: LangChain's
SummarizationMiddleware, OpenHands condensers, Claude Code and Codex compaction rewrite the history
they keep), or ``full_history``, the whole history recomputed at every call (Anthropic context editing,
LangChain's ClearToolUsesEdit, SWE-agent history processors, a LangGraph pre-model hook returning
``llm_input_messages``). ``ctxlab.replay`` reads it; a plan on its own ignores it."""
WORKS_ON_HELP = N_("What the strategy works on at each call: kept_history (what it left at its last application plus "
                   "what arrived since: a history it rewrites, as LangChain's SummarizationMiddleware, OpenHands "
                   "condensers and compaction do) or full_history (the whole history, recomputed at every call: a "
                   "message it removed can come back, as with Anthropic context editing, SWE-agent history processors "
                   "or a LangGraph pre-model hook). The default is how its target framework runs it.")
TRIGGER_SHARE = 0.8
"""Share of the budget's message room at which a budget-scaled trigger fires (``summarize``'s
``trigger_ratio`` default)."""


def budget_window(budget: Budget) -> int:
    """Messages of ``TYPICAL_MESSAGE_TOKENS`` that fill ``WINDOW_SHARE`` of the budget's message
    room (at least 1): the budget-scaled size of a window counted in messages."""
    return max(int(budget.available * WINDOW_SHARE) // TYPICAL_MESSAGE_TOKENS, 1)


def budget_trigger(budget: Budget) -> int:
    """``TRIGGER_SHARE`` of the budget's message room, in tokens (at least 0)."""
    return max(int(budget.available * TRIGGER_SHARE), 0)


def param(default: Any, *, help: str, min: float | None = None, max: float | None = None,
          choices: tuple | None = None, type: str | None = None) -> Any:
    """A strategy parameter: its default and what the app and CLI need to build a control."""
    meta = {"help": help, "min": min, "max": max, "choices": choices, "type": type}
    if isinstance(default, (list, tuple)):
        return field(default=tuple(default), metadata=meta)
    return field(default=default, metadata=meta)


def _type_name(f: dataclasses.Field) -> str:
    if f.metadata.get("type"):
        return f.metadata["type"]
    d = f.default
    return {bool: "bool", int: "int", float: "float", str: "str", tuple: "list[str]"}.get(type(d), "str")


EXTENDS = N_("Extends its previous plan: a call costs what arrived since the last one.")
EXTENDS_WHOLE = N_("Extends its previous plan, but sends the whole history with the old results cleared: building "
                   "that prompt takes a step per cleared result, so a call costs more as the history grows.")
ON_WHAT_IT_LEFT = N_("Works on what it left (a summary or a window): a call costs what it keeps, not the whole "
                     "history.")
PER_RESULT = N_("Rewrites each result as it arrives: a call costs the whole history only when a result is rewritten.")
WHOLE_VIEW = N_("Plans its whole view at every call: a call costs more as what it sends grows.")
COST_PER_CALL = (EXTENDS, EXTENDS_WHOLE, ON_WHAT_IT_LEFT, PER_RESULT, WHOLE_VIEW)
"""What a strategy's cost per model call does as the conversation grows (``Strategy.cost_per_call``)."""


def works_on_param(target: str) -> Any:
    """The ``works_on`` parameter of a strategy whose target framework runs it as ``target`` (a
    strategy class redeclares it: ``works_on: str = works_on_param("full_history")``)."""
    return param(target, choices=WORKS_ON, help=WORKS_ON_HELP)


def _fields(cls_or_obj: Any) -> list[dataclasses.Field]:
    """The dataclass fields, the shared ``apply_at`` and ``works_on`` last (each strategy's own
    parameters first)."""
    fields = dataclasses.fields(cls_or_obj)
    shared = ("apply_at", "works_on")
    return [f for f in fields if f.name not in shared] + [f for n in shared for f in fields if f.name == n]


@dataclass(frozen=True)
class Strategy:
    """Base of every strategy. Subclasses are frozen dataclasses whose fields are ``param(...)``."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    scaling: ClassVar[str] = ""
    """What ``scaled_defaults`` changes and how, in one sentence ("" when nothing depends on the budget)."""
    cost_per_call: ClassVar[str] = WHOLE_VIEW
    """What a replay pays at each model call as the conversation grows, in one sentence (one of the
    ``COST_PER_CALL`` sentences, measured by ``benchmarks/bench_calls.py --only e`` and
    ``bench_strategies.py --only d``)."""
    apply_at: str = param("every_call", choices=APPLY_AT,
                          help=N_("Where the strategy runs in the agent loop: every_call (before every model call, "
                               "as agent middleware does) or turn_start (only when a user message arrives: "
                               "never cuts inside a turn, so a long turn can overflow)."))
    works_on: str = param("kept_history", choices=WORKS_ON, help=WORKS_ON_HELP)  # works_on_param: a target's own

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            self._check(f, getattr(self, f.name))

    def _check(self, f: dataclasses.Field, value: Any) -> None:
        kind, meta = _type_name(f), f.metadata
        where = f"{self.name}.{f.name}"
        ok = {"int": isinstance(value, int) and not isinstance(value, bool),
              "float": isinstance(value, (int, float)) and not isinstance(value, bool),
              "bool": isinstance(value, bool), "str": isinstance(value, str),
              "list[str]": isinstance(value, tuple) and all(isinstance(v, str) for v in value),
              "list[int]": isinstance(value, tuple) and all(isinstance(v, int) for v in value)}.get(kind, True)
        if value is None and f.default is None:
            return
        if not ok:
            raise StrategyError(f"{f.name} must be {kind}, got {value!r}", where=where)
        if kind == "float" and not math.isfinite(value):
            raise StrategyError(f"{f.name} must be a finite number, got {value!r}", where=where)
        if meta.get("min") is not None and value < meta["min"]:
            raise StrategyError(f"{f.name} must be at least {meta['min']}, got {value!r}", where=where)
        if meta.get("max") is not None and value > meta["max"]:
            raise StrategyError(f"{f.name} must be at most {meta['max']}, got {value!r}", where=where)
        if meta.get("choices") and value not in meta["choices"]:
            raise StrategyError(f"{f.name} must be one of {', '.join(map(str, meta['choices']))}, got {value!r}",
                                where=where)

    def apply(self, view: View, budget: Budget) -> Plan:
        """Decide, for every message of ``view``, what to do under ``budget``."""
        raise NotImplementedError

    def quick_idle(self, view: View, budget: Budget) -> bool:
        """True only when ``apply`` would keep every message as it is and leave the state as it is,
        known in constant time from the view's totals (a replay skips the plan then: below a trigger,
        a window that holds everything). False means "apply to find out"."""
        return False

    def params(self) -> dict[str, Any]:
        """The resolved parameters (``apply_at`` and ``works_on`` last)."""
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v)
                for f in _fields(self)}

    @classmethod
    def schema(cls) -> list[dict[str, Any]]:
        """Parameter schema: name, type, default, range or choices, help text."""
        out = []
        for f in _fields(cls):
            d = f.default
            out.append({"name": f.name, "type": _type_name(f), "default": list(d) if isinstance(d, tuple) else d,
                        **{k: (list(v) if isinstance(v, tuple) else v) for k, v in f.metadata.items()
                           if k in ("min", "max", "choices") and v is not None},
                        "help": f.metadata.get("help", "")})
        return out

    @classmethod
    def scaled_defaults(cls, budget: Budget) -> dict[str, Any]:
        """Every parameter's value scaled to ``budget``: the schema's ``default`` stays the documented
        (peer) default; this gives, for a strategy whose defaults are fixed windows or triggers, values
        that make it act at this budget (see ``scaling``), each clamped to the parameter's range.
        Parameters that do not depend on the budget keep their default."""
        specs, scaled = cls.schema(), cls.budget_scaled(budget)
        values = {spec["name"]: spec["default"] for spec in specs}
        for spec in specs:
            if spec["name"] not in scaled:
                continue
            v = scaled[spec["name"]]
            if spec.get("min") is not None:
                v = max(v, type(v)(spec["min"]))
            if spec.get("max") is not None:
                v = min(v, type(v)(spec["max"]))
            values[spec["name"]] = v
        return values

    @classmethod
    def budget_scaled(cls, budget: Budget) -> dict[str, Any]:
        """The parameters this strategy scales to ``budget`` (none here; subclasses override)."""
        return {}

    def __rshift__(self, other: "Strategy") -> "Pipeline":
        """``a >> b``: apply ``b`` to what ``a`` leaves."""
        left = self.steps if isinstance(self, Pipeline) else (self,)
        right = other.steps if isinstance(other, Pipeline) else (other,)
        return Pipeline(steps=left + right, apply_at=self.apply_at, works_on=left[0].works_on)


@dataclass(frozen=True)
class Pipeline(Strategy):
    """Strategies applied one after the other, each to the result of the previous one."""

    name: ClassVar[str] = "pipeline"
    title: ClassVar[str] = N_("Pipeline")
    summary: ClassVar[str] = N_("Strategies in sequence: each works on what the previous one left.")
    steps: tuple[Strategy, ...] = field(default=(), metadata={"help": "the strategies, in order", "type": "steps"})

    def __post_init__(self) -> None:
        if len(self.steps) < 2 or not all(isinstance(s, Strategy) for s in self.steps):
            raise StrategyError("a pipeline needs two or more strategies", where="pipeline.steps")
        if self.apply_at not in APPLY_AT:
            raise StrategyError(f"apply_at must be one of {', '.join(APPLY_AT)}, got {self.apply_at!r}",
                                where="pipeline.apply_at")

    def params(self) -> dict[str, Any]:
        """Each step's name and parameters, and where the pipeline runs."""
        return {"steps": [{"strategy": s.name, "params": s.params()} for s in self.steps], "apply_at": self.apply_at,
                "works_on": self.works_on}

    def quick_idle(self, view: View, budget: Budget) -> bool:
        """Every step would keep everything."""
        return all(s.quick_idle(view, budget) for s in self.steps)

    def apply(self, view: View, budget: Budget) -> Plan:
        """Apply each step to the previous step's result; decisions map back to the input."""
        plan = self.steps[0].apply(view, budget)
        for step in self.steps[1:]:
            plan = _compose(view, budget, plan, step, self)
        return plan


def result_view(view: View, plan: Plan) -> View:
    """A view of what a plan leaves, whose ``origin`` points at the input view's indexes."""
    same_places = _replaced_in_place(view, plan)
    if same_places is not None:
        return same_places
    tokens = plan.output_tokens
    # read the input's entries by index: on a long grown view, its tuples are not built for the few kept
    vcats, vmasks, vmessages = view.entries("categories"), view.entries("fact_masks"), view.entries("messages")
    vorigin = view.entries("origin")
    cats = tuple(vcats[o] if o is not None else "summary" for o in plan.origin)
    # a replaced copy (cleared, cut) holds only facts its original holds: those are searched, once per text
    masks = tuple(vmasks[o] if o is not None and m is vmessages[o] else
                  fact_mask(m, view.facts) if o is None else replacement_mask(view, m, vmasks[o])
                  for m, o in zip(plan.messages, plan.origin))
    pins = frozenset(k for k, o in enumerate(plan.origin) if o is not None and o in view.pins)
    origin = tuple(vorigin[o] if o is not None else None for o in plan.origin)  # the conversation's indexes
    return View(plan.messages, tokens, cats, segment(plan.messages), view.counter, view.facts, masks, pins,
                origin, {**view.state, **plan.state})


def _replaced_in_place(view: View, plan: Plan) -> View | None:
    """``result_view`` of a plan that sends every message of a grown view at its place, some of them
    replaced by a copy of the same role and ids (a result cut, offloaded or cleared): the view's
    columns copied with those entries changed, at C speed, instead of every entry read and the
    whole prompt segmented again. None when the plan is not of that kind."""
    log, n = view._log, len(view)
    if (log is None or len(log) != n or len(plan.messages) != n or not n or plan.origin[0] != 0
            or plan.origin[-1] != n - 1 or None in plan.origin):
        return None
    # n increasing origins, all below n: the plan keeps every message at its place
    swapped = list(compress(range(n), map(is_not, plan.messages, log.messages)))
    replaced = []
    given, masks, out_tokens, swaps = log.messages, log.fact_masks, plan.output_tokens, plan.messages
    for i in swapped:
        old, new = given[i], swaps[i]
        if (new.role != old.role or new.tool_call_id != old.tool_call_id
                or [c.id for c in new.tool_calls] != [c.id for c in old.tool_calls]):
            return None
        replaced.append((i, new, out_tokens[i], replacement_mask(view, new, masks[i])))
    out = View._over(log.with_replaced(replaced), n, view.counter, view.facts, view.pins,
                     {**view.state, **plan.state})
    for key, value in view.__dict__.get("memo", {}).items():
        carry = MEMO_REPLACERS.get(key)
        if carry is not None and (kept := carry(view, out, value, swapped)) is not None:
            out.memo[key] = kept
    return out


def _compose(view: View, budget: Budget, first: Plan, step: Strategy, pipe: Pipeline) -> Plan:
    sub = result_view(view, first)
    second = step.apply(sub, budget)
    actions, reasons = list(first.actions), list(first.reasons)
    for k, o in enumerate(first.origin):  # sub's entry k is first's output k, from view index o
        if o is not None and second.actions[k] != "keep":
            actions[o], reasons[o] = second.actions[k], T("{step}: {reason}", step=step.name, reason=second.reasons[k])
    origin = tuple(first.origin[o] if o is not None else None for o in second.origin)
    stats = {**{f"{first.strategy}.{k}": v for k, v in first.stats.items()},
             **{f"{step.name}.{k}": v for k, v in second.stats.items()}}
    return build_plan(view, budget, " >> ".join(s.name for s in pipe.steps), pipe.params(), actions, reasons,
                      second.messages, origin, warnings=(*first.warnings, *second.warnings), stats=stats,
                      state={**first.state, **second.state},
                      idle=lambda: T("{first}; then {second}", first=first.idle, second=second.idle)
                      if first.idle and second.idle else first.idle or second.idle)


STRATEGIES: dict[str, type[Strategy]] = {}


def register(cls: type[Strategy]) -> type[Strategy]:
    """Add a strategy class to the registry (the built-ins use this too)."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    STRATEGIES[cls.name] = cls
    return cls


def get_strategy(name: str, **params: Any) -> Strategy:
    """Build the strategy ``name``; an unknown name lists the known ones, a bad parameter says
    which and its range."""
    cls = STRATEGIES.get(name)
    if cls is None:
        raise StrategyError(f"unknown strategy {name!r}", where="strategy",
                            hint=f"Known strategies: {', '.join(STRATEGIES)}")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(params) - known)
    if unknown:
        raise StrategyError(f"{name} has no parameter {unknown[0]!r}", where=f"{name}.{unknown[0]}",
                            hint=f"Its parameters: {', '.join(sorted(known)) or 'none'}")
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in params.items()}
    return cls(**params)


def parse_param(cls: type[Strategy], text: str) -> tuple[str, Any]:
    """``key=value`` from the command line, typed by the strategy's schema."""
    key, sep, raw = text.partition("=")
    spec = next((s for s in cls.schema() if s["name"] == key), None)
    if not sep or spec is None:
        raise StrategyError(f"bad parameter {text!r}", where="--param",
                            hint=f"Use key=value with a key of {cls.name}: "
                                 f"{', '.join(s['name'] for s in cls.schema()) or 'none'}")
    kind = spec["type"]
    try:
        if kind == "int":
            return key, int(raw)
        if kind == "float":
            return key, float(raw)
        if kind == "bool":
            if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(raw)
            return key, raw.lower() in ("true", "1", "yes")
        if kind.startswith("list["):
            items = json.loads(raw) if raw.startswith("[") else [v for v in raw.split(",") if v]
            return key, tuple(int(v) for v in items) if kind == "list[int]" else tuple(str(v) for v in items)
    except ValueError:
        raise StrategyError(f"{key} must be {kind}, got {raw!r}", where=f"--param {key}") from None
    return key, None if raw == "" and spec["default"] is None else raw

