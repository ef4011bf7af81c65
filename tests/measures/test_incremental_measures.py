"""The measures' fast paths against the straightforward computation they replace, on real traces
(tests/data/coding, the bundled coding session, tau-bench airline runs) and a generated one:

* ``needed_facts`` finds each need's source and whether its turn held it from ``FactIndex`` (which
  messages hold a fact) instead of checking every earlier message;
* ``FactCheck`` walking a replay keeps an index of the prompt from call to call (only what arrived
  is added while a prompt extends the previous one) instead of reading every message at every call;
* ``BreakWatch.breaks`` reads the state of each break's message in one pass over the replay's
  events instead of asking ``Replay.cell`` once per break.

Each is compared with the plain computation written here, so a fast path that drifts fails."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import ctxlab
from ctxlab.cache_breaks import BreakWatch
from ctxlab.fidelity import FactCheck, Need, _find_needs, needed_facts
from ctxlab.generate import generate
from ctxlab.replay import observers, replay
from ctxlab.strategies import STRATEGIES, Budget, get_strategy, make_view
from ctxlab.strategies.plan import REMOVED

from ..conftest import SAMPLES, SHARED

ROOT = Path(__file__).resolve().parents[2]
CODING = sorted(p for p in (ROOT / "tests" / "data" / "coding").iterdir() if p.suffix in (".json", ".jsonl", ".traj"))
STRATEGY_NAMES = ("sliding_window", "clear_tool_results", "summarize", "tool_rounds", "observation_masking",
                  "offload", "middle_out", "none")


def _tau(k: int) -> ctxlab.Conversation:
    runs = json.loads((SHARED / "tau-bench" / "airline_trajectories_trials01.json").read_text())
    tools = json.loads((SHARED / "tau-bench" / "tools_airline.json").read_text())
    return ctxlab.loads(json.dumps({"model": "gpt-4o", "messages": runs[k]["traj"], "tools": tools}))


def _traces() -> list[tuple[str, ctxlab.Conversation]]:
    out = [(p.name, ctxlab.load(p)) for p in CODING]
    out.append(("coding_agent_session", ctxlab.load(SAMPLES / "coding" / "coding_agent_session.jsonl")))
    if (SHARED / "tau-bench").is_dir():
        out += [(f"tau-bench airline {k}", _tau(k)) for k in (0, 3, 7, 12)]
    out.append(("generated ecommerce", generate("ecommerce", turns=12, rounds_per_turn=5, result_tokens=300, seed=3)))
    return out


TRACES = _traces()


class _Scan:
    """What ``FactIndex`` answers, found by checking every message (as before the index)."""

    def __init__(self, per_message):
        self.per_message = per_message

    def holders(self, need: Need) -> list[int]:
        return [i for i, f in enumerate(self.per_message) if need.served_by(f)]


def _needs_by_scan(conv: ctxlab.Conversation) -> tuple[Need, ...]:
    """``needed_facts``'s needs with every earlier message checked for each fact, not looked up."""
    return _find_needs(tuple(conv.messages), index=_Scan).needs


@pytest.mark.parametrize("name,conv", TRACES, ids=[n for n, _ in TRACES])
def test_needs_found_through_the_index_are_those_a_scan_finds(name, conv):
    assert needed_facts(conv).needs == _needs_by_scan(conv)


@pytest.mark.parametrize("name,conv", TRACES, ids=[n for n, _ in TRACES])
def test_the_index_holds_every_message_that_serves_a_need(name, conv):
    nf = needed_facts(conv)
    for need in nf.needs:
        if not need.lines:
            assert list(nf.holders.holders(need)) == [i for i, f in enumerate(nf.per_message) if need.served_by(f)]


class _Both:
    """One walk, two checks: the incremental one as a replay calls it, and the plain one that reads
    every message of every prompt."""

    def __init__(self, nf) -> None:
        self.fast, self.plain = FactCheck(nf), FactCheck(nf)

    def __call__(self, call, view) -> None:
        self.fast(call, view)
        if self.plain.counter is None:
            self.plain.counter = view.counter
        self.plain.check(call, view.messages, view.origin)


def _cells(rp, breaks) -> list[str]:
    """Each break's cause read through ``Replay.cell`` (the plain way)."""
    out = []
    for b in breaks:
        if b.position < 0:
            out.append("tools")
            continue
        if b.origin is None:
            out.append("refold")
            continue
        state = rp.cell(b.call, b.origin)
        out.append(("summarize" if state == "summarize" else "drop") if state in REMOVED else
                   state if state in ("clear", "truncate") else b.cause if b.cause in ("summarize", "changed") else "?")
    return out


def _strategies(budget: Budget):
    for name in STRATEGY_NAMES:
        s = get_strategy(name, **STRATEGIES[name].scaled_defaults(budget)) if STRATEGIES[name].scaling else \
            get_strategy(name)
        for where in ("every_call", "turn_start"):
            yield dataclasses.replace(s, apply_at=where) if hasattr(s, "apply_at") else s


