"""The compaction exports, per target: the exported request goes through the provider's own SDK
(anthropic 2.14, openai 3.57) to a transport that records what would be sent, so its shape is the
documented one; the trigger is the tuned threshold; the notes list what does not carry over."""
from __future__ import annotations

import json
import subprocess
import sys
import tomllib
import types
import typing

import httpx2
import pytest

from ctxlab.cli import main
from ctxlab.configs import TARGETS, NoNativeFormError, config_json, export_native, make_config
from ctxlab.strategies import Budget, get_strategy

TOOLS = 1_200
BUDGET = Budget(200_000, 0.15, TOOLS)


def _config(name: str, model: str = "claude-sonnet-4-6", budget: Budget = BUDGET, **params):
    return make_config(get_strategy(name, **params), budget, model)


def _summarize_trigger(budget: Budget, ratio: float = 0.8) -> int:
    """What summarize's own apply() compares the messages with, plus the tool definitions."""
    return int(budget.available * ratio) + budget.tools_tokens


def _recorded(send) -> dict:
    """The JSON body and headers a real SDK client sends (the transport answers 400, so nothing
    has to be parsed back)."""
    seen: dict = {}

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen["body"], seen["headers"] = json.loads(request.content), dict(request.headers)
        seen["path"] = request.url.path
        return httpx2.Response(400, json={"error": {"type": "invalid_request_error", "message": "recorded"}})
    send(httpx2.Client(transport=httpx2.MockTransport(handler)))
    return seen


# ---------------------------------------------------------------- Anthropic compact_20260112


def _anthropic_sent(data: dict) -> dict:
    import anthropic

    def send(http):
        client = anthropic.Anthropic(api_key="test", http_client=http, max_retries=0)
        with pytest.raises(anthropic.BadRequestError):
            client.beta.messages.create(model="claude-sonnet-4-6", max_tokens=64, betas=data["betas"],
                                        context_management=data["context_management"],
                                        messages=[{"role": "user", "content": "hi"}])
    return _recorded(send)


def test_summarize_becomes_a_compact_edit_with_the_tuned_trigger_as_the_sdk_sends_it():
    from anthropic.types.beta import BetaCompact20260112EditParam
    native = export_native(_config("summarize", trigger_ratio=0.6), "anthropic")
    edit = native.data["context_management"]["edits"][0]
    assert set(edit) <= set(typing.get_type_hints(BetaCompact20260112EditParam))  # only documented fields
    assert edit["type"] == "compact_20260112"
    assert edit["trigger"] == {"type": "input_tokens", "value": _summarize_trigger(BUDGET, 0.6)}
    sent = _anthropic_sent(native.data)
    assert sent["body"]["context_management"] == native.data["context_management"]
    assert "compact-2026-01-12" in sent["headers"]["anthropic-beta"]
    notes = " ".join(native.not_carried)
    assert "keep_recent 10" in notes and "trigger_messages 20" in notes and "clear_thinking_20251015" in notes


def test_server_compaction_carries_instructions_and_a_trigger_below_the_minimum_is_raised_and_said():
    native = export_native(_config("server_compaction", trigger_tokens=20_000, instructions="Keep every order id."),
                           "anthropic")
    edit = native.data["context_management"]["edits"][0]
    assert edit["instructions"] == "Keep every order id."
    assert edit["trigger"]["value"] == 50_000  # Anthropic's minimum; tuned 21,200 with the tools
    assert any("raised to 50,000" in n and "21,200" in n for n in native.not_carried)
    at_default = export_native(_config("server_compaction"), "anthropic").data["context_management"]["edits"][0]
    assert at_default["trigger"]["value"] == 150_000 + TOOLS


