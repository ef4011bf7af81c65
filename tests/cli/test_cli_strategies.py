"""The strategy CLI contract: `strategies`, `apply`, `replay`."""
from __future__ import annotations

import json

import pytest

from ctxlab.cli import main
from ctxlab.strategies import STRATEGIES

from ..conftest import SAMPLES

SAMPLE = str(SAMPLES / "ecommerce_refund.json")


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_strategies_lists_every_strategy_with_a_parameter_schema(capsys):
    code, out, _ = _run(capsys, "strategies")
    assert code == 0
    listed = json.loads(out)
    assert [s["name"] for s in listed] == list(STRATEGIES)
    window = next(s for s in listed if s["name"] == "sliding_window")
    ratio = next(p for p in window["params"] if p["name"] == "buffer_ratio")
    assert ratio["type"] == "float" and ratio["default"] == 0.1 and ratio["max"] == 0.9 and ratio["help"]


def test_apply_prints_the_contract_keys(capsys):
    code, out, err = _run(capsys, "apply", SAMPLE, "--strategy", "sliding_window", "--max-tokens", "8000")
    assert code == 0, err
    d = json.loads(out)
    for key in ("strategy", "params", "budget", "before", "after", "decisions", "messages", "findings", "warnings",
                "retention"):
        assert key in d, key
    assert d["budget"]["max_tokens"] == 8000 and d["budget"]["reserve"] == 0.15
    assert d["budget"]["available"] == int(8000 * 0.85) - d["budget"]["tools_tokens"] - 3
    assert d["after"]["tokens"] <= int(8000 * 0.85) < d["before"]["tokens"]
    assert len(d["decisions"]) == d["before"]["messages"] == 22
    assert {x["action"] for x in d["decisions"]} == {"keep", "drop"}
    assert all(x["reason"] for x in d["decisions"])
    assert len(d["messages"]["messages"]) == d["after"]["messages"]
    assert d["findings"] == []


def test_apply_the_model_sets_the_limit_and_max_tokens_overrides_it(capsys):
    d = json.loads(_run(capsys, "apply", SAMPLE, "--strategy", "none", "--model", "gpt-4")[1])
    assert d["budget"]["max_tokens"] == 8192
    d = json.loads(_run(capsys, "apply", SAMPLE, "--strategy", "none", "--model", "gpt-4", "--max-tokens", "100000")[1])
    assert d["budget"]["max_tokens"] == 100000 and d["warnings"] == []


def test_apply_a_pipeline_with_prefixed_parameters(capsys):
    code, out, err = _run(capsys, "apply", SAMPLE, "--strategy", "turn_safe >> sliding_window",
                          "--param", "turn_safe.last_n=6", "--param", "sliding_window.buffer_ratio=0.3",
                          "--max-tokens", "6000")
    assert code == 0, err
    d = json.loads(out)
    assert d["strategy"] == "turn_safe >> sliding_window"
    assert d["params"]["steps"][1]["params"]["buffer_ratio"] == 0.3


def test_apply_to_anthropic_uses_anthropic_rules(capsys):
    d = json.loads(_run(capsys, "apply", SAMPLE, "--strategy", "sliding_window", "--max-tokens", "6000",
                        "--to", "anthropic")[1])
    assert "system" in d["messages"] and d["findings"] == []


@pytest.mark.parametrize("argv,needle", [
    (["--strategy", "nope"], "Known strategies"),
    (["--strategy", "sliding_window", "--param", "buffer_ratio=2"], "at most 0.9"),
    (["--strategy", "sliding_window", "--param", "buffer_ratio=lots"], "must be float"),
    (["--strategy", "sliding_window", "--param", "nope=1"], "buffer_ratio"),
    (["--strategy", "turn_safe >> sliding_window", "--param", "buffer_ratio=0.2"], "ambiguous"),
    (["--strategy", "none", "--reserve", "1.5"], "reserve"),
    (["--strategy", "none", "--pin", "99"], "pinned index 99"),
])
def test_apply_bad_parameters_exit_2_with_one_line(capsys, argv, needle):
    code, out, err = _run(capsys, "apply", SAMPLE, *argv)
    assert code == 2 and out == ""
    assert needle in err and err.count("\n") == 1


def test_replay_prints_every_model_call_with_its_fit_and_the_state_matrix(capsys):
    code, out, err = _run(capsys, "replay", SAMPLE, "--strategy", "summarize", "--max-tokens", "8000")
    assert code == 0, err
    d = json.loads(out)
    assert d["apply_at"] == "every_call" and len(d["calls"]) == len(d["matrix"]) == 10  # ten assistant messages
    assert all(len(row) == 22 for row in d["matrix"])
    assert d["matrix"][0][-1] == "future" and any("summarize" in row for row in d["matrix"])
    assert d["calls_over_limit"] == sum(c["over_limit"] for c in d["calls"])
    assert d["fits"] == (d["calls_over_limit"] == 0)
    applied = [c for c in d["calls"] if c["triggered"]]
    assert applied and all(c["prompt_tokens"] < c["tokens_before"] for c in applied)
    assert d["history"][-1]["tokens_saved"] == d["history"][-1]["tokens_before"] - d["history"][-1]["tokens_after"]


def test_replay_at_turn_start_runs_once_per_user_message_and_reports_the_overflow(capsys):
    code, out, err = _run(capsys, "replay", SAMPLE, "--strategy", "sliding_window", "--max-tokens", "4000",
                          "--apply-at", "turn_start")
    assert code == 0, err
    d = json.loads(out)
    assert d["apply_at"] == "turn_start" and d["applications"] == 2  # the sample has two user turns
    assert not d["fits"] and d["calls_over_limit"] > 0
    assert "model calls are over the" in err
    every = json.loads(_run(capsys, "replay", SAMPLE, "--strategy", "sliding_window", "--max-tokens", "4000")[1])
    assert every["fits"] and every["calls_over_limit"] == 0
