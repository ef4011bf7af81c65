"""Sub-agent isolation measured on a real Claude Code session (marot/spotter, MIT; see
tests/data/coding/README.md): the parent as logged, each sub-agent in its own context, against the
same work inline in the parent; a cap on what a sub-agent returns."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.cli import main
from ctxlab.errors import CtxlabError
from ctxlab.subagents import isolation

PARENT = Path(__file__).parent.parent / "data" / "coding" / "claude_code_task_parent.jsonl"
SAMPLES = Path(__file__).parents[2] / "sample_data"


def test_inline_work_costs_the_parent_more_than_a_sub_agents_own_context():
    d = isolation(PARENT.read_bytes())
    (sub,) = d["subagents"]
    assert sub["calls"] >= 1 and sub["prompt_tokens"] > 0 and sub["tokens_back"] > 0
    iso, inline = d["isolated"], d["inline"]
    assert iso["total_prompt_tokens"] == iso["parent_prompt_tokens"] + iso["subagent_prompt_tokens"]
    assert inline["parent_calls"] == iso["parent_calls"] + sub["calls"]  # the parent makes the sub-agent's calls
    assert inline["parent_prompt_tokens"] > iso["parent_prompt_tokens"]
    assert inline["parent_largest_prompt"] >= iso["parent_largest_prompt"]
    assert d["parent_needs"]["not_in_parent"] == 0  # on the run as logged the parent had what it used


def test_a_return_cap_cuts_what_comes_back():
    full = isolation(PARENT.read_bytes())
    capped = isolation(PARENT.read_bytes(), return_cap=100)
    assert full["subagents"][0]["tokens_back"] > 500
    assert capped["subagents"][0]["tokens_back"] <= 130  # the cap and the marker that says so


def test_the_cli_prints_it_and_refuses_a_session_without_sub_agents(capsys):
    assert main(["subagents", str(PARENT), "--return-cap", "200"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["return_cap"] == 200 and doc["isolated"]["parent_calls"] >= 1
    assert main(["subagents", str(SAMPLES / "ecommerce_refund.json")]) == 2
    assert "ran no sub-agent" in capsys.readouterr().err
    with pytest.raises(CtxlabError):
        isolation((SAMPLES / "ecommerce_refund.json").read_bytes())
