"""Deep links as the first requests after `streamlit run`, in a real browser against a fresh server
(one start): with pages/ beside app.py, Streamlit began in its old multipage mode, so a first /chat or
/tool_retrieval?lang=zh ran the page alone under a navigation of file names ("app", "agent loop", lowercase
English even in 中文) without the tour, and /strategy_lab answered "Page not found"."""
from __future__ import annotations

import pytest

from ctxlab import i18n

from ..conftest import ROOT
from .browser import launch, missing_requirements, served_app, settle
from .test_browser import nav_pages

pytestmark = pytest.mark.browser
if (_why := missing_requirements()) is not None:
    pytest.skip(_why, allow_module_level=True)

from playwright.sync_api import sync_playwright  # noqa: E402  (after the skip: may be missing)

ARTIFACTS = ROOT / "test-artifacts" / "browser"


def _titles(lang: str) -> list[str]:
    """The navigation's titles in ``lang``, as app.py lists them."""
    i18n.use(lang)
    try:
        return [i18n._(title) for title, _path in nav_pages()]
    finally:
        i18n.use("en")


def _open(browser, url: str, shot: str) -> dict:
    """A new session opened straight on ``url``: what its sidebar navigation, heading and dialogs show."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = ctx.new_page()
        page.goto(url)
        page.wait_for_selector('[data-testid="stSidebarNav"]', timeout=60_000)
        page.wait_for_selector("h1", timeout=60_000)
        settle(page, 60)
        page.screenshot(path=str(ARTIFACTS / shot))
        links = page.locator('[data-testid="stSidebarNav"] a')
        return {"nav": [t.split("\n")[-1].strip() for t in links.all_inner_texts()],
                "h1": page.locator("h1").first.inner_text(), "path": page.url.split("?")[0].rsplit("/", 1)[-1],
                "dialogs": page.locator('[role="dialog"]').all_inner_texts(),
                "tour": page.locator('[class*="st-key-tour_box"]').count()}
    finally:
        ctx.close()


def test_deep_links_first_after_a_restart_show_the_apps_navigation(tmp_path, monkeypatch):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("CTXLAB_DATA_DIR", str(tmp_path))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CTXLAB_SESSIONS_URL"):
        monkeypatch.delenv(name, raising=False)
    with served_app(ROOT, ARTIFACTS / "streamlit-deeplinks.log") as url, sync_playwright() as p:
        browser = launch(p)
        try:
            zh = _open(browser, f"{url}/tool_retrieval?lang=zh", "deeplink-tool-retrieval-zh.png")  # the first request
            chat = _open(browser, f"{url}/chat", "deeplink-chat.png")
            lab = _open(browser, f"{url}/strategy_lab", "deeplink-strategy-lab.png")
        finally:
            browser.close()
    assert zh["nav"] == _titles("zh") and zh["h1"] == "工具检索" and zh["tour"] == 1, zh
    assert chat["nav"] == _titles("en") and chat["h1"] == "Chat" and chat["tour"] == 1, chat
    assert lab["h1"] == "Strategy Lab" and lab["path"] == "strategy_lab" and not lab["dialogs"], lab
    assert lab["nav"] == _titles("en"), lab
