"""Plans side by side: figures and findings per plan, decisions aligned by input message, and a
verdict that follows its stated rule."""
from __future__ import annotations


import pytest

import ctxlab
from ctxlab.compare import (ACTION_WORDS, DEFAULT_STRATEGIES, PlanMetrics, action_table,
                            column_labels, cost_sentence, Note, finding_changes, finding_rows, plan_metrics,
                            outcome_notes, verdict_by_recall)
from ctxlab.measure import measure
from ctxlab.pricing import parse_price_override
from ctxlab.replay import replay
from ctxlab.strategies import STRATEGIES, Budget, get_strategy, make_view
from ctxlab.findings import rule_finding
from ctxlab.validate import validate

from ..builders import assistant, system, tool, user
from ..conftest import SAMPLES

LABELS = {"keep": "K", "drop": "D", "summarize": "S", "clear": "C", "truncate": "T"}


@pytest.fixture(scope="module")
def refund():
    conv = ctxlab.load(SAMPLES / "ecommerce_refund.json")
    counter = ctxlab.TokenCounter("gpt-4o")
    view = make_view(conv, counter=counter)
    budget = Budget(16_000, 0.15, counter.tools(conv.tools))  # the app's default budget
    plans = [get_strategy(n).apply(view, budget) for n in DEFAULT_STRATEGIES]
    return view, plans


def _orphan_plan():
    """langchain_trim keeping a tool result without its call (langchain issue 33245)."""
    msgs = [system(), user("Where is order KC-1?"), assistant("", "c1"), tool("c1", "shipped " * 40),
            assistant("It shipped."), user("Thanks, and KC-2?"), assistant("Let me check.")]
    view = make_view(msgs, "gpt-4o")
    limit = view.tokens[0] + sum(view.tokens[3:])
    return get_strategy("langchain_trim", start_on="none", max_tokens=limit).apply(view, Budget(100_000))


def _m(label: str, *, fits: bool = True, retention: float | None = 1.0, saved: int = 100,
       error: bool = False) -> PlanMetrics:
    found = (rule_finding("orphan_tool_result", "error", 1, "x", "openai"),) if error else ()
    return PlanMetrics(label, 1_000, 1_000 - saved, 0, retention, fits, {"openai": found, "anthropic": ()}, ())


def test_defaults_are_four_different_registered_strategies():
    assert len(set(DEFAULT_STRATEGIES)) == 4 and all(n in STRATEGIES for n in DEFAULT_STRATEGIES)


def test_measure_reports_the_plan_figures_and_its_findings_under_both_rule_sets(refund):
    _, plans = refund
    for p in plans:
        m = plan_metrics(p, p.strategy)
        assert (m.tokens_before, m.tokens_after, m.saved, m.fits, m.retention) == (
            p.tokens_before, p.tokens_after, p.saved, p.fits, p.retention)
        assert m.removed == p.count("drop") + p.count("summarize") == len(p.actions) - sum(
            o is not None for o in p.origin)
        assert m.findings["openai"] == tuple(validate(list(p.messages), "openai"))
        assert m.findings["anthropic"] == tuple(validate(list(p.messages), "anthropic"))
        assert m.warnings == p.warnings
    clear = plan_metrics(plans[3], "clear")
    assert not clear.fits and clear.saved_share == 0 and clear.row()["fits"] == "no"
    assert clear.row()["warnings"] == 1


def test_a_baseline_that_breaks_a_pair_is_measured_as_rejected():
    plan = _orphan_plan()
    m = plan_metrics(plan, "1 · langchain_trim")
    assert m.errors("openai") == 1 and m.errors("anthropic") >= 1 and not m.accepted
    assert m.row()["openai findings"] >= 1
    rows = finding_rows([m], [plan])
    orphan = next(r for r in rows if r["rules"] == "openai" and r["code"] == "orphan_tool_result")
    assert orphan["input message"] == 3 and orphan["strategy"] == "1 · langchain_trim"
    assert orphan["result message"] == 1 and orphan["severity"] == "error"


