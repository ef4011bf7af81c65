"""Anthropic Messages: reading blocks into the model, detection, errors, and writing requests."""
from __future__ import annotations

import json

import pytest

from ctxlab.errors import (EmptyMessageError, ExportError, ShapeError, ToolArgumentsError,
                           UnknownRoleError)
from ctxlab.formats import FORMATS, export, loads
from ctxlab.formats._base import noted
from ctxlab.conversation import Conversation, Message, Part, ToolCall

PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

REQUEST = {
    "model": "claude-sonnet-4-5",
    "system": [{"type": "text", "text": "You are a travel assistant.", "cache_control": {"type": "ephemeral"}}],
    "tools": [{"name": "get_weather", "description": "Current weather for a city",
               "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
    "messages": [
        {"role": "user", "content": [
            {"type": "text", "text": "What is the weather where this photo was taken, and in Rome?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/rome.jpg"}},
        ]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "The photo shows Paris. Two lookups.", "signature": "EqQBCgIYAhIM"},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
            {"type": "text", "text": "Let me check both cities."},
            {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "toolu_01B", "name": "get_weather", "input": {"city": "Rome", "units": "c"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "18°C, cloudy"},
            {"type": "tool_result", "tool_use_id": "toolu_01B", "is_error": True,
             "content": [{"type": "text", "text": "upstream timeout"}], "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Also, should I pack an umbrella?"},
        ]},
        {"role": "assistant", "content": "Paris is 18°C and cloudy; Rome failed. Yes, pack one."},
    ],
}


def read(doc, **kw) -> Conversation:
    return loads(json.dumps(doc), **kw)


def test_reads_every_block_kind_of_a_real_request():
    conv = read(REQUEST)
    assert conv.format == "anthropic" and conv.model == "claude-sonnet-4-5"
    assert [m.role for m in conv.messages] == ["system", "user", "assistant", "tool", "tool", "user", "assistant"]
    user = conv.messages[1]
    assert user.parts[1] == Part("image", data={"url": f"data:image/png;base64,{PNG_B64}"})
    assert user.parts[2] == Part("image", data={"url": "https://example.com/rome.jpg"})
    asst = conv.messages[2]
    assert asst.parts[0] == Part("thinking", "The photo shows Paris. Two lookups.", {"signature": "EqQBCgIYAhIM"})
    assert asst.parts[1] == Part("redacted_thinking", data={"data": "EmwKAhgBEgy3va3pzix"})
    assert asst.text == "Let me check both cities."
    # arguments are the input's text as the file has it (json.dumps spaced it)
    assert asst.tool_calls == (ToolCall("toolu_01A", "get_weather", '{"city": "Paris"}'),
                               ToolCall("toolu_01B", "get_weather", '{"city": "Rome", "units": "c"}'))
    ok, failed = conv.messages[3], conv.messages[4]
    assert (ok.tool_call_id, ok.text, ok.is_error) == ("toolu_01A", "18°C, cloudy", False)
    assert (failed.tool_call_id, failed.text, failed.is_error) == ("toolu_01B", "upstream timeout", True)
    assert conv.messages[5].text == "Also, should I pack an umbrella?"
    assert conv.tools[0].name == "get_weather"


def test_writing_back_restores_the_request_exactly_including_cache_control():
    out = export(read(REQUEST), "anthropic")
    assert out.data == REQUEST
    assert out.notes == ()


def test_text_before_tool_results_is_moved_after_them_with_a_note():
    doc = {"messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "text", "text": "here you go"},
                                     {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
    ]}
    conv = read(doc)
    assert [(m.role, m.text) for m in conv.messages[1:]] == [("tool", "ok"), ("user", "here you go")]
    assert any("message 1" in n and "after them" in n for n in conv.notes)


def test_a_system_role_inside_messages_is_read_as_a_system_message():
    conv = read({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                              {"role": "system", "content": "late rule"}]}, format="anthropic")
    assert conv.messages[1] == Message("system", "late rule")


