"""Regression tests of the second round of hostile input that have no other home: strategies on
a conversation with no user turn (item 9)."""
from __future__ import annotations

import json

import pytest

import ctxlab
from ctxlab.cli import main
from ctxlab.strategies import STRATEGIES, apply_strategy
from ctxlab.validate import validate

SYSTEM_ONLY = {
    "one system message": [{"role": "system", "content": "You are helpful. " * 60}],
    "two system messages": [{"role": "system", "content": "You are helpful. " * 60},
                            {"role": "system", "content": "Also be brief. " * 60}],
    "system and developer": [{"role": "system", "content": "You are helpful."},
                             {"role": "developer", "content": "Answer in French. " * 80}],
}


@pytest.mark.parametrize("case", SYSTEM_ONLY)
@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_every_strategy_handles_a_conversation_without_a_user_turn(name, case):
    conv = ctxlab.loads(json.dumps(SYSTEM_ONLY[case]))
    for limit in (100, 100_000):  # over the budget (something must go) and well under it
        plan = apply_strategy(conv, name, context_limit=limit)
        assert plan.messages and plan.messages[0].text == conv.messages[0].text  # the system prompt stays
        assert plan.tokens_after <= limit or plan.warnings, (name, case, limit)
        assert not [f for f in validate(ctxlab.Conversation(list(plan.messages)), rules="openai")
                    if f.severity == "error"]


def test_the_cli_applies_oldest_first_and_hybrid_to_system_messages_only(tmp_path, capsys):
    path = tmp_path / "system.json"
    path.write_text(json.dumps(SYSTEM_ONLY["two system messages"]))
    for name in ("oldest_first", "hybrid"):
        assert main(["apply", str(path), "--strategy", name, "--max-tokens", "100"]) == 0
        assert "internal error" not in capsys.readouterr().err