def test_column_labels_are_unique_even_for_the_same_strategy_twice():
    assert column_labels(["tool_rounds", "tool_rounds"]) == ["1 · tool_rounds", "2 · tool_rounds"]
    assert column_labels(["a", "b"], [1, 3]) == ["1 · a", "3 · b"]
    with pytest.raises(ValueError, match="column number"):
        column_labels(["a", "b"], [1, 1])


def test_action_table_has_one_row_per_message_and_one_column_per_plan(refund):
    view, plans = refund
    labels = column_labels([p.strategy for p in plans])
    rows = action_table(view.roles, view.tokens, plans, labels, LABELS)
    assert len(rows) == len(view)
    assert list(rows[0]) == ["#", "role", "tokens", *labels]
    for i, row in enumerate(rows):
        assert (row["#"], row["role"], row["tokens"]) == (i, view.roles[i], view.tokens[i])
        assert [row[lab] for lab in labels] == [LABELS[p.actions[i]] for p in plans]


def test_reasons_get_their_own_column_only_for_the_plans_asked(refund):
    view, plans = refund
    labels = column_labels([p.strategy for p in plans])
    rows = action_table(view.roles, view.tokens, plans, labels, LABELS, [False, True])
    assert list(rows[0]) == ["#", "role", "tokens", labels[0], labels[1], f"{labels[1]} reason", *labels[2:]]
    for i, row in enumerate(rows):
        assert row[labels[1]] == LABELS[plans[1].actions[i]]  # the action stays a bare word (a badge)
        assert row[f"{labels[1]} reason"] == plans[1].reasons[i]
        assert row[labels[0]] == LABELS[plans[0].actions[i]] and row[labels[2]] == LABELS[plans[2].actions[i]]


def test_action_words_are_plain_words_without_emoji():
    """Emoji show as empty boxes in a browser without an emoji font (Debian's chromium)."""
    assert set(ACTION_WORDS) >= {"keep", "summarize", "clear", "truncate", "drop", "insert"}
    for word in ACTION_WORDS.values():
        assert word.replace(" ", "").isalpha() and word.isascii(), word


def test_action_table_refuses_plans_of_another_conversation(refund):
    view, plans = refund
    with pytest.raises(ValueError, match="decides 7 messages"):
        action_table(view.roles, view.tokens, [plans[0], _orphan_plan()], ["a", "b"], LABELS)
    with pytest.raises(ValueError, match="labels"):
        action_table(view.roles, view.tokens, plans, ["a"], LABELS)


def _refund_budget():
    conv = ctxlab.load(SAMPLES / "ecommerce_refund.json")
    return conv, Budget(16_000, 0.15, ctxlab.TokenCounter("gpt-4o").tools(conv.tools))


def test_measure_of_replays_already_made_gives_what_measuring_from_the_start_gives():
    conv, budget = _refund_budget()
    strategy = get_strategy("tool_rounds", keep_rounds=0)
    mine = measure(conv, replayed=replay(conv, strategy, budget, model="gpt-4o"),
                   baseline=replay(conv, "none", budget, model="gpt-4o"), model="gpt-4o", price=None)
    assert mine.summary() == measure(conv, strategy, budget, model="gpt-4o").summary()


def test_the_page_verdict_picks_by_needed_recall_then_cost_where_the_plan_rule_picks_another():
    conv, budget = _refund_budget()
    view = make_view(conv, counter=ctxlab.TokenCounter("gpt-4o"))
    names = ["sliding_window", "tool_rounds"]
    strategies = [get_strategy(n, **STRATEGIES[n].scaled_defaults(budget)) for n in names]
    metrics = [plan_metrics(s.apply(view, budget), lab) for s, lab in zip(strategies, column_labels(names))]
    measures = [measure(conv, s, budget, model="gpt-4o") for s in strategies]
    assert measures[1].needed_recall < measures[0].needed_recall
    v = verdict_by_recall(metrics, measures)
    assert v.winner == 0 and v.text.startswith("1 · sliding_window wins")


