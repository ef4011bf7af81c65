"""No strategy drops what the user wrote to keep turns alternating: a user message left with
nothing after it (a compaction summary, a follow-up sent before the reply) is merged into the next
user message, with a note, never dropped."""
from __future__ import annotations

import pytest

from ctxlab.conversation import Message, ToolCall
from ctxlab.strategies import STRATEGIES, Budget, get_strategy, make_view
from ctxlab.validate import validate

SUMMARY = "This session continues an earlier one. Summary: the user is fixing login.py; tests in test_auth.py fail."


def trace() -> list[Message]:
    """A compaction summary as a user message, then the user's next prompt, then an agent turn."""
    out = [Message("system", "You are a coding agent."), Message("user", SUMMARY),
           Message("user", "Now run the tests again.")]
    for k in range(6):
        out.append(Message("assistant", "", tool_calls=(ToolCall(f"c{k}", "bash", f'{{"cmd":"pytest -k t{k}"}}'),)))
        out.append(Message("tool", f"test output {k} " + "x " * 400, tool_call_id=f"c{k}"))
    out.append(Message("assistant", "All tests pass."))
    out.append(Message("user", "Thanks. Commit it."))
    return out


@pytest.mark.parametrize("name", sorted(set(STRATEGIES) - {"langchain_trim"}))
@pytest.mark.parametrize("limit", [100_000, 3_000])
def test_no_strategy_drops_a_user_message_to_keep_alternation(name, limit):
    view = make_view(trace())
    budget = Budget(limit)
    strategy = get_strategy(name, **STRATEGIES[name].scaled_defaults(budget))
    plan = strategy.apply(view, budget)
    sent = "\n".join(m.text for m in plan.messages)
    if limit == 100_000:  # room to spare: everything the user wrote is sent
        assert SUMMARY in sent and "Now run the tests again." in sent and "Commit it." in sent, name
    for i, (a, why) in enumerate(zip(plan.actions, plan.reasons)):
        if view.messages[i].role == "user" and a == "drop":
            assert "two user turns in a row" not in why, (name, i, why)
    for rules in ("openai", "anthropic"):  # the input's own two user messages in a row stay as the input has them
        given = {f.code for f in validate(list(view.messages), rules) if f.severity == "error"}
        made = {f.code for f in validate(list(plan.messages), rules) if f.severity == "error"}
        assert made <= given, (name, rules, made - given)


def test_user_messages_left_alone_are_merged_with_a_note():
    def rnd(k: int) -> list[Message]:
        return [Message("assistant", "", tool_calls=(ToolCall(f"c{k}", "bash", f'{{"cmd":"ls {k}"}}'),)),
                Message("tool", "file " * 300, tool_call_id=f"c{k}")]
    msgs = [Message("system", "Be brief."), Message("user", "A: list src."), *rnd(0),
            Message("user", "B: and tests."), *rnd(1), Message("user", "C: now docs.")]
    plan = get_strategy("oldest_first").apply(make_view(msgs), Budget(700))  # the oldest round must go
    assert [a for i, a in enumerate(plan.actions) if msgs[i].role == "user"] == ["keep", "keep", "keep"]
    assert plan.actions[2:4] == ("drop", "drop")
    assert [m.role for m in plan.messages] == ["system", "user", "assistant", "tool", "user"]
    assert plan.messages[1].text == "A: list src.\n\nB: and tests."
    assert plan.notes and "1 user message(s) kept by merging into the next user message (1+4)" in plan.notes[0]
    assert "merged into user message 4" in plan.reasons[1]
    assert not [f for f in validate(list(plan.messages), "anthropic") if f.severity == "error"]


@pytest.mark.parametrize("name", sorted(set(STRATEGIES) - {"langchain_trim", "none"}))
def test_a_compaction_summary_from_a_trace_is_kept_by_every_strategy(name):
    """A reader marks a coding agent's /compact summary; every strategy keeps it, even tight."""
    msgs = trace()
    msgs[1] = Message("user", SUMMARY, extra={"ctxlab_compaction": True})
    view = make_view(msgs)
    assert view.compactions == (1,)
    budget = Budget(2_500)
    plan = get_strategy(name, **STRATEGIES[name].scaled_defaults(budget)).apply(view, budget)
    assert any(SUMMARY in m.text for m in plan.messages), (name, plan.actions[1], plan.reasons[1])


def test_the_task_of_a_coding_run_is_kept_by_every_strategy_when_later_prompts_follow():
    """A coding agent's first user message (its reader marks it the task) stays, while a window or
    a fold removes the older turn around it."""
    import ctxlab
    from ..conftest import SAMPLES
    conv = ctxlab.load(SAMPLES / "coding" / "coding_agent_session.jsonl")
    assert conv.messages[0].role == "user" and conv.messages[0].extra.get("ctxlab_task")
    task = conv.messages[0].text
    msgs = [*conv.messages, Message("user", "Now also update the changelog."),
            Message("assistant", "", tool_calls=(ToolCall("z1", "Read", '{"file_path":"CHANGELOG.md"}'),)),
            Message("tool", "x " * 200, tool_call_id="z1")]
    view = make_view(msgs)
    budget = Budget(3_000)
    for name in sorted(set(STRATEGIES) - {"none", "langchain_trim", "llm_attention"}):
        plan = get_strategy(name, **STRATEGIES[name].scaled_defaults(budget)).apply(view, budget)
        assert any(task in m.text for m in plan.messages if m.role == "user"), name
