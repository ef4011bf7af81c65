"""A coding agent's trace in the app: pasted (as an upload gives it), read with its notes, and
planned by a condenser in the Strategy Lab."""
from __future__ import annotations

from ..conftest import ROOT
from .helpers import APP_TIMEOUT, open_page

SESSION = ROOT / "sample_data" / "coding" / "coding_agent_session.jsonl"
SWE = ROOT / "tests" / "data" / "coding" / "swe_agent_ctf_baby_encryption.traj"


def _use(at, text: str) -> None:
    at.radio(key="source").set_value("paste").run()
    at.text_area(key="paste_text").input(text).run()
    at.button(key="use_paste").click().run()
    assert not at.exception, at.exception


def test_a_claude_code_session_loads_with_its_notes(monkeypatch):
    at = open_page("token_counts.py", monkeypatch)
    _use(at, SESSION.read_text(encoding="utf-8"))
    shown = " ".join(t.value for t in at.text)
    assert "Claude Code logs no system prompt" in shown
    assert not at.error


def test_a_swe_agent_trajectory_is_planned_by_observation_masking(monkeypatch):
    at = open_page("strategy_lab.py", monkeypatch)
    _use(at, SWE.read_text(encoding="utf-8"))
    at.selectbox(key="lab_strategy").set_value("observation_masking").run()
    assert not at.exception, at.exception
    reasons = next(d.value for d in at.dataframe if "reason" in d.value.columns)["reason"].tolist()
    assert any(r.startswith("masked: observation 1 of 15") for r in reasons)


def test_the_lab_shows_a_coding_runs_task_as_kept(monkeypatch):
    at = open_page("strategy_lab.py", monkeypatch)
    _use(at, SESSION.read_text(encoding="utf-8"))
    table = next(d.value for d in at.dataframe if "reason" in d.value.columns)
    first = table.iloc[0]
    assert first["content"].startswith("[the run's task, kept]") and first["action"] == "kept"


def test_the_lab_takes_the_model_a_trace_ran(monkeypatch):
    import json
    from ..formats.test_trace_truth import _mini_run
    at = open_page("strategy_lab.py", monkeypatch)
    assert at.session_state["model"] == "gpt-4o"
    _use(at, json.dumps(_mini_run()))  # a mini-swe-agent run of openai/gpt-5-mini
    assert at.session_state["model"] == "gpt-5-mini"
    assert any("taken from the trace" in c.value for c in at.caption)


def test_the_unlogged_prefix_is_the_first_message_of_a_billed_session(monkeypatch):
    at = open_page("token_counts.py", monkeypatch)
    _use(at, (ROOT / "tests" / "data" / "coding" / "claude_code_subagent_file.jsonl").read_text(encoding="utf-8"))
    table = next(d.value for d in at.dataframe if "tokens" in d.value.columns)
    head = table.iloc[0]
    assert head["text"].startswith("(unlogged: system prompt and tools") and head["tokens"] > 12_000


def test_a_sub_agent_is_picked_in_the_sidebar_and_replayed(monkeypatch):
    at = open_page("strategy_lab.py", monkeypatch)
    _use(at, (ROOT / "tests" / "data" / "coding" / "claude_code_task_parent.jsonl").read_text(encoding="utf-8"))
    picker = at.selectbox(key="subagent_pick")
    assert picker.options[1].startswith("aac57f5: Search hex.pm") and "tokens back" in picker.options[1]
    main = at.session_state["conversation_text"]
    picker.set_value("aac57f5").run()
    assert not at.exception, at.exception
    assert at.session_state["conversation_text"] != main
    assert "sub-agent aac57f5" in at.session_state["conversation_label"]
    table = next(d.value for d in at.dataframe if "reason" in d.value.columns)
    assert "hex.pm" in " ".join(table["content"].astype(str))  # the sub-agent's own task, planned in the Lab
    at.selectbox(key="subagent_pick").set_value("").run()
    assert at.session_state["conversation_text"] == main


def test_token_counts_checks_each_call_against_the_bill(monkeypatch):
    at = open_page("token_counts.py", monkeypatch)
    _use(at, (ROOT / "tests" / "data" / "coding" / "claude_code_subagent_file.jsonl").read_text(encoding="utf-8"))
    assert any("3 of 3 calls within 5%" in c.value for c in at.caption)


def test_the_lab_replay_shows_each_calls_estimate_against_the_bill(monkeypatch):
    at = open_page("strategy_lab.py", monkeypatch)
    _use(at, (ROOT / "tests" / "data" / "coding" / "claude_code_subagent_file.jsonl").read_text(encoding="utf-8"))
    at.session_state["lab_tab"] = "Replay call by call"
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    billed = next(d.value for d in at.dataframe if "error vs bill" in d.value.columns)
    errors = [float(e.rstrip("%")) for e in billed["error vs bill"]]
    assert len(errors) == 3 and all(abs(e) <= 5 for e in errors)
    assert billed["counted"].min() > 13_000  # every call's count holds the unlogged prefix


def test_tune_sweeps_a_billed_session_with_its_unlogged_prefix(monkeypatch):
    from .helpers import run_tune_sweep
    at = open_page("tune.py", monkeypatch)
    at.radio(key="tune_set").set_value("upload").run()
    sub = ROOT / "tests" / "data" / "coding" / "claude_code_subagent_file.jsonl"
    at.file_uploader(key="tune_upload").set_value([(sub.name, sub.read_bytes(), "application/json")]).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    run_tune_sweep(at)
    table = next(d.value for d in at.dataframe if "worst_prompt" in d.value.columns)
    assert (table["worst_prompt"] > 13_000).all()  # every point's prompts hold the ~13.7k unlogged tokens


def test_the_user_sets_the_unlogged_prefix_and_every_page_follows(monkeypatch):
    from streamlit.testing.v1 import AppTest
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)  # the whole app: pages in one session
    at.run()
    at.switch_page("pages/token_counts.py").run()
    _use(at, (ROOT / "tests" / "data" / "coding" / "claude_code_subagent_file.jsonl").read_text(encoding="utf-8"))
    (box,) = [n for n in at.number_input if n.label == "Unlogged system prompt and tools (tokens)"]
    inferred = box.value
    assert inferred > 12_000
    box.set_value(20_000).run()
    assert not at.exception, at.exception
    table = next(d.value for d in at.dataframe if "tokens" in d.value.columns)
    assert table.iloc[0]["tokens"] == 20_000 and "as given" in table.iloc[0]["text"]
    at.switch_page("pages/strategy_lab.py").run()
    assert not at.exception, at.exception
    lab = next(d.value for d in at.dataframe if "reason" in d.value.columns)
    assert "~20,000 tokens, as given" in lab["content"].iloc[0]  # the Lab plans with the size the user gave
    at.switch_page("pages/token_counts.py").run()
    at.button(key="prefix_reset").click().run()
    table = next(d.value for d in at.dataframe if "tokens" in d.value.columns)
    assert table.iloc[0]["tokens"] == inferred
