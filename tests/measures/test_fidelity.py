"""needed_recall: the facts each assistant message used that came from earlier, and whether the
context the strategy left for that turn still held them. Hand-made conversations with a known
answer."""
from __future__ import annotations

import json

import pytest

from ctxlab.conversation import Message, ToolCall
from ctxlab.fidelity import extract_facts, needed_facts, needed_recall
from ctxlab.replay import replay
from ctxlab.strategies import Budget, get_strategy

from ..builders import system, user
from ..conftest import SAMPLES


def call(cid: str, name: str, args: str, text: str = "") -> Message:
    """An assistant message making one tool call with these JSON arguments."""
    return Message("assistant", text, tool_calls=(ToolCall(cid, name, args),))


def result(cid: str, text: str) -> Message:
    """A tool result."""
    return Message("tool", text, tool_call_id=cid)


def padding(n: int = 60) -> str:
    """Filler text with no fact in it, to make a tool result big."""
    return " ".join(["the weather was mild and nothing else happened"] * n)


def lookup_then_cancel() -> list[Message]:
    """Turn 0 looks a reservation up (its id is only in the tool result); turn 1 cancels it,
    passing that id to the next call. Dropping turn 0's tool round loses the id."""
    return [
        system("You are an airline agent."),
        user("Find my booking, I am mia_li_3668."),
        call("c1", "get_user", '{"user_id":"mia_li_3668"}'),
        result("c1", '{"reservations":["NO6JO3"],"note":"' + padding() + '"}'),
        Message("assistant", "You have one reservation."),
        user("Cancel it please."),
        call("c2", "cancel_reservation", '{"reservation_id":"NO6JO3"}'),
        result("c2", '{"status":"cancelled"}'),
        Message("assistant", "Reservation NO6JO3 is cancelled."),
    ]


def test_facts_are_identifiers_dates_and_amounts_in_one_spelling():
    found = extract_facts("Order KC-482193 for $1,234.50 on 2024-05-15 (ref NO6JO3, mia_li_3668, a.b@x.io); 12 bags")
    assert found == {"KC-482193", "1234.5", "2024-05-15", "NO6JO3", "mia_li_3668", "a.b@x.io"}
    assert extract_facts('{"amount": 1234.50}') == {"1234.5"}


def test_an_id_from_a_tool_result_used_by_the_next_call_is_needed():
    nf = needed_facts(lookup_then_cancel())
    pairs = {(n.fact, n.source, n.needed_by) for n in nf.needs}
    assert ("NO6JO3", 3, 6) in pairs            # the cancel call uses the id the lookup returned
    assert ("mia_li_3668", 1, 2) in pairs       # the lookup uses the id the user gave
    assert not any(n.fact == "cancelled" for n in nf.needs)


def test_dropping_the_tool_result_whose_id_the_next_call_uses_is_a_miss():
    conv = lookup_then_cancel()
    tight = replay(conv, get_strategy("tool_rounds", keep_rounds=0), Budget(100_000))
    fid = needed_recall(tight, conv)
    # the cancel call (6) and, since the strategy runs before every call, the answer (8) lost it
    assert [(m.fact, m.source, m.needed_by, m.turn) for m in fid.misses] == [("NO6JO3", 3, 6, 1), ("NO6JO3", 3, 8, 1)]
    assert fid.needed_recall == pytest.approx((fid.needed - 2) / fid.needed)
    assert fid.turns[-1].recall < 1
    kept = needed_recall(replay(conv, "none", Budget(100_000)), conv)
    assert kept.needed == fid.needed and kept.needed_recall == 1.0 and kept.misses == ()


