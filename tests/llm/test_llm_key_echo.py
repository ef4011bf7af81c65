"""A server that echoes the bearer key back: in replies (answers, summaries, probe replies, chat
replies) and in errors, verbatim, upper-cased, base64-encoded, hex-encoded and split across
chunks. Every model path runs against the real fake server on 127.0.0.1; the key must appear in
no result, no stdout or stderr, no file under the data directory (the summary cache, the session
store) in any of those forms."""
from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys

import pytest

import ctxlab
from ctxlab.answers import answer_replay
from ctxlab.cli import main
from ctxlab.llm import LLM, LLMConfig, LLMError
from ctxlab.probes import generate_probes, score_probes
from ctxlab.redact import KeyRedactor
from ctxlab.sessions import SessionStore
from ctxlab.sessions.responder import ModelResponder
from ctxlab.strategies import Budget, get_strategy, make_view
from ctxlab.strategies.summarizers.llm import LLMSummarizer, SummaryCache
from ctxlab.strategies.summarizers.summarize import SUMMARIZERS

from ..conftest import ROOT, SAMPLES
from ..openai_fake import FakeOpenAI
from ..strategies.test_summarize import conversation

PLANTED = "sk-proj-ECHOED-5b7e0c2a9f4d1e8b6a3c"


def _chunks(text: str, size: int = 3) -> str:
    return "\n".join(text[i:i + size] for i in range(0, len(text), size))


FORMS = {
    "plain": PLANTED,
    "upper": PLANTED.upper(),
    "lower": PLANTED.lower(),
    "base64": base64.b64encode(PLANTED.encode()).decode(),
    "base64 inside": base64.b64encode(b"key=" + PLANTED.encode() + b";").decode(),
    "hex": PLANTED.encode().hex(),
    "chunks": _chunks(PLANTED),
    "halves": f"{PLANTED[:16]} ... {PLANTED[16:]}",
}


def leaks(text: str) -> list[str]:
    """Which forms of the key ``text`` holds (an independent check: white space removed, any case)."""
    flat = re.sub(r"[\s\u200b-\u200d\ufeff]", "", text).lower()
    found = [name for name, needle in (("key", PLANTED), ("first half", PLANTED[:16]), ("second half", PLANTED[16:]),
                                       ("hex", PLANTED.encode().hex()))
             if needle.lower() in flat]
    for offset in range(3):  # base64 at each alignment, without the edge characters
        core = base64.b64encode(b"\0" * offset + PLANTED.encode()).decode().rstrip("=")[4:-2]
        if core.lower() in flat:
            found.append(f"base64/{offset}")
    return found


def echo_all(body) -> str:
    """A reply that quotes the key in every form at once."""
    return "Here is what you sent me: " + " | ".join(FORMS.values())


def test_the_redactor_hides_every_form_and_leaves_other_text_alone():
    redact = KeyRedactor([PLANTED])
    for name, form in FORMS.items():
        out = redact(f"before {form} after")
        assert not leaks(out), (name, out)
        assert out.startswith("before ") and out.endswith(" after"), (name, out)
    text = "Your order KC-482193 is EMPTY; refund $483.95 to sk-abc. Zg== stays."
    assert redact(text) == text
    short = KeyRedactor(["EMPTY"])  # a placeholder key: only its exact text is hidden
    assert short("the cart is empty, key EMPTY") == "the cart is empty, key ***"


@pytest.fixture()
def env(monkeypatch, tmp_path):
    with FakeOpenAI() as api:
        values = {"OPENAI_API_KEY": PLANTED, "OPENAI_BASE_URL": api.base_url, "CTXLAB_DATA_DIR": str(tmp_path / "data"),
                  "CTXLAB_LLM_CACHE": "disk", "CTXLAB_LLM_MODEL": "fake-model"}
        monkeypatch.delenv("CTXLAB_SESSIONS_URL", raising=False)
        for k, v in values.items():
            monkeypatch.setenv(k, v)
        yield api, values, tmp_path


