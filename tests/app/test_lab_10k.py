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


def test_prompts_per_call_go_on_a_log_scale_when_one_line_would_lie_flat():
    """After START a full-history trim sends the whole history inside a turn; before every call it
    stays under the limit: on a linear axis the second line lay along zero, under the limit's line."""
    from ctxlab.figures import LOG_SPREAD, prompt_per_call
    from ctxlab.i18n import translations
    from ctxlab.replay import replay
    conv = generate("ecommerce", turns=60, rounds_per_turn=9, result_tokens=300, seed=0)
    budget = Budget(8_000, 0.15, 0)
    s = get_strategy("sliding_window", **STRATEGIES["sliding_window"].scaled_defaults(budget))
    both = {w: replay(conv, dataclasses.replace(s, apply_at=w), budget) for w in ("every_call", "turn_start")}
    peaks = {w: max(c.tokens_after for c in rp.calls) for w, rp in both.items()}
    assert peaks["turn_start"] > LOG_SPREAD * peaks["every_call"]
    fig = prompt_per_call(both, budget.prompt_limit)
    assert fig.layout.yaxis.type == "log" and "log" in fig.layout.yaxis.title.text
    assert translations("zh").gettext(fig.layout.yaxis.title.text) != fig.layout.yaxis.title.text
    alike = prompt_per_call({"a": both["every_call"], "b": both["every_call"]}, budget.prompt_limit)
    assert alike.layout.yaxis.type != "log" and alike.layout.yaxis.rangemode == "nonnegative"
