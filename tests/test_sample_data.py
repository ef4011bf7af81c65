"""The sample conversations: valid OpenAI Chat JSON, every call answered, facts present."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import SAMPLES

NAMES = ("ecommerce_refund", "sql_agent", "parallel_travel", "agent_run_support", "zh_docs_agent", "zh_sql_agent",
         "zh_support_agent")
MODEL = {"zh_docs_agent": "deepseek-chat", "zh_sql_agent": "deepseek-reasoner", "zh_support_agent": "qwen3-235b-a22b"}


def load(name: str) -> dict:
    """A sample file read with ``json`` only."""
    return json.loads((SAMPLES / f"{name}.json").read_text(encoding="utf-8"))


def texts(doc: dict) -> list[str]:
    """Message contents and tool-call arguments: where facts must be found."""
    out = [m["content"] for m in doc["messages"] if isinstance(m.get("content"), str)]
    out += [c["function"]["arguments"] for m in doc["messages"] for c in m.get("tool_calls") or []]
    return out


def calling(doc: dict) -> list[tuple[int, list[dict]]]:
    """(index, tool_calls) of each assistant message with tool calls."""
    return [(i, m["tool_calls"]) for i, m in enumerate(doc["messages"]) if m.get("tool_calls")]


@pytest.mark.parametrize("name", NAMES)
def test_top_level_fields(name):
    doc = load(name)
    assert set(doc) == {"title", "description", "model", "messages", "tools", "facts"}
    assert doc["title"] and len(doc["description"]) > 80
    assert doc["model"] == MODEL.get(name, "gpt-4o")
    assert doc["messages"][0]["role"] == "system"
    assert doc["facts"] and all(isinstance(f, str) and f for f in doc["facts"])


@pytest.mark.parametrize("name", NAMES)
def test_tools_are_in_openai_format(name):
    tools = load(name)["tools"]
    names = [t["function"]["name"] for t in tools]
    assert len(names) == len(set(names))
    for t in tools:
        assert t["type"] == "function"
        assert t["function"]["description"]
        schema = t["function"]["parameters"]
        assert schema["type"] == "object"
        assert set(schema["required"]) <= set(schema["properties"])


@pytest.mark.parametrize("name", NAMES)
def test_messages_are_valid_chat_completions_messages(name):
    for i, m in enumerate(load(name)["messages"]):
        assert m["role"] in ("system", "user", "assistant", "tool"), i
        if m["role"] == "tool":
            assert isinstance(m["content"], str) and m["tool_call_id"], i
        elif m["role"] == "assistant":
            assert isinstance(m.get("content"), str) or m.get("tool_calls"), i
        else:
            assert isinstance(m["content"], str) and m["content"], i


@pytest.mark.parametrize("name", NAMES)
def test_every_call_is_answered_once_right_after_its_assistant_message(name):
    doc = load(name)
    messages = doc["messages"]
    offered = {t["function"]["name"] for t in doc["tools"]}
    ids = []
    for i, calls in calling(doc):
        results = messages[i + 1:i + 1 + len(calls)]
        assert [r["role"] for r in results] == ["tool"] * len(calls), i
        assert sorted(r["tool_call_id"] for r in results) == sorted(c["id"] for c in calls), i
        assert {c["function"]["name"] for c in calls} <= offered
        ids += [c["id"] for c in calls]
    assert len(ids) == len(set(ids))
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert sorted(answered) == sorted(ids)


@pytest.mark.parametrize("name", NAMES)
def test_arguments_are_compact_json_objects_with_the_required_fields(name):
    doc = load(name)
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in doc["tools"]}
    for _, calls in calling(doc):
        for c in calls:
            text = c["function"]["arguments"]
            args = json.loads(text)
            assert isinstance(args, dict)
            assert text == json.dumps(args, ensure_ascii=False, separators=(",", ":"))
            schema = schemas[c["function"]["name"]]
            assert set(schema["required"]) <= set(args) <= set(schema["properties"])


@pytest.mark.parametrize("name", NAMES)
def test_every_fact_appears_literally(name):
    doc = load(name)
    haystack = texts(doc)
    for fact in doc["facts"]:
        assert any(fact in t for t in haystack), fact


def test_ecommerce_refund_story():
    doc = load("ecommerce_refund")
    messages = doc["messages"]
    assert len(calling(doc)) >= 3
    results = [m["content"] for m in messages if m["role"] == "tool"]
    assert sum(len(r) > 4000 for r in results) >= 3, "several results of several KB"
    assert sum(len(r) for r in results) > 0.8 * sum(len(t) for t in texts(doc))
    called = [c["function"]["name"] for _, cs in calling(doc) for c in cs]
    assert {"find_customer", "get_order", "track_shipment", "get_refund_policy", "issue_refund"} <= set(called)
    refund = next(json.loads(c["function"]["arguments"]) for _, cs in calling(doc) for c in cs
                  if c["function"]["name"] == "issue_refund")
    assert f"${refund['amount']:,.2f}" in doc["facts"]
    assert f"${refund['amount']:,.2f}" in messages[-1]["content"]


def test_ecommerce_refund_is_about_14k_tokens():
    tokens = pytest.importorskip("ctxlab.tokens")
    formats = pytest.importorskip("ctxlab.formats")
    conv = formats.load(SAMPLES / "ecommerce_refund.json")
    total = tokens.count_tokens(conv, "gpt-4o").total
    assert 12_500 <= total <= 15_500


def test_sql_agent_repairs_the_invalid_sql_and_runs_the_final_sql():
    doc = load("sql_agent")
    calls = {c["id"]: c for _, cs in calling(doc) for c in cs}
    accepted: set[str] = set()
    rejected: list[str] = []
    ran: list[str] = []
    for m in doc["messages"]:
        if m["role"] != "tool":
            continue
        call = calls[m["tool_call_id"]]
        args = json.loads(call["function"]["arguments"])
        if call["function"]["name"] == "valid_sql" and json.loads(m["content"])["valid"]:
            accepted.add(args["sql"])
        elif call["function"]["name"] == "valid_sql":
            rejected.append(args["sql"])
        elif call["function"]["name"] == "run_sql":
            assert args["sql"] in accepted
            ran.append(args["sql"])
            assert json.loads(m["content"])["rows"]
    assert len(rejected) == 1
    repairs = [json.loads(c["function"]["arguments"]) for c in calls.values()
               if "previous_sql" in json.loads(c["function"]["arguments"])]
    assert len(repairs) == 1
    repair = repairs[0]
    assert repair["previous_sql"] == rejected[0] and repair["error"]
    assert set(ran) <= set(doc["facts"]), "the exact final SQL of each question is a fact"


def test_parallel_travel_has_parallel_rounds_and_an_error_result():
    doc = load("parallel_travel")
    widths = [len(calls) for _, calls in calling(doc)]
    assert widths.count(3) >= 2
    errors = [m for m in doc["messages"] if m["role"] == "tool" and m["content"].startswith("Error")]
    assert len(errors) == 1
    for m in doc["messages"]:
        if m["role"] == "tool" and m not in errors:
            json.loads(m["content"])


def test_readme_describes_each_sample():
    readme = (SAMPLES / "README.md").read_text(encoding="utf-8")
    for name in NAMES:
        assert f"{name}.json" in readme


@pytest.mark.parametrize("name", NAMES)
def test_samples_load_through_ctxlab_formats(name):
    formats = pytest.importorskip("ctxlab.formats")
    doc = load(name)
    conv = formats.load(Path(SAMPLES / f"{name}.json"))
    assert len(conv.messages) == len(doc["messages"])
    assert conv.model == MODEL.get(name, "gpt-4o")
    assert list(conv.facts) == doc["facts"]
    assert [t.name for t in conv.tools] == [t["function"]["name"] for t in doc["tools"]]
    args = [c.arguments for m in conv.messages for c in m.tool_calls]
    assert args == [c["function"]["arguments"] for _, cs in calling(doc) for c in cs]


def test_zh_sql_agent_runs_in_deepseek_thinking_mode_and_repairs_its_sql():
    from ctxlab.formats import load as load_conv
    from ctxlab.validate import is_valid, validate
    doc = load("zh_sql_agent")
    assert all(m.get("reasoning_content") for m in doc["messages"] if m.get("tool_calls"))
    conv = load_conv(SAMPLES / "zh_sql_agent.json")
    assert is_valid(validate(conv, "deepseek-thinking"))
    names = [c["function"]["name"] for _, cs in calling(doc) for c in cs]
    assert names == ["generate_sql", "valid_sql", "generate_sql", "valid_sql", "run_sql",
                     "generate_sql", "valid_sql", "run_sql"]
    verdicts = [json.loads(m["content"])["valid"] for m in doc["messages"]
                if m["role"] == "tool" and m["content"].startswith('{"valid"')]
    assert verdicts == [False, True, True]


def test_zh_support_agent_offers_the_40_tools_of_the_chinese_catalog_with_labelled_queries():
    from ctxlab.retrieval import ToolCatalog, load_queries
    doc = load("zh_support_agent")
    catalog = ToolCatalog.load(SAMPLES / "tools_zh_support.json")
    assert len(doc["tools"]) == 40 == len(catalog.tools)
    assert [t["function"]["name"] for t in doc["tools"]] == [t.name for t in catalog.tools]
    queries = load_queries(SAMPLES / "tool_queries_zh_support.jsonl")
    gold = {g for q in queries for g in q.gold_tools}
    assert gold == {t.name for t in catalog.tools}, "every tool is the answer to at least one query"
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in q.query) for q in queries)


def test_zh_docs_agent_cites_the_sections_it_read():
    doc = load("zh_docs_agent")
    read = [json.loads(c["function"]["arguments"])["section"] for _, cs in calling(doc) for c in cs
            if c["function"]["name"] == "read_doc"]
    answers = [m["content"] for m in doc["messages"] if m["role"] == "assistant" and m.get("content")]
    assert read == ["3.2", "4.1", "5.1", "6.2"]
    for section in read:
        assert any(f"第 {section} 条" in a for a in answers), section
