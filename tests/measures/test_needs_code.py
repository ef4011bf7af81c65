"""Needs that fit code (issue 27): code names a later call types, and edits made by every means an
agent uses (sed, python .replace, apply_patch, SWE-agent's text-mode str_replace_editor, heredoc
rewrites). Each edit form is checked on a real snippet of a public trace, named beside it; the
conversation around it is cut to the read that showed the text and the call that edited it."""
from __future__ import annotations

import json

from ctxlab.code_facts import scrub_command, shell_edits, specific
from ctxlab.conversation import Message, ToolCall
from ctxlab.fidelity import extract_facts, needed_facts
from ctxlab.formats import load

from ..builders import system, user
from ..conftest import ROOT


def call(cid: str, name: str, args: dict) -> Message:
    return Message("assistant", "", tool_calls=(ToolCall(cid, name, json.dumps(args)),))


def result(cid: str, text: str) -> Message:
    return Message("tool", text, tool_call_id=cid)


def read_then(read: str, shown: str, edit: str, name: str = "bash", key: str = "command") -> list[Message]:
    """A user task, a read whose result shows ``shown``, then a call running ``edit``."""
    return [system("You are a coding agent."), user("Fix the issue."),
            call("c1", name, {key: read}), result("c1", shown),
            call("c2", name, {key: edit}), result("c2", "")]


def edit_needs(messages: list[Message]) -> list:
    return [n for n in needed_facts(messages).needs if n.lines]


# SWE-agent/mini-swe-agent fork gruckion/mini-swe-agent d12a71a (MIT), swebench_results/
# 20251118_gemini-3-pro-74pct/trajs/astropy__astropy-8707/astropy__astropy-8707.traj.json, messages 28-29 and 45.
ASTROPY_HEAD = """<returncode>0</returncode>
<output>
from .card import Card, _pad, KEYWORD_LENGTH, UNDEFINED
from .file import _File
from .util import encode_ascii, decode_ascii, fileobj_closed, fileobj_is_binary
from ._utils import parse_header
</output>"""
ASTROPY_SED = "sed -i 's/from .util import/from .util import decode_ascii,/' astropy/io/fits/card.py"


def test_a_sed_substitution_needs_the_text_it_replaces():
    needs = edit_needs(read_then("head -n 50 astropy/io/fits/header.py", ASTROPY_HEAD, ASTROPY_SED))
    assert [(n.source, n.needed_by, n.lines) for n in needs] == [(3, 4, ("from .util import",))]
    assert edit_needs(read_then("ls", "card.py header.py", ASTROPY_SED)) == [], "never shown: nothing to serve"


def test_a_sed_range_delete_needs_both_address_patterns():
    # same source, django__django-11299, message 95 (the test it deletes was shown by `cat` in message 44)
    cmd = ("sed -i '/def test_multilvl_check_constraint_sql/,/self.assertIn.*discounted_price/d' "
           "tests/constraints/tests.py")
    assert [lines for _, lines in shell_edits(cmd)] == [("def test_multilvl_check_constraint_sql",),
                                                        ("self.assertin", "discounted_price")]
    assert shell_edits("sed -i '68r tests/constraints/test_patch.py' tests/constraints/tests.py") == [], \
        "a file read in by `r` is no pattern"
    assert shell_edits("sed -i '75s/    sql/sql/' tests/constraints/tests.py") == [], "too short to tell"


# same source, scikit-learn__scikit-learn-12682, messages 14-15 (sed -n read) and 39 (the script).
SKLEARN_READ = """<returncode>0</returncode>
<output>
class SparseCodingMixin(TransformerMixin):
    \"\"\"Sparse coding mixin\"\"\"

    def _set_sparse_coding_params(self, n_components,
                                  transform_algorithm='omp',
                                  transform_n_nonzero_coefs=None,
                                  transform_alpha=None, split_sign=False,
                                  n_jobs=None, positive_code=False):
</output>"""
SKLEARN_SCRIPT = """cat <<'EOF' > update_mixin.py
file_path = 'sklearn/decomposition/dict_learning.py'
with open(file_path, 'r') as f:
    lines = f.readlines()
new_lines = []
for i, line in enumerate(lines):
    if 'transform_alpha=None, split_sign=False,' in line:
        new_lines.append(line.replace('transform_alpha=None, split_sign=False,',
                                      'transform_alpha=None, transform_max_iter=None,\\n                                  split_sign=False,'))
    else:
        new_lines.append(line)
with open(file_path, 'w') as f:
    f.writelines(new_lines)
EOF
python update_mixin.py"""


