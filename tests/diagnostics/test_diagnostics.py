"""ctxlab.diagnostics: each detector fires on a conversation that shows its failure mode, points at
the right messages, and stays quiet on one that does not; the API the Failure Modes page builds on."""
from __future__ import annotations

import json

import pytest

from ctxlab.conversation import Conversation, Message, ToolCall, ToolDef
from ctxlab.diagnostics import (MODES, DiagnosticsError, Finding, Mitigation, apply_mitigation, detector, diagnose,
                                prune, quarantine_report, split_into_subagents, summarize_findings)
from ctxlab.diagnostics.base import DETECTORS
from ctxlab.diagnostics.observations import is_identifier, records_in, within_one_edit


def call(cid: str, name: str, **args) -> Message:
    return Message("assistant", "", tool_calls=(ToolCall(cid, name, json.dumps(args, separators=(",", ":"))),))


def result(cid: str, name: str, doc) -> Message:
    return Message("tool", doc if isinstance(doc, str) else json.dumps(doc), name=name, tool_call_id=cid)


def conv(*messages: Message, tools=()) -> Conversation:
    return Conversation((Message("system", "You are a support agent."), *messages), tools=tuple(tools))


def codes(findings, mode=None) -> list[str]:
    return [f.code for f in findings if mode is None or f.mode == mode]


def only(findings, code) -> Finding:
    hits = [f for f in findings if f.code == code]
    assert len(hits) == 1, [f.to_dict() for f in findings]
    return hits[0]


ORDER = {"order_id": "ORD-482913", "status": "shipped", "totals": {"total": 120.5}}

# ------------------------------------------------------------------ poisoning


def test_repeated_identical_failing_call_is_poisoning_and_names_every_attempt():
    c = conv(Message("user", "Refund ORD-482913"),
             call("a", "issue_refund", order_id="ORD-482913", amount=10),
             result("a", "issue_refund", "Error: payment gateway timeout"),
             call("b", "issue_refund", amount=10, order_id="ORD-482913"),  # same arguments, other key order
             result("b", "issue_refund", {"error": "payment gateway timeout"}))
    f = only(diagnose(c, modes="poisoning"), "repeated_failing_call")
    assert (f.severity, f.messages, f.tools) == ("error", (2, 3, 4, 5), ("issue_refund",))
    assert f.mitigation.kind == "prune" and f.mitigation.messages == (2,)


def test_one_retry_that_succeeds_or_a_changed_retry_is_not_poisoning():
    c = conv(Message("user", "Refund ORD-482913"),
             call("a", "issue_refund", order_id="ORD-482913", amount=10),
             result("a", "issue_refund", "Error: timeout"),
             call("b", "issue_refund", order_id="ORD-482913", amount=10),
             result("b", "issue_refund", {"refund_id": "RF-1234567", "status": "succeeded"}),
             call("c", "get_order", order_id="ORD-482913"),
             result("c", "get_order", "Error: not found"),
             call("d", "get_order", order_id="ORD-482931"),
             result("d", "get_order", "Error: not found"))
    assert "repeated_failing_call" not in codes(diagnose(c, modes="poisoning"))


def test_mistyped_id_that_is_reused_is_an_error_pointing_at_call_result_and_reuse():
    c = conv(Message("user", "Where is order ORD-482913?"),
             call("a", "get_order", order_id="ORD-482931"),          # two digits swapped
             result("a", "get_order", {"order_id": "ORD-482931", "status": "delivered"}),
             Message("assistant", "Order ORD-482931 was delivered yesterday."))
    f = only(diagnose(c, modes="poisoning"), "mistyped_id")
    assert (f.severity, f.messages) == ("error", (2, 3, 4))
    assert "ORD-482913" in f.evidence and "ORD-482931" in f.evidence


def test_an_id_that_appeared_before_or_is_far_from_any_is_not_mistyped():
    c = conv(Message("user", "Orders ORD-482913 and ORD-482914 please; also booking KQXTRM"),
             call("a", "get_order", order_id="ORD-482914"),
             result("a", "get_order", {"order_id": "ORD-482914", "status": "shipped"}),
             call("b", "get_order", order_id="ORD-999999"),
             result("b", "get_order", {"order_id": "ORD-999999", "status": "shipped"}),
             call("c", "get_trip", date="2024-05-16"))                # dates are not ids
    assert "mistyped_id" not in codes(diagnose(c, modes="poisoning"))


