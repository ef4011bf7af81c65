"""A priced loss: each lost need has a kind and a recovery; a re-fetchable one costs a
modelled call (priced as a read-back is), an unrecoverable one can be a hard constraint of the
recommendation. Snippets from a real Claude Code session (marot/spotter, MIT: tests/data/coding)."""
from __future__ import annotations

import json
from types import SimpleNamespace

import ctxlab
from ctxlab.cli import main
from ctxlab.conversation import Message, ToolCall
from ctxlab.fidelity import CHANGED, FROM_USER, REFETCH, FactCheck, Need, need_kind, needed_facts
from ctxlab.measure import measure
from ctxlab.pricing import REFETCH_MODEL, Price
from ctxlab.strategies import Budget
from ctxlab.sweep import COLUMNS, Grid, SweepResult, pareto_front, recommend, run_sweep

from ..conftest import ROOT

TASK_PARENT = ROOT / "tests" / "data" / "coding" / "claude_code_task_parent.jsonl"
WORKTREE = "/home/USER/projects/spotter-worktrees/spotter-4te"
ROUTER_LINE = '    post("/hooks/commit-event", HooksController, :commit_event)'  # router.ex, read in 258c7280


def call(cid: str, name: str, args: dict, text: str = "") -> Message:
    """An assistant message with one tool call."""
    return Message("assistant", text, tool_calls=(ToolCall(cid, name, json.dumps(args)),))


def result(cid: str, text: str) -> Message:
    return Message("tool", text, tool_call_id=cid)


def spotter_session() -> list[Message]:
    """A session shaped on spotter's: the user names the bead, a file read twice (its text changed
    between the reads), a status command, a file the agent writes, then calls that need all of it."""
    read = {"file_path": f"{WORKTREE}/lib/spotter_web/router.ex"}
    return [
        Message("user", "Work on bead spotter-4te.1 and wire the hook route."),
        call("r1", "Read", read),
        result("r1", f"    40→  scope \"/api\", SpotterWeb do\n    41→{ROUTER_LINE}\n    42→  end"),
        call("g1", "Bash", {"command": "git status --short"}),
        result("g1", " M lib/spotter/telemetry/otel_setup.ex"),
        call("r2", "Read", read),
        result("r2", "    40→  scope \"/api\", SpotterWeb do\n    41→    post(\"/hooks/otel\", HooksController, :otel)"),
        call("w1", "Write", {"file_path": f"{WORKTREE}/lib/spotter/telemetry/otel.ex",
                             "content": "defmodule Spotter.Telemetry.Otel do\n  def setup_tracing(opts) do\n"
                                        "    :opentelemetry_cowboy.setup(opts)\n  end\nend\n"}),
        result("w1", "File created successfully"),
        Message("user", "Go on."),
        call("b1", "Bash", {"command": "bd close spotter-4te.1 && grep -rn commit_event "
                                       "lib/spotter/telemetry/otel_setup.ex", "timeout": 30000}),
        result("b1", "closed"),
        call("e1", "Edit", {"file_path": f"{WORKTREE}/lib/spotter/telemetry/otel.ex",
                            "old_string": "  def setup_tracing(opts) do", "new_string": "  def setup_tracing do"}),
        result("e1", "The file has been updated."),
    ]


def every_need_lost(messages: list[Message]) -> tuple[FactCheck, list]:
    """Check every need against an empty prompt: each one is a miss."""
    nf = needed_facts(messages)
    check = FactCheck(nf)
    for j in sorted({n.needed_by for n in nf.needs}):
        check.check(SimpleNamespace(index=j, number=j, turn=1, tokens_after=1_000), [], [])
    return check, [m for ms in check.misses.values() for m in ms]


