"""The coding agents' condensers: observation_masking, recent_events, amortized_forgetting.
Properties over generated conversations (as tests/strategies/test_strategy_invariants.py), their own rules on
hand-made and real traces, composition with ``>>``."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxlab.conversation import Message, ToolCall
from ctxlab.formats import load
from ctxlab.strategies import Budget, get_strategy, make_view
from ctxlab.validate import validate
from .test_strategy_invariants import COUNTER, conversations, strategy_params

CONDENSERS = ["observation_masking", "recent_events", "amortized_forgetting", "llm_attention"]
DATA = Path(__file__).parent.parent / "data" / "coding"


def coding_run(n_calls: int, result_lines: int = 40) -> list[Message]:
    """A coding agent's run: system prompt, one task, then call / result pairs, then an answer."""
    msgs = [Message("system", "You are a coding agent."), Message("user", "Fix the failing test in calc.py.")]
    for k in range(n_calls):
        msgs.append(Message("assistant", f"Step {k}.", tool_calls=(
            ToolCall(f"c{k}", "bash", json.dumps({"command": f"sed -n {k},{k + 40}p calc.py"})),)))
        msgs.append(Message("tool", "\n".join(f"{k}: line {j} of output" for j in range(result_lines)),
                            tool_call_id=f"c{k}"))
    msgs.append(Message("assistant", "Fixed."))
    return msgs


