"""OpenAI Responses API input items: gathering items into messages, detection, errors, writing."""
from __future__ import annotations

import json

import pytest

from ctxlab.errors import EmptyMessageError, ShapeError, ToolArgumentsError, UnknownRoleError
from ctxlab.formats import FORMATS, export, loads
from ctxlab.conversation import Conversation, Message, Part, ToolCall

REQUEST = {
    "model": "o4-mini",
    "instructions": "You are a travel assistant.",
    "tools": [{"type": "function", "name": "get_weather", "description": "Weather for a city",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}],
    "input": [
        {"role": "developer", "content": "Answer in one sentence."},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Weather in Paris and Rome? Here is my map."},
            {"type": "input_image", "image_url": "https://example.com/map.png", "detail": "auto"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Two cities, two calls."}],
         "encrypted_content": "gAAAAB..."},
        {"type": "message", "role": "assistant", "id": "msg_1", "content": [
            {"type": "output_text", "text": "Checking both.", "annotations": []}]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
         "arguments": "{\"city\": \"Paris\"}", "status": "completed"},
        {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "get_weather",
         "arguments": "{\"city\":\"Rome\"}", "status": "completed"},
        {"type": "function_call_output", "call_id": "call_1", "output": "18C"},
        {"type": "function_call_output", "call_id": "call_2", "output": "21C"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Paris 18C, Rome 21C."}]},
        {"role": "user", "content": "Thanks!"},
    ],
}


def read(doc, **kw) -> Conversation:
    return loads(json.dumps(doc), **kw)


def test_items_are_gathered_into_messages():
    conv = read(REQUEST)
    assert conv.format == "responses" and conv.model == "o4-mini"
    assert [m.role for m in conv.messages] == ["system", "system", "user", "assistant", "tool", "tool",
                                               "assistant", "user"]
    assert conv.messages[0].text == "You are a travel assistant."
    assert conv.messages[1].extra["openai_role"] == "developer"
    assert conv.messages[2].parts[1] == Part("image", data={"url": "https://example.com/map.png", "detail": "auto"})
    asst = conv.messages[3]
    assert asst.id == "msg_1" and asst.text == "Checking both."
    assert asst.parts[0].type == "thinking" and asst.parts[0].text == "Two cities, two calls."
    assert asst.tool_calls == (ToolCall("call_1", "get_weather", '{"city": "Paris"}'),
                               ToolCall("call_2", "get_weather", '{"city":"Rome"}'))
    assert [(m.tool_call_id, m.text) for m in conv.messages[4:6]] == [("call_1", "18C"), ("call_2", "21C")]
    assert conv.tools[0].name == "get_weather"
    assert any("item(s) 4, 5" in n and "ids" in n for n in conv.notes)


def test_function_calls_without_a_message_before_them_form_one_assistant_message():
    conv = read([{"role": "user", "content": "go"},
                 {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
                 {"type": "function_call", "call_id": "b", "name": "g", "arguments": "{}"},
                 {"type": "function_call_output", "call_id": "a", "output": "1"}])
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool"]
    assert [c.id for c in conv.messages[1].tool_calls] == ["a", "b"]


def test_reasoning_with_no_assistant_after_it_is_kept_as_its_own_message_with_a_note():
    conv = read([{"role": "user", "content": "go"},
                 {"type": "reasoning", "id": "rs_9", "summary": [{"type": "summary_text", "text": "thinking"}]},
                 {"role": "user", "content": "hello?"}])
    assert [m.role for m in conv.messages] == ["user", "assistant", "user"]
    assert conv.messages[1].parts[0].text == "thinking"
    assert any("item 1" in n and "reasoning" in n for n in conv.notes)


def test_a_string_input_is_one_user_message():
    conv = read({"model": "gpt-4.1", "input": "Hello there"}, format="responses")
    assert conv.messages == (Message("user", "Hello there"),)


def test_detection():
    detect = FORMATS["responses"].detect
    assert detect(REQUEST["input"]) == 3
    assert detect([{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "x"}]}]) == 3
    assert detect([{"type": "message", "role": "user", "content": "x"}]) == 2
    assert detect([{"role": "user", "content": "x"}]) == 0
    assert read(REQUEST["input"]).format == "responses"  # no instructions: the items alone decide


