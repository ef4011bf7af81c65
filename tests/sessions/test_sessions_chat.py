"""The chat loop: the offline scripted responder replays the bundled conversation turn by turn
(tool calls answered from its recorded results), the summary appears and the context shrinks,
tool calls nobody can answer wait for the user, and with a model configured the replies come from
the local fake OpenAI server, which receives exactly the context the session builds."""
from __future__ import annotations

import json

import pytest

import ctxlab
from ctxlab.llm import LLM, LLMConfig
from ctxlab.sessions import SessionError, SessionStore
from ctxlab.sessions.responder import (CannedTools, ModelResponder, ScriptedResponder, advance, model_configured,
                                       pending_calls, run_turn)

from ..conftest import SAMPLES
from ..openai_fake import FakeOpenAI

SAMPLE = SAMPLES / "ecommerce_refund.json"


@pytest.fixture
def shop(tmp_path):
    conv = ctxlab.load(SAMPLE)
    data = ctxlab.export(conv, "openai").data
    store = SessionStore(f"sqlite:///{tmp_path / 'chat.db'}")
    store.save_profile("shop", model="gpt-4", max_tokens=8_192, system_prompt=data["messages"][0]["content"],
                       strategy="summarize", tools=data["tools"])
    yield store, conv, data
    store.close()


def test_scripted_chat_replays_the_sample_and_the_summary_appears(shop):
    store, conv, data = shop
    s = store.start_session("shop")
    script, tools = ScriptedResponder(conv), CannedTools(conv)
    sizes = []
    while (text := script.next_user_message(s.history())) is not None:
        result = run_turn(s, text, script, tools)
        assert result.stopped == "answered" and not result.pending
        sizes.append(s.count(s.context()).total)
    assert s.history() == data["messages"][1:]  # every reply and tool result of the sample, in order
    rec = s.record()
    assert rec.summary and "KC-482193" in rec.summary
    triggered = [c for c in s.compressions() if c.triggered]  # the strategy runs before every model call
    assert triggered and all(c.tokens_after < c.tokens_before for c in triggered)
    assert max(sizes) <= 8_192 * 0.85  # every context sent fits: it shrank inside the long first turn
    # past the script's end the responder says so, it does not invent
    run_turn(s, "Anything else?", script, tools)
    assert "all played" in s.history()[-1]["content"]


def test_a_call_without_a_recorded_result_waits_for_the_user(shop):
    store, conv, _ = shop
    s = store.start_session("shop")
    script = ScriptedResponder(conv)
    result = run_turn(s, script.user_messages[0], script, tools=None)  # nobody answers tool calls
    assert result.stopped == "pending" and result.pending[0]["function"]["name"] == "find_customer"
    assert pending_calls(s.history()) == result.pending
    with pytest.raises(SessionError, match="waiting for tool results"):
        run_turn(s, "hello?", script)
    s.add({"role": "tool", "tool_call_id": result.pending[0]["id"], "content": '{"customer_id": "CUST-1"}'})
    again = advance(s, script, CannedTools(conv))
    assert again.stopped == "answered" and s.history()[2]["content"] == '{"customer_id": "CUST-1"}'
    assert s.history()[-1]["content"].startswith("Thanks for your patience")


def test_canned_tools_answer_by_id_then_by_arguments_then_by_name():
    tools = CannedTools(SAMPLE)
    order = tools.answer({"id": "other", "function": {"name": "get_order", "arguments": '{"order_id": "KC-482193"}'}})
    assert '"order_id": "KC-482193"' in order
    assert tools.answer({"id": "x", "function": {"name": "get_order", "arguments": '{"order_id": "KC-1"}'}}) == order
    assert tools.answer({"id": "x", "function": {"name": "create_replacement_order", "arguments": "{}"}}) is None
    assert "issue_refund" in tools.tool_names


def test_replies_come_from_the_model_when_one_is_configured(shop, monkeypatch):
    store, conv, data = shop
    s = store.start_session("shop")
    with FakeOpenAI() as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-sessions-0123456789")
        assert model_configured()
        api.reply("Order KC-482193 is on its way back to us; I can refund it.", "The refund is RF-1.")
        responder = ModelResponder(LLM(LLMConfig(model="fake-model", base_url=api.base_url,
                                                 api_key="sk-test-sessions-0123456789")))
        run_turn(s, "Where is order KC-482193?", responder)
        run_turn(s, "Please refund it.", responder)
        sent = [r.json for r in api.chat_requests()]
    assert [m["content"] for m in s.history() if m["role"] == "assistant"] == [
        "Order KC-482193 is on its way back to us; I can refund it.", "The refund is RF-1."]
    assert sent[1]["messages"] == s.context()[:-1]  # the model got exactly the context the session built
    assert sent[1]["messages"][0]["content"] == data["messages"][0]["content"]
    assert [t["function"]["name"] for t in sent[0]["tools"]] == [t["function"]["name"] for t in data["tools"]]
    assert "sk-test-sessions" not in json.dumps(s.export())


def test_no_model_configured_means_offline(monkeypatch):
    assert not model_configured()
    with pytest.raises(ctxlab.CtxlabError, match="no model is configured"):
        ModelResponder()


def test_the_generated_thirty_ticket_script_answers_every_turn_from_the_script(tmp_path):
    from ctxlab.generate import generate
    conv = generate(domain="ecommerce", turns=30, seed=0)
    script, tools = ScriptedResponder(conv, label="30 tickets"), CannedTools(conv)
    with SessionStore(f"sqlite:///{tmp_path / 's.db'}") as store:
        store.save_profile("copilot", strategy="none")
        s = store.start_session("copilot")
        for turn in range(30):
            text = script.next_user_message(s.history())
            assert text, f"the script ended after {turn} turns"
            run_turn(s, text, script, tools)
        assert script.next_user_message(s.history()) is None
        replies = [m for m in s.history() if m["role"] == "assistant"]
    assert len(replies) == sum(m.role == "assistant" for m in conv.messages)
    assert not [m for m in replies if str(m.get("content") or "").startswith("(The script")]
