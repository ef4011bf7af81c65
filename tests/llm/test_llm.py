"""ctxlab.llm against a real HTTP server on 127.0.0.1: configuration, the retry loop (Retry-After
honoured, attempts visible, total wait capped), every fault giving one clear LLMError."""
from __future__ import annotations

import json
import socket

import pytest

from ctxlab.llm import (LLM, LLMConfig, LLMError, LLMNotConfiguredError, SecretKey, active_llm, public_url,
                        require_configured, use_llm)

from ..openai_fake import FakeOpenAI

KEY = "sk-ctxlab-PLANTED-llm-0123456789"
HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture()
def api():
    with FakeOpenAI() as server:
        yield server


def make_llm(api: FakeOpenAI, **kw) -> tuple[LLM, list[float]]:
    waits: list[float] = []
    cfg = LLMConfig(base_url=api.base_url, api_key=KEY, model="fake-model", **{"timeout": 5.0, **kw})
    return LLM(cfg, sleep=waits.append), waits


def test_config_from_env_and_overrides(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("CTXLAB_LLM_MODEL", "llama3.1:8b")
    cfg = LLMConfig.from_env()
    assert (cfg.model, cfg.base_url, cfg.configured, cfg.host) == ("llama3.1:8b", "http://127.0.0.1:9/v1", True,
                                                                  "127.0.0.1:9")
    assert cfg.api_key.reveal() == KEY
    assert LLMConfig.from_env(model="other", base_url=None).model == "other"
    assert not LLMConfig.from_env({}).configured


def test_the_key_never_shows_in_config_text():
    cfg = LLMConfig(api_key=KEY, base_url="http://user:hunter2pass@127.0.0.1:8000/v1")
    shown = [repr(cfg), str(cfg), cfg.describe(), json.dumps(cfg.to_dict()), repr(LLM(cfg)), f"{cfg.api_key}",
             str(cfg.api_key), cfg.fingerprint()]
    for text in shown:
        assert KEY not in text and "hunter2pass" not in text
    assert cfg.to_dict()["has_key"] is True and cfg.to_dict()["base_url"] == "http://127.0.0.1:8000/v1"
    with pytest.raises(TypeError):
        json.dumps({"key": cfg.api_key})  # a SecretKey cannot be serialised by accident
    assert cfg.scrub(f"bad key {KEY} / Bearer abc.def / sk-another-key-123456") == \
        "bad key *** / Bearer *** / sk-***"
    assert public_url("https://u:p@host.example:8443/v1?x=1") == "https://host.example:8443/v1"


def test_bad_config_is_one_clear_error():
    with pytest.raises(LLMError, match="must start with http"):
        LLMConfig(base_url="127.0.0.1:8000/v1")
    with pytest.raises(LLMError, match="timeout"):
        LLMConfig(timeout=0)


def test_chat_sends_the_request_and_reads_usage(api):
    llm, _ = make_llm(api)
    api.reply("the answer")
    result = llm.chat(HELLO, max_tokens=50)
    sent = api.chat_requests()[-1]
    assert sent.json["model"] == "fake-model" and sent.json["messages"] == HELLO and sent.json["max_tokens"] == 50
    assert sent.bearer == KEY
    assert (result.text, result.attempts, result.cached_tokens) == ("the answer", 1, None)
    assert result.prompt_tokens and result.completion_tokens == 2 and result.latency_ms > 0
    api.report_cached = 3
    assert llm.chat(HELLO).cached_tokens == 3  # reported by the server: passed on


def test_429_with_retry_after_then_success_waits_what_the_server_asked(api):
    llm, waits = make_llm(api)
    api.fail_next(429, retry_after=0.25)
    api.reply("after the wait")
    result = llm.chat(HELLO)
    assert result.text == "after the wait" and result.attempts == 2
    assert waits == [0.25]
    assert len(api.chat_requests()) == 2


def test_429_asking_for_more_than_the_wait_limit_gives_up_at_once(api):
    llm, waits = make_llm(api, max_wait=5)
    api.fail_next(429, retry_after=120)
    with pytest.raises(LLMError) as e:
        llm.chat(HELLO)
    assert e.value.kind == "rate_limit" and e.value.attempts == 1 and waits == []
    assert "120.0 s" in str(e.value) and "429" in str(e.value)
    assert len(api.chat_requests()) == 1


def test_5xx_is_retried_with_doubling_backoff_then_reported(api):
    llm, waits = make_llm(api, max_attempts=3, backoff=0.5)
    api.fail_next(500, times=3)
    with pytest.raises(LLMError) as e:
        llm.chat(HELLO)
    assert e.value.kind == "server" and e.value.attempts == 3 and e.value.status == 500
    assert waits == [0.5, 1.0]
    assert "gave up after 3 attempts" in str(e.value)
    assert len(api.chat_requests()) == 3
    api.fail_next(503)
    assert llm.chat(HELLO).attempts == 2  # one 5xx then success


def test_total_wait_is_capped(api):
    llm, waits = make_llm(api, max_attempts=10, backoff=1.0, max_wait=3.0)
    api.fail_next(500, times=10)
    with pytest.raises(LLMError):
        llm.chat(HELLO)
    assert sum(waits) <= 3.0 and waits == [1.0, 2.0]


def test_timeout_is_one_message_and_not_retried(api):
    llm, waits = make_llm(api, timeout=0.3)
    api.hang_next(2.0)
    with pytest.raises(LLMError) as e:
        llm.chat(HELLO)
    assert e.value.kind == "timeout" and "0.3 s" in str(e.value) and waits == []
    assert len(api.chat_requests()) == 1


def test_401_names_the_problem_without_the_key(api):
    llm, _ = make_llm(api)
    api.fail_next(401)  # the fake quotes the key back in full, like the worst real server
    with pytest.raises(LLMError) as e:
        llm.chat(HELLO)
    assert e.value.kind == "auth" and "rejected the API key" in str(e.value) and "OPENAI_API_KEY" in str(e.value)
    assert KEY not in str(e.value) and "***" in str(e.value)


def test_malformed_reply_is_a_bad_reply(api):
    llm, _ = make_llm(api)
    api.malformed_next()
    with pytest.raises(LLMError) as e:
        llm.chat(HELLO)
    assert e.value.kind == "bad_reply" and "not an OpenAI chat completion" in str(e.value)
    api.route("/v1/chat/completions", lambda body: {"id": "x", "object": "chat.completion", "choices": []})
    with pytest.raises(LLMError, match="no choices"):
        llm.chat(HELLO)


def test_no_server_is_a_connection_error():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm = LLM(LLMConfig(base_url=f"http://127.0.0.1:{port}/v1", timeout=2), sleep=lambda _: None)
    with pytest.raises(LLMError) as e:
        llm.chat(HELLO)
    assert e.value.kind == "connection" and "OPENAI_BASE_URL" in str(e.value)


def test_not_configured_says_how_to_configure():
    with pytest.raises(LLMNotConfiguredError) as e:
        require_configured(LLM(LLMConfig.from_env({})))
    assert "OPENAI_API_KEY" in str(e.value) and "OPENAI_BASE_URL" in str(e.value) and "CTXLAB_LLM_MODEL" in str(e.value)
    with pytest.raises(LLMNotConfiguredError):
        LLM(LLMConfig.from_env({})).chat(HELLO)


def test_use_llm_sets_the_model_for_this_block_only(api):
    llm, _ = make_llm(api)
    before = active_llm()
    with use_llm(llm):
        assert active_llm() is llm
    assert active_llm() is before and not before.config.configured  # tests see no OPENAI_* settings


def test_secret_key_equality_and_truth():
    assert SecretKey("a") == SecretKey("a") and SecretKey("a") != SecretKey("b")
    assert not SecretKey("") and LLMConfig(api_key="  ").api_key is None
