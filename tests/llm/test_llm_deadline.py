"""The model timeout is for the whole call: a server that trickles its reply
a byte at a time is cut at the timeout, not held for minutes; a reply cut short is a bad reply,
not "cannot connect"."""
from __future__ import annotations

import pytest

from ctxlab.llm import LLM, LLMConfig, LLMError

from ..openai_fake import FakeOpenAI


def test_a_trickling_server_is_cut_at_the_timeout():
    with FakeOpenAI() as api:
        llm = LLM(LLMConfig(base_url=api.base_url, timeout=1.0, max_attempts=1))
        api.trickle_next(0.2)  # every read gets a byte within 0.2 s; the whole reply would take over a minute
        with pytest.raises(LLMError) as e:  # before: every read was in time, so the call ran ~70 s and succeeded
            llm.chat([{"role": "user", "content": "hi"}])
    assert e.value.kind == "timeout" and "whole call" in e.value.problem


def test_a_reply_cut_short_is_a_bad_reply_not_a_connection_failure():
    with FakeOpenAI() as api:
        llm = LLM(LLMConfig(base_url=api.base_url, timeout=5.0, max_attempts=1))
        api.truncate_next()
        with pytest.raises(LLMError) as e:
            llm.chat([{"role": "user", "content": "hi"}])
        assert e.value.kind == "bad_reply" and "before the reply was complete" in e.value.problem
        assert "cannot connect" not in str(e.value)
        assert llm.chat([{"role": "user", "content": "hi"}]).text == "fake reply"  # the next call is fine
