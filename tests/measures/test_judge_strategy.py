"""A strategy is judged on what it changed, not on the trace as logged: Claude Code and Codex write
a first turn as two user messages in a row, which Anthropic's rules reject; a sweep, Compare and
the Strategy Lab list that once as the input's and count it against no strategy."""
from __future__ import annotations

from pathlib import Path

from ctxlab import load
from ctxlab.compare import plan_metrics
from ctxlab.conversation import Conversation
from ctxlab.strategies import Budget, get_strategy, make_view
from ctxlab.sweep import Grid, run_sweep
from ctxlab.validate import input_finding_keys, introduced_findings, validate

from ..builders import assistant, system, tool, user

CODING = Path(__file__).parent.parent / "data" / "coding"
CLAUDE_CODE = CODING / "claude_code_compact.jsonl"  # claude-code-log's fixture: a slash command then the prompt


def test_the_real_claude_code_trace_breaks_anthropic_rules_as_logged():
    conv = load(CLAUDE_CODE)
    keys = input_finding_keys(conv)
    assert ("anthropic", "consecutive_user_turns", 7) in keys


def test_a_sweep_over_a_claude_code_session_recommends_a_point_and_lists_the_input_errors_once():
    conv = load(CLAUDE_CODE)
    result = run_sweep([conv], Grid.parse(["sliding_window", "tool_rounds"], []), [2000, 100_000], workers=1)
    assert all(p["invalid"] == 0 for p in result.points)
    assert result.recommendation is not None
    assert [e["code"] for e in result.input_errors] == ["consecutive_user_turns"]
    assert result.input_errors[0]["message"] == 7 and result.input_errors[0]["conversation"] == 0
    assert any("as logged" in n and "count against no point" in n for n in result.notes)
    assert result.to_dict()["input_errors"] == [dict(e) for e in result.input_errors]


def _two_users_then_a_round() -> Conversation:
    return Conversation((system(), user("/init"), user("Fix the bug in parse()"), assistant("", "c1"),
                         tool("c1", "def parse(): ..." * 50), assistant("done"), user("and the tests?"),
                         assistant("", "c2"), tool("c2", "ok"), user("thanks")))


def test_an_error_a_strategy_makes_still_counts():
    conv = _two_users_then_a_round()
    inherited = input_finding_keys(conv)
    assert ("anthropic", "consecutive_user_turns", 2) in inherited
    # a result that drops the assistant answer at 5 puts user 6 right after tool 4: Anthropic lets a user
    # message join a tool-result turn, so drop 3-5 instead: user 2 then user 6 is a new error at message 6
    kept = [0, 1, 2, 6, 7, 8, 9]
    out = [conv.messages[i] for i in kept]
    found = validate(out, "anthropic")
    new = introduced_findings(found, kept, inherited)
    assert [(f.code, kept[f.index]) for f in new] == [("consecutive_user_turns", 6)]
    assert all(kept[f.index] == 2 for f in found if f not in new)


def test_compare_judges_a_plan_on_the_findings_it_introduced():
    conv = load(CLAUDE_CODE)
    plan = get_strategy("none").apply(make_view(conv), Budget(100_000))
    blamed = plan_metrics(plan, "none")
    judged = plan_metrics(plan, "none", inherited=input_finding_keys(conv))
    assert not blamed.accepted  # the trace as logged breaks Anthropic's rules
    assert judged.accepted and judged.errors("anthropic") == 0
