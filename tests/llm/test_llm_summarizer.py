"""summarizer=llm against the fake OpenAI server: the first and merge calls (the prompts sent, the
running summary kept), the token cap, the record of who wrote each summary, the cache (no second
call for the same span), and the fallback to the extractive summary on every fault."""
from __future__ import annotations

import json

import pytest

from ctxlab.conversation import Message
from ctxlab.llm import LLM, LLMConfig, use_llm
from ctxlab.replay import replay
from ctxlab.strategies import Budget, StrategyError, make_view
from ctxlab.strategies.summarizers.llm import (DEFAULT_LLM_SUMMARIZER, MERGE_PROMPT, SUMMARY_PROMPT, LLMSummarizer,
                                              SummaryCache, render_span)
from ctxlab.strategies.summarizers.summarize import SUMMARIZERS, ExtractiveSummarizer, Summarize, is_summary, summary_body
from ctxlab.tokens import TokenCounter
from ctxlab.validate import validate

from ..openai_fake import FakeOpenAI
from ..strategies.test_summarize import conversation

BIG = Budget(1_000_000)


@pytest.fixture()
def api():
    with FakeOpenAI() as server:
        yield server


@pytest.fixture()
def summarizer(api, monkeypatch):
    """A fresh LLM summarizer (its own cache) on the fake server, registered as ``llm``."""
    llm = LLM(LLMConfig(base_url=api.base_url, api_key="sk-test-summaries", model="fake-model", timeout=0.5,
                        backoff=0.01, max_attempts=2), sleep=lambda _: None)
    made = LLMSummarizer(llm=llm, cache=SummaryCache())
    monkeypatch.setitem(SUMMARIZERS, "llm", made)
    return made


def prompt_of(request) -> str:
    return request.json["messages"][0]["content"]


def only_summary(plan) -> Message:
    found = [m for m in plan.messages if is_summary(m)]
    assert len(found) == 1
    return found[0]


def assert_valid(plan) -> None:
    for rules in ("openai", "anthropic"):
        assert not [f for f in validate(list(plan.messages), rules=rules) if f.severity == "error"]


