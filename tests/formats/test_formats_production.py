"""Production traces (issue 20.1-20.2): OpenTelemetry GenAI spans, Langfuse and LangSmith exports
read as one conversation per agent run, each call's billed usage on the reply it produced, and
billed vs counted / modelled figures in the engine, the CLI and the sweep.

The files in tests/data/production are written from the specifications by make_traces.py there
(their usage figures are written by hand, not billed by anyone)."""
from __future__ import annotations

import copy
import pickle
import json
from dataclasses import replace

import pytest

import ctxlab
from ctxlab.calibration import calibrate_from_usage
from ctxlab.conversation import Message, Usage
from ctxlab.errors import CtxlabError
from ctxlab.formats import FORMATS, TRACES, export, load_all, loads, run_texts
from ctxlab.pricing import replay_cost
from ctxlab.replay import replay
from ctxlab.strategies import Budget, prepare
from ctxlab.usage import compare_usage, has_usage

from ..conftest import ROOT

DATA = ROOT / "tests" / "data" / "production"
FILES = {"otel_agent_runs.json": ("otel_genai", 2), "otel_file_exporter.jsonl": ("otel_genai", 1),
         "langfuse_trace_export.json": ("langfuse", 1), "langfuse_observations_api.json": ("langfuse", 2),
         "langsmith_run_tree.json": ("langsmith", 1), "langsmith_runs.jsonl": ("langsmith", 2)}
# run A as make_traces.py wrote it: billed prompt (cache included) and cached tokens of its 4 answered calls
RUN_A_PROMPT, RUN_A_CACHED = [1958, 4260, 4341, 4399], [0, 1920, 4224, 4224]
RUN_A_SHAPE = ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool", "assistant"]


def _load(name: str) -> list[ctxlab.Conversation]:
    return load_all((DATA / name).read_bytes())


def _run_a(name: str) -> ctxlab.Conversation:
    return next(c for c in _load(name) if len(c.messages) == 9)


@pytest.mark.parametrize("name", sorted(FILES))
def test_each_file_is_detected_and_split_into_its_agent_runs(name):
    fmt, runs = FILES[name]
    convs = _load(name)
    assert [c.format for c in convs] == [fmt] * runs
    assert all(c.messages[0].role == "system" and len(c.tools) == 3 for c in convs)
    assert fmt in FORMATS and fmt in TRACES and FORMATS[fmt].write is None


@pytest.mark.parametrize("name", [n for n in sorted(FILES) if n != "otel_file_exporter.jsonl"])
def test_run_a_carries_each_calls_billed_usage_on_its_reply(name):
    conv = _run_a(name)
    assert [m.role for m in conv.messages] == RUN_A_SHAPE
    usage = [m.usage for m in conv.messages if m.role == "assistant"]
    assert [u.prompt_tokens for u in usage] == RUN_A_PROMPT  # Langfuse: input + cached, its input excludes the cache
    assert [u.cached_tokens for u in usage] == RUN_A_CACHED
    assert [u.output_tokens for u in usage] == [21, 48, 40, 44]
    assert all(m.usage is None for m in conv.messages if m.role != "assistant")


def test_the_three_readers_rebuild_the_same_conversation():
    convs = [_run_a(n) for n in ("otel_agent_runs.json", "langfuse_trace_export.json", "langsmith_run_tree.json")]
    shapes = [[(m.role, m.text, m.tool_call_id, tuple((c.id, c.name, json.loads(c.arguments)) for c in m.tool_calls))
               for m in c.messages] for c in convs]
    assert shapes[0] == shapes[1] == shapes[2]
    assert [[t.name for t in c.tools] for c in convs] == [["get_build_log", "create_issue", "notify_owner"]] * 3


@pytest.mark.parametrize("name", ["otel_agent_runs.json", "langfuse_trace_export.json", "langsmith_run_tree.json"])
def test_the_failed_call_is_left_out_with_a_note_and_the_failed_tool_is_an_error(name):
    conv = _run_a(name)
    assert any("ended without a reply and are left out" in n and "429" in n for n in conv.notes), conv.notes
    errors = [m.tool_call_id for m in conv.messages if m.role == "tool" and m.is_error]
    assert errors == ["call_issue"]