def test_clearing_then_compacting_sends_both_edits_with_both_betas():
    config = make_config(get_strategy("clear_tool_results", keep=2) >> get_strategy("summarize"), BUDGET,
                         "claude-opus-4-6")
    native = export_native(config, "anthropic")
    assert [e["type"] for e in native.data["context_management"]["edits"]] == ["clear_tool_uses_20250919",
                                                                               "compact_20260112"]
    sent = _anthropic_sent(native.data)
    assert {"compact-2026-01-12", "context-management-2025-06-27"} <= set(sent["headers"]["anthropic-beta"].split(","))
    compile(native.python, "anthropic_context.py", "exec")


# ---------------------------------------------------------------- OpenAI Responses


def _openai_sent(code: str) -> dict:
    import openai
    namespace: dict = {}
    exec(compile(code, "openai_responses.py", "exec"), namespace)  # the generated code, run as written

    def send(http):
        client = openai.OpenAI(api_key="test", base_url="http://fake.local/v1", http_client=http, max_retries=0)
        with pytest.raises(openai.BadRequestError):
            namespace["create_response"](client, [{"role": "user", "content": "hi"}])
    return _recorded(send)


def test_compaction_to_openai_responses_sends_context_management_with_the_tuned_threshold():
    from openai.types.responses.response_create_params import ContextManagement
    native = export_native(_config("server_compaction", "gpt-5", trigger_tokens=90_000), "openai_responses")
    (entry,) = native.data["context_management"]
    assert set(ContextManagement.__required_keys__) <= set(entry) <= set(typing.get_type_hints(ContextManagement))
    assert entry == {"type": "compaction", "compact_threshold": 90_000 + TOOLS}
    sent = _openai_sent(native.python)
    assert sent["path"] == "/v1/responses" and sent["body"]["context_management"] == [entry]
    assert any("encrypted" in n for n in native.not_carried)
    assert any("keep_user_messages false" in n for n in native.not_carried)  # OpenAI keeps the user messages


def test_truncation_auto_to_openai_responses_is_the_documented_value_and_says_what_differs():
    from openai.types.responses.response_create_params import ResponseCreateParamsBase
    allowed = typing.get_args(typing.get_args(typing.get_type_hints(ResponseCreateParamsBase)["truncation"])[0])
    native = export_native(_config("truncation_auto", "gpt-5"), "openai_responses")
    assert native.data == {"truncation": "auto"} and "auto" in allowed
    assert _openai_sent(native.python)["body"]["truncation"] == "auto"
    assert any("items, not turns" in n for n in native.not_carried)


def test_summarize_to_openai_responses_uses_its_token_trigger():
    native = export_native(_config("summarize", "gpt-5"), "openai_responses")
    assert native.data["context_management"][0]["compact_threshold"] == _summarize_trigger(BUDGET)


# ---------------------------------------------------------------- OpenAI Agents SDK


def test_agents_compaction_session_hook_compacts_above_the_tuned_trigger(monkeypatch):
    fake = types.ModuleType("agents")
    fake.SQLiteSession = lambda sid: ("sqlite", sid)
    memory = types.ModuleType("agents.memory")
    memory.OpenAIResponsesCompactionSession = lambda *a, **k: ("compaction", a, k)
    monkeypatch.setitem(sys.modules, "agents", fake)
    monkeypatch.setitem(sys.modules, "agents.memory", memory)
    native = export_native(_config("server_compaction", "gpt-4.1", trigger_tokens=2_000), "openai_agents")
    namespace: dict = {}
    exec(compile(native.python, "agents_context.py", "exec"), namespace)
    hook = namespace["should_trigger_compaction"]
    item = {"type": "message", "role": "assistant", "content": "x" * 400}
    assert namespace["COMPACT_ABOVE_TOKENS"] == 2_000 + TOOLS
    assert not hook({"session_items": [item] * 10})  # about 1,100 estimated tokens
    assert hook({"session_items": [item] * 40})
    _, args, kwargs = namespace["compaction_session"]("u1")
    assert args == ("u1", ("sqlite", "u1")) and kwargs["should_trigger_compaction"] is hook
    assert any("4 characters a token" in n for n in native.not_carried)


