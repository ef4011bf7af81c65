"""OpenAI Chat Completions reading and writing, envelopes, JSONL, limits and input errors."""
from __future__ import annotations

import json

import pytest

from ctxlab import export, load_all, loads
from ctxlab.errors import (DuplicateToolCallIdError, EmptyMessageError, InputTooLargeError, NestingTooDeepError,
                           NotJSONError, ShapeError, ToolArgumentsError, UnknownFormatError, UnknownRoleError)


def call(cid, name="lookup", args='{"id":"A-1"}'):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


PARALLEL = [
    {"role": "developer", "content": "Be brief."},
    {"role": "user", "name": "alice", "content": [{"type": "text", "text": "What is in this photo?"},
                                                  {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}}]},
    {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2", "weather", '{"city": "Oslo"}')]},
    {"role": "tool", "tool_call_id": "c2", "name": "weather", "content": "-3C"},
    {"role": "tool", "tool_call_id": "c1", "content": ""},
    {"role": "assistant", "content": "It is cold in Oslo.", "refusal": None},
]


def test_parallel_calls_names_parts_and_developer_role_are_read():
    conv = loads(json.dumps({"model": "gpt-4o", "messages": PARALLEL}))
    assert conv.format == "openai" and conv.model == "gpt-4o"
    roles = [m.role for m in conv.messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert conv.messages[1].name == "alice"
    assert [p.type for p in conv.messages[1].content] == ["text", "image"]
    assert [c.id for c in conv.messages[2].tool_calls] == ["c1", "c2"]
    assert conv.messages[2].tool_calls[1].arguments == '{"city": "Oslo"}'  # original text, spaces kept
    assert conv.messages[4].content == ""  # an empty tool result is legitimate


def test_writing_openai_gives_back_the_same_messages():
    conv = loads(json.dumps(PARALLEL))
    out = export(conv, "openai").data["messages"]
    assert out[0]["role"] == "developer"
    assert out[2]["tool_calls"] == PARALLEL[2]["tool_calls"]
    assert out[2]["content"] is None
    assert out[1]["content"][1] == PARALLEL[1]["content"][1]
    assert out[5] == PARALLEL[5]  # unknown fields such as refusal are written back


def test_legacy_function_call_is_read_as_a_tool_call_with_a_noted_id():
    conv = loads(json.dumps([
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "function_call": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}},
        {"role": "function", "name": "weather", "content": "-3C"},
    ]))
    a, r = conv.messages[1], conv.messages[2]
    assert a.tool_calls[0].name == "weather" and r.role == "tool"
    assert r.tool_call_id == a.tool_calls[0].id
    assert any("legacy function_call" in n for n in conv.notes)


def test_a_call_id_may_be_reused_after_it_was_answered_but_not_before():
    reused = [{"role": "user", "content": "go"},
              {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
              {"role": "tool", "tool_call_id": "c1", "content": "1"},
              {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
              {"role": "tool", "tool_call_id": "c1", "content": "2"}]
    conv = loads(json.dumps(reused))
    assert any("reused" in n and "message 3" in n for n in conv.notes)
    with pytest.raises(DuplicateToolCallIdError, match="message 1.*same message"):
        loads(json.dumps([reused[0], {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c1")]}]))
    with pytest.raises(DuplicateToolCallIdError, match="message 2.*still unanswered"):
        loads(json.dumps(reused[:2] + [reused[3]]))


@pytest.mark.parametrize("messages,error,where", [
    ([{"role": "robot", "content": "x"}], UnknownRoleError, "message 0"),
    ([{"role": "user", "content": "a"}, {"role": "user"}], EmptyMessageError, "message 1"),
    ([{"role": "user", "content": "a"}, {"role": "assistant", "tool_calls": [call("c", args="{oops")]}],
     ToolArgumentsError, "message 1 ($[1].tool_calls[0].function.arguments)"),
    ([{"role": "assistant", "tool_calls": [call("c", args="[1, 2]")]}], ToolArgumentsError, "message 0"),
    ([{"role": "tool", "content": "x"}], ShapeError, "tool_call_id"),
    ([{"role": "user", "content": 42}], ShapeError, "message 0 ($[0].content)"),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": 1}]}], ShapeError, "message 0"),
    (["just a string"], ShapeError, "$"),
])
def test_bad_messages_name_the_problem_and_where(messages, error, where):
    with pytest.raises(error) as e:
        loads(json.dumps(messages))
    assert where in str(e.value)


def test_errors_inside_an_envelope_give_the_json_path():
    with pytest.raises(UnknownRoleError, match=r"message 1 \(\$\.messages\[1\]\.role\)"):
        loads(json.dumps({"messages": [{"role": "user", "content": "a"}, {"role": "bot", "content": "b"}]}))


def test_not_json_says_line_and_column():
    with pytest.raises(NotJSONError, match="line 2, column"):
        loads('[\n{"role": "user" "content": "x"}]')


def test_jsonl_messages_and_jsonl_conversations():
    lines = "\n".join(json.dumps(m) for m in PARALLEL)
    assert len(loads(lines).messages) == 6
    convs = load_all("\n".join(json.dumps({"messages": PARALLEL[1:2]}) for _ in range(4)))
    assert len(convs) == 4
    with pytest.raises(ShapeError, match="4 conversations"):
        loads("\n".join(json.dumps({"messages": PARALLEL[1:2]}) for _ in range(4)))
    with pytest.raises(NotJSONError, match="JSONL line 2"):
        load_all(json.dumps({"messages": []}) + "\n{broken\n")


def test_a_list_of_conversation_objects_is_several_conversations():
    convs = load_all(json.dumps([{"messages": PARALLEL[1:2]}, {"messages": PARALLEL}]))
    assert [len(c) for c in convs] == [1, 6]


def test_size_and_depth_limits():
    text = json.dumps(PARALLEL)
    with pytest.raises(InputTooLargeError, match="limit"):
        loads(text, max_bytes=100)
    deep = {"messages": [{"role": "user", "content": "x", "meta": json.loads("[" * 80 + "]" * 80)}]}
    with pytest.raises(NestingTooDeepError, match=r"\$\.messages\[0\]\.meta"):
        loads(json.dumps(deep))
    assert loads(json.dumps(deep), max_depth=200).messages[0].extra["meta"]


def test_unknown_format_lists_the_known_ones():
    with pytest.raises(UnknownFormatError, match="anthropic.*langchain.*openai.*responses"):
        loads(json.dumps(PARALLEL), format="cohere")


def test_facts_and_metadata_are_kept():
    conv = loads(json.dumps({"title": "t", "facts": ["A-1"], "messages": PARALLEL[1:2]}))
    assert conv.facts == ("A-1",) and conv.metadata["title"] == "t"
    with pytest.raises(ShapeError, match="facts"):
        loads(json.dumps({"facts": "A-1", "messages": PARALLEL[1:2]}))


def test_tools_in_the_envelope_are_read_in_any_shape():
    tools = [{"type": "function", "function": {"name": "lookup", "description": "d", "parameters": {"type": "object"}}},
             {"name": "weather", "description": "w", "input_schema": {"type": "object"}}]
    conv = loads(json.dumps({"messages": PARALLEL, "tools": tools}))
    assert [t.name for t in conv.tools] == ["lookup", "weather"]
    with pytest.raises(ShapeError, match=r"\$\.tools\[1\].*defined twice"):
        loads(json.dumps({"messages": PARALLEL, "tools": [tools[0], tools[0]]}))
