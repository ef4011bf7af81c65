"""The CLI contract: JSON out, exit codes, one clear line on bad input, never a traceback."""
from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.cli import main

from ..conftest import SAMPLES

CHAT = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Refund order A-1?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "refund", "arguments": "{\"order\":\"A-1\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "{\"ok\":true}"},
    {"role": "assistant", "content": "Refunded A-1."},
]


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _write(tmp_path, data, name="conv.json"):
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(p)


def test_count_prints_the_contract_keys(tmp_path, capsys):
    code, out, err = _run(capsys, "count", _write(tmp_path, CHAT), "--model", "gpt-4o")
    assert code == 0, err
    d = json.loads(out)
    for key in ("format", "model", "encoding", "messages", "message_tokens", "tools_tokens", "total_tokens", "by_category"):
        assert key in d
    assert d["format"] == "openai" and d["encoding"] == "o200k_base" and d["messages"] == 5
    assert d["total_tokens"] == sum(d["message_tokens"]) + d["tools_tokens"] + 3
    assert sum(d["by_category"].values()) == d["total_tokens"]


def test_count_uses_the_model_in_the_file_unless_told(tmp_path, capsys):
    path = _write(tmp_path, {"model": "gpt-4", "messages": CHAT})
    assert json.loads(_run(capsys, "count", path)[1])["encoding"] == "cl100k_base"
    assert json.loads(_run(capsys, "count", path, "--model", "gpt-4o")[1])["encoding"] == "o200k_base"


def test_validate_exits_1_on_a_broken_pair_and_names_the_message(tmp_path, capsys):
    code, out, _ = _run(capsys, "validate", _write(tmp_path, CHAT[:3] + CHAT[4:]))
    assert code == 1
    d = json.loads(out)
    assert d["valid"] is False
    assert any(f["code"] == "unanswered_tool_call" and f["index"] == 2 for f in d["findings"])
    assert _run(capsys, "validate", _write(tmp_path, CHAT, "ok.json"))[0] == 0


def test_convert_round_trips_through_anthropic(tmp_path, capsys):
    code, out, _ = _run(capsys, "convert", _write(tmp_path, CHAT), "--to", "anthropic")
    assert code == 0
    anth = json.loads(out)
    assert anth["system"] == "You are terse."
    back = _run(capsys, "convert", _write(tmp_path, anth, "a.json"), "--to", "openai")[1]
    msgs = json.loads(back)["messages"]
    assert [m["role"] for m in msgs] == [m["role"] for m in CHAT]
    assert json.loads(msgs[2]["tool_calls"][0]["function"]["arguments"]) == {"order": "A-1"}


@pytest.mark.parametrize("text,needle", [
    ("{not json", "not valid JSON"),
    ('{"foo": 1}', "no 'messages'"),
    ('[{"role": "wizard", "content": "hi"}]', "message 0"),
    ('[{"role": "user"}]', "neither content nor tool calls"),
    ('[{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function",'
     '"function":{"name":"f","arguments":"{bad"}}]}]', "not valid JSON"),
    ("[" * 5000 + "]" * 5000, "nests"),
    ("", "empty"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, text, needle):
    code, out, err = _run(capsys, "count", _write(tmp_path, text))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("ctxlab: ")
    assert needle in err
    assert "Traceback" not in err


def test_size_limit_is_configurable(tmp_path, capsys):
    path = _write(tmp_path, CHAT)
    code, _, err = _run(capsys, "count", path, "--max-mb", "0.0001")
    assert code == 2 and "limit" in err
    assert _run(capsys, "count", path, "--max-mb", "1")[0] == 0


def test_missing_file_and_bad_usage_exit_2(capsys):
    assert _run(capsys, "count", "/no/such/file.json")[0] == 2
    code, _, err = _run(capsys, "count")
    assert code == 2 and "usage" in err


def test_jsonl_of_conversations_prints_one_line_each(tmp_path, capsys):
    text = "\n".join(json.dumps({"messages": CHAT[:2]}) for _ in range(3))
    code, out, _ = _run(capsys, "count", _write(tmp_path, text, "many.jsonl"))
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) == 3
    assert [json.loads(ln)["index"] for ln in lines] == [0, 1, 2]


@settings(max_examples=150, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(
                        st.sampled_from(["role", "content", "tool_calls", "messages", "type", "data", "id",
                                         "tool_call_id", "function", "arguments", "name", "system", "tools"]),
                        c, max_size=5), max_leaves=25))