def test_a_claim_no_result_supports_and_a_later_read_contradicts_is_poisoning_and_so_is_its_summary():
    c = conv(Message("user", "Status of ORD-482913?"),
             Message("assistant", "Order ORD-482913 is delivered."),
             Message("system", "Summary of earlier conversation:\n- ORD-482913 is delivered."),
             Message("user", "Then why no parcel?"),
             call("a", "get_order", order_id="ORD-482913"),
             result("a", "get_order", ORDER))
    found = diagnose(c, modes="poisoning")
    claim = only(found, "contradicted_claim")
    assert claim.messages == (2, 6) and "'shipped'" in claim.evidence
    assert only(found, "summary_carries_claim").messages == (2, 3, 6)


def test_true_stale_or_hedged_statements_are_not_contradicted_claims():
    c = conv(Message("user", "Status of ORD-482913?"),
             call("a", "get_order", order_id="ORD-482913"),
             result("a", "get_order", ORDER),
             Message("assistant", "Order ORD-482913 is shipped, total $120.50. It can be cancelled if you wish."),
             Message("user", "Cancel it."),
             call("b", "cancel_order", order_id="ORD-482913"),       # a write: the status may change
             result("b", "cancel_order", {"order_id": "ORD-482913", "status": "cancelled"}))
    assert codes(diagnose(c, modes="poisoning")) == []


def test_a_wrong_amount_contradicted_by_the_same_kind_of_field_is_caught():
    c = conv(Message("user", "Total of ORD-482913?"),
             Message("assistant", "ORD-482913 has a total of $99.00."),
             call("a", "get_order", order_id="ORD-482913"),
             result("a", "get_order", ORDER))
    assert only(diagnose(c, modes="poisoning"), "contradicted_claim").messages == (2, 4)

# ------------------------------------------------------------------ clash


def test_two_reads_that_disagree_with_no_write_between_clash():
    c = conv(Message("user", "Status of ORD-482913?"),
             call("a", "get_order", order_id="ORD-482913"), result("a", "get_order", ORDER),
             call("b", "get_order", order_id="ORD-482913"),
             result("b", "get_order", {**ORDER, "status": "cancelled"}))
    f = only(diagnose(c, modes="clash"), "conflicting_values")
    assert (f.severity, f.messages, f.tools) == ("error", (3, 5), ("get_order",))
    assert "'shipped' vs 'cancelled'" in f.evidence
    assert f.mitigation.strategy == "clear_tool_results" and f.mitigation.params["keep"] == 1


def test_a_change_after_a_write_or_references_in_a_history_are_no_clash():
    c = conv(Message("user", "Cancel ORD-482913"),
             call("a", "get_order", order_id="ORD-482913"), result("a", "get_order", ORDER),
             call("b", "cancel_order", order_id="ORD-482913"),
             result("b", "cancel_order", {**ORDER, "status": "cancelled"}),
             call("c", "get_order", order_id="ORD-482913"),
             result("c", "get_order", {**ORDER, "status": "cancelled",
                                       "payment_history": [{"payment_id": "card_1", "amount": 120.5},
                                                           {"payment_id": "card_1", "amount": -120.5}]}))
    assert diagnose(c, modes="clash") == []


def test_records_follow_identity_keys_not_references():
    doc = {"reservation_id": "R1", "status": "ok", "payment_history": [{"payment_id": "gc_1", "amount": 5}],
           "payment_methods": {"gc_1": {"id": "gc_1", "amount": 50}}, "orders": [{"order_id": "O-1", "total": 3}]}
    assert set(records_in(doc)) == {("R1", "reservation_id", "R1"), ("R1", "status", "ok"), ("gc_1", "id", "gc_1"),
                                     ("gc_1", "amount", 50), ("O-1", "order_id", "O-1"), ("O-1", "total", 3)}

# ------------------------------------------------------------------ distraction


def _big(n: int) -> str:
    return json.dumps({"rows": [{"k": i, "note": "lorem ipsum dolor sit amet " * 3} for i in range(n)]})


