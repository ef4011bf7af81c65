"""`ctxlab diagnose`: the JSON contract, exit 0 with or without findings, 2 on bad input."""
from __future__ import annotations

import json

import pytest

from ctxlab.cli import main

from ..conftest import SAMPLES


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_findings_and_summary_as_json_exit_0(capsys):
    code, out, err = run(capsys, "diagnose", str(SAMPLES / "lessons" / "poisoning.json"), "--provider", "hash")
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert set(doc) == {"findings", "summary"}
    assert doc["summary"]["poisoning"] == 4
    assert {f["code"] for f in doc["findings"]} >= {"mistyped_id", "contradicted_claim", "repeated_failing_call"}
    assert all(set(f) == {"mode", "code", "severity", "messages", "tools", "evidence", "mitigation"}
               for f in doc["findings"])


def test_no_findings_is_still_exit_0(capsys):
    code, out, _ = run(capsys, "diagnose", str(SAMPLES / "sql_agent.json"), "--modes", "poisoning,clash")
    assert code == 0 and json.loads(out) == {"findings": [], "summary": {"poisoning": 0, "distraction": 0,
                                                                          "confusion": 0, "clash": 0}}


def test_tools_query_and_model_options(capsys, tmp_path):
    tools = [{"type": "function", "function": {"name": f"tool_{k}", "description": f"does thing {k}",
                                               "parameters": {"type": "object", "properties": {}}}} for k in range(35)]
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps(tools))
    code, out, _ = run(capsys, "diagnose", str(SAMPLES / "sql_agent.json"), "--tools", str(catalog), "--query",
                       "top customers", "--model", "gpt-4", "--modes", "confusion,distraction", "--provider", "hash")
    codes = {f["code"] for f in json.loads(out)["findings"]}
    assert code == 0 and {"too_many_tools", "context_length"} <= codes


@pytest.mark.parametrize("argv,needle", [
    (["diagnose", "missing.json"], "no such file"),
    (["diagnose", str(SAMPLES / "sql_agent.json"), "--modes", "rot"], "unknown failure mode"),
    (["diagnose", str(SAMPLES / "sql_agent.json"), "--tools", "nope.json"], "--tools"),
])
def test_bad_input_exits_2_with_one_line(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and needle in err and len(err.strip().splitlines()) == 1


def test_bad_catalog_and_bad_conversation_exit_2(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"x": 1}')
    code, _, err = run(capsys, "diagnose", str(bad))
    assert code == 2 and "messages" in err
    code, _, err = run(capsys, "diagnose", str(SAMPLES / "sql_agent.json"), "--tools", str(bad))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