def test_each_lost_need_says_what_it_is_and_how_it_could_come_back():
    check, misses = every_need_lost(spotter_session())
    got = {(m.fact[:40], m.kind, m.recovery) for m in misses}
    assert ("spotter-4te", "id", FROM_USER) in got                        # only the user said it
    assert ("commit_event", "identifier", CHANGED) in got                 # router.ex read again without it
    assert ("lib/spotter/telemetry/otel_setup.ex", "path", REFETCH) in got  # git status still shows it
    assert ("  def setup_tracing(opts) do", "edit", REFETCH) in got       # the agent wrote it: read the file back
    assert not any(m.fact == "30000" for m in misses)                     # a Bash timeout is an option, not a fact
    fid = check.fidelity("x")
    assert fid.unrecoverable == sum(m.recovery in (FROM_USER, CHANGED) for m in fid.misses) == 2
    assert fid.to_dict()["misses"][0].keys() >= {"kind", "recovery"}


def test_a_re_fetch_is_one_read_per_call_and_source_sized_by_the_result_it_reads():
    messages = spotter_session()
    check, _ = every_need_lost(messages)
    fid = check.fidelity("x")
    assert [(r.index, r.source, r.facts) for r in fid.refetches] == [
        (10, 4, ("lib/spotter/telemetry/otel_setup.ex",)),                 # git status, run again
        (12, 7, ("  def setup_tracing(opts) do",))]                        # the file the agent wrote, read back
    assert all(r.refetch and r.prompt_tokens == 1_000 for r in fid.refetches)
    assert fid.refetches[0].read_tokens == check.counter.message(messages[4])


def test_need_kinds_on_values_from_real_traces():
    def kind(fact: str, **kw) -> str:
        return need_kind(Need(fact, 0, 1, 0, False, **kw))
    assert kind("b3l0w_th3_r4dar") == "id"                                # swe_agent_ctf_forensics_flash.traj
    assert kind("opentelemetry_api") == "identifier"                      # claude_code_task_parent.jsonl
    assert kind(f"{WORKTREE}/mix.exs") == "path"
    assert kind("1.5") == "number" and kind("2026-02-12") == "date"
    assert kind("economy", literal=True) == "value"
    assert kind(ROUTER_LINE, lines=(ROUTER_LINE.strip().lower(),)) == "edit"


def test_a_real_session_prices_its_re_fetches_beside_the_cost_and_in_the_total():
    conv = ctxlab.load(TASK_PARENT)
    price = Price("claude-sonnet-4-5", 3.0, 15.0, 0.3, 3.75, "anthropic", 1024)
    m = measure(conv, "observation_masking", Budget(6_000), model="claude-sonnet-4-5", price=price)
    fid, cost, s = m.fidelity, m.cost, m.summary()
    assert fid.misses and all(x.recovery == REFETCH and x.kind == "identifier" for x in fid.misses)
    assert s["refetches"] == cost.refetches == len(fid.refetches) == 2   # the needs of one call from 2 results
    assert s["unrecoverable"] == 0
    for rb, c in zip(fid.refetches, cost.refetch_calls):
        assert c.prompt_tokens == rb.prompt_tokens + rb.read_tokens and c.output_tokens == 30
    assert cost.cost_usd == sum(c.cost_usd for c in cost.calls)          # re-fetches are not in cost_usd...
    assert s["total_cost_usd"] == cost.cost_usd + s["refetch_cost_usd"] > cost.cost_usd  # ...but in the total
    assert cost.to_dict()["refetch_model"] == REFETCH_MODEL and "a model, not a bill" in REFETCH_MODEL
    kept = measure(conv, "none", Budget(200_000), model="claude-sonnet-4-5", price=price).summary()
    assert kept["refetches"] == 0 and kept["total_cost_usd"] == kept["cost_usd"]


def point(cost: float, unrecoverable: int = 0, total: float | None = None, over: int = 0, recall: float = 0.97,
          strategy: str = "middle_out") -> dict:
    return {"strategy": strategy, "invalid": 0, "needed_recall": recall, "calls_over_limit": over, "cost_usd": cost,
            "total_cost_usd": cost if total is None else total, "unrecoverable": unrecoverable,
            "input_tokens_total": 1000, "refetch_tokens": 0}


