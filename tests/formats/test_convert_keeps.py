"""``convert`` keeps what it does not model: top-level fields (``facts``,
``title``, request parameters), provider fields of messages, parts and tools, server tools; each is
written where the target format has a place and named in a ``note:`` where it has none. The
property runs over real conversations given every field the providers document."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxlab
from ctxlab.cli import main
from ctxlab.errors import ShapeError

from ..conftest import SAMPLES

FORMATS = ("openai", "anthropic", "langchain", "responses")
TOP = {"title": "Refund for A-1", "facts": ["A-1", "$20"], "temperature": 0.3, "max_tokens": 512,
       "tool_choice": "auto", "parallel_tool_calls": False, "metadata": {"user_id": "u-7"}}


def _convert(text: str, to: str, tmp_path, capsys) -> tuple[dict, str]:
    path = tmp_path / "in.json"
    path.write_text(text)
    assert main(["convert", str(path), "--to", to]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_to_a_keeps_every_top_level_field(fmt, tmp_path, capsys):
    conv = ctxlab.load(SAMPLES / "ecommerce_refund.json")
    body = ctxlab.export(conv, fmt).data
    top = dict(TOP)
    if fmt == "anthropic":
        top.pop("parallel_tool_calls")  # an OpenAI parameter; Anthropic's is inside tool_choice
        top["tool_choice"] = {"type": "auto"}
    if fmt == "responses":
        top["max_output_tokens"] = top.pop("max_tokens")
    out, err = _convert(json.dumps({**body, **top}), fmt, tmp_path, capsys)
    for key, value in top.items():
        assert out.get(key) == value, (key, out.get(key), err)


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_bundled_samples_facts_survive_convert(fmt, tmp_path, capsys):
    out, _ = _convert((SAMPLES / "ecommerce_refund.json").read_text(), fmt, tmp_path, capsys)
    assert tuple(out["facts"]) == ctxlab.load(SAMPLES / "ecommerce_refund.json").facts != ()
    assert ctxlab.loads(json.dumps(out)).facts == ctxlab.load(SAMPLES / "ecommerce_refund.json").facts


def test_parameters_another_api_has_no_place_for_are_noted_or_renamed(tmp_path, capsys):
    body = {**ctxlab.export(ctxlab.load(SAMPLES / "ecommerce_refund.json"), "openai").data, **TOP}
    out, err = _convert(json.dumps(body), "anthropic", tmp_path, capsys)
    assert "parallel_tool_calls" not in out and "tool_choice" not in out  # OpenAI shapes Anthropic refuses
    assert "top-level field(s) tool_choice, parallel_tool_calls have no place in Anthropic" in err
    assert out["max_tokens"] == 512 and out["title"] == TOP["title"] and out["temperature"] == 0.3
    out, err = _convert(json.dumps(body), "responses", tmp_path, capsys)
    assert out["max_output_tokens"] == 512 and out["tool_choice"] == "auto" and "max_tokens" not in out
    assert "'max_tokens' is written as max_output_tokens" not in err and "max_tokens is written as max_output_tokens" in err


ANTHROPIC = {
    "model": "claude-sonnet-4-5", "max_tokens": 1024,
    "system": [{"type": "text", "text": "You are helpful.", "cache_control": {"type": "ephemeral"}}],
    "tools": [{"name": "get_order", "description": "Get an order", "cache_control": {"type": "ephemeral"},
               "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}}},
              {"type": "bash_20250124", "name": "bash"},
              {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Where is A-1?", "cache_control": {"type": "ephemeral"}}]},
        {"id": "msg_01", "role": "assistant", "model": "claude-sonnet-4-5", "stop_reason": "tool_use",
         "usage": {"input_tokens": 10, "output_tokens": 5},
         "content": [{"type": "text", "text": "Looking.", "citations": [{"type": "char_location", "cited_text": "A-1",
                                                                         "document_index": 0, "start_char_index": 0,
                                                                         "end_char_index": 3}]},
                     {"type": "tool_use", "id": "toolu_1", "name": "get_order", "input": {"id": "A-1"},
                      "cache_control": {"type": "ephemeral"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "shipped"}]},
        {"role": "assistant", "content": "It shipped."}]}
PLANTED_FIELDS = ("cache_control", "citations", "stop_reason", "usage", "max_uses", "bash_20250124",
                  "web_search_20250305")


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_documented_anthropic_field_is_written_or_noted(fmt, tmp_path, capsys):
    out, err = _convert(json.dumps(ANTHROPIC), fmt, tmp_path, capsys)
    written = json.dumps(out)
    for name in PLANTED_FIELDS:
        covered = name == "max_uses" and "server tool of type web_search_20250305" in err  # the whole tool is named
        assert name in written or name in err or covered, (name, err)
    assert "msg_01" in written or "message ids" in err or "id have no place" in err or ", id " in err, err
    if fmt == "anthropic":  # server tools come back as they were, not as empty custom tools
        assert {"name": "bash", "type": "bash_20250124"} in out["tools"]
        assert {"name": "web_search", "type": "web_search_20250305", "max_uses": 5} in out["tools"]
    else:
        assert "server tool of type bash_20250124 has no place" in err
        assert "bash" not in [t.get("name", t.get("function", {}).get("name")) for t in out.get("tools", [])]


def test_tool_strict_and_mcp_annotations_are_kept_where_they_have_a_place():
    tools = [{"type": "function", "function": {"name": "f", "description": "d", "strict": True,
                                               "parameters": {"type": "object", "properties": {}}}}]
    conv = ctxlab.loads(json.dumps({"messages": [{"role": "user", "content": "hi"}], "tools": tools}))
    assert ctxlab.export(conv, "openai").data["tools"] == tools
    assert ctxlab.export(conv, "responses").data["tools"][0]["strict"] is True
    result = ctxlab.export(conv, "anthropic")
    assert "tool f: field(s) strict have no place in Anthropic Messages; left out" in " ".join(result.notes)
    mcp = [{"name": "g", "description": "d", "inputSchema": {"type": "object", "properties": {}},
            "annotations": {"readOnlyHint": True}}]
    conv = ctxlab.loads(json.dumps({"messages": [{"role": "user", "content": "hi"}], "tools": mcp}))
    assert ctxlab.formats.tools_to_mcp(conv.tools) == mcp
    assert "annotations" in " ".join(ctxlab.export(conv, "openai").notes)


def test_call_fields_ctxlab_does_not_keep_are_named_on_import():
    chat = [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                                                   "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"}]
    assert "message 1: tool-call field(s) index are not kept" in " ".join(ctxlab.loads(json.dumps(chat)).notes)
    items = [{"type": "message", "role": "user", "content": "hi", "status": "completed"},
             {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}", "status": "completed"},
             {"type": "function_call_output", "call_id": "c1", "output": "ok", "status": "completed"}]
    conv = ctxlab.loads(json.dumps({"input": items, "instructions": "be brief"}))
    assert "tool-call field(s) status are not kept" in " ".join(conv.notes)
    assert ctxlab.export(conv, "responses").data["input"][1]["status"] == "completed"  # a message's status stays
    lc = [{"type": "human", "data": {"content": "hi"}},
          {"type": "ai", "data": {"content": "", "tool_calls": [{"id": "c1", "name": "f", "args": {}}],
                                  "additional_kwargs": {"function_call": {"name": "g", "arguments": "{}"}}}},
          {"type": "tool", "data": {"content": "ok", "tool_call_id": "c1"}}]
    assert "additional_kwargs.function_call beside tool_calls is not kept" in " ".join(ctxlab.loads(json.dumps(lc)).notes)


def test_a_text_part_whose_text_is_not_a_string_is_a_located_error():
    doc = [{"role": "user", "content": [{"type": "text", "text": 42}]}]
    with pytest.raises(ShapeError, match=r"text must be a string, found int") as e:
        ctxlab.loads(json.dumps(doc))
    assert "content[0].text" in str(e.value)


# ---------------------------------------------------------------- the property over documented fields

#: fields the providers document that ctxlab does not model, by where they sit
DOCUMENTED = {
    "message": [("name", "bot"), ("refusal", None), ("annotations", [{"type": "url_citation"}]),
                ("audio", {"id": "audio_1"}), ("cache_control", {"type": "ephemeral"}), ("model", "m-1"),
                ("stop_reason", "end_turn"), ("usage", {"input_tokens": 3}), ("status", "completed")],
    "part": [("cache_control", {"type": "ephemeral"}), ("citations", [{"type": "char_location"}]),
             ("annotations", [{"type": "file_citation", "index": 1}])],
    "tool": [("strict", True), ("cache_control", {"type": "ephemeral"}), ("annotations", {"readOnlyHint": True})],
    "top": list(TOP.items()) + [("seed", 7), ("top_k", 5), ("store", True), ("reasoning", {"effort": "low"})],
}


@st.composite
def documented_mutant(draw) -> tuple[str, dict, list[tuple[str, object]]]:
    """(source format, document, planted (key, value) pairs) of a sample given documented fields."""
    name = draw(st.sampled_from(["ecommerce_refund.json", "parallel_travel.json", "sql_agent.json"]))
    fmt = draw(st.sampled_from(["openai", "anthropic"]))
    doc = ctxlab.export(ctxlab.load(SAMPLES / name), fmt).data
    doc = json.loads(ctxlab.formats.dumps(doc))
    planted: list[tuple[str, object]] = []
    for _ in range(draw(st.integers(1, 5))):
        where = draw(st.sampled_from(sorted(DOCUMENTED)))
        key, value = draw(st.sampled_from(DOCUMENTED[where]))
        if where == "top":
            doc[key] = value
        elif where == "tool" and doc.get("tools"):
            tool = draw(st.sampled_from(doc["tools"]))
            (tool.get("function", tool))[key] = value
        elif where == "message":
            draw(st.sampled_from(doc["messages"]))[key] = value
        else:
            parts = [p for m in doc["messages"] if isinstance(m.get("content"), list) for p in m["content"]
                     if isinstance(p, dict) and p.get("type") == "text"]
            if not parts:
                continue
            draw(st.sampled_from(parts))[key] = value
        planted.append((key, value))
    return fmt, doc, planted


@settings(max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(documented_mutant(), st.sampled_from(FORMATS))
def test_every_documented_field_is_written_or_noted(case, target):
    fmt, doc, planted = case
    try:
        conv = ctxlab.loads(json.dumps(doc))
    except ctxlab.errors.CtxlabError:
        return  # a field in a place the format refuses (say a name on an Anthropic message): refused, not dropped
    result = ctxlab.export(conv, target)
    written = json.dumps(result.data)
    said = " ".join(conv.notes + result.notes)
    for key, value in planted:
        kept = json.dumps(key) in written and (value is None or json.dumps(value)[1:-1] in written)
        assert kept or key in said, (fmt, target, key, value, said[:500])
