"""Regression tests of issue 32 ("Hostile input, round 3"): each names its item; each failed
before its fix."""
from __future__ import annotations

import base64
import copy
import json
import os
from typing import Any, Callable
from urllib.parse import quote

import pytest

from ctxlab.cli import main
from ctxlab.formats import export, load_all

from .conftest import ROOT
from .formats.test_formats_hostile import one_error_line, run as run_text
from .formats.test_formats_coding import V1_EVENTS

CODING = ROOT / "tests" / "data" / "coding"
PRODUCTION = ROOT / "tests" / "data" / "production"


def _json(path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _jsonl(path) -> list:
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def run(capsys, tmp_path, doc: Any, *argv: str, jsonl: bool = False) -> tuple[int, str, str]:
    """``ctxlab ARGV`` on ``doc`` written as JSON (or JSONL, one record a line)."""
    text = "\n".join(json.dumps(r) for r in doc) if jsonl else json.dumps(doc)
    return run_text(capsys, tmp_path, text, *argv, name="in.jsonl" if jsonl else "in.json")


# ---------------------------------------------------------------- item 1: wrong types, located


def _openhands(set_: Callable[[list], None]) -> tuple[list, bool]:
    doc = _json(CODING / "openhands_events.json")
    set_(doc)
    return doc, False


def _response(doc: list) -> dict:
    return doc[1]["tool_call_metadata"]["model_response"]


def _v1(set_: Callable[[list], None]) -> tuple[list, bool]:
    doc = copy.deepcopy(V1_EVENTS)
    set_(doc)
    return doc, True


def _otel(value: str) -> tuple[list, bool]:
    doc = _jsonl(PRODUCTION / "otel_file_exporter.jsonl")
    doc[1]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"][8]["value"] = {"intValue": value}
    return doc, True


def _otel_start(value: Any) -> tuple[list, bool]:
    doc = _jsonl(PRODUCTION / "otel_file_exporter.jsonl")
    doc[1]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["startTimeUnixNano"] = value
    return doc, True


def _langfuse(value: str) -> tuple[dict, bool]:
    doc = _json(PRODUCTION / "langfuse_trace_export.json")
    doc["observations"][1]["usageDetails"]["input"] = value
    return doc, False


def _claude(content: Any) -> tuple[list, bool]:
    doc = _jsonl(CODING / "claude_code_compact.jsonl")
    k = next(k for k, r in enumerate(doc) if r.get("type") == "assistant")
    doc[k]["message"]["content"] = content
    return doc, True


def _swe_action(content: Any) -> tuple[dict, bool]:
    doc = _json(CODING / "swe_agent_ctf_baby_encryption.traj")
    del doc["history"][2]["thought"]
    doc["history"][2]["content"] = content
    return doc, False


SPAN = "JSONL line 2: $.resourceSpans[0].scopeSpans[0].spans[0]"  # the span's place in the file, not in its run
BAD_TYPES = {  # name: (document, JSONL?), words the one error line must hold
    "openhands response id a list": (lambda: _openhands(lambda d: _response(d).update(id=["a"])),
                                     ("event 1", "model_response.id", "list")),
    "openhands tool_calls an int": (lambda: _openhands(lambda d: _response(d)["choices"][0]["message"].update(
        tool_calls=7)), ("event 1", "tool_calls", "int")),
    "openhands function a string": (lambda: _openhands(
        lambda d: _response(d)["choices"][0]["message"]["tool_calls"][0].update(function="x")),
        ("event 1", "function", "str")),
    "openhands event id a list": (lambda: _openhands(lambda d: d[1]["tool_call_metadata"].update(tool_call_id=["a"])),
                                  ("event 1", "tool_call_id")),
    "openhands v1 response id a list": (lambda: _v1(lambda d: d[2].update(llm_response_id=["r"])),
                                        ("event 2 (JSONL line 3)", "llm_response_id")),
    "otel usage a superscript": (lambda: _otel("\u00b2"), (SPAN, "gen_ai.usage.input_tokens")),
    "otel usage --5": (lambda: _otel("--5"), (SPAN, "gen_ai.usage.input_tokens")),
    "otel usage of 5,000 digits": (lambda: _otel("9" * 5_000), (SPAN, "gen_ai.usage.input_tokens")),
    "otel usage beyond int64": (lambda: _otel("9" * 19), (SPAN, "gen_ai.usage.input_tokens")),
    "otel start time a superscript": (lambda: _otel_start("\u00b2"), (SPAN, "startTimeUnixNano")),
    "otel start time a list": (lambda: _otel_start([1]), (SPAN, "startTimeUnixNano")),
    "langfuse usage a superscript": (lambda: _langfuse("\u00b2"), ("observations[1]", "usageDetails.input")),
    "langfuse usage of 5,000 digits": (lambda: _langfuse("9" * 5_000), ("observations[1]", "usageDetails.input")),
    "claude code content an int": (lambda: _claude(7), ("JSONL line 2", "$.message.content", "int")),
    "swe-agent action content an int": (lambda: _swe_action(7), ("$.history[2].content", "int")),
}


@pytest.mark.parametrize("case", BAD_TYPES)
def test_a_wrong_type_in_a_trace_is_one_error_naming_the_record_and_field(capsys, tmp_path, case):
    make, words = BAD_TYPES[case]
    doc, jsonl = make()
    for argv in (["count"], ["convert", "--to", "anthropic"]):
        line = one_error_line(*run(capsys, tmp_path, doc, *argv, jsonl=jsonl))
        for w in words:
            assert w in line, (w, line)
        assert len(line) < 400


def test_list_content_of_a_text_action_is_read_as_its_text_parts(capsys, tmp_path):
    doc, _ = _swe_action([{"type": "text", "text": "I will list the files."}])
    conv = load_all(json.dumps(doc))[0]
    assert conv.messages[2].content == "I will list the files." and conv.messages[2].tool_calls
    mini = {"trajectory_format": "mini-swe-agent-1.1", "info": {}, "messages": _json(
        CODING / "mini_swe_agent_github_issue.json")}
    k = next(k for k, m in enumerate(mini["messages"]) if m["role"] == "assistant")
    text = mini["messages"][k]["content"]
    mini["messages"][k]["content"] = [{"type": "text", "text": text}]
    mini["messages"][k]["extra"] = {"actions": [{"command": "ls"}]}
    conv = load_all(json.dumps(mini))[0]
    assert conv.messages[k].content == text and conv.messages[k].tool_calls[0].arguments == '{"command": "ls"}'
    code, out, err = run(capsys, tmp_path, mini, "count")
    assert code == 0 and "internal error" not in err


# ---------------------------------------------------------------- item 2: OTel grouping linear in spans


class _Counted(dict):
    """A dict that counts how often it is read (the walk's steps)."""

    reads = 0

    def __getitem__(self, key):
        _Counted.reads += 1
        return super().__getitem__(key)


def test_otel_run_grouping_walks_each_span_once():
    from ctxlab.formats import otel
    n = 3_000
    tree = _Counted({f"s{k}": (f"s{k - 1}" if k else None, k == 0) for k in range(n)})  # s0: the agent span
    _Counted.reads = 0
    agents = otel._nearest_agents(tree)
    assert set(agents.values()) == {"s0"} and len(agents) == n
    assert _Counted.reads <= 3 * n  # a walk up from every span read the chain n * n / 2 times


def test_a_deep_chain_of_spans_is_one_run_and_a_parent_loop_ends_the_walk():
    from ctxlab.formats import otel
    from tests.fuzz_traces import CHAIN_SPANS, _op_span_chain
    doc = _jsonl(PRODUCTION / "otel_file_exporter.jsonl")
    _op_span_chain(None, doc, [])
    assert len(load_all("\n".join(json.dumps(d) for d in doc))) == 1
    tree = {"a": ("b", False), "b": ("a", False), "c": ("a", False), "d": ("c", True), "e": ("d", False)}
    assert otel._nearest_agents(tree) == {
        "a": None, "b": None, "c": None, "d": "d", "e": "d"}
    assert CHAIN_SPANS >= 1_000


# ---------------------------------------------------------------- item 7: an unknown model in a trace


def _codex_with_model(name: str) -> list:
    doc = _jsonl(CODING / "codex_rollout.jsonl")
    for r in doc:
        if r.get("type") == "turn_context":
            r["payload"]["model"] = name
    return doc


def test_a_trace_naming_a_new_model_is_counted_with_the_closest_known_tokenizer(capsys, tmp_path):
    code, out, err = run(capsys, tmp_path, _codex_with_model("gpt-5.1-codex-max"), "count", jsonl=True)
    assert code == 0, err
    d = json.loads(out)
    assert d["model"] == "gpt-5" and d["encoding"] == "o200k_base" and d["exact"] is False
    said = [n for n in d["notes"] if "gpt-5.1-codex-max" in n]
    assert said and "closest known family" in said[0] and "gpt-5" in said[0], d["notes"]
    for argv in (["convert", "--to", "openai"], ["apply", "--strategy", "none"], ["validate"]):
        code, out, err = run(capsys, tmp_path, _codex_with_model("gpt-5.1-codex-max"), *argv, jsonl=True)
        assert code == 0, (argv, err)
    conv = load_all("\n".join(json.dumps(r) for r in _codex_with_model("gpt-5.1-codex-max")))[0]
    for to in ("openai", "anthropic", "langchain"):  # written back as the file named it, and only as the model
        data = export(conv, to).data
        assert data["model"] == "gpt-5.1-codex-max" and "gpt-5.1-codex-max" not in json.dumps(
            {k: v for k, v in data.items() if k != "model"}), to


def test_a_model_like_no_known_family_falls_back_to_the_default_and_says_so():
    conv = load_all("\n".join(json.dumps(r) for r in _codex_with_model("synthetic-model")))[0]
    assert conv.model == "gpt-4o" and any("'synthetic-model'" in n and "the default" in n for n in conv.notes)


def test_a_model_the_user_types_is_still_checked():
    from ctxlab.errors import UnknownModelError
    from ctxlab.tokens import count_tokens
    conv = load_all(json.dumps([{"role": "user", "content": "hi"}]))[0]
    with pytest.raises(UnknownModelError):
        count_tokens(conv, model="gpt-5.1-codex-max")


# ---------------------------------------------------------------- item 8: the line that is bad


@pytest.mark.parametrize("bad, words", [
    ([1, 2], "expected a record object, found list"),
    ({"type": "user", "uuid": "x", "message": 5}, "$.message: a user line has no message object"),
])
def test_a_claude_code_session_with_a_bad_third_line_blames_line_3(capsys, tmp_path, bad, words):
    doc = _jsonl(CODING / "claude_code_compact.jsonl")
    doc[2] = bad
    line = one_error_line(*run(capsys, tmp_path, doc, "count", jsonl=True))
    assert "JSONL line 3" in line and words in line, line


def test_a_huge_kind_name_is_cut_in_the_note_of_what_was_left_out():
    doc = _json(PRODUCTION / "langfuse_trace_export.json")
    doc["observations"][2]["type"] = "T" * 5_000
    notes = [n for c in load_all(json.dumps(doc)) for n in c.notes if "left out" in n]
    assert notes and max(len(n) for n in notes) < 400 and any("5,000 characters" in n for n in notes)


def test_a_sweep_over_a_trace_naming_a_new_model_runs(capsys, tmp_path):
    trace = tmp_path / "codex.jsonl"
    trace.write_text("\n".join(json.dumps(r) for r in _codex_with_model("gpt-5.1-codex-max")), encoding="utf-8")
    code = main(["sweep", str(trace), str(ROOT / "sample_data" / "ecommerce_refund.json"), "--strategy",
                 "sliding_window", "--max-tokens", "2000", "--workers", "1"])
    out, err = capsys.readouterr()
    assert code == 0 and "unknown model" not in err, err
    assert json.loads(out)["points"]


# ---------------------------------------------------------------- item 6: the size limit before reading


def test_a_3_gb_sparse_file_under_a_2_gb_memory_limit_gets_the_size_message(tmp_path):
    import resource
    import subprocess
    import sys
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(3 * 1024 ** 3)  # sparse: no disk used

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 * 1024 ** 3, 2 * 1024 ** 3))
    r = subprocess.run([sys.executable, "-m", "ctxlab", "count", str(big)], capture_output=True, text=True,
                       cwd=ROOT, preexec_fn=limit, timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert "input is 3,072.0 MB, over the 50 MB limit" in r.stderr and "internal error" not in r.stderr


class _Endless:
    """stdin that never ends (``/dev/zero``): reading it whole never returns."""

    def read(self, n: int = -1) -> bytes:
        assert n >= 0, "stdin read whole"
        return b"0" * n


def test_endless_stdin_is_refused_at_the_limit(capsys, monkeypatch):
    import sys
    monkeypatch.setattr(sys, "stdin", type("S", (), {"buffer": _Endless()})())
    line = one_error_line(main(["count", "-", "--max-mb", "1"]), *capsys.readouterr())
    assert "input is over the 1 MB limit" in line


# ---------------------------------------------------------------- item 5: exports their targets reject


def _config(strategy: str, **top: Any) -> dict:
    return {"ctxlab_config": 1, "strategy": strategy, "params": {}, **top}


@pytest.mark.parametrize("strategy, to", [("summarize", "langchain"), ("sliding_window", "langchain"),
                                          ("summarize", "anthropic"), ("summarize", "adk")])
def test_a_budget_that_leaves_no_tokens_is_refused_not_exported_as_a_negative_threshold(strategy, to):
    from ctxlab.configs import export_native
    from ctxlab.configs.lab_config import ConfigError
    with pytest.raises(ConfigError) as e:
        export_native(_config(strategy, max_tokens=2), to)
    assert e.value.where == "config.max_tokens" and "leaves -2 tokens for messages" in e.value.problem


@pytest.mark.parametrize("to, path", [("codex", "$.model_auto_compact_token_limit"),
                                      ("anthropic", "$.context_management.edits[0].trigger.value"),
                                      ("adk", "$.events_compaction_config.token_threshold"),
                                      ("openai_responses", "$.context_management[0].compact_threshold")])
def test_no_export_writes_an_integer_beyond_int64(capsys, tmp_path, to, path):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(_config("summarize", max_tokens=10**30)))
    code = main(["config", "export", str(cfg), "--to", to])
    line = one_error_line(code, *capsys.readouterr())
    assert "beyond 64 bits" in line and path in line, line


