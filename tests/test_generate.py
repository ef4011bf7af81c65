"""ctxlab.generate: deterministic, well-formed, sized as asked, with facts that are really there."""
from __future__ import annotations

import inspect
import json
import random
import re

import pytest

from ctxlab.generate import CHARS_PER_TOKEN, DOMAINS, PARAMS, generate, validate_params
from ctxlab.conversation import Conversation

PARAM = {p["name"]: p for p in PARAMS}


def searchable(conv: Conversation) -> list[str]:
    """Every text a fact may sit in: message texts and tool-call arguments."""
    out = [m.text for m in conv.messages]
    out += [c.arguments for m in conv.messages for c in m.tool_calls]
    return out


def tool_rounds(conv: Conversation) -> list[tuple[int, tuple]]:
    """(index, calls) of each assistant message that calls tools."""
    return [(i, m.tool_calls) for i, m in enumerate(conv.messages) if m.tool_calls]


# ------------------------------------------------------------------ determinism


@pytest.mark.parametrize("domain", DOMAINS)
def test_same_arguments_give_the_same_conversation(domain):
    a = generate(domain, turns=3, rounds_per_turn=3, parallel_calls=2, seed=11)
    b = generate(domain, turns=3, rounds_per_turn=3, parallel_calls=2, seed=11)
    assert a == b
    assert [m.text for m in a.messages] == [m.text for m in b.messages]


@pytest.mark.parametrize("domain", DOMAINS)
def test_another_seed_gives_another_conversation(domain):
    a = generate(domain, turns=2, seed=1)
    b = generate(domain, turns=2, seed=2)
    assert [m.text for m in a.messages[1:]] != [m.text for m in b.messages[1:]]


def test_global_random_state_is_neither_used_nor_changed():
    random.seed(1)
    before = random.getstate()
    a = generate("travel", turns=2, seed=5)
    assert random.getstate() == before
    random.seed(99)
    assert generate("travel", turns=2, seed=5) == a


# ------------------------------------------------------------------ parameters


def test_params_describe_the_signature_of_generate():
    signature = inspect.signature(generate).parameters
    assert [p["name"] for p in PARAMS] == list(signature)
    for p in PARAMS:
        assert p["default"] == signature[p["name"]].default
        assert p["help"]
        assert ("choices" in p) != ("min" in p and "max" in p)
    assert PARAM["domain"]["choices"] == DOMAINS == ("ecommerce", "sql", "travel")


def _bad_values():
    for p in PARAMS:
        if "choices" in p:
            yield p["name"], "shopping"
            yield p["name"], None
        else:
            yield p["name"], p["min"] - 1
            yield p["name"], p["max"] + 1
            yield p["name"], float(p["default"])
            yield p["name"], str(p["default"])
            yield p["name"], True


@pytest.mark.parametrize("name,value", list(_bad_values()))
def test_every_parameter_is_checked_with_a_message_naming_it_and_its_range(name, value):
    with pytest.raises(ValueError) as info:
        generate(**{name: value})
    message = str(info.value)
    assert message.startswith(name)
    p = PARAM[name]
    expected = ", ".join(p["choices"]) if "choices" in p else f"from {p['min']:,} to {p['max']:,}"
    assert expected in message


@pytest.mark.parametrize("name", [p["name"] for p in PARAMS if "min" in p])
def test_bounds_themselves_are_accepted(name):
    p = PARAM[name]
    for value in (p["min"], p["max"]):
        assert validate_params(**{name: value})[name] == value


def test_a_conversation_too_big_to_build_is_refused_before_building():
    with pytest.raises(ValueError, match="result_tokens"):
        generate(turns=500, rounds_per_turn=20, parallel_calls=8, result_tokens=20_000)


def test_unknown_parameter_is_named():
    with pytest.raises(ValueError, match="'rounds'"):
        validate_params(rounds=3)


