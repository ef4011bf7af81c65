"""LangChain / LangGraph messages: the three item forms, the converter gaps ctxlab closes,
errors, and writing a state that langchain-core reads back."""
from __future__ import annotations

import json

import langchain_core
import pytest
from langchain_core.load import dumpd
from langchain_core.messages import (AIMessage, ChatMessage, FunctionMessage, HumanMessage, SystemMessage,
                                     ToolMessage, convert_to_messages, convert_to_openai_messages,
                                     messages_from_dict, messages_to_dict)

from ctxlab.errors import ExportError, ShapeError, ToolArgumentsError, UnknownRoleError
from ctxlab.formats import FORMATS, export, loads
from ctxlab.conversation import Conversation, Message, Part, ToolCall

SPACED_ARGS = '{"city": "Paris",  "days": 3}'


def lc_state() -> dict:
    """A LangGraph state as a checkpoint or a trace export holds it."""
    return {"messages": messages_to_dict([
        SystemMessage("You are a weather bot."),
        HumanMessage("Weather in Paris for 3 days?", name="alice", id="msg-h1"),
        AIMessage("", id="run-ai-1",
                  tool_calls=[{"id": "call_1", "name": "forecast", "args": {"city": "Paris", "days": 3}}],
                  additional_kwargs={"tool_calls": [{"id": "call_1", "type": "function", "function": {
                      "name": "forecast", "arguments": SPACED_ARGS}}]}),
        ToolMessage("service unavailable", tool_call_id="call_1", name="forecast", status="error"),
        AIMessage("The forecast service is down."),
    ])}


def read(doc, **kw) -> Conversation:
    return loads(json.dumps(doc), **kw)


def test_reads_a_langgraph_state_of_messages_to_dict_items():
    conv = read(lc_state())
    assert conv.format == "langchain"
    assert [m.role for m in conv.messages] == ["system", "user", "assistant", "tool", "assistant"]
    human, ai, tool = conv.messages[1:4]
    assert (human.name, human.id, human.text) == ("alice", "msg-h1", "Weather in Paris for 3 days?")
    assert ai.id == "run-ai-1"
    assert ai.tool_calls == (ToolCall("call_1", "forecast", SPACED_ARGS),)  # the original text, not re-dumped
    assert (tool.tool_call_id, tool.is_error, tool.name) == ("call_1", True, "forecast")


def test_arguments_text_that_no_longer_matches_args_is_replaced_by_args():
    msg = AIMessage("", tool_calls=[{"id": "c", "name": "f", "args": {"a": 2}}],
                    additional_kwargs={"tool_calls": [{"id": "c", "type": "function",
                                                       "function": {"name": "f", "arguments": '{"a": 1}'}}]})
    conv = read(messages_to_dict([HumanMessage("x"), msg]))
    assert conv.messages[1].tool_calls[0].arguments == '{"a":2}'


def test_reads_the_serialized_constructor_form_without_langchain_load(monkeypatch):
    import langchain_core.load as lc_load

    def refuse(*a, **k):
        raise AssertionError("langchain_core.load must never run on input")
    monkeypatch.setattr(lc_load, "load", refuse)
    monkeypatch.setattr(lc_load, "loads", refuse)
    items = [dumpd(HumanMessage("hi", id="h")),
             dumpd(AIMessage("", tool_calls=[{"id": "c", "name": "f", "args": {"q": "x"}}])),
             dumpd(ToolMessage("done", tool_call_id="c"))]
    conv = read(items)
    assert conv.format == "langchain"
    assert [(m.role, m.text) for m in conv.messages] == [("user", "hi"), ("assistant", ""), ("tool", "done")]
    assert conv.messages[1].tool_calls == (ToolCall("c", "f", '{"q":"x"}'),)


def test_a_serialized_secret_is_refused_not_resolved():
    items = [{"lc": 1, "type": "secret", "id": ["OPENAI_API_KEY"]}]
    with pytest.raises(ShapeError) as e:
        read(items, format="langchain")
    assert "message 0" in str(e.value)


def test_reads_flat_message_dicts_and_chunks():
    conv = read([{"type": "human", "content": "hi"}, {"type": "AIMessageChunk", "content": "hel"}])
    assert conv.format == "langchain"
    assert [(m.role, m.text) for m in conv.messages] == [("user", "hi"), ("assistant", "hel")]


def test_anthropic_tool_use_blocks_without_tool_calls_are_read_as_tool_calls():
    ai = {"type": "ai", "data": {"content": [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "forecast", "input": {"city": "Rome"}}], "tool_calls": []}}
    conv = read([{"type": "human", "data": {"content": "Rome?"}}, ai])
    msg = conv.messages[1]
    assert msg.tool_calls == (ToolCall("toolu_1", "forecast", '{"city":"Rome"}'),)
    assert msg.parts == (Part("text", "Checking."),)  # the tool_use block is a call now, not content