def test_a_large_but_valid_codex_limit_still_exports_as_toml():
    import tomllib
    from ctxlab.configs import export_native
    native = export_native(_config("summarize", max_tokens=2**62), "codex")
    assert tomllib.loads(native.python)["model_auto_compact_token_limit"] > 2**61


# ---------------------------------------------------------------- item 10: a key echoed back transformed

from .llm.test_llm_key_echo import PLANTED, env  # noqa: E402,F401  (the fake server with the planted key)

KEY_WITH_SIGNS = "sk-live+9f/4e=Q7x!2b%c8d&a1e0f"  # a key whose URL encoding differs from its text
TRANSFORMED = {
    "reversed": lambda k: k[::-1],
    "reversed upper": lambda k: k[::-1].upper(),
    "url-encoded": lambda k: quote(k, safe=""),
    "url-encoded base64": lambda k: quote(base64.b64encode(k.encode()).decode(), safe=""),
}


@pytest.mark.parametrize("form", TRANSFORMED)
@pytest.mark.parametrize("key", [PLANTED, KEY_WITH_SIGNS])
def test_the_redactor_hides_a_reversed_or_url_encoded_key(key, form):
    from ctxlab.redact import KeyRedactor
    echoed = TRANSFORMED[form](key)
    out = KeyRedactor([key])(f"400: invalid key {echoed} given")
    assert echoed not in out and echoed.lower() not in out.lower() and out.startswith("400: invalid key "), out