def test_oversized_old_results_and_their_share_of_the_history():
    messages = [Message("user", "First task")]
    for k in range(6):
        messages += [call(f"c{k}", "list_rows"), result(f"c{k}", "list_rows", _big(400 if k in (1, 3) else 8))]
    messages += [Message("assistant", "Done."), Message("user", "Now something small.")]
    found = diagnose(conv(*messages), modes="distraction")
    big = only(found, "oversized_results")
    assert big.messages == (5, 9) and big.severity == "warning"
    share = only(found, "history_share")
    assert share.severity == "warning" and 5 in share.messages and share.mitigation is not None


def test_a_short_even_conversation_is_not_distracting():
    c = conv(Message("user", "a"), call("a", "get_x"), result("a", "get_x", "{}"), Message("assistant", "b"),
             Message("user", "c"))
    found = diagnose(c, modes="distraction")
    assert [f.severity for f in found] == ["info"]


def test_context_length_against_the_window_and_rulers_effective_length():
    long = conv(Message("user", "x " * 70_000))
    found = diagnose(long, model="gpt-4-turbo", modes="distraction")
    f = only(found, "long_context")
    assert "RULER" in f.evidence and "64,000" in f.evidence and f.mitigation.params == {"max_tokens": 64_000}
    over = only(diagnose(long, model="gpt-4", modes="distraction"), "context_length")
    assert over.severity == "error" and "8,192" in over.evidence
    unmeasured = only(diagnose(long, model="gpt-4o", modes="distraction"), "long_context")
    assert unmeasured.severity == "info" and "not measured" in unmeasured.evidence

# ------------------------------------------------------------------ confusion (hash provider: no meaning needed)


def _tools(n: int) -> list[ToolDef]:
    topics = ["weather", "stocks", "email", "calendar", "printer", "parking", "payroll", "recipes", "music", "maps",
              "news", "translate", "fitness", "dictionary", "trains", "hotels", "wine", "solar", "patents", "qr"]
    return [ToolDef(f"tool_{k}_{topics[k % len(topics)]}", f"Handles {topics[k % len(topics)]} requests number {k}.")
            for k in range(n)]


def test_more_than_thirty_tools_is_confusion_with_a_retrieval_mitigation():
    f = only(diagnose(conv(Message("user", "hi")), tools=_tools(31), modes="confusion", provider="hash"),
             "too_many_tools")
    assert len(f.tools) == 31 and f.mitigation.kind == "tool_retrieval" and f.mitigation.k == 5
    assert "too_many_tools" not in codes(diagnose(conv(Message("user", "hi")), tools=_tools(30), modes="confusion",
                                                  provider="hash"))


def test_identical_definitions_cluster_and_a_failed_call_then_its_twin_is_a_switch():
    twin = ToolDef("tool_0_weather_v2", "Handles weather requests number 0.")
    tools = [ToolDef("tool_0_weather", "Handles weather requests number 0."), twin, *_tools(5)[1:]]
    c = conv(Message("user", "weather?"), call("a", "tool_0_weather_v2"), result("a", "tool_0_weather_v2", "Error: bad"),
             call("b", "tool_0_weather"), result("b", "tool_0_weather", "{}"))
    found = diagnose(c, tools=tools, modes="confusion", provider="hash")
    clusters = [f.tools for f in found if f.code == "overlapping_tools"]
    assert clusters == [("tool_0_weather", "tool_0_weather_v2")]
    assert only(found, "lookalike_switch").messages == (2, 3, 4)

# ------------------------------------------------------------------ API


def test_findings_are_json_ready_and_summarised_per_mode():
    c = conv(Message("user", "Status of ORD-482913?"),
             call("a", "get_order", order_id="ORD-482913"), result("a", "get_order", ORDER),
             call("b", "get_order", order_id="ORD-482913"), result("b", "get_order", {**ORDER, "status": "lost"}))
    found = diagnose(c, provider="hash")
    d = json.loads(json.dumps([f.to_dict() for f in found]))
    assert {"mode", "code", "severity", "messages", "tools", "evidence", "mitigation"} <= set(d[0])
    assert summarize_findings(found) == {"poisoning": 0, "distraction": 0, "confusion": 0, "clash": 1}


def test_unknown_mode_and_mitigation_kind_name_the_known_ones():
    with pytest.raises(DiagnosticsError, match="poisoning, distraction, confusion, clash"):
        diagnose(conv(), modes=["rot"])
    with pytest.raises(DiagnosticsError, match="tool_retrieval"):
        Mitigation("magic", "x")


