"""ctxlab's own config: the chosen strategy, its parameters and the budget, as JSON or YAML.

The format (version 1)::

    {"ctxlab_config": 1, "ctxlab": "0.1.0",
     "strategy": "clear_tool_results", "params": {"keep": 2},     # or "pipeline": [{"strategy", "params"}, ...]
     "model": "gpt-4o", "max_tokens": 16000, "reserve": 0.15, "tools_tokens": 812,
     "pins": [3, 7],                                               # optional: pinned message indexes
     "tools": {"catalog": "tools.json", "top_k": 5}}               # optional: tool retrieval settings

``make_config`` writes it, ``read_config`` reads it back into a :class:`LabConfig` (the built
strategy and the budget), ``load_config_file`` reads a ``.json`` / ``.yaml`` file. A config
without ``ctxlab_config`` is one written before the key existed and reads as version 1. An
unknown key, a bad value or a newer version is a :class:`ConfigError` naming the JSON path.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import CtxlabError
from ..model_specs import resolve_model
from ..strategies import Budget, Pipeline, Strategy, StrategyError, get_strategy

CONFIG_VERSION = 1
KEYS = ("ctxlab_config", "ctxlab", "strategy", "params", "pipeline", "model", "max_tokens", "reserve",
        "tools_tokens", "pins", "tools")
TOOLS_KEYS = {"catalog": str, "provider": str, "top_k": int, "threshold": (int, float, type(None)),
              "expand_categories": bool, "always_include": list, "hybrid": bool}
"""Tool retrieval settings a config may carry (the names of ``ctxlab.tools.select``'s arguments)."""


class ConfigError(CtxlabError):
    """A strategy config that cannot be read back (a missing or bad key)."""


@dataclass(frozen=True)
class LabConfig:
    """A config read back: the built strategy, the budget's numbers, pins and tool settings."""

    strategy: Strategy
    model: str | None
    max_tokens: int
    reserve: float = 0.15
    tools_tokens: int = 0
    pins: tuple[int, ...] = ()
    tools: Mapping[str, Any] | None = field(default=None, compare=False)

    def budget(self) -> Budget:
        """The budget the lab planned against (the model's reply priming included)."""
        return Budget.for_model(self.model, max_tokens=self.max_tokens, reserve=self.reserve,
                                tools_tokens=self.tools_tokens)

    def budget_kwargs(self) -> dict[str, Any]:
        """``Budget(**kwargs)`` arguments: max_tokens, reserve, tools_tokens."""
        return {"max_tokens": self.max_tokens, "reserve": self.reserve, "tools_tokens": self.tools_tokens}

    def steps(self) -> tuple[Strategy, ...]:
        """The strategy's steps (one for a single strategy)."""
        return self.strategy.steps if isinstance(self.strategy, Pipeline) else (self.strategy,)

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON-ready data (what ``make_config`` writes)."""
        return make_config(self.strategy, Budget(self.max_tokens, self.reserve, self.tools_tokens), self.model,
                           pins=self.pins, tools=self.tools)


def _step(strategy: Strategy) -> dict[str, Any]:
    return {"strategy": strategy.name, "params": strategy.params()}


def make_config(strategy: Strategy, budget: Budget, model: str | None, *, pins: Any = (),
                tools: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The strategy, budget, model (and pins and tool settings, when given) as JSON-ready data."""
    from ..version import __version__
    out: dict[str, Any] = {"ctxlab_config": CONFIG_VERSION, "ctxlab": __version__}
    if isinstance(strategy, Pipeline):
        out["pipeline"] = [_step(s) for s in strategy.steps]
    else:
        out.update(_step(strategy))
    out.update({"model": model, "max_tokens": budget.max_tokens, "reserve": budget.reserve,
                "tools_tokens": budget.tools_tokens})
    if pins:
        out["pins"] = sorted(set(pins))
    if tools is not None:
        out["tools"] = dict(tools)
    return out


def config_json(config: Mapping[str, Any]) -> str:
    """The config as indented JSON text."""
    return json.dumps(config, indent=2, ensure_ascii=False) + "\n"


def config_yaml(config: Mapping[str, Any]) -> str:
    """The config as YAML text (keys in the config's order)."""
    return yaml.safe_dump(dict(config), sort_keys=False, allow_unicode=True)


def _built(step: Any, where: str) -> Strategy:
    """One strategy from ``{"strategy": name, "params": {...}}``; errors name the key."""
    if not isinstance(step, Mapping):
        raise ConfigError(f"expected an object with 'strategy' and 'params', found {type(step).__name__}", where=where)
    extra = sorted(set(step) - {"strategy", "params"})
    if extra:
        raise ConfigError(f"unknown key {extra[0]!r}", where=f"{where}.{extra[0]}", hint="A step has strategy and params")
    name, params = step.get("strategy"), step.get("params", {})
    if not isinstance(name, str) or name == "pipeline":
        raise ConfigError(f"'strategy' must be a strategy name, found {name!r}", where=f"{where}.strategy")
    if not isinstance(params, Mapping):
        raise ConfigError(f"'params' must be an object, found {type(params).__name__}", where=f"{where}.params")
    try:
        return get_strategy(name, **params)
    except StrategyError as e:
        key = e.where.split(".", 1)[1] if e.where and "." in e.where else None
        raise ConfigError(e.problem, where=f"{where}.params.{key}" if key else f"{where}.strategy",
                          hint=e.hint) from None


def _number(config: Mapping[str, Any], key: str, kind: type, default: Any, lo: float, hi: float | None) -> Any:
    value = config.get(key, default)
    if value is None and default is None:
        return None
    ok = isinstance(value, (int, float) if kind is float else int) and not isinstance(value, bool)
    if not ok or value < lo or (hi is not None and value >= hi):
        limits = f"at least {lo}" + (f" and below {hi}" if hi is not None else "")
        raise ConfigError(f"'{key}' must be a {'number' if kind is float else 'whole number'} {limits}, "
                          f"found {value!r}", where=f"config.{key}")
    return value


def _strategy(config: Mapping[str, Any]) -> Strategy:
    if ("strategy" in config) == ("pipeline" in config):
        raise ConfigError("give either 'strategy' (with 'params') or 'pipeline', not both or neither",
                          where="config.strategy")
    if "strategy" in config:
        return _built({"strategy": config["strategy"], "params": config.get("params", {})}, "config")
    steps = config["pipeline"]
    if not isinstance(steps, list) or len(steps) < 2:
        raise ConfigError("'pipeline' must be a list of two or more steps", where="config.pipeline")
    if "params" in config:
        raise ConfigError("'params' belongs inside each pipeline step", where="config.params")
    built = tuple(_built(s, f"config.pipeline[{k}]") for k, s in enumerate(steps))
    return Pipeline(steps=built, apply_at=built[0].apply_at,  # a pipeline runs where and as its first step runs
                    works_on=built[0].works_on)


def _pins(config: Mapping[str, Any]) -> tuple[int, ...]:
    pins = config.get("pins", [])
    if not isinstance(pins, list):
        raise ConfigError(f"'pins' must be a list of message indexes, found {type(pins).__name__}", where="config.pins")
    for k, p in enumerate(pins):
        if not isinstance(p, int) or isinstance(p, bool) or p < 0:
            raise ConfigError(f"a pin must be a message index (0 or more), found {p!r}", where=f"config.pins[{k}]")
    return tuple(sorted(set(pins)))


def _tools(config: Mapping[str, Any]) -> Mapping[str, Any] | None:
    tools = config.get("tools")
    if tools is None:
        return None
    if not isinstance(tools, Mapping):
        raise ConfigError(f"'tools' must be an object of retrieval settings, found {type(tools).__name__}",
                          where="config.tools")
    for key, value in tools.items():
        kind = TOOLS_KEYS.get(key)
        if kind is None:
            raise ConfigError(f"unknown key {key!r}", where=f"config.tools.{key}",
                              hint=f"Tool retrieval settings: {', '.join(TOOLS_KEYS)}")
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise ConfigError(f"{key!r} has the wrong type ({type(value).__name__})", where=f"config.tools.{key}")
    return dict(tools)


def _version(config: Mapping[str, Any]) -> None:
    version = config.get("ctxlab_config", CONFIG_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ConfigError(f"'ctxlab_config' must be a format version (1), found {version!r}", where="config.ctxlab_config")
    if version > CONFIG_VERSION:
        raise ConfigError(f"this config is format version {version}; this ctxlab reads version {CONFIG_VERSION}",
                          where="config.ctxlab_config", hint="Upgrade ctxlab to read it")


def read_config(config: Any) -> LabConfig:
    """A config made by ``make_config`` (or by hand) read back; bad input names its JSON path."""
    if not isinstance(config, Mapping):
        raise ConfigError(f"a config must be an object, found {type(config).__name__}", where="config")
    unknown = sorted(set(config) - set(KEYS))
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r}", where=f"config.{unknown[0]}", hint=f"Known keys: {', '.join(KEYS)}")
    _version(config)
    strategy = _strategy(config)
    model = config.get("model")
    if model is not None and not isinstance(model, str):
        raise ConfigError(f"'model' must be a model name, found {model!r}", where="config.model")
    try:
        spec = resolve_model(model)
    except CtxlabError as e:
        raise ConfigError(e.problem, where="config.model", hint=e.hint) from None
    max_tokens = _number(config, "max_tokens", int, None, 1, None)
    return LabConfig(strategy, model, spec.context_window if max_tokens is None else max_tokens,
                     _number(config, "reserve", float, 0.15, 0, 1), _number(config, "tools_tokens", int, 0, 0, None),
                     _pins(config), _tools(config))


def parse_config_text(text: str, where: str = "config") -> Any:
    """JSON, else YAML, text as data; a syntax error names the line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError(f"neither JSON nor YAML{line}: {getattr(e, 'problem', None) or e}", where=where,
                          hint="Save the config the lab exported, as .json or .yaml") from None


def load_config_file(path: str | Path) -> LabConfig:
    """Read a ``.json`` or ``.yaml`` config file."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"no such config file: {path}", where="--config", hint="Give the path of a .json or .yaml config")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError("the config file is not UTF-8 text", where=str(path)) from None
    return read_config(parse_config_text(text, where=str(path)))


__all__ = ["CONFIG_VERSION", "ConfigError", "LabConfig", "config_json", "config_yaml", "load_config_file",
           "make_config", "parse_config_text", "read_config"]
