"""Replaying a strategy call by call: what the model saw at every model call, and what stays gone."""
from __future__ import annotations

from typing import Sequence

import pytest

import ctxlab
from ctxlab.conversation import Message
from ctxlab.errors import CtxlabError
from ctxlab.generate import generate
from ctxlab.replay import FUTURE, HISTORY_LIMIT, call_points, replay
from ctxlab.strategies import STRATEGIES, Budget, get_strategy
from ctxlab.strategies.plan import REMOVED
from ctxlab.strategies.per_result import rewrites
from ctxlab.strategies.summarizers.summarize import SUMMARIZERS, Summarize, is_summary
from ctxlab.validate import validate

from ..builders import assistant, system, tool, user
from ..conftest import SAMPLES

CORE = ["none", "sliding_window", "turn_safe", "summarize"]


@pytest.fixture(scope="module")
def long_conv() -> ctxlab.Conversation:
    """20 turns of 2 tool rounds: 121 messages, about 16,000 tokens."""
    return generate("ecommerce", turns=20, rounds_per_turn=2, result_tokens=300, parallel_calls=2, seed=4)


@pytest.fixture(scope="module")
def agent_run() -> ctxlab.Conversation:
    """One task message, then 49 model calls (the agent alone): about 23,000 tokens."""
    return generate("ecommerce", turns=12, rounds_per_turn=4, result_tokens=300, seed=4, shape="agent_run")


def scaled(name: str, budget: Budget, **over) -> object:
    """The strategy with its budget-scaled defaults (as the Lab and the sweep use them)."""
    return get_strategy(name, **{**get_strategy(name).scaled_defaults(budget), **over})


def test_there_is_a_row_per_model_call_and_a_cell_per_message(long_conv):
    r = replay(long_conv, "sliding_window", Budget(8_000))
    assistants = [i for i, m in enumerate(long_conv.messages) if m.role == "assistant"]
    assert [c.index for c in r.calls] == assistants == call_points(long_conv.messages)
    assert len(r.matrix) == len(assistants) and all(len(row) == len(long_conv) for row in r.matrix)
    assert r.turn_starts == tuple(i for i, m in enumerate(long_conv.messages) if m.role == "user")


def test_a_trace_that_does_not_end_with_an_answer_has_a_pending_call():
    msgs = [system(), user("find it"), assistant("", "a"), tool("a")]
    r = replay(msgs, "none", Budget(4_000))
    assert [(c.index, c.pending) for c in r.calls] == [(2, False), (4, True)]
    assert r.context_at(-1) == tuple(msgs)


def test_a_call_sees_everything_before_its_message_and_nothing_after(long_conv):
    r = replay(long_conv, "none", Budget(1_000_000))
    for c in r.calls:
        assert r.context_at(c.number) == tuple(long_conv.messages[:c.index])
        row = r.matrix[c.number]
        assert all(cell == FUTURE for cell in row[c.index:]) and FUTURE not in row[:c.index]


def test_every_call_applies_the_strategy_and_turn_start_only_when_a_user_message_arrived(long_conv):
    every = replay(long_conv, "sliding_window", Budget(8_000))
    start = replay(long_conv, "sliding_window", Budget(8_000), apply_at="turn_start")
    assert every.apply_at == "every_call" and all(c.applied for c in every.calls)
    firsts = {r.calls_of_turn(t)[0].number for r in (start,) for t in range(start.turns)}
    assert {c.number for c in start.calls if c.applied} == firsts
    assert start.applications == start.turns == 20


def test_the_strategy_parameter_carries_apply_at(long_conv):
    strategy = get_strategy("sliding_window", apply_at="turn_start")
    assert strategy.params()["apply_at"] == "turn_start"
    assert replay(long_conv, strategy, Budget(8_000)).apply_at == "turn_start"
    with pytest.raises(CtxlabError, match="apply_at"):
        get_strategy("sliding_window", apply_at="sometimes")


PER_RESULT = {"head_tail", "offload"}
"""Strategies that act on each result past a size, not on the prompt's total (Codex's 256 lines, 10 KiB; offload's
tenth of the budget, 20,000 tokens at most): on runs whose results are all smaller they rightly do nothing
(tests/strategies/test_strategies_head_tail.py, tests/strategies/test_strategies_offload.py)."""


