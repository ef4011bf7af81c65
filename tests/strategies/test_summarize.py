"""The summarize strategy: when it triggers, what it folds, what the summary keeps, how it merges."""
from __future__ import annotations

import json
from typing import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ctxlab
from ctxlab.generate import generate
from ctxlab.conversation import Message
from ctxlab.replay import replay
from ctxlab.strategies import Budget, StrategyError, get_strategy, make_view
from ctxlab.strategies.summarizers.summarize import (SUMMARIZERS, ExtractiveSummarizer, Summarize, is_summary, summary_body,
                                         trim_summary)
from ctxlab.validate import validate

from ..builders import assistant, system, tool, user
from ..conftest import SAMPLES

BIG = Budget(1_000_000)


def conversation(turns: int, rounds: int = 1) -> list[Message]:
    """A system prompt, then per turn: a request naming ORD-<t>, tool rounds, an answer."""
    out = [system("You are a support agent.")]
    for t in range(turns):
        out.append(user(f"Please check order ORD-{1000 + t}."))
        for r in range(rounds):
            out.append(assistant("", f"c{t}_{r}"))
            out.append(tool(f"c{t}_{r}", json.dumps({"order_id": f"ORD-{1000 + t}", "status": "shipped",
                                                     "total": 10.5 + t})))
        out.append(assistant(f"Order ORD-{1000 + t} has shipped."))
    return out


def sample(name: str) -> ctxlab.Conversation:
    return ctxlab.load(SAMPLES / f"{name}.json")


def summary_of(plan) -> Message:
    found = [m for m in plan.messages if is_summary(m)]
    assert len(found) == 1, "exactly one summary message"
    return found[0]


def assert_whole_turns_and_valid(view, plan) -> None:
    """Every older turn is kept whole or folded whole; the newest turn keeps its user message and is
    folded, if at all, from its start by whole groups (an agent's long turn); every group is kept or
    folded whole; the output is valid for both providers."""
    for start, end in view.seg.turns[:-1]:
        assert len({plan.actions[i] for i in range(start, end)}) == 1, (start, plan.actions[start:end])
    if view.seg.turns:
        start, end = view.seg.turns[-1]
        assert plan.actions[start] == "keep", "the newest user message (the task) stays"
        rest = plan.actions[start + 1:end]
        folded = rest.count("summarize")
        assert rest[:folded] == ("summarize",) * folded, "only the oldest steps of the newest turn are folded"
    for members in view.seg.groups:
        assert len({plan.actions[i] for i in members}) == 1
    for rules in ("openai", "anthropic"):
        errors = [f for f in validate(list(plan.messages), rules=rules) if f.severity == "error"]
        assert not errors, (rules, errors)


