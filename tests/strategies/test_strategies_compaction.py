"""server_compaction and truncation_auto do what the providers they simulate do (the registry-wide
promises are checked by test_strategy_invariants and test_replay, which pick them up by name)."""
from __future__ import annotations

import json

import ctxlab
from ctxlab.conversation import Message, ToolCall
from ctxlab.replay import replay
from ctxlab.strategies import Budget, get_strategy, make_view
from ctxlab.strategies.summarizers.summarize import is_summary
from ctxlab.validate import validate

from ..conftest import SHARED, needs_shared


def _run(turns: int = 3, rounds: int = 3, size: int = 120) -> list[Message]:
    """System prompt, then turns of a user request and tool rounds whose results name order ids."""
    msgs = [Message("system", "You are a support agent.")]
    k = 0
    for t in range(turns):
        msgs.append(Message("user", f"Request {t}: check my orders."))
        for _ in range(rounds):
            k += 1
            msgs.append(Message("assistant", "", tool_calls=(ToolCall(f"c{k}", "get_order", json.dumps({"id": k})),)))
            msgs.append(Message("tool", json.dumps({"order_id": f"KC-{1000 + k}", "status": "shipped",
                                                    "notes": "x " * size}), tool_call_id=f"c{k}"))
        msgs.append(Message("assistant", f"Done with request {t}."))
    return msgs


def _valid(messages) -> None:
    for rules in ("openai", "anthropic"):
        assert not [f for f in validate(list(messages), rules) if f.severity == "error"], rules


def test_below_the_trigger_nothing_changes_and_it_says_why():
    view = make_view(_run())
    plan = get_strategy("server_compaction", trigger_tokens=view.total).apply(view, Budget(100_000))
    assert plan.messages == view.messages and "server_compaction triggers above" in plan.idle
    assert get_strategy("server_compaction", trigger_tokens=view.total).quick_idle(view, Budget(100_000))


def test_past_the_trigger_one_summary_replaces_everything_but_the_system_prompt_and_the_task():
    msgs = _run()
    view = make_view(msgs)
    plan = get_strategy("server_compaction", trigger_tokens=500).apply(view, Budget(100_000))
    assert [m.role for m in plan.messages] == ["system", "system", "user"]
    assert plan.messages[0] is msgs[0] and is_summary(plan.messages[1]) and plan.messages[2] is msgs[17]
    assert "KC-1009" in plan.messages[1].text  # a fact of the newest folded result is in the summary
    assert plan.state["summarized"] == tuple(i for i in range(1, len(msgs)) if i != 17)
    _valid(plan.messages)


def test_keep_user_messages_keeps_every_user_request_as_openai_compaction_does():
    msgs = _run()
    plan = get_strategy("server_compaction", trigger_tokens=500, keep_user_messages=True).apply(make_view(msgs),
                                                                                               Budget(100_000))
    sent = "\n".join(m.text for m in plan.messages if m.role == "user")
    assert all(f"Request {t}" in sent for t in range(3))
    assert not any(m.role in ("assistant", "tool") for m in plan.messages)
    _valid(plan.messages)


def test_a_replay_compacts_again_each_time_the_prompt_passes_the_trigger_and_keeps_the_older_facts():
    conv = _run(turns=6, rounds=3)
    r = replay(conv, get_strategy("server_compaction", trigger_tokens=900, max_summary_tokens=2_000),
               Budget(100_000))
    assert r.times_triggered >= 3
    assert max(c.tokens_after for c in r.calls) < max(c.tokens_before for c in replay(conv, "none",
                                                                                       Budget(100_000)).calls)
    last = list(r.context_at(r.calls[-1].number))
    summary = next(m for m in last if is_summary(m))
    assert "KC-1001" in summary.text  # folded in the first compaction, carried through the later ones
    for c in r.calls:
        _valid(r.context_at(c.number))


def test_truncation_auto_drops_only_over_the_window_and_from_the_beginning():
    msgs = _run(turns=3, rounds=3, size=200)
    view = make_view(msgs)
    roomy = Budget(view.total * 2, reserve=0.0)
    assert get_strategy("truncation_auto").apply(view, roomy).idle is not None
    budget = Budget(view.total // 2, reserve=0.0)
    plan = get_strategy("truncation_auto").apply(view, budget)
    assert plan.fits and plan.count("drop") > 0
    dropped = [i for i, a in enumerate(plan.actions) if a == "drop"]
    assert dropped == list(range(1, dropped[-1] + 1)) or all(  # a prefix after the system prompt ...
        msgs[i].role == "user" for i in set(range(1, dropped[-1] + 1)) - set(dropped))  # ... but for the task
    assert plan.origin[-1] == len(msgs) - 1  # the newest message stays
    _valid(plan.messages)


def test_a_larger_output_allowance_truncates_earlier():
    view = make_view(_run(turns=3, rounds=3, size=200))
    budget = Budget(int(view.total * 0.9), reserve=0.0)
    small = get_strategy("truncation_auto").apply(view, budget)
    large = get_strategy("truncation_auto", output_allowance=view.total // 3).apply(view, budget)
    assert large.count("drop") > small.count("drop") > 0


@needs_shared
def test_on_real_tau_bench_runs_compaction_keeps_every_call_under_the_limit_where_sending_all_does_not():
    runs = json.loads((SHARED / "tau-bench" / "airline_trajectories_trials01.json").read_text())
    longest = sorted(runs, key=lambda r: len(r["traj"]), reverse=True)[:3]
    budget = Budget(8_000)
    for run in longest:
        conv = ctxlab.loads(json.dumps(run["traj"]))
        none = replay(conv, "none", budget)
        assert none.calls_over_limit > 0
        for strategy in (get_strategy("server_compaction", **get_strategy("server_compaction").scaled_defaults(budget)),
                         get_strategy("truncation_auto")):
            r = replay(conv, strategy, budget)
            assert r.calls_over_limit < none.calls_over_limit, strategy.name
            for c in r.calls:
                _valid(r.context_at(c.number))


_CLI = (("apply", "--strategy", "server_compaction", "--param", "trigger_tokens=300", "--param",
         "keep_user_messages=true"),
        ("apply", "--strategy", "truncation_auto", "--max-tokens", "1500"))


def test_hostile_input_keeps_the_cli_contract_under_both(tmp_path_factory):
    """tests/formats/test_fuzz.py runs a fixed command list; the same mutations through these two (fewer examples)."""
    from hypothesis import HealthCheck, given, settings
    from ..fuzz import check_contract, mutated_document, run_cli

    @settings(max_examples=150, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(mutated_document())
    def check(case):
        fmt, data, done = case
        path = tmp_path_factory.getbasetemp() / "fuzz-compaction.json"
        path.write_bytes(data)
        for command in _CLI:
            code, out, err = run_cli([command[0], str(path), *command[1:]])
            try:
                check_contract(command, code, out, err)
            except AssertionError as e:
                raise AssertionError(f"{' '.join(command)} on {done}: {e}") from None
    check()
