"""What every framework export shares: the result type, the registry of targets, and the notes on
what a ctxlab config holds that no framework has a place for (pins, tool retrieval, the budget).

A framework module registers its target with :func:`target`: a dict of strategy name -> function
``(LabConfig) -> NativeExport``. ``export_native(config, "langchain")`` finds it; an unknown target,
a pipeline or a strategy with no native form is a :class:`NoNativeFormError` that names the
strategies that do map.
"""
from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..i18n import T
from .lab_config import ConfigError, LabConfig, read_config


class NoNativeFormError(ConfigError):
    """A target that does not exist, or a strategy the target has no native configuration for."""


@dataclass(frozen=True)
class NativeExport:
    """A config in a framework's own terms: ``data`` (JSON-ready), ``python`` (code that builds it
    with the framework's classes) and ``not_carried`` (what the framework does differently or
    has no place for, one sentence each)."""

    target: str
    strategy: str
    data: Mapping[str, Any]
    python: str
    not_carried: tuple[str, ...] = field(default=())
    file_name: str = ""
    """The download's file name when ``python`` is not Python (a TOML file, a shell snippet)."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form printed by ``ctxlab config export``: the native data and ``not_carried``."""
        return {"target": self.target, "strategy": self.strategy, **self.data, "not_carried": list(self.not_carried)}


Exporter = Callable[[LabConfig], NativeExport]
TARGETS: dict[str, dict[str, Exporter]] = {}
HINTS: dict[str, str] = {}


def target(name: str, exporters: dict[str, Exporter], hint: str = "") -> None:
    """Register a framework: its name and an exporter per strategy it has a native form for."""
    TARGETS[name] = exporters
    HINTS[name] = hint


def extend(name: str, exporters: dict[str, Exporter]) -> None:
    """Add exporters to a registered target (a second module of the same framework)."""
    TARGETS[name].update(exporters)


def mapped(name: str) -> list[str]:
    """The strategies ``name`` has a native form for."""
    return list(TARGETS[name])


TARGET_ALIASES = {"claude-code": "claude_code", "openai-agents": "openai_agents", "openai-responses": "openai_responses"}
"""Earlier spellings of target names (targets are named like formats and strategies: snake_case)."""


def export_native(config: Any, to: str) -> NativeExport:
    """The config (a dict, or a LabConfig) in framework ``to``'s own configuration."""
    lab = config if isinstance(config, LabConfig) else read_config(config)
    to = TARGET_ALIASES.get(to, to)
    exporters = TARGETS.get(to)
    if exporters is None:
        raise NoNativeFormError(T("unknown target {to!r}", to=to), where="--to",
                                hint=T("Known targets: {targets}", targets=", ".join(TARGETS)))
    strategy = " >> ".join(s.name for s in lab.steps())
    exporter = exporters.get(strategy)
    if exporter is None:
        problem = (T("{strategy} has no native form in {to}; a pipeline cannot be exported there", strategy=strategy, to=to)
                   if len(lab.steps()) > 1 else
                   T("{strategy} has no native form in {to}; it cannot be exported there", strategy=strategy, to=to))
        maps = T("Strategies that map to {to}: {strategies}.", to=to, strategies=", ".join(exporters))
        raise NoNativeFormError(problem, where="config.strategy",
                                hint=T("{maps} {hint}", maps=maps, hint=HINTS[to]) if HINTS.get(to) else maps)
    _budget_leaves_room(lab)
    native = exporter(lab)
    _int64_only(native.data, to)
    return native


#: the largest integer a framework's config takes: TOML (Codex's config.toml) and the providers' APIs hold int64
INT64_MAX = 2**63 - 1


def _budget_leaves_room(lab: LabConfig) -> None:
    """A config whose budget leaves no token for messages exports thresholds of 0 or less, which
    every framework rejects (LangChain: "trigger thresholds must be greater than 0")."""
    budget = lab.budget()
    if budget.available <= 0:
        raise ConfigError(T("the budget leaves {available:,} tokens for messages (max_tokens {max_tokens:,} less the "
                            "reserve {reserve}, tools_tokens {tools:,} and {priming} for the reply): a framework "
                            "takes no threshold of 0 or less", available=budget.available,
                            max_tokens=lab.max_tokens, reserve=lab.reserve, tools=lab.tools_tokens,
                            priming=budget.reply_priming),
                          where="config.max_tokens", hint=T("Raise max_tokens, or lower reserve or tools_tokens"))


def _int64_only(data: Any, to: str, path: str = "$") -> None:
    """Every integer of a native config fits int64 (TOML parsers reject larger ones; so do the
    providers' APIs): a larger one is an error naming where it is, never a file the target refuses."""
    if isinstance(data, bool):
        return
    if isinstance(data, int):
        if not -INT64_MAX - 1 <= data <= INT64_MAX:
            raise ConfigError(T("{to} takes no integer beyond 64 bits, and this config exports one of {digits} "
                                "digits at {path}", to=to, digits=len(str(abs(data))), path=path),
                              where="config", hint=T("Lower max_tokens, or the parameter that sets this value"))
    elif isinstance(data, Mapping):
        for k, v in data.items():
            _int64_only(v, to, f"{path}.{k}")
    elif isinstance(data, (list, tuple)):
        for k, v in enumerate(data):
            _int64_only(v, to, f"{path}[{k}]")


