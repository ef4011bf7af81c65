"""Regression tests for hostile input (issue 13 items 2-6, issue 12 item 4): each names the
item it pins down; each failed before its fix."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ctxlab.cli import main
from ctxlab.errors import CtxlabError, ShapeError
from ctxlab.formats import dumps, export, load_all, loads
from ctxlab.formats._base import noted
from ctxlab.tokens import count_tokens

from ..conftest import ROOT

CALL = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
CHAT = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "name": "lookup", "content": "ok"},
        {"role": "assistant", "content": "done"}]
COMMANDS = (["count"], ["validate"], ["convert", "--to", "anthropic"], ["apply", "--strategy", "none"])


def run(capsys, tmp_path, data: str | bytes, *argv: str, name: str = "in.json") -> tuple[int, str, str]:
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    code = main([argv[0], str(path), *argv[1:]])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(code: int, out: str, err: str) -> str:
    assert code == 2 and out == "", err
    assert err.count("\n") == 1 and err.startswith("ctxlab: ") and "internal error" not in err, err
    return err.strip()


# ---------------------------------------------------------------- item 2: located errors, not crashes


def test_arguments_nested_10000_levels_are_one_error_naming_the_arguments(capsys, tmp_path):
    deep = '{"a":' * 10_000 + "1" + "}" * 10_000
    doc = json.dumps([CHAT[0], {**CHAT[1], "tool_calls": [{**CALL, "function": {"name": "f", "arguments": deep}}]}])
    for argv in COMMANDS:
        line = one_error_line(*run(capsys, tmp_path, doc, *argv))
        assert "message 1 ($[1].tool_calls[0].function.arguments)" in line and "nest" in line
        assert len(line) < 300


def test_arguments_nested_past_the_depth_limit_name_the_path_inside_them():
    args = json.dumps({"a": [[[[{"b": 1}]]]]})
    doc = json.dumps([CHAT[0], {**CHAT[1], "tool_calls": [{**CALL, "function": {"name": "f", "arguments": args}}]}])
    with pytest.raises(CtxlabError, match=r"nest deeper than 5 levels \(at \$\.a\[0\]\[0\]\[0\]\[0\]\)") as e:
        loads(doc, max_depth=5)
    assert e.value.where == "message 1 ($[1].tool_calls[0].function.arguments)"


@pytest.mark.parametrize("properties", [7, "x", ["a"], {"city": 5}])
def test_a_tool_whose_properties_are_not_schemas_is_one_error_in_every_command(capsys, tmp_path, properties):
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
                                                                           "properties": properties}}}]
    doc = json.dumps({"messages": CHAT, "tools": tools})
    for argv in COMMANDS:  # count and apply crashed, validate and convert accepted it
        line = one_error_line(*run(capsys, tmp_path, doc, *argv))
        assert "$.tools[0].function.parameters.properties" in line


def test_a_nested_bad_property_schema_is_named_by_its_path():
    tools = [{"name": "f", "input_schema": {"type": "object", "properties": {
        "trip": {"type": "array", "items": {"type": "object", "properties": {"when": 3}}}}}}]
    with pytest.raises(ShapeError) as e:
        loads(json.dumps({"system": "s", "messages": [{"role": "user", "content": "x"}], "tools": tools}))
    assert e.value.where == "$.tools[0].input_schema.properties.trip.items.properties.when"


class _Panic(BaseException):
    """Stands in for pyo3_runtime.PanicException, which derives from BaseException."""


def test_an_escaping_base_exception_is_still_one_line(capsys, tmp_path, monkeypatch):
    import ctxlab.tokens  # the count command imports count_tokens from here when it runs

    def panic(*a, **k):
        raise _Panic("called `Result::unwrap()` on an `Err` value\nsecond line")
    monkeypatch.setattr(ctxlab.tokens, "count_tokens", panic)
    code, out, err = run(capsys, tmp_path, json.dumps(CHAT), "count")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("ctxlab: internal error (_Panic: ") and "\\n" in err


# ---------------------------------------------------------------- items 2-3: lone surrogates, UTF-8 out


@pytest.mark.parametrize("lone", ["\ud800", "\udc80"])
def test_lone_surrogates_reach_stdout_as_escapes_and_read_back_the_same(capsys, tmp_path, lone):
    doc = json.dumps([{"role": "user", "content": f"a{lone}b"}, {"role": "assistant", "content": "ok"}])
    for argv in (["convert", "--to", "anthropic"], ["apply", "--strategy", "none"], ["convert", "--to", "openai"]):
        code, out, err = run(capsys, tmp_path, doc, *argv)
        assert code == 0, err
        out.encode("utf-8")  # strict: no surrogate reaches the bytes
        assert f"\\u{ord(lone):04x}" in out
        assert "lone surrogate" in err and "escapes" in err  # says which it did
        body = json.loads(out)
        body = body["messages"] if argv[0] == "apply" else body  # apply: the plan, the body under "messages"
        assert body["messages"][0]["content"] == f"a{lone}b"


def test_stdout_is_valid_utf8_under_a_c_locale():
    """In a C locale Python writes stdout with surrogateescape: "\\udc80" became a raw 0x80 byte."""
    doc = json.dumps([{"role": "user", "content": "caf\u00e9 \udc80 \U0001F600"}, {"role": "assistant", "content": "ok"}])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONIOENCODING", "PYTHONUTF8"))}
    env.update(LC_ALL="C", PYTHONUTF8="0", PYTHONCOERCECLOCALE="0", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "ctxlab", "convert", "-", "--to", "anthropic"], input=doc.encode(),
                         capture_output=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    text = out.stdout.decode("utf-8")  # strict
    assert json.loads(text)["messages"][0]["content"] == "caf\u00e9 \udc80 \U0001F600"


# ---------------------------------------------------------------- item 4: JSONL splits on \n only


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\u0085"])
def test_jsonl_keeps_line_separator_characters_inside_strings(sep):
    text = "\n".join(json.dumps(m, ensure_ascii=False) for m in [{"role": "user", "content": f"a{sep}b"},
                                                                  {"role": "assistant", "content": "ok"}])
    conv = loads(text)
    assert [m.text for m in conv.messages] == [f"a{sep}b", "ok"]


def test_jsonl_with_crlf_and_a_bom_on_each_line_reads():
    lines = ["\ufeff" + json.dumps(m) for m in CHAT]
    assert len(loads("\r\n".join(lines)).messages) == 4


# ---------------------------------------------------------------- item 5: messages that help


def test_an_unknown_role_is_echoed_capped(capsys, tmp_path):
    doc = json.dumps([{"role": "x" * 100_000, "content": "hi"}])
    line = one_error_line(*run(capsys, tmp_path, doc, "count"))
    assert len(line) < 300 and "(100,000 characters)" in line and "message 0 ($[0].role)" in line


def test_control_characters_and_odd_keys_never_break_the_line(capsys, tmp_path):
    doc = json.dumps([{"role": "a\nb\u2028\x00", "content": "hi"}])
    line = one_error_line(*run(capsys, tmp_path, doc, "count"))
    assert "'a\\nb\\u2028\\x00'" in line
    deep = {"k\n" * 50: [[[[[[[["x"]]]]]]]]}
    with pytest.raises(CtxlabError) as e:
        loads(json.dumps({"messages": [{"role": "user", "content": "x"}], "meta": deep}), max_depth=4)
    assert "\n" not in str(e.value) and len(str(e.value)) < 300


def test_a_langchain_list_names_the_item_whose_type_is_unknown():
    items = [{"type": "human", "data": {"content": "a"}}, {"type": "ai", "data": {"content": "b"}},
             {"type": "wizard", "data": {"content": "c"}}]
    with pytest.raises(CtxlabError) as e:
        loads(json.dumps(items))
    assert e.value.where == "message 2 ($[2].type)" and "'wizard'" in str(e.value)
    assert "match no known format" not in str(e.value)


def test_a_list_that_no_format_reads_names_item_0_without_echoing_it_all():
    with pytest.raises(ShapeError, match=r"item 0 has keys 'foo'") as e:
        loads(json.dumps([{"foo": "x" * 10_000}]))
    assert len(str(e.value)) < 300


@pytest.mark.parametrize("bad", [{"foo": 1}, {"role": "wizard", "content": "x"}, {"role": "user"}])
def test_a_bad_jsonl_line_3_is_blamed_not_line_1(bad):
    text = "\n".join(json.dumps(m) for m in [CHAT[0], {"role": "assistant", "content": "ok"}, bad])
    with pytest.raises(CtxlabError) as e:
        loads(text)
    assert "JSONL line 3" in str(e.value) and "line 1:" not in str(e.value)


def test_a_decode_error_says_starting_at_once():
    with pytest.raises(CtxlabError) as e:
        loads('[{"role": "user", "content": "abc')
    assert "starting at line 1, column 30" in str(e.value) and "at at" not in str(e.value)


def test_every_convert_note_is_printed_once_and_every_dropped_name_is_noted(capsys, tmp_path):
    doc = json.dumps(CHAT + [{"role": "assistant", "content": None, "tool_calls": [{**CALL, "id": "c2"}]},
                             {"role": "tool", "tool_call_id": "c2", "name": "lookup", "content": "ok"}])
    code, _, err = run(capsys, tmp_path, doc, "convert", "--to", "anthropic")
    lines = err.splitlines()
    assert code == 0 and len(lines) == len(set(lines)) == 1
    assert lines[0] == "note: messages 2, 5: the name field has no place in Anthropic; left out"


def test_the_size_limit_is_reported_in_the_unit_it_is_set_in(capsys, tmp_path):
    line = one_error_line(*run(capsys, tmp_path, b"[" + b" " * (3 * 1024 * 1024) + b"]", "count", "--max-mb", "2"))
    assert "input is 3.0 MB, over the 2 MB limit" in line


def test_invalid_utf8_names_the_line_and_byte(capsys, tmp_path):
    data = json.dumps(CHAT, indent=1).encode()
    k = data.index(b"done")
    line = one_error_line(*run(capsys, tmp_path, data[:k] + b"\xff" + data[k:], "count"))
    line_no = data[:k].count(b"\n") + 1
    assert f"line {line_no}, byte offset {k}" in line


# ---------------------------------------------------------------- item 6: round trips keep or say


def test_arguments_text_survives_anthropic_byte_for_byte():
    text = '{"city": "Z\\u00fcrich",  "days": 3, "tags": ["a" , "b"]}'
    conv = loads(json.dumps([CHAT[0], {**CHAT[1], "tool_calls": [{**CALL, "function": {"name": "f", "arguments": text}}]},
                             CHAT[2]]))
    anthropic = dumps(export(conv, "anthropic").data, indent=2)
    assert f'"input": {text}' in anthropic  # still a valid Anthropic body, with the text as it was
    back = loads(dumps(export(loads(anthropic), "openai").data))
    assert back.messages[1].tool_calls[0].arguments == text
    assert count_tokens(back).message_tokens == count_tokens(conv).message_tokens


def test_arguments_anthropic_cannot_hold_exactly_are_noted():
    conv = loads(json.dumps([CHAT[0], {**CHAT[1], "tool_calls": [
        {**CALL, "function": {"name": "f", "arguments": ' {"a": 1} '}},
        {**CALL, "id": "c2", "function": {"name": "f", "arguments": "{\n  \"a\": 1\n}"}},
        {**CALL, "id": "c3", "function": {"name": "f", "arguments": ""}}]},
        *[{"role": "tool", "tool_call_id": c, "content": "ok"} for c in ("c1", "c2", "c3")]]))
    notes = export(conv, "anthropic").notes
    for words in ("whitespace around", "several lines", "empty tool-call arguments"):
        assert noted(notes, 1, words), notes


def test_a_pretty_printed_anthropic_file_gives_compact_arguments():
    doc = {"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1, "b": [1, 2]}}]}]}
    assert loads(json.dumps(doc, indent=2)).messages[1].tool_calls[0].arguments == '{"a":1,"b":[1,2]}'
    assert loads(json.dumps(doc)).messages[1].tool_calls[0].arguments == '{"a": 1, "b": [1, 2]}'


# ---------------------------------------------------------------- unknown parts, empty input


def test_an_unknown_anthropic_block_is_kept_noted_written_back_and_counted_as_an_estimate():
    doc = [{"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "teleport", "to": "mars"}]},
           {"role": "assistant", "content": "ok"}]
    conv = loads(json.dumps(doc))
    assert conv.messages[0].parts[1].type == "teleport" and not conv.messages[0].parts[1].modeled
    assert noted(conv.notes, 0, "'teleport'")
    assert export(conv, "anthropic").data["messages"][0]["content"][1] == {"type": "teleport", "to": "mars"}
    count = count_tokens(conv)
    without = count_tokens(loads(json.dumps([{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                                              doc[1]])))
    assert count.message_tokens[0] > without.message_tokens[0]
    assert not count.exact and any("'teleport'" in a and "message 0" in a for a in count.approximations)


@pytest.mark.parametrize("doc", [
    [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "AAA", "format": "wav"}}]}],
    [{"type": "message", "role": "user", "content": [{"type": "input_file", "file_id": "f1"}]}],
])
def test_unmodeled_parts_of_openai_and_responses_are_noted_too(doc):
    conv = loads(json.dumps(doc))
    assert noted(conv.notes, 0, "kept as sent") and not count_tokens(conv).exact


@pytest.mark.parametrize("text", ["[]", '{"messages": []}', "\n".join([json.dumps({"messages": []})] * 2)])
def test_an_empty_conversation_says_so(text):
    with pytest.raises(ShapeError, match="the conversation is empty"):
        load_all(text)


def test_convert_prints_the_notes_of_reading_too(capsys, tmp_path):
    doc = json.dumps([{"role": "user", "content": [{"type": "teleport"}]}, {"role": "assistant", "content": "ok"}])
    code, _, err = run(capsys, tmp_path, doc, "convert", "--to", "openai")
    assert code == 0 and "note: message 0: content part of type 'teleport' is kept as sent" in err


def test_notes_cap_the_field_names_they_list(capsys, tmp_path):
    """Found by the long fuzz run: a 100,000-character unknown key became a 100,000-character note."""
    doc = json.dumps([{"role": "user", "content": "hi", "k" * 100_000: 1, "a\nb": 2}, CHAT[3]])
    for target in ("anthropic", "responses"):
        code, _, err = run(capsys, tmp_path, doc, "convert", "--to", target)
        assert code == 0 and err.count("\n") == 1 and len(err) < 300, err[:300]
        assert "(100,000 characters)" in err and "'a\\nb'" in err


def test_langchain_validation_errors_are_capped_too():
    """Found by the long fuzz run: pydantic's message echoed a 100,000-character unknown key."""
    ai = {"type": "ai", "data": {"content": "", "tool_calls": [{"id": "c1", "name": "f", "args": {},
                                                                 "k" * 100_000: 1}]}}
    with pytest.raises(CtxlabError) as e:
        loads(json.dumps([{"type": "human", "data": {"content": "x"}}, ai]))
    assert len(str(e.value)) < 300 and e.value.where.startswith("message 1")
