"""The truth of a trace: every bill a trace logs is read, each call is counted as the
agent sent it (a text action once, no call after the run ended, the harness's messages not user
turns), and a Claude Code sub-agent is a conversation of its own.

Public files are in tests/data/coding (sources in its README); the records written here stand for
shapes no public file with usage was found for (mini-swe-agent per-call usage, Codex token_count,
OpenHands llm_metrics), each shaped as those projects' code writes them."""
from __future__ import annotations

import json
from pathlib import Path

from ctxlab.conversation import HARNESS, TEXT_ACTION
from ctxlab.formats import load, loads
from ctxlab.replay import call_points, replay
from ctxlab.segments import segment
from ctxlab.strategies.view import Budget
from ctxlab.tokens import TokenCounter

DATA = Path(__file__).parent.parent / "data" / "coding"


def _litellm_response(prompt: int, completion: int, cached: int = 0, model: str = "gpt-5-mini-2025-08-07") -> dict:
    """The ``extra.response`` mini-swe-agent's litellm model keeps for one call (trimmed)."""
    return {"id": "chatcmpl-x", "model": model, "object": "chat.completion",
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                      "prompt_tokens_details": {"cached_tokens": cached}}}


def _mini_run() -> dict:
    """A text-based mini-swe-agent v2 run: a format error (the harness's message, with the billed
    reply it rejected), two actions, the submission, the exit message."""
    act = "THOUGHT: look.\n\n```mswea_bash_command\n{}\n```"
    return {"trajectory_format": "mini-swe-agent-1.1",
            "info": {"exit_status": "Submitted", "config": {"model": {"model_name": "openai/gpt-5-mini"}}},
            "messages": [
                {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
                {"role": "user", "content": "Please solve this issue: the division by zero crashes."},
                {"role": "user", "content": "Format error: expected exactly 1 action, found 0.",
                 "extra": {"interrupt_type": "FormatError", "response": _litellm_response(120, 30)}},
                {"role": "assistant", "content": act.format("ls"),
                 "extra": {"actions": [{"command": "ls"}], "response": _litellm_response(160, 12, 0)}},
                {"role": "user", "content": "<returncode>0</returncode>\n<output>a.py</output>"},
                {"role": "assistant", "content": act.format("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
                 "extra": {"actions": [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}],
                           "response": _litellm_response(200, 15, 128)}},
                {"role": "user", "content": "diff --git a/a.py b/a.py"},
                {"role": "exit", "content": "Submitted", "extra": {"exit_status": "Submitted"}}]}


def test_mini_swe_agent_reads_each_calls_billed_usage():
    conv = loads(json.dumps(_mini_run()))
    billed = [m.usage for m in conv.messages if m.role == "assistant"]
    assert [u.prompt_tokens for u in billed] == [160, 200]
    assert [u.cached_tokens for u in billed] == [0, 128] and billed[1].output_tokens == 15
    assert billed[0].model == "gpt-5-mini-2025-08-07" and conv.model == "openai/gpt-5-mini"
    assert any("format error" in n and "120 prompt tokens billed" in n for n in conv.notes)


def test_a_harness_message_opens_no_user_turn():
    conv = loads(json.dumps(_mini_run()))
    harness = [i for i, m in enumerate(conv.messages) if m.extra.get(HARNESS)]
    assert harness == [2] and conv.messages[2].role == "user"
    assert len(segment(conv.messages).turns) == 1  # the task only: the format error is not the person
    r = replay(conv, "none", Budget(100_000), apply_at="turn_start")
    assert [c.applied for c in r.calls] == [True, False]  # a turn_start strategy runs once, at the task


def test_the_public_mini_swe_agent_run_marks_its_format_error_prompts_as_the_harness():
    """The public run (an older mini-swe-agent) has no format error: no message is the harness's,
    and the task is its one user turn."""
    conv = load(DATA / "mini_swe_agent_github_issue.json", format="mini_swe_agent")
    assert not any(m.extra.get(HARNESS) for m in conv.messages)
    assert len(segment(conv.messages).turns) == 1


def test_no_call_after_the_submission():
    for conv in (loads(json.dumps(_mini_run())),
                 load(DATA / "mini_swe_agent_github_issue.json", format="mini_swe_agent"),
                 load(DATA / "swe_agent_ctf_baby_encryption.traj"), load(DATA / "swe_agent_model_stats.traj")):
        assistants = [i for i, m in enumerate(conv.messages) if m.role == "assistant"]
        assert call_points(conv.messages) == assistants, conv.format
        r = replay(conv, "none", Budget(1_000_000))
        assert not any(c.pending for c in r.calls)


def test_a_text_action_is_counted_once_as_the_model_received_it():
    conv = load(DATA / "mini_swe_agent_github_issue.json", format="mini_swe_agent")
    counter = TokenCounter("gpt-4o")
    acted = [m for m in conv.messages if m.extra.get(TEXT_ACTION)]
    assert acted and all(m.tool_calls for m in acted)  # strategies still see the call
    for m in acted:
        as_text = type(m)("assistant", m.content)
        assert counter.message(m) == counter.message(as_text)
    whole = counter.count(conv)
    assert whole.by_category["tool_calls"] == 0


def test_swe_agent_text_actions_count_the_text_the_model_wrote():
    conv = load(DATA / "swe_agent_ctf_baby_encryption.traj")
    raw = json.loads((DATA / "swe_agent_ctf_baby_encryption.traj").read_text())
    sent = [m["content"] for m in raw["history"] if m["role"] == "assistant"]
    read = [m.text for m in conv.messages if m.role == "assistant"]
    assert read == sent  # the whole reply as sent (thought and action), not the thought alone


def test_swe_agent_model_stats_and_model_name():
    conv = load(DATA / "swe_agent_model_stats.traj")
    assert conv.model == "gpt-4o"  # from replay_config
    assert conv.metadata["billed_total"] == {"prompt_tokens": 7141, "output_tokens": 243, "calls": 5}
    assert sum(m.role == "assistant" for m in conv.messages) == 5  # the submit step is read from 'trajectory'


def _codex(records: list[dict]) -> str:
    return "\n".join(json.dumps({"timestamp": "2026-01-02T03:04:05.000Z", **r}) for r in records) + "\n"


def _token_count(prompt: int, cached: int, output: int, total: int) -> dict:
    return {"type": "event_msg", "payload": {"type": "token_count", "info": {
        "total_token_usage": {"input_tokens": total, "output_tokens": 1, "total_tokens": total + 1},
        "last_token_usage": {"input_tokens": prompt, "cached_input_tokens": cached, "output_tokens": output,
                             "reasoning_output_tokens": 0, "total_tokens": prompt + output},
        "model_context_window": 258400}}}


def test_codex_token_count_events_bill_the_reply_before_them():
    text = _codex([
        {"type": "session_meta", "payload": {"id": "s", "cwd": "/w", "cli_version": "0.46.0"}},
        {"type": "turn_context", "payload": {"cwd": "/w", "model": "gpt-5-codex"}},
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": "list files"}]}},
        {"type": "event_msg", "payload": {"type": "token_count", "info": None}},  # before any call: no figures
        {"type": "response_item", "payload": {"type": "reasoning", "summary": []}},
        {"type": "response_item", "payload": {"type": "function_call", "name": "shell", "call_id": "c1",
                                              "arguments": "{\"command\":[\"ls\"]}"}},
        _token_count(2946, 0, 20, 2946),
        _token_count(2946, 0, 20, 2946),  # Codex repeats an event: the same totals, one call
        {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1", "output": "a.py"}},
        {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text", "text": "One file: a.py"}]}},
        _token_count(3010, 2816, 9, 5956),
    ])
    conv = loads(text)
    billed = [(m.usage.prompt_tokens, m.usage.cached_tokens, m.usage.model) for m in conv.messages
              if m.role == "assistant"]
    assert billed == [(2946, 0, "gpt-5-codex"), (3010, 2816, "gpt-5-codex")]


def test_openhands_llm_metrics_bill_the_response_of_each_action():
    usage = lambda rid, p: {"model": "gpt-4o", "prompt_tokens": p, "completion_tokens": 7,  # noqa: E731
                            "cache_read_tokens": 0, "cache_write_tokens": 0, "response_id": rid}
    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "fix it"}, "message": "fix it"},
        {"id": 1, "source": "agent", "action": "run", "args": {"command": "ls", "thought": ""},
         "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "t1", "model_response": {
             "id": "r1", "choices": [{"message": {"content": "", "tool_calls": [
                 {"id": "t1", "function": {"name": "execute_bash", "arguments": "{\"command\":\"ls\"}"}}]}}]}},
         "llm_metrics": {"accumulated_cost": 0.01, "token_usages": [usage("r1", 1500)]}},
        {"id": 2, "source": "agent", "observation": "run", "cause": 1, "content": "a.py",
         "tool_call_metadata": {"tool_call_id": "t1", "function_name": "execute_bash"}},
        {"id": 3, "source": "agent", "action": "message", "args": {"content": "done"}, "message": "done",
         "llm_metrics": {"token_usages": [usage("r1", 1500), usage("r2", 1620)]}},
    ]
    conv = loads(json.dumps(events))
    assert conv.format == "openhands"
    assert [m.usage.prompt_tokens for m in conv.messages if m.role == "assistant"] == [1500, 1620]


