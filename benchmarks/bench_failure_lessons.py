"""Seconds from opening each Failure Modes lesson to seeing its mitigation applied, in the real app:
`streamlit run app.py` on 127.0.0.1, headless Debian chromium, a fresh data directory (so the tool
lessons embed their catalog the first time). Prints one line per lesson.

    python benchmarks/bench_failure_lessons.py
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.app.browser import (error_texts, free_port, launch, missing_requirements, settle, start_app,  # noqa: E402
                               stop_app, wait_for_heading, wait_until_ready)

LESSONS = [("Context poisoning", "Apply: Drop the tool rounds"), ("Context distraction", "Apply: Clear old tool results"),
           ("Context confusion", "Apply: Send only"), ("Context clash", "Apply: Clear the older result"),
           ("Context quarantine", "Apply: Split"), ("Tool loadout", "Apply: Send only")]


def main() -> None:
    """Open the page, then for each lesson: pick it, click its mitigation, time both until the app is idle."""
    why = missing_requirements()
    if why:
        sys.exit(why)
    from playwright.sync_api import sync_playwright
    os.environ["CTXLAB_DATA_DIR"] = tempfile.mkdtemp(prefix="ctxlab-bench-")
    port, log = free_port(), Path(tempfile.mkdtemp()) / "streamlit.log"
    proc = start_app(ROOT, port, log)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_ready(proc, url, log)
        with sync_playwright() as p:
            browser = launch(p)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(120_000)
            page.goto(url + "/failure_modes")
            wait_for_heading(page, "Failure Modes")
            for lesson, button in LESSONS:
                start = time.monotonic()
                page.locator('[data-testid="stRadio"]').get_by_text(lesson, exact=True).click()
                settle(page, 120)
                opened = time.monotonic()
                page.get_by_role("button", name=button).click()
                settle(page, 120)
                done = time.monotonic()
                errors = error_texts(page)
                print(f"{lesson:20s} open {opened - start:5.1f} s  apply {done - opened:5.1f} s  "
                      f"total {done - start:5.1f} s" + (f"  ERRORS {errors}" if errors else ""))
            browser.close()
    finally:
        stop_app(proc)


if __name__ == "__main__":
    main()
