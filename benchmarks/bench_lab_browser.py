"""The Lab at about 10,000 messages in a real browser: how long the Strategy Lab takes to rerun, and
how long its Replay tab and the "Where it runs" page take to settle, against it (target: within 10x).
Prints figures and the load; asserts nothing.

    python benchmarks/bench_lab_browser.py [--turns 500] [--rounds 9] [--screenshots DIR]

`streamlit run app.py` on a free local port, Debian's Chromium through Playwright (the helpers of
tests/app/browser.py). The conversation is generated (``generate("ecommerce", turns, rounds_per_turn,
result_tokens=300)``, about 10,000 messages at the defaults), written as OpenAI JSON and uploaded
through the sidebar. Times are wall seconds from the action to the page settling (no running
status, no stale element: ``settle``), each timed once:

* upload: from choosing the file to the Strategy Lab settled (read, count, plan, every figure);
* lab rerun: moving the default strategy's ``keep_rounds`` to a new value, to settled;
* replay tab: clicking "Replay call by call" to its heatmap drawn and the page settled; then its
  "Measure needed facts and cost" button (past 1,000 messages the measures wait for it) to settled;
* where it runs: on that page, choosing the sidebar's conversation (the page opens on its bundled
  agent run), to its chart drawn and the page settled: the strategy replayed before every call and
  at turn starts, with needed facts and cost.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import ctxlab  # noqa: E402
from ctxlab.generate import generate  # noqa: E402
from tests.app.browser import launch, missing_requirements, open_page, served_app, settle  # noqa: E402

LONG = 900.0  # seconds a step may take before the script gives up on it


def _timed(step) -> float:
    t0 = time.perf_counter()
    step()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--screenshots", help="folder to save the Replay heatmap and Where it runs as PNG, to look at")
    a = ap.parse_args()
    shots = Path(a.screenshots) if a.screenshots else None
    if shots:
        shots.mkdir(parents=True, exist_ok=True)
    why = missing_requirements()
    if why:
        print(f"skipped: {why}")
        return
    from playwright.sync_api import sync_playwright
    conv = generate("ecommerce", turns=a.turns, rounds_per_turn=a.rounds, result_tokens=300, seed=0)
    work = Path(tempfile.mkdtemp(prefix="ctxlab-bench-lab-"))
    path = work / "huge.json"
    path.write_text(json.dumps(ctxlab.export(conv, "openai").data), encoding="utf-8")
    print(f"## the Lab in a real browser: {len(conv):,} messages ({path.stat().st_size / 2**20:.1f} MB), "
          f"load average {os.getloadavg()[0]:.2f} at start")
    with served_app(ROOT, work / "server.log") as url, sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(LONG * 1000)
        page.goto(url)
        settle(page, 120)
        sidebar = page.locator('[data-testid="stSidebar"]')
        sidebar.locator('[data-testid="stRadio"]').get_by_text("Upload", exact=True).click()
        settle(page, 120)

        def upload() -> None:
            sidebar.locator("input[type=file]").set_input_files(str(path))
            page.locator('[data-testid="stMain"]').get_by_text(f"({len(conv):,} messages", exact=False).first.wait_for()
            settle(page, LONG)

        def rerun() -> None:
            box = page.locator('[data-testid="stNumberInput"]').filter(has_text="keep_rounds").locator("input").first
            box.fill("2")
            box.press("Enter")
            page.wait_for_timeout(300)
            settle(page, LONG)

        def replay_tab() -> None:
            page.get_by_role("tab", name="Replay call by call").click()
            page.locator(".st-key-lab_replay_heatmap .js-plotly-plot").first.wait_for(state="attached")
            settle(page, LONG)

        rows = [("upload (read, count, plan, draw)", _timed(upload)), ("Strategy Lab rerun (keep_rounds moved)", _timed(rerun))]
        rows.append(("Replay tab (heatmap drawn)", _timed(replay_tab)))
        if shots:
            page.locator(".st-key-lab_replay_heatmap").first.screenshot(path=str(shots / "replay_heatmap.png"))

        def measure() -> None:  # past 1,000 messages the measures wait for this button
            page.get_by_role("button", name="Measure needed facts and cost").click()
            page.wait_for_timeout(300)
            settle(page, LONG)
        rows.append(("Replay tab: Measure needed facts and cost (button)", _timed(measure)))
        open_page(page, "Where it runs", "where")

        def where_it_runs() -> None:
            page.locator('[data-testid="stMain"] [data-testid="stRadio"]').get_by_text(
                "the conversation in the sidebar", exact=True).click()
            page.locator(".st-key-loop_chart .js-plotly-plot").first.wait_for(state="attached")
            page.wait_for_timeout(300)
            settle(page, LONG)
        rows.append(('"Where it runs" on the sidebar\'s conversation (both replays)', _timed(where_it_runs)))
        if shots:
            page.locator('[data-testid="stMain"] [data-testid="stDataFrame"]').first.scroll_into_view_if_needed()
            page.screenshot(path=str(shots / "where_it_runs.png"))
            page.locator(".st-key-loop_chart").first.screenshot(path=str(shots / "where_it_runs_chart.png"))
        browser.close()
    lab = rows[1][1]
    print("| step | seconds | x of the Lab's rerun | target |")
    print("| --- | ---: | ---: | --- |")
    for name, sec in rows:
        target = "" if name.startswith(("upload", "Strategy Lab", "Replay tab:")) else \
            ("met (<= 10x)" if sec <= 10 * lab else "missed")
        print(f"| {name} | {sec:.1f} | {sec / lab:.1f} | {target} |")
    print(f"load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
