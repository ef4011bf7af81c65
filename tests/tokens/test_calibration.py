"""Calibrating an estimate against a provider's reported prompt tokens."""
from __future__ import annotations

import json

import pytest

from ctxlab.calibration import CalibrationError, calibrate, calibrate_with_llm
from ctxlab.cli import main
from ctxlab.conversation import Conversation, Message
from ctxlab.llm import LLM, LLMConfig
from ctxlab.tokens import TokenCounter

from ..openai_fake import FakeOpenAI

CONV = Conversation((Message("system", "用中文简短回答。"), Message("user", "杭州西湖店上周的销售额是多少？")),
                    model="claude-sonnet-4")


def test_the_factor_is_reported_over_counted_and_scales_later_counts():
    counted = TokenCounter("claude-sonnet-4").count(CONV).total
    cal = calibrate(CONV, 2 * counted)
    assert (cal.counted, cal.reported, cal.factor, cal.exact_before) == (counted, 2 * counted, 2.0, False)
    assert cal.apply(100) == 200


@pytest.mark.parametrize("bad", [0, -5, 1.5, "12", True])
def test_a_reported_count_that_is_not_a_positive_integer_is_refused(bad):
    with pytest.raises(CalibrationError, match="prompt_tokens"):
        calibrate(CONV, bad)


def test_one_call_to_a_connected_model_calibrates_on_its_usage():
    with FakeOpenAI() as api:
        llm = LLM(LLMConfig(base_url=api.base_url, api_key="sk-test-calibration", model="claude-sonnet-4", timeout=5.0))
        cal = calibrate_with_llm(CONV, llm)
        sent = api.chat_requests()[-1].json
    assert sent["max_tokens"] == 1 and [m["content"] for m in sent["messages"]] == [m.content for m in CONV.messages]
    assert cal.reported > 0 and cal.counted == TokenCounter("claude-sonnet-4").count(CONV).total


def test_the_cli_adds_a_calibrated_total(tmp_path, capsys):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"model": "claude-sonnet-4", "messages": [
        {"role": "user", "content": "杭州西湖店上周的销售额是多少？"}]}, ensure_ascii=False), encoding="utf-8")
    assert main(["count", str(path), "--prompt-tokens", "40"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["calibrated_total"] == 40 and out["calibration"]["counted"] == out["total_tokens"]
    assert out["calibration"]["factor"] == round(40 / out["total_tokens"], 4)