def test_explicit_format_overrides_detection():
    items = [{"type": "message", "role": "user", "content": "x"}]
    assert read(items, format="responses").format == "responses"
    with pytest.raises(UnknownRoleError) as e:
        read(REQUEST["input"], format="anthropic")
    assert "message 0" in str(e.value) and "as asked" in str(e.value)


@pytest.mark.parametrize("item, error", [
    ({"type": "web_search_call", "id": "ws_1"}, ShapeError),
    ({"type": "function_call", "name": "f", "arguments": "{}"}, ShapeError),
    ({"type": "function_call", "call_id": "c", "arguments": "{}"}, ShapeError),
    ({"type": "function_call", "call_id": "c", "name": "f", "arguments": "{city: Paris}"}, ToolArgumentsError),
    ({"type": "function_call", "call_id": "c", "name": "f", "arguments": "[1]"}, ToolArgumentsError),
    ({"type": "function_call_output", "output": "x"}, ShapeError),
    ({"type": "message", "role": "robot", "content": "x"}, UnknownRoleError),
    ({"type": "message", "role": "user"}, EmptyMessageError),
    ({"type": "message", "role": "user", "content": [{"text": "no type"}]}, ShapeError),
    ({"type": "reasoning", "summary": "not a list"}, ShapeError),
    ({"content": "neither type nor role"}, ShapeError),
])
def test_bad_items_raise_the_right_error_at_message_1(item, error):
    with pytest.raises(error) as e:
        read([{"role": "user", "content": "hi"}, item], format="responses")
    assert "message 1" in str(e.value)


def test_writing_back_keeps_the_items():
    conv = read(REQUEST)
    out = export(conv, "responses")
    items = out.data["input"]
    assert out.data["tools"] == REQUEST["tools"]
    assert items[0] == {"type": "message", "role": "system",
                        "content": [{"type": "input_text", "text": "You are a travel assistant."}]}
    assert items[1]["role"] == "developer"
    assert items[3] == REQUEST["input"][2]  # the reasoning item, encrypted content and all
    assert items[4]["id"] == "msg_1"
    assert [(i["type"], i.get("call_id"), i.get("arguments")) for i in items[5:9]] == [
        ("function_call", "call_1", '{"city": "Paris"}'), ("function_call", "call_2", '{"city":"Rome"}'),
        ("function_call_output", "call_1", None), ("function_call_output", "call_2", None)]
    again = read(out.data)
    assert [(m.role, m.text, m.tool_calls) for m in again.messages] == [
        (m.role, m.text, m.tool_calls) for m in conv.messages]


def test_what_responses_cannot_carry_is_noted():
    conv = Conversation((
        Message("user", "hi", name="alice"),
        Message("assistant", (Part("thinking", "hmm", {"signature": "sig"}), Part("text", "a")),
                tool_calls=(ToolCall("c1", "f"),)),
        Message("tool", "boom", tool_call_id="c1", is_error=True),
    ))
    out = export(conv, "responses")
    assert [i["type"] for i in out.data["input"]] == ["message", "message", "function_call", "function_call_output"]
    assert any("message 0" in n and "name" in n for n in out.notes)
    assert any("message 1" in n and "reasoning" in n for n in out.notes)
    assert any("message 2" in n and "error flag" in n for n in out.notes)


def test_two_assistant_messages_in_a_row_that_would_merge_are_noted():
    conv = Conversation((Message("user", "q"), Message("assistant", "first"),
                         Message("assistant", "", tool_calls=(ToolCall("c", "f"),))))
    assert any("messages 1 and 2" in n for n in export(conv, "responses").notes)