def test_an_echoed_key_reaches_no_result_output_or_file(env, monkeypatch, capsys):
    api, values, tmp_path = env
    llm = LLM(LLMConfig.from_env(timeout=5, max_attempts=1))
    api.default_reply = echo_all
    texts: list[str] = []

    # the client: the reply text, and errors whose message quotes the key in every form
    texts.append(json.dumps(llm.chat([{"role": "user", "content": "hi"}]).to_dict()))
    for status in (400, 401, 500):
        for form in FORMS.values():
            api.fail_next(status, message=f"bad request from {form}")
            with pytest.raises(LLMError) as caught:
                llm.chat([{"role": "user", "content": "hi"}])
            texts += [str(caught.value), repr(caught.value)]

    # the summarizer, with its disk cache
    monkeypatch.setitem(SUMMARIZERS, "llm", LLMSummarizer(llm=llm, cache=SummaryCache.from_env()))
    plan = get_strategy("summarize", summarizer="llm", keep_recent=4, trigger_messages=10).apply(
        make_view(conversation(8)), Budget(1_000_000))
    assert plan.stats.get("summary_by"), plan.warnings  # the model wrote the summary
    texts += [json.dumps(plan.to_dict(), default=str), *(m.text for m in plan.messages)]

    # answers and probes
    conv = ctxlab.load(SAMPLES / "ecommerce_refund.json")
    answers = answer_replay(conv, ["none", "sliding_window"], "Refund?", llm, context_limit=3_000)
    assert all(a.answer for a in answers)
    texts += [json.dumps(a.to_dict()) for a in answers]
    texts += [json.dumps(s.to_dict()) for s in score_probes(conv, ["none"], generate_probes(conv, 2), llm,
                                                            offline_measures=False)]

    # a chat reply stored in the session store
    with SessionStore() as store:
        store.save_profile("echo", model="gpt-4o", strategy="none")
        session = store.start_session("echo")
        session.add({"role": "user", "content": "hello"})
        reply = ModelResponder(llm).reply(session.context(), history=session.history())
        session.add(reply)
        texts += [json.dumps(session.history())]

    # the CLI, in process and as real processes
    sample = str(SAMPLES / "ecommerce_refund.json")
    main(["answer", sample, "--strategy", "none", "--question", "Refund?"])
    main(["probe", sample, "--strategy", "none", "--n", "1"])
    api.fail_next(401, message=f"Incorrect API key provided: {PLANTED.upper()}")
    main(["answer", sample, "--strategy", "none", "--question", "Refund?"])
    captured = capsys.readouterr()
    texts += [captured.out, captured.err]
    assert "rejected the API key" in captured.err
    for args in (["answer", sample, "--strategy", "summarize", "--param", "summarize.summarizer=llm",
                  "--param", "summarize.trigger_messages=4", "--question", "Refund?"],
                 ["apply", sample, "--strategy", "summarize", "--param", "summarizer=llm",
                  "--param", "trigger_messages=4"]):
        proc = subprocess.run([sys.executable, "-m", "ctxlab", *args], env={**os.environ, **values,
                              "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        texts += [proc.stdout, proc.stderr]

    assert {r.bearer for r in api.chat_requests()} == {PLANTED}  # the key was really sent
    assert any("Here is what you sent me" in t for t in texts)  # and the echoing replies really came back
    for text in texts:
        assert not leaks(text), (leaks(text), text[:400])
    files = [p for p in (tmp_path / "data").rglob("*") if p.is_file()]
    assert any(p.name == "sessions.db" for p in files) and any(p.parent.name == "llm_summaries" for p in files)
    for path in files:
        content = path.read_bytes().decode("utf-8", "replace")
        assert not leaks(content), (path, leaks(content))


def test_a_disk_summary_written_before_the_filter_is_redacted_when_read(env, monkeypatch):
    api, values, tmp_path = env
    llm = LLM(LLMConfig.from_env(timeout=5, max_attempts=1))
    api.default_reply = "The customer wants a refund."
    first = LLMSummarizer(llm=llm, cache=SummaryCache.from_env())
    msgs = conversation(4)
    assert first.summarize_span(msgs, None).text == "The customer wants a refund."
    [entry] = (tmp_path / "data" / "llm_summaries").glob("*.json")
    data = json.loads(entry.read_text())
    data["text"] = f"The customer wants a refund. Key: {PLANTED.upper()}"  # what an older ctxlab could have kept
    entry.write_text(json.dumps(data))
    again = LLMSummarizer(llm=llm, cache=SummaryCache.from_env()).summarize_span(msgs, None)
    assert again.record["cache_hit"] and again.text.startswith("The customer wants a refund. Key: ")
    assert not leaks(again.text)
