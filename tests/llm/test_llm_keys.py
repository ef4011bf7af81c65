"""The key scan: a planted key goes through every model path, every fault, the exports and the CLI;
it must appear in no output, log record, error, export or file written under the data directory."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys


import ctxlab
from ctxlab.answers import answer_replay
from ctxlab.cli import main
from ctxlab.configs import config_json, config_yaml, export_native, make_config
from ctxlab.llm import LLM, LLMConfig, LLMError
from ctxlab.probes import generate_probes, score_probes
from ctxlab.replay import replay
from ctxlab.snippets import python_snippet
from ctxlab.strategies import Budget, get_strategy, make_view
from ctxlab.strategies.summarizers.llm import LLMSummarizer, SummaryCache
from ctxlab.strategies.summarizers.summarize import SUMMARIZERS

from ..conftest import ROOT, SAMPLES
from ..openai_fake import FakeOpenAI
from ..strategies.test_summarize import conversation

PLANTED = "sk-ctxlab-PLANTED-4f1c9a7e2b3d8e6f"
FAULTS = ("ok", "401", "429-then-ok", "429-too-long", "500", "timeout", "malformed")


def inject(api: FakeOpenAI, fault: str) -> None:
    {"ok": lambda: None, "401": lambda: api.fail_next(401), "429-then-ok": lambda: api.fail_next(429, retry_after=0.01),
     "429-too-long": lambda: api.fail_next(429, retry_after=900), "500": lambda: api.fail_next(500, times=2),
     "timeout": lambda: api.hang_next(1.0), "malformed": api.malformed_next}[fault]()


def test_a_planted_key_reaches_no_output_log_error_export_or_file(monkeypatch, tmp_path, caplog, capsys):
    data_dir = tmp_path / "data"
    exports = tmp_path / "exports"
    exports.mkdir()
    caplog.set_level(logging.DEBUG)  # every logger, the openai client's and httpx's included
    texts: list[str] = []
    with FakeOpenAI() as api:
        env = {"OPENAI_API_KEY": PLANTED, "OPENAI_BASE_URL": api.base_url, "CTXLAB_DATA_DIR": str(data_dir),
               "CTXLAB_LLM_CACHE": "disk", "CTXLAB_LLM_MODEL": "fake-model"}
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        cfg = LLMConfig.from_env(timeout=0.4, max_attempts=2, backoff=0.01)
        llm = LLM(cfg)
        texts += [repr(cfg), str(cfg), cfg.describe(), json.dumps(cfg.to_dict()), repr(llm)]
        conv = ctxlab.load(SAMPLES / "ecommerce_refund.json")
        msgs = conversation(8)

        for fault in FAULTS:
            # the client itself
            inject(api, fault)
            try:
                texts.append(json.dumps(llm.chat([{"role": "user", "content": "hi"}]).to_dict()))
            except LLMError as e:
                texts += [str(e), repr(e), e.problem, str(e.hint)]
            # the summarizer (a fresh one each time: no cooldown, no cache hit hides the fault)
            monkeypatch.setitem(SUMMARIZERS, "llm", LLMSummarizer(llm=llm, cache=SummaryCache.from_env()))
            inject(api, fault)
            plan = get_strategy("summarize", summarizer="llm", keep_recent=4, trigger_messages=10).apply(
                make_view(msgs), Budget(1_000_000))
            texts += [json.dumps(plan.to_dict(), default=str), *plan.warnings, *(m.text for m in plan.messages)]
            # answer replay and probes
            inject(api, fault)
            texts += [json.dumps(a.to_dict()) for a in answer_replay(conv, ["none", "sliding_window"], "Refund?", llm,
                                                                     context_limit=3_000)]
            inject(api, fault)
            texts += [json.dumps(s.to_dict()) for s in score_probes(conv, ["none"], generate_probes(conv, 1), llm,
                                                                    offline_measures=False)]
        texts += [json.dumps(replay(msgs, get_strategy("summarize", summarizer="llm", keep_recent=4,
                                                       trigger_messages=10), Budget(1_000_000)).to_dict(), default=str)]

        # exports of a config that uses the llm summarizer with edited prompts
        strategy = get_strategy("summarize", summarizer="llm", summary_prompt="Summarise {span}",
                                merge_prompt="Extend {summary} with {span}")
        config = make_config(strategy, Budget.for_model("gpt-4o"), "gpt-4o")
        written = {"config.json": config_json(config), "config.yaml": config_yaml(config),
                   "snippet.py": python_snippet(config)}
        for target in ("langchain",):
            native = export_native(config, target)
            written[f"{target}.json"] = json.dumps(native.to_dict())
            written[f"{target}.py"] = native.python
        for name, text in written.items():
            (exports / name).write_text(text)
        assert "Summarise {span}" in written["config.json"]  # the prompts travel in the config

        # the CLI, in process and as a real process
        for fault in ("ok", "401", "malformed"):
            inject(api, fault)
            main(["answer", str(SAMPLES / "ecommerce_refund.json"), "--strategy", "none", "--question", "Refund?"])
            inject(api, fault)
            main(["probe", str(SAMPLES / "ecommerce_refund.json"), "--strategy", "none", "--n", "1"])
        captured = capsys.readouterr()
        texts += [captured.out, captured.err]
        api.fail_next(401)
        proc = subprocess.run([sys.executable, "-m", "ctxlab", "answer", str(SAMPLES / "ecommerce_refund.json"),
                               "--strategy", "none", "--param", "summarize.summarizer=llm", "--question", "Refund?"],
                              env={**os.environ, **env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                              timeout=120)
        texts += [proc.stdout, proc.stderr]
        assert "rejected the API key" in proc.stderr

        bearers = {r.bearer for r in api.chat_requests()}
    assert PLANTED in bearers  # the key was really used: the scan below is not vacuous

    texts += [r.getMessage() for r in caplog.records] + [repr(r.args) for r in caplog.records]
    assert any("rejected the API key" in t for t in texts)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.parent.name == "llm_summaries" for p in files) and any(p.parent == exports for p in files)
    for text in texts:
        assert PLANTED not in text and PLANTED[10:] not in text, text[:300]
    for path in files:
        content = path.read_bytes()
        assert PLANTED.encode() not in content and PLANTED[10:].encode() not in content, path


def test_the_fake_server_really_quotes_the_key_on_401():
    """The 401 path is a real test of scrubbing: the server puts the key in its error message."""
    with FakeOpenAI() as api:
        api.fail_next(401)
        import openai
        client = openai.OpenAI(api_key=PLANTED, base_url=api.base_url, max_retries=0)
        try:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        except openai.AuthenticationError as e:
            assert PLANTED in str(e)
        else:  # pragma: no cover - the fake must fail
            raise AssertionError("the fake server did not fail")



