"""A view extended message by message (``View.append``, as the per-call replay and a live agent
grow it) plans exactly as a view built from scratch, for every strategy, on real conversations:
the bundled samples, a coding-agent session, and tau-bench airline runs (alone and concatenated
into one long conversation). Views taken earlier stay as they were while their log grows."""
from __future__ import annotations

import json

import pytest

import ctxlab
from ctxlab.strategies import STRATEGIES, Budget, auto_facts, get_strategy, make_view
from ctxlab.tokens import TokenCounter

from ..conftest import ROOT, SHARED, needs_shared

COUNTER = TokenCounter("gpt-4o")
FIELDS = ("messages", "tokens", "categories", "seg", "facts", "fact_masks", "pins", "origin")
SAMPLES = ("agent_run_support.json", "ecommerce_refund.json", "parallel_travel.json", "sql_agent.json",
           "zh_support_agent.json")


def _plan_key(plan) -> tuple:
    return (plan.actions, plan.reasons, plan.origin, plan.output_tokens, [m.content for m in plan.messages],
            [m.tool_calls for m in plan.messages], plan.warnings, plan.notes, dict(plan.stats), dict(plan.state),
            plan.retention, plan.idle)


def _same_view(a, b) -> None:
    for f in FIELDS:
        assert getattr(a, f) == getattr(b, f), f
    assert (a.roles, a.total, a.category_sums, a.fact_counts, a.compactions, a.first_system(), a.newest_user(),
            a.preamble) == (b.roles, b.total, b.category_sums, b.fact_counts, b.compactions, b.first_system(),
                            b.newest_user(), b.seg.preamble)


def _strategies(budget: Budget) -> dict[str, object]:
    """Every registered strategy, at its budget-scaled defaults (so each one acts at this budget)."""
    out = {}
    for name, cls in STRATEGIES.items():
        params = cls.scaled_defaults(budget)
        out[name] = get_strategy(name, **{k: tuple(v) if isinstance(v, list) else v for k, v in params.items()})
    return out


def _grow_and_compare(messages, budget: Budget, every: int) -> int:
    """Grow a view one message at a time, planning every strategy on the parent before each append
    (so the per-view tables are extended, not rebuilt) and comparing, every ``every`` messages, each
    plan with the plan of a view built from scratch. Returns how many plans were compared."""
    facts = auto_facts(messages)
    strategies = _strategies(budget)
    view = make_view(messages[:1], counter=COUNTER, facts=facts)
    earlier = []
    compared = 0
    for k in range(1, len(messages) + 1):
        if k > 1:
            for s in strategies.values():  # the parent's tables filled, as in a live agent
                s.apply(view, budget)
            view = view.append(messages[k - 1])
        if k % every and k != len(messages):
            continue
        whole = make_view(messages[:k], counter=COUNTER, facts=facts)
        _same_view(view, whole)
        for name, s in strategies.items():
            assert _plan_key(s.apply(view, budget)) == _plan_key(s.apply(whole, budget)), (name, k)
            compared += 1
        earlier.append((k, view))
    for k, old in earlier:  # the views handed out before stay as they were
        _same_view(old, make_view(messages[:k], counter=COUNTER, facts=facts))
    _unread_views_stay(messages, facts)
    return compared


def _unread_views_stay(messages, facts) -> None:
    """Views nobody read while the log grew past them (their tuples built only now) are the views
    of their own prefix: a tool result joining an earlier round does not show in them."""
    view = make_view(messages[:1], counter=COUNTER, facts=facts)
    chain = [view]
    for m in messages[1:]:
        view = view.append(m)
        chain.append(view)
    for k, old in enumerate(chain, 1):
        _same_view(old, make_view(messages[:k], counter=COUNTER, facts=facts))


