"""middle_out, oldest_first and hybrid: they fit the budget or say why not, keep what they promise
to keep (preserved ends, pins, a minimum of messages), remove in the order they document, and the
hybrid keeps the result with the higher stated score."""
from __future__ import annotations

import re

import pytest

import ctxlab
from ctxlab.generate import generate
from ctxlab.conversation import Message
from ctxlab.strategies import Budget, StrategyError, get_strategy, make_view
from ctxlab.strategies.plan import Plan
from ctxlab.strategies.hybrid import Hybrid
from ctxlab.strategies.incremental.ledger import LONE
from ctxlab.strategies.middle_out import MiddleOut
from ctxlab.strategies.oldest_first import OldestFirst
from ctxlab.tokens import TokenCounter
from ctxlab.validate import validate

from ..builders import assistant, system, tool, user
from ..conftest import SAMPLES

COUNTER = TokenCounter("gpt-4o")
SAMPLE_NAMES = ("ecommerce_refund", "parallel_travel", "sql_agent")
BUDGETS = (1_500, 3_000, 6_000)


def sample_view(name: str, pins=()):
    return make_view(ctxlab.load(SAMPLES / f"{name}.json"), counter=COUNTER, pins=pins)


def kept(plan: Plan) -> set[int]:
    return {o for o in plan.origin if o is not None}


def message_tokens(plan: Plan) -> int:
    return sum(plan.output_tokens)


def assert_valid(plan: Plan) -> None:
    for rules in ("openai", "anthropic"):
        errors = [f.message for f in validate(list(plan.messages), rules=rules) if f.severity == "error"]
        assert not errors, f"{rules}: {errors}"


def padded(text: str, words: int) -> str:
    return text + " " + " ".join(f"row{k} ok" for k in range(words))


def big_old_result_conversation() -> list[Message]:
    """Turn 0 has a big tool result; turn 1 is short; turn 2 is the newest question."""
    return [system("You help with orders."), user("Where is order KC-1?"), assistant("", "a"),
            tool("a", padded("order KC-1:", 1500)), assistant("It shipped."),
            user("And the refund?"), assistant("", "b"), tool("b", padded("refund:", 40)),
            assistant("Refund issued."), user("Thanks, anything else?")]


def test_the_three_strategies_are_registered_and_check_their_parameters() -> None:
    assert isinstance(get_strategy("middle_out"), MiddleOut)
    assert isinstance(get_strategy("oldest_first", min_messages=6), OldestFirst)
    assert isinstance(get_strategy("hybrid"), Hybrid)
    with pytest.raises(StrategyError, match="target_ratio"):
        get_strategy("middle_out", target_ratio=0.0)
    with pytest.raises(StrategyError, match="min_messages"):
        get_strategy("oldest_first", min_messages=0)


# --- fitting the budget, or saying why not ------------------------------------------------------

@pytest.mark.parametrize("name", SAMPLE_NAMES)
@pytest.mark.parametrize("max_tokens", BUDGETS)
def test_oldest_first_fits_every_sample_at_every_budget(name: str, max_tokens: int) -> None:
    view, budget = sample_view(name), Budget(max_tokens)
    plan = OldestFirst().apply(view, budget)
    assert plan.fits and not plan.warnings
    assert message_tokens(plan) <= budget.available
    assert {view.first_system(), view.newest_user()} <= kept(plan)
    assert_valid(plan)


@pytest.mark.parametrize("name", SAMPLE_NAMES)
@pytest.mark.parametrize("max_tokens", BUDGETS)
@pytest.mark.parametrize("preserve_end", (4, 10))
def test_middle_out_fits_or_names_the_preserved_ends_that_do_not(name: str, max_tokens: int,
                                                                 preserve_end: int) -> None:
    view, budget = sample_view(name), Budget(max_tokens)
    plan = MiddleOut(preserve_end=preserve_end).apply(view, budget)
    assert_valid(plan)
    n = len(view)
    ends = sum(view.tokens[i] for i in (*range(2), *range(n - preserve_end, n)))
    if plan.fits:
        assert message_tokens(plan) <= budget.available and not plan.warnings
    else:
        # nothing of the middle is left but what the ends need to stay valid
        assert ends <= message_tokens(plan)
        assert plan.warnings[0].startswith(f"even the first 2 and the last {preserve_end} messages")
        needs = int(re.search(r"needs ([\d,]+) tokens", plan.warnings[0]).group(1).replace(",", ""))
        # a user message left alone is merged into the next one, which saves its few framing tokens
        assert needs == message_tokens(plan) or (plan.notes and 0 < needs - message_tokens(plan) <= 8)
        assert f"the budget leaves {budget.available:,}" in plan.warnings[0]


