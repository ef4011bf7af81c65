"""Cost over a conversation's life with the providers' prompt-cache rules, on conversations where
the answer can be worked out by hand, and the price table (bundled, file, override)."""
from __future__ import annotations

import json

import pytest

from ctxlab.conversation import Message, ToolCall
from ctxlab.pricing import (Price, PriceError, load_prices, parse_price_override, parse_prices, replay_cost)
from ctxlab.replay import replay
from ctxlab.strategies import Budget, get_strategy
from ctxlab.tokens import TokenCounter

from ..builders import system, user
from ..conftest import SAMPLES

POLICY = "Policy: " + " ".join(f"rule {k} says be kind and precise." for k in range(300))  # ~2,400 tokens


def turns(n: int, words: int = 150) -> list[Message]:
    """A system prompt, then ``n`` turns of user question, one tool round, answer."""
    out = [system(POLICY)]
    for k in range(n):
        out += [user(f"question {k}: " + "lorem " * words),
                Message("assistant", "", tool_calls=(ToolCall(f"c{k}", "lookup", "{}"),)),
                Message("tool", "result " * words, tool_call_id=f"c{k}"),
                Message("assistant", f"answer {k}")]
    return out


OPENAI = Price("test-openai", input=2.0, output=8.0, cached_input=0.5, cache="openai", cache_min_tokens=1024)
ANTHROPIC = Price("test-anthropic", input=3.0, output=15.0, cached_input=0.3, cache_write=3.75, cache="anthropic",
                  cache_min_tokens=1024)


def test_openai_serves_the_shared_prefix_in_128_token_steps():
    conv = turns(3)
    r = replay(conv, "none", Budget(100_000))
    report = replay_cost(r, conv, model="gpt-4o", price=OPENAI)
    counter = TokenCounter("gpt-4o")
    tok = counter.count(conv, tools=()).message_tokens
    first, second = report.calls[0], report.calls[1]
    assert first.cached_tokens == 0                              # a cold cache
    shared = sum(tok[:3])                                        # system, user, the first call (the same messages)
    assert second.cached_tokens == shared // 128 * 128 and second.cached_tokens >= 1024
    assert second.uncached_tokens == second.prompt_tokens - second.cached_tokens
    assert second.output_tokens == tok[4]
    assert second.cost_usd == pytest.approx((second.uncached_tokens * 2 + second.cached_tokens * 0.5 + tok[4] * 8) / 1e6)
    assert report.cost_usd == pytest.approx(sum(c.cost_usd for c in report.calls))
    assert len(report.calls) == 6                                # two calls a turn


def test_a_prompt_under_1024_tokens_is_never_cached_by_openai():
    conv = [system("Be brief."), *turns(2, words=20)[1:]]
    report = replay_cost(replay(conv, "none", Budget(100_000)), conv, model="gpt-4o", price=OPENAI)
    assert all(c.prompt_tokens < 1024 for c in report.calls)
    assert report.cached_tokens == 0 and report.cached_share == 0


def test_anthropic_reads_the_previous_prompt_and_writes_the_rest_at_the_surcharge():
    conv = turns(3)
    report = replay_cost(replay(conv, "none", Budget(100_000)), conv, model="gpt-4o", price=ANTHROPIC)
    first, second = report.calls[0], report.calls[1]
    assert first.cached_tokens == 0 and first.cache_write_tokens == first.prompt_tokens - 3  # all but reply priming
    assert second.cached_tokens == first.prompt_tokens - 3       # the whole previous prompt
    assert second.cache_write_tokens == second.prompt_tokens - 3 - second.cached_tokens


def test_a_strategy_that_rewrites_the_start_every_turn_saves_tokens_but_costs_more_on_anthropic():
    conv = turns(8)
    none = replay_cost(replay(conv, "none", Budget(100_000)), conv, model="gpt-4o", price=ANTHROPIC)
    window = replay(conv, get_strategy("sliding_window"), Budget(3_600))
    assert window.times_triggered >= 4
    cut = replay_cost(window, conv, model="gpt-4o", price=ANTHROPIC)
    assert cut.input_tokens < none.input_tokens                   # fewer tokens sent ...
    assert cut.cached_share < none.cached_share
    assert cut.cost_usd > none.cost_usd                           # ... but the lost cache costs more


def test_a_model_without_a_price_gets_tokens_and_says_there_is_no_price():
    conv = turns(2)
    report = replay_cost(replay(conv, "none", Budget(100_000)), conv, model="llama", price=load_prices())
    assert report.price is None and report.cost_usd is None
    assert report.input_tokens > 0
    assert "no price for model 'llama'" in report.to_dict()["no_price"]


