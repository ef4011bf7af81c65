"""Strategy configs and production snippets: a config reads back to the same strategy and budget
for every registered strategy and a pipeline, a bad config names its key, and the generated
Python really runs: the plain function and the LangGraph node send the model the plan's messages."""
from __future__ import annotations

import dataclasses
import json
import re
import shlex
import tomllib
from pathlib import Path

import pytest
import yaml

import ctxlab
from ctxlab.errors import CtxlabError
from ctxlab.configs.lab_config import make_config, read_config
from ctxlab.snippets import config_json, config_yaml, python_snippet
from ctxlab.strategies import STRATEGIES, Budget, get_strategy, make_view
from ctxlab.tokens import TokenCounter

from ..conftest import SAMPLES

MODEL = "gpt-4o"
SAMPLE_NAMES = ("ecommerce_refund.json", "sql_agent.json", "parallel_travel.json")
NON_DEFAULT = {  # one changed parameter per strategy that has any, so a round trip cannot pass by defaults
    "sliding_window": {"max_tokens": 3000, "buffer_ratio": 0.25},
    "turn_safe": {"last_n": 7},
    "summarize": {"keep_recent": 4, "trigger_ratio": 0.3},
    "tool_rounds": {"keep_rounds": 2},
    "key_messages": {"key_tools": ["get_order", "issue_refund"], "recent": 6},
    "clear_tool_results": {"trigger_tokens": 0, "exclude_tools": ["get_order"], "clear_tool_inputs": True},
    "middle_out": {"preserve_end": 4},
    "oldest_first": {"size_weight": 2.0},
    "hybrid": {"recent_turns": 1},
    "langchain_trim": {"start_on": "none", "allow_partial": True},
    "observation_masking": {"window": 2, "placeholder": "<masked {lines} lines>", "polling": 2},
    "recent_events": {"keep_first": 2, "max_events": 9},
    "amortized_forgetting": {"max_size": 12, "keep_first": 2},
    "llm_attention": {"max_size": 12, "keep_first": 2},
    "server_compaction": {"trigger_tokens": 900, "keep_user_messages": True, "instructions": "Keep order ids."},
    "truncation_auto": {"output_allowance": 2_000},
    "head_tail": {"max_lines": 40, "max_bytes": 2_048, "marker": "[{omitted} of {total} lines cut]"},
    "offload": {"min_tokens": 300, "preview_tokens": 50, "preview_tail": False, "path": "/tmp/results/{tool_call_id}"},
}


def _budget(conv: ctxlab.Conversation, max_tokens: int) -> Budget:
    return Budget.for_model(MODEL, max_tokens=max_tokens, tools_tokens=TokenCounter(MODEL).tools(conv.tools))


def _plan(conv: ctxlab.Conversation, strategy, budget: Budget):
    return strategy.apply(make_view(conv, counter=TokenCounter(MODEL)), budget)


def _openai(conv: ctxlab.Conversation, messages) -> list[dict]:
    return ctxlab.export(conv.with_messages(messages), "openai").data["messages"]


def _strategies() -> list:
    out = []
    for name in STRATEGIES:
        out.append(get_strategy(name))
        if name in NON_DEFAULT:
            out.append(get_strategy(name, **NON_DEFAULT[name]))
    return out


def _pipeline():
    return get_strategy("clear_tool_results", trigger_tokens=0, keep=1) >> get_strategy("tool_rounds", keep_rounds=2)


def test_every_registered_strategy_has_a_round_trip_case():
    assert set(STRATEGIES) - {"none"} <= set(NON_DEFAULT)


@pytest.mark.parametrize("strategy", [*_strategies(), _pipeline()], ids=repr)
@pytest.mark.parametrize("text_of, load", [(config_json, json.loads), (config_yaml, yaml.safe_load)],
                         ids=["json", "yaml"])
def test_config_text_reads_back_to_the_same_strategy_budget_and_model(strategy, text_of, load):
    budget = Budget(20_000, 0.2, 512)
    config = make_config(strategy, budget, "claude-sonnet-4")
    lab = read_config(load(text_of(config)))
    again, budget_kwargs, model = lab.strategy, lab.budget_kwargs(), lab.model
    assert again == strategy
    assert Budget(**budget_kwargs) == budget
    assert model == "claude-sonnet-4"


