"""Readers of coding agents' trace files (Claude Code, Codex, SWE-agent, OpenHands,
mini-swe-agent): on public files from those projects (tests/data/coding, sources in
sample_data/README.md) and on files written here for the cases they lack."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ctxlab.errors import CtxlabError
from ctxlab.formats import FORMATS, TRACES, export, load, loads
from ctxlab.formats._trace import COMPACTION, is_compaction
from ctxlab.validate import validate

DATA = Path(__file__).parent.parent / "data" / "coding"
ROOT = Path(__file__).resolve().parents[2]


def _answered(conv) -> bool:
    """Every tool result follows a call with its id."""
    open_ids: set[str] = set()
    for m in conv.messages:
        open_ids |= {c.id for c in m.tool_calls}
        if m.role == "tool" and m.tool_call_id not in open_ids:
            return False
    return True


@pytest.mark.parametrize("name, fmt", [
    ("claude_code_compact.jsonl", "claude_code"), ("claude_code_sidechain.jsonl", "claude_code"),
    ("codex_rollout.jsonl", "codex"), ("swe_agent_function_calling.traj", "swe_agent"),
    ("swe_agent_ctf_baby_encryption.traj", "swe_agent"), ("openhands_events.json", "openhands"),
    ("openhands_resolver_output.json", "openhands"), ("mini_swe_agent_github_issue.json", None),
])
def test_public_files_are_detected_and_every_result_follows_its_call(name, fmt):
    conv = load(DATA / name, format=None if fmt else "mini_swe_agent")
    assert conv.format == (fmt or "mini_swe_agent")
    assert len(conv.messages) >= 3 and _answered(conv)
    assert conv.notes, "a trace reader always says what it could not carry"
    for to in ("openai", "anthropic", "langchain", "responses"):
        out = export(conv, to)
        assert "ctxlab_compaction" not in json.dumps(out.data)


def test_claude_code_joins_lines_of_one_response_and_leaves_out_non_messages():
    lines = [
        {"type": "queue-operation", "operation": "dequeue", "sessionId": "s"},
        {"type": "user", "uuid": "u1", "sessionId": "s", "cwd": "/w", "message": {"role": "user", "content": "fix it"}},
        {"type": "assistant", "uuid": "a1", "sessionId": "s",
         "message": {"id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5",
                     "content": [{"type": "text", "text": "Reading both."}]}},
        {"type": "assistant", "uuid": "a2", "sessionId": "s",
         "message": {"id": "msg_1", "role": "assistant", "content": [
             {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/w/a.py"}}]}},
        {"type": "user", "uuid": "u2", "sessionId": "s", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "a = 1"}]}},
        {"type": "progress", "sessionId": "s", "data": {"type": "hook_progress"}},
        {"type": "assistant", "uuid": "a3", "sessionId": "s",   # the same response, after a result line
         "message": {"id": "msg_1", "role": "assistant", "content": [
             {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "/w/b.py"}}]}},
        {"type": "user", "uuid": "u3", "sessionId": "s", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t2", "content": "b = 2", "is_error": None}]}},
        {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}},
        {"type": "assistant", "uuid": "a4", "sessionId": "s", "isSidechain": True,
         "message": {"id": "msg_9", "role": "assistant", "content": "sub-agent text"}},
        {"type": "assistant", "uuid": "a5", "sessionId": "s",
         "message": {"id": "msg_2", "role": "assistant", "content": [{"type": "text", "text": "Done."}]}},
    ]
    conv = loads("\n".join(json.dumps(x) for x in lines))
    assert conv.format == "claude_code" and conv.model == "claude-sonnet-4-5"
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert [c.id for c in conv.messages[1].tool_calls] == ["t1", "t2"]
    assert conv.messages[1].text == "Reading both."
    assert conv.metadata["cwd"] == "/w"
    assert any("1 sidechain line" in n for n in conv.notes)
    assert any("1 queue-operation" in n and "1 progress" in n and "1 file-history-snapshot" in n for n in conv.notes)
    assert not [f for f in validate(conv) if f.severity == "error"]


def test_claude_code_compaction_summary_is_marked_on_the_message():
    conv = load(DATA / "claude_code_compact.jsonl")
    marked = [i for i, m in enumerate(conv.messages) if is_compaction(m)]
    assert marked == [6]
    assert conv.messages[6].extra[COMPACTION] is True and conv.messages[6].role == "user"
    assert conv.messages[6].text.startswith("This session is being continued")
    assert conv.metadata["compactions"] == [{"message": 6, "trigger": "auto", "pre_tokens": 150000}]
    assert not any(is_compaction(m) for m in conv.messages[:6] + conv.messages[7:])


def test_claude_code_leaves_out_a_rewound_branch():
    conv = load(DATA / "claude_code_compact.jsonl")  # "First attempt" was rewound: "Second attempt" replaced it
    texts = [m.text for m in conv.messages]
    assert "First attempt" not in texts and "First answer" not in texts
    assert texts[:4] == ["Start", "Ready", "Second attempt", "Second answer"]
    assert any("2 line(s) on abandoned branches" in n for n in conv.notes)


def test_codex_rollout_reads_items_and_marks_a_compacted_record():
    lines = (DATA / "codex_rollout.jsonl").read_text().splitlines()
    conv = loads("\n".join(lines))
    assert conv.format == "codex" and conv.metadata["cwd"] == "/workspace/synthetic-project"
    roles = [m.role for m in conv.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool", "assistant"]
    patch = conv.messages[3].tool_calls[0]
    assert patch.name == "apply_patch" and json.loads(patch.arguments)["input"].startswith("*** Begin Patch")
    assert conv.messages[1].parts[0].type == "thinking"
    compacted = json.dumps({"timestamp": "t", "type": "compacted", "payload": {"message": "Summary: listed files."}})
    after = json.dumps({"timestamp": "t", "type": "response_item", "payload": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": "and now?"}]}})
    conv2 = loads("\n".join(lines + [compacted, after]))
    assert [i for i, m in enumerate(conv2.messages) if is_compaction(m)] == [8]
    assert conv2.messages[8].text == "Summary: listed files."


def test_swe_agent_function_calling_keeps_the_calls_and_ids():
    conv = load(DATA / "swe_agent_function_calling.traj")
    assert conv.messages[0].role == "system" and conv.messages[1].role == "user"
    calls = [c for m in conv.messages for c in m.tool_calls]
    assert calls[0].name == "find_file" and json.loads(calls[0].arguments) == {"file_name": "missing_colon.py"}
    assert all(c.id.startswith("call_") for c in calls)
    assert not any("text-action" in n for n in conv.notes)


def test_swe_agent_text_actions_become_one_call_each_and_the_observation_its_result():
    conv = load(DATA / "swe_agent_ctf_baby_encryption.traj")
    doc = json.loads((DATA / "swe_agent_ctf_baby_encryption.traj").read_text())
    actions = [m["action"] for m in doc["history"] if m["role"] == "assistant"]
    calls = [c for m in conv.messages for c in m.tool_calls]
    assert [json.loads(c.arguments)["command"] for c in calls] == actions
    assert calls[0].name == "open" and any(c.name == "python" for c in calls)
    results = [m for m in conv.messages if m.role == "tool"]
    assert len(results) == len(calls) and _answered(conv)
    assert any("text-action run: 15 actions" in n for n in conv.notes)


def test_openhands_tool_call_events_and_flat_history():
    conv = load(DATA / "openhands_events.json")
    assert conv.format == "openhands"
    names = [c.name for m in conv.messages for c in m.tool_calls]
    assert "execute_bash" in names or "str_replace_editor" in names
    flat = load(DATA / "openhands_resolver_output.json")
    assert [c.name for m in flat.messages for c in m.tool_calls] == ["run", "run_ipython", "run"]
    assert flat.messages[0].role == "user" and flat.messages[0].text.startswith("Please fix")
    assert flat.messages[-1].role == "assistant" and not flat.messages[-1].tool_calls


def test_openhands_condensation_summary_is_marked():
    events = [{"id": 0, "source": "user", "action": "message", "args": {"content": "task"}},
              {"id": 1, "source": "agent", "action": "condensation",
               "args": {"forgotten_event_ids": [0], "summary": "USER wanted X; done Y."}},
              {"id": 2, "source": "agent", "action": "message", "args": {"content": "continuing"}}]
    conv = loads(json.dumps(events))
    assert conv.format == "openhands"
    assert [is_compaction(m) for m in conv.messages] == [False, True, False]


def test_mini_swe_agent_text_run_with_its_envelope():
    doc = {"trajectory_format": "mini-swe-agent-1.1", "info": {"exit_status": "Submitted"},
           "messages": [{"role": "system", "content": "You run bash."},
                        {"role": "user", "content": "Fix the bug."},
                        {"role": "assistant", "content": "THOUGHT: look\n\n```mswea_bash_command\nls -la\n```",
                         "extra": {"actions": [{"command": "ls -la"}], "cost": 0.01}},
                        {"role": "user", "content": "<returncode>0</returncode>\n<output>a.py</output>"},
                        {"role": "exit", "content": "Submitted", "extra": {"exit_status": "Submitted"}}]}
    conv = loads(json.dumps(doc))
    assert conv.format == "mini_swe_agent" and conv.metadata["exit_status"] == "Submitted"
    assert [m.role for m in conv.messages] == ["system", "user", "assistant", "tool"]
    assert json.loads(conv.messages[2].tool_calls[0].arguments) == {"command": "ls -la"}
    assert any("'exit' message" in n for n in conv.notes)


def test_a_bare_list_stays_openai_unless_asked():
    path = DATA / "mini_swe_agent_github_issue.json"
    assert load(path).format == "openai"
    assert load(path, format="mini_swe_agent").format == "mini_swe_agent"


def test_errors_name_the_line():
    good = {"type": "user", "uuid": "u", "sessionId": "s", "message": {"role": "user", "content": "hi"}}
    bad = {"type": "assistant", "uuid": "a", "sessionId": "s", "message": {"id": "m", "role": "assistant", "content": [
        {"type": "tool_use", "name": "Read", "input": {}}]}}
    with pytest.raises(CtxlabError) as e:
        loads(json.dumps(good) + "\n" + json.dumps(bad))
    assert "JSONL line 2" in str(e.value) and "tool_use block has no id" in str(e.value)


def test_trace_formats_are_registered_read_only():
    for name in ("claude_code", "codex", "swe_agent", "openhands", "mini_swe_agent"):
        assert name in FORMATS and name in TRACES and FORMATS[name].write is None


def test_cli_convert_writes_a_trace_as_another_format():
    out = subprocess.run([sys.executable, "-m", "ctxlab", "convert", str(DATA / "claude_code_compact.jsonl"),
                          "--to", "openai"], capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["messages"][6]["content"][0]["text"].startswith("This session is being continued")
    assert "note: message 6: compaction summary" in out.stderr


def test_the_bundled_coding_session_is_one_task_and_dozens_of_calls():
    conv = load(ROOT / "sample_data" / "coding" / "coding_agent_session.jsonl")
    assert conv.format == "claude_code" and conv.model.startswith("claude-sonnet")
    assert [m.role for m in conv.messages].count("user") == 1 and conv.messages[0].role == "user"
    calls = [c for m in conv.messages for c in m.tool_calls]
    assert len(calls) == 35 and {c.name for c in calls} == {"Bash", "Read", "Edit", "Grep"}
    assert sum(len(m.tool_calls) == 2 for m in conv.messages) == 3, "responses spread over several lines are joined"
    assert _answered(conv) and not [f for f in validate(conv) if f.severity == "error"]
    edits = [json.loads(c.arguments) for c in calls if c.name == "Edit"]
    reads = "\n".join(m.text for m in conv.messages if m.role == "tool")
    assert sum(e["old_string"].splitlines()[0] in reads for e in edits) >= len(edits) - 1, "edits copy text from reads"


def test_the_bundled_coding_session_is_rebuilt_identically(tmp_path):
    folder = ROOT / "sample_data" / "coding"
    out = subprocess.run([sys.executable, "build.py", str(tmp_path / "s.jsonl")], cwd=folder, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "s.jsonl").read_bytes() == (folder / "coding_agent_session.jsonl").read_bytes()


def test_codex_older_rollouts_put_items_on_the_lines():
    lines = [{"id": "s1", "timestamp": "2025-05-01T10:00:00Z", "instructions": "You are Codex."},
             {"record_type": "state"},
             {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run the tests"}]},
             {"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"pytest\"]}", "call_id": "c1"},
             {"type": "function_call_output", "call_id": "c1", "output": "{\"output\":\"3 passed\"}"},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "All pass."}]}]
    conv = loads("\n".join(json.dumps(x) for x in lines))
    assert conv.format == "codex"
    assert [m.role for m in conv.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert conv.messages[0].text == "You are Codex." and conv.messages[2].tool_calls[0].name == "shell"


def test_codex_encrypted_reasoning_is_noted():
    conv = load(DATA / "codex_rollout.jsonl")
    assert any("encrypted reasoning is not carried" in n for n in conv.notes)


V1_EVENTS = [  # the shape of OpenHands software-agent-sdk events (written here, after its persisted event files)
    {"id": "e0", "source": "agent", "system_prompt": {"type": "text", "text": "You are OpenHands agent."},
     "tools": [{"description": "Execute a bash command", "title": "terminal", "kind": "TerminalTool"}],
     "kind": "SystemPromptEvent"},
    {"id": "e1", "source": "user", "llm_message": {"role": "user", "content": [
        {"type": "text", "text": "Run `pwd` and write it to out.txt."}]}, "kind": "MessageEvent"},
    {"id": "e2", "source": "agent", "thought": [{"type": "text", "text": "I'll run it."}],
     "action": {"command": "pwd > out.txt", "kind": "TerminalAction"}, "tool_name": "terminal",
     "tool_call_id": "call_1", "tool_call": {"id": "call_1", "name": "terminal",
                                             "arguments": "{\"command\":\"pwd > out.txt\"}"},
     "llm_response_id": "resp-1", "kind": "ActionEvent"},
    {"id": "e3", "source": "environment", "tool_name": "terminal", "tool_call_id": "call_1",
     "observation": {"content": [{"type": "text", "text": ""}], "is_error": False, "exit_code": 0,
                     "kind": "TerminalObservation"}, "action_id": "e2", "kind": "ObservationEvent"},
    {"id": "e4", "source": "environment", "kind": "ConversationStateUpdateEvent", "key": "execution_status"},
    {"id": "e5", "source": "agent", "summary": "USER asked for pwd in out.txt; done.", "kind": "CondensationSummaryEvent"},
    {"id": "e6", "source": "agent", "llm_message": {"role": "assistant", "content": [
        {"type": "text", "text": "Done: out.txt holds the working directory."}]}, "kind": "MessageEvent"},
]


def test_openhands_v1_events_by_kind():
    conv = loads(json.dumps({"items": V1_EVENTS}))
    assert conv.format == "openhands"
    assert [m.role for m in conv.messages] == ["system", "user", "assistant", "tool", "user", "assistant"]
    assert conv.messages[2].text == "I'll run it." and conv.messages[2].tool_calls[0].name == "terminal"
    assert conv.messages[3].tool_call_id == "call_1"
    assert is_compaction(conv.messages[4])
    assert any("1 ConversationStateUpdateEvent" in n for n in conv.notes)
    assert any("tool definitions in the SystemPromptEvent" in n for n in conv.notes)
    jsonl = loads("\n".join(json.dumps(e) for e in V1_EVENTS))
    assert [m.role for m in jsonl.messages] == [m.role for m in conv.messages]