def test_a_sub_agents_own_file_reads_as_its_conversation():
    conv = load(DATA / "claude_code_subagent_file.jsonl")
    assert conv.format == "claude_code" and len(conv.messages) > 10
    assert conv.messages[0].role == "user" and "hex.pm" in conv.messages[0].text
    assert sum(m.usage is not None for m in conv.messages) >= 2


def test_a_main_session_lists_its_sub_agents_and_where_each_returned():
    conv = load(DATA / "claude_code_task_parent.jsonl")
    (agent,) = conv.metadata["subagents"]
    assert agent["id"] == "aac57f5" and agent["prompt"].startswith("Search hex.pm")
    back = conv.messages[agent["returned_at"]]
    assert back.role == "tool" and back.extra["ctxlab_subagent"] == "aac57f5"


def test_the_cli_opens_and_replays_a_sub_agent_of_a_main_session(capsys):
    from ctxlab.cli import main
    parent = str(DATA / "claude_code_task_parent.jsonl")
    assert main(["count", parent]) == 0
    (agent,) = json.loads(capsys.readouterr().out)["subagents"]
    assert agent["id"] == "aac57f5" and agent["tokens_back"] > 500  # the report the parent got back
    assert main(["replay", parent, "--agent", "aac57f5", "--strategy", "none"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert len(d["calls"]) == 1 and d["calls"][0]["prompt_tokens"] > 13_000  # its own prompt, with its own prefix
    assert main(["count", parent, "--agent", "nope"]) == 2
    err = capsys.readouterr().err
    assert "no sub-agent 'nope'" in err and "aac57f5" in err  # the known ones are named


def test_a_view_grown_message_by_message_agrees_that_the_harness_opens_no_turn():
    from ctxlab.strategies import make_view
    conv = loads(json.dumps(_mini_run()))
    counter = TokenCounter("gpt-4o")
    whole = make_view(conv.messages, counter=counter)
    view = make_view(conv.messages[:1], counter=counter)
    for m in conv.messages[1:]:
        view = view.append(m)
    assert view.seg == whole.seg and len(whole.seg.turns) == 1
    assert view.newest_user() == whole.newest_user() == 1  # the task, not the format error after it


def test_a_swe_agent_model_ctxlab_does_not_know_is_counted_with_a_stand_in_and_a_note():
    raw = json.loads((DATA / "swe_agent_model_stats.traj").read_text())
    config = json.loads(raw["replay_config"]) if isinstance(raw["replay_config"], str) else raw["replay_config"]
    config["agent"]["model"]["name"] = "azure/my-deployment"
    raw["replay_config"] = json.dumps(config)
    conv = loads(json.dumps(raw))
    assert conv.metadata["model_named"] == "azure/my-deployment"  # the name as the run wrote it
    assert any("azure/my-deployment" in n for n in conv.notes)
    TokenCounter(conv.model).count(conv)  # counted with the stand-in model


def test_a_tool_calling_mini_swe_agent_run_bills_each_reply_too():
    run = {"trajectory_format": "mini-swe-agent-1.1", "info": {"exit_status": "Submitted"}, "messages": [
        {"role": "system", "content": "You can run bash."},
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}],
         "extra": {"actions": [{"command": "ls", "tool_call_id": "call_1"}], "response": _litellm_response(300, 20)}},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.py"}]}
    conv = loads(json.dumps(run))
    (reply,) = [m for m in conv.messages if m.role == "assistant"]
    assert reply.tool_calls[0].id == "call_1" and not reply.extra.get(TEXT_ACTION)  # a real call: counted as one
    assert reply.usage.prompt_tokens == 300
    assert call_points(conv.messages) == [2]  # the run was submitted: no call after the last result


def test_a_public_openhands_run_bills_each_response_and_checks_within_5_percent():
    from ctxlab.prefix import apply_prefix, check_against_bill
    conv = load(DATA / "openhands_llama_usage.json")
    assert [m.usage.prompt_tokens for m in conv.messages if m.usage] == [5920, 6736, 6971, 7469]
    assert conv.metadata["model_named"] == "openai/openrouter-llama-4-maverick"  # noted, counted with a stand-in
    with_prefix, prefix, _ = apply_prefix(conv, "llama")  # the tool definitions the events do not hold
    assert 2_500 < prefix.tokens < 4_000
    assert all(abs(c.estimate_error) <= 0.05 for c in check_against_bill(with_prefix, model="llama").calls)


def test_a_count_of_the_langchain_messages_keeps_the_text_action_and_prefix_marks():
    from ctxlab.formats.langchain import to_langchain
    from ctxlab.prefix import apply_prefix
    from ctxlab.strategies.langchain_trim import tiktoken_counter
    counter = TokenCounter("gpt-4o")
    for conv in (load(DATA / "swe_agent_ctf_baby_encryption.traj"),
                 apply_prefix(load(DATA / "claude_code_subagent_file.jsonl"))[0]):
        lcs = [to_langchain(m, i, []) for i, m in enumerate(conv.messages)]
        assert tiktoken_counter(counter)(lcs) == sum(counter.count(conv.messages, tools=()).message_tokens)