def test_a_python_replace_in_a_script_that_writes_the_file_needs_the_old_text():
    needs = edit_needs(read_then("sed -n '861,915p' sklearn/decomposition/dict_learning.py", SKLEARN_READ,
                                 SKLEARN_SCRIPT))
    assert [(n.source, n.lines) for n in needs] == [(3, ("transform_alpha=none, split_sign=false,",))]
    assert shell_edits("python -c \"print('a-b'.replace('-', '_'))\"") == [], "a replace that writes no file"


# SWE-agent/SWE-agent 3ea751c (MIT), docs/usage/hello_world_output.txt, steps 5-6: a text-mode action.
SWE_TRACEBACK = """Traceback (most recent call last):
  File "/SWE-agent__test-repo/tests/missing_colon.py", line 4
    def division(a: float, b: float) -> float
                                             ^
SyntaxError: expected ':'"""
SWE_ACTION = """str_replace_editor str_replace /SWE-agent__test-repo/tests/missing_colon.py   --old_str 'def division(a: float, b: float) -> float
    return a/b' --new_str 'def division(a: float, b: float) -> float:
    return a/b'"""


def test_swe_agent_text_mode_str_replace_needs_its_old_str():
    shown = "     1\t#!/usr/bin/env python3\n     4\tdef division(a: float, b: float) -> float\n     5\t    return a/b"
    (need,) = edit_needs(read_then("str_replace_editor view /SWE-agent__test-repo/tests/missing_colon.py", shown,
                                   SWE_ACTION, name="str_replace_editor"))
    assert (need.source, need.needed_by) == (3, 4)
    assert need.lines == ("def division(a: float, b: float) -> float", "return a/b")
    # the traceback shows the def line but not the body: no message holds the old text whole
    assert edit_needs(read_then("python reproduce_error.py", SWE_TRACEBACK, SWE_ACTION,
                                name="str_replace_editor")) == []


# openai/codex 7116353 (Apache-2.0), codex-rs/apply-patch/tests/fixtures/scenarios/003_multiple_chunks:
# input/multi.txt and patch.txt (the format's reference scenario; no public Codex session was found).
CODEX_FILE = "line1\nline2\nline3\nline4\n"
CODEX_PATCH = ("*** Begin Patch\n*** Update File: multi.txt\n@@\n-line2\n+changed2\n@@\n-line4\n+changed4\n"
               "*** End Patch\n")


def test_apply_patch_needs_each_hunks_old_lines():
    msgs = read_then("cat multi.txt", CODEX_FILE, CODEX_PATCH, name="apply_patch", key="input")
    assert [(n.source, n.lines) for n in edit_needs(msgs)] == [(3, ("line2",)), (3, ("line4",))]


def test_numbers_inside_a_patch_body_are_not_facts():
    """Issue 27: CSS numbers inside a Codex apply_patch were counted as needs."""
    patch = ("*** Begin Patch\n*** Update File: web/style.css\n@@ .card {\n-  padding: 1200px;\n"
             "+  padding: 1600px;\n*** End Patch")
    msgs = read_then("cat web/style.css", ".card {\n  padding: 1200px;\n  width: 1600px;\n}", patch,
                     name="apply_patch", key="input")
    facts = {n.fact for n in needed_facts(msgs).needs if not n.lines}
    assert "1200" not in facts and "1600" not in facts
    assert [n.lines for n in edit_needs(msgs)] == [(".card {", "padding: 1200px;")]


def test_a_heredoc_rewrite_of_a_file_read_earlier_needs_the_lines_it_keeps():
    """tests/data/coding/mini_swe_agent_github_issue.json (SWE-agent/mini-swe-agent a83fcae, MIT):
    message 12 reads tests/missing_colon.py with cat, message 18 rewrites it with cat > ... << 'EOF'."""
    conv = load(ROOT / "tests/data/coding/mini_swe_agent_github_issue.json", format="mini_swe_agent")
    rewrites = [n for n in needed_facts(conv).needs if n.lines and "(rewritten)" in n.fact]
    assert [(n.source, n.needed_by) for n in rewrites] == [(13, 18)]
    assert "def division(a: float, b: float) -> float:" in rewrites[0].lines
    assert all("cannot divide by zero" not in ln for ln in rewrites[0].lines), "the new lines are not needed"