class Recording:
    """A fake summarizer that records what it was asked and answers with one line per message."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[Message, ...], str | None]] = []

    def summarize(self, messages: Sequence[Message], previous: str | None) -> str:
        self.calls.append((tuple(messages), previous))
        new = "\n".join(f"saw {m.role}: {m.text[:30]}" for m in messages)
        return f"{previous}\n{new}" if previous else new


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> Recording:
    fake = Recording()
    monkeypatch.setitem(SUMMARIZERS, "recording", fake)
    return fake


def test_below_the_trigger_everything_is_kept_and_says_why():
    msgs = conversation(3)
    plan = get_strategy("summarize").apply(make_view(msgs), BIG)
    assert plan.messages == tuple(msgs)
    assert plan.stats["triggered"] is False
    assert plan.reasons[1].startswith(f"below the trigger ({len(msgs)} of 20 messages, ")
    assert plan.reasons[1].endswith(f"of {int(BIG.available * 0.8):,} tokens)")


def test_message_count_triggers_a_summary_after_the_system_prompt():
    msgs = conversation(8)  # 33 messages
    view = make_view(msgs)
    plan = get_strategy("summarize").apply(view, BIG)
    assert plan.stats["triggered"] is True
    assert plan.messages[0] is msgs[0]
    summary = plan.messages[1]
    assert is_summary(summary) and summary.role == "system" and summary.extra["ctxlab_summary"] is True
    folded = [i for i, a in enumerate(plan.actions) if a == "summarize"]
    assert summary.text.startswith(f"Summary of earlier conversation (messages 1-{folded[-1]}):")
    assert plan.messages[2].role == "user"
    assert plan.stats["messages_folded"] == len(folded)
    assert plan.reasons[1] == "folded into the summary: 7 turns old"
    assert plan.stats["summary_tokens"] == view.counter.message(summary)
    assert_whole_turns_and_valid(view, plan)


def test_token_share_triggers_even_with_few_messages():
    msgs = conversation(3, rounds=2)  # 16 messages, under the count trigger
    view = make_view(msgs)
    budget = Budget(int(view.total * 1.2))  # messages use more than 80% of what is available
    plan = Summarize(keep_recent=2).apply(view, budget)
    assert plan.stats["triggered"] is True and plan.count("summarize") > 0
    assert plan.tokens_after < plan.tokens_before
    assert_whole_turns_and_valid(view, plan)


def test_old_turns_are_folded_until_the_target_share_fits():
    conv = generate("ecommerce", turns=8, rounds_per_turn=2, result_tokens=400, seed=1)
    view = make_view(conv)
    budget = Budget(view.total)  # everything is over the 80% trigger
    plan = Summarize(keep_recent=1000).apply(view, budget)  # the count alone would fold nothing
    assert plan.stats["turns_folded"] > 0
    assert sum(plan.output_tokens) <= budget.available * 0.5
    assert plan.fits and not plan.warnings


@pytest.mark.parametrize("name", ["ecommerce_refund", "parallel_travel", "sql_agent"])
@pytest.mark.parametrize("max_tokens", [2_000, 6_000, 12_000])
@pytest.mark.parametrize("keep_recent", [1, 4, 10])
def test_never_splits_a_turn_or_a_tool_round(name, max_tokens, keep_recent):
    view = make_view(sample(name))
    plan = Summarize(keep_recent=keep_recent, trigger_messages=5).apply(view, Budget(max_tokens))
    assert_whole_turns_and_valid(view, plan)


def test_generated_parallel_calls_stay_valid():
    conv = generate("travel", turns=12, rounds_per_turn=3, result_tokens=300, parallel_calls=3, seed=5)
    view = make_view(conv)
    for keep in (1, 7, 30):
        assert_whole_turns_and_valid(view, Summarize(keep_recent=keep).apply(view, Budget(20_000)))


def test_summary_keeps_requests_tool_calls_and_ids_of_folded_turns():
    conv = sample("ecommerce_refund")  # turn 0 (messages 1-14) is folded, turn 1 is kept
    plan = Summarize(trigger_messages=5, keep_recent=4, max_summary_tokens=2_000).apply(make_view(conv), BIG)
    text = summary_of(plan).text
    assert plan.actions[1:15] == ("summarize",) * 14 and plan.actions[15] == "keep"
    assert "User asked: Hi! I ordered a child bike seat" in text
    assert 'Called get_order {"order_id":"KC-482193"}' in text
    assert 'Called track_shipment {"tracking_number":"1Z9A4W170398827561","carrier":"UPS"}' in text
    for fact in ("KC-482193", "CUST-88217", "1Z9A4W170398827561", "SUP-POL-7.1", "$483.95"):
        assert fact in text, fact


def test_a_short_summary_drops_results_before_requests_and_calls():
    conv = sample("ecommerce_refund")
    view = make_view(conv)
    plan = Summarize(trigger_messages=5, keep_recent=4, max_summary_tokens=250).apply(view, BIG)
    body = summary_body(summary_of(plan))
    assert view.counter.text(body) <= 250
    assert "User asked: Hi! I ordered" in body and "Assistant answered: Thanks" in body
    assert "Called " in body and "Result of" not in body


def test_error_results_are_flagged():
    plan = Summarize(trigger_messages=5, keep_recent=4, max_summary_tokens=2_000).apply(
        make_view(sample("parallel_travel")), BIG)
    assert "ERROR from get_hotel_details: Error: HotelHub supplier timeout (HTTP 504)" in summary_of(plan).text


def test_trim_keeps_the_most_important_lines_in_order():
    text = "Result of a: x=1\nUser asked: first\nCalled b {}\nResult of c: y=2\nUser asked: second"
    count = make_view([user()]).counter.text
    assert trim_summary(text, 12, count) == "User asked: first\nUser asked: second"
    assert trim_summary(text, 1_000, count) == text


def test_extractive_merge_appends_to_the_previous_summary():
    new = ExtractiveSummarizer().summarize(conversation(1)[1:], previous="User asked: an older request")
    assert new.startswith("User asked: an older request\nUser asked: Please check order ORD-1000.")
    assert "Result of t_c0_0: order_id=ORD-1000; status=shipped; total=10.5" in new


def test_incremental_merge_summarizes_only_the_new_span(recording):
    msgs = conversation(12)  # turn t is messages 1+4t .. 4+4t
    strategy = Summarize(summarizer="recording", keep_recent=4, trigger_messages=15, max_summary_tokens=4_000)
    first_view = make_view(msgs[:30])  # 7 turns and the user message of turn 7
    first = strategy.apply(first_view, BIG)
    assert first.state["summarized"] == tuple(range(1, 25))
    # the next application: what the strategy left plus what arrived since, with the state carried
    arrived = list(range(30, 42))  # the rest of turn 7, turns 8-9, the user message of turn 10
    origin = [first_view.origin[k] if k is not None else None for k in first.origin] + arrived
    view = make_view([*first.messages, *(msgs[i] for i in arrived)], origin=origin, state=first.state)
    second = strategy.apply(view, BIG)
    (seen_first, prev_first), (seen_second, prev_second) = recording.calls
    assert prev_first is None and prev_second == first.state["summary"]
    assert [m.text for m in seen_first] == [m.text for m in msgs[1:25]]
    assert all(a is b for a, b in zip(seen_second, msgs[25:37], strict=True))  # turns 6-8 only
    merged = summary_of(second)
    assert first.state["summary"] in merged.text
    assert merged.text.startswith("Summary of earlier conversation (messages 1-36):")
    assert second.actions[1] == "summarize" and second.reasons[1] == "replaced by the updated summary"
    assert second.state["summarized"] == tuple(range(1, 37))


def test_a_summary_in_the_view_without_state_is_merged_not_repeated(recording):
    msgs = conversation(12)
    strategy = Summarize(summarizer="recording", keep_recent=4, trigger_messages=15)
    first = strategy.apply(make_view(msgs[:30]), BIG)
    second = strategy.apply(make_view([*first.messages, *msgs[30:42]]), BIG)  # no state, no origin
    assert recording.calls[1][1] == summary_body(first.messages[1])
    assert len([m for m in second.messages if is_summary(m)]) == 1


def test_messages_already_summarized_are_not_summarized_again(recording):
    msgs = conversation(12)
    strategy = Summarize(summarizer="recording", keep_recent=4, trigger_messages=15)
    first = strategy.apply(make_view(msgs[:30]), BIG)
    again = strategy.apply(make_view(msgs[:42], state=first.state), BIG)  # the whole history, with the state
    assert [m.text for m in recording.calls[1][0]] == [m.text for m in msgs[25:37]]
    assert again.reasons[1] == "already in the summary (folded earlier)"


def test_same_input_gives_the_same_plan():
    view = make_view(sample("sql_agent"))
    a, b = (Summarize(trigger_messages=5).apply(view, Budget(8_000)) for _ in range(2))
    assert (a.actions, a.reasons, a.messages, dict(a.state), dict(a.stats)) == \
           (b.actions, b.reasons, b.messages, dict(b.state), dict(b.stats))


def test_a_newest_turn_too_big_for_the_budget_is_folded_inside():
    view = make_view(sample("sql_agent"))
    plan = get_strategy("summarize").apply(view, Budget(3_000))
    start, end = view.seg.turns[-1]
    assert plan.fits and "summarize" in plan.actions[start + 1:end], "the agent's older steps are folded"
    assert plan.actions[start] == "keep" and plan.actions[end - 1] == "keep"
    assert_whole_turns_and_valid(view, plan)


def test_what_cannot_fit_even_folded_says_so():
    plan = get_strategy("summarize").apply(make_view(sample("sql_agent")), Budget(1_200))
    assert not plan.fits
    expected = "even the system prompt, the summary and what it keeps of the newest turn alone needs"
    assert any(w.startswith(expected) for w in plan.warnings)


def test_a_pinned_turn_is_kept_whole():
    msgs = conversation(8)
    view = make_view(msgs, pins=[6])  # a tool result of turn 1
    plan = get_strategy("summarize").apply(view, BIG)
    assert plan.actions[5:9] == ("keep",) * 4 and plan.reasons[5] == "pinned: its turn is kept whole"
    assert plan.actions[1] == "summarize"
    assert_whole_turns_and_valid(view, plan)


def test_an_unknown_summarizer_names_the_known_ones(recording):
    with pytest.raises(StrategyError, match="extractive"):
        Summarize(summarizer="gpt-summarizer")
    choices = next(s for s in Summarize.schema() if s["name"] == "summarizer")["choices"]
    assert "extractive" in choices and "recording" in choices


@pytest.mark.parametrize("name", ["ecommerce_refund", "parallel_travel", "sql_agent"])
def test_replayed_summaries_serve_more_needed_facts_than_a_sliding_window_at_a_tight_budget(name):
    # Measured on the call-by-call replay at 6,000 tokens: the window drops facts later calls use
    # (needed recall .68 / .71 / .98) where the summary keeps them (.78 / .92 / 1.0).
    from ctxlab.fidelity import needed_recall
    conv, budget = sample(name), Budget(6_000)
    window = needed_recall(replay(conv, "sliding_window", budget), conv).needed_recall
    summary = needed_recall(replay(conv, "summarize", budget), conv).needed_recall
    assert summary > window


def test_the_summary_kept_per_view_follows_the_folded_span():
    """The extractive text is kept per view and span: re-planning the same view folding fewer or
    more turns gives each time the summary a fresh view gives, never the previous span's."""
    msgs = conversation(12)
    view = make_view(msgs)
    texts = []
    for keep in (4, 8, 4, 12):
        strategy = Summarize(keep_recent=keep, trigger_messages=15, max_summary_tokens=4_000)
        text = summary_of(strategy.apply(view, BIG)).text
        assert text == summary_of(strategy.apply(make_view(msgs), BIG)).text
        texts.append(text)
    assert texts[0] == texts[2] and len({texts[0], texts[1], texts[3]}) == 3


@given(st.lists(st.integers(0, 60), max_size=30), st.lists(st.integers(0, 80), max_size=10),
       st.lists(st.one_of(st.none(), st.integers(-2, 90)), max_size=20), st.booleans())
def test_covered_indexes_behave_as_a_set(done, more, asked, from_json):
    """What a running summary covers is kept as a sorted tuple (a union appends, membership is a
    binary search); it must answer as the set of the same indexes, also when read back from JSON
    as an unsorted list with repeats."""
    from ctxlab.strategies.summarizers.summarize import Covered
    covered = Covered(done[::-1] if from_json else tuple(sorted(set(done))))
    assert covered.indexes == tuple(sorted(set(done)))
    assert [i in covered for i in asked] == [i in set(done) for i in asked]
    assert covered.union(more) == tuple(sorted(set(done) | set(more)))
    assert bool(covered) == bool(done) and len(covered) == len(set(done))