def test_a_key_echoed_back_reversed_in_a_400_is_masked_on_stderr_and_in_the_answer(env, capsys):
    api, _, _ = env
    sample = str(ROOT / "sample_data" / "ecommerce_refund.json")
    api.fail_next(400, message=f"Invalid key: {PLANTED[::-1]}")
    main(["answer", sample, "--strategy", "none", "--question", "Refund?"])
    out, err = capsys.readouterr()
    flat = (out + err).lower()
    assert PLANTED[::-1].lower()[:12] not in flat and PLANTED[::-1].lower()[-12:] not in flat, (out, err)


# ---------------------------------------------------------------- item 9: a WAL store in a read-only folder

_READ_ONLY_FOLDER = """
mount --bind "$1" "$2" && mount -o remount,bind,ro "$2" || exit 99
touch "$2/probe" 2>/dev/null && exit 98
"$3" -m ctxlab sessions list --url "sqlite:///$2/sessions.db" || exit 1
"$3" -m ctxlab sessions show "$4" --url "sqlite:///$2/sessions.db" || exit 2
"$3" -c "
from ctxlab.sessions import SessionStore, SessionError
try:
    SessionStore('sqlite:///$2/sessions.db').save_profile('x')
except SessionError as e:
    print('write refused:', e)
"
"""


