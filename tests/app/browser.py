"""Helpers for the real-browser test: start `streamlit run app.py` on a free local port, drive
Debian's Chromium through Playwright, and wait for Streamlit's reruns to finish."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

CHROMIUM = "/usr/bin/chromium"
# Playwright's own browser download fails here: always drive the system Chromium.
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run"]
START_TIMEOUT = 45.0   # seconds for `streamlit run` to answer
SETTLE_TIMEOUT = 30.0  # seconds for a rerun to finish

BUSY = '[data-testid="stStatusWidget"], [data-stale="true"], [data-testid="stSkeleton"]'
ERRORS = '[data-testid="stException"], [data-testid="stAlertContentError"]'


def missing_requirements() -> str | None:
    """Why the browser test cannot run here, or None when it can."""
    if not Path(CHROMIUM).exists():
        return f"Debian's chromium is not installed at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Python playwright is not installed (pip install playwright)"
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(root: Path, port: int, log: Path) -> subprocess.Popen:
    """`streamlit run app.py` from the repo root, in its own process group, output to `log`.
    Run through this interpreter (`-m streamlit`), so the app sees the packages the tests see even
    when pip put the `streamlit` script in a folder that is not on PATH."""
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
           "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none"]
    with open(log, "wb") as out:
        return subprocess.Popen(cmd, cwd=root, env=dict(os.environ), stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def wait_until_ready(proc: subprocess.Popen, url: str, log: Path, timeout: float = START_TIMEOUT) -> None:
    """Return once the app answers its health check; fail with the server's output when it exits
    or does not answer in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"streamlit did not answer on {url} within {timeout:.0f} s:\n{log.read_text(errors='replace')}")


def stop_app(proc: subprocess.Popen) -> None:
    """Stop the server started by start_app (its own process group), waiting for it to go."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass


@contextmanager
def served_app(root: Path, log: Path) -> Iterator[str]:
    """A fresh `streamlit run app.py` on a free local port: its URL while the block runs, then stopped."""
    port = free_port()
    proc = start_app(root, port, log)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_ready(proc, url, log)
        yield url
    finally:
        stop_app(proc)


def launch(playwright: Any) -> Any:
    """Headless Debian Chromium."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)


def settle(page: Any, timeout: float = SETTLE_TIMEOUT) -> None:
    """Wait until the script run is over: no running-status widget, no stale element, no
    skeleton, seen on several polls in a row (a rerun can start a moment after a click)."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout * 1000)
    deadline, quiet = time.monotonic() + timeout, 0
    while quiet < 3:
        if time.monotonic() > deadline:
            raise AssertionError(f"the app was still running after {timeout:.0f} s")
        busy = page.evaluate("s => document.querySelectorAll(s).length", BUSY)
        quiet = quiet + 1 if busy == 0 else 0
        page.wait_for_timeout(200)


def error_texts(page: Any) -> list[str]:
    """Texts of the exceptions and st.error boxes on the page."""
    return page.locator(ERRORS).all_inner_texts()


def full_screenshot(page: Any, path: Path) -> None:
    """The whole page: Streamlit scrolls inside its main area, so make the window as tall as the
    content for the shot, then put it back."""
    size = page.viewport_size
    height = page.evaluate("""() => Math.max(
        ...[...document.querySelectorAll('[data-testid="stMain"], [data-testid="stSidebarContent"]')]
            .map(e => e.scrollHeight), window.innerHeight)""")
    page.set_viewport_size({"width": size["width"], "height": min(int(height) + 40, 12000)})
    page.wait_for_timeout(600)  # charts redraw at the new size
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(size)


def widget(page: Any, testid: str, label: str) -> Any:
    """The widget of a kind (its data-testid, e.g. stSelectbox) whose label is exactly `label`."""
    return page.locator(f'[data-testid="{testid}"]').filter(
        has=page.locator('[data-testid="stWidgetLabel"]').get_by_text(label, exact=True))


def choose(page: Any, label: str, option: str) -> None:
    """Pick `option` in the selectbox labelled `label`, then wait for the rerun."""
    box = widget(page, "stSelectbox", label).get_by_role("combobox")
    box.scroll_into_view_if_needed()  # a scroll while the list is open closes it
    box.click()
    page.get_by_role("option", name=option, exact=True).click()
    settle(page)


def open_page(page: Any, title: str, heading: str | None = None) -> None:
    """Click the sidebar navigation link with this title, wait for the page's heading (the title
    unless given; case-insensitive, a part of it is enough) and for the run to finish."""
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text=title).first.click()
    wait_for_heading(page, heading or title)


def wait_for_heading(page: Any, text: str, timeout: float = SETTLE_TIMEOUT) -> None:
    """Wait for a visible h1 containing `text` (case-insensitive), then for the run to finish."""
    page.wait_for_function(
        "t => [...document.querySelectorAll('h1')].some(h => h.offsetParent !== null"
        " && h.innerText.toLowerCase().includes(t))", arg=text.lower(), timeout=timeout * 1000)
    settle(page, timeout)