def test_tool_use_blocks_already_listed_in_tool_calls_are_not_doubled():
    ai = AIMessage([{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}],
                   tool_calls=[{"id": "toolu_1", "name": "f", "args": {"a": 1}}])
    conv = read(messages_to_dict([HumanMessage("x"), ai]))
    assert conv.messages[1].tool_calls == (ToolCall("toolu_1", "f", '{"a":1}'),)


def test_a_human_message_with_tool_result_blocks_becomes_tool_messages():
    human = HumanMessage([{"type": "tool_result", "tool_use_id": "toolu_1", "content": "21C", "is_error": False},
                          {"type": "text", "text": "thanks"}])
    ai = AIMessage([{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}])
    conv = read(messages_to_dict([HumanMessage("q"), ai, human]))
    assert [(m.role, m.text, m.tool_call_id) for m in conv.messages[2:]] == [
        ("tool", "21C", "toolu_1"), ("user", "thanks", None)]


def test_content_blocks_of_every_provider_shape():
    human = HumanMessage([
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "https://x.test/a.png", "detail": "low"}},
        {"type": "image", "base64": "AAAA", "mime_type": "image/png"},
        {"type": "image", "source_type": "url", "url": "https://x.test/b.png"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "BBBB"}},
    ])
    ai = AIMessage([{"type": "thinking", "thinking": "hmm", "signature": "sig"},
                    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "plan"}]},
                    {"type": "text", "text": "answer"}])
    conv = read(messages_to_dict([human, ai]))
    urls = [p.data["url"] for p in conv.messages[0].parts if p.type == "image"]
    assert urls == ["https://x.test/a.png", "data:image/png;base64,AAAA", "https://x.test/b.png",
                    "data:image/jpeg;base64,BBBB"]
    thinking = [(p.text, p.data.get("signature")) for p in conv.messages[1].parts if p.type == "thinking"]
    assert thinking == [("hmm", "sig"), ("plan", None)]
    assert conv.messages[1].text == "answer"


def test_developer_role_chat_messages_and_legacy_function_messages():
    msgs = [SystemMessage("rules", additional_kwargs={"__openai_role__": "developer"}),
            ChatMessage("hi", role="user"),
            AIMessage("", additional_kwargs={"function_call": {"name": "lookup", "arguments": '{"q":1}'}}),
            FunctionMessage("found", name="lookup")]
    conv = read(messages_to_dict(msgs))
    assert [m.role for m in conv.messages] == ["system", "user", "assistant", "tool"]
    assert export(conv, "openai").data["messages"][0]["role"] == "developer"
    call = conv.messages[2].tool_calls[0]
    assert (call.name, call.arguments) == ("lookup", '{"q":1}')
    assert conv.messages[3].tool_call_id == call.id
    assert any("legacy function_call" in n for n in conv.notes)


def test_response_metadata_left_out_is_noted():
    conv = read(messages_to_dict([HumanMessage("q"), AIMessage("a", response_metadata={"model_name": "x"})]))
    assert any("message(s) 1" in n and "response_metadata" in n for n in conv.notes)


def _ai(**data) -> list:
    return [{"type": "human", "data": {"content": "q"}}, {"type": "ai", "data": {"content": "", **data}}]


@pytest.mark.parametrize("doc, error", [
    ([{"type": "human", "data": {"content": "q"}}, {"type": "robot", "data": {"content": "x"}}], UnknownRoleError),
    ([{"type": "human", "data": {"content": "q"}}, {"type": "tool", "data": {"content": "x"}}], ShapeError),
    (_ai(tool_calls=[{"id": "c", "name": "f", "args": [1, 2]}]), ToolArgumentsError),
    (_ai(additional_kwargs={"tool_calls": [{"id": "c", "type": "function",
                                            "function": {"name": "f", "arguments": "{bad"}}]}), ToolArgumentsError),
    (_ai(tool_calls=[{"id": None, "name": "f", "args": {}}]), ShapeError),
    ([{"type": "human", "data": {"content": "q"}}, {"type": "ai", "data": {"content": 5}}], ShapeError),
    ([{"type": "human", "data": {"content": "q"}}, {"type": "chat", "data": {"content": "x", "role": "critic"}}],
     UnknownRoleError),
    ([{"type": "human", "data": {"content": "q"}},
      {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "RemoveMessage"], "kwargs": {}}],
     UnknownRoleError),
    ([{"type": "human", "data": {"content": "q"}},
      {"type": "ai", "data": {"content": [{"type": "tool_use", "id": "t", "name": "f", "input": "x=1"}]}}],
     ToolArgumentsError),
    ([{"type": "human", "data": {"content": "q"}}, {"type": "human", "data": {"content": "x", "name": 3}}],
     ShapeError),
])
def test_bad_input_raises_the_right_error_at_message_1(doc, error):
    with pytest.raises(error) as e:
        read(doc, format="langchain")
    assert "message 1" in str(e.value)