# ------------------------------------------------------------------ structure


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("parallel", [1, 3])
def test_shape_of_turns_and_rounds(domain, parallel):
    turns, rounds = 3, 4
    conv = generate(domain, turns=turns, rounds_per_turn=rounds, parallel_calls=parallel, seed=3)
    roles = [m.role for m in conv.messages]
    assert roles[0] == "system" and conv.messages[0].text
    per_turn = ["user"] + (["assistant"] + ["tool"] * parallel) * rounds + ["assistant"]
    assert roles == ["system"] + per_turn * turns
    assert len(conv) == 1 + turns * (2 + rounds * (1 + parallel))
    for i, m in enumerate(conv.messages):
        if m.role == "assistant" and not m.tool_calls:
            assert m.text.strip(), f"message {i}: an empty final answer"


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_call_is_answered_by_exactly_one_result_right_after_it(domain):
    conv = generate(domain, turns=4, rounds_per_turn=5, parallel_calls=3, seed=8)
    messages = conv.messages
    for i, calls in tool_rounds(conv):
        results = messages[i + 1:i + 1 + len(calls)]
        assert [r.role for r in results] == ["tool"] * len(calls)
        assert [r.tool_call_id for r in results] == [c.id for c in calls]
        assert [r.name for r in results] == [c.name for c in calls]
        after = i + 1 + len(calls)
        assert after == len(messages) or messages[after].role != "tool"
    answered = [m.tool_call_id for m in messages if m.role == "tool"]
    assert len(answered) == len(set(answered))


@pytest.mark.parametrize("domain", DOMAINS)
def test_call_ids_are_unique_and_follow_the_seed(domain):
    conv = generate(domain, turns=5, rounds_per_turn=3, parallel_calls=2, seed=42)
    ids = [c.id for _, calls in tool_rounds(conv) for c in calls]
    assert len(ids) == len(set(ids)) == 5 * 3 * 2
    assert ids == [f"call_42_{n}" for n in range(1, len(ids) + 1)]


@pytest.mark.parametrize("domain", DOMAINS)
def test_arguments_are_compact_json_objects_that_fit_the_tool_schema(domain):
    conv = generate(domain, turns=3, rounds_per_turn=8, parallel_calls=2, seed=4)
    schemas = {t.name: t.parameters for t in conv.tools}
    assert len(schemas) == len(conv.tools)
    for _, calls in tool_rounds(conv):
        for call in calls:
            args = json.loads(call.arguments)
            assert isinstance(args, dict)
            assert call.arguments == json.dumps(args, ensure_ascii=False, separators=(",", ":"))
            schema = schemas[call.name]
            assert set(schema["required"]) <= set(args), call
            assert set(args) <= set(schema["properties"]), call


@pytest.mark.parametrize("domain", DOMAINS)
def test_tool_results_are_json_documents(domain):
    conv = generate(domain, turns=2, rounds_per_turn=6, seed=6)
    for m in conv.messages:
        if m.role == "tool":
            assert isinstance(json.loads(m.text), dict)


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("parallel", [1, 2, 5, 8])
def test_parallel_calls_per_assistant_message(domain, parallel):
    conv = generate(domain, turns=2, rounds_per_turn=3, parallel_calls=parallel, seed=1)
    assert {len(calls) for _, calls in tool_rounds(conv)} == {parallel}


def test_travel_parallel_calls_cover_each_leg_of_the_trip():
    conv = generate("travel", turns=1, rounds_per_turn=2, parallel_calls=3, seed=2)
    _, first = tool_rounds(conv)[0]
    legs = [json.loads(c.arguments) for c in first]
    assert [c.name for c in first] == ["search_flights"] * 3
    assert [leg["destination"] for leg in legs[:-1]] == [leg["origin"] for leg in legs[1:]]


# ------------------------------------------------------------------ size


def _mean_result_chars(conv: Conversation) -> float:
    sizes = [len(m.text) for m in conv.messages if m.role == "tool"]
    return sum(sizes) / len(sizes)


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("tokens", [400, 2000, 8000])
def test_results_are_about_the_requested_size(domain, tokens):
    conv = generate(domain, turns=3, rounds_per_turn=6, result_tokens=tokens, parallel_calls=2, seed=9)
    assert 0.7 <= _mean_result_chars(conv) / (tokens * CHARS_PER_TOKEN) <= 1.3


@pytest.mark.parametrize("domain", DOMAINS)
def test_total_size_scales_with_result_tokens(domain):
    small = generate(domain, turns=4, rounds_per_turn=3, result_tokens=400, seed=5)
    large = generate(domain, turns=4, rounds_per_turn=3, result_tokens=2000, seed=5)
    ratio = sum(len(t) for t in searchable(large)) / sum(len(t) for t in searchable(small))
    assert 3 <= ratio <= 6


