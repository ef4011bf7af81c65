"""One strategy at one budget gives the same figures in `ctxlab replay`, `ctxlab sweep` and the Strategy
Lab: parameters the user does not set are scaled to the budget everywhere (the documented peer defaults
one flag away), and a sweep reads every trace file a folder holds, subfolders included."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from ctxlab import load
from ctxlab.cli import main
from ctxlab.strategies import STRATEGIES, Budget
from ctxlab.sweep import Grid, load_conversations, run_sweep, trace_files
from ctxlab.tokens import TokenCounter

from ..conftest import ROOT, SAMPLES

SESSION = SAMPLES / "coding" / "coding_agent_session.jsonl"
CODING = ROOT / "tests" / "data" / "coding"


def _replay_cli(capsys, *extra: str) -> dict:
    assert main(["replay", str(SESSION), "--strategy", "clear_tool_results", "--max-tokens", "4000", *extra]) == 0
    out = capsys.readouterr()
    doc = json.loads(out.out)
    return (doc[0] if isinstance(doc, list) else doc), out.err


def test_replay_scales_defaults_to_the_budget_and_says_so(capsys):
    scaled, err = _replay_cli(capsys)
    peer, _ = _replay_cli(capsys, "--peer-defaults")
    assert scaled["defaults"] == "budget_scaled" and peer["defaults"] == "peer"
    assert "trigger_tokens=" in err and "--peer-defaults" in err
    assert peer["params"]["trigger_tokens"] == 100_000  # Anthropic's documented trigger: never acts at 4,000
    assert scaled["params"]["trigger_tokens"] < 4000
    assert peer["times_triggered"] == 0 and peer["calls_over_limit"] > 0
    assert scaled["times_triggered"] > 0 and scaled["calls_over_limit"] < peer["calls_over_limit"]


def test_replay_and_sweep_agree_on_one_point(capsys):
    cli, _ = _replay_cli(capsys)
    conv = load(SESSION)
    point = run_sweep([conv], Grid.parse(["clear_tool_results"], []), [4000], workers=1).points[0]
    assert point["params"]["trigger_tokens"] == cli["params"]["trigger_tokens"]
    assert point["calls_over_limit"] == cli["calls_over_limit"]
    assert point["calls"] == len(cli["calls"])
    assert point["needed_recall"] == pytest.approx(cli["needed_recall"])
    assert point["input_tokens_total"] == cli["cost"]["input_tokens"]


def test_the_lab_starts_from_the_same_scaled_values():
    pytest.importorskip("streamlit")
    import sys
    sys.path.insert(0, str(ROOT))
    from playground.widgets import default_values
    conv = load(SESSION)
    budget = Budget(4000, 0.15, TokenCounter(conv.model).tools(conv.tools))
    lab = default_values("clear_tool_results", "scaled", budget)
    point = run_sweep([conv], Grid.parse(["clear_tool_results"], []), [4000], workers=1).points[0]
    assert lab["trigger_tokens"] == point["params"]["trigger_tokens"]
    assert lab == {**{s["name"]: s["default"] for s in STRATEGIES["clear_tool_results"].schema()}, **lab}


def test_a_sweep_folder_takes_traj_files_and_subfolders(tmp_path):
    day = tmp_path / "2026" / "11" / "28"  # Codex's layout
    day.mkdir(parents=True)
    shutil.copy(CODING / "codex_rollout.jsonl", day / "rollout-1.jsonl")
    shutil.copy(CODING / "swe_agent_function_calling.traj", tmp_path / "run.traj")
    (tmp_path / "notes.txt").write_text("not a trace")
    notes: list[str] = []
    found = trace_files(tmp_path, notes)
    assert [f.relative_to(tmp_path).as_posix() for f in found] == ["2026/11/28/rollout-1.jsonl", "run.traj"]
    assert any("1 file" in n and "skipped" in n for n in notes)
    assert len(load_conversations([str(tmp_path)], notes=notes)) == 2


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_links_that_loop_or_reach_a_device_are_noted_not_followed(tmp_path):
    shutil.copy(CODING / "codex_rollout.jsonl", tmp_path / "a.jsonl")
    (tmp_path / "loop").symlink_to(tmp_path)
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    notes: list[str] = []
    found = trace_files(tmp_path, notes)
    assert [f.name for f in found] == ["a.jsonl"]
    assert any("loop" in n for n in notes) and any("zero.json" in n and "not a regular file" in n for n in notes)


def test_a_file_over_the_size_limit_is_noted_before_it_is_read(tmp_path):
    shutil.copy(CODING / "codex_rollout.jsonl", tmp_path / "a.jsonl")
    with open(tmp_path / "big.jsonl", "wb") as f:  # sparse: 3 GB on paper, nothing on disk
        f.truncate(3 * 1024 ** 3)
    notes: list[str] = []
    convs = load_conversations([str(tmp_path)], max_bytes=1_000_000, notes=notes)
    assert len(convs) == 1
    assert any("big.jsonl" in n and "limit" in n for n in notes)


def test_a_conversation_that_fails_during_the_sweep_is_named_with_its_file(tmp_path, monkeypatch):
    import ctxlab.sweep as sweep
    from ctxlab.errors import CtxlabError
    shutil.copy(CODING / "codex_rollout.jsonl", tmp_path / "a.jsonl")
    shutil.copy(CODING / "swe_agent_function_calling.traj", tmp_path / "b.traj")
    convs = load_conversations([str(tmp_path)])
    real = sweep.needed_facts

    def fails_on_b(conv):
        if str(conv.metadata.get(sweep.SOURCE_KEY, "")).endswith("b.traj"):
            raise CtxlabError("a message the counter cannot read", where="$.history[3]")
        return real(conv)
    monkeypatch.setattr(sweep, "needed_facts", fails_on_b)
    with pytest.raises(sweep.SweepError, match=r"conversation 1 \(.*b\.traj\): \$\.history\[3\]: a message"):
        run_sweep(convs, Grid.parse(["sliding_window"], []), [4000], workers=1)


def test_a_sweep_counts_a_traces_unlogged_prefix_as_the_cli_and_pages_do(capsys):
    from ctxlab.prefix import has_prefix
    path = CODING / "claude_code_task_parent.jsonl"  # a Claude Code session that logs the bill, not the prompt
    (conv,) = load_conversations([str(path)])
    assert has_prefix(conv.messages)
    point = run_sweep([conv], Grid.parse(["sliding_window"], []), [200_000], workers=1).points[0]
    assert main(["replay", str(path), "--strategy", "sliding_window", "--max-tokens", "200000"]) == 0
    doc = json.loads(capsys.readouterr().out)
    cli = doc[0] if isinstance(doc, list) else doc
    assert point["input_tokens_total"] == cli["cost"]["input_tokens"]
    assert point["calls"] == len(cli["calls"])