def test_a_wal_store_in_a_read_only_folder_is_listed_and_shown(tmp_path):
    import shutil
    import subprocess
    import sys
    from ctxlab.sessions import SessionStore
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare to mount a read-only folder (root ignores file modes)")
    store, view = tmp_path / "store", tmp_path / "view"
    store.mkdir()
    view.mkdir()
    with SessionStore(f"sqlite:///{store / 'sessions.db'}") as s:
        s.save_profile("support", strategy="none")
        sid = s.start_session("support").id
    script = tmp_path / "ro.sh"
    script.write_text(_READ_ONLY_FOLDER)
    r = subprocess.run(["unshare", "-m", "sh", str(script), str(store), str(view), sys.executable, str(sid)],
                       capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                       timeout=120)
    if r.returncode in (98, 99):
        pytest.skip("cannot mount a read-only folder here")
    assert r.returncode == 0, r.stdout[-800:] + r.stderr[-800:]
    assert '"profile": "support"' in r.stdout and str(sid) in r.stdout
    assert "write refused:" in r.stdout and "cannot be written" in r.stdout


# ---------------------------------------------------------------- item 4: langchain_trim's lost question and task


def _long_turn() -> list[dict]:
    """A system prompt, a question, and tool results that outgrow a 4,000-token budget within the turn."""
    msgs: list[dict] = [{"role": "system", "content": "You are an airline agent."},
                        {"role": "user", "content": "Cancel reservation 8JX2WO, please."}]
    for k in range(6):
        msgs += [{"role": "assistant", "content": None, "tool_calls": [
                     {"id": f"c{k}", "type": "function", "function": {"name": "get", "arguments": '{"k": %d}' % k}}]},
                 {"role": "tool", "tool_call_id": f"c{k}", "content": f"row {k} " * 400}]
    return msgs + [{"role": "assistant", "content": "Done."}]


