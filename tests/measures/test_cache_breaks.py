"""Which step broke the prompt cache, and what it cost: on a real SWE-agent run, observation masking
before every call breaks the prefix at almost every call, polling in steps of 5 far less often, and
sending everything never."""
from __future__ import annotations

import json
from pathlib import Path

import ctxlab
from ctxlab.cache_breaks import cache_breaks, summary
from ctxlab.cli import main
from ctxlab.pricing import Price
from ctxlab.replay import replay
from ctxlab.strategies import Budget, get_strategy

# SWE-agent/SWE-agent @3ea751c (MIT): a text-action CTF run with 15 observations
TRACE = Path(__file__).parent.parent / "data" / "coding" / "swe_agent_ctf_baby_encryption.traj"
PRICE = Price("test", input=2.0, output=8.0, cached_input=0.5, cache="openai")


def _breaks(strategy):
    conv = ctxlab.load(TRACE)
    r = replay(conv, strategy, Budget(32_000), model="gpt-4o")
    return r, cache_breaks(r, conv, model="gpt-4o", price=PRICE)


def test_sending_everything_never_breaks_the_cache():
    assert _breaks(get_strategy("none"))[1] == []


def test_each_break_names_the_message_and_the_action_that_caused_it():
    r, found = _breaks(get_strategy("observation_masking", window=3))
    assert len(found) >= 8
    for b in found:
        assert not r.calls[b.call].extends_previous
        assert b.cause == "clear" and r.cell(b.call, b.origin) == "clear"  # the observation masked at that call
        assert r.cell(b.call - 1, b.origin) == "keep"                        # sent whole the call before
        assert b.tokens_lost > 0 and b.cost_usd == b.tokens_lost * 1.5 / 1_000_000


def test_polling_breaks_the_prefix_less_often_and_loses_fewer_cached_tokens():
    every = summary(_breaks(get_strategy("observation_masking", window=3))[1])
    polled = summary(_breaks(get_strategy("observation_masking", window=3, polling=5))[1])
    assert polled["breaks"] < every["breaks"] and polled["tokens_lost"] < every["tokens_lost"]
    assert every["by_cause"]["clear"]["breaks"] == every["breaks"]


def test_the_cli_replay_reports_the_breaks(capsys):
    assert main(["replay", str(TRACE), "--strategy", "observation_masking", "--param", "window=3",
                 "--max-tokens", "32000", "--price", "input=2,cached=0.5,output=8"]) == 0
    doc = json.loads(capsys.readouterr().out)
    doc = doc[0] if isinstance(doc, list) else doc
    breaks = doc["cache_breaks"]
    assert breaks["breaks"] == len(breaks["calls"]) >= 8
    assert {"call", "position", "origin", "cause", "tokens_lost", "cost_usd"} <= set(breaks["calls"][0])