def test_middle_out_fits_the_samples_at_6000_when_the_last_4_are_preserved() -> None:
    for name in SAMPLE_NAMES:
        plan = MiddleOut(preserve_end=4).apply(sample_view(name), Budget(6_000))
        assert plan.fits, name


def test_middle_out_target_ratio_leaves_room() -> None:
    view, budget = sample_view("ecommerce_refund"), Budget(8_000)
    plan = MiddleOut(preserve_end=4, target_ratio=0.6).apply(view, budget)
    target = int(budget.available * 0.6)
    assert message_tokens(plan) <= target
    assert plan.stats["target_tokens"] == target
    removed = [r for a, r in zip(plan.actions, plan.reasons) if a == "drop" and r != LONE]
    assert removed and set(removed) == {f"removed from the middle to fit {target:,} tokens"}


# --- middle_out: the ends stay, the middle goes first --------------------------------------------

def test_middle_out_keeps_both_ends_and_removes_a_block_around_the_middle() -> None:
    conv = generate("travel", turns=8, rounds_per_turn=2, result_tokens=300, parallel_calls=2, seed=5)
    view = make_view(conv, counter=COUNTER)
    budget = Budget(view.total // 2)
    plan = MiddleOut(preserve_start=3, preserve_end=12).apply(view, budget)
    n, gone = len(view), [i for i, a in enumerate(plan.actions) if a == "drop"]
    assert plan.fits and gone
    assert set(range(3)) | set(range(n - 12, n)) <= kept(plan)
    assert gone[0] < (3 + n - 12) / 2 < gone[-1], "the centre of the middle is removed"
    inside = [i for i in range(gone[0], gone[-1]) if plan.actions[i] == "keep"]
    assert all(view.messages[i].role == "user" for i in inside), "only turn starts survive inside the block"
    assert_valid(plan)


def test_middle_out_keeps_a_preserved_user_message_valid() -> None:
    # the first user message is preserved: its turn keeps its last reply, or settle would drop it
    msgs = big_old_result_conversation()
    view = make_view(msgs, counter=COUNTER)
    plan = MiddleOut(preserve_start=2, preserve_end=1).apply(view, Budget(200, reserve=0.0))
    assert {0, 1, 4, 9} <= kept(plan)
    assert plan.reasons[1] == "kept: among the first 2 messages"
    assert plan.reasons[4] == "kept: its turn holds a message that must stay"
    assert plan.actions[3] == "drop"
    assert_valid(plan)


# --- oldest_first: priority, pins, min_messages -------------------------------------------------

def priority_in(reason: str) -> float:
    return float(re.search(r"priority (\d+\.\d\d)", reason).group(1))


def test_a_big_old_tool_result_goes_before_a_small_recent_user_message() -> None:
    view = make_view(big_old_result_conversation(), counter=COUNTER)
    budget = Budget(view.total - 100 + 3, reserve=0.0)  # 100 tokens must go
    plan = OldestFirst().apply(view, budget)
    assert plan.fits
    assert plan.actions[2] == plan.actions[3] == "drop"
    assert re.fullmatch(r"low priority \d\.\d\d: tool result, 2 turns old, [\d,]+ tokens", plan.reasons[3])
    assert f"{view.tokens[2] + view.tokens[3]:,} tokens" in plan.reasons[3]
    assert plan.actions[5] == "keep" and "user message, 1 turn old" in plan.reasons[5]
    assert priority_in(plan.reasons[3]) < priority_in(plan.reasons[5])
    assert plan.stats["priority_threshold"] == pytest.approx(priority_in(plan.reasons[3]), abs=0.005)
    assert plan.count("drop") == 2, "only what had to go"


def test_the_weights_decide_between_age_and_size() -> None:
    msgs = [system(), user("Q1"), assistant("", "a"), tool("a", "small"), assistant("A1"),
            user("Q2"), assistant("", "b"), tool("b", padded("big:", 800)), assistant("A2"), user("Q3")]
    view = make_view(msgs, counter=COUNTER)
    budget = Budget(view.total - 5 + 3, reserve=0.0)
    by_age = OldestFirst(role_weight=0.0, size_weight=0.0, min_messages=1).apply(view, budget)
    by_size = OldestFirst(role_weight=0.0, age_weight=0.0, min_messages=1).apply(view, budget)
    assert by_age.actions[1] == "drop" and by_age.actions[7] == "keep", "age alone: the oldest turn goes"
    assert by_size.actions[7] == "drop" and by_size.actions[3] == "keep", "size alone: the biggest goes"


def test_oldest_first_never_removes_a_pinned_message() -> None:
    view = make_view(big_old_result_conversation(), counter=COUNTER, pins=[3])
    plan = OldestFirst().apply(view, Budget(view.total - 50 + 3, reserve=0.0))
    assert plan.fits
    assert {1, 2, 3, 4} <= kept(plan), "the pin keeps its call, its turn's user message and last reply"
    assert plan.reasons[3] == "pinned: never removed"
    assert plan.reasons[2] == "kept: its turn holds a pinned message"
    assert any(a == "drop" for a in plan.actions[5:9])
    assert_valid(plan)


def test_pins_on_a_sample_survive_a_tight_budget() -> None:
    view = sample_view("ecommerce_refund", pins=[5, 17])
    plan = OldestFirst().apply(view, Budget(3_000))
    assert {5, 17} <= kept(plan)
    assert_valid(plan)


@pytest.mark.parametrize("least", (4, 8, 12))
def test_oldest_first_keeps_at_least_min_messages(least: int) -> None:
    view = sample_view("ecommerce_refund")
    plan = OldestFirst(min_messages=least).apply(view, Budget(1_500))
    assert len(plan.messages) >= least
    if not plan.fits:
        assert f"the minimum of {least} messages (min_messages)" in plan.warnings[0]
    assert_valid(plan)


def test_min_messages_at_the_length_of_the_conversation_removes_nothing() -> None:
    view = sample_view("parallel_travel")
    plan = OldestFirst(min_messages=len(view)).apply(view, Budget(1_500))
    assert plan.count("drop") == 0 and not plan.fits
    assert plan.warnings[0].startswith(f"even the minimum of {len(view)} messages (min_messages) alone needs")
    assert plan.stats["kept_for_min_messages"] > 0


def test_oldest_first_warns_when_even_the_system_prompt_and_question_do_not_fit() -> None:
    view = sample_view("sql_agent")
    plan = OldestFirst(min_messages=1).apply(view, Budget(150))
    assert not plan.fits
    assert plan.warnings[0].startswith("even the system prompt, the newest user message and the pinned messages")
    assert kept(plan) == {view.first_system(), view.newest_user()}


# --- hybrid --------------------------------------------------------------------------------------

def score(plan: Plan, view, budget: Budget, recent_turns: int = 3) -> float:
    """The score hybrid documents, computed here from the plans themselves."""
    start = view.seg.turns[-min(recent_turns, len(view.seg.turns))][0]
    recent = sum(1 for i in range(start, len(view)) if plan.actions[i] == "keep") / (len(view) - start)
    fits = message_tokens(plan) <= budget.available
    value = 0.6 * (1.0 if plan.retention is None else plan.retention) + 0.3 * recent + 0.1 * fits
    return round(value if fits else value * 0.1, 4)


@pytest.mark.parametrize("name", SAMPLE_NAMES)
@pytest.mark.parametrize("max_tokens", (*BUDGETS, 12_000))
def test_hybrid_keeps_the_higher_score_and_says_so(name: str, max_tokens: int) -> None:
    view, budget = sample_view(name), Budget(max_tokens)
    plan = Hybrid().apply(view, budget)
    plans = {"middle_out": MiddleOut().apply(view, budget), "oldest_first": OldestFirst().apply(view, budget)}
    scores = {k: score(p, view, budget) for k, p in plans.items()}
    win = plan.stats["chosen"]
    lose = "oldest_first" if win == "middle_out" else "middle_out"
    assert scores[win] >= scores[lose]
    assert plan.stats[f"score.{win}"] == scores[win] and plan.stats[f"score.{lose}"] == scores[lose]
    assert plan.strategy == "hybrid" and plan.actions == plans[win].actions
    assert [m.content for m in plan.messages] == [m.content for m in plans[win].messages]
    head = f"hybrid chose {win} (score {scores[win]:.2f} vs {scores[lose]:.2f}"
    assert all(r.startswith(head) for r in plan.reasons)
    assert plan.warnings == plans[win].warnings
    assert plan.fits or plan.warnings
    assert_valid(plan)


def test_hybrid_reports_its_analysis() -> None:
    view, budget = sample_view("ecommerce_refund"), Budget(3_000)
    stats = Hybrid().apply(view, budget).stats
    tool = sum(t for t, c in zip(view.tokens, view.categories) if c == "tool_results")
    assert stats["messages"] == 22
    assert stats["tool_result_share"] == pytest.approx(tool / view.total, abs=1e-4)
    assert stats["over_budget_fraction"] == pytest.approx((view.total - budget.available) / view.total, abs=1e-4)
    assert set(stats["score_parts"]) == {"middle_out", "oldest_first"}


def test_hybrid_picks_middle_out_when_the_facts_sit_at_the_start() -> None:
    msgs = [system(), user("Please handle the claim."), assistant("", "a"), tool("a", padded("claim RF-9:", 200))]
    for k in range(5):
        msgs += [assistant(f"Step {k}."), user(f"Next {k}?"), assistant("", f"c{k}"),
                 tool(f"c{k}", padded(f"step {k}:", 200))]
    msgs += [assistant("Done."), user("Summary please.")]
    view = make_view(msgs, counter=COUNTER, facts=["RF-9"])
    budget = Budget(view.total - 500 + 3, reserve=0.0)
    plan = Hybrid().apply(view, budget)
    assert plan.stats["chosen"] == "middle_out" and plan.stats["why"] == "higher score"
    assert plan.retention == 1.0 and 3 in kept(plan) and plan.fits
    assert plan.stats["score.middle_out"] > plan.stats["score.oldest_first"]


def test_hybrid_breaks_a_tie_by_the_tool_result_share() -> None:
    view = sample_view("parallel_travel")  # everything fits: both keep it all
    plan = Hybrid().apply(view, Budget(20_000))
    assert plan.stats["score.middle_out"] == plan.stats["score.oldest_first"]
    assert plan.stats["tool_result_share"] >= 0.5 and plan.stats["chosen"] == "oldest_first"
    assert plan.reasons[0].startswith("hybrid chose oldest_first (score 1.00 vs 1.00, a tie; tool results are at least")


# --- validity and determinism on generated conversations ------------------------------------------

@pytest.mark.parametrize("seed", (1, 2, 3))
@pytest.mark.parametrize("strategy", ("middle_out", "oldest_first", "hybrid"))
def test_valid_for_both_providers_and_deterministic(seed: int, strategy: str) -> None:
    conv = generate("ecommerce", turns=6, rounds_per_turn=3, result_tokens=500, parallel_calls=3, seed=seed)
    pins = [len(conv.messages) // 3]
    for max_tokens in BUDGETS:
        view, budget = make_view(conv, counter=COUNTER, pins=pins), Budget(max_tokens)
        plan = get_strategy(strategy).apply(view, budget)
        assert_valid(plan)
        assert {view.first_system(), view.newest_user()} <= kept(plan)
        assert plan.fits or any("budget" in w for w in plan.warnings)
        again = get_strategy(strategy).apply(make_view(conv, counter=COUNTER, pins=pins), budget)
        assert (again.actions, again.reasons, again.origin, again.stats) == \
            (plan.actions, plan.reasons, plan.origin, plan.stats)
