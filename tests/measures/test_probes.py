"""Probes against the fake OpenAI server: generated from early facts, asked from each strategy's
context, scored by exact match on the fact beside retention; user probes; sweep points; ``ctxlab probe``."""
from __future__ import annotations

import json

import pytest

import ctxlab
from ctxlab.cli import main
from ctxlab.llm import LLM, LLMConfig
from ctxlab.probes import (MATCH_RULE, Probe, ProbeError, exact_match, generate_probes, probe_points, score_probes,
                           user_probes)

from ..conftest import SAMPLES
from ..openai_fake import FakeOpenAI, chat_prompt_text


def recalls_its_context(body: dict) -> str:
    """A fake model with perfect recall of what it was sent: it answers with its whole context, so a
    probe hits exactly when the fact is still in the context the strategy left."""
    return chat_prompt_text({"messages": body["messages"][:-1]})


@pytest.fixture()
def api():
    with FakeOpenAI() as server:
        server.default_reply = recalls_its_context
        yield server


@pytest.fixture()
def llm(api):
    return LLM(LLMConfig(base_url=api.base_url, api_key="sk-test-probes", model="fake-model", timeout=2.0))


def sample(name: str) -> ctxlab.Conversation:
    return ctxlab.load(SAMPLES / f"{name}.json")


def test_generated_probes_ask_for_early_facts_first_with_the_fact_blanked():
    conv = sample("ecommerce_refund")
    probes = generate_probes(conv, 4)
    assert len(probes) == 4 and all(p.source == "generated" for p in probes)
    assert [p.message_index for p in probes] == sorted(p.message_index for p in probes)
    assert probes[0].expected == "KC-482193" and probes[0].message_index == 1  # the order number, in the first request
    for p in probes:
        assert p.expected in conv.facts and p.expected not in p.question and "____" in p.question
        assert p.expected in conv.messages[p.message_index].text or any(
            p.expected in c.arguments for c in conv.messages[p.message_index].tool_calls)


def test_generated_probes_skip_the_newest_turn_and_facts_too_long_to_quote():
    conv = sample("sql_agent")
    probes = generate_probes(conv, 20)
    assert all(len(p.expected) <= 80 for p in probes)
    assert not any(p.expected.startswith("SELECT") for p in probes)
    newest_user = max(i for i, m in enumerate(conv.messages) if m.role == "user")
    assert all(p.message_index < newest_user for p in probes)
    with pytest.raises(ProbeError, match="at least 1"):
        generate_probes(conv, 0)


def test_exact_match_is_on_the_fact_with_case_and_white_space_normalised():
    assert exact_match("KC-482193", "The order was kc-482193.")
    assert exact_match("full refund of $483.95", "A FULL  refund of\n$483.95 to the Visa")
    assert not exact_match("$483.95", "483.95")  # the fact as written, not a looser reading
    assert not exact_match("KC-482193", None)
    assert "exact match on the fact" in MATCH_RULE


def test_probe_scores_follow_what_each_strategy_kept(api, llm):
    conv = sample("ecommerce_refund")
    probes = generate_probes(conv, 5)
    everything, window = score_probes(conv, ["none", "sliding_window"], probes, llm, context_limit=2_500,
                                      offline_measures=False)
    assert everything.score == 1.0 and everything.hits == 5 and everything.answered == 5
    assert window.score < 1.0  # the window dropped early facts; the model could not give them back
    missed = [a for a in window.answers if not a.hit]
    assert missed and all(a.answer is not None and a.probe.expected not in a.answer for a in missed)
    assert everything.retention == 1.0 and window.retention < 1.0  # the offline measure, beside the score
    assert len(api.chat_requests()) == 10
    d = window.to_dict()
    assert d["asked"] == 5 and len(d["answers"]) == 5 and d["match_rule"] == MATCH_RULE and json.dumps(d)


def test_needed_recall_sits_beside_the_score_when_fidelity_is_installed(api, llm):
    pytest.importorskip("ctxlab.fidelity", reason="needed_recall comes with ctxlab.fidelity")
    conv = sample("ecommerce_refund")
    (score,) = score_probes(conv, ["sliding_window"], generate_probes(conv, 2), llm, context_limit=2_500)
    assert score.needed_recall is not None and 0.0 <= score.needed_recall <= 1.0


def test_a_failed_call_is_unanswered_not_a_miss(api, llm):
    conv = sample("ecommerce_refund")
    probes = user_probes(["What is the order number?", "Which carrier?"], ["KC-482193", "UPS"])
    api.fail_next(500, times=4)  # the first probe's call fails every attempt
    (score,) = score_probes(conv, ["none"], probes, llm, offline_measures=False)
    assert score.answered == 1 and score.hits == 1 and score.score == 1.0
    assert score.answers[0].answer is None and "HTTP 500" in score.answers[0].error and len(score.errors) == 1


def test_user_probes_are_checked():
    with pytest.raises(ProbeError, match="2 questions but 1 expected"):
        user_probes(["a?", "b?"], ["x"])
    with pytest.raises(ProbeError, match="no expected answer"):
        Probe("What?", " ")
    with pytest.raises(ProbeError, match="no probes"):
        score_probes(sample("ecommerce_refund"), ["none"], [], LLM(LLMConfig(base_url="http://127.0.0.1:9/v1")))


def test_probe_points_scores_a_chosen_subset_of_sweep_rows(api, llm):
    conv = sample("ecommerce_refund")
    rows = [{"strategy": "sliding_window", "params": '{"buffer_ratio": 0.1}', "max_tokens": 2_500},
            {"strategy": "none", "params": {}, "max_tokens": 100_000}]
    scores = probe_points(conv, rows, generate_probes(conv, 3), llm)
    assert [s.label for s in scores] == ['sliding_window {"buffer_ratio": 0.1} @ 2500', "none {} @ 100000"]
    assert scores[1].score == 1.0 and scores[0].score <= scores[1].score
    with pytest.raises(ProbeError, match=r"points\[0\]"):
        probe_points(conv, [{"params": {}}], generate_probes(conv, 1), llm)


def test_cli_probe_with_generated_and_user_probes(api, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
    path = str(SAMPLES / "ecommerce_refund.json")
    assert main(["probe", path, "--strategy", "none", "--strategy", "sliding_window", "--n", "3",
                 "--max-tokens", "2500"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["probes"]) == 3 and [s["label"] for s in out["scores"]] == ["none", "sliding_window"]
    assert out["scores"][0]["score"] == 1.0
    assert main(["probe", path, "--strategy", "none", "--question", "Order number?", "--expect", "KC-482193"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["probes"] == [{"question": "Order number?", "expected": "KC-482193", "source": "user",
                              "message_index": None}] and out["scores"][0]["hits"] == 1
    assert main(["probe", path, "--strategy", "none", "--question", "Order number?"]) == 2
    assert "1 questions but 0 expected answers" in capsys.readouterr().err


def test_cli_probe_without_a_model_exits_2(capsys):
    assert main(["probe", str(SAMPLES / "ecommerce_refund.json"), "--strategy", "none"]) == 2
    err = capsys.readouterr().err
    assert "no model is configured" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