def test_detection():
    detect = FORMATS["langchain"].detect
    assert detect(lc_state()["messages"]) == 3
    assert detect([dumpd(HumanMessage("x"))]) == 3
    assert detect([{"role": "user", "content": "x"}]) == 0
    assert read(lc_state()).format == "langchain"


def test_explicit_format_overrides_detection():
    with pytest.raises(UnknownRoleError) as e:
        read(lc_state(), format="openai")
    assert "message 0" in str(e.value) and "as asked" in str(e.value)


def test_written_state_is_read_by_langchain_core_with_tool_calls_and_text_kept():
    conv = read(lc_state())
    out = export(conv, "langchain")
    assert out.notes == ()
    msgs = messages_from_dict(out.data["messages"])
    assert [type(m).__name__ for m in msgs] == ["SystemMessage", "HumanMessage", "AIMessage", "ToolMessage",
                                                "AIMessage"]
    assert msgs[2].tool_calls[0]["args"] == {"city": "Paris", "days": 3}
    assert msgs[2].additional_kwargs["tool_calls"][0]["function"]["arguments"] == SPACED_ARGS
    assert msgs[3].status == "error" and msgs[1].name == "alice"


def test_a_field_langchain_rejects_is_an_export_error_naming_the_message():
    conv = Conversation((Message("user", "hi"), Message("user", "x", name=7)))  # e.g. read leniently elsewhere
    with pytest.raises(ExportError) as e:
        export(conv, "langchain")
    assert "message 1" in str(e.value) and "name" in str(e.value)


def test_written_state_carries_tools_and_model():
    conv = loads(json.dumps({"model": "gpt-4o", "tools": [{"type": "function", "function": {
        "name": "f", "description": "d", "parameters": {"type": "object", "properties": {}}}}],
        "messages": [{"role": "user", "content": "hi"}]}))
    data = export(conv, "langchain").data
    back = read(data)
    assert (back.model, [t.name for t in back.tools]) == ("gpt-4o", ["f"])


# --- the two langchain-core converter gaps named in the guide: ctxlab's side is asserted, langchain's
# side is only measured (skipped with the reason once langchain-core closes the gap)

ANTHROPIC_TURN = {"role": "assistant", "content": [
    {"type": "text", "text": "Checking."},
    {"type": "tool_use", "id": "toolu_1", "name": "forecast", "input": {"city": "Rome"}}]}


def test_ctxlab_reads_tool_use_blocks_that_convert_to_messages_leaves_without_tool_calls():
    lc_messages = convert_to_messages([{"role": "user", "content": "Rome?"}, ANTHROPIC_TURN])
    conv = read(messages_to_dict(lc_messages))
    assert conv.messages[1].tool_calls == (ToolCall("toolu_1", "forecast", '{"city":"Rome"}'),)


def test_measure_convert_to_messages_gap():
    ai = convert_to_messages([ANTHROPIC_TURN])[0]
    if ai.tool_calls:
        pytest.skip(f"langchain-core {langchain_core.__version__} now fills tool_calls from tool_use blocks")
    assert any(isinstance(b, dict) and b.get("type") == "tool_use" for b in ai.content)


def _ai_with_compact_args() -> AIMessage:
    return AIMessage("", tool_calls=[{"id": "c", "name": "f", "args": {"a": 1}}],
                     additional_kwargs={"tool_calls": [{"id": "c", "type": "function",
                                                        "function": {"name": "f", "arguments": '{"a":1}'}}]})


def test_ctxlab_keeps_the_arguments_text_that_convert_to_openai_messages_reserializes():
    conv = read(messages_to_dict([HumanMessage("q"), _ai_with_compact_args()]))
    written = export(conv, "openai").data["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert written == '{"a":1}'


def test_measure_convert_to_openai_messages_gap():
    args = convert_to_openai_messages([_ai_with_compact_args()])[0]["tool_calls"][0]["function"]["arguments"]
    if args == '{"a":1}':
        pytest.skip(f"langchain-core {langchain_core.__version__} now keeps the original arguments text")
    assert args == '{"a": 1}'