def test_config_says_what_it_holds():
    config = make_config(get_strategy("tool_rounds", keep_rounds=3), Budget(16_000, 0.15, 777), MODEL)
    assert config == {"ctxlab_config": 1, "ctxlab": ctxlab.__version__, "strategy": "tool_rounds",
                      "params": {"keep_rounds": 3, "apply_at": "every_call", "works_on": "kept_history"},
                      "model": MODEL, "max_tokens": 16_000, "reserve": 0.15, "tools_tokens": 777}
    pipe = make_config(_pipeline(), Budget(16_000), MODEL)
    assert [s["strategy"] for s in pipe["pipeline"]] == ["clear_tool_results", "tool_rounds"]
    assert pipe["pipeline"][1]["params"] == {"keep_rounds": 2, "apply_at": "every_call", "works_on": "kept_history"}
    assert "strategy" not in pipe


def test_a_config_without_a_limit_gets_the_models_window():
    budget_kwargs = read_config({"strategy": "none", "model": "gpt-4"}).budget_kwargs()
    assert Budget(**budget_kwargs) == Budget(8192, 0.15, 0)


GOOD = {"strategy": "tool_rounds", "params": {"keep_rounds": 1}, "model": MODEL, "max_tokens": 16_000,
        "reserve": 0.15, "tools_tokens": 0}


@pytest.mark.parametrize("change, where", [
    ({"strategy": "no_such"}, "config.strategy"),
    ({"params": {"keep_rounds": -1}}, "config.params.keep_rounds"),
    ({"params": {"keep_round": 1}}, "config.params.keep_round"),
    ({"params": {"keep_rounds": "two"}}, "config.params.keep_rounds"),
    ({"params": [1]}, "config.params"),
    ({"max_tokens": 0}, "config.max_tokens"),
    ({"max_tokens": "16k"}, "config.max_tokens"),
    ({"reserve": 1.0}, "config.reserve"),
    ({"tools_tokens": -5}, "config.tools_tokens"),
    ({"model": "gpt-99-turbo-ultra"}, "config.model"),
    ({"colour": "blue"}, "config.colour"),
    ({"pipeline": [{"strategy": "none"}, {"strategy": "none"}]}, "config.strategy"),
])
def test_a_bad_config_names_the_key(change, where):
    with pytest.raises(CtxlabError) as e:
        read_config({**GOOD, **change})
    assert e.value.where == where
    assert str(e.value).startswith(where)


@pytest.mark.parametrize("config, where", [
    ([1, 2], "config"),
    ({"pipeline": [{"strategy": "tool_rounds"}]}, "config.pipeline"),
    ({"pipeline": [{"strategy": "tool_rounds"}, {"strategy": "turn_safe", "params": {"last_n": 0}}]},
     "config.pipeline[1].params.last_n"),
    ({"pipeline": [{"strategy": "tool_rounds"}, "turn_safe"]}, "config.pipeline[1]"),
])
def test_a_bad_pipeline_names_the_step(config, where):
    with pytest.raises(CtxlabError) as e:
        read_config(config)
    assert e.value.where == where


