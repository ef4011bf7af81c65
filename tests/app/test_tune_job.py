"""Long sweeps in Tune: a sweep on a 10,000-message conversation ran in the page's own
script run for over 600 s with the bar at 0, no estimate, no cancel, and went on computing after
the tab closed. Now it runs in its own process (playground.tune_job.SweepJob): progress per conversation with
the time left at the rate so far, Cancel ends the process at once, and a sweep nobody polls any
more (the session is gone) is ended by its watchdog."""
from __future__ import annotations

import json
import os
import time

import pytest

import ctxlab
from ctxlab.generate import generate
from ctxlab.sweep import Grid
from playground.tune_job import SweepJob

from ..conftest import SAMPLES
from .helpers import open_page, run_tune_sweep

GRID = Grid.from_dict({"sliding_window": {"buffer_ratio": [0.1, 0.3]}})


@pytest.fixture(scope="module")
def long_conversation() -> ctxlab.Conversation:
    """About 4,000 messages: a sweep of two points on it takes minutes on the project machine.
    Read back from its JSON, as the app holds it (a generated Conversation's empty ``extra``
    mappings do not pickle)."""
    conv = generate(turns=500, rounds_per_turn=3, seed=3)
    return ctxlab.loads(json.dumps({**ctxlab.export(conv, "openai").data, "facts": list(conv.facts)}))


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # a terminated child of ours is a zombie until reaped: count it as gone
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            return True
        time.sleep(0.1)
    return False


def _wait(job: SweepJob, until, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not until() and time.monotonic() < deadline:
        job.poll()
        time.sleep(0.1)
    assert until(), (job.state, job.done, job.total, job.error)


def test_progress_gives_an_estimate_and_cancel_ends_the_process(long_conversation):
    small = ctxlab.load(SAMPLES / "sql_agent.json")
    job = SweepJob([small, long_conversation], GRID, [3000], model="gpt-4o")
    try:
        _wait(job, lambda: job.done >= 1)
        assert job.state == "running" and job.total == 2
        left = job.remaining()
        assert left is not None and left > 0  # an estimate at the rate so far
        job.cancel()
        assert job.state == "cancelled" and job.result is None
        assert _gone(job.pid), "the sweep's process still runs after Cancel"
    finally:
        job.cancel()


def test_a_sweep_nobody_polls_any_more_is_ended(long_conversation):
    job = SweepJob([long_conversation], GRID, [3000], model="gpt-4o", heartbeat_timeout=1.0)
    try:
        assert _gone(job.pid, within=15.0), "an abandoned sweep kept computing"
        assert job.state == "abandoned"
    finally:
        job.cancel()


def test_a_finished_job_hands_over_the_engines_result():
    from ctxlab.sweep import run_sweep
    convs = [ctxlab.load(SAMPLES / "sql_agent.json")]
    job = SweepJob(convs, GRID, [3000, 6000], model="gpt-4o")
    _wait(job, lambda: job.state != "running")
    assert job.state == "done", job.error
    engine = run_sweep(convs, GRID, [3000, 6000], model="gpt-4o", workers=1)
    strip = lambda pts: [{k: v for k, v in p.items() if k != "plan_ms"} for p in pts]  # noqa: E731
    assert strip(job.result.points) == strip(engine.points)
    assert job.result.recommendation == engine.recommendation


def test_the_page_shows_progress_with_an_estimate_and_cancels(monkeypatch, long_conversation):
    text = json.dumps({**ctxlab.export(long_conversation, "openai").data, "facts": list(long_conversation.facts)})
    at = open_page("tune.py", monkeypatch, state={"tune_set": "current", "source": "paste", "paste_text": text,
                                                  "conversation_text": text, "conversation_label": "long"})
    at.button(key="tune_run").click().run()
    job = at.session_state["tune_job"]
    bar = at.get("progress")
    assert bar, "no progress bar while the sweep runs"
    label = bar[0].proto.text.replace("\\", "")
    assert "0 of 1 conversation(s) done" in label and "so far" in label
    assert f"{len(long_conversation.messages):,} messages" in label  # what the estimate waits for
    assert at.button(key="tune_run").disabled  # one sweep at a time
    at.button(key="tune_cancel").click().run()
    assert "tune_job" not in at.session_state
    assert any("Sweep cancelled" in i.value for i in at.info)
    assert _gone(job.pid), "the sweep's process still runs after Cancel"


def test_the_default_sweep_still_answers_on_the_page(monkeypatch):
    at = run_tune_sweep(open_page("tune.py", monkeypatch))
    assert at.session_state["tune_result"].points
