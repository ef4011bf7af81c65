"""The lesson conversations in sample_data/lessons: up to date with their builder, and each one shows
what it teaches (its detector fires on the messages the story is about, and the mitigation helps)."""
from __future__ import annotations

import importlib.util
import json

import pytest

import ctxlab
from ctxlab.diagnostics import MODES, STRUCTURAL_LESSONS, apply_mitigation, diagnose, quarantine_report
from ctxlab.validate import validate

from ..conftest import SAMPLES

LESSONS = SAMPLES / "lessons"


def _builder():
    spec = importlib.util.spec_from_file_location("lessons_build", LESSONS / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lesson_files_are_what_the_builder_writes():
    build = _builder()
    for name, doc in build.lessons().items():
        assert (LESSONS / f"{name}.json").read_text(encoding="utf-8") == build.text(doc), \
            f"{name}.json is stale: run python sample_data/lessons/build.py"


@pytest.mark.parametrize("path", sorted(LESSONS.glob("*.json")), ids=lambda p: p.stem)
def test_lessons_load_are_valid_and_keep_their_facts(path):
    conv = ctxlab.load(path)
    assert conv.metadata["title"] and conv.metadata["description"]
    assert [f for f in validate(conv, rules="openai") if f.severity == "error"] == []
    texts = [m.text for m in conv.messages] + [c.arguments for m in conv.messages for c in m.tool_calls]
    assert conv.facts and all(any(f in t for t in texts) for f in conv.facts)


def by_code(findings):
    return {f.code: f for f in findings}


def test_poisoning_lesson_shows_the_typo_the_false_claim_its_summary_and_the_retries():
    found = by_code(diagnose(ctxlab.load(MODES["poisoning"].lesson), modes="poisoning"))
    assert found["mistyped_id"].messages[:2] == (2, 3) and "NB-20471" in found["mistyped_id"].evidence
    assert found["contradicted_claim"].messages == (4, 12)
    assert found["summary_carries_claim"].messages == (4, 5, 12)
    assert found["repeated_failing_call"].messages == (7, 8, 9, 10)


def test_pruning_the_false_claim_and_summary_clears_them_and_keeps_the_facts():
    conv = ctxlab.load(MODES["poisoning"].lesson)
    claim = by_code(diagnose(conv, modes="poisoning"))["contradicted_claim"]
    r = apply_mitigation(conv, claim.mitigation, provider="hash")
    assert "contradicted_claim" not in {f.code for f in r.findings_after}
    assert r.facts_after == r.facts_before == 1.0 and r.tokens_after < r.tokens_before


def test_clash_lesson_flags_the_two_reads_of_the_hotel_and_clearing_resolves_it():
    conv = ctxlab.load(MODES["clash"].lesson)
    clash = by_code(diagnose(conv, modes="clash"))["conflicting_values"]
    assert clash.messages == (3, 5) and "HT-40812" in clash.evidence
    r = apply_mitigation(conv, clash.mitigation, provider="hash")
    assert [f for f in r.findings_after if f.mode == "clash"] == []


def test_distraction_lesson_flags_its_planted_results_and_the_old_history():
    conv = ctxlab.load(MODES["distraction"].lesson)
    found = by_code(diagnose(conv, modes="distraction"))
    planted = sorted(i for p in conv.metadata["planted"] for i in p["messages"])
    assert list(found["oversized_results"].messages) == planted
    assert found["history_share"].severity == "warning"
    r = apply_mitigation(conv, found["oversized_results"].mitigation, provider="hash")
    assert r.tokens_after < r.tokens_before / 2 and "oversized_results" not in {f.code for f in r.findings_after}


def test_confusion_and_tool_loadout_lessons_with_the_real_embedding_model():
    for path in (MODES["confusion"].lesson, STRUCTURAL_LESSONS["tool_loadout"]):
        conv = ctxlab.load(path)
        found = diagnose(conv, modes="confusion")
        codes = {f.code for f in found}
        assert {"too_many_tools", "overlapping_tools", "lookalike_switch"} <= codes
        pairs = {frozenset(f.tools) for f in found if f.code == "overlapping_tools"}
        assert pairs == {frozenset(p["tools"]) for p in conv.metadata["planted"] if p["code"] == "overlapping_tools"}
        r = apply_mitigation(conv, by_code(found)["too_many_tools"].mitigation)
        assert len(r.tools_after) <= 5 < 30 < len(r.tools_before)
        assert "too_many_tools" not in {f.code for f in r.findings_after}


def test_quarantine_lesson_splits_into_three_smaller_contexts():
    report = quarantine_report(ctxlab.load(STRUCTURAL_LESSONS["quarantine"]))
    assert len(report.subagents) == 3
    assert report.largest < report.shared_tokens / 2
    assert json.loads(json.dumps(report.to_dict()))["subagent_tokens"] == list(report.subagent_tokens)