def test_the_page_verdict_gives_a_full_tie_to_the_leftmost_and_says_who_did_not_qualify():
    conv = ctxlab.load(SAMPLES / "ecommerce_refund.json")
    budget = Budget(100_000, 0.15, ctxlab.TokenCounter("gpt-4o").tools(conv.tools))
    view = make_view(conv, counter=ctxlab.TokenCounter("gpt-4o"))
    idle = [get_strategy("tool_rounds", keep_rounds=50), get_strategy("none")]  # neither acts: the same replay
    metrics = [plan_metrics(s.apply(view, budget), lab) for s, lab in zip(idle, ["a", "b"])]
    measures = [measure(conv, s, budget, model="gpt-4o") for s in idle]
    assert measures[0].summary() == measures[1].summary() and measures[0].needed_recall == 1.0
    assert verdict_by_recall(metrics, measures).winner == 0
    assert verdict_by_recall(metrics[::-1], measures[::-1]).winner == 0
    assert "It saves nothing over keeping everything" in verdict_by_recall(metrics, measures).text
    over = measure(conv, get_strategy("none"), Budget(6_000, 0.15, budget.tools_tokens), model="gpt-4o")
    assert not over.replay.fits, "some call of the replay is over 6,000 tokens"
    v = verdict_by_recall(metrics, [over, measures[1]])
    assert v.winner == 1 and "1 of 2 did not qualify" in v.text
    nothing = verdict_by_recall(metrics[:1], [over])
    calls = f"{over.replay.calls_over_limit} of {len(over.replay.calls)} calls"
    assert nothing.winner is None and f"calls over the limit: a ({calls})" in nothing.text


def test_the_cost_sentence_shows_tokens_saved_and_the_cost_against_keeping_everything():
    conv, budget = _refund_budget()
    m = measure(conv, get_strategy("tool_rounds", keep_rounds=0), budget, model="gpt-4o")
    s = m.summary()
    text = cost_sentence(m)
    assert f"input tokens: {abs(s['tokens_vs_none']):.0%} less than keeping everything" in text
    assert f"({m.cost.input_tokens:,} vs {m.cost_none.input_tokens:,}" in text
    assert f"${m.cost.cost_usd:.4f} vs ${m.cost_none.cost_usd:.4f}" in text


def test_the_cost_sentence_says_more_when_losing_the_cache_costs_more_than_the_tokens_saved():
    """With a cache read priced at 1% of input, a strategy that rewrites the prompt every turn can send fewer
    tokens yet cost more than keeping everything, which the cache serves almost free."""
    conv, budget = _refund_budget()
    price = parse_price_override("input=10,cached=0.1,output=0", "gpt-4o")
    for name, params in [("sliding_window", {"max_tokens": 1500}), ("tool_rounds", {"keep_rounds": 0}),
                         ("summarize", {"trigger_messages": 4, "keep_recent": 2})]:
        m = measure(conv, get_strategy(name, **params), budget, model="gpt-4o", price=price)
        s = m.summary()
        if s["tokens_vs_none"] < 0 < s["cost_vs_none"]:
            text = cost_sentence(m)
            assert "less than keeping everything" in text and f"cost: {s['cost_vs_none']:.0%} more" in text
            return
    pytest.fail("no strategy both saved tokens and cost more with a 99% cache discount")


def test_the_cost_sentence_says_when_there_is_no_price():
    conv, budget = _refund_budget()
    m = measure(conv, get_strategy("tool_rounds", keep_rounds=0), budget, model="llama")
    assert m.cost.cost_usd is None and "no price for llama, so tokens only" in cost_sentence(m)


# ---------------------------------------------------------------- the input's own findings


def _broken_input():
    """A pasted conversation whose tool result (#3) answers no call: the input itself is invalid."""
    return [system(), user("Where is order KC-1?"), assistant("Looking."), tool("c9", "shipped " * 60),
            assistant("It shipped."), user("And KC-2?"), assistant("Let me check.")]


