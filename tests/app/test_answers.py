"""The Answers page against a real OpenAI-compatible server on 127.0.0.1 (tests/openai_fake.py):
without a model it explains how to configure one and stops; with one, the answers of two strategies
come back side by side with the server's token figures, a 401 is one clear error that leaves the
page usable, reruns never call the model again, and probes are scored beside fact retention."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

import ctxlab
from ctxlab.probes import generate_probes

from ..conftest import ROOT, SAMPLES
from .helpers import APP_TIMEOUT, open_page
from ..openai_fake import FakeOpenAI, chat_prompt_text

QUESTION = "What refund amount did we agree on?"
TYPED_KEY = "sk-typed-in-the-panel-0123456789"


@pytest.fixture()
def api():
    with FakeOpenAI() as server:
        yield server


def answers_page(monkeypatch, api: FakeOpenAI | None = None, **state) -> AppTest:
    """The Answers page, pointed at ``api`` through the sidebar's settings panel (not the environment)."""
    if api is not None:  # the sidebar's settings panel, not the environment
        state = {"llm_base_url": api.base_url, "llm_model": "fake-model", **state}
    return open_page("answers.py", monkeypatch, state=state)


def ask(at: AppTest, question: str = QUESTION) -> None:
    at.text_area(key="ans_question").input(question)
    at.button(key="ans_ask").click().run()
    assert not at.exception, at.exception


def metrics(at: AppTest, label: str) -> list[str]:
    return [m.value for m in at.metric if m.label == label]


def server_prompt_tokens(request) -> int:
    """The fake server's own prompt count for a request (what it reports as usage.prompt_tokens)."""
    return len(chat_prompt_text(request.json).split()) + 3 * len(request.json["messages"])


def test_without_a_model_the_page_explains_how_to_configure_and_stops(monkeypatch):
    at = answers_page(monkeypatch)
    (info,) = at.info
    assert "needs a model" in info.value and "OPENAI_BASE_URL" in info.value
    assert not [b for b in at.button if b.key in ("ans_ask", "probe_run")]  # stopped before the controls
    assert not at.error


def test_answers_side_by_side_with_the_servers_token_figures(monkeypatch, api):
    at = answers_page(monkeypatch, api)
    api.reply("A full refund of $483.95.", "I do not know.")
    api.report_cached = 64
    ask(at)
    assert [c.value for c in at.code] == ["A full refund of $483.95.", "I do not know."]
    first, second = api.chat_requests()
    assert first.json["model"] == "fake-model" and first.json["messages"][-1]["content"] == QUESTION
    assert metrics(at, "Prompt tokens") == [f"{server_prompt_tokens(r):,}" for r in (first, second)]
    assert metrics(at, "Cached tokens") == ["64", "64"]
    assert all(v.endswith(" ms") for v in metrics(at, "Latency"))
    # the two strategies sent different contexts: the second column is not a copy of the first
    assert first.json["messages"] != second.json["messages"]
    at.run()  # a rerun (any widget) shows the same answers without calling the model again
    assert len(api.chat_requests()) == 2 and [c.value for c in at.code][:2] == ["A full refund of $483.95.",
                                                                             "I do not know."]


def test_cached_tokens_the_server_does_not_report_say_so(monkeypatch, api):
    at = answers_page(monkeypatch, api)
    ask(at)
    assert metrics(at, "Cached tokens") == ["not reported", "not reported"]


def test_a_401_is_one_clear_error_and_the_page_stays_usable(monkeypatch, api):
    at = answers_page(monkeypatch, api)
    at.text_input(key="llm_api_key_input").input(TYPED_KEY).run()
    api.fail_next(401)  # the server quotes the key back in its message, as OpenAI's does
    ask(at)
    (error,) = at.error
    assert "rejected the API key" in error.value and TYPED_KEY not in error.value
    assert [c.value for c in at.code] == ["fake reply"]  # the other strategy still answered
    assert any("no answer" in c.value.lower() for c in at.caption)  # the fallback is said
    assert api.chat_requests()[0].bearer == TYPED_KEY  # the typed key was the one sent
    ask(at, "And the order number?")  # usable: the next question works
    assert not at.error and [c.value for c in at.code] == ["fake reply", "fake reply"]