def test_what_a_reader_leaves_out_is_noted():
    run_b = _load("otel_agent_runs.json")[1]
    assert any("embeddings" in n for n in run_b.notes)
    assert any("observations other than generations" in n for n in _run_a("langfuse_trace_export.json").notes)
    assert any("runs other than llm runs" in n for n in _run_a("langsmith_run_tree.json").notes)


def _otel_doc() -> dict:
    return json.loads((DATA / "otel_agent_runs.json").read_text())


def _chat_spans(doc: dict) -> list[dict]:
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return [s for s in spans if any(a["key"] == "gen_ai.operation.name" and a["value"]["stringValue"] == "chat"
                                     for a in s["attributes"])]


def _set_attr(span: dict, key: str, value: dict) -> None:
    span["attributes"] = [a for a in span["attributes"] if a["key"] != key] + [{"key": key, "value": value}]


def test_a_prompt_the_agent_trimmed_keeps_the_history_with_a_note():
    doc = _otel_doc()
    last = _chat_spans(doc)[4]  # run A's last call: drop the first tool round from what it sent
    msgs = json.loads(next(a["value"]["stringValue"] for a in last["attributes"] if a["key"] == "gen_ai.input.messages"))
    _set_attr(last, "gen_ai.input.messages", {"stringValue": json.dumps(msgs[:1] + msgs[3:])})
    conv = load_all(json.dumps(doc))[0]
    assert [m.role for m in conv.messages] == RUN_A_SHAPE  # nothing duplicated, nothing lost
    assert any("do not extend the call before them" in n for n in conv.notes), conv.notes


@pytest.mark.parametrize("key, value, words", [
    ("gen_ai.usage.input_tokens", {"stringValue": "lots"}, "must be a whole number of tokens"),
    ("gen_ai.input.messages", {"stringValue": "[{not json"}, "not valid JSON"),
    ("gen_ai.output.messages", {"stringValue": json.dumps([{"parts": []}])}, "must be an object with a role"),
])
def test_bad_span_content_is_one_error_naming_the_span(key, value, words):
    doc = _otel_doc()
    _set_attr(_chat_spans(doc)[1], key, value)
    with pytest.raises(CtxlabError) as e:
        load_all(json.dumps(doc))
    assert words in str(e.value) and "resourceSpans[0].scopeSpans[0].spans[" in str(e.value)


def test_a_negative_langfuse_usage_is_an_error_naming_the_observation():
    doc = json.loads((DATA / "langfuse_trace_export.json").read_text())
    gen = next(o for o in doc["observations"] if o["type"] == "GENERATION")
    gen["usageDetails"]["input"] = -5
    with pytest.raises(CtxlabError, match=r"observations\[\d+\]\.usageDetails\.input"):
        load_all(json.dumps(doc))


def test_other_inputs_are_not_taken_for_traces():
    sample = (ROOT / "sample_data" / "ecommerce_refund.json").read_text()
    assert loads(sample).format != "otel_genai" and run_texts(sample) is None
    assert not any(m.usage for m in loads(sample).messages)


def test_each_run_text_reads_back_as_the_same_conversation():
    text = (DATA / "langsmith_runs.jsonl").read_text()
    texts = run_texts(text)
    assert len(texts) == 2
    assert [loads(t).messages for t in texts] == [c.messages for c in load_all(text)]


# ---------------------------------------------------------------- the usage field


def test_usage_defaults_to_none_and_travels_through_copies():
    m = Message("assistant", "hi")
    assert m.usage is None and Message("assistant", "hi") == m
    u = Usage(100, 5, 64, 0, "gpt-4o")
    billed = replace(m, usage=u)
    assert billed.with_content("cleared").usage == u
    assert copy.deepcopy(billed).usage == u and pickle.loads(pickle.dumps(billed)).usage == u and billed != m
    assert u.to_dict() == {"prompt_tokens": 100, "output_tokens": 5, "cached_tokens": 64, "cache_write_tokens": 0,
                           "model": "gpt-4o"}


