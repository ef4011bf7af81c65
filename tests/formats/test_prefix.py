"""The unlogged prefix (issue 26.1 and 26.4): what a trace does not log (Claude Code's system
prompt and tools) inferred from the bill, carried at the head of every prompt, overridable, and
checked against the bill per call, in the engine and on the CLI. On public files
(tests/data/coding, sources in its README)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.cli import main
from ctxlab.conversation import UNLOGGED
from ctxlab.formats import export, load
from ctxlab.prefix import PrefixError, apply_prefix, check_against_bill, infer_prefix, parse_override
from ctxlab.replay import replay
from ctxlab.strategies import STRATEGIES, get_strategy
from ctxlab.strategies.view import Budget
from ctxlab.tokens import TokenCounter

DATA = Path(__file__).parent.parent / "data" / "coding"
SUB = DATA / "claude_code_subagent_file.jsonl"  # a real sub-agent transcript with Anthropic's bill


def test_the_prefix_is_inferred_from_the_first_calls_bill():
    conv = load(SUB)
    prefix = infer_prefix(conv)
    assert prefix is not None and prefix.source == "inferred" and prefix.calls == 3
    first = next(m for m in conv.messages if m.usage is not None)
    assert 12_000 < prefix.tokens < first.usage.prompt_tokens  # the sub-agent's system prompt and tools
    assert prefix.factor > 1  # cl100k under-counts Claude: the growth factor is taken into account


def test_with_the_prefix_every_call_is_within_5_percent_of_the_bill():
    conv, prefix, notes = apply_prefix(load(SUB))
    assert prefix is not None and notes == [prefix.describe()]
    head = conv.messages[0]
    assert head.role == "system" and head.extra[UNLOGGED]["tokens"] == prefix.tokens
    assert TokenCounter(conv.model).message(head) == prefix.tokens  # its size is given, not counted
    checked = check_against_bill(conv)
    assert checked.calls and all(abs(c.estimate_error) <= 0.05 for c in checked.calls)
    before = check_against_bill(load(SUB))  # without the prefix the counts are far under the bill
    assert all(c.estimate_error < -0.5 for c in before.calls[:1])


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_the_prefix_is_never_removed_by_a_strategy(name):
    conv, prefix, _ = apply_prefix(load(SUB))
    budget = Budget(prefix.tokens + 3_000)
    r = replay(conv, get_strategy(name, **STRATEGIES[name].scaled_defaults(budget)), budget)
    for call in r.calls:
        assert 0 in r.origins_at(call.number)  # the segment is in every prompt sent
        assert call.tokens_after >= prefix.tokens


def test_notes_and_indexes_move_with_the_segment():
    raw = load(DATA / "claude_code_task_parent.jsonl")
    conv, prefix, _ = apply_prefix(raw)
    assert prefix is not None
    back = conv.metadata["subagents"][0]["returned_at"]
    assert back == raw.metadata["subagents"][0]["returned_at"] + 1
    assert conv.messages[back].extra["ctxlab_subagent"] == "aac57f5"
    assert any(f"message {back}" in n for n in conv.notes if "sub-agent" in n)


def test_the_user_overrides_it_with_a_number_or_a_file(tmp_path):
    conv, prefix, _ = apply_prefix(load(SUB), override=5_000)
    assert prefix.source == "given" and TokenCounter(conv.model).message(conv.messages[0]) == 5_000
    system = tmp_path / "system.txt"
    system.write_text("You are Claude Code. " * 50, encoding="utf-8")
    conv, prefix, _ = apply_prefix(load(SUB), override=parse_override(str(system)))
    assert prefix.source == "file" and conv.messages[0].text.startswith("You are Claude Code.")
    assert prefix.tokens == TokenCounter(conv.model).text(system.read_text())
    assert apply_prefix(load(SUB), override=0)[1] is None  # 0: none
    with pytest.raises(PrefixError, match="neither a number of tokens nor a file"):
        parse_override(str(tmp_path / "missing.txt"))


def test_without_a_bill_a_note_says_the_prompt_is_incomplete_and_by_how_much():
    conv = load(DATA / "claude_code_compact.jsonl")
    stripped = conv.with_messages([type(m)(m.role, m.content, m.name, m.tool_calls, m.tool_call_id, m.is_error, m.id,
                                           m.extra) for m in conv.messages])  # the same session, no usage
    out, prefix, notes = apply_prefix(stripped)
    assert prefix is None and out is stripped
    assert len(notes) == 1 and "incomplete" in notes[0] and "15,178-26,010" in notes[0]


def test_an_export_leaves_the_segment_out_with_a_note():
    raw = load(SUB)
    conv, _, _ = apply_prefix(raw)
    out = export(conv, "anthropic")
    assert out.data == export(raw, "anthropic").data  # the segment is a measure: nothing of it is sent
    assert any("unlogged prefix" in n for n in out.notes)


def _cli(capsys, *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_count_reports_the_prefix_and_each_calls_difference_from_the_bill(capsys):
    d = _cli(capsys, "count", str(SUB))
    assert d["unlogged_prefix"]["source"] == "inferred" and d["unlogged_prefix"]["tokens"] > 12_000
    usage = d["reported_usage"]
    assert usage["unlogged_prefix_tokens"] == d["unlogged_prefix"]["tokens"]
    assert all(abs(c["estimate_error"]) <= 0.05 for c in usage["calls"])
    assert usage["estimate_error_per_call"]["within_5pct"] == len(usage["calls"])
    none = _cli(capsys, "count", str(SUB), "--prefix", "0")
    assert none["unlogged_prefix"] is None and none["total_tokens"] < d["total_tokens"]


def test_replay_carries_the_prefix_in_every_call(capsys):
    d = _cli(capsys, "replay", str(SUB), "--strategy", "none")
    tokens = d["unlogged_prefix"]["tokens"]
    assert all(c["prompt_tokens"] > tokens for c in d["calls"])
    assert all("estimate_error" in c for c in d["reported_usage"]["calls"])


def test_count_gives_a_swe_agent_runs_billed_totals_beside_the_count(capsys):
    d = _cli(capsys, "count", str(DATA / "swe_agent_model_stats.traj"))
    total = d["billed_total"]
    assert total["billed_prompt_tokens"] == 7141 and total["billed_calls"] == total["counted_calls"] == 5
    assert abs(total["counted_prompt_tokens"] / 7141 - 1) < 0.05


def test_every_message_index_a_note_names_moves_with_the_segment():
    from dataclasses import replace
    conv = replace(load(SUB), notes=("messages 2, 4 and 6: a", "messages 1, 3 and 10 more (12 in all): b",
                                     "message 7: c", "the 12 messages are fine"))
    out = apply_prefix(conv)[0].notes
    assert out[:4] == ("messages 3, 5 and 7: a", "messages 2, 4 and 10 more (12 in all): b", "message 8: c",
                       "the 12 messages are fine")


def test_a_prefix_the_user_gives_is_checked_as_given():
    conv, prefix, _ = apply_prefix(load(SUB), override=5_000)
    calls = check_against_bill(conv).calls
    assert calls and all(c.prefix == 5_000 for c in calls)  # not inferred again from the bill
    assert prefix.factor > 1 and all(c.factor == pytest.approx(prefix.factor, abs=1e-4) for c in calls)  # still scaled
    assert all(c.estimate_error < -0.2 for c in calls)  # 5,000 is far too small for this sub-agent: it shows
