"""The CLI on production traces: count and replay show billed beside counted and modelled per
call, and a folder of trace files feeds the sweep."""
from __future__ import annotations

import json

from ctxlab.cli import main

from ..conftest import ROOT

DATA = ROOT / "tests" / "data" / "production"
PER_CALL = {"call", "index", "reported_prompt_tokens", "counted_prompt_tokens", "prompt_difference",
            "reported_cached_tokens", "modelled_cached_tokens", "cached_difference"}


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_count_gives_each_run_its_billed_usage_and_a_calibration(capsys):
    code, out, _ = _run(capsys, "count", str(DATA / "otel_agent_runs.json"))
    assert code == 0
    runs = [json.loads(line) for line in out.splitlines()]
    assert [r["index"] for r in runs] == [0, 1]
    usage = runs[0]["reported_usage"]
    assert usage["reported_prompt_tokens"] == 1958 + 4260 + 4341 + 4399
    assert [c["reported_cached_tokens"] for c in usage["calls"]] == [0, 1920, 4224, 4224]
    assert all(PER_CALL <= c.keys() for c in usage["calls"])
    cal = runs[0]["calibration_from_usage"][0]
    assert cal["calls"] == 4 and cal["reported"] == usage["reported_prompt_tokens"]
    assert cal["counted"] == usage["counted_prompt_tokens"]


def test_replay_shows_billed_beside_counted_and_modelled_cached_per_call(capsys):
    code, out, _ = _run(capsys, "replay", str(DATA / "langfuse_trace_export.json"), "--strategy", "sliding_window",
                        "--max-tokens", "4000")
    assert code == 0
    d = json.loads(out)
    assert [c["reported_prompt_tokens"] for c in d["calls"]] == [1958, 4260, 4341, 4399]
    rows = d["reported_usage"]["calls"]
    assert all(PER_CALL <= r.keys() for r in rows)
    assert all(r["prompt_difference"] == r["reported_prompt_tokens"] - r["counted_prompt_tokens"] for r in rows)
    assert all(r["cached_difference"] == r["reported_cached_tokens"] - r["modelled_cached_tokens"] for r in rows)


def test_a_file_without_usage_has_no_usage_section(capsys):
    code, out, _ = _run(capsys, "count", str(ROOT / "sample_data" / "sql_agent.json"))
    assert code == 0 and "reported_usage" not in json.loads(out)


def test_a_folder_of_trace_files_feeds_the_sweep(capsys):
    code, out, err = _run(capsys, "sweep", str(DATA), "--strategy", "sliding_window", "--max-tokens", "3000",
                          "--workers", "1")
    assert code == 0, err
    points = json.loads(out)["points"]
    assert points and all(p["conversations"] == 9 for p in points)  # 9 agent runs in the six files
