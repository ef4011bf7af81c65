"""Replaying a strategy turn by turn: what the model saw at each turn, and what stays gone."""
from __future__ import annotations

from typing import Sequence

import pytest

import ctxlab
from ctxlab.errors import CtxlabError
from ctxlab.generate import generate
from ctxlab.conversation import Message
from ctxlab.replay import FUTURE, HISTORY_LIMIT, replay
from ctxlab.strategies import STRATEGIES, Budget, get_strategy
from ctxlab.strategies.plan import REMOVED
from ctxlab.strategies.summarize import SUMMARIZERS, Summarize, is_summary
from ctxlab.validate import validate

from .builders import assistant, system, user
from .conftest import SAMPLES

CORE = ["none", "sliding_window", "turn_safe", "summarize"]


@pytest.fixture(scope="module")
def long_conv() -> ctxlab.Conversation:
    """20 turns of 2 tool rounds: 121 messages, about 16,000 tokens."""
    return generate("ecommerce", turns=20, rounds_per_turn=2, result_tokens=300, parallel_calls=2, seed=4)


def test_the_matrix_has_a_row_per_turn_and_a_cell_per_message(long_conv):
    r = replay(long_conv, "sliding_window", Budget(8_000))
    users = [i for i, m in enumerate(long_conv.messages) if m.role == "user"]
    assert r.turns == len(r.matrix) == len(users) == 20
    assert r.turn_starts == tuple(users)
    assert all(len(row) == len(long_conv) for row in r.matrix)


def test_messages_after_the_new_user_message_are_future(long_conv):
    r = replay(long_conv, "none", Budget(1_000_000))
    for t, start in enumerate(r.turn_starts):
        assert all(cell == FUTURE for cell in r.matrix[t][start + 1:])
        assert FUTURE not in r.matrix[t][:start + 1]
        assert r.context_at(t) == tuple(long_conv.messages[:start + 1])


@pytest.mark.parametrize("name", CORE)
def test_cells_are_the_actions_of_that_turns_plan(long_conv, name):
    r = replay(long_conv, name, Budget(8_000))
    for t, plan in enumerate(r.plans):
        assert len(r.inputs[t]) == len(plan.actions)
        for k, o in enumerate(r.inputs[t]):
            if o is not None:
                assert r.matrix[t][o] == plan.actions[k]


@pytest.mark.parametrize("name", ["sliding_window", "turn_safe", "summarize"])
def test_a_removed_message_never_comes_back(long_conv, name):
    strategy = get_strategy("turn_safe", last_n=15) if name == "turn_safe" else get_strategy(name)
    r = replay(long_conv, strategy, Budget(8_000))
    removed = [i for i, t in enumerate(r.removed_at) if t is not None]
    assert removed, "the budget forces removals"
    for i in removed:
        t = r.removed_at[i]
        assert r.matrix[t][i] in REMOVED
        for later in range(t + 1, r.turns):
            assert i not in r.inputs[later] and i not in r.origins[later]
            assert r.matrix[later][i] == r.matrix[t][i]


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_every_context_is_valid_for_both_providers(long_conv, name):
    r = replay(long_conv, name, Budget(8_000))
    for t in range(r.turns):
        context = list(r.context_at(t))
        assert context[-1] is long_conv.messages[r.turn_starts[t]], "the new user message is sent"
        for rules in ("openai", "anthropic"):
            assert not [f for f in validate(context, rules=rules) if f.severity == "error"], (t, rules)


@pytest.mark.parametrize("name", ["ecommerce_refund", "parallel_travel", "sql_agent"])
def test_sample_replays_are_valid(name):
    r = replay(ctxlab.load(SAMPLES / f"{name}.json"), "summarize", Budget(6_000))
    for t in range(r.turns):
        for rules in ("openai", "anthropic"):
            assert not [f for f in validate(list(r.context_at(t)), rules=rules) if f.severity == "error"]


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
    for t, plan in enumerate(r.plans):
        now = tuple(plan.state.get("summarized", ()))
        assert set(summarized) <= set(now)
        assert all(r.matrix[t][i] == "summarize" for i in now)
        summarized = now
        summaries = [m for m in r.context_at(t) if is_summary(m)]
        assert len(summaries) == (1 if now else 0)
        if summaries:
            assert summaries[0].text.endswith(plan.state["summary"])
    texts = [p.state["summary"] for p in r.plans if p.state]
    assert all(b.startswith(a) for a, b in zip(texts, texts[1:], strict=False)), "each summary extends the last"


def test_history_keeps_the_last_ten_applications_and_totals_cover_all(long_conv):
    r = replay(long_conv, "sliding_window", Budget(8_000))
    assert len(r.history) == HISTORY_LIMIT
    assert [h.turn for h in r.history] == list(range(r.turns - HISTORY_LIMIT, r.turns))
    for h in r.history:
        plan = r.plans[h.turn]
        assert (h.tokens_before, h.tokens_after) == r.turn_tokens[h.turn] == (plan.tokens_before, plan.tokens_after)
        assert h.tokens_saved == h.tokens_before - h.tokens_after
        assert h.messages_removed == sum(a in REMOVED for a in plan.actions)
        assert h.triggered == (h.messages_removed > 0)
    assert r.times_triggered == sum(any(a != "keep" for a in p.actions) for p in r.plans) > 0
    assert r.tokens_saved == sum(p.tokens_before - p.tokens_after for p in r.plans) > 0
    assert r.messages_removed == sum(sum(a in REMOVED for a in p.actions) for p in r.plans)


def test_sending_everything_never_triggers(long_conv):
    r = replay(long_conv, "none", Budget(1_000_000))
    assert r.times_triggered == r.tokens_saved == r.messages_removed == 0
    assert not any(h.triggered for h in r.history)


def test_a_pinned_message_stays_in_every_later_context(long_conv):
    pinned = 3  # a tool result of the first turn
    r = replay(long_conv, "summarize", Budget(8_000), pins=[pinned])
    assert r.times_triggered > 0
    arrived = [t for t in range(r.turns) if r.turn_starts[t] > pinned]
    assert arrived and all(pinned in r.origins[t] for t in arrived)


def test_context_at_out_of_range_says_which_turns_exist(long_conv):
    r = replay(long_conv, "none", Budget(1_000_000))
    assert r.context_at(-1) == r.context_at(r.turns - 1)
    with pytest.raises(CtxlabError, match="from 0 to 19"):
        r.context_at(20)


def test_a_conversation_without_a_user_message_has_no_turn():
    r = replay([system(), assistant("Hello")], "summarize", Budget(4_000))
    assert r.turns == 0 and r.matrix == () and r.history == () and r.times_triggered == 0


def test_a_pipeline_replays_with_its_steps_state(long_conv):
    pipeline = get_strategy("turn_safe", last_n=60) >> get_strategy("summarize")
    r = replay(long_conv, pipeline, Budget(8_000))
    assert r.strategy == "turn_safe >> summarize"
    assert any(is_summary(m) for m in r.context_at(-1))


def test_bad_pins_name_the_index():
    with pytest.raises(CtxlabError, match="pinned index 5"):
        replay([system(), user()], "none", Budget(4_000), pins=[5])
