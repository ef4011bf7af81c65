"""ctxlab.llm's retry loop judged against the openai client's own (issue 20 item 4), on the real
HTTP fake: ctxlab retries what the client would retry among HTTP responses (408, 409, 429, 5xx,
``x-should-retry``), and the client's retries are measured where ctxlab keeps its own loop: the
client retries timeouts and refused connections and waits any Retry-After up to 120 s. If a
client release changes that, these tests fail and the hand-written loop should be looked at again."""
from __future__ import annotations

import socket
import time
import types

import openai
import pytest
from openai import _base_client

from ctxlab.llm import LLM, LLMConfig, LLMError

from ..openai_fake import FakeOpenAI

HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture()
def api():
    with FakeOpenAI() as server:
        yield server


def _llm(api: FakeOpenAI, **kw) -> tuple[LLM, list[float]]:
    waits: list[float] = []
    cfg = LLMConfig(base_url=api.base_url, api_key="sk-test-retry-0123456789", model="fake", **{"timeout": 5.0, **kw})
    return LLM(cfg, sleep=waits.append), waits


@pytest.mark.parametrize("status", [408, 409])
def test_request_and_lock_timeouts_are_retried_as_the_client_would(api, status):
    llm, waits = _llm(api, backoff=0.25)
    api.fail_next(status)
    api.reply("second time")
    result = llm.chat(HELLO)
    assert result.text == "second time" and result.attempts == 2 and waits == [0.25]


def test_the_servers_x_should_retry_is_obeyed_both_ways(api):
    llm, waits = _llm(api)
    api.fail_next(503, headers={"x-should-retry": "false"})
    with pytest.raises(LLMError) as e:
        llm.chat(HELLO)
    assert e.value.attempts == 1 and waits == [] and "said not to retry" in str(e.value)
    api.fail_next(400, headers={"x-should-retry": "true"}, retry_after=0.1)
    api.reply("ok")
    assert llm.chat(HELLO).attempts == 2 and waits == [0.1]


def _record_client_sleeps(monkeypatch) -> list[float]:
    """The client's backoff sleeps, recorded instead of slept (only in its own module: the fake
    server's real waits stay real)."""
    slept: list[float] = []
    clock = types.SimpleNamespace(**{n: getattr(time, n) for n in dir(time) if not n.startswith("_")})
    clock.sleep = slept.append
    monkeypatch.setattr(_base_client, "time", clock)
    return slept


def _client(api_or_url: str, *, timeout: float, retries: int) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test-retry-0123456789", base_url=api_or_url, timeout=timeout, max_retries=retries)


def test_the_client_retries_a_hung_server_so_a_call_takes_retries_plus_one_timeouts(api, monkeypatch):
    slept = _record_client_sleeps(monkeypatch)  # only the backoff; the hangs are real
    api.hang_next(1.5, times=3)
    start = time.perf_counter()
    with pytest.raises(openai.APITimeoutError):
        _client(api.base_url, timeout=0.3, retries=2).chat.completions.create(model="fake", messages=HELLO)
    took = time.perf_counter() - start
    assert len(api.chat_requests()) == 3 and len(slept) == 2 and took >= 0.9
    llm, waits = _llm(api, timeout=0.3)
    api.hang_next(1.5)
    with pytest.raises(LLMError) as e:
        llm.chat(HELLO)
    assert e.value.kind == "timeout" and e.value.attempts == 1 and waits == []


def test_the_client_backs_off_before_saying_a_local_server_is_not_running(monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    slept = _record_client_sleeps(monkeypatch)
    with pytest.raises(openai.APIConnectionError):
        _client(f"http://127.0.0.1:{port}/v1", timeout=2, retries=2).chat.completions.create(model="f", messages=HELLO)
    assert len(slept) == 2 and sum(slept) > 0
    waits: list[float] = []
    llm = LLM(LLMConfig(base_url=f"http://127.0.0.1:{port}/v1", model="f"), sleep=waits.append)
    with pytest.raises(LLMError) as e:
        llm.chat(HELLO)
    assert e.value.kind == "connection" and e.value.attempts == 1 and waits == []


def test_the_client_waits_a_long_retry_after_where_ctxlab_gives_up_and_says_so(api, monkeypatch):
    slept = _record_client_sleeps(monkeypatch)
    api.fail_next(429, retry_after=100)
    api.reply("after 100 s")
    reply = _client(api.base_url, timeout=5, retries=2).chat.completions.create(model="fake", messages=HELLO)
    assert reply.choices[0].message.content == "after 100 s" and slept == [100.0]  # an interactive page frozen
    llm, waits = _llm(api, max_wait=30)
    api.fail_next(429, retry_after=100)
    with pytest.raises(LLMError) as e:
        llm.chat(HELLO)
    assert waits == [] and "asked to wait 100.0 s" in str(e.value) and e.value.attempts == 1
