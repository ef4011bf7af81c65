"""Provider rules: each rule fired by a minimal conversation and silent on valid ones, at the right
message index; properties on generated valid conversations and their one-message mutations; and
real agent runs from tau-bench when ../shared/data is present."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.errors import CtxlabError
from ctxlab.conversation import Conversation, Message, Part, ToolCall
from ctxlab.segments import segment

from .builders import assistant, system, tool, user
from ctxlab.validate import RULES, Finding, UnknownRulesError, is_valid, validate

BOTH = ("openai", "anthropic")
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TAU = DATA / "tau-bench" / "airline_trajectories_trials01.json"


def codes(findings: list[Finding]) -> list[tuple[str, int | None]]:
    """(code, index) of each finding, in order."""
    return [(f.code, f.index) for f in findings]


# --- valid conversations ----------------------------------------------------------------------

VALID = {
    "plain": [system(), user(), assistant("Hello")],
    "parallel calls, results out of order": [
        system(), system("Use tools."), user(), assistant("", "a", "b", "c"),
        tool("c"), tool("a", "", is_error=True), tool("b"), assistant("Done")],
    "several rounds and turns": [
        user(), assistant("Checking", "a"), tool("a"), assistant("", "b"), tool("b"),
        assistant("Found it"), user("More"), assistant("", "c"), tool("c", "")],
    "user after tool results": [user(), assistant("", "a"), tool("a"), user("stop"), assistant("ok")],
    "ends with a user message": [user(), assistant("yes"), user("thanks")],
    "image-only user message": [Message("user", (Part("image", data={"url": "x"}),)), assistant("nice")],
}


@pytest.mark.parametrize("rules", BOTH)
@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_conversations_have_no_findings(name: str, rules: str) -> None:
    assert validate(VALID[name], rules) == []


# --- each rule, minimal -----------------------------------------------------------------------

@pytest.mark.parametrize("rules", BOTH)
def test_empty_conversation(rules: str) -> None:
    findings = validate([], rules)
    assert codes(findings) == [("empty_conversation", None)]
    assert findings[0].severity == "error" and findings[0].rules == rules
    assert not is_valid(findings)


def test_only_system_messages_is_empty_for_anthropic_only() -> None:
    assert codes(validate([system()], "anthropic")) == [("empty_conversation", None)]
    assert validate([system()], "openai") == []


@pytest.mark.parametrize("rules", BOTH)
def test_orphan_tool_result(rules: str) -> None:
    findings = validate([user(), tool("x")], rules)
    assert ("orphan_tool_result", 1) in codes(findings)
    assert "Message 1" in findings[-1].message


@pytest.mark.parametrize("rules", BOTH)
def test_orphan_result_that_follows_another_assistant_names_its_call(rules: str) -> None:
    msgs = [user(), assistant("", "x"), tool("x"), assistant("so"), user(), assistant("hm"), tool("x")]
    findings = validate(msgs, rules)
    orphan = [f for f in findings if f.code == "orphan_tool_result"]
    assert [f.index for f in orphan] == [6]
    assert "message 1" in orphan[0].message and "message 5" in orphan[0].message


@pytest.mark.parametrize("rules", BOTH)
def test_tool_result_without_id_is_an_orphan(rules: str) -> None:
    assert ("orphan_tool_result", 2) in codes(validate([user(), assistant("", "x"), tool(None)], rules))


@pytest.mark.parametrize("rules", BOTH)
def test_unanswered_tool_call_names_id_and_tool(rules: str) -> None:
    findings = validate([user(), assistant("", "x", "y"), tool("x"), assistant("Done")], rules)
    assert codes(findings) == [("unanswered_tool_call", 1)]
    assert "'y'" in findings[0].message and "t_y" in findings[0].message
    assert "Message 1" in findings[0].message


@pytest.mark.parametrize("rules", BOTH)
def test_a_call_at_the_very_end_is_unanswered(rules: str) -> None:
    assert codes(validate([user(), assistant("", "x")], rules)) == [("unanswered_tool_call", 1)]


@pytest.mark.parametrize("rules", BOTH)
def test_duplicate_tool_result(rules: str) -> None:
    msgs = [user(), assistant("", "x"), tool("x"), tool("x"), assistant("Done")]
    assert codes(validate(msgs, rules)) == [("duplicate_tool_result", 3)]


def test_result_not_adjacent() -> None:
    msgs = [user(), assistant("", "x", "y"), tool("x"), user("hm"), tool("y"), assistant("Done")]
    assert codes(validate(msgs, "openai")) == [("unanswered_tool_call", 1), ("result_not_adjacent", 4)]
    # Anthropic also sees the late result as a second user turn after "hm".
    assert codes(validate(msgs, "anthropic")) == [
        ("unanswered_tool_call", 1), ("result_not_adjacent", 4), ("consecutive_user_turns", 4)]


def test_system_not_at_start_is_anthropic_only() -> None:
    msgs = [system(), user(), assistant("a"), system("Now be formal."), user(), assistant("b")]
    assert codes(validate(msgs, "anthropic")) == [("system_not_at_start", 3)]
    assert validate(msgs, "openai") == []


def test_consecutive_user_turns_is_anthropic_only() -> None:
    msgs = [system(), user(), user("and also"), assistant("ok")]
    findings = validate(msgs, "anthropic")
    assert codes(findings) == [("consecutive_user_turns", 2)]
    assert "Message 2" in findings[0].message
    assert validate(msgs, "openai") == []


def test_a_second_user_message_after_tool_results_is_a_second_user_turn() -> None:
    msgs = [user(), assistant("", "x"), tool("x"), user("a"), user("b"), assistant("ok")]
    assert codes(validate(msgs, "anthropic")) == [("consecutive_user_turns", 4)]


def test_consecutive_assistant_turns_is_anthropic_only() -> None:
    msgs = [user(), assistant("Let me see."), assistant("", "x"), tool("x"), assistant("ok")]
    assert codes(validate(msgs, "anthropic")) == [("consecutive_assistant_turns", 2)]
    assert validate(msgs, "openai") == []


def test_first_turn_not_user_is_an_anthropic_warning() -> None:
    findings = validate([system(), assistant("Welcome!"), user(), assistant("ok")], "anthropic")
    assert codes(findings) == [("first_turn_not_user", 1)]
    assert findings[0].severity == "warning"
    assert is_valid(findings)


def test_empty_content_is_an_anthropic_error_except_a_final_assistant() -> None:
    msgs = [user("  "), assistant(""), user(), assistant("")]
    assert codes(validate(msgs, "anthropic")) == [("empty_content", 0), ("empty_content", 1)]
    assert validate([user(), assistant("", "x"), tool("x", ""), assistant("")], "anthropic") == []


def test_empty_assistant_is_an_openai_warning() -> None:
    findings = validate([user(""), assistant(""), user(), assistant("", "x"), tool("x"), assistant("")],
                        "openai")
    assert codes(findings) == [("empty_content", 1), ("empty_content", 5)]
    assert {f.severity for f in findings} == {"warning"}
    assert is_valid(findings)


# --- API ----------------------------------------------------------------------------------------

def test_unknown_rules_lists_the_known_ones() -> None:
    with pytest.raises(UnknownRulesError) as info:
        validate([user()], "gemini")
    assert isinstance(info.value, CtxlabError)
    assert "anthropic" in str(info.value) and "openai" in str(info.value)
    assert sorted(RULES) == ["anthropic", "anthropic-thinking", "deepseek", "deepseek-thinking", "openai"]


def test_a_conversation_is_accepted_and_findings_are_sorted_and_deterministic() -> None:
    msgs = (user(), tool("z"), assistant("", "x"), user(), user(), assistant("ok"), tool("x"))
    conv = Conversation(messages=msgs)
    first = validate(conv, "anthropic")
    assert first == validate(list(msgs), "anthropic")
    assert [f.index for f in first] == sorted(f.index for f in first)
    assert codes(first) == [("orphan_tool_result", 1), ("consecutive_user_turns", 1),
                            ("unanswered_tool_call", 2), ("consecutive_user_turns", 4),
                            ("orphan_tool_result", 6)]


# --- properties ---------------------------------------------------------------------------------

@st.composite
def valid_conversations(draw: st.DrawFn) -> list[Message]:
    """System messages, then turns: a user message, tool rounds with parallel calls answered in
    any order (empty and error results too), and a closing assistant message when one is needed."""
    msgs = [system(f"rule {k}") for k in range(draw(st.integers(0, 3)))]
    n_turns = draw(st.integers(1, 4))
    next_id = 0
    for t in range(n_turns):
        msgs.append(user(f"question {t}"))
        rounds = draw(st.integers(0, 3))
        for _ in range(rounds):
            ids = [f"c{next_id + k}" for k in range(draw(st.integers(1, 3)))]
            next_id += len(ids)
            msgs.append(assistant(draw(st.sampled_from(["", "Let me check."])), *ids))
            for cid in draw(st.permutations(ids)):
                msgs.append(tool(cid, draw(st.sampled_from(["", "ok", '{"a":1}'])), draw(st.booleans())))
        needs_reply = rounds == 0 and t < n_turns - 1
        if needs_reply or draw(st.booleans()):
            msgs.append(assistant(f"answer {t}"))
    return msgs


@settings(max_examples=200)
@given(valid_conversations())
def test_generated_valid_conversations_have_no_errors(msgs: list[Message]) -> None:
    for rules in BOTH:
        assert [f for f in validate(msgs, rules) if f.severity == "error"] == []


@settings(max_examples=100)
@given(valid_conversations())
def test_dropping_any_tool_message_leaves_its_call_unanswered(msgs: list[Message]) -> None:
    s = segment(msgs)
    for j, m in enumerate(msgs):
        if m.role != "tool":
            continue
        caller = s.rounds[s.round_of[j]][0]
        mutated = msgs[:j] + msgs[j + 1:]
        for rules in BOTH:
            found = [f for f in validate(mutated, rules) if f.code == "unanswered_tool_call"]
            assert [f.index for f in found] == [caller]
            assert repr(m.tool_call_id) in found[0].message


@settings(max_examples=100)
@given(valid_conversations())
def test_dropping_an_assistant_with_calls_orphans_its_results(msgs: list[Message]) -> None:
    for start, *results in segment(msgs).rounds:
        mutated = msgs[:start] + msgs[start + 1:]
        expected = [i - 1 for i in results]
        for rules in BOTH:
            found = [f.index for f in validate(mutated, rules) if f.code == "orphan_tool_result"]
            assert found == expected


@st.composite
def any_message(draw: st.DrawFn) -> Message:
    """Any message, including results for unknown ids and calls that reuse ids."""
    role = draw(st.sampled_from(["system", "user", "assistant", "tool"]))
    ids = st.sampled_from(["a", "b", "c"])
    if role == "assistant":
        return assistant(draw(st.sampled_from(["", "x"])), *draw(st.lists(ids, max_size=3, unique=True)))
    if role == "tool":
        return tool(draw(st.none() | ids))
    return Message(role, draw(st.sampled_from(["", "x"])))


TOOL_CODES = {"orphan_tool_result", "unanswered_tool_call", "duplicate_tool_result", "result_not_adjacent"}


@settings(max_examples=300)
@given(st.lists(any_message(), max_size=20))
def test_no_tool_error_means_every_round_is_complete_and_nothing_is_orphaned(msgs: list[Message]) -> None:
    for rules in BOTH:
        findings = validate(msgs, rules)
        keys = [-1 if f.index is None else f.index for f in findings]
        assert keys == sorted(keys) and all(-1 <= k < len(msgs) for k in keys)
        if any(f.code in TOOL_CODES for f in findings):
            continue
        s = segment(msgs)
        assert s.orphans == ()
        for start, *results in s.rounds:
            answered = sorted(msgs[i].tool_call_id or "" for i in results)
            assert answered == sorted(c.id for c in msgs[start].tool_calls)
            assert results == list(range(start + 1, start + 1 + len(results)))


# --- real agent runs ----------------------------------------------------------------------------

def from_openai_dicts(traj: list[dict[str, Any]]) -> list[Message]:
    """Messages from OpenAI chat dicts, as tau-bench stores them (content may be null)."""
    out = []
    for d in traj:
        calls = tuple(ToolCall(c["id"], c["function"]["name"], c["function"]["arguments"])
                      for c in d.get("tool_calls") or ())
        out.append(Message(d["role"], d.get("content") or "", name=d.get("name"),
                           tool_calls=calls, tool_call_id=d.get("tool_call_id")))
    return out


@pytest.fixture(scope="module")
def tau_runs() -> list[list[Message]]:
    """The 100 airline runs of tau-bench as message lists."""
    if not TAU.exists():
        pytest.skip(f"tau-bench data not found at {TAU} (../shared/data is absent)")
    return [from_openai_dicts(run["traj"]) for run in json.loads(TAU.read_text())]


def test_tau_bench_runs_are_accepted_by_both_rule_sets(tau_runs: list[list[Message]]) -> None:
    # These are real gpt-4o runs sent to OpenAI: one call per assistant message, each answered
    # right away, strict user/assistant alternation, 48 empty tool results, 24 runs ending on a
    # tool result. Neither rule set has anything to say about them, not even a warning.
    assert len(tau_runs) == 100
    for k, msgs in enumerate(tau_runs):
        assert validate(msgs, "openai") == [], k
        assert validate(msgs, "anthropic") == [], k


def test_tau_bench_runs_with_a_result_dropped_are_caught(tau_runs: list[list[Message]]) -> None:
    checked = 0
    for msgs in tau_runs:
        j = next((i for i, m in enumerate(msgs) if m.role == "tool"), None)
        if j is None:
            continue
        checked += 1
        s = segment(msgs)
        caller = s.rounds[s.round_of[j]][0]
        for rules in BOTH:
            found = validate(msgs[:j] + msgs[j + 1:], rules)
            assert ("unanswered_tool_call", caller) in codes(found)
    assert checked > 50


# ---------------------------------------------------------------- block types a provider does not know

TELEPORT = {"model": "claude-sonnet-4-5", "messages": [
    {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "teleport", "to": "mars"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}]}


def test_a_block_type_anthropic_does_not_know_is_an_error_under_its_rules(capsys, tmp_path):
    from ctxlab import loads
    from ctxlab.cli import main
    conv = loads(json.dumps(TELEPORT), format="anthropic")
    assert conv.messages[0].parts[1].type == "teleport"  # kept as sent on read
    found = [f for f in validate(conv, "anthropic") if f.code == "unknown_block_type"]
    assert [(f.index, f.severity) for f in found] == [(0, "error")] and "teleport" in found[0].message
    assert [f.code for f in validate(conv, "openai") if f.code == "unknown_block_type"] == ["unknown_block_type"]
    path = tmp_path / "teleport.json"
    path.write_text(json.dumps(TELEPORT))
    assert main(["validate", str(path), "--rules", "anthropic"]) == 1
    assert '"unknown_block_type"' in capsys.readouterr().out


def test_every_block_type_the_anthropic_sdk_takes_is_known():
    import re
    import typing
    anthropic_types = pytest.importorskip("anthropic.types")
    from ctxlab.validate import ANTHROPIC_BLOCK_TYPES
    sdk = set()
    for a in typing.get_args(anthropic_types.ContentBlockParam):
        for b in typing.get_args(a) or (a,):
            sdk |= set(re.findall(r"'([a-z_]+)'", str(getattr(b, "__annotations__", {}).get("type"))))
    assert "text" in sdk and "tool_result" in sdk  # the SDK was read
    assert sdk <= ANTHROPIC_BLOCK_TYPES, sorted(sdk - ANTHROPIC_BLOCK_TYPES)


def test_known_blocks_are_no_finding():
    msgs = [Message("user", (Part("text", "see"), Part("document", data={"source": {"type": "text", "data": "x"}}))),
            Message("assistant", "ok")]
    assert not [f for f in validate(msgs, "anthropic") if f.code == "unknown_block_type"]
