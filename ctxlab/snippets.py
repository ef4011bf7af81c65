"""A strategy as something to take to production: a config (JSON or YAML) that round-trips to the
same strategy and budget, and a Python snippet that applies it.

The config itself is ``ctxlab.configs.lab_config``: ``make_config(strategy, budget, model)`` gives a
plain dict (the strategy's name and resolved parameters, or the steps of a pipeline; the model; the
budget's limit, reserve and tool-definition tokens; the ctxlab version); ``read_config`` reads it
back (``.strategy``, ``.budget_kwargs()``, ``.model``), and a bad config raises a CtxlabError naming
the key. ``python_snippet(config)`` writes code with (a) a plain
``manage_context(messages)`` for OpenAI-format messages and (b) a LangGraph node after START that
replaces the graph's messages with what the strategy keeps, wired where the strategy was tuned to
run: the tools node's edge goes back through it (``apply_at="every_call"``) or straight to the model
(``"turn_start"``).
"""
from __future__ import annotations

import shlex
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .configs.lab_config import ConfigError, config_json, config_yaml, read_config
from .strategies import Pipeline, Strategy


def _call(strategy: Strategy) -> str:
    shared = {k: type(strategy).__dataclass_fields__[k].default for k in ("apply_at", "works_on")}
    args = "".join(f", {k}={v!r}" for k, v in strategy.params().items() if k not in shared or v != shared[k])
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

# ---- (b) a LangGraph node before the model node
# The strategy was tuned to run __WHERE__ (apply_at=__APPLY_AT__):
# add_context_management wires the graph that way.
from langchain_core.messages import RemoveMessage, messages_from_dict, messages_to_dict
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES

APPLY_AT = "__APPLY_AT__"


def context_node(state: MessagesState) -> dict:
    """Replace the graph's messages with what the strategy keeps."""
    items = messages_to_dict(state["messages"])
    conv = ctxlab.loads(json.dumps({"messages": items}, default=str), format="langchain")
    plan = STRATEGY.apply(make_view(conv, counter=COUNTER), BUDGET)
    kept = ctxlab.export(conv.with_messages(plan.messages), "langchain").data["messages"]
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages_from_dict(kept)]}


def add_context_management(builder: StateGraph, next_node: str = "model", tools_node: str = "tools") -> None:
    """Wire START -> manage_context -> next_node, and the tools node's edge back: through
    manage_context when the strategy runs before every model call (every_call), straight to the
    model when it runs only when a user message arrives (turn_start: a trim node after START)."""
    builder.add_node("manage_context", context_node)
    builder.add_edge(START, "manage_context")
    builder.add_edge("manage_context", next_node)
    if tools_node in builder.nodes:  # a tool loop: where its edge goes back is where the strategy runs
        builder.add_edge(tools_node, "manage_context" if APPLY_AT == "every_call" else next_node)


# Usage:
#   builder = StateGraph(MessagesState)
#   builder.add_node("model", call_model)
#   builder.add_node("tools", ToolNode(tools))
#   builder.add_conditional_edges("model", tools_condition)
#   add_context_management(builder, "model", "tools")
#   graph = builder.compile()
'''

_WHERE = {"every_call": "before every model call", "turn_start": "only when a user message arrives"}


def python_snippet(config: Mapping[str, Any], *, langgraph: bool = True) -> str:
    """Python code applying the configured strategy: (a) ``manage_context(messages)`` for
    OpenAI-format messages, and with ``langgraph`` (b) ``context_node`` for a LangGraph graph,
    placed after START and wired by the strategy's ``apply_at``. The config is checked first (a bad
    one raises ConfigError)."""
    lab = read_config(config)
    strategy, budget, model = lab.strategy, lab.budget_kwargs(), lab.model
    what = " >> ".join(s.name for s in strategy.steps) if isinstance(strategy, Pipeline) else strategy.name
    from .version import __version__
    code = _HEAD.format(version=__version__, what=what, install=install_command(),
                        langgraph_req="\nThe LangGraph node (b) also needs: pip install langgraph\n" if langgraph else "",
                        model=model, strategy=_strategy_code(strategy), **budget)
    if lab.pins:  # indexes into the lab's conversation: they name nothing in the next one
        code += (f"\n# The lab pinned messages {', '.join(map(str, lab.pins))} of its conversation; pins are message\n"
                 "# indexes, so they are not applied here: pass make_view(conv, pins=...) for your own.\n")
    where = strategy.apply_at
    return code + _LANGGRAPH.replace("__APPLY_AT__", where).replace("__WHERE__", _WHERE[where]) if langgraph else code


__all__ = ["ConfigError", "config_json", "config_yaml", "install_command", "python_snippet", "source_checkout"]