def test_modes_explain_each_mode_and_point_at_an_existing_lesson():
    assert list(MODES) == ["poisoning", "distraction", "confusion", "clash"]
    for info in MODES.values():
        assert info.title and 2 <= info.explanation.count(". ") + 1 <= 5 and info.lesson.is_file()


def test_a_plugin_detector_registers_like_the_built_ins():
    @detector("clash", "always_test")
    def always(inputs):
        return [Finding("clash", "always_test", "info", "registered")]
    try:
        assert "always_test" in codes(diagnose(conv(), modes="clash"))
    finally:
        DETECTORS["clash"] = [(n, f) for n, f in DETECTORS["clash"] if n != "always_test"]


def test_typo_distance_and_identifier_shape():
    assert within_one_edit("NB-20417", "NB-20471") and within_one_edit("ORD-1", "ORD-12")
    assert not within_one_edit("NB-20417", "NB-21470") and not within_one_edit("a", "a")
    assert is_identifier("ORD-482913") and is_identifier("KQXTRM") and is_identifier("mia_li_3668")
    assert not is_identifier("2024-05-16") and not is_identifier("12345") and not is_identifier("order")

# ------------------------------------------------------------------ mitigations


def test_prune_drops_whole_tool_rounds_and_blanks_claims_but_never_the_request():
    c = conv(Message("user", "Status?"), call("a", "get_order", order_id="X1"), result("a", "get_order", "{}"),
             Message("assistant", "It is lost."), Message("user", "Sure?"))
    out = prune(c, [2, 4])
    assert [m.role for m in out.messages] == ["system", "user", "assistant", "user"]
    assert out.messages[2].text.startswith("[removed")
    with pytest.raises(DiagnosticsError, match="newest user message"):
        prune(c, [5])


def test_applying_a_clash_mitigation_removes_the_clash_and_reports_before_and_after():
    c = conv(Message("user", "Status of ORD-482913?"),
             call("a", "get_order", order_id="ORD-482913"), result("a", "get_order", ORDER),
             call("b", "get_order", order_id="ORD-482913"), result("b", "get_order", {**ORDER, "status": "lost"}),
             Message("assistant", "It is lost."))
    f = only(diagnose(c, modes="clash"), "conflicting_values")
    r = apply_mitigation(c, f.mitigation, provider="hash")
    assert codes(r.findings_before, "clash") == ["conflicting_values"] and codes(r.findings_after, "clash") == []
    assert r.tokens_after < r.tokens_before and r.plan is not None
    assert json.loads(json.dumps(r.to_dict()))["tokens_before"] == r.tokens_before


def test_tool_retrieval_mitigation_sends_k_tools_through_a_real_chroma_index():
    tools = _tools(40)
    c = conv(Message("user", "what is the weather in Lisbon tomorrow"), tools=tools)
    f = only(diagnose(c, modes="confusion", provider="hash"), "too_many_tools")
    r = apply_mitigation(c, f.mitigation, provider="hash")
    assert len(r.tools_before) == 40 and 1 <= len(r.tools_after) <= 5 and r.tokens_after < r.tokens_before
    assert "tool_0_weather" in r.tools_after
    assert "too_many_tools" not in codes(r.findings_after)


def test_quarantine_splits_unrelated_threads_and_keeps_related_turns_together():
    c = conv(Message("user", "Refund ORD-482913"), call("a", "get_order", order_id="ORD-482913"),
             result("a", "get_order", ORDER), Message("assistant", "Done."),
             Message("user", "Book room RM-301"), call("b", "book_room", room_id="RM-301"),
             result("b", "book_room", "{}"), Message("assistant", "Booked."),
             Message("user", "And was ORD-482913 shipped?"), Message("assistant", "Yes."),
             tools=[ToolDef("get_order"), ToolDef("book_room")])
    parts = split_into_subagents(c)
    assert [p.metadata["subagent"]["turns"] for p in parts] == [[0, 2], [1]]
    assert parts[0].metadata["subagent"]["source_messages"] == [0, 1, 2, 3, 4, 9, 10]
    assert [t.name for t in parts[1].tools] == ["book_room"]
    report = quarantine_report(c)
    assert report.largest < report.shared_tokens and len(report.subagent_tokens) == 2
    r = apply_mitigation(c, Mitigation("quarantine", "split"), provider="hash")
    assert r.after is None and len(r.subagents) == 2 and r.tokens_after == report.largest