def test_facts_used_in_the_turn_that_produced_them_can_be_missed():
    """An agent run: one task, a lookup, then a call using the id the lookup returned. A strategy that
    runs before every call and keeps no old round loses the id; at turn start it cannot."""
    conv = [system("You are an airline agent."), user("Cancel the booking of mia_li_3668."),
            call("c1", "get_user", '{"user_id":"mia_li_3668"}'),
            result("c1", '{"reservations":["NO6JO3"],"note":"' + padding() + '"}'),
            call("c2", "get_reservation", '{"reservation_id":"NO6JO3"}'),
            result("c2", '{"status":"active"}'),
            call("c3", "cancel_reservation", '{"reservation_id":"NO6JO3"}'),
            result("c3", '{"status":"cancelled"}'), Message("assistant", "Cancelled.")]
    nf = needed_facts(conv)
    assert all(n.in_turn for n in nf.needs if n.fact == "NO6JO3"), "every use comes from the same turn"
    strategy = get_strategy("tool_rounds", keep_rounds=0)
    every = needed_recall(replay(conv, strategy, Budget(100_000)), nf)
    lost = {(m.fact, m.source, m.needed_by) for m in every.misses}
    assert {("NO6JO3", 3, 4), ("NO6JO3", 3, 6)} <= lost, "keep_rounds=0 drops the lookup before the next call"
    start = needed_recall(replay(conv, strategy, Budget(100_000), apply_at="turn_start"), nf)
    assert start.misses == () and start.needed_recall == 1.0


def test_a_summary_that_keeps_the_id_serves_it():
    from types import SimpleNamespace

    from ctxlab.fidelity import FactCheck
    conv = lookup_then_cancel()
    summary = Message("user", "[summary] the user's reservation is NO6JO3")
    the_call = SimpleNamespace(index=6, number=2)  # the cancel call, after the lookup's round was dropped
    without, with_summary = FactCheck(needed_facts(conv)), FactCheck(needed_facts(conv))
    without.check(the_call, conv[5:6], (5,))
    with_summary.check(the_call, [summary, conv[5]], (None, 5))
    assert any(m.fact == "NO6JO3" for m in without.fidelity("x").misses)
    assert not any(m.fact == "NO6JO3" for m in with_summary.fidelity("x").misses)


def test_facts_the_system_prompt_holds_are_not_counted():
    conv = [system("Refund policy SUP-POL-7 applies."), user("Refund please."),
            call("c1", "refund", '{"policy":"SUP-POL-7"}'), result("c1", "ok"), Message("assistant", "Done.")]
    assert len(needed_facts(conv)) == 0
    assert needed_recall(replay(conv, "none", Budget(10_000)), conv).needed_recall is None


def test_a_fact_the_assistant_introduced_itself_is_not_needed():
    conv = [user("Total?"), Message("assistant", "The total is $42.50.")]
    assert len(needed_facts(conv)) == 0


def test_on_the_refund_sample_a_tight_window_misses_what_the_final_answer_needed():
    from ctxlab import load
    conv = load(SAMPLES / "ecommerce_refund.json")
    full = needed_recall(replay(conv, "none", Budget(8_000)), conv)
    window = needed_recall(replay(conv, "sliding_window", Budget(4_000)), conv)
    assert full.needed_recall == 1.0
    assert window.needed == full.needed and window.needed_recall < 0.9
    assert all(m.source < m.needed_by for m in window.misses)


def test_the_compare_verdict_picks_the_highest_recall_that_fits_then_the_cheapest():
    from ctxlab import load
    from ctxlab.compare import pick_by_recall
    from ctxlab.measure import measure
    from ctxlab.strategies import prepare
    conv = load(SAMPLES / "ecommerce_refund.json")
    _, budget = prepare(conv, context_limit=4_000)
    names = ["sliding_window", "summarize", "clear_tool_results"]
    measures = [measure(conv, n, budget) for n in names]
    assert measures[2].needed_recall == 1.0 > measures[1].needed_recall > measures[0].needed_recall
    assert measures[0].cost.input_tokens < measures[0].cost_none.input_tokens
    winner, text = pick_by_recall(names, [True, True, True], [True, True, True], measures)
    assert winner == 2 and "clear_tool_results wins" in text
    winner, _ = pick_by_recall(names, [True, True, False], [True, True, True], measures)  # 2 does not fit
    assert winner == 1
    assert pick_by_recall(names, [False] * 3, [True] * 3, measures)[0] is None