def _notes_for(msgs, strategy, limit=100_000):
    view = make_view(msgs, "gpt-4o")
    plan = strategy.apply(view, Budget(limit))
    inputs = {r: validate(msgs, r) for r in ("openai", "anthropic")}
    results = {r: validate(list(plan.messages), r) for r in ("openai", "anthropic")}
    return plan, outcome_notes(plan, inputs, results, idle=None)


def test_an_invalid_input_kept_as_is_is_reported_and_never_called_valid():
    plan, notes = _notes_for(_broken_input(), get_strategy("none"))
    texts = [n.text for n in notes]
    assert any(n.level == "warning" and "input itself breaks the rules" in n.text and "orphan_tool_result at message #3"
               in n.text for n in notes), texts
    assert any("still in the result" in t for t in texts)
    assert not [n for n in notes if n.level == "success"]
    assert not [t for t in texts if ".." in t]  # the finding's own full stop is not doubled


def test_a_strategy_that_drops_the_broken_message_is_said_to_have_repaired_it_by_chance():
    msgs = _broken_input()
    view = make_view(msgs, "gpt-4o")
    plan, notes = _notes_for(msgs, get_strategy("sliding_window", max_tokens=sum(view.tokens[4:]) + 20))
    assert plan.actions[3] == "drop"
    changes = finding_changes(validate(msgs, "openai"), validate(list(plan.messages), "openai"), plan.origin,
                              "openai")
    assert [f.code for f in changes.repaired] == ["orphan_tool_result"] and not changes.remaining
    texts = [n.text for n in notes]
    assert any("input itself breaks the rules" in t for t in texts)
    assert any(n.level == "info" and "happened to repair 1 of them (orphan_tool_result at #3)" in n.text
               for n in notes), texts
    assert not any("still in the result" in t for t in texts)
    assert "success" not in [n.level for n in notes]  # valid by chance is not "all good"


def test_the_green_box_only_when_the_strategy_acted_and_the_result_fits_and_passes(refund):
    view, plans = refund
    valid = {r: [] for r in ("openai", "anthropic")}
    rounds, clear = plans[1], plans[3]
    assert rounds.fits and not clear.fits
    assert [n.level for n in outcome_notes(rounds, valid, valid)] == ["success"]
    over = outcome_notes(clear, valid, valid)
    assert over[0].level == "warning" and over[0].text.startswith("The result does not fit")
    assert "success" not in [n.level for n in over]
    idle = outcome_notes(rounds, valid, valid, idle="its trigger of 100,000 tokens was not reached.")
    assert idle[0] == Note("info", "The strategy did not act: its trigger of 100,000 tokens was not reached.")
    assert "success" not in [n.level for n in idle]


def test_each_column_s_measures_carry_the_cache_breaks_of_its_replay():
    """Compare shows per column how often the prompt broke the cache and the cached tokens lost: the
    figures ``cache_breaks`` gives on that column's replay, from either way of measuring it."""
    from ctxlab.cache_breaks import cache_breaks
    from ctxlab.pricing import Price
    from .test_cache_breaks import TRACE
    price = Price("test", input=2.0, output=8.0, cached_input=0.5, cache="openai")
    conv, budget = ctxlab.load(TRACE), Budget(32_000)
    masking = get_strategy("observation_masking", window=3)
    r = replay(conv, masking, budget, model="gpt-4o")
    found = cache_breaks(r, conv, model="gpt-4o", price=price)
    s = measure(conv, replayed=r, baseline=replay(conv, "none", budget, model="gpt-4o"), model="gpt-4o", price=price).summary()
    assert s["cache_breaks"] == len(found) >= 8
    assert s["cache_tokens_lost"] == sum(b.tokens_lost for b in found) > 0
    assert s == measure(conv, masking, budget, model="gpt-4o", price=price).summary()
    assert measure(conv, "none", budget, model="gpt-4o", price=price).summary()["cache_breaks"] == 0