@pytest.mark.parametrize("name", SAMPLES)
def test_sample_conversations_plan_the_same_grown_or_rebuilt(name):
    conv = ctxlab.load(ROOT / "sample_data" / name)
    messages = list(conv.messages)
    total = COUNTER.count(messages, tools=()).total
    assert _grow_and_compare(messages, Budget(max(total // 3, 600), reserve=0), every=3) > 0


def test_a_coding_agent_session_plans_the_same_grown_or_rebuilt():
    conv = ctxlab.load(ROOT / "sample_data" / "coding" / "coding_agent_session.jsonl")
    messages = list(conv.messages)
    total = COUNTER.count(messages, tools=()).total
    assert _grow_and_compare(messages, Budget(max(total // 4, 800), reserve=0), every=7) > 0


def _tau(k: int):
    runs = json.loads((SHARED / "tau-bench" / "airline_trajectories_trials01.json").read_text())
    return [list(ctxlab.loads(json.dumps({"messages": r["traj"]})).messages) for r in runs[:k]]


@needs_shared
@pytest.mark.parametrize("limit", [3_000, 8_000])
def test_tau_bench_runs_plan_the_same_grown_or_rebuilt(limit):
    for messages in _tau(4):
        assert _grow_and_compare(messages, Budget(limit, reserve=0), every=2) > 0


@needs_shared
def test_concatenated_tau_bench_runs_plan_the_same_grown_or_rebuilt():
    """Five runs one after the other: one long conversation with many turns and system prompts."""
    messages = [m for run in _tau(5) for m in run]
    assert _grow_and_compare(messages, Budget(6_000, reserve=0), every=9) > 0


@needs_shared
def test_a_branch_keeps_both_children_right():
    """Two messages appended to the same parent (a view that is no longer the newest of its log):
    each child is the view of its own conversation, and the parent is unchanged."""
    messages = _tau(1)[0]
    facts = auto_facts(messages)
    parent = make_view(messages[:10], counter=COUNTER, facts=facts).append(*messages[10:15])
    first = parent.append(*messages[15:20])
    second = parent.append(messages[25], messages[26])
    third = parent.append(*messages[15:17])  # the same messages as the log holds next: shared
    _same_view(first, make_view(messages[:20], counter=COUNTER, facts=facts))
    _same_view(second, make_view(messages[:15] + messages[25:27], counter=COUNTER, facts=facts))
    _same_view(third, make_view(messages[:17], counter=COUNTER, facts=facts))
    _same_view(parent, make_view(messages[:15], counter=COUNTER, facts=facts))
    assert third._log is first._log and second._log is not first._log


def test_a_run_of_lone_user_messages_merges_into_one_counted_once_and_searched():
    """Four user messages left alone in a row become one message whose tokens are counted as sent
    and whose facts are found (the intermediate merges are not counted: only the final one is sent)."""
    from ctxlab.conversation import Message
    from ctxlab.strategies.plan import merge_lone_users
    msgs = [Message("user", "Refund KC-1001"), Message("assistant", "x"), Message("user", "and R-3"),
            Message("assistant", "y"), Message("user", ""), Message("assistant", "z"), Message("user", "thanks")]
    view = make_view(msgs, counter=COUNTER, facts=("KC-1001", "R-3", "thanks"))
    kept = [0, 2, 4, 6]
    out = merge_lone_users(view, [msgs[i] for i in kept], kept, [view.tokens[i] for i in kept],
                           {"user": sum(view.tokens[i] for i in kept)}, [""] * len(msgs))
    messages, origin, tokens, sums, reasons, note, mask = out
    assert [m.content for m in messages] == ["Refund KC-1001\n\nand R-3\n\nthanks"] and origin == [6]
    assert tokens == [COUNTER.message(messages[0])] and sums["user"] == tokens[0]
    assert mask == 0b111 and all("merged into user message 6" in reasons[i] for i in (0, 2, 4))
    assert note.startswith("3 user message(s)")


@needs_shared
def test_a_replay_reads_counts_and_facts_from_the_conversation_once_and_gives_the_same_calls():
    """The per-call replay takes each message's counts and fact masks from the view of the whole
    conversation (kept for the last two conversations): a second replay, a replay of a View, and a
    replay with that cache emptied give the same calls, events and prompts."""
    import ctxlab.replay as module
    conv = ctxlab.loads(json.dumps({"model": "gpt-4o", "messages": [m for run in _tau_raw(3) for m in run]}))
    budget = Budget(5_000, reserve=0)

    def key(r):
        return (r.calls, r.events, r.removed_at, [r.context_at(c.number) for c in r.calls],
                [r.origins_at(c.number) for c in r.calls])

    module._WHOLE.clear()
    first = module.replay(conv, "summarize", budget)
    assert len(module._WHOLE) == 1
    whole = next(iter(module._WHOLE.values()))[1]
    again = module.replay(conv, "summarize", budget)
    assert next(iter(module._WHOLE.values()))[1] is whole  # found once, reused
    module._WHOLE.clear()
    fresh = module.replay(conv, "summarize", budget)
    of_view = module.replay(make_view(conv), "summarize", budget)
    assert first.times_triggered > 0
    assert key(first) == key(again) == key(fresh) == key(of_view)


def _tau_raw(k: int):
    runs = json.loads((SHARED / "tau-bench" / "airline_trajectories_trials01.json").read_text())
    return [r["traj"] for r in runs[:k]]