@pytest.mark.parametrize("name", sorted(set(STRATEGIES) - {"none", "langchain_trim"} - PER_RESULT))
def test_on_an_agent_run_every_strategy_acts_between_calls_of_one_turn(agent_run, name):
    budget = Budget(6_000)
    none = replay(agent_run, "none", budget)
    assert none.turns == 1 and len(none.calls) == 49 and none.calls_over_limit > 30  # 48 tool rounds + the answer
    r = replay(agent_run, scaled(name, budget), budget)
    inside = [c for c in r.calls if c.triggered and c.number > 0]
    assert inside, f"{name} never acted inside the one turn"
    assert [c.tokens_after for c in r.calls] != [c.tokens_after for c in none.calls]
    assert r.calls_over_limit < none.calls_over_limit


@pytest.mark.parametrize("name", sorted(set(STRATEGIES) - {"langchain_trim"}))
def test_turn_start_lets_a_long_turn_overflow(agent_run, name):
    budget = Budget(6_000)
    r = replay(agent_run, scaled(name, budget, apply_at="turn_start"), budget)
    assert r.applications == 1 and not r.fits
    assert r.calls_over_limit == replay(agent_run, "none", budget).calls_over_limit


def test_a_call_over_the_limit_makes_fits_false():
    msgs = [system(), user("go"), assistant("", "a"), tool("a", "x " * 3_000), assistant("done")]
    r = replay(msgs, "none", Budget(2_000))
    assert [c.over_limit for c in r.calls] == [False, True]
    assert not r.fits and r.calls_over_limit == 1 and r.worst.number == 1
    assert replay(msgs, "none", Budget(100_000)).fits


@pytest.mark.parametrize("name", sorted(STRATEGIES))
@pytest.mark.parametrize("apply_at", ["every_call", "turn_start"])
def test_every_prompt_is_valid_for_both_providers(long_conv, name, apply_at):
    r = replay(long_conv, get_strategy(name, apply_at=apply_at), Budget(8_000))
    if name == "langchain_trim":
        return  # the peer's own output, with its known pairing bugs, is shown as it is
    for c in r.calls:
        context = list(r.context_at(c.number))
        for rules in ("openai", "anthropic"):
            assert not [f for f in validate(context, rules=rules) if f.severity == "error"], (c.number, rules)


@pytest.mark.parametrize("name", sorted(set(STRATEGIES) - {"langchain_trim"}))
def test_agent_run_prompts_keep_the_task_and_every_call_has_its_results(agent_run, name):
    budget = Budget(6_000)
    r = replay(agent_run, scaled(name, budget), budget)
    task = agent_run.messages[1]
    for c in r.calls:
        context = list(r.context_at(c.number))
        assert context[0] is agent_run.messages[0], "the system prompt is sent"
        assert any(m.role == "user" and task.text in m.text for m in context), "the task is sent"
        for rules in ("openai", "anthropic"):
            assert not [f for f in validate(context, rules=rules) if f.severity == "error"], (name, c.number, rules)


@pytest.mark.parametrize("name", ["sliding_window", "turn_safe", "summarize"])
def test_a_removed_message_never_comes_back(long_conv, name):
    strategy = get_strategy("turn_safe", last_n=15) if name == "turn_safe" else get_strategy(name)
    r = replay(long_conv, strategy, Budget(8_000))
    removed = [i for i, c in enumerate(r.removed_at) if c is not None]
    assert removed, "the budget forces removals"
    for i in removed:
        c = r.removed_at[i]
        assert r.cell(c, i) in REMOVED
        for later in range(c, len(r.calls)):
            assert i not in r.origins_at(later)
            assert r.matrix[later][i] == r.cell(c, i)


@pytest.mark.parametrize("name", ["ecommerce_refund", "parallel_travel", "sql_agent"])
def test_sample_replays_are_valid(name):
    r = replay(ctxlab.load(SAMPLES / f"{name}.json"), "summarize", Budget(6_000))
    for c in r.calls:
        for rules in ("openai", "anthropic"):
            assert not [f for f in validate(list(r.context_at(c.number)), rules=rules) if f.severity == "error"]


class Recording:
    """A fake summarizer that records which messages it was given."""

    def __init__(self) -> None:
        self.seen: list[tuple[Message, ...]] = []
        self.previous: list[str | None] = []

    def summarize(self, messages: Sequence[Message], previous: str | None) -> str:
        self.seen.append(tuple(messages))
        self.previous.append(previous)
        return "\n".join(filter(None, [previous, f"{len(messages)} more messages"]))


