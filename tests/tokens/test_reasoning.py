"""Reasoning the providers require back: read, written, counted, validated, and kept
by every strategy (properties over generated conversations, in the style of
tests/strategies/test_strategy_invariants.py)."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxlab
from ctxlab.conversation import Message, Part, ToolCall, ToolDef
from ctxlab.errors import CtxlabError
from ctxlab.formats import export
from ctxlab.reasoning import lost_reasoning, required_reasoning
from ctxlab.strategies import STRATEGIES, Budget, get_strategy, make_view
from ctxlab.tokens import TokenCounter
from ctxlab.validate import is_valid, validate

from ..strategies.test_strategy_invariants import BASELINES, COUNTER, conversations, strategy_params

DOC = {"model": "deepseek-reasoner", "messages": [
    {"role": "user", "content": "杭州西湖店的可乐还有多少？"},
    {"role": "assistant", "content": None, "reasoning_content": "需要查库存表。",
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_stock", "arguments": "{\"sku\":\"可乐\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "{\"qty\": 48}"},
    {"role": "assistant", "content": "还有 48 瓶。", "reasoning_content": "库存 48。"}]}


def test_reasoning_content_is_read_as_a_thinking_part_and_written_back_unchanged():
    conv = ctxlab.loads(json.dumps(DOC, ensure_ascii=False))
    assert conv.messages[1].parts == (Part("thinking", "需要查库存表。"),)
    assert [p.type for p in conv.messages[3].parts] == ["thinking", "text"]
    out = export(conv, "openai")
    assert out.data["messages"] == DOC["messages"] and not out.notes


@pytest.mark.parametrize("bad, where", [({"role": "user", "content": "x", "reasoning_content": "y"}, "messages[0]"),
                                        ({"role": "assistant", "content": "x", "reasoning_content": 3}, "messages[0]")])
def test_a_misplaced_or_mistyped_reasoning_content_is_an_error_naming_where(bad, where):
    with pytest.raises(CtxlabError, match="reasoning_content") as info:
        ctxlab.loads(json.dumps({"messages": [bad]}), format="openai")
    assert "reasoning_content" in str(info.value.where)


def test_reasoning_is_counted_where_the_model_reads_it():
    conv = ctxlab.loads(json.dumps(DOC, ensure_ascii=False))
    without = [replace(m, content=tuple(p for p in m.parts if p.type != "thinking")) if m.role == "assistant" else m
               for m in conv.messages]
    tools = [ToolDef("get_stock", "查询库存。", {"type": "object", "properties": {"sku": {"type": "string"}}})]
    for model in ("deepseek-reasoner", "gpt-4o"):  # DeepSeek-V4 keeps all reasoning when tools are sent
        counter = TokenCounter(model)
        assert counter.count(conv.messages, tools).message_tokens[1] > counter.count(without, tools).message_tokens[1]
    # without tools, V4's encoding drops reasoning before the newest user turn (tool results are one)
    counter = TokenCounter("deepseek-reasoner")
    assert counter.count(conv.messages, ()).message_tokens[1] == counter.count(without, ()).message_tokens[1]


def test_deepseek_thinking_rejects_a_tool_call_without_its_reasoning_in_any_turn():
    conv = ctxlab.loads(json.dumps(DOC, ensure_ascii=False))
    msgs = list(conv.messages) + [Message("user", "再查雪碧")]
    assert is_valid(validate(msgs, "deepseek-thinking"))
    stripped = msgs[:1] + [replace(msgs[1], content="")] + msgs[2:]
    found = [f for f in validate(stripped, "deepseek-thinking") if f.severity == "error"]
    assert [(f.code, f.index) for f in found] == [("missing_reasoning_content", 1)]
    assert is_valid(validate(stripped, "deepseek"))  # thinking off: nothing required
    # an answer without tool calls may lose its reasoning
    assert is_valid(validate(msgs[:3] + [replace(msgs[3], content="还有 48 瓶。")] + msgs[4:], "deepseek-thinking"))


def _anthropic(blocks_1, blocks_3):
    return {"messages": [
        {"role": "user", "content": "查库存"},
        {"role": "assistant", "content": blocks_1 + [{"type": "tool_use", "id": "t1", "name": "get_stock", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "48"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "48 瓶"}]},
        {"role": "user", "content": "再查雪碧"},
        {"role": "assistant", "content": blocks_3 + [{"type": "tool_use", "id": "t2", "name": "get_stock", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "12"}]}]}


SIGNED = [{"type": "thinking", "thinking": "查表", "signature": "sig=="}]


@pytest.mark.parametrize("first, current, codes", [
    (SIGNED, SIGNED, []),
    ([], SIGNED, []),  # an earlier turn's thinking may go
    (SIGNED, [], [("missing_thinking_block", 5)]),
    (SIGNED, [{"type": "thinking", "thinking": "查表"}], [("unsigned_thinking_block", 5)]),
    (SIGNED, [{"type": "redacted_thinking", "data": "xx"}], []),
])
def test_anthropic_thinking_requires_the_thinking_block_of_the_turn_in_progress(first, current, codes):
    conv = ctxlab.loads(json.dumps(_anthropic(first, current)), format="anthropic")
    found = [(f.code, f.index) for f in validate(conv, "anthropic-thinking") if f.severity == "error"]
    assert found == codes
    call = next(i for i, m in enumerate(conv.messages) if m.tool_calls and m.tool_calls[0].id == "t2")
    assert required_reasoning(conv.messages, "anthropic") == ({call} if current else set())


def test_required_reasoning_for_deepseek_is_every_tool_call_message_that_carries_it():
    conv = ctxlab.loads(json.dumps(DOC, ensure_ascii=False))
    assert required_reasoning(conv.messages, "deepseek") == {1}
    with pytest.raises(ValueError, match="known"):
        required_reasoning(conv.messages, "gemini")


@st.composite
def thinking_conversations(draw, provider: str):
    """The invariant test's conversations with reasoning on every assistant message, as the
    provider returned it (Anthropic blocks signed)."""
    msgs = draw(conversations())
    data = {"signature": "c2lnbmF0dXJl"} if provider == "anthropic" else {}
    out = []
    for k, m in enumerate(msgs):
        if m.role == "assistant":
            m = replace(m, content=(Part("thinking", f"推理 {k}: 先查订单再决定", data),) + m.parts)
        out.append(m)
    return out


# Every registered strategy but the two baselines. Measured when this test was written: none of
# them rewrites the content of an assistant message that made tool calls (they keep it whole, clear
# tool results, or drop the round with its results), so none loses required reasoning and no xfail
# is needed. A strategy that starts rewriting assistant messages must keep the parts that
# ``required_reasoning`` names.
STRATEGY_NAMES = sorted(set(STRATEGIES) - BASELINES)


def test_lost_reasoning_names_a_kept_message_whose_reasoning_was_stripped():
    conv = ctxlab.loads(json.dumps(DOC, ensure_ascii=False))
    msgs = list(conv.messages)
    stripped = [msgs[0], replace(msgs[1], content=""), msgs[2], replace(msgs[3], content="还有 48 瓶。")]
    assert lost_reasoning(msgs, stripped, [0, 1, 2, 3], "deepseek") == [1]
    assert lost_reasoning(msgs, [msgs[0], msgs[3]], [0, 3], "deepseek") == []  # the round dropped whole


@pytest.mark.parametrize("provider", ["deepseek", "anthropic"])
@pytest.mark.parametrize("name", STRATEGY_NAMES)
@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_every_strategy_keeps_the_reasoning_its_provider_requires(provider, name, data):
    msgs = data.draw(thinking_conversations(provider))
    rules = f"{provider}-thinking"
    assert is_valid(validate(msgs, rules)), "generator made an invalid input"
    strategy = get_strategy(name, **data.draw(strategy_params(name)))
    budget = Budget(data.draw(st.integers(150, 12_000)), reserve=data.draw(st.sampled_from([0.0, 0.15])))
    plan = strategy.apply(make_view(msgs, counter=COUNTER), budget)
    assert lost_reasoning(msgs, plan.messages, plan.origin, provider) == []
    errors = [f for f in validate(list(plan.messages), rules) if f.severity == "error"]
    assert not errors, errors[0].message


def test_claude_counts_leave_out_thinking_of_earlier_turns_as_anthropic_does():
    conv = ctxlab.loads(json.dumps(_anthropic(SIGNED, SIGNED)), format="anthropic")
    msgs = list(conv.messages)
    old = next(i for i, m in enumerate(msgs) if m.tool_calls and m.tool_calls[0].id == "t1")
    new = next(i for i, m in enumerate(msgs) if m.tool_calls and m.tool_calls[0].id == "t2")
    counter = TokenCounter("claude-sonnet-4")
    count = counter.count(msgs, ())
    no_old = msgs[:old] + [msgs[old].with_content(tuple(p for p in msgs[old].parts if p.type != "thinking"))] \
        + msgs[old + 1:]
    assert count.message_tokens[old] == counter.count(no_old, ()).message_tokens[old]
    no_new = msgs[:new] + [msgs[new].with_content(tuple(p for p in msgs[new].parts if p.type != "thinking"))]
    assert count.message_tokens[new] > counter.count(no_new, ()).message_tokens[new]
    assert any("earlier" in n or "before the newest" in n for n in count.approximations)