def test_first_call_sends_the_span_and_the_summary_is_the_reply(api, summarizer):
    msgs = conversation(8)
    api.reply("Orders ORD-1000 to ORD-1004 checked; all shipped.")
    plan = Summarize(summarizer="llm", keep_recent=4, trigger_messages=10, max_summary_tokens=300).apply(
        make_view(msgs), BIG)
    (request,) = api.chat_requests()
    prompt = prompt_of(request)
    assert prompt.startswith(SUMMARY_PROMPT.split("{max_tokens}")[0]) and "At most 300 tokens" in prompt
    assert "[user] Please check order ORD-1000." in prompt and "[assistant -> tool t_c0_0] {}" in prompt
    assert '"order_id": "ORD-1000"' in prompt  # tool results are in the span
    folded = [i for i, a in enumerate(plan.actions) if a == "summarize"]
    assert "ORD-%d" % (1000 + (folded[-1] - 1) // 4) in prompt
    assert f"ORD-{1000 + 7}" not in prompt  # the newest turn is never folded, never sent
    assert request.json["max_tokens"] == 300 and request.json["model"] == "fake-model"
    assert summary_body(only_summary(plan)) == "Orders ORD-1000 to ORD-1004 checked; all shipped."
    assert plan.state["summary"] == "Orders ORD-1000 to ORD-1004 checked; all shipped."
    record = plan.stats["summary_by"]
    assert record["summarizer"] == "llm" and record["model"] == "fake-model" and record["call"] == "first"
    assert record["prompt_tokens"] > 0 and record["completion_tokens"] == 7 and record["latency_ms"] > 0
    assert not plan.warnings
    assert_valid(plan)


def test_merge_call_extends_the_running_summary_with_the_new_span_only(api, summarizer):
    msgs = conversation(12)
    strategy = Summarize(summarizer="llm", keep_recent=4, trigger_messages=15, max_summary_tokens=400)
    api.reply("FIRST SUMMARY", "MERGED SUMMARY")
    first_view = make_view(msgs[:30])
    first = strategy.apply(first_view, BIG)
    arrived = list(range(30, 42))
    origin = [first_view.origin[k] if k is not None else None for k in first.origin] + arrived
    second = strategy.apply(make_view([*first.messages, *(msgs[i] for i in arrived)], origin=origin,
                                      state=first.state), BIG)
    first_req, merge_req = api.chat_requests()
    merge = prompt_of(merge_req)
    assert merge.startswith(MERGE_PROMPT.split("{summary}")[0])
    assert "The running summary so far:\nFIRST SUMMARY\n" in merge
    assert "ORD-1000" in prompt_of(first_req) and "ORD-1000" not in merge  # the old span is not sent again
    assert "ORD-1006" in merge and "ORD-1008" in merge
    assert summary_body(only_summary(second)) == "MERGED SUMMARY" and second.state["summary"] == "MERGED SUMMARY"
    assert second.stats["summary_by"]["call"] == "merge"
    assert only_summary(second).text.startswith("Summary of earlier conversation (messages 1-36):")
    assert_valid(second)


def test_edited_prompts_are_sent_and_checked(api, summarizer):
    msgs = conversation(8)
    strategy = Summarize(summarizer="llm", keep_recent=4, trigger_messages=10,
                         summary_prompt="Summarise {span} in {max_tokens} tokens. {not a placeholder}")
    strategy.apply(make_view(msgs), BIG)
    sent = prompt_of(api.chat_requests()[-1])
    assert sent.startswith("Summarise [system] You are a support agent.") or sent.startswith("Summarise [user]")
    assert sent.endswith("in 400 tokens. {not a placeholder}")
    with pytest.raises(StrategyError, match=r"summarize.merge_prompt: merge_prompt must contain \{summary\}"):
        Summarize(summarizer="llm", merge_prompt="Merge {span}")
    with pytest.raises(StrategyError, match=r"summary_prompt must contain \{span\}"):
        Summarize(summarizer="llm", summary_prompt="Summarise the conversation")


def test_a_reply_over_the_cap_is_cut_to_it_and_says_so(api, summarizer):
    msgs = conversation(8)
    api.reply("\n".join(f"line {k}: order ORD-{k} shipped with tracking 1Z{k:08d}" for k in range(120)))
    plan = Summarize(summarizer="llm", keep_recent=4, trigger_messages=10, max_summary_tokens=60).apply(
        make_view(msgs), BIG)
    assert TokenCounter().text(summary_body(only_summary(plan))) <= 60
    assert plan.stats["summary_by"]["over_cap"] is True
    assert any("60-token cap" in w for w in plan.warnings)
    assert_valid(plan)


def test_same_span_is_not_sent_twice_across_slider_moves_replays_and_sweep_points(api, summarizer):
    msgs = conversation(10)
    view = make_view(msgs)
    Summarize(summarizer="llm", keep_recent=4, trigger_messages=10).apply(view, BIG)
    assert len(api.chat_requests()) == 1
    # a slider move that folds the same span (the trigger moved, the fold did not)
    Summarize(summarizer="llm", keep_recent=4, trigger_messages=12).apply(view, BIG)
    Summarize(summarizer="llm", keep_recent=4, trigger_messages=10).apply(make_view(msgs), BIG)
    assert len(api.chat_requests()) == 1
    # a replay twice: the second costs no call
    strategy = Summarize(summarizer="llm", keep_recent=4, trigger_messages=10)
    first = replay(msgs, strategy, BIG)
    calls = len(api.chat_requests())
    second = replay(msgs, strategy, BIG)
    assert len(api.chat_requests()) == calls
    def plans(r):  # the plans made call by call (none below the trigger)
        return [p for c in r.calls if (p := r.plan_at(c.number)) is not None]
    assert [p.state.get("summary") for p in plans(first)] == [p.state.get("summary") for p in plans(second)]
    assert any(p.stats.get("summary_by", {}).get("cache_hit") for p in plans(second))
    # another prompt is another key
    Summarize(summarizer="llm", keep_recent=4, trigger_messages=10, summary_prompt="Short: {span}").apply(view, BIG)
    assert len(api.chat_requests()) == calls + 1


def test_the_disk_cache_serves_a_new_process(api, monkeypatch, tmp_path):
    monkeypatch.setenv("CTXLAB_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CTXLAB_LLM_CACHE", "disk")
    llm = LLM(LLMConfig(base_url=api.base_url, api_key="sk-test-disk", model="fake-model"))
    msgs = conversation(8)
    strategy = Summarize(summarizer="llm", keep_recent=4, trigger_messages=10)
    monkeypatch.setitem(SUMMARIZERS, "llm", LLMSummarizer(llm=llm, cache=SummaryCache.from_env()))
    api.reply("disk summary")
    strategy.apply(make_view(msgs), BIG)
    files = list((tmp_path / "llm_summaries").glob("*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["text"] == "disk summary"
    monkeypatch.setitem(SUMMARIZERS, "llm", LLMSummarizer(llm=llm, cache=SummaryCache.from_env()))  # empty memory
    plan = strategy.apply(make_view(msgs), BIG)
    assert len(api.chat_requests()) == 1 and summary_body(only_summary(plan)) == "disk summary"


@pytest.mark.parametrize("fault", ["timeout", "401", "429", "500", "malformed"])
def test_every_fault_falls_back_to_the_extractive_summary_with_a_warning(api, summarizer, fault):
    msgs = conversation(8)
    {"timeout": lambda: api.hang_next(1.5), "401": lambda: api.fail_next(401),
     "429": lambda: api.fail_next(429, retry_after=600), "500": lambda: api.fail_next(500, times=2),
     "malformed": api.malformed_next}[fault]()
    strategy = Summarize(summarizer="llm", keep_recent=4, trigger_messages=10)
    plan = strategy.apply(make_view(msgs), BIG)
    offline = Summarize(keep_recent=4, trigger_messages=10).apply(make_view(msgs), BIG)
    assert only_summary(plan).text == only_summary(offline).text  # the offline path, not an empty summary
    assert plan.actions == offline.actions and plan.retention == offline.retention
    (warning,) = plan.warnings
    assert warning.startswith("LLM summary unavailable, used the offline extractive summary instead: model fake-model")
    assert plan.stats["summary_by"]["summarizer"] == "extractive (fallback)"
    assert_valid(plan)
    sent = len(api.chat_requests())
    strategy.apply(make_view(msgs), BIG)  # moments later: the failing server is not called again
    assert len(api.chat_requests()) == sent


def test_the_server_is_tried_again_after_the_cooldown(api, summarizer):
    now = [0.0]
    summarizer.clock = lambda: now[0]
    msgs = conversation(8)
    api.fail_next(401)
    strategy = Summarize(summarizer="llm", keep_recent=4, trigger_messages=10)
    assert strategy.apply(make_view(msgs), BIG).warnings
    now[0] += summarizer.cooldown + 1
    api.reply("back again")
    plan = strategy.apply(make_view(msgs), BIG)
    assert summary_body(only_summary(plan)) == "back again" and not plan.warnings


def test_no_model_configured_changes_nothing_but_a_warning():
    msgs = conversation(8)
    plan = Summarize(summarizer="llm", keep_recent=4, trigger_messages=10).apply(make_view(msgs), BIG)
    offline = Summarize(keep_recent=4, trigger_messages=10).apply(make_view(msgs), BIG)
    assert only_summary(plan).text == only_summary(offline).text
    assert "no model is configured" in plan.warnings[0] and "OPENAI_BASE_URL" in plan.warnings[0]


def test_the_registered_summarizer_uses_the_model_set_for_the_block(api):
    DEFAULT_LLM_SUMMARIZER.cache.clear()
    llm = LLM(LLMConfig(base_url=api.base_url, model="block-model"))
    api.reply("from the block's model")
    with use_llm(llm):
        plan = Summarize(summarizer="llm", keep_recent=4, trigger_messages=10).apply(make_view(conversation(8)), BIG)
    assert summary_body(only_summary(plan)) == "from the block's model"
    assert api.chat_requests()[0].json["model"] == "block-model"
    assert "llm" in Summarize.schema()[[s["name"] for s in Summarize.schema()].index("summarizer")]["choices"]


def test_render_span_cuts_huge_messages_and_names_tools():
    from ..builders import assistant, tool
    msgs = [assistant("", "c1"), tool("c1", "x" * 10_000)]
    text = render_span(msgs, message_chars=100)
    assert "[assistant -> tool" in text and "[tool result" in text and "9,900 characters cut" in text
    assert ExtractiveSummarizer().summarize(msgs, None)  # the fallback has something to say too