def test_the_running_summary_is_carried_and_only_grows(long_conv, monkeypatch):
    fake = Recording()
    monkeypatch.setitem(SUMMARIZERS, "recording", fake)
    r = replay(long_conv, Summarize(summarizer="recording", max_summary_tokens=2_000), Budget(8_000))
    assert len(fake.seen) >= 3, "the summary is updated several times"
    ids = [id(m) for seen in fake.seen for m in seen]
    assert len(ids) == len(set(ids)), "no message is summarized twice"
    assert fake.previous[0] is None and all(fake.previous[1:])
    summarized: tuple[int, ...] = ()
    texts = []
    for c in r.calls:
        plan = r.plan_at(c.number)
        if plan is None:  # below the trigger: no plan, the state as it was
            assert not c.triggered
            continue
        now = tuple(plan.state.get("summarized", ()))
        assert set(summarized) <= set(now)
        assert all(r.cell(c.number, i) == "summarize" for i in now)
        summarized = now
        summaries = [m for m in r.context_at(c.number) if is_summary(m)]
        assert len(summaries) == (1 if now else 0)
        if summaries:
            assert summaries[0].text.endswith(plan.state["summary"])
            texts.append(plan.state["summary"])
    assert all(b.startswith(a) for a, b in zip(texts, texts[1:], strict=False)), "each summary extends the last"


def test_history_keeps_the_last_ten_applications_and_totals_cover_all(long_conv):
    r = replay(long_conv, "sliding_window", Budget(8_000))
    assert len(r.history) == HISTORY_LIMIT
    planned = [c.number for c in r.calls if r.plan_at(c.number) is not None]  # not below its trigger
    assert [h.call for h in r.history] == planned[-HISTORY_LIMIT:]
    for h in r.history:
        plan, call = r.plan_at(h.call), r.calls[h.call]
        assert (h.tokens_before, h.tokens_after) == (call.tokens_before, call.tokens_after)
        assert (h.tokens_before, h.tokens_after) == (plan.tokens_before, plan.tokens_after)
        assert h.tokens_saved == h.tokens_before - h.tokens_after
        assert h.triggered == (plan.idle is None) == call.triggered
    assert r.times_triggered > 0 and r.tokens_saved > 0 and r.messages_removed > 0
    assert r.messages_removed == sum(c is not None for c in r.removed_at)


def test_sending_everything_never_triggers(long_conv):
    r = replay(long_conv, "none", Budget(1_000_000))
    assert r.times_triggered == r.tokens_saved == r.messages_removed == 0
    assert not any(h.triggered for h in r.history)


def test_a_pinned_message_stays_in_every_later_context(long_conv):
    pinned = 3  # a tool result of the first turn
    r = replay(long_conv, "summarize", Budget(8_000), pins=[pinned])
    assert r.times_triggered > 0
    later = [c.number for c in r.calls if c.index > pinned]
    assert later and all(pinned in r.origins_at(c) for c in later)


def test_context_at_out_of_range_says_which_calls_exist(long_conv):
    r = replay(long_conv, "none", Budget(1_000_000))
    assert r.context_at(-1) == r.context_at(len(r.calls) - 1)
    with pytest.raises(CtxlabError, match=f"from 0 to {len(r.calls) - 1}"):
        r.context_at(len(r.calls))


def test_prompts_past_the_kept_size_are_recomputed_the_same(long_conv, monkeypatch):
    import ctxlab.replay as module
    kept = replay(long_conv, "summarize", Budget(8_000))
    monkeypatch.setattr(module, "DETAIL_LIMIT", 0)
    lean = replay(long_conv, "summarize", Budget(8_000))
    assert not lean._prompts
    for c in (0, 17, len(kept.calls) - 1):
        assert lean.context_at(c) == kept.context_at(c)
        assert lean.origins_at(c) == kept.origins_at(c)


def test_a_conversation_without_a_user_message_is_one_run():
    r = replay([system(), assistant("Hello")], "summarize", Budget(4_000))
    assert r.turns == 0 and len(r.calls) == 1 and r.calls[0].turn == -1 and r.times_triggered == 0