def test_a_heredoc_writing_a_new_script_needs_nothing():
    new = "cat > reproduce.py <<'EOF'\nfrom astropy.io.fits import Header\nprint(Header.fromstring(b'x'))\nEOF"
    assert edit_needs(read_then("ls", "astropy setup.py", new)) == []


def test_code_names_from_a_tool_result_are_needs_when_specific():
    shown = "class EnumSerializer(BaseSerializer):\n    def serializer_factory(value): ...\n    def run(self): ..."
    typed = "grep -n 'EnumSerializer\\|serializer_factory\\|run\\|BaseSerializer' django/db/migrations/serializer.py"
    facts = {n.fact for n in needed_facts(read_then("cat serializer.py", shown, typed)).needs}
    assert {"EnumSerializer", "serializer_factory", "BaseSerializer"} <= facts
    assert "run" not in facts


def test_specific_names_and_not():
    assert all(specific(n) for n in ("EnumSerializer", "serializer_factory", "Header.fromstring", "numpy_handler.py",
                                     "_set_sparse_coding_params", "astropy.io.fits"))
    assert not any(specific(n) for n in ("__init__", "os.path.join", "self.assertEqual", "setup.py", "README",
                                         "completed", "isinstance", "self.value", "get_x",
                                         "HTTP_HOST", "--verbose"))


def test_a_name_the_agent_made_up_is_not_a_need():
    msgs = [system("You are a coding agent."), user("Fix it."),
            call("c1", "bash", {"command": "python -c 'new_lines_count = 3; print(new_lines_count)'"}),
            result("c1", "new_lines_count 3"),
            call("c2", "bash", {"command": "python -c 'print(new_lines_count)'"}), result("c2", "")]
    assert "new_lines_count" not in {n.fact for n in needed_facts(msgs).needs}


def test_todo_status_words_are_not_facts():
    """Issue 27: `completed`, `in_progress` of Claude Code's TodoWrite matched the user's prose."""
    todos = {"todos": [{"content": "Fix the parser", "status": "completed", "activeForm": "Fixing"},
                       {"content": "Run the tests", "status": "in_progress", "activeForm": "Running"}]}
    msgs = [system("Be brief."), user("Once the parser work is completed, run the tests in_progress mode."),
            call("c1", "TodoWrite", todos), result("c1", "ok")]
    assert needed_facts(msgs).needs == ()


def test_line_numbers_are_not_facts():
    """Issue 27: `280` from `CHANGES:280`; sed -n ranges, head -n, line offsets of a read."""
    assert "280" not in extract_facts("CHANGES:280: fixed the thing")
    assert "1200" in extract_facts("it costs 1200 dollars")
    grep = "src/marshmallow/fields.py:1474:        return int(value.total_seconds() / base_unit.total_seconds())"
    for typed in ("sed -n '1470,1480p' src/marshmallow/fields.py", "head -n 1474 src/marshmallow/fields.py",
                  "tail -n +1474 src/marshmallow/fields.py", "open src/marshmallow/fields.py 1474"):
        facts = {n.fact for n in needed_facts(read_then("grep -n total_seconds -r src", grep, typed)).needs}
        assert "1474" not in facts and "1470" not in facts, typed
        assert "src/marshmallow/fields.py" in facts
    assert "1474" not in scrub_command("Line 1474 is `return int(...)`")


def test_numbers_in_compact_json_stay_facts():
    """A colon before a number is a line number only after a name (``CHANGES:280``), not after a key."""
    assert "60000" in extract_facts('{"command":"mix test","timeout":60000}')
    assert "280" not in extract_facts("see x.py:280")


def test_a_commit_message_heredoc_keeps_its_facts():
    """marot/spotter 8cc42b0 (MIT), test/fixtures/transcripts/fa812bfe-....jsonl: the user names bead
    spotter-a0y, the agent's commit message (a heredoc fed to git commit) cites it."""
    commit = ("git commit -m \"$(cat <<'EOF'\nfeat: add lifecycle hooks and active session registry (spotter-a0y.1)"
              "\nEOF\n)\"")
    assert "spotter-a0y" in scrub_command(commit)
    assert "spotter-a0y" not in scrub_command("cat > notes.py <<'EOF'\nBEAD = 'spotter-a0y'\nEOF")
