"""One JSON policy for reading and writing (issue 22, items 4, 6, 10, 12): a huge integer, NaN,
Infinity or 1e400 anywhere in the input is one located error in every command, never an internal
error; nothing ctxlab writes holds a non-finite number; flags and parameters refuse NaN, infinity
and out-of-range values; a UTF-16 file is named as such."""
from __future__ import annotations

import json
import math

import pytest

import ctxlab
from ctxlab.cli import main
from ctxlab.cli.core import to_json
from ctxlab.errors import CtxlabError, NotJSONError
from ctxlab.formats import dumps
from ctxlab.llm import LLMConfig, LLMError
from ctxlab.pricing import parse_price_override
from ctxlab.strategies import STRATEGIES, StrategyError, get_strategy

from ..conftest import SAMPLES

BIG = "7" * 5_000
SAMPLE = str(SAMPLES / "ecommerce_refund.json")
COMMANDS = (["count"], ["convert", "--to", "anthropic"], ["validate"], ["apply", "--strategy", "sliding_window"],
            ["replay", "--strategy", "none"], ["diagnose"])


def _conversation(extra: str = "1", args: str = '{"order": 1}') -> str:
    """A small OpenAI conversation text with ``extra`` as a top-level value and ``args`` as the
    tool-call arguments (both raw JSON text, so non-JSON numbers can be planted)."""
    return ('{"title": "t", "x": %s, "messages": [{"role": "user", "content": "refund?"}, {"role": "assistant", '
            '"content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", '
            '"arguments": %s}}]}, {"role": "tool", "tool_call_id": "c1", "content": "ok"}, '
            '{"role": "assistant", "content": "done"}]}') % (extra, json.dumps(args))


PLANTED = {  # name -> (text, what the error must say)
    "huge integer": (_conversation(BIG), "an integer of 5,000 digits at line 1, column 21"),
    "negative huge integer": (_conversation("-" + BIG), "an integer of 5,000 digits at line 1, column 21"),
    "1e400": (_conversation("1e400"), "1e400 is beyond a double's range at line 1, column 21"),
    "NaN": (_conversation("NaN"), "NaN is not a JSON number at line 1, column 21"),
    "-Infinity": (_conversation("-Infinity"), "-Infinity is not a JSON number at line 1, column 21"),
    "huge integer in arguments": (_conversation(args='{"n": %s}' % BIG), "tool-call arguments are not valid JSON: an "
                                                                          "integer of 5,000 digits at line 1, column 7"),
    "NaN in arguments": (_conversation(args='{"n": NaN}'), "NaN is not a JSON number at line 1, column 7"),
    "huge integer in a JSONL line": (_conversation() + "\n" + _conversation("[%s]" % BIG),
                                     "JSONL line 2: not valid JSON: an integer of 5,000 digits at line 1, column 22"),
}


@pytest.mark.parametrize("name", PLANTED)
def test_every_command_gives_one_located_error(name, tmp_path, capsys):
    text, expected = PLANTED[name]
    path = tmp_path / "conv.json"
    path.write_text(text)
    for command in COMMANDS:
        code = main([command[0], str(path), *command[1:]])
        out, err = capsys.readouterr()
        assert code == 2 and out == "", (command, err)
        assert expected in err and "internal error" not in err and len(err.splitlines()) == 1, (command, err)


def test_the_python_api_raises_the_same_located_error():
    with pytest.raises(NotJSONError, match="an integer of 5,000 digits at line 1, column 21"):
        ctxlab.loads(_conversation(BIG))
    number_in_string = _conversation('"NaN Infinity %s"' % BIG)  # the same characters inside a string are text
    assert ctxlab.loads(number_in_string).metadata is not None


def test_nothing_written_holds_a_non_finite_number():
    data = {"a": math.nan, "b": [math.inf, (-math.inf, 1.5)], "c": {"d": 2}}
    for text in (dumps(data), to_json(data)[0], dumps(data, indent=2)):
        assert json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} written")) == \
            {"a": None, "b": [None, [None, 1.5]], "c": {"d": 2}}


BAD_FLAGS = [
    (["count", SAMPLE, "--max-mb", "nan"], "--max-mb: must be a finite number"),
    (["count", SAMPLE, "--max-mb", "inf"], "--max-mb: must be a finite number"),
    (["count", SAMPLE, "--max-mb", "-1"], "--max-mb: must be above 0"),
    (["count", SAMPLE, "--max-mb", "0"], "--max-mb: must be above 0"),
    (["count", SAMPLE, "--index", "-1"], "--index: must be at least 0"),
    (["apply", SAMPLE, "--strategy", "none", "--max-tokens", "0"], "--max-tokens: must be at least 1"),
    (["apply", SAMPLE, "--strategy", "none", "--reserve", "nan"], "--reserve: must be a finite number"),
    (["apply", SAMPLE, "--strategy", "sliding_window", "--param", "buffer_ratio=nan"], "must be a finite number"),
    (["apply", SAMPLE, "--strategy", "summarize", "--param", "trigger_ratio=nan"], "must be a finite number"),
    (["apply", SAMPLE, "--strategy", "summarize", "--param", "trigger_ratio=inf"], "must be a finite number"),
    (["replay", SAMPLE, "--strategy", "none", "--price", "input=nan,output=1"], "a finite number >= 0"),
    (["replay", SAMPLE, "--strategy", "none", "--price", "input=1e400,output=1"], "a finite number >= 0"),
    (["answer", SAMPLE, "--strategy", "none", "--question", "q", "--timeout", "nan"], "--timeout: must be a finite"),
    (["answer", SAMPLE, "--strategy", "none", "--question", "q", "--max-tokens", "0"], "--max-tokens: must be at least 1"),
]


@pytest.mark.parametrize("argv,expected", BAD_FLAGS, ids=[" ".join(a[2:]) for a, _ in BAD_FLAGS])
def test_bad_flag_values_are_one_clear_line(argv, expected, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and expected in err and "internal error" not in err, err


def test_every_float_parameter_of_every_strategy_refuses_nan_and_infinity():
    checked = 0
    for name, cls in STRATEGIES.items():
        for spec in cls.schema():
            if spec["type"] != "float":
                continue
            for value in (math.nan, math.inf, -math.inf):
                with pytest.raises(StrategyError, match="finite"):
                    get_strategy(name, **{spec["name"]: value})
                checked += 1
    assert checked >= 9  # sliding_window, summarize, middle_out, oldest_first ... have float parameters


def test_model_settings_and_prices_refuse_non_finite_numbers():
    for value in (math.nan, math.inf):
        with pytest.raises(LLMError):
            LLMConfig(base_url="http://127.0.0.1:1/v1", timeout=value)
    with pytest.raises(CtxlabError, match="finite"):
        parse_price_override("input=nan,output=1", "gpt-4o")


def test_a_utf16_file_is_named_as_utf16(tmp_path, capsys):
    text = open(SAMPLE, encoding="utf-8").read()
    for encoding, name in (("utf-16", "UTF-16"), ("utf-32", "UTF-32")):
        with pytest.raises(NotJSONError, match=f"the file is {name}"):
            ctxlab.loads(text.encode(encoding))
        path = tmp_path / f"{encoding}.json"
        path.write_bytes(text.encode(encoding))
        assert main(["count", str(path)]) == 2
        assert f"the file is {name}" in capsys.readouterr().err