def test_truncation_auto_to_the_agents_sdk_is_a_model_setting():
    native = export_native(_config("truncation_auto", "gpt-4.1"), "openai_agents")
    assert native.data == {"model_settings": {"truncation": "auto"}}
    assert 'ModelSettings(truncation="auto")' in native.python


# ---------------------------------------------------------------- Google ADK


def test_adk_events_compaction_sets_the_token_pair_from_the_tuned_trigger():
    native = export_native(_config("summarize", "gemini-2.5-pro", keep_recent=6), "adk")
    events = native.data["events_compaction_config"]
    assert events == {"token_threshold": _summarize_trigger(BUDGET), "event_retention_size": 6}
    cache = native.data["context_cache_config"]
    assert 1 <= cache["cache_intervals"] <= 100 and cache["ttl_seconds"] > 0 and cache["min_tokens"] >= 0
    notes = " ".join(native.not_carried)
    assert "compaction_interval" in notes and "counts events" in notes
    compile(native.python, "adk_app.py", "exec")
    assert "EventsCompactionConfig(token_threshold=" in native.python


# ---------------------------------------------------------------- Claude Code, Codex


def test_claude_code_gets_the_tuned_threshold_as_a_percentage_of_the_window():
    native = export_native(_config("server_compaction", trigger_tokens=120_000), "claude_code")
    env = native.data["env"]
    assert env == {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": str((120_000 + TOOLS) * 100 // 200_000),
                   "CLAUDE_CODE_AUTO_COMPACT_WINDOW": "200000"}
    assert native.file_name.endswith(".sh")
    out = subprocess.run(["bash", "-c", native.python + "\nenv"], capture_output=True, text=True, check=True).stdout
    assert "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=60" in out
    assert not any("only lowers the threshold" in n for n in native.not_carried)
    late = export_native(_config("server_compaction", trigger_tokens=190_000), "claude_code")
    assert any("only lowers the threshold" in n for n in late.not_carried)


def test_codex_config_toml_reads_back_with_the_tuned_limit():
    native = export_native(_config("summarize", "gpt-5", trigger_ratio=0.5), "codex")
    settings = tomllib.loads(native.python)
    assert settings == {"model_auto_compact_token_limit": _summarize_trigger(BUDGET, 0.5),
                        "model_context_window": 200_000}
    assert native.file_name == "codex_config.toml"
    assert any("keep_recent" in n for n in native.not_carried)


def test_strategies_with_no_compaction_form_name_the_ones_that_have_one():
    for target in ("claude_code", "codex", "adk"):
        with pytest.raises(NoNativeFormError) as e:
            export_native(_config("tool_rounds"), target)
        assert "summarize" in e.value.hint and "server_compaction" in e.value.hint


def test_the_cli_reaches_each_compaction_target(capsys, tmp_path):
    path = tmp_path / "c.json"
    path.write_text(config_json(_config("server_compaction", "gpt-5", trigger_tokens=80_000)))
    for target, key in (("anthropic", "context_management"), ("openai_responses", "context_management"),
                        ("openai_agents", "session"), ("adk", "events_compaction_config"), ("claude_code", "env"),
                        ("codex", "model_auto_compact_token_limit")):
        code = main(["config", "export", str(path), "--to", target])
        out, err = capsys.readouterr()
        assert code == 0, (target, err)
        data = json.loads(out)
        assert key in data and data["not_carried"] and "note: " in err, target
    assert main(["config", "export", str(path), "--to", "codex", "--format", "python"]) == 0
    assert tomllib.loads(capsys.readouterr().out)["model_auto_compact_token_limit"] == 81_200


def test_targets_are_named_like_formats_and_the_earlier_spellings_still_export():
    assert all("-" not in name for name in TARGETS)
    config = _config("server_compaction", trigger_tokens=120_000)
    for old, new in (("claude-code", "claude_code"), ("openai-responses", "openai_responses"),
                     ("openai-agents", "openai_agents")):
        assert export_native(config, old) == export_native(config, new)