def test_no_json_input_makes_the_cli_crash(tmp_path_factory, value):
    path = tmp_path_factory.mktemp("fuzz") / "x.json"
    path.write_text(json.dumps(value))
    for cmd in (["count"], ["validate"], ["convert", "--to", "anthropic"]):
        err, out = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = main([cmd[0], str(path), *cmd[1:]])
        assert code in (0, 1, 2)
        assert "internal error" not in err.getvalue(), err.getvalue()
        if code == 2:
            assert err.getvalue().count("\n") == 1


def test_console_script_and_module_entry_point_work():
    sample = SAMPLES / "ecommerce_refund.json"
    for argv in (["-m", "ctxlab", "count", str(sample)],):
        out = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["total_tokens"] > 1000


def test_cli_command_modules_depend_on_the_core_only():
    """the command modules import the shared core, never each other (no cycle)."""
    import ast
    import ctxlab.cli
    pkg = Path(ctxlab.cli.__file__).parent
    modules = {p.stem for p in pkg.glob("*.py")} - {"__init__"}
    assert {"core", "formats", "strategies", "tools"} <= modules
    for name in modules:
        tree = ast.parse((pkg / f"{name}.py").read_text())
        siblings = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 1}
        siblings |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 1
                     and n.module is None for a in n.names}
        allowed = set() if name == "core" else {"core"}
        assert siblings <= allowed, f"cli/{name}.py imports {siblings - allowed}"


def test_model_modules_are_named_for_what_they_hold():
    """the conversation data model and the LLM model table no longer differ by one letter."""
    from ctxlab.conversation import Conversation
    from ctxlab.model_specs import MODELS
    assert Conversation and MODELS
    import importlib.util
    assert importlib.util.find_spec("ctxlab.model") is None and importlib.util.find_spec("ctxlab.models") is None


def test_tools_query_without_the_embedding_model_says_so_once_and_exits_2(tmp_path, capsys, monkeypatch):
    """A built index queried where the offline model's package is missing (a core install, issue 31.3):
    one line naming [retrieval] and exit 2, not exit 0 with every tool sent and the message per tool."""
    from ctxlab.tools import embeddings
    monkeypatch.setenv("CTXLAB_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("CTXLAB_CHROMA_HOST", raising=False)
    catalog = str(SAMPLES / "tools_ecommerce.json")
    assert main(["tools", "index", "--catalog", catalog]) == 0
    capsys.readouterr()
    embeddings._local_session.cache_clear()
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` now fails as if never installed
    try:
        code = main(["tools", "query", "--catalog", catalog, "I want my money back"])
    finally:
        embeddings._local_session.cache_clear()
    out, err = capsys.readouterr()
    assert code == 2 and not out.strip(), out[:500]
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "[retrieval]" in lines[0] and "onnxruntime" in lines[0], err


def test_every_commands_summary_in_help_is_a_whole_sentence(capsys):
    """`ctxlab --help` showed replay's summary cut at the docstring's line end ("...prompt tokens and")."""
    from ctxlab.cli.core import COMMANDS, build_parser
    build_parser()
    with pytest.raises(SystemExit):
        main(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "print every call's prompt tokens and fit, needed_recall per call" in shown
    for name, (_args, fn) in COMMANDS.items():
        first = " ".join((fn.__doc__ or "").strip().split("\n\n")[0].split())
        assert first.endswith((".", ")")), (name, first)
