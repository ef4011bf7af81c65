"""Token counts under hostile and bulk input: white-space runs that make tiktoken panic, odd tool
schemas, content blocks with no counting rule, and the serial / threaded paths for many texts."""
from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from ctxlab import Message, TokenCounter, ToolDef, count_tokens
from ctxlab._bpe_count import LONG_RUN, count_text, count_texts
from ctxlab._encodings import get_encoding
from ctxlab.conversation import Part

from ..conftest import ROOT

ENCODINGS = ("o200k_base", "cl100k_base")
PANIC_RUN = 999_999  # measured: tiktoken 0.14 panics from this many white-space characters on
WHITE = (" ", "\t", "\u3000", "\xa0", "\x0b", "\x0c", "\x85", "\u2002", "\u2028", "\u2029", "\u202f", " \t")
AROUND = ("", "x", "Word", "!", "7", "\n", "\r\n", "!\n", "end. ", " word", "中", "😀", "'s", " \n", "/", "\x1c")


def _run(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize("unit", WHITE)
def test_a_split_white_space_run_counts_what_tiktoken_counts_in_one_go(name, unit):
    enc = get_encoding(name)
    run = _run(unit, LONG_RUN + 2_000)
    for before, after in [("", ""), ("x", "x"), ("!\n", "Word"), ("7", " \n"), ("end. ", "")]:
        text = before + run + after
        assert count_text(enc, text) == len(enc.encode_ordinary(text)), (before, after)


@pytest.mark.parametrize("name", ENCODINGS)
def test_random_texts_with_long_runs_count_exactly(name):
    enc, rnd = get_encoding(name), random.Random(name)
    for _ in range(12):
        unit = "".join(rnd.choice(WHITE) for _ in range(rnd.choice((1, 1, 2, 3))))
        parts = [rnd.choice(AROUND), _run(unit, rnd.choice((LONG_RUN, LONG_RUN + 1, 130_000))), rnd.choice(AROUND)]
        if rnd.random() < 0.4:
            parts += [_run(unit, rnd.choice((LONG_RUN, 3))), rnd.choice(AROUND)]
        text = "".join(parts)
        assert count_text(enc, text) == len(enc.encode_ordinary(text)), [p[:4] for p in parts]


@pytest.mark.parametrize("name", ENCODINGS)
def test_the_longest_run_tiktoken_survives_counts_the_same_split(name):
    enc = get_encoding(name)
    text = "Hello" + " " * (PANIC_RUN - 1) + "world"
    assert count_text(enc, text) == len(enc.encode_ordinary(text))


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize("text", [
    "x" + " " * 1_048_576 + "x", " " * 1_048_576, "!\n" + " \t" * 500_000 + "y",
    "a" + "\u3000" * PANIC_RUN + "\n\n" + " " * PANIC_RUN + "end", "1" + " " * PANIC_RUN + "2" + "\t" * PANIC_RUN,
], ids=["spaces", "spaces-alone", "space-tab", "ideographic-then-spaces", "two-runs"])
def test_runs_that_make_tiktoken_panic_count_as_its_reference_encoder_does(name, text):
    # tiktoken's own Python-regex path (same pieces, same merges) is the reference past the panic
    enc = get_encoding(name)
    assert count_text(enc, text) == len(enc._encode_only_native_bpe(text))


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize("unit", ["a", "1", "!", "中", "😀", " \n", '{"k": 1}, '])
def test_other_runs_past_the_panic_length_go_straight_to_tiktoken(name, unit):
    enc = get_encoding(name)
    text = "x" + _run(unit, PANIC_RUN + 1) + "x"
    assert count_text(enc, text) == len(enc.encode_ordinary(text))


def _write(tmp_path, data) -> str:
    path = tmp_path / "conv.json"
    path.write_text(json.dumps(data))
    return str(path)


def _cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxlab", *argv], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


def test_a_megabyte_of_spaces_in_content_and_a_tool_description_counts_on_the_cli(tmp_path):
    spaces = " " * 1_048_576
    path = _write(tmp_path, {"model": "gpt-4o", "messages": [
        {"role": "user", "content": "look:" + spaces + "done"}],
        "tools": [{"type": "function", "function": {"name": "f", "description": spaces + "end",
                                                    "parameters": {"type": "object", "properties": {}}}}]})
    out = _cli("count", path)
    assert out.returncode == 0, out.stderr
    assert "panicked" not in out.stderr and "Traceback" not in out.stderr
    enc = get_encoding("o200k_base")
    result = json.loads(out.stdout)
    assert result["message_tokens"] == [3 + 1 + len(enc._encode_only_native_bpe("look:" + spaces + "done"))]


_ODD_TOOLS = [
    ({"type": "object", "properties": 5}, "tools[1] ('odd'): parameters.properties is a number"),
    ({"type": "object", "properties": ["a", "b"]}, "tools[1] ('odd'): parameters.properties is a list"),
    ({"type": "object", "properties": {"a": "string"}}, "tools[1] ('odd'): parameters.properties.a is a string"),
    ({"type": "object", "properties": {"a": {"type": "object", "properties": 3}}},
     "tools[1] ('odd'): parameters.properties.a.properties is a number"),
]


@pytest.mark.parametrize("schema,note", _ODD_TOOLS)
def test_a_schema_the_api_would_refuse_is_counted_approximately_with_its_path(schema, note):
    tools = (ToolDef("ok", "Fine.", {"type": "object", "properties": {"x": {"type": "string"}}}),
             ToolDef("odd", "Odd.", schema))
    c = count_tokens([Message("user", "hi")], model="gpt-4o", tools=tools)
    assert any(a.startswith(note) for a in c.approximations), c.approximations
    assert c.exact is False
    alone = count_tokens([Message("user", "hi")], model="gpt-4o", tools=tools[:1])
    assert c.tools_tokens > alone.tools_tokens + 5  # the odd tool's name, description and schema text


def test_every_command_agrees_on_a_tool_file_whose_schema_the_api_would_refuse(tmp_path):
    """count and apply used to crash where validate and convert accepted. The reader
    now refuses the file for every command, as the API would, naming the JSON path; the counter
    still estimates such a schema when a ToolDef is built in Python (the test above)."""
    path = _write(tmp_path, {"messages": [{"role": "user", "content": "hi"}], "tools": [
        {"type": "function", "function": {"name": "a", "description": "d", "parameters": {"type": "object", "properties": 5}}}]})
    for argv in (("validate", path), ("convert", path, "--to", "anthropic"), ("count", path),
                 ("apply", path, "--strategy", "sliding_window")):
        out = _cli(*argv)
        assert out.returncode == 2, (argv, out.stderr)
        assert "parameters.properties" in out.stderr and "Traceback" not in out.stderr, (argv, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1


def test_content_blocks_with_no_counting_rule_are_estimated_and_named():
    audio = Part("input_audio", data={"input_audio": {"data": "UklGRiQAAABXQVZFZm10", "format": "wav"}})
    msgs = [Message("user", "hello"), Message("user", (Part("text", "listen"), audio)),
            Message("user", (audio,))]
    c = count_tokens(msgs, model="gpt-4o")
    plain = count_tokens([Message("user", "hello"), Message("user", "listen"), Message("user", "")], model="gpt-4o")
    assert c.message_tokens[0] == plain.message_tokens[0]
    assert c.message_tokens[1] > plain.message_tokens[1] + 5 and c.message_tokens[2] > plain.message_tokens[2] + 5
    assert "content blocks of type 'input_audio' (message 1, 2)" in " ".join(c.approximations)
    assert c.exact is False


def test_two_tools_with_one_name_both_count():
    t = ToolDef("lookup", "Look something up.", {"type": "object", "properties": {"q": {"type": "string"}}})
    one = count_tokens([Message("user", "hi")], tools=(t,))
    two = count_tokens([Message("user", "hi")], tools=(t, t))
    assert two.tools_tokens == 2 * one.tools_tokens - TokenCounter().spec.tools.func_end
    assert two.total == sum(two.message_tokens) + two.tools_tokens + two.reply_priming


@pytest.mark.parametrize("threshold", [10**12, 0])
def test_many_texts_count_the_same_serially_and_on_threads(monkeypatch, threshold):
    from ctxlab import _bpe_count
    monkeypatch.setattr(_bpe_count, "BATCH_MIN_CHARS", threshold)
    enc = get_encoding("o200k_base")
    rnd = random.Random(3)
    texts = ["".join(rnd.choice("ab c\n1!中") for _ in range(rnd.randrange(0, 400))) for _ in range(300)]
    texts.append("x" + " " * (LONG_RUN + 5) + "y")
    assert count_texts(enc, texts) == [len(enc.encode_ordinary(t)) for t in texts]