def test_recommend_treats_unrecoverable_losses_as_a_hard_constraint_unless_allowed():
    pts = [point(1.0, unrecoverable=2), point(1.5)]
    assert recommend(pts) == 1                                            # the cheaper one loses a user's fact
    assert recommend(pts, allow_unrecoverable=True) == 0
    assert recommend([point(1.0, 2), point(1.5, 1)]) == 0                 # every point loses one: the cheapest
    assert recommend([point(1.0, 2), point(0.5, over=3)]) == 0            # fitting comes first
    assert recommend([point(1.0, 0, total=2.0), point(1.2, 0, total=1.2)]) == 0
    assert recommend([point(1.0, 0, total=2.0), point(1.2, 0, total=1.2)], cost="total_cost_usd") == 1
    rule = SweepResult((), (), None, {}, ("cost_usd", "needed_recall"), 0.95, None).rule
    assert "hard constraint" in rule and "total_cost_usd" not in rule.split("(")[-1]
    allowed = SweepResult((), (), None, {}, ("total_cost_usd", "needed_recall"), 0.95, None, (), (), True,
                          "total_cost_usd").rule
    assert "hard constraint" not in allowed and "re-fetches" in allowed


def test_sweep_points_carry_re_fetches_unrecoverable_losses_and_the_total_cost():
    conv = ctxlab.load(TASK_PARENT)
    price = Price("claude-sonnet-4-5", 3.0, 15.0, 0.3, 3.75, "anthropic", 1024)
    res = run_sweep([conv], Grid.parse(["observation_masking", "none"]), [6_000], prices=price, workers=1,
                    axes=("total_cost_usd", "needed_recall"))
    assert {"refetches", "refetch_tokens", "refetch_cost_usd", "unrecoverable", "total_cost_usd"} <= set(COLUMNS)
    masked, kept = res.points
    assert masked["refetches"] == 2 and masked["unrecoverable"] == 0 and kept["refetches"] == 0
    assert masked["total_cost_usd"] == masked["cost_usd"] + masked["refetch_cost_usd"]
    assert pareto_front(res.points, ("total_cost_usd", "needed_recall")) == list(res.pareto)
    assert res.cost == "total_cost_usd" and "re-fetches" in res.rule
    header = res.to_csv().splitlines()[0].split(",")
    assert {"refetches", "refetch_cost_usd", "unrecoverable", "total_cost_usd"} <= set(header)


def test_sweep_cli_has_the_allow_unrecoverable_switch(capsys):
    code = main(["sweep", str(TASK_PARENT), "--strategy", "observation_masking", "--max-tokens", "6000",
                 "--workers", "1", "--allow-unrecoverable", "--axes", "total_cost_usd,needed_recall"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["allow_unrecoverable"] is True and out["cost"] == "total_cost_usd"
    assert "hard constraint" not in out["rule"] and out["points"][0]["refetches"] == 2


def test_replay_json_carries_the_priced_loss(capsys):
    code = main(["replay", str(TASK_PARENT), "--strategy", "observation_masking", "--max-tokens", "6000",
                 "--model", "claude-sonnet-4-5"])
    out = json.loads(capsys.readouterr().out)
    d = out[0] if isinstance(out, list) else out
    assert code == 0
    assert {(m["kind"], m["recovery"]) for m in d["fidelity"]["misses"]} == {("identifier", "refetch")}
    assert d["fidelity"]["unrecoverable"] == 0 and len(d["fidelity"]["refetches_model"]) == 2
    assert d["cost"]["refetch_calls_model"] == 2 and "a model, not a bill" in d["cost"]["refetch_model"]
    assert d["cost"]["total_cost_usd"] > d["cost"]["cost_usd"]