def test_an_empty_question_is_one_clear_error_without_a_call(monkeypatch, api):
    at = answers_page(monkeypatch, api)
    at.button(key="ans_ask").click().run()
    assert [e.value for e in at.error] == [e.value for e in at.error if "question is empty" in e.value] and at.error
    assert not api.chat_requests()


def _answer_from_context(probes):
    """A model that knows only its context: it answers a probe with the fact when the fact is in
    the messages before the question, else "unknown"."""
    def reply(body):
        messages = body["messages"]
        context = chat_prompt_text({"messages": messages[:-1]})
        asked = messages[-1]["content"]
        probe = next(p for p in probes if p.question in asked)
        return f"It was {probe.expected}." if probe.expected in context else "unknown"
    return reply


def test_generated_probes_are_scored_per_strategy_beside_fact_retention(monkeypatch, api):
    conv = ctxlab.load(SAMPLES / "ecommerce_refund.json")
    probes = generate_probes(conv, 4)
    api.default_reply = _answer_from_context(probes)
    at = answers_page(monkeypatch, api, max_tokens=2_000, limit_set_by_user=True,
                      ans1_strategy="none", ans2_strategy="sliding_window")
    at.slider(key="probe_n").set_value(4).run()
    at.button(key="probe_run").click().run()
    assert not at.exception and not at.error
    scores = next(d.value for d in at.dataframe if "probe score" in d.value.columns)
    assert list(scores["strategy"]) == ["1 · none", "2 · sliding_window"]
    assert scores["probe score"][0] == 100 and scores["hits"][0] == "4 of 4"  # everything kept: every fact found
    assert scores["probe score"][1] < 100  # the window at 2,000 tokens lost early facts, and the model with them
    assert scores["facts retained"][1] < scores["facts retained"][0] == 100
    answers = [d.value for d in at.dataframe if "answer" in d.value.columns]
    assert len(answers) == 2 and list(answers[0]["expected"]) == [p.expected for p in probes]
    assert list(answers[1]["hit"]).count("miss") == 4 - round(scores["probe score"][1] * 4 / 100)
    sent = len(api.chat_requests())
    at.run()
    assert len(api.chat_requests()) == sent  # a rerun does not ask again


def test_probes_written_by_the_user(monkeypatch, api):
    api.reply("The order was KC-482193.", "No idea.")
    at = answers_page(monkeypatch, api, probe_source="written",
                      probe_rows=[{"question": "Which order is the refund for?", "expected": "KC-482193"}])
    at.button(key="probe_run").click().run()
    assert not at.exception and not at.error
    scores = next(d.value for d in at.dataframe if "probe score" in d.value.columns)
    assert list(scores["probe score"]) == [100, 0]
    assert "Which order is the refund for?" in api.chat_requests()[0].json["messages"][-1]["content"]


def test_a_written_probe_without_an_expected_answer_is_named(monkeypatch, api):
    at = answers_page(monkeypatch, api, probe_source="written",
                      probe_rows=[{"question": "Which order?", "expected": ""}])
    assert any("has no expected answer" in e.value for e in at.error)
    assert next(b for b in at.button if b.key == "probe_run").disabled and not api.chat_requests()


def test_the_question_and_the_answers_survive_a_visit_to_another_page(monkeypatch, api):
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)  # the whole app: pages in one session
    at.session_state["llm_base_url"] = api.base_url
    at.run()
    at.switch_page("pages/answers.py").run()
    ask(at)
    at.switch_page("pages/token_counts.py").run()
    at.switch_page("pages/answers.py").run()
    assert not at.exception, at.exception
    assert at.text_area(key="ans_question").value == QUESTION
    assert [c.value for c in at.code] == ["fake reply", "fake reply"] and len(api.chat_requests()) == 2
