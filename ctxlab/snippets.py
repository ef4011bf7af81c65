"""A strategy as something to take to production: a config (JSON or YAML) that round-trips to the
same strategy and budget, and a Python snippet that applies it.

``strategy_config(strategy, budget, model)`` gives a plain dict (the strategy's name and resolved
parameters, or the steps of a pipeline; the model; the budget's limit, reserve and tool-definition
tokens; the ctxlab version). ``strategy_from_config`` reads it back, and a bad config raises a
CtxlabError naming the key. ``python_snippet(config)`` writes code with (a) a plain
``manage_context(messages)`` for OpenAI-format messages and (b) a LangGraph node placed right
after START that replaces the graph's messages with what the strategy keeps.
"""
from __future__ import annotations

import json
import shlex
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from .errors import CtxlabError
from .model_specs import resolve_model
from .strategies import Budget, Pipeline, Strategy, StrategyError, get_strategy

_KEYS = ("ctxlab", "strategy", "params", "pipeline", "model", "max_tokens", "reserve", "tools_tokens")


class ConfigError(CtxlabError):
    """A strategy config that cannot be read back (a missing or bad key)."""


def _step(strategy: Strategy) -> dict[str, Any]:
    return {"strategy": strategy.name, "params": strategy.params()}


def strategy_config(strategy: Strategy, budget: Budget, model: str | None) -> dict[str, Any]:
    """The strategy, budget and model as JSON-ready data (see the module docstring)."""
    from . import __version__
    out: dict[str, Any] = {"ctxlab": __version__}
    if isinstance(strategy, Pipeline):
        out["pipeline"] = [_step(s) for s in strategy.steps]
    else:
        out.update(_step(strategy))
    out.update({"model": model, "max_tokens": budget.max_tokens, "reserve": budget.reserve,
                "tools_tokens": budget.tools_tokens})
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


def strategy_from_config(config: Any) -> tuple[Strategy, dict[str, Any], str | None]:
    """(strategy, budget keyword arguments, model) from a config made by ``strategy_config``.
    ``Budget(**kwargs)`` rebuilds the budget; ``max_tokens`` None means the model's window."""
    if not isinstance(config, Mapping):
        raise ConfigError(f"a config must be an object, found {type(config).__name__}", where="config")
    unknown = sorted(set(config) - set(_KEYS))
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r}", where=f"config.{unknown[0]}",
                          hint=f"Known keys: {', '.join(_KEYS)}")
    if ("strategy" in config) == ("pipeline" in config):
        raise ConfigError("give either 'strategy' (with 'params') or 'pipeline', not both or neither",
                          where="config.strategy")
    if "pipeline" in config:
        steps = config["pipeline"]
        if not isinstance(steps, list) or len(steps) < 2:
            raise ConfigError("'pipeline' must be a list of two or more steps", where="config.pipeline")
        if "params" in config:
            raise ConfigError("'params' belongs inside each pipeline step", where="config.params")
        built = [_built(s, f"config.pipeline[{k}]") for k, s in enumerate(steps)]
        strategy: Strategy = Pipeline(steps=tuple(built))
    else:
        strategy = _built({"strategy": config["strategy"], "params": config.get("params", {})}, "config")
    model = config.get("model")
    if model is not None and not isinstance(model, str):
        raise ConfigError(f"'model' must be a model name, found {model!r}", where="config.model")
    try:
        resolve_model(model)
    except CtxlabError as e:
        raise ConfigError(e.problem, where="config.model", hint=e.hint) from None
    budget = {"max_tokens": _number(config, "max_tokens", int, None, 1, None),
              "reserve": _number(config, "reserve", float, 0.15, 0, 1),
              "tools_tokens": _number(config, "tools_tokens", int, 0, 0, None)}
    if budget["max_tokens"] is None:
        budget["max_tokens"] = resolve_model(model).context_window
    return strategy, budget, model


def _call(strategy: Strategy) -> str:
    args = "".join(f", {k}={v!r}" for k, v in strategy.params().items())
    return f"get_strategy({strategy.name!r}{args})"


def _strategy_code(strategy: Strategy) -> str:
    """Python that builds the strategy (Python literals of its checked parameters)."""
    steps = strategy.steps if isinstance(strategy, Pipeline) else (strategy,)
    return " >> ".join(_call(s) for s in steps)