# ---- facts that fit code

def _read(cid: str, path: str, body: str) -> list[Message]:
    lines = "\n".join(f"{k:>6}\t{line}" for k, line in enumerate(body.splitlines(), 1))  # Claude Code's Read shape
    return [call(cid, "Read", json.dumps({"file_path": path})), result(cid, lines)]


BODY = "def login(user):\n    token = make_token(user)\n    return token\n"
LONG = "/home/dev/projects/payments-service/src/payments_service/adapters/stripe/webhooks/handlers.py"


def test_a_path_of_any_length_is_a_fact():
    assert extract_facts(f"open {LONG} now") >= {LONG}
    assert "src/app/main.py" in extract_facts("see src/app/main.py:12")


def test_an_edit_needs_the_text_it_replaces_served_only_while_the_read_is_in_context():
    edit = json.dumps({"file_path": "src/auth.py", "old_string": "    token = make_token(user)\n    return token",
                       "new_string": "    return make_token(user)"})
    conv = [system("You are a coding agent."), user("Simplify login in src/auth.py."),
            *_read("r1", "src/auth.py", BODY), *_read("r2", "README.md", padding()),
            call("e1", "Edit", edit), result("e1", "ok"), Message("assistant", "Done.")]
    nf = needed_facts(conv)
    edits = [n for n in nf.needs if n.lines]
    assert [(n.source, n.needed_by) for n in edits] == [(3, 6)]  # the Read's result, the Edit
    assert not any(n.fact == "make_token" for n in nf.needs), "code in the edit's text is not a fact taken earlier"
    kept = needed_recall(replay(conv, "none", Budget(100_000)), nf)
    assert kept.misses == ()
    dropped = needed_recall(replay(conv, get_strategy("tool_rounds", keep_rounds=1), Budget(100_000)), nf)
    assert [m.needed_by for m in dropped.misses if m.fact.startswith("    token")] == [6]


def test_a_value_most_calls_use_is_a_habit_not_a_need():
    conv = [system("You are a coding agent."), user("Run the checks in /work/tree-7f3a.")]
    for k in range(8):
        conv += [call(f"b{k}", "Bash", json.dumps({"command": f"cd /work/tree-7f3a && make check{k}",
                                                     "timeout": 120000})),
                 result(f"b{k}", f"check {k} passed in /work/tree-7f3a (timeout 120000)")]
    used = {n.fact for n in needed_facts(conv).needs}
    assert "120000" not in used, "the habitual timeout is not taken from an earlier call"


def test_a_calculators_expression_is_arithmetic_not_facts_but_the_amount_it_pays_is():
    # a newcomer saw "152 + 103" counted as two facts taken from context: any stray number served them
    msgs = [
        system("You are an airline agent."),
        user("Book HAT139 and HAT271 for me."),
        call("c1", "search_flights", '{"origin":"JFK","destination":"SEA"}'),
        result("c1", '[{"flight":"HAT139","price":152},{"flight":"HAT271","price":103}] ' + padding()),
        call("c2", "calculate", '{"expression":"152 + 103"}'),
        result("c2", "255"),
        call("c3", "book_reservation", '{"flights":["HAT139","HAT271"],"amount":255,"date":"2024/05/26",'
                                       '"phone":"(555) 010-0199"}'),
    ]
    needs = needed_facts(msgs).needs
    by_calc = [n.fact for n in needs if n.needed_by == 4]
    by_booking = {n.fact for n in needs if n.needed_by == 6}
    assert by_calc == []
    assert {"255", "hat139", "hat271"} <= {f.lower() for f in by_booking}