def test_a_large_conversation_has_the_promised_scale():
    conv = generate("sql", turns=200, rounds_per_turn=4, result_tokens=1250, seed=1)
    assert len(conv) == 2001
    approx_tokens = sum(len(t) for t in searchable(conv)) / CHARS_PER_TOKEN
    assert 800_000 <= approx_tokens <= 1_300_000
    assert len({c.id for _, calls in tool_rounds(conv) for c in calls}) == 800


# ------------------------------------------------------------------ facts and content


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("rounds", [1, 2, 5, 9])
def test_each_fact_is_a_literal_substring_of_the_conversation(domain, rounds):
    conv = generate(domain, turns=3, rounds_per_turn=rounds, parallel_calls=2, seed=rounds)
    texts = searchable(conv)
    assert conv.facts
    assert len(conv.facts) == len(set(conv.facts))
    for fact in conv.facts:
        assert any(fact in t for t in texts), fact


@pytest.mark.parametrize("domain", DOMAINS)
def test_first_request_key_entity_is_a_fact(domain):
    conv = generate(domain, turns=2, seed=0)
    assert conv.facts[0] in conv.messages[1].text


@pytest.mark.parametrize("domain", DOMAINS)
def test_each_answer_cites_something_found_by_that_turns_tools(domain):
    conv = generate(domain, turns=4, rounds_per_turn=5, seed=12)
    results: list[str] = []
    for m in conv.messages[1:]:
        if m.role == "user":
            results = []
        elif m.role == "tool":
            results.append(m.text)
        elif not m.tool_calls:
            cited = [f for f in conv.facts if f in m.text and any(f in r for r in results)]
            assert cited, m.text


def test_metadata_and_tools():
    conv = generate("sql", turns=2, rounds_per_turn=3, seed=3)
    assert conv.model == "gpt-4o"
    assert conv.metadata["title"] and conv.metadata["description"]
    assert conv.metadata["generator"] == {"domain": "sql", "turns": 2, "rounds_per_turn": 3,
                                          "result_tokens": 400, "parallel_calls": 1, "seed": 3,
                                          "plant_poisoning": "none", "plant_distraction": 0,
                                          "plant_confusion": 0, "plant_clash": 0, "shape": "chat"}
    assert "planted" not in conv.metadata
    names = [t.name for t in conv.tools]
    assert {"generate_sql", "valid_sql", "run_sql"} <= set(names)
    for t in conv.tools:
        assert len(t.description) > 20
        assert t.parameters["type"] == "object" and t.parameters["properties"]


@pytest.mark.parametrize("domain", DOMAINS)
def test_tools_called_are_offered(domain):
    conv = generate(domain, turns=3, rounds_per_turn=9, seed=1)
    offered = {t.name for t in conv.tools}
    assert {c.name for _, calls in tool_rounds(conv) for c in calls} <= offered


def test_minted_ids_are_unique_across_the_conversation():
    conv = generate("ecommerce", turns=30, rounds_per_turn=5, parallel_calls=2, seed=21)
    requests = " ".join(m.text for m in conv.messages if m.role == "user")
    orders = re.findall(r"ORD-\d+", requests)
    assert len(orders) == 60 == len(set(orders))
    answers = " ".join(m.text for m in conv.messages if m.role == "assistant")
    refunds = re.findall(r"RF-\d+", answers)
    assert refunds and len(refunds) == len(set(refunds))


def test_sql_runs_only_validated_sql_and_repairs_rejected_sql():
    rejected = 0
    for seed in range(12):
        conv = generate("sql", turns=2, rounds_per_turn=6, parallel_calls=2, seed=seed)
        accepted: set[str] = set()
        calls = {c.id: c for _, cs in tool_rounds(conv) for c in cs}
        for m in conv.messages:
            if m.role != "tool":
                continue
            args = json.loads(calls[m.tool_call_id].arguments)
            if m.name == "valid_sql" and json.loads(m.text)["valid"]:
                accepted.add(args["sql"])
            elif m.name == "valid_sql":
                rejected += 1
            elif m.name == "run_sql":
                assert args["sql"] in accepted
            elif m.name == "generate_sql" and "previous_sql" in args:
                assert args["previous_sql"] not in accepted and args["error"]
    assert rejected, "no seed produced an invalid SQL to repair"