def source_checkout() -> Path | None:
    """The ctxlab repository checkout this ctxlab runs from (the folder with its pyproject.toml),
    or None when it runs from an installed wheel."""
    root = Path(__file__).resolve().parent.parent
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return root if project.get("name") == "ctxlab" else None


def install_command() -> str:
    """A pip command that installs ctxlab: ctxlab is not on PyPI (``pip install ctxlab`` finds
    nothing), so it installs from a checkout of the repository, this one's path when known."""
    root = source_checkout()
    return f"pip install {shlex.quote(str(root))}" if root else "pip install /path/to/a/ctxlab/checkout"


_HEAD = '''\
"""Context management made in the ctxlab Strategy Lab (ctxlab {version}): {what}.

Needs ctxlab, which is not on PyPI: install it from a checkout of its repository (the folder
holding its pyproject.toml; this snippet was made with the checkout below):

    {install}
{langgraph_req}"""
import json

import ctxlab
from ctxlab.strategies import Budget, get_strategy, make_view

MODEL = {model!r}
STRATEGY = {strategy}
# The request limit, the share kept free for the reply, and what the tool definitions sent with each
# request take (measured in the lab; change it when your tool list changes).
BUDGET = Budget.for_model(MODEL, max_tokens={max_tokens!r}, reserve={reserve!r}, tools_tokens={tools_tokens!r})
COUNTER = ctxlab.TokenCounter(MODEL)


# ---- (a) a plain function: OpenAI-format messages in, the messages to send out
def manage_context(messages: list[dict]) -> list[dict]:
    """The messages to send to the model: what the strategy keeps (summaries inserted), in the
    OpenAI Chat Completions format, every tool call still followed by its results."""
    conv = ctxlab.loads(json.dumps({{"messages": messages}}), format="openai")
    plan = STRATEGY.apply(make_view(conv, counter=COUNTER), BUDGET)
    return ctxlab.export(conv.with_messages(plan.messages), "openai").data["messages"]
'''

_LANGGRAPH = '''

# ---- (b) a LangGraph node, placed right after START, before the model node
from langchain_core.messages import RemoveMessage, messages_from_dict, messages_to_dict
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES


def context_node(state: MessagesState) -> dict:
    """Replace the graph's messages with what the strategy keeps."""
    items = messages_to_dict(state["messages"])
    conv = ctxlab.loads(json.dumps({"messages": items}, default=str), format="langchain")
    plan = STRATEGY.apply(make_view(conv, counter=COUNTER), BUDGET)
    kept = ctxlab.export(conv.with_messages(plan.messages), "langchain").data["messages"]
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages_from_dict(kept)]}


def add_context_management(builder: StateGraph, next_node: str = "model") -> None:
    """Wire START -> manage_context -> next_node. In a tool loop, send the tools node's edge back
    to "manage_context" as well, so the context is managed before every model call."""
    builder.add_node("manage_context", context_node)
    builder.add_edge(START, "manage_context")
    builder.add_edge("manage_context", next_node)


# Usage:
#   builder = StateGraph(MessagesState)
#   builder.add_node("model", call_model)
#   add_context_management(builder, "model")
#   graph = builder.compile()
'''


def python_snippet(config: Mapping[str, Any], *, langgraph: bool = True) -> str:
    """Python code applying the configured strategy: (a) ``manage_context(messages)`` for
    OpenAI-format messages, and with ``langgraph`` (b) ``context_node`` for a LangGraph graph,
    placed after START. The config is checked first (a bad one raises ConfigError)."""
    strategy, budget, model = strategy_from_config(config)
    what = " >> ".join(s.name for s in strategy.steps) if isinstance(strategy, Pipeline) else strategy.name
    from . import __version__
    code = _HEAD.format(version=__version__, what=what, install=install_command(),
                        langgraph_req="\nThe LangGraph node (b) also needs: pip install langgraph\n" if langgraph else "",
                        model=model, strategy=_strategy_code(strategy), **budget)
    return code + _LANGGRAPH if langgraph else code


__all__ = ["ConfigError", "config_json", "config_yaml", "install_command", "python_snippet", "source_checkout",
           "strategy_config", "strategy_from_config"]