@pytest.mark.parametrize("name,conv", TRACES, ids=[n for n, _ in TRACES])
def test_the_walked_fact_check_and_the_break_causes_equal_the_plain_ones(name, conv):
    nf = needed_facts(conv)
    total = make_view(conv).total
    limits = sorted({max(1_500, total // 3), max(2_000, total // 2), 4_000, 8_000})
    checked = missed = breaks = 0
    for limit in limits:
        budget = Budget(limit, 0.15, 0)
        for strategy in _strategies(budget):
            both = _Both(nf)
            watch = BreakWatch(0)
            rp = replay(conv, strategy, budget, observe=observers(both, watch))
            fast, plain = both.fast.fidelity(rp.strategy), both.plain.fidelity(rp.strategy)
            assert fast.to_dict() == plain.to_dict(), (strategy, limit)
            found = watch.breaks(rp)
            assert [b.cause for b in found] == _cells(rp, found), (strategy, limit)
            checked += plain.needed
            missed += len(plain.misses)
            breaks += len(found)
    if len(nf.needs) >= 5:
        assert checked  # needs were checked, not skipped


def test_the_comparisons_see_misses_and_breaks():
    """The traces above exercise the paths that matter: misses (a prompt that lost a fact), breaks of
    every kind the strategies make, and prompts that extend the previous one and prompts that do not."""
    conv = generate("ecommerce", turns=12, rounds_per_turn=5, result_tokens=300, seed=3)
    nf = needed_facts(conv)
    budget = Budget(3_000, 0.15, 0)
    both, watch = _Both(nf), BreakWatch(0)
    rp = replay(conv, get_strategy("clear_tool_results", **STRATEGIES["clear_tool_results"].scaled_defaults(budget)),
                budget, observe=observers(both, watch))
    assert both.plain.fidelity(rp.strategy).misses
    assert any(c.extends_previous for c in rp.calls) and any(not c.extends_previous for c in rp.calls[1:])
    assert {b.cause for b in watch.breaks(rp)} & {"clear", "drop"}


def test_the_same_conversation_read_again_gets_its_facts_bound_to_its_own_messages():
    from ctxlab.fidelity import _find_needs
    text = (SAMPLES / "coding" / "coding_agent_session.jsonl").read_text(encoding="utf-8")
    first, second = ctxlab.loads(text), ctxlab.loads(text)
    assert first.messages[3] is not second.messages[3] and first.messages == second.messages
    a, b = needed_facts(first), needed_facts(second)
    assert b.messages is second.messages and b.needs == _find_needs(second.messages).needs == a.needs
    budget = Budget(4_000, 0.15, 0)
    s = get_strategy("observation_masking", **STRATEGIES["observation_masking"].scaled_defaults(budget))
    got, fresh = FactCheck(b), FactCheck(_find_needs(second.messages))
    replay(second, s, budget, observe=observers(got, fresh))
    assert got.fidelity("x").to_dict() == fresh.fidelity("x").to_dict()


def test_a_conversation_that_differs_in_one_message_has_its_own_facts():
    conv = ctxlab.load(SAMPLES / "coding" / "coding_agent_session.jsonl")
    needed_facts(conv)
    k = max(i for i, m in enumerate(conv.messages) if m.role == "tool")
    changed = list(conv.messages)
    changed[k] = dataclasses.replace(changed[k], content="nothing here")
    other = conv.with_messages(tuple(changed))
    assert len(other) == len(conv)
    assert needed_facts(other).needs == _find_needs(other.messages).needs
    assert needed_facts(other).per_message[k].lower == "nothing here"


def test_a_conversation_read_again_after_two_others_still_gets_its_facts(monkeypatch):
    """The Lab finds a conversation's facts, Where it runs finds its two bundled samples', then reads
    the sidebar's conversation again: still found, not searched again."""
    import ctxlab.fidelity as fidelity
    text = (SAMPLES / "coding" / "coding_agent_session.jsonl").read_text(encoding="utf-8")
    # as an earlier test may leave it: the session found, then two others after it (third of four kept)
    needed_facts(ctxlab.loads(text))
    for seed in (11, 12):
        needed_facts(generate("ecommerce", turns=2, rounds_per_turn=1, seed=seed))
    needed_facts(ctxlab.loads(text))  # the Lab's reading: a hit, which must move it to the front
    needed_facts(generate("ecommerce", turns=3, rounds_per_turn=2, seed=1))
    needed_facts(generate("ecommerce", turns=3, rounds_per_turn=2, seed=2))
    monkeypatch.setattr(fidelity, "_find_needs", lambda messages: pytest.fail("found again"))
    assert needed_facts(ctxlab.loads(text)).needs
