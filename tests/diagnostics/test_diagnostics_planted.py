"""The detectors against the world: they find exactly what the generator planted, in every domain;
they raise no poisoning or clash error on unplanted generated conversations, on the bundled samples,
nor on the tau-bench runs except the ones checked by hand below."""
from __future__ import annotations

import json

import pytest

import ctxlab
from ctxlab.diagnostics import diagnose
from ctxlab.generate import DOMAINS, generate

from ..conftest import SAMPLES, SHARED, needs_shared

PLANTABLE = {"mistyped_id", "repeated_failing_call", "contradicted_claim", "summary_carries_claim",
             "oversized_results", "too_many_tools", "overlapping_tools", "lookalike_switch", "conflicting_values"}
"""Codes a plant produces. Measurements of the whole context (history_share, context_length,
irrelevant_tools) are not planted and not compared."""


def normalise(items) -> dict[str, set]:
    """code -> {(messages, tools)}; oversized results are one finding over all the messages."""
    out: dict[str, set] = {}
    for code, messages, tools in items:
        if code in PLANTABLE:
            out.setdefault(code, set()).add((tuple(sorted(messages)), frozenset(tools)))
    if "oversized_results" in out:
        pairs = out["oversized_results"]
        out["oversized_results"] = {(tuple(sorted(i for m, _ in pairs for i in m)), frozenset().union(*(t for _, t in pairs)))}
    return out


def planted(conv) -> dict[str, set]:
    return normalise((p["code"], p["messages"], p["tools"]) for p in conv.metadata["planted"])


def found(conv, **kw) -> dict[str, set]:
    return normalise((f.code, f.messages, f.tools) for f in diagnose(conv, **kw))


PLANTS = [dict(plant_poisoning="mistyped_id"), dict(plant_poisoning="repeated_failure"),
          dict(plant_poisoning="false_claim"), dict(plant_distraction=3), dict(plant_clash=2),
          dict(plant_confusion=40)]


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("plant", PLANTS, ids=lambda p: "-".join(f"{k}={v}" for k, v in p.items()))
def test_the_detector_finds_exactly_what_was_planted(domain, plant):
    conv = generate(domain, turns=4, rounds_per_turn=3, seed=11, **plant)
    assert conv.metadata["planted"], "nothing was planted"
    mode = next(iter(plant)).split("_")[1]
    assert found(conv, modes=[mode]) == planted(conv)
    if mode in ("poisoning", "clash"):
        assert all(f.severity == "error" for f in diagnose(conv, modes=[mode]))


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_plant_at_once_is_found_without_one_hiding_another(domain):
    conv = generate(domain, turns=5, rounds_per_turn=3, parallel_calls=2, result_tokens=300, seed=4,
                    plant_poisoning="false_claim", plant_distraction=2, plant_confusion=35, plant_clash=1)
    assert {p["mode"] for p in conv.metadata["planted"]} == {"poisoning", "distraction", "confusion", "clash"}
    assert found(conv) == planted(conv)


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("shape", [(2, 1), (6, 2), (12, 3)])
def test_an_unplanted_generated_conversation_has_no_poisoning_or_clash_error(domain, shape):
    rounds, parallel = shape
    for seed in range(4):
        conv = generate(domain, turns=4, rounds_per_turn=rounds, parallel_calls=parallel, seed=seed)
        errors = [f.to_dict() for f in diagnose(conv, modes=["poisoning", "clash"]) if f.severity == "error"]
        assert errors == [], (seed, errors)


@pytest.mark.parametrize("name", ["ecommerce_refund.json", "sql_agent.json", "parallel_travel.json"])
def test_bundled_samples_have_no_poisoning_or_clash(name):
    # parallel_travel retries a timed-out hotel lookup once and it succeeds: one retry is not poisoning
    assert diagnose(ctxlab.load(SAMPLES / name), modes=["poisoning", "clash"]) == []


TAU_CHECKED = {
    13: ["repeated_failing_call", "repeated_failing_call"],
    58: ["repeated_failing_call"],
    65: ["repeated_failing_call"],
    73: ["repeated_failing_call"],
}
"""tau-bench airline runs (index in airline_trajectories_trials01.json) whose errors were read by hand:
13: update_reservation_flights for XEWRD9 sent 3 times with HAT030 on 2024-05-13 after "not available",
    then a second argument set twice more (reward 0).
58: book_reservation sent 3 times with the same payment after "payment amount does not add up" (reward 0).
65: update_reservation_flights for GV1N64 re-sent unchanged after "not enough seats on flight HAT290",
    though the user asked to keep the return flight (reward 0).
73: update_reservation_flights for HXDUBJ re-sent with the same gift card after "balance is not enough" (reward 0).
Every one of them is the agent feeding an error back to itself; no run raises a clash."""


@needs_shared
def test_tau_bench_runs_raise_poisoning_or_clash_errors_only_where_checked_by_hand():
    runs = json.loads((SHARED / "tau-bench" / "airline_trajectories_trials01.json").read_text())
    seen = {}
    for k, run in enumerate(runs):
        conv = ctxlab.loads(json.dumps(run["traj"]))
        errors = [f.code for f in diagnose(conv, modes=["poisoning", "clash"]) if f.severity == "error"]
        if errors:
            seen[k] = errors
    assert seen == TAU_CHECKED