def test_a_pipeline_replays_with_its_steps_state(long_conv):
    pipeline = get_strategy("turn_safe", last_n=60) >> get_strategy("summarize")
    r = replay(long_conv, pipeline, Budget(8_000))
    assert r.strategy == "turn_safe >> summarize"
    assert any(is_summary(m) for m in r.context_at(-1))


def test_bad_pins_name_the_index():
    with pytest.raises(CtxlabError, match="pinned index 5"):
        replay([system(), user()], "none", Budget(4_000), pins=[5])


def test_bad_apply_at_names_the_choices():
    with pytest.raises(CtxlabError, match="every_call, turn_start"):
        replay([system(), user()], "none", Budget(4_000), apply_at="never")


@pytest.mark.parametrize("name, params", [("none", {}), ("sliding_window", {}), ("summarize", {}),
                                          ("clear_tool_results", {"trigger_tokens": 5_000}),
                                          ("turn_safe", {"last_n": 40}), ("key_messages", {"recent": 40})])
def test_quick_idle_is_only_claimed_when_the_plan_keeps_everything(long_conv, name, params):
    """A replay skips the plan where ``quick_idle`` says the strategy keeps everything: it must be
    right every time it says so, and the prompts are those of planning every call."""
    from ctxlab.strategies import make_view
    strategy = get_strategy(name, **params)
    budget = Budget(12_000)
    claimed = 0
    for k in range(2, len(long_conv) + 1, 3):
        view = make_view(long_conv.messages[:k])
        if strategy.quick_idle(view, budget):
            claimed += 1
            plan = strategy.apply(view, budget)
            assert plan.idle is not None and plan.messages == view.messages, (name, k)
    assert claimed, f"{name} never claimed idle on the growing conversation"


@pytest.mark.parametrize("name, params", [("head_tail", {"max_lines": 6, "max_bytes": 400}),
                                          ("offload", {"min_tokens": 250, "preview_tokens": 40})])
@pytest.mark.parametrize("pins", [(), (3,)])
def test_a_per_result_strategy_counts_its_rewrites_on_a_growing_view_as_its_plan_does(long_conv, name, params, pins):
    """head_tail and offload say whether there is anything to rewrite from a count kept with the view
    and extended for each appended message (so a replay does not decide every result at every call):
    at every length, grown one message at a time, the count must be the plan's own, and idle claimed
    exactly when the plan keeps everything. Results of the generated run are cut at these limits."""
    from ctxlab.strategies import make_view
    strategy = get_strategy(name, **params)
    budget = Budget(12_000)
    start = 4 if pins else 3  # a system prompt, the task, a call (and its first result, pinned)
    view = make_view(long_conv.messages[:start], pins=pins)
    seen = set()
    for m in (None, *long_conv.messages[start:]):
        view = view if m is None else view.append(m)
        plan = strategy.apply(view, budget)
        idle = strategy.quick_idle(view, budget)
        assert plan.count("truncate") == rewrites(strategy, view), (name, len(view))
        assert idle == (plan.idle is not None and plan.messages == view.messages), (name, len(view))
        seen.add(idle)
    assert seen == {True, False}, "the run must have both lengths with nothing to rewrite and with some"


@pytest.mark.parametrize("name", sorted(set(STRATEGIES) - {"none", "langchain_trim", "llm_attention"} - PER_RESULT))
def test_on_a_real_swe_agent_run_below_its_size_every_strategy_acts_and_differs_from_none(name):
    """SWE-agent's BabyEncryption demonstration (public, MIT; source in sample_data/README.md): one
    user message and 16 calls. llm_attention needs a model and is left out."""
    from ..conftest import ROOT
    conv = ctxlab.load(ROOT / "tests" / "data" / "coding" / "swe_agent_ctf_baby_encryption.traj")
    assert sum(m.role == "user" for m in conv.messages) == 1
    budget = Budget(3_000)
    none = replay(conv, "none", budget)
    assert none.calls_over_limit > 0, "the run is larger than the limit"
    r = replay(conv, scaled(name, budget), budget)
    assert r.times_triggered > 0, f"{name} never acted"
    assert [c.tokens_after for c in r.calls] != [c.tokens_after for c in none.calls]
    for c in r.calls:
        for rules in ("openai", "anthropic"):
            assert not [f for f in validate(list(r.context_at(c.number)), rules) if f.severity == "error"], (name, c)
