"""Answer replay against the fake OpenAI server: each strategy's context plus the same question,
the answers side by side with the server's usage and latency, a failed call kept with its error;
and ``ctxlab answer``."""
from __future__ import annotations

import json

import pytest

import ctxlab
from ctxlab.answers import AnswerError, answer_replay, context_for, strategy_from_spec
from ctxlab.cli import main
from ctxlab.llm import LLM, LLMConfig
from ctxlab.strategies import get_strategy

from ..conftest import SAMPLES
from ..openai_fake import FakeOpenAI

QUESTION = "What refund amount did we agree on?"


@pytest.fixture()
def api():
    with FakeOpenAI() as server:
        yield server


@pytest.fixture()
def llm(api):
    return LLM(LLMConfig(base_url=api.base_url, api_key="sk-test-answers", model="fake-model", timeout=2.0))


def refund() -> ctxlab.Conversation:
    return ctxlab.load(SAMPLES / "ecommerce_refund.json")


def test_each_strategy_sends_its_own_context_and_the_same_question(api, llm):
    conv = refund()
    api.reply("A full refund of $483.95.", "I do not know.")
    answers = answer_replay(conv, ["none", "sliding_window"], QUESTION, llm, context_limit=3_000)
    full, window = api.chat_requests()
    assert [a.label for a in answers] == ["none", "sliding_window"]
    assert [a.answer for a in answers] == ["A full refund of $483.95.", "I do not know."]
    for request, answer in zip((full, window), answers):
        sent = request.json["messages"]
        assert sent[-1] == {"role": "user", "content": QUESTION}  # the same final question, last
        plan_msgs = answer.plan.messages
        assert len(sent) == len(plan_msgs) == answer.context_messages
        assert request.json["tool_choice"] == "none" and len(request.json["tools"]) == len(conv.tools)
    assert len(full.json["messages"]) == len(conv.messages) + 1  # `none` sends everything
    assert len(window.json["messages"]) < len(full.json["messages"])  # the window trimmed to 3,000 tokens
    assert answers[1].context_tokens < answers[0].context_tokens and answers[1].retention < answers[0].retention


def test_usage_cached_tokens_and_latency_per_call(api, llm):
    conv = refund()
    first = answer_replay(conv, ["none", "tool_rounds"], QUESTION, llm)
    assert all(a.cached_tokens is None for a in first)  # the server reported none: None, not 0
    assert all(a.prompt_tokens and a.completion_tokens and a.latency_ms > 0 and a.attempts == 1 for a in first)
    api.report_cached = 128
    second = answer_replay(conv, ["none"], QUESTION, llm)
    assert second[0].cached_tokens == 128
    assert second[0].to_dict()["cached_tokens"] == 128 and json.dumps([a.to_dict() for a in first])


def test_a_failed_call_keeps_the_context_and_says_why(api, llm):
    conv = refund()
    api.fail_next(401)
    answers = answer_replay(conv, ["sliding_window", "none"], QUESTION, llm, context_limit=3_000)
    failed, fine = answers
    assert failed.answer is None and not failed.ok and "rejected the API key" in failed.error
    assert failed.fallback.startswith("no answer") and failed.plan is not None and failed.context_tokens > 0
    assert fine.ok and fine.answer == "fake reply"


def test_the_llm_summarizer_in_a_strategy_uses_the_same_model(api, llm):
    conv = refund()
    api.reply("SUMMARY FROM THE MODEL", "the answer")
    summarize = get_strategy("summarize", summarizer="llm", trigger_messages=4, keep_recent=2)
    (answer,) = answer_replay(conv, [summarize], QUESTION, llm, context_limit=4_000)
    summary_call, answer_call = api.chat_requests()
    assert "Messages to summarize" in summary_call.json["messages"][0]["content"]
    assert any("SUMMARY FROM THE MODEL" in (m.get("content") or "") for m in answer_call.json["messages"])
    assert answer.answer == "the answer"


def test_bad_input_is_one_clear_error(llm):
    conv = refund()
    with pytest.raises(AnswerError, match="the question is empty"):
        answer_replay(conv, ["none"], "  ", llm)
    with pytest.raises(AnswerError, match="one to 4 strategies, got 5"):
        answer_replay(conv, ["none"] * 5, QUESTION, llm)
    with pytest.raises(ctxlab.CtxlabError, match="sliding_windo"):
        strategy_from_spec("sliding_windo")
    assert strategy_from_spec("tool_rounds >> sliding_window", ["sliding_window.buffer_ratio=0.2"]).steps[1].buffer_ratio == 0.2


def test_duplicate_strategies_get_numbered_labels(api, llm):
    answers = answer_replay(refund(), ["none", "none"], QUESTION, llm)
    assert [a.label for a in answers] == ["1 · none", "2 · none"]


def test_context_for_keeps_the_conversations_facts_not_the_questions():
    conv = refund()
    plan, payload, tokens = context_for(conv, get_strategy("none"), "Is XY-999999 the order?")
    assert "XY-999999" not in plan.facts_kept and plan.retention == 1.0
    assert payload["messages"][-1]["content"] == "Is XY-999999 the order?" and tokens == plan.tokens_after


def test_cli_answer_prints_the_answers_as_json(api, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
    api.reply("first", "second")
    code = main(["answer", str(SAMPLES / "ecommerce_refund.json"), "--strategy", "none", "--strategy",
                 "sliding_window", "--question", QUESTION, "--model", "cli-model", "--max-tokens", "3000"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and [a["answer"] for a in out["answers"]] == ["first", "second"]
    assert out["model"]["model"] == "cli-model" and api.chat_requests()[0].json["model"] == "cli-model"
    assert out["answers"][1]["context_tokens"] <= 3000


def test_cli_answer_without_a_model_exits_2_with_how_to_configure(capsys):
    code = main(["answer", str(SAMPLES / "ecommerce_refund.json"), "--strategy", "none", "--question", QUESTION])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "OPENAI_API_KEY" in err and "OPENAI_BASE_URL" in err


def test_cli_answer_when_every_call_fails_keeps_the_json_and_exits_2(api, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
    api.fail_next(401, times=2)
    code = main(["answer", str(SAMPLES / "ecommerce_refund.json"), "--strategy", "none", "--strategy",
                 "tool_rounds", "--question", QUESTION])
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert code == 2 and all(a["answer"] is None and a["error"] for a in out["answers"])
    assert captured.err.count("\n") == 1 and "no answer for none, tool_rounds" in captured.err
