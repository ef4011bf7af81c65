"""The structured summarizers: ``structured`` (offline sections from a coding agent's messages)
and ``llm_structured`` (a model writes them; the offline one when no model answers)."""
from __future__ import annotations

import json

import pytest

from ctxlab.conversation import Message, ToolCall
from ctxlab.formats import load
from ctxlab.llm import LLM, LLMConfig
from ctxlab.strategies import Budget, get_strategy, make_view
from ctxlab.strategies.summarizers.llm import SummaryCache
from ctxlab.strategies.summarizers.structured import (STRUCTURED_PROMPT, StructuredLLMSummarizer,
                                                  StructuredSummarizer)
from ctxlab.strategies.summarizers.summarize import SUMMARIZERS, is_summary

from ..conftest import ROOT
from ..openai_fake import FakeOpenAI

SESSION = ROOT / "sample_data" / "coding" / "coding_agent_session.jsonl"


def _turns() -> list[Message]:
    """Two turns of a coding agent: read, edit, a failing then a passing test run."""
    out = [Message("system", "You are a coding agent.")]
    for t, ok in ((0, False), (1, True)):
        out.append(Message("user", f"Step {t}: fix calc.py"))
        calls = [("Read", {"file_path": "/w/calc.py"}, "1\tdef add(a, b): return a - b"),
                 ("Edit", {"file_path": "/w/calc.py", "old_string": "a - b", "new_string": "a + b"}, "updated"),
                 ("Bash", {"command": "pytest -q"}, "1 passed in 0.01s" if ok else "Error: 1 failed in 0.02s")]
        for k, (name, args, result) in enumerate(calls):
            out.append(Message("assistant", "", tool_calls=(ToolCall(f"c{t}{k}", name, json.dumps(args)),)))
            out.append(Message("tool", result, tool_call_id=f"c{t}{k}", is_error=result.startswith("Error")))
        out.append(Message("assistant", "Done." if ok else "Still failing."))
    return out


def test_offline_sections_from_a_real_shaped_session():
    conv = load(SESSION)
    text = StructuredSummarizer().summarize(conv.messages, None)
    sections = [ln[:-1] for ln in text.splitlines() if not ln.startswith("- ")]
    assert sections == ["TASK", "FILES_READ", "FILES_CHANGED", "COMMANDS", "ERRORS", "TESTS"]
    assert "- /home/dev/tidytime/src/tidytime/durations.py" in text.split("FILES_CHANGED:")[1]
    assert text.rstrip().endswith("- 11 passed in 0.18s"), "the newest test outcome"


def test_merging_keeps_the_task_and_resolves_errors_of_commands_that_now_succeed():
    msgs = _turns()
    s = StructuredSummarizer()
    first = s.summarize(msgs[:9], None)
    assert "pytest -q: Error: 1 failed in 0.02s" in first and "pytest -q -> failed" in first
    merged = s.summarize(msgs[9:], first)
    assert "Step 0: fix calc.py" in merged and "Step 1" not in merged, "the task is the first request"
    assert "pytest -q -> ok" in merged and "-> failed" not in merged
    assert "ERRORS" not in merged, "the error of a command that now passes is resolved"


def test_summarize_strategy_folds_with_the_structured_summarizer():
    plan = get_strategy("summarize", summarizer="structured", keep_recent=4, trigger_messages=8).apply(
        make_view(_turns()), Budget(100_000))
    summary = [m for m in plan.messages if is_summary(m)]
    assert len(summary) == 1 and "FILES_CHANGED:" in summary[0].text


@pytest.fixture()
def api():
    with FakeOpenAI() as server:
        yield server


def test_llm_structured_sends_the_structured_prompt(api, monkeypatch):
    llm = LLM(LLMConfig(base_url=api.base_url, api_key="sk-test-structured", model="fake-model", timeout=0.5,
                        backoff=0.01, max_attempts=1), sleep=lambda _: None)
    monkeypatch.setitem(SUMMARIZERS, "llm_structured", StructuredLLMSummarizer(llm=llm, cache=SummaryCache()))
    api.reply("TASK:\n- fix calc.py\nPENDING:\n- rerun tests")
    plan = get_strategy("summarize", summarizer="llm_structured", keep_recent=4, trigger_messages=8).apply(
        make_view(_turns()), Budget(100_000))
    assert "PENDING:\n- rerun tests" in [m for m in plan.messages if is_summary(m)][0].text
    sent = api.chat_requests()[-1].json["messages"][0]["content"]
    assert sent.startswith(STRUCTURED_PROMPT.split("{")[0][:80]) and "Step 0: fix calc.py" in sent


def test_llm_structured_falls_back_offline_with_a_warning(monkeypatch):
    llm = LLM(LLMConfig(base_url="http://127.0.0.1:9", api_key="sk-test", model="fake-model", timeout=0.2,
                        backoff=0.01, max_attempts=1), sleep=lambda _: None)
    monkeypatch.setitem(SUMMARIZERS, "llm_structured", StructuredLLMSummarizer(llm=llm, cache=SummaryCache()))
    plan = get_strategy("summarize", summarizer="llm_structured", keep_recent=4, trigger_messages=8).apply(
        make_view(_turns()), Budget(100_000))
    assert any("offline structured summary" in w for w in plan.warnings)
    assert "FILES_CHANGED:" in [m for m in plan.messages if is_summary(m)][0].text