def test_the_snippet_says_how_to_install_ctxlab_in_a_way_that_works():
    """"pip install ctxlab" finds nothing (ctxlab is not on PyPI); the snippet names a
    checkout of the repository that pip can install from."""
    snippet = python_snippet(make_config(get_strategy("tool_rounds"), Budget(16_000), MODEL))
    commands = re.findall(r"^\s*pip install (.+)$", snippet, flags=re.M)
    assert commands and "ctxlab" != commands[0].strip()
    target = Path(shlex.split(commands[0])[0])
    assert target.is_dir(), target
    project = tomllib.loads((target / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == "ctxlab" and (target / "ctxlab" / "__init__.py").is_file()
    assert "pip install langgraph" in snippet  # what the LangGraph node needs besides


def test_the_snippet_names_its_parts():
    code = python_snippet(make_config(get_strategy("tool_rounds"), Budget(16_000), MODEL))
    assert "def manage_context(messages: list[dict]) -> list[dict]:" in code
    assert "def context_node(state: MessagesState) -> dict:" in code
    assert 'builder.add_edge(START, "manage_context")' in code
    assert "RemoveMessage(id=REMOVE_ALL_MESSAGES)" in code
    compile(code, "manage_context.py", "exec")
    assert "langgraph" not in python_snippet(make_config(get_strategy("none"), Budget(16_000), MODEL),
                                             langgraph=False)


def _run_plain(config: dict) -> dict:
    namespace: dict = {}
    exec(compile(python_snippet(config, langgraph=False), "manage_context.py", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("sample", SAMPLE_NAMES)
@pytest.mark.parametrize("strategy", [*_strategies(), _pipeline()], ids=repr)
def test_the_plain_function_returns_the_plans_messages(sample, strategy):
    conv = ctxlab.load(SAMPLES / sample)
    budget = _budget(conv, 6_000)
    plan = _plan(conv, strategy, budget)
    manage_context = _run_plain(make_config(strategy, budget, MODEL))["manage_context"]
    got = manage_context(ctxlab.export(conv, "openai").data["messages"])
    assert got == _openai(conv, plan.messages)


def test_the_plain_function_changes_what_it_is_given():
    conv = ctxlab.load(SAMPLES / "ecommerce_refund.json")
    budget = _budget(conv, 16_000)
    manage_context = _run_plain(make_config(get_strategy("tool_rounds"), budget, MODEL))["manage_context"]
    sent = manage_context(ctxlab.export(conv, "openai").data["messages"])
    assert 1 < len(sent) < len(conv)  # it removed old tool rounds, kept the rest
    assert sent[0]["role"] == "system" and sent[-1] == ctxlab.export(conv, "openai").data["messages"][-1]


def test_parameter_text_cannot_inject_code_into_the_snippet():
    evil = 'x"); import os; os.system("echo pwned"); ("'
    strategy = get_strategy("key_messages", key_tools=(evil, "run_sql"))
    namespace = _run_plain(make_config(strategy, Budget(16_000), MODEL))
    assert namespace["STRATEGY"] == strategy
    assert "os" not in namespace


def _without_ids(messages):
    return [dataclasses.replace(m, id=None) for m in messages]


@pytest.mark.parametrize("strategy", [get_strategy("tool_rounds"), get_strategy("summarize", keep_recent=4),
                                      get_strategy("clear_tool_results", trigger_tokens=0), _pipeline()], ids=repr)
def test_the_langgraph_node_after_start_sends_the_model_the_plans_messages(strategy):
    pytest.importorskip("langgraph")
    from langchain_core.messages import AIMessage, messages_from_dict, messages_to_dict
    from langgraph.graph import END, MessagesState, StateGraph

    conv = ctxlab.load(SAMPLES / "ecommerce_refund.json")
    budget = _budget(conv, 8_000)
    plan = _plan(conv, strategy, budget)
    namespace: dict = {}
    exec(compile(python_snippet(make_config(strategy, budget, MODEL)), "manage_context.py", "exec"), namespace)
    seen: list = []

    def fake_model(state: MessagesState) -> dict:
        seen.append(list(state["messages"]))
        return {"messages": [AIMessage("Done: refund issued.")]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", fake_model)
    namespace["add_context_management"](builder, "model")
    builder.add_edge("model", END)
    final = builder.compile().invoke({"messages": messages_from_dict(ctxlab.export(conv, "langchain").data["messages"])})

    assert len(seen) == 1
    items = json.dumps({"messages": messages_to_dict(seen[0])})
    got = _without_ids(ctxlab.loads(items, format="langchain").messages)
    assert _openai(conv, got) == _openai(conv, plan.messages)  # what goes to the provider, message for message
    assert len(final["messages"]) == len(plan.messages) + 1  # the graph's state was replaced, then answered
    assert final["messages"][-1].content == "Done: refund issued."


@pytest.mark.parametrize("apply_at, runs", [("every_call", 3), ("turn_start", 1)])
def test_the_langgraph_wiring_runs_the_strategy_where_it_was_tuned_to_run(apply_at, runs):
    """A tool loop of three model calls: the context node runs before each of them (every_call),
    or once, right after START (turn_start)."""
    pytest.importorskip("langgraph")
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.graph import END, MessagesState, StateGraph

    strategy = get_strategy("tool_rounds", apply_at=apply_at)
    conv = ctxlab.load(SAMPLES / "ecommerce_refund.json")
    namespace: dict = {}
    code = python_snippet(make_config(strategy, _budget(conv, 8_000), MODEL))
    assert f'APPLY_AT = "{apply_at}"' in code
    exec(compile(code, "manage_context.py", "exec"), namespace)
    ran: list[int] = []
    node = namespace["context_node"]
    namespace["add_context_management"].__globals__["context_node"] = lambda state: (ran.append(1), node(state))[1]
    calls = iter([AIMessage("", tool_calls=[{"id": f"c{k}", "name": "get_order", "args": {}}]) for k in (1, 2)]
                 + [AIMessage("Done.")])

    def model(state: MessagesState) -> dict:
        return {"messages": [next(calls)]}

    def tools(state: MessagesState) -> dict:
        last = state["messages"][-1]
        return {"messages": [ToolMessage("ok", tool_call_id=c["id"]) for c in last.tool_calls]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_node("tools", tools)
    builder.add_conditional_edges("model", lambda s: "tools" if s["messages"][-1].tool_calls else END)
    namespace["add_context_management"](builder, "model", "tools")
    final = builder.compile().invoke({"messages": [HumanMessage("Where is order KC-1?")]})
    assert final["messages"][-1].content == "Done."
    assert len(ran) == runs