@pytest.mark.parametrize("name", CONDENSERS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_condensers_keep_the_promises(name, data):
    msgs = data.draw(conversations())
    strategy = get_strategy(name, **data.draw(strategy_params(name)))
    view = make_view(msgs, counter=COUNTER, pins=data.draw(st.sets(st.integers(0, len(msgs) - 1), max_size=3)))
    plan = strategy.apply(view, Budget(data.draw(st.integers(150, 12_000))))
    assert all(plan.reasons), "every decision has a reason"
    for rules in ("openai", "anthropic"):
        assert not [f for f in validate(list(plan.messages), rules=rules) if f.severity == "error"]
    answered = {m.tool_call_id for m in plan.messages if m.role == "tool"}
    assert all(c.id in answered for m in plan.messages for c in m.tool_calls), "a call left unanswered"
    kept = {o for o in plan.origin if o is not None}
    if view.first_system() is not None:
        assert view.first_system() in kept
    assert view.newest_user() in kept
    assert plan.fits or any("budget" in w for w in plan.warnings)


def test_observation_masking_keeps_the_newest_window_and_every_call():
    msgs = coding_run(12)
    plan = get_strategy("observation_masking", window=5).apply(make_view(msgs, counter=COUNTER), Budget(100_000))
    results = [i for i, m in enumerate(msgs) if m.role == "tool"]
    assert [plan.actions[i] for i in results] == ["clear"] * 7 + ["keep"] * 5
    assert len(plan.messages) == len(msgs), "nothing is dropped: every action and result stays"
    assert plan.messages[results[0]].text == "Old environment output: (40 lines omitted)"
    assert plan.messages[results[-1]].text == msgs[results[-1]].text
    assert plan.reasons[results[0]] == "masked: observation 1 of 12, older than the newest 5"
    assert plan.tokens_after < plan.tokens_before


def test_observation_masking_polling_and_placeholder_and_pins():
    msgs = coding_run(12)
    results = [i for i, m in enumerate(msgs) if m.role == "tool"]
    view = make_view(msgs, counter=COUNTER, pins=[results[1]])
    plan = get_strategy("observation_masking", window=5, polling=4, placeholder="<MASKED>").apply(view, Budget(100_000))
    assert [plan.actions[i] for i in results].count("clear") == 3  # 7 over the window, masked in steps of 4
    assert plan.actions[results[1]] == "keep" and plan.reasons[results[1]] == "pinned: never masked"
    assert plan.messages[results[0]].text == "<MASKED>"


def test_observation_masking_leaves_a_result_the_placeholder_would_not_shrink():
    msgs = coding_run(8, result_lines=1)
    plan = get_strategy("observation_masking", window=2).apply(make_view(msgs, counter=COUNTER), Budget(100_000))
    assert plan.count("clear") == 0
    assert "placeholder would not be shorter" in plan.reasons[3]


def test_recent_events_keeps_the_task_and_the_newest():
    msgs = coding_run(20)
    plan = get_strategy("recent_events", keep_first=1, max_events=11).apply(make_view(msgs, counter=COUNTER),
                                                                            Budget(100_000))
    kept = [o for o in plan.origin if o is not None]
    assert kept[:2] == [0, 1], "system prompt and task kept"
    assert kept[-1] == len(msgs) - 1
    assert len(kept) <= 12  # system prompt + 11, less whatever settle removed to keep pairs whole
    assert all(plan.actions[i] == "drop" for i in range(2, len(msgs) - 10))


def test_amortized_forgetting_replays_the_growth():
    msgs = coding_run(30)  # 62 messages after the system prompt
    strat = get_strategy("amortized_forgetting", max_size=20, keep_first=1)
    body = list(range(1, len(msgs)))
    kept, gone = strat.forget(body)
    # grows to 21 -> keeps 1 + 9; 11 more make 21 again -> keeps 10; ...
    assert kept[0] == 1 and len(kept) <= 20 and len(kept) >= 10
    assert max(r for r, _ in gone.values()) == 4  # at 21, 32, 43 and 54 messages
    plan = strat.apply(make_view(msgs, counter=COUNTER), Budget(100_000))
    assert plan.stats["condensations"] == 4
    assert [o for o in plan.origin if o is not None][:2] == [0, 1]
    small = get_strategy("amortized_forgetting", max_size=100).apply(make_view(msgs, counter=COUNTER), Budget(100_000))
    assert small.idle and "max_size" in small.idle


def test_condensers_compose_with_other_strategies():
    msgs = coding_run(12)
    pipe = get_strategy("observation_masking", window=2) >> get_strategy("recent_events", max_events=10)
    plan = pipe.apply(make_view(msgs, counter=COUNTER), Budget(100_000))
    assert plan.strategy == "observation_masking >> recent_events"
    assert "clear" in plan.actions and "drop" in plan.actions
    assert not [f for f in validate(list(plan.messages)) if f.severity == "error"]


def test_on_a_real_swe_agent_trace():
    conv = load(DATA / "swe_agent_ctf_baby_encryption.traj")
    view = make_view(conv, counter=COUNTER)
    plan = get_strategy("observation_masking").apply(view, Budget(100_000))
    assert plan.stats == {"observations": 15, "masked": 10, "tokens_masked": plan.stats["tokens_masked"]}
    assert plan.stats["tokens_masked"] > 1000
    assert not [f for f in validate(list(plan.messages)) if f.severity == "error"]


def _fake_llm(api):
    from ctxlab.llm import LLM, LLMConfig
    return LLM(LLMConfig(base_url=api.base_url, api_key="sk-test-attention", model="fake-model", timeout=0.5,
                         backoff=0.01, max_attempts=1), sleep=lambda _: None)


def test_llm_attention_keeps_what_the_model_picks():
    from ctxlab.llm import use_llm
    from tests.openai_fake import FakeOpenAI
    msgs = coding_run(12)  # 26 messages after the system prompt
    with FakeOpenAI() as api, use_llm(_fake_llm(api)):
        api.reply("Keep these: [3, 4, 9, 10, 999]")
        plan = get_strategy("llm_attention", max_size=20).apply(make_view(msgs, counter=COUNTER), Budget(100_000))
        prompt = api.chat_requests()[-1].json["messages"][0]["content"]
    assert "Fix the failing test in calc.py." in prompt and "[#3]" in prompt and "at most 9" in prompt
    kept = {o for o in plan.origin if o is not None}
    assert kept == {0, 1, 2, 3, 4, 5, 8, 9, 10, 11}, "system, task, the model's picks with their call or results"
    assert plan.reasons[2] == "kept with its tool call and results (message 3 was chosen)"
    assert plan.stats["chooser"] == "model" and not plan.warnings
    assert plan.actions[6] == "drop" and plan.reasons[6] == "forgotten: the model did not choose it"
    assert not [f for f in validate(list(plan.messages)) if f.severity == "error"]


def test_llm_attention_falls_back_to_the_newest_offline():
    msgs = coding_run(12)
    plan = get_strategy("llm_attention", max_size=20).apply(make_view(msgs, counter=COUNTER), Budget(100_000))
    assert plan.stats["chooser"] == "newest"
    assert any(w.startswith("LLM attention unavailable, kept the newest 9 messages instead") for w in plan.warnings)
    kept = [o for o in plan.origin if o is not None]
    assert kept[:2] == [0, 1] and kept[-1] == len(msgs) - 1