def test_the_bundled_table_is_dated_and_resolves_snapshots():
    table = load_prices()
    assert table.get("gpt-4o-2024-08-06").input == table.get("gpt-4o").input == 2.5
    assert table.get("claude-sonnet-4-20250514").cache == "anthropic"
    assert table.get("claude-haiku-4-5").cache_min_tokens == 2048
    assert all(s.get("read") and s.get("url") for s in table.sources.values())
    assert table.get("gpt-4o").source.startswith("https://")


def test_a_price_file_overrides_the_bundled_one(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {"gpt-4o": {"provider": "openai", "input": 1, "cached_input": 0.1,
                                                      "output": 2}}}))
    table = load_prices(path)
    assert table.get("gpt-4o").input == 1 and table.get("gpt-4.1").input == 2.0


def test_an_override_from_the_command_line_takes_the_cache_rule_of_the_model():
    p = parse_price_override("input=2.5,cached=1.25,output=10", "gpt-4o")
    assert (p.input, p.cached_input, p.output, p.cache) == (2.5, 1.25, 10.0, "openai")
    assert parse_price_override("input=3,cached=0.3,write=3.75,output=15", "claude-sonnet-4").cache == "anthropic"


@pytest.mark.parametrize("text, where", [("input=abc,output=1", "--price"), ("input=1", "--price"),
                                          ("cost=1,input=1,output=1", "--price")])
def test_bad_overrides_say_what_to_write(text, where):
    with pytest.raises(PriceError) as e:
        parse_price_override(text, "gpt-4o")
    assert where in str(e.value)


def test_a_bad_price_table_names_the_entry():
    with pytest.raises(PriceError, match=r"models.x.input"):
        parse_prices({"models": {"x": {"input": "cheap", "output": 1}}})


def test_ctxlab_replay_reports_needed_recall_and_cost_beside_none(capsys):
    from ctxlab.cli import main
    sample = str(SAMPLES / "ecommerce_refund.json")
    assert main(["replay", sample, "--strategy", "sliding_window", "--max-tokens", "4000"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert 0 < out["needed_recall"] < 1 and out["fidelity"]["misses"]
    assert out["cost"]["input_tokens"] < out["cost_none"]["input_tokens"]
    assert out["cost"]["cost_usd"] > 0 and out["cost"]["price"]["model"] == "gpt-4o"
    assert main(["replay", sample, "--strategy", "none", "--price", "input=1,cached=0,output=0"]) == 0
    cheap = json.loads(capsys.readouterr().out)["cost"]
    assert cheap["cost_usd"] == pytest.approx((cheap["input_tokens"] - cheap["cached_tokens"]) / 1e6)


def agent_turn(rounds: int, words: int = 150) -> list[Message]:
    """A system prompt, one task, then ``rounds`` tool rounds and an answer: one turn of many calls."""
    out = [system(POLICY), user("task: fix the failing test")]
    for k in range(rounds):
        out += [Message("assistant", "", tool_calls=(ToolCall(f"c{k}", "run", f'{{"step":{k}}}'),)),
                Message("tool", f"output {k} " + "log " * words, tool_call_id=f"c{k}")]
    return out + [Message("assistant", "done")]


def test_calls_inside_one_turn_share_their_prefix_when_nothing_is_rewritten():
    conv = agent_turn(6)
    tok = TokenCounter("gpt-4o").count(conv, tools=()).message_tokens
    report = replay_cost(replay(conv, "none", Budget(100_000)), conv, model="gpt-4o", price=OPENAI)
    assert len(report.calls) == 7 and {c.turn for c in report.calls} == {0}  # seven calls, one turn
    for k, c in enumerate(report.calls[1:], 1):  # call k's prompt extends call k-1's by one round
        shared = sum(tok[:2 + 2 * (k - 1)])  # the previous prompt, whole
        assert c.cached_tokens == shared // 128 * 128


def test_a_strategy_that_rewrites_the_start_at_every_call_pays_for_it():
    """tool_rounds keep_rounds=1 before every call drops the round after the task each time, so only
    the system prompt and the task stay shared; at turn start it runs once and the prefix holds."""
    conv = agent_turn(6)
    tok = TokenCounter("gpt-4o").count(conv, tools=()).message_tokens
    head = sum(tok[:2])  # system prompt and task: the part every prompt keeps
    every = replay_cost(replay(conv, get_strategy("tool_rounds", keep_rounds=1), Budget(100_000)), conv,
                        model="gpt-4o", price=OPENAI)
    start = replay_cost(replay(conv, get_strategy("tool_rounds", keep_rounds=1, apply_at="turn_start"),
                               Budget(100_000)), conv, model="gpt-4o", price=OPENAI)
    none = replay_cost(replay(conv, "none", Budget(100_000)), conv, model="gpt-4o", price=OPENAI)
    assert [c.cached_tokens for c in every.calls[2:]] == [head // 128 * 128] * 5  # the rest was rewritten
    assert [c.cached_tokens for c in start.calls] == [c.cached_tokens for c in none.calls]
    assert every.input_tokens < none.input_tokens and every.cached_share < none.cached_share
