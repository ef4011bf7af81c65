"""A strategy replayed as its target framework runs it: on the whole history recomputed at every call
(``works_on="full_history"``: Anthropic context editing, LangChain's ClearToolUsesEdit and a trim in a
pre-model hook, SWE-agent history processors) or on the history it keeps (``"kept_history"``: summarization
middleware, OpenHands condensers, compaction). Checked call by call against LangChain's own classes on real runs."""
from __future__ import annotations

import sys

import pytest

from ctxlab.conversation import Conversation
from ctxlab.configs import export_native, make_config
from ctxlab.replay import replay
from ctxlab.strategies import STRATEGIES, Budget, get_strategy

from ..builders import assistant, system, tool, user
from ..conftest import ROOT, needs_shared

sys.path.insert(0, str(ROOT / "benchmarks"))
import peers_per_call as peers  # noqa: E402

FULL = ("clear_tool_results", "sliding_window", "turn_safe", "langchain_trim", "observation_masking", "recent_events",
        "middle_out")
TARGETS = {**{name: "full_history" for name in FULL},
           **{name: "kept_history" for name in ("summarize", "server_compaction", "amortized_forgetting",
                                                "llm_attention")}}
"""How each strategy's target runs it (the strategies ctxlab invented keep what they left: ``kept_history``)."""


def test_each_strategy_replays_as_its_target_runs_it():
    for name, cls in STRATEGIES.items():
        if name == "pipeline":
            continue
        assert get_strategy(name).works_on == TARGETS.get(name, "kept_history"), name


def _tool_heavy() -> Conversation:
    big = "row " * 250  # ~250 tokens a result
    msgs = [system(), user("Look up every order")]
    for k in range(8):
        msgs += [assistant("", f"c{k}"), tool(f"c{k}", big)]
    return Conversation(tuple(msgs + [assistant("Done.")]))


def _cleared(r, c) -> int:
    return sum(r.cell(c, i) == "clear" for i in range(r.size))


def test_full_history_clears_at_every_call_over_the_trigger_and_kept_stops_after_one_clear():
    conv = _tool_heavy()
    full = replay(conv, get_strategy("clear_tool_results", trigger_tokens=1000, keep=1), Budget(100_000))
    kept = replay(conv, get_strategy("clear_tool_results", trigger_tokens=1000, keep=1, works_on="kept_history"),
                  Budget(100_000))
    head = full.budget.tools_tokens + full.budget.reply_priming
    over = [c.number for c in full.calls if c.tokens_before - head > 1000]
    assert over, "the conversation passes the trigger"
    # Anthropic's rule on the whole history: every call over the trigger clears all but the newest result
    assert all(full.calls[c].triggered for c in over)
    assert _cleared(full, len(full.calls) - 1) == 7
    # on the prompt it left: after a clear the prompt is under the trigger, so the next calls send it as left
    assert sum(c.triggered for c in kept.calls) < sum(c.triggered for c in full.calls)
    assert [c.tokens_after for c in full.calls] != [c.tokens_after for c in kept.calls]


def test_an_export_names_the_history_its_framework_runs_the_strategy_on():
    budget = Budget(16_000)
    tuned_kept = get_strategy("clear_tool_results", trigger_tokens=5000, works_on="kept_history")
    notes = export_native(make_config(tuned_kept, budget, "gpt-4o"), "langchain").not_carried
    assert any("works_on=kept_history" in n and "replay with works_on=full_history" in n for n in notes)
    as_target = get_strategy("clear_tool_results", trigger_tokens=5000)
    assert not any("works_on=" in n for n in export_native(make_config(as_target, budget, "gpt-4o"),
                                                          "langchain").not_carried)


# ---- call by call beside LangChain's own classes, on real runs

@needs_shared
@pytest.mark.parametrize("name", ["clear_tool_results", "sliding_window"])
def test_per_call_agreement_with_langchain_on_tau_bench(name):
    pytest.importorskip("langchain.agents.middleware")
    runs = peers.tau_runs()[::4]  # 25 of the 100 airline runs (the benchmark script runs all)
    full = peers.compare(runs, name, "full_history")
    assert full.calls > 300
    assert full.differ == []  # every call sends what LangChain's own code sends, but the documented cases
    kept = peers.compare(runs, name, "kept_history")
    assert kept.differ, "the other mode differs: the comparison can fail"


def test_per_call_agreement_with_langchain_on_coding_traces():
    pytest.importorskip("langchain.agents.middleware")
    traces = peers.coding_traces()
    assert len(traces) >= 5
    for name in peers.CASES:
        assert peers.compare(traces, name, "full_history").differ == [], name
