"""diagnose on coding agents' traces: the false alarms of issue 17 are gone, true ones stay."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.conversation import Conversation, Message, ToolCall
from ctxlab.diagnostics import diagnose
from ctxlab.formats import load

DATA = Path(__file__).parent.parent / "data" / "coding"


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


# gruckion/mini-swe-agent d12a71a (MIT), swebench_results/20251118_gemini-3-pro-74pct/trajs: mini-swe-agent runs
# of Gemini 3 Pro. django__django-12209 messages 46, 60, 66; sphinx-doc__sphinx-10673 messages 59, 71, 75.
@pytest.mark.parametrize("commands", [
    ["sed -i '855s/$/ and/' django/db/models/base.py\n"
     "sed -i '856i\\            getattr(self._state, \"pk_default_used\", False)' django/db/models/base.py",
     "sed -i '857i\\            print(f\"DEBUG: force_insert={force_insert}\")' django/db/models/base.py",
     "sed -i '857d' django/db/models/base.py"],
    ["nl -ba sphinx/environment/adapters/toctree.py | sed -n '128,142p'",
     "sed -i '142r insert_toctree.py' sphinx/environment/adapters/toctree.py",
     "sed -i '142d' sphinx/environment/adapters/toctree.py"],
])
def test_sed_line_addresses_of_any_command_letter_are_not_mistyped_ids(commands):
    """Issue 27, re-measured on held-out runs: 29 of 29 mistyped-id findings were sed addresses whose
    command letter or line differed (857i after 856i, 142r after 142p)."""
    steps = [("bash", {"command": c}, "<returncode>0</returncode>") for c in commands]
    assert _codes(_run(steps), "mistyped_id") == []


def test_words_numbered_in_sequence_are_not_mistyped_ids_but_codes_are_checked():
    conv = _run([("bash", {"command": "grep -n 1-based docs/ref.txt"}, "12: positions are 1-based"),
                 ("bash", {"command": "grep -n 0-based docs/ref.txt"}, "")])
    assert _codes(conv, "mistyped_id") == []
    conv = _run([("get_booking", {"id": "4NQLHD"}, '{"id": "4NQLHD"}'), ("cancel", {"id": "5NQLHD"}, "ok")])
    assert len(_codes(conv, "mistyped_id")) == 1


def _oversized(conv: Conversation) -> list:
    return [f for f in diagnose(conv, provider="hash", modes=["distraction"]) if f.code == "oversized_results"]


def test_a_ranged_read_the_agent_edits_from_is_not_an_oversized_document():
    """django__django-16667 (same source), messages 10-13: nl -ba | sed -n '1010,1180p', then sed -i on
    that file. A whole file dumped with cat stays a finding."""
    listing = "\n".join(f"  {n}\t        year_val, month_val, day_val = data.get(y), data.get(m), data.get(d)"
                        for n in range(1010, 1180))
    small = [("bash", {"command": f"ls dir{k}"}, "a.py b.py") for k in range(6)]
    ranged = ("bash", {"command": "nl -ba django/forms/widgets.py | sed -n '1010,1180p'"}, listing)
    edit = ("bash", {"command": "sed -i 's/data.get(y), data.get(m)/data.get(y) or 0, data.get(m)/' "
                                "django/forms/widgets.py"}, "")
    assert _oversized(_run([*small, ranged, edit, ("bash", {"command": "python -m pytest"}, "ok")])) == []
    whole = ("bash", {"command": "cat django/forms/widgets.py"}, listing)
    assert len(_oversized(_run([*small, whole, edit, ("bash", {"command": "python -m pytest"}, "ok")]))) == 1


def test_line_counts_written_against_their_flag_are_not_mistyped_ids():
    steps = [("bash", {"command": "head -n40 src/app.py"}, "import os"),
             ("bash", {"command": "head -n400 src/app.py | tail -n40"}, "import os"),
             ("bash", {"command": "grep -A5 'def run' src/app.py && grep -A50 'def run' src/app.py"}, "def run():")]
    assert _codes(_run(steps), "mistyped_id") == []