def test_ecommerce_refund_amount_is_the_one_cited():
    conv = generate("ecommerce", turns=6, rounds_per_turn=4, seed=5)
    refunds = [json.loads(c.arguments) for _, cs in tool_rounds(conv) for c in cs if c.name == "issue_refund"]
    assert refunds
    answers = " ".join(m.text for m in conv.messages if m.role == "assistant")
    for r in refunds:
        assert f"${r['amount']:,.2f}" in answers
        assert f"${r['amount']:,.2f}" in conv.facts


# ------------------------------------------------------------------ planted failures


def test_plant_parameters_are_in_the_schema_the_sidebar_builds_controls_from():
    assert PARAM["plant_poisoning"]["choices"] == ("none", "mistyped_id", "repeated_failure", "false_claim")
    for name in ("plant_distraction", "plant_confusion", "plant_clash"):
        assert PARAM[name]["default"] == PARAM[name]["min"] == 0


@pytest.mark.parametrize("domain", DOMAINS)
def test_each_plant_is_recorded_with_message_indexes_and_tools_that_exist(domain):
    conv = generate(domain, turns=3, rounds_per_turn=3, seed=2, plant_poisoning="mistyped_id", plant_distraction=2,
                    plant_confusion=32, plant_clash=1)
    planted = conv.metadata["planted"]
    assert {p["mode"] for p in planted} == {"poisoning", "distraction", "confusion", "clash"}
    names = {t.name for t in conv.tools}
    assert len(conv.tools) == 32
    for p in planted:
        assert set(p) == {"mode", "code", "messages", "tools"}
        assert all(0 <= i < len(conv.messages) for i in p["messages"]) and set(p["tools"]) <= names
    called = {c.name for _, calls in tool_rounds(conv) for c in calls}
    assert called <= names


@pytest.mark.parametrize("domain", DOMAINS)
def test_planted_conversations_still_answer_every_call_and_stay_deterministic(domain):
    kw = dict(turns=3, rounds_per_turn=2, seed=6, plant_poisoning="false_claim", plant_distraction=1, plant_clash=1,
              plant_confusion=12)
    conv = generate(domain, **kw)
    assert conv == generate(domain, **kw)
    for i, calls in tool_rounds(conv):
        assert [r.tool_call_id for r in conv.messages[i + 1:i + 1 + len(calls)]] == [c.id for c in calls]


def test_a_distracting_result_is_ten_times_the_usual_size():
    conv = generate("ecommerce", turns=3, rounds_per_turn=2, result_tokens=400, seed=1, plant_distraction=2)
    big = [i for p in conv.metadata["planted"] for i in p["messages"]]
    usual = [len(m.text) for i, m in enumerate(conv.messages) if m.role == "tool" and i not in big]
    assert all(len(conv.messages[i].text) > 6 * max(usual) for i in big)


@pytest.mark.parametrize("kwargs,needle", [
    (dict(turns=1, plant_poisoning="false_claim"), "at least 2 turns"),
    (dict(plant_confusion=3), "at least 8"),
    (dict(domain="sql", turns=1, rounds_per_turn=1, plant_clash=10), "lower plant_clash"),
])
def test_a_plant_that_cannot_fit_says_what_to_change(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        generate(**kwargs)


def test_a_customer_fetched_twice_has_one_profile():
    conv = generate("ecommerce", turns=3, rounds_per_turn=12, parallel_calls=2, seed=0)
    profiles: dict[str, set] = {}
    for m in conv.messages:
        if m.role == "tool" and m.name == "get_customer":
            doc = json.loads(m.text)
            profiles.setdefault(doc["customer_id"], set()).add((doc["tier"], doc["member_since"], doc["lifetime_value"]))
    assert profiles and all(len(v) == 1 for v in profiles.values())


def test_sql_that_was_rejected_once_is_never_validated_again():
    for seed in range(8):
        conv = generate("sql", turns=4, rounds_per_turn=12, parallel_calls=3, seed=seed)
        rejected = [json.loads(c.arguments)["sql"] for i, calls in tool_rounds(conv) for c in calls
                    if c.name == "valid_sql" and not json.loads(next(
                        m.text for m in conv.messages if m.tool_call_id == c.id))["valid"]]
        assert len(rejected) == len(set(rejected)), seed
