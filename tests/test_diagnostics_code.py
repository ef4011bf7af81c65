"""diagnose on coding agents' traces: the false alarms of issue 17 are gone, true ones stay."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.conversation import Conversation, Message, ToolCall
from ctxlab.diagnostics import diagnose
from ctxlab.formats import load

DATA = Path(__file__).parent / "data" / "coding"


def _run(steps: list[tuple[str, dict, str]], task: str = "Fix it.") -> Conversation:
    """A conversation of (tool, arguments, result) steps after one task message."""
    msgs = [Message("system", "You are a coding agent."), Message("user", task)]
    for k, (tool, args, result) in enumerate(steps):
        msgs.append(Message("assistant", "", tool_calls=(ToolCall(f"c{k}", tool, json.dumps(args)),)))
        msgs.append(Message("tool", result, tool_call_id=f"c{k}"))
    msgs.append(Message("assistant", "Done."))
    return Conversation(tuple(msgs))


def _codes(conv: Conversation, code: str) -> list:
    return [f for f in diagnose(conv, provider="hash", modes=["poisoning"]) if f.code == code]


@pytest.mark.parametrize("seen, used", [
    ("body { color: #1a3a1a; }", "sed -i 's/#4a3a1a/#2b2b2b/' style.css"),           # hex colours
    ("0040060d <win>: push rbp", "python3 -c \"print(p64(0x40060d))\" > payload"),      # one address, two notations
    ("wrote pub1.pem", "openssl rsa -pubin -in pub2.pem -text"),                       # names made in sequence
    ("const msg1 = build();", "grep -n msg-1 src/chat.ts"),                             # a variable vs an id
])
def test_code_look_alikes_are_not_mistyped_ids(seen, used):
    conv = _run([("Bash", {"command": "cat notes.txt"}, seen), ("Bash", {"command": used}, "ok")])
    assert _codes(conv, "mistyped_id") == []


@pytest.mark.parametrize("seen, used", [
    ('{"reservation_id": "NB-20417"}', "NB-20471"),   # swapped digits in an id
    ('{"booking": "ABC123"}', "ABD123"),              # an upper-case code is a name, not a hex number
    ('{"order": "ORD-482913"}', "ORD-482914"),        # a long number is not a sequence counter
])
def test_real_typos_are_still_found(seen, used):
    conv = _run([("get_booking", {"user": "mia_li_3668"}, seen), ("cancel", {"id": used}, '{"ok": true}')])
    found = _codes(conv, "mistyped_id")
    assert len(found) == 1 and used in found[0].evidence


FAIL = "Traceback (most recent call last):\n  File \"decrypt.py\", line 3\nNameError: name 'x' is not defined"


def test_a_rerun_after_editing_the_script_is_not_poisoning():
    run = ("Bash", {"command": "python decrypt.py"}, FAIL)
    edit = ("Edit", {"file_path": "/w/decrypt.py", "old_string": "x", "new_string": "y"}, "The file was updated.")
    assert _codes(_run([run, edit, run]), "repeated_failing_call") == []


def test_an_editor_whose_result_names_the_file_counts_as_an_edit():
    run = ("python", {"command": "python decrypt.py\n"}, FAIL)
    edit = ("edit", {"command": "edit 1:1\nprint(1)\nend_of_edit"}, "[File: /ctf/decrypt.py (3 lines total)]\n1:print(1)")
    assert _codes(_run([run, edit, run]), "repeated_failing_call") == []


def test_reruns_without_an_edit_of_a_file_they_use_are_still_poisoning():
    run = ("Bash", {"command": "python decrypt.py"}, FAIL)
    other = ("Edit", {"file_path": "/w/README.md", "old_string": "a", "new_string": "b"}, "The file was updated.")
    read = ("Read", {"file_path": "/w/decrypt.py"}, "1\tx = 1")
    found = _codes(_run([run, other, read, run]), "repeated_failing_call")
    assert len(found) == 1 and "failed 2 times" in found[0].evidence


def test_two_runs_around_an_edit_then_two_more_are_one_finding_for_the_last_two():
    run = ("Bash", {"command": "python decrypt.py"}, FAIL)
    edit = ("Write", {"file_path": "decrypt.py", "content": "print(2)"}, "File created successfully")
    found = _codes(_run([run, edit, run, run]), "repeated_failing_call")
    assert len(found) == 1 and found[0].messages[0] == 6


def test_the_real_ctf_trace_edits_decrypt_py_between_its_runs():
    conv = load(DATA / "swe_agent_ctf_baby_encryption.traj")
    runs = [i for i, m in enumerate(conv.messages) for c in m.tool_calls if c.name == "python"]
    assert len(runs) >= 2, "the trace runs decrypt.py more than once"
    assert _codes(conv, "repeated_failing_call") == []


def test_a_test_run_that_names_no_file_is_retried_after_any_edit():
    failing = ("Bash", {"command": "python -m pytest -q"}, "Error: 1 failed")
    edit = ("Edit", {"file_path": "/w/src/x.py", "old_string": "a", "new_string": "b"}, "The file was updated.")
    assert _codes(_run([failing, edit, failing]), "repeated_failing_call") == []
    assert len(_codes(_run([failing, ("Bash", {"command": "ls"}, "x.py"), failing]), "repeated_failing_call")) == 1


def test_sed_ranges_an_agent_pages_through_are_not_mistyped_ids():
    """mini-swe-agent pages through a file with sed -n ranges (63 of 68 false findings on
    one run were such ranges: "120p is one typo away from 220p")."""
    listing = "\n".join(f"{n}\t    def field_{n}(self):" for n in range(100, 120))
    steps = [("bash", {"command": "nl -ba src/marshmallow/fields.py | sed -n '100,120p'"}, listing),
             ("bash", {"command": "sed -n '120,220p' src/marshmallow/fields.py"}, listing),
             ("bash", {"command": "sed -n '200,260p' src/marshmallow/fields.py"}, listing),
             ("bash", {"command": "sed -n '250,260p' src/marshmallow/fields.py"}, listing)]
    assert _codes(_run(steps), "mistyped_id") == []


def test_a_one_letter_order_code_is_still_checked_outside_a_sed_range():
    conv = _run([("get_order", {"id": "W120p"}, '{"order": "120p"}'), ("refund", {"id": "220p"}, '{"ok": true}')])
    assert len(_codes(conv, "mistyped_id")) == 1