def test_a_replay_that_sends_no_question_says_so_beside_fits(capsys, tmp_path):
    from ctxlab.replay import replay
    from ctxlab.strategies import Budget
    r = replay(load_all(json.dumps(_long_turn()))[0], "langchain_trim", Budget(4_000))
    assert r.fits and r.calls_without_question > 0
    assert any("without the newest user message" in w for w in r.warnings)
    assert not r.calls[0].question_lost and r.calls[-1].question_lost  # the turn outgrew the budget as it went
    assert replay(load_all(json.dumps(_long_turn()))[0], "sliding_window", Budget(4_000)).calls_without_question == 0
    code, out, err = run(capsys, tmp_path, _long_turn(), "replay", "--strategy", "langchain_trim", "--max-tokens",
                         "4000")
    assert code == 0 and "without the newest user message" in err
    assert json.loads(out)["calls_without_question"] == r.calls_without_question


def test_langchain_trim_dropping_a_coding_runs_task_is_counted_and_warned():
    from ctxlab.replay import replay
    from ctxlab.strategies import Budget
    conv = load_all((CODING / "swe_agent_ctf_baby_encryption.traj").read_text())[0]
    r = replay(conv, "langchain_trim", Budget(3_000))
    assert r.calls_without_task > 0 and any("the run's task" in w for w in r.warnings)
    assert replay(conv, "sliding_window", Budget(3_000)).calls_without_task == 0


