"""The Anthropic export: clear_tool_results as a clear_tool_uses_20250919 edit with the documented
field shapes, the beta header, the trigger counted as input tokens, and generated code that sends
exactly that block through the SDK's beta messages call."""
from __future__ import annotations

import pytest

from ctxlab.configs import NoNativeFormError, export_native, make_config
from ctxlab.strategies import Budget, get_strategy


def _export(model="claude-sonnet-4-5", tools_tokens=0, **params):
    return export_native(make_config(get_strategy("clear_tool_results", **params), Budget(200_000, 0.15, tools_tokens),
                                     model), "anthropic")


def test_every_option_lands_in_its_documented_field():
    native = _export(trigger_tokens=30_000, keep=5, clear_at_least=2_000, exclude_tools=["memory"],
                     clear_tool_inputs=True, tools_tokens=1_200)
    assert native.data == {"betas": ["context-management-2025-06-27"], "context_management": {"edits": [{
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "input_tokens", "value": 31_200},  # input tokens count the tool definitions too
        "keep": {"type": "tool_uses", "value": 5},
        "clear_at_least": {"type": "input_tokens", "value": 2_000},
        "exclude_tools": ["memory"],
        "clear_tool_inputs": True}]}}
    assert any("adds the config's tools_tokens (1,200)" in n for n in native.not_carried)


def test_defaults_leave_out_what_anthropic_defaults_to_none():
    edit = _export().data["context_management"]["edits"][0]
    assert set(edit) == {"type", "trigger", "keep", "clear_tool_inputs"}
    assert edit["trigger"]["value"] == 100_000 and edit["keep"]["value"] == 3


def test_always_clear_becomes_the_smallest_trigger():
    native = _export(trigger_tokens=0)
    assert native.data["context_management"]["edits"][0]["trigger"] == {"type": "input_tokens", "value": 1}
    assert any("trigger_tokens 0" in n for n in native.not_carried)


def test_the_differences_are_named():
    notes = " ".join(_export(clear_at_least=500).not_carried)
    assert "placeholder would not make it smaller" in notes and "all-or-nothing" in notes
    assert "Claude's tokenizer" in notes


class _FakeMessages:
    def __init__(self):
        self.calls = []

    def create(self, **kwargs):
        self.calls.append(kwargs)
        return {"ok": True}


class _FakeClient:
    """Stands in for anthropic.Anthropic(): client.beta.messages.create(**kwargs)."""

    def __init__(self):
        self.beta = type("Beta", (), {})()
        self.beta.messages = _FakeMessages()


def test_the_python_form_sends_the_block_and_the_beta_header():
    native = _export(keep=2, exclude_tools=["a'); import os #"])
    namespace: dict = {"__name__": "exported"}
    code = native.python.replace("import anthropic\n", "anthropic = type('m', (), {'Anthropic': object})\n")
    exec(compile(code, "exported.py", "exec"), namespace)
    client = _FakeClient()
    namespace["create_message"](client, [{"role": "user", "content": "hi"}], max_tokens=100)
    [call] = client.beta.messages.calls
    assert call["context_management"] == native.data["context_management"]
    assert call["betas"] == ["context-management-2025-06-27"] and call["model"] == "claude-sonnet-4-5"
    assert "os" not in namespace


def test_a_model_that_is_not_claude_is_named():
    native = _export(model="gpt-4o")
    assert any("gpt-4o is not a Claude model" in n for n in native.not_carried)
    assert "MODEL = None  # set a Claude model" in native.python


def test_other_strategies_have_no_anthropic_form():
    with pytest.raises(NoNativeFormError, match="Strategies that map to anthropic: clear_tool_results, none, summarize"):
        export_native(make_config(get_strategy("tool_rounds"), Budget(16_000), "gpt-4o"), "anthropic")