def test_usage_is_never_counted():
    conv = _run_a("otel_agent_runs.json")
    bare = conv.with_messages([replace(m, usage=None) for m in conv.messages])
    assert ctxlab.count_tokens(conv).total == ctxlab.count_tokens(bare).total


def test_langchain_writes_usage_back_and_others_say_they_cannot():
    conv = _run_a("langsmith_run_tree.json")
    out = export(conv, "langchain")
    again = loads(json.dumps(out.data))
    assert [m.usage.prompt_tokens for m in again.messages if m.usage] == RUN_A_PROMPT
    assert [m.usage.cached_tokens for m in again.messages if m.usage] == RUN_A_CACHED
    assert any("usage 4 call(s) reported is not written" in n for n in export(conv, "openai").notes)


def test_claude_code_sessions_keep_each_responses_usage_cache_included():
    conv = ctxlab.load(ROOT / "tests" / "data" / "coding" / "claude_code_compact.jsonl")
    lines = [json.loads(x) for x in (ROOT / "tests" / "data" / "coding" / "claude_code_compact.jsonl").read_text().splitlines()]
    raw = [r["message"]["usage"] for r in lines if r.get("type") == "assistant" and "usage" in r.get("message", {})
           and not r.get("isSidechain")]
    usage = [m.usage for m in conv.messages if m.role == "assistant"]
    assert usage and all(u is not None for u in usage)
    u0 = raw[0]
    assert usage[0].prompt_tokens == u0["input_tokens"] + u0.get("cache_read_input_tokens", 0) + \
        u0.get("cache_creation_input_tokens", 0)


# ---------------------------------------------------------------- reported vs modelled


def test_the_replay_attaches_each_calls_reported_usage():
    conv = _run_a("otel_agent_runs.json")
    r = replay(conv, "sliding_window", Budget(3000))
    assert [c.reported.prompt_tokens for c in r.calls] == RUN_A_PROMPT
    assert r.calls[1].to_dict()["reported_cached_tokens"] == 1920
    pending = replay(conv.with_messages(conv.messages[:4]), "none", Budget(30_000))
    assert pending.calls[-1].pending and pending.calls[-1].reported is None
    assert "reported_prompt_tokens" not in pending.calls[-1].to_dict()


def test_compare_usage_puts_billed_beside_the_as_sent_count_and_the_cache_model():
    conv = _run_a("otel_agent_runs.json")
    budget = prepare(conv)[1]
    u = compare_usage(conv, budget=budget)
    none = replay(conv, "none", budget)
    cost = replay_cost(none, conv)
    assert [c.counted for c in u.calls] == [c.tokens_after for c in none.calls]
    assert [c.modelled_cached for c in u.calls] == [c.cached_tokens for c in cost.calls]
    assert [c.reported.prompt_tokens for c in u.calls] == RUN_A_PROMPT
    assert all(c.prompt_difference == c.reported.prompt_tokens - c.counted for c in u.calls)
    assert all(c.cached_difference == c.reported.cached_tokens - c.modelled_cached for c in u.calls)
    d = u.to_dict()
    assert d["reported_prompt_tokens"] == sum(RUN_A_PROMPT) and d["calls_compared"] == d["calls_total"] == 4
    assert d["prompt_difference"] == sum(RUN_A_PROMPT) - d["counted_prompt_tokens"]
    assert d["reported_cached_tokens"] == sum(RUN_A_CACHED)
    assert u.modelled_cached_tokens > 0  # the prompts pass OpenAI's 1,024-token minimum: the model caches


def test_a_trace_without_usage_compares_nothing():
    conv = loads((ROOT / "sample_data" / "ecommerce_refund.json").read_text())
    assert not has_usage(conv) and compare_usage(conv).calls == ()
    assert calibrate_from_usage([conv]) == []


