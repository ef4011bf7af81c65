"""Production traces in the app: an OpenTelemetry file of two agent runs gets the
sidebar's picker, the Strategy Lab's Replay tab puts each call's billed figures beside ctxlab's,
and a folder of trace files is swept on the Tune page."""
from __future__ import annotations

from ..conftest import ROOT
from .helpers import open_page, run_tune_sweep

DATA = ROOT / "tests" / "data" / "production"


def _use(at, text: str) -> None:
    at.radio(key="source").set_value("paste").run()
    at.text_area(key="paste_text").input(text).run()
    at.button(key="use_paste").click().run()
    assert not at.exception, at.exception


def test_each_agent_run_is_a_conversation_and_the_replay_shows_billed_beside_counted(monkeypatch):
    at = open_page("strategy_lab.py", monkeypatch)
    _use(at, (DATA / "otel_agent_runs.json").read_text())
    picker = at.sidebar.selectbox(key="multi_pick")
    assert len(picker.options) == 2 and "9 messages" in picker.options[0] and "5 messages" in picker.options[1]
    at.session_state["lab_tab"] = "Replay call by call"
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    billed = next(d.value for d in at.dataframe if "billed prompt" in d.value.columns)
    assert billed["billed prompt"].tolist() == [1958, 4260, 4341, 4399]
    assert billed["billed cached"].tolist() == [0, 1920, 4224, 4224]
    assert (billed["difference"] == billed["billed prompt"] - billed["counted"]).all()
    assert any("4 of 4 calls reported usage" in c.value for c in at.caption)
    assert any("Billed for this call as the trace sent it: 4,399 prompt tokens" in c.value for c in at.caption)


def test_a_folder_of_trace_files_is_swept_on_the_tune_page(monkeypatch):
    at = open_page("tune.py", monkeypatch)
    at.radio(key="tune_set").set_value("folder").run()
    files = sorted(DATA.glob("*.json*"))
    at.file_uploader(key="tune_folder").set_value([(f.name, f.read_bytes(), "application/json") for f in files]).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("9 conversation(s) from 6 file(s)" in c.value.replace("\\", "") for c in at.caption)
    run_tune_sweep(at)
    table = next(d.value for d in at.dataframe if "conversations" in d.value.columns)
    assert table["conversations"].eq(9).all()


def test_token_counts_shows_the_billed_total_beside_the_count(monkeypatch):
    at = open_page("token_counts.py", monkeypatch)
    _use(at, (DATA / "langsmith_run_tree.json").read_text())
    assert not at.exception and not at.error
    billed = next(m for m in at.metric if m.label == "Billed prompt tokens, all calls")
    assert billed.value == f"{1958 + 4260 + 4341 + 4399:,}" and "vs counted" in billed.delta
    assert next(m for m in at.metric if m.label == "Calls with billed usage").value == "4 / 4"
    assert next(m for m in at.metric if m.label == "Billed cached tokens").value == f"{1920 + 4224 + 4224:,}"
