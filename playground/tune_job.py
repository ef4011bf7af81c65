"""A sweep the Tune page runs in a separate process, so a long one shows progress with an
estimate, can be cancelled at any moment (the process is ended, even inside a 10,000-message
conversation), and stops on its own when its browser session is gone (nobody polls it any more).

The page starts a :class:`SweepJob`, then polls it about once a second (``poll``); a watchdog
thread ends the process when no poll came for ``heartbeat_timeout`` seconds."""
from __future__ import annotations

import json
import os
import pickle
import queue
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Sequence

from ctxlab.conversation import Conversation
from ctxlab.sweep import Grid, SweepResult

HEARTBEAT_TIMEOUT = 30.0
"""Seconds without a poll after which the sweep is taken as abandoned (tab closed) and ended."""

# A plain child interpreter (not multiprocessing: its spawn and forkserver re-run the parent's
# __main__, which under Streamlit is the page script): it reads sys.path, then the work, pickled, and
# imports this module by its full name (the folder holding the playground package comes first on the
# path it reads, so it is this checkout's playground whatever the child's working directory).
_CHILD = ("import pickle, sys; sys.path[:0] = pickle.load(sys.stdin.buffer); import playground.tune_job as job; "
          "job._child()")


def _child() -> None:
    """The child process: run the sweep, report progress per conversation as JSON lines on the
    original stdout, pickle the result to the file it was given."""
    from ctxlab.errors import CtxlabError
    from ctxlab.sweep import run_sweep
    convs, grid, budgets, kwargs, result_path = pickle.load(sys.stdin.buffer)
    out = os.fdopen(os.dup(1), "w")
    sys.stdout = sys.stderr  # whatever else prints does not mix with the messages

    def say(*msg: Any) -> None:
        out.write(json.dumps(msg) + "\n")
        out.flush()
    try:
        result = run_sweep(convs, grid, budgets, workers=1, chunk_size=1,
                           progress=lambda done, total: say("progress", done, total), **kwargs)
        with open(result_path, "wb") as f:
            pickle.dump(result, f)
        say("result")
    except CtxlabError as e:
        say("error", str(e))
    except Exception as e:  # a bug: one line for the page, not a dead job
        from ctxlab.i18n import _
        say("error", _("internal error ({kind}: {detail}); please report it").format(kind=type(e).__name__,
                                                                                     detail=str(e)[:200]))


class SweepJob:
    """One sweep running in its own process. ``state``: running, done, error, cancelled, abandoned."""

    def __init__(self, convs: Sequence[Conversation], grid: Grid, budgets: Sequence[int], *,
                 heartbeat_timeout: float = HEARTBEAT_TIMEOUT, **kwargs: Any) -> None:
        fd, self._result_path = tempfile.mkstemp(prefix="ctxlab-tune-", suffix=".pickle")
        os.close(fd)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the folder holding playground/
        path = [root] + [p for p in sys.path if p and p != root]
        from ctxlab.i18n import language
        env = {**os.environ, "CTXLAB_LANG": language()}  # the sweep's notes in the page's language
        self._proc = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, env=env)
        self._messages: queue.Queue = queue.Queue()
        self.conversations = len(convs)
        self.largest = max((len(c.messages) for c in convs), default=0)
        self.done, self.total = 0, self.conversations
        self.result: SweepResult | None = None
        self.error: str | None = None
        self.state = "running"
        self.heartbeat_timeout = heartbeat_timeout
        self.started = self.last_seen = time.monotonic()
        self.ended: float | None = None
        self._lock = threading.Lock()
        work = (pickle.dumps(path), pickle.dumps((list(convs), grid, list(budgets), kwargs, self._result_path)))
        threading.Thread(target=self._talk, args=work, daemon=True, name="ctxlab-tune-reader").start()
        threading.Thread(target=self._watch, daemon=True, name="ctxlab-tune-watchdog").start()

    def _talk(self, path: bytes, work: bytes) -> None:
        """Send the work, then read the child's messages until it ends."""
        try:
            self._proc.stdin.write(path + work)
            self._proc.stdin.close()
            for line in self._proc.stdout:
                self._messages.put(json.loads(line))
        except (OSError, ValueError):
            pass  # cancelled: the pipe closed under us
        self._proc.wait()
        self._messages.put(["exit", self._proc.returncode])

    @property
    def pid(self) -> int | None:
        return self._proc.pid

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def elapsed(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def remaining(self) -> float | None:
        """Seconds left at the rate so far (None before the first conversation is done)."""
        if not self.done or self.state != "running":
            return None
        return self.elapsed() / self.done * (self.total - self.done)

    def poll(self) -> str:
        """Take what the process reported; counts as a heartbeat. Returns the state."""
        self.last_seen = time.monotonic()
        while self.state == "running":
            try:
                msg = self._messages.get_nowait()
            except queue.Empty:
                break
            if msg[0] == "progress":
                self.done, self.total = msg[1], msg[2]
            elif msg[0] == "result":
                with open(self._result_path, "rb") as f:
                    self._finish("done", result=pickle.load(f))
            elif msg[0] == "error":
                self._finish("error", error=msg[1])
            else:
                self._finish("error", error=f"the sweep process ended unexpectedly (exit code {msg[1]})")
        return self.state

    def cancel(self, state: str = "cancelled") -> None:
        """End the sweep now (its process is terminated; nothing it computed is kept)."""
        with self._lock:
            if self.state != "running":
                return
            self.state, self.ended = state, time.monotonic()
        self._proc.terminate()
        try:
            self._proc.wait(5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
        self._cleanup()

    def _finish(self, state: str, *, result: SweepResult | None = None, error: str | None = None) -> None:
        with self._lock:
            if self.state != "running":
                return
            self.state, self.result, self.error, self.ended = state, result, error, time.monotonic()
        self._cleanup()

    def _cleanup(self) -> None:
        try:
            os.unlink(self._result_path)
        except OSError:
            pass

    def _watch(self) -> None:
        """End the sweep when nobody has polled it for ``heartbeat_timeout`` seconds."""
        while self.state == "running":  # also after the process ended: a result nobody takes is dropped
            if time.monotonic() - self.last_seen > self.heartbeat_timeout:
                self.cancel("abandoned")
                return
            time.sleep(min(1.0, self.heartbeat_timeout / 4))
