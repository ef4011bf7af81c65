"""The Chinese lesson conversations in sample_data/lessons/zh: up to date with their builder, and
each shows what its lesson text says (the same findings on the same messages as the English story,
and the mitigation the page offers removes them)."""
from __future__ import annotations

import importlib.util

import pytest

import ctxlab
from ctxlab.diagnostics import MODES, apply_mitigation, diagnose, lesson_path
from ctxlab.diagnostics.poisoning import canonical_status, claims_in
from ctxlab.validate import validate

from ..conftest import SAMPLES

LESSONS = SAMPLES / "lessons"
ZH = LESSONS / "zh"


def _builder():
    spec = importlib.util.spec_from_file_location("lessons_build_zh", LESSONS / "build_zh.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def by_code(findings):
    return {f.code: f for f in findings}


def _load(mode: str):
    return ctxlab.load(lesson_path(mode, "zh"))


def test_every_failure_mode_has_a_chinese_lesson_and_english_keeps_its_own():
    for mode in MODES:
        assert lesson_path(mode, "zh") == ZH / f"{mode}.json"
        assert lesson_path(mode, "en") == MODES[mode].lesson
    assert lesson_path("quarantine", "zh") == LESSONS / "quarantine.json"  # no Chinese one: the English story


def test_chinese_lesson_files_are_what_the_builder_writes():
    build = _builder()
    docs = build.lessons()
    assert set(docs) == set(MODES)
    for name, doc in docs.items():
        assert (ZH / f"{name}.json").read_text(encoding="utf-8") == build.text(doc), \
            f"zh/{name}.json is stale: run python sample_data/lessons/build_zh.py"


@pytest.mark.parametrize("mode", list(MODES))
def test_chinese_lessons_are_chinese_valid_and_keep_their_facts(mode):
    conv = _load(mode)
    title, description = conv.metadata["title"], conv.metadata["description"]
    assert any("\u4e00" <= ch <= "\u9fff" for ch in title + description)
    assert [f for f in validate(conv, rules="openai") if f.severity == "error"] == []
    users = [m.text for m in conv.messages if m.role == "user"]
    assert users and all(any("\u4e00" <= ch <= "\u9fff" for ch in u) for u in users)
    texts = [m.text for m in conv.messages] + [c.arguments for m in conv.messages for c in m.tool_calls]
    assert conv.facts and all(any(f in t for t in texts) for f in conv.facts)


def test_chinese_poisoning_lesson_shows_the_typo_the_false_claim_its_summary_and_the_retries():
    found = by_code(diagnose(_load("poisoning"), modes="poisoning"))
    assert found["mistyped_id"].messages == (2, 3, 4, 13) and "TB20261108-4471" in found["mistyped_id"].evidence
    assert found["contradicted_claim"].messages == (4, 12) and "delivered" in found["contradicted_claim"].evidence
    assert found["summary_carries_claim"].messages == (4, 5, 12)
    assert found["repeated_failing_call"].messages == (7, 8, 9, 10)


def test_chinese_claims_are_read_like_english_ones():
    """已签收 claims "delivered"; a question or a condition claims nothing; 未签收 is no 已签收."""
    assert canonical_status("已签收") == "delivered" and canonical_status("运输中") == "in_transit"
    assert canonical_status("canceled") == "cancelled" and canonical_status("shipped") == "shipped"
    ids, vocab = {"TB20261108-4417"}, {"delivered"}
    [claim] = claims_in(4, "订单 TB20261108-4417 已签收，签收时间 11 月 10 日。", ids, vocab)
    assert claim.statuses == {"delivered"}
    assert claims_in(4, "订单 TB20261108-4417 已签收吗？", ids, vocab) == []
    assert claims_in(4, "如果订单 TB20261108-4417 已签收，就申请售后。", ids, vocab) == []
    assert claims_in(4, "订单 TB20261108-4417 尚未签收。", ids, vocab) == []
    two = claims_in(4, "订单 TB20261108-4417 已签收。另一单 TB20261108-4471 运输中。", ids | {"TB20261108-4471"}, vocab)
    assert [(c.entity, c.statuses) for c in two] == [("TB20261108-4417", {"delivered"}),
                                                   ("TB20261108-4471", {"in_transit"})]


def test_chinese_poisoning_fixes_applied_one_after_another_leave_no_poison():
    conv = _load("poisoning")
    for _ in range(6):
        poison = [f for f in diagnose(conv, modes="poisoning", provider="hash") if f.mitigation]
        if not poison:
            break
        r = apply_mitigation(conv, poison[0].mitigation, provider="hash")
        conv = r.after
    assert [f for f in diagnose(conv, modes="poisoning", provider="hash")] == []
    assert "TB20261108-4417" in " ".join(m.text for m in conv.messages)


def test_chinese_clash_lesson_flags_the_two_reads_of_the_train_and_clearing_resolves_it():
    conv = _load("clash")
    clash = by_code(diagnose(conv, modes="clash"))["conflicting_values"]
    assert clash.messages == (3, 5) and "G7" in clash.evidence and "候补" in clash.evidence
    r = apply_mitigation(conv, clash.mitigation, provider="hash")
    assert [f for f in r.findings_after if f.mode == "clash"] == []


def test_chinese_distraction_lesson_flags_the_three_timetables_and_the_old_history():
    conv = _load("distraction")
    found = by_code(diagnose(conv, modes="distraction"))
    timetables = tuple(i for i, m in enumerate(conv.messages) if m.role == "tool" and m.name == "search_trains")
    assert found["oversized_results"].messages == timetables and len(timetables) == 3
    assert found["history_share"].severity == "warning"
    r = apply_mitigation(conv, found["oversized_results"].mitigation, provider="hash")
    assert r.tokens_after < r.tokens_before / 2 and "oversized_results" not in {f.code for f in r.findings_after}


def test_chinese_confusion_lesson_with_the_real_embedding_model():
    conv = _load("confusion")
    found = diagnose(conv, modes="confusion")
    codes = by_code(found)
    assert {"too_many_tools", "overlapping_tools", "lookalike_switch"} <= set(codes)
    pairs = {frozenset(f.tools) for f in found if f.code == "overlapping_tools"}
    assert pairs == {frozenset({"get_order", "get_order_info"}), frozenset({"track_shipment", "track_package"}),
                     frozenset({"create_return_request", "create_exchange_request"})}
    assert codes["lookalike_switch"].tools == ("get_order_info", "get_order")
    r = apply_mitigation(conv, codes["too_many_tools"].mitigation)
    assert len(r.tools_after) == 5 and len(r.tools_before) == 42
    assert [f for f in r.findings_after if f.mode == "confusion"] == []