def test_calibration_per_billing_model_from_traces():
    convs = _load("otel_agent_runs.json")
    cals = calibrate_from_usage(convs)
    assert [c.model for c in cals] == ["gpt-4o-2024-08-06"]
    cmp = [compare_usage(c) for c in convs]
    assert cals[0].calls == 6
    assert cals[0].reported == sum(u.reported_prompt_tokens for u in cmp)
    assert cals[0].counted == sum(u.counted_prompt_tokens for u in cmp)
    assert cals[0].factor == pytest.approx(cals[0].reported / cals[0].counted)
    claude = [c.with_messages([replace(m, usage=replace(m.usage, model="claude-sonnet-4-5")) if m.usage else m
                               for m in c.messages]) for c in convs]
    cal = calibrate_from_usage([replace(c, model="claude-sonnet-4-5") for c in claude])[0]
    assert cal.model == "claude-sonnet-4-5" and not cal.exact_before


def test_a_trace_missing_its_system_prompt_calibrates_on_the_growth_between_calls():
    conv = _run_a("otel_agent_runs.json")
    bare = replace(conv.with_messages(conv.messages[1:]), tools=())  # as Claude Code logs: no system, no tools
    cal = calibrate_from_usage([bare])[0]
    u = compare_usage(bare)
    pairs = list(zip(u.calls, u.calls[1:]))
    assert cal.method == "growth" and cal.calls == len(pairs) == 3
    assert cal.reported == RUN_A_PROMPT[-1] - RUN_A_PROMPT[0]
    assert cal.counted == u.calls[-1].counted - u.calls[0].counted
    assert calibrate_from_usage([conv])[0].method == "whole"


def _any_value(v):
    """Python data as an OTLP AnyValue (what an exporter writes for a structured attribute)."""
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": _any_value(x)} for k, x in v.items()]}}
    if isinstance(v, list):
        return {"arrayValue": {"values": [_any_value(x) for x in v]}}
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    return {"stringValue": v}


def test_structured_otlp_attributes_read_like_json_strings():
    doc = _otel_doc()
    for span in _chat_spans(doc):
        for a in span["attributes"]:
            if a["key"] in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
                            "gen_ai.tool.definitions"):
                a["value"] = _any_value(json.loads(a["value"]["stringValue"]))
            elif a["key"].startswith("gen_ai.usage."):
                a["value"] = {"intValue": int(a["value"]["intValue"])}  # some exporters write int64 as a number
    assert [c.messages for c in load_all(json.dumps(doc))] == [c.messages for c in _load("otel_agent_runs.json")]


def _paths(x, path=()):
    yield path
    items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
    for k, v in items:
        yield from _paths(v, path + (k,))


@pytest.mark.parametrize("seed", range(3))
def test_a_broken_trace_is_a_clear_error_never_a_crash(seed):
    """Random fields of the trace files replaced by values of the wrong type: reading (and
    comparing the usage of) what is left either works or raises a CtxlabError."""
    import random
    rng = random.Random(seed)
    docs = [json.loads((DATA / n).read_text()) for n in FILES if n.endswith(".json")]
    wrong = [None, 0, -1, "x", [], {}, [1], {"a": 1}, True, 1.5, [{"type": "text"}]]
    for _ in range(60):
        doc = copy.deepcopy(rng.choice(docs))
        for _ in range(rng.randint(1, 3)):
            path = rng.choice([p for p in _paths(doc) if p])
            node = doc
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = copy.deepcopy(rng.choice(wrong))
        try:
            for conv in load_all(json.dumps(doc)):
                compare_usage(conv)
        except CtxlabError:
            pass


def test_after_a_compaction_the_prompt_counted_is_the_one_the_model_saw():
    conv = ctxlab.load(ROOT / "tests" / "data" / "coding" / "claude_code_compact.jsonl")
    mark = next(i for i, m in enumerate(conv.messages) if m.extra.get("ctxlab_compaction"))
    budget = prepare(conv)[1]
    u = compare_usage(conv, budget=budget)
    after = next(c for c in u.calls if c.index > mark)
    seen = replay(conv.with_messages(conv.messages[mark:]), "none", budget)
    assert after.counted == seen.calls[0].tokens_after  # the summary and what followed, not the history
    assert after.counted < replay(conv, "none", budget).calls[[c.index for c in u.calls].index(after.index)].tokens_after
    assert [c.call for c in u.calls] == list(range(len(u.calls)))
    assert [c.index for c in u.calls] == [i for i, m in enumerate(conv.messages) if m.role == "assistant"]