# ---------------------------------------------------------------- item 3: left out, with a note


def _convert_notes(capsys, tmp_path, doc: Any, to: str, jsonl: bool = False) -> tuple[dict, str]:
    code, out, err = run(capsys, tmp_path, doc, "convert", "--to", to, jsonl=jsonl)
    assert code == 0, err
    return json.loads(out), err


def test_swe_agent_thinking_blocks_and_cache_control_are_noted_when_left_out(capsys, tmp_path):
    doc = _json(CODING / "swe_agent_function_calling.traj")
    k = next(k for k, m in enumerate(doc["history"]) if m.get("role") == "assistant")
    doc["history"][k]["thinking_blocks"] = [{"type": "thinking", "thinking": "Look at the tests.", "signature": "s"}]
    doc["history"][k]["cache_control"] = {"type": "ephemeral"}
    _, err = _convert_notes(capsys, tmp_path, doc, "anthropic")
    line = next(n for n in err.splitlines() if "thinking_blocks" in n)
    assert "thinking_blocks, cache_control not carried" in line, err


def test_mini_swe_agent_reasoning_is_noted_when_left_out(capsys, tmp_path):
    mini = {"trajectory_format": "mini-swe-agent-1.1", "info": {}, "messages": _json(
        CODING / "mini_swe_agent_github_issue.json")}
    k = next(k for k, m in enumerate(mini["messages"]) if m["role"] == "assistant")
    mini["messages"][k]["reasoning_content"] = "The bug is in the parser."
    mini["messages"][k]["thinking_blocks"] = [{"type": "thinking", "thinking": "x"}]
    _, err = _convert_notes(capsys, tmp_path, mini, "openai")
    assert any("reasoning_content, thinking_blocks not carried" in n for n in err.splitlines()), err


def test_openhands_v1_images_and_reasoning_are_noted_and_the_text_stays_whole(capsys, tmp_path):
    events = copy.deepcopy(V1_EVENTS)
    image = {"type": "image", "image_urls": ["data:image/png;base64,iVBORw0KGgo="]}
    events[1]["llm_message"]["content"].insert(0, image)
    events[1]["llm_message"]["reasoning_content"] = "The user wants pwd."
    events[3]["observation"]["content"].append(image)
    data, err = _convert_notes(capsys, tmp_path, events, "openai", jsonl=True)
    user = next(m for m in data["messages"] if m["role"] == "user")
    assert user["content"] == "Run `pwd` and write it to out.txt."  # not "\nRun ..."
    notes = [n for n in err.splitlines() if "not carried" in n]
    assert any("message 1: OpenHands' image part, reasoning_content not carried" in n for n in notes), err
    assert any("message 3: OpenHands' image part not carried" in n for n in notes), err


def test_the_app_refuses_an_upload_over_the_input_limit_before_receiving_it():
    import tomllib
    from ctxlab.formats._json import DEFAULT_MAX_BYTES, MB
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["maxUploadSize"] * MB <= DEFAULT_MAX_BYTES  # Streamlit's unit: megabytes
