"""The Lab's replay cache at scale: the newest call's prompt, which the Replay tab opens on, comes from
the replay's own pass (past the prompts a replay keeps, asking the replay for it replayed every call
again), and "Where it runs" measures the place the tab does not draw in one pass; both equal the
plain computation."""
from __future__ import annotations

import dataclasses

import pytest

import ctxlab.replay
from ctxlab.generate import generate
from ctxlab.llm import LLM
from ctxlab.strategies import STRATEGIES, Budget, get_strategy, make_view
from ctxlab.tokens import TokenCounter

from playground import lab_cache

from ..conftest import SAMPLES


def _setup(name: str, conv, limit: int):
    view = make_view(conv, counter=TokenCounter("gpt-4o"))
    budget = Budget(limit, 0.15, TokenCounter("gpt-4o").tools(conv.tools))
    strategy = get_strategy(name, **STRATEGIES[name].scaled_defaults(budget))
    return view, budget, strategy


CASES = [("generated", "tool_rounds", 4_000), ("generated", "summarize", 3_000),
         ("coding", "observation_masking", 4_000), ("coding", "clear_tool_results", 3_000)]


def _conv(which: str):
    if which == "coding":
        return ctxlab.load(SAMPLES / "coding" / "coding_agent_session.jsonl")
    return generate("ecommerce", turns=10, rounds_per_turn=5, result_tokens=300, seed=5)


@pytest.mark.parametrize("which,name,limit", CASES)
def test_the_newest_prompt_seen_in_the_replay_s_pass_is_the_replayed_one(monkeypatch, which, name, limit):
    monkeypatch.setattr(ctxlab.replay, "DETAIL_LIMIT", 10)  # as past 10,000 messages: few prompts kept
    conv = _conv(which)
    view, budget, strategy = _setup(name, conv, limit)
    llm = LLM()
    key = (f"newest-{which}-{name}", "gpt-4o", ())
    rp = lab_cache.lab_replay(key, lab_cache.strategy_key(strategy, llm), repr(budget), view, strategy, budget,
                              None, llm)
    last = len(rp.calls) - 1
    assert rp.kept_prompt(last) is None  # the case this is for
    shown = lab_cache.prompt_at(rp, last)
    replayed = rp.prompt(last)
    assert shown.messages == replayed.messages
    assert shown.origins == replayed.origins and shown.tokens == replayed.tokens

    def states(p):  # the table's "as written" / "replaced"
        return [o is None or m is conv.messages[o] for m, o in zip(p.messages, p.origins)]
    assert states(shown) == states(replayed)
    assert lab_cache.prompt_at(rp, 1).messages == rp.prompt(1).messages  # another call: kept, or replayed


@pytest.mark.parametrize("which,name,limit", CASES)
def test_where_it_runs_measures_the_other_place_in_one_pass_as_a_walk_does(which, name, limit):
    conv = _conv(which)
    view, budget, strategy = _setup(name, conv, limit)
    llm = LLM()
    key = (f"where-{which}-{name}", "gpt-4o", ())
    got = lab_cache.where_it_runs(key, repr(budget), "None", conv, view, strategy, budget, "gpt-4o", None, None, llm)
    for where, m in got.items():
        variant = dataclasses.replace(strategy, apply_at=where)
        walked = lab_cache.measures(key, lab_cache.strategy_key(variant, llm), repr(budget), "None", conv, view,
                                    variant, budget, "gpt-4o", None, None, llm)
        assert m.summary() == walked.summary()
        assert m.fidelity.to_dict() == walked.fidelity.to_dict()
        assert m.breaks == walked.breaks
        assert [c.to_dict() for c in m.replay.calls] == [c.to_dict() for c in walked.replay.calls]