RUNS = {"every_call": T("before every model call"), "turn_start": T("once per user message (at the start of a run)")}


def where_note(lab: LabConfig, runs: str) -> str | None:
    """The note when the framework runs the strategy elsewhere than it was tuned to run
    (``apply_at``): its figures (calls over the limit, needed facts, cost) were measured there."""
    steps = lab.strategy.steps if hasattr(lab.strategy, "steps") else (lab.strategy,)
    tuned = getattr(lab.strategy, "apply_at", steps[0].apply_at)
    if tuned == runs:
        return None
    fix = (T("replay with apply_at=every_call to see what it does there, or use the ctxlab snippet's LangGraph node "
           "wired after START") if runs == "every_call" else
           T("replay with apply_at=turn_start to see what it does there, or apply the strategy yourself before every "
           "model call (the ctxlab snippet's LangGraph node, wired back from the tools node)"))
    return (T("where it runs: tuned with apply_at={tuned} ({tuned_runs}), but this framework runs it "
            "{runs}; {fix}", tuned=tuned, tuned_runs=RUNS[tuned], runs=RUNS[runs], fix=fix))


HISTORY_RUNS = {
    "kept_history": T("on the history it keeps (what it left at its last application plus what arrived since)"),
    "full_history": T("on the whole history, recomputed at every call")}


def history_note(lab: LabConfig, works_on: str | None = None) -> str | None:
    """The note when the framework runs the strategy on another history than it was tuned on
    (its ``works_on``): ``works_on`` is the framework's (``kept_history`` or ``full_history``); None
    means the way the strategy's target runs it, its class default."""
    steps = lab.strategy.steps if hasattr(lab.strategy, "steps") else (lab.strategy,)
    tuned = getattr(lab.strategy, "works_on", steps[0].works_on)
    framework = works_on or type(steps[0]).__dataclass_fields__["works_on"].default
    if tuned == framework:
        return None
    return T("what it works on: tuned with works_on={tuned} ({tuned_runs}), but this framework runs it {runs}; replay "
             "with works_on={framework} to see what it does there", tuned=tuned, tuned_runs=HISTORY_RUNS[tuned],
             runs=HISTORY_RUNS[framework], framework=framework)


def common_notes(lab: LabConfig, *, budget_used: bool, runs: str = "every_call",
                 works_on: str | None = None) -> list[str]:
    """What a config holds that none of the frameworks takes: pins, retrieval settings, the budget,
    where the strategy runs when the framework runs it elsewhere (``runs``, an ``apply_at``), and
    what it works on when the framework runs it on another history (``works_on``;
    None: as the strategy's target runs it)."""
    notes = [n for n in (where_note(lab, runs), history_note(lab, works_on)) if n]
    if lab.pins:
        notes.append(T("pins (messages {items}): the framework has no pinned messages; "
                     "they are message indexes of the lab's conversation, so they are not exported", items=', '.join(map(str, lab.pins))))
    if lab.tools:
        notes.append(T("tool retrieval settings ({items}): no native form; select tools with "
                     "ctxlab.tools before the request", items=', '.join(lab.tools)))
    if not budget_used:
        notes.append(T("the budget (max_tokens {max_tokens:,}, reserve {reserve}, tools_tokens "
                     "{tools_tokens:,}): this strategy does not read it, and the framework has no place for it", max_tokens=lab.max_tokens, reserve=lab.reserve, tools_tokens=lab.tools_tokens))
    return notes


def literal(value: Any) -> str:
    """A Python literal of a JSON-ready value (strings quoted by repr: no code can get in)."""
    if isinstance(value, tuple):
        return "(" + ", ".join(literal(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (bool, int, float, str)) or value is None:
        return repr(value)
    raise TypeError(f"no literal for {type(value).__name__}")


def notes_block(notes: list[str] | tuple[str, ...]) -> str:
    """The notes as a comment block for the top of generated code."""
    if not notes:
        return "# Everything in the config carries over.\n"
    out = ["# What does not carry over:"]
    for n in notes:  # joined first: a tool name with a newline cannot end the comment
        out += textwrap.wrap(" ".join(n.splitlines()), 100, initial_indent="#  - ", subsequent_indent="#    ")
    return "\n".join(out) + "\n"


def pretty(data: Any) -> str:
    """Indented JSON (used inside generated code's docstrings and for printing)."""
    return json.dumps(data, indent=2, ensure_ascii=False)


__all__ = ["HINTS", "NativeExport", "NoNativeFormError", "TARGETS", "common_notes", "export_native", "extend",
           "literal", "mapped", "notes_block", "pretty", "target"]