def test_detection_picks_anthropic_without_being_told():
    only_messages = REQUEST["messages"]  # no top-level system: the blocks alone decide
    assert read(only_messages).format == "anthropic"
    assert read({"system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]}).format == "anthropic"


def test_detection_scores():
    detect = FORMATS["anthropic"].detect
    assert detect(REQUEST["messages"]) == 3
    assert detect([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]) == 1
    assert detect([{"role": "user", "content": "hi"}, {"role": "tool", "content": "x", "tool_call_id": "a"}]) == 0
    assert detect([{"role": "assistant", "content": None, "tool_calls": []}]) == 0


def test_plain_strings_are_read_as_openai_unless_anthropic_is_asked_for():
    doc = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert read(doc).format == "openai"
    forced = read(doc, format="anthropic")
    assert forced.format == "anthropic" and [m.text for m in forced.messages] == ["hi", "hello"]


def test_forcing_anthropic_on_openai_tool_messages_says_so():
    doc = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c", "content": "x"}]
    with pytest.raises(UnknownRoleError) as e:
        read(doc, format="anthropic")
    assert "message 1" in str(e.value) and "as asked" in str(e.value)


def _with_block(block: dict, role: str = "assistant") -> list:
    return [{"role": "user", "content": "hi"}, {"role": role, "content": [block]}]


@pytest.mark.parametrize("doc, error", [
    ([{"role": "user", "content": "hi"}, {"role": "robot", "content": "beep"}], UnknownRoleError),
    (_with_block({"type": "tool_use", "id": "t", "name": "f", "input": "city=Paris"}), ToolArgumentsError),
    (_with_block({"text": "no type"}), ShapeError),
    (_with_block({"type": "tool_use", "name": "f", "input": {}}), ShapeError),
    (_with_block({"type": "tool_result", "content": "x"}, "user"), ShapeError),
    (_with_block({"type": "tool_result", "tool_use_id": "t", "is_error": "yes"}, "user"), ShapeError),
    (_with_block({"type": "tool_use", "id": "t", "name": "f", "input": {}}, "user"), ShapeError),
    (_with_block({"type": "image", "source": "https://x/y.png"}, "user"), ShapeError),
    ([{"role": "user", "content": "hi"}, {"role": "assistant"}], EmptyMessageError),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": 42}], ShapeError),
])
def test_bad_input_raises_the_right_error_at_message_1(doc, error):
    with pytest.raises(error) as e:
        read(doc, format="anthropic")
    assert "message 1" in str(e.value)


def conv_of(*messages: Message, **kw) -> Conversation:
    return Conversation(tuple(messages), **kw)


def test_leading_system_messages_go_to_the_top():
    one = export(conv_of(Message("system", "Be brief."), Message("user", "hi")), "anthropic").data
    assert one["system"] == "Be brief." and one["messages"] == [{"role": "user", "content": "hi"}]
    two = export(conv_of(Message("system", "A"), Message("system", "B"), Message("user", "hi")), "anthropic").data
    assert two["system"] == [{"type": "text", "text": "A"}, {"type": "text", "text": "B"}]


def test_a_system_message_after_the_start_is_refused_not_moved():
    conv = conv_of(Message("system", "A"), Message("user", "hi"), Message("assistant", "yo"),
                   Message("system", "new rule"))
    with pytest.raises(ExportError) as e:
        export(conv, "anthropic")
    assert "message 3" in str(e.value) and "only at the top" in str(e.value)


def test_tool_results_and_the_next_user_message_become_one_user_turn():
    conv = conv_of(
        Message("user", "weather?"),
        Message("assistant", "", tool_calls=(ToolCall("c1", "w", '{"city": "Paris"}'), ToolCall("c2", "w", "{}"))),
        Message("tool", "18C", tool_call_id="c1"),
        Message("tool", "boom", tool_call_id="c2", is_error=True),
        Message("user", "thanks"),
        Message("user", "and tomorrow?"),
    )
    turns = export(conv, "anthropic").data["messages"]
    assert turns[1] == {"role": "assistant", "content": [
        {"type": "tool_use", "id": "c1", "name": "w", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "c2", "name": "w", "input": {}}]}
    assert turns[2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "c1", "content": "18C"},
        {"type": "tool_result", "tool_use_id": "c2", "content": "boom", "is_error": True},
        {"type": "text", "text": "thanks"}]}
    assert turns[3] == {"role": "user", "content": "and tomorrow?"}  # not merged: the validator reports it
    assert len(turns) == 4


def test_openai_images_become_anthropic_image_blocks():
    conv = read({"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.jpg", "detail": "low"}}]}]})
    out = export(conv, "anthropic")
    assert out.data["messages"][0]["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.jpg"}}]
    assert any("message 0" in n and "detail" in n for n in out.notes)


def test_fields_anthropic_has_no_place_for_are_noted_not_dropped_silently():
    conv = read({"messages": [
        {"role": "user", "name": "alice", "content": "hi"},
        {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't help with that."}]},
    ]})
    out = export(conv, "anthropic")
    assert out.data["messages"] == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": []}]
    assert any("message 0" in n and "name" in n for n in out.notes)
    assert any("message 1" in n and "refusal" in n for n in out.notes)


def test_every_tool_result_name_is_noted_once_even_when_it_equals_the_calls():
    """Anthropic has no name on a tool_result, so reading back loses every one of them;
    each is noted (one grouped note, printed once), not only those that differ from the call."""
    conv = conv_of(Message("assistant", "", tool_calls=(ToolCall("c1", "lookup"),)),
                   Message("tool", "x", name="lookup", tool_call_id="c1"),
                   Message("tool", "y", name="other", tool_call_id="c1x"))
    notes = export(conv, "anthropic").notes
    assert notes == ("messages 1, 2: the name field has no place in Anthropic; left out",)
    assert noted(notes, 1, "name") and noted(notes, 2, "name")


def test_thinking_from_another_provider_is_left_out_with_a_note():
    conv = conv_of(Message("user", "q"), Message("assistant", (Part("thinking", "summary", {"id": "rs_1"}),
                                                               Part("text", "a"))))
    out = export(conv, "anthropic")
    assert out.data["messages"][1]["content"] == [{"type": "text", "text": "a"}]
    assert any("message 1" in n and "signature" in n for n in out.notes)

