"""The real app in a real browser: `streamlit run app.py` on 127.0.0.1, driven by headless Chromium.
Every page of the navigation renders without an error (screenshots in test-artifacts/browser/), a
strategy change reruns and changes the numbers, choices survive a page switch in the real runtime,
and pasted HTML shows as text and never runs."""
from __future__ import annotations

import ast
import json
from pathlib import Path
from urllib.parse import urlparse

import pytest

from ..conftest import ROOT
from .browser import (choose, error_texts, full_screenshot, launch, missing_requirements, open_page, served_app, settle,
                      wait_for_heading, widget)

pytestmark = pytest.mark.browser
if (_why := missing_requirements()) is not None:
    pytest.skip(_why, allow_module_level=True)

from playwright.sync_api import expect, sync_playwright  # noqa: E402  (after the skip: may be missing)

ARTIFACTS = ROOT / "test-artifacts" / "browser"
XSS = "<img src=x onerror=alert(1)><script>alert(2)</script>"
XSS_PASTE = json.dumps([{"role": "user", "content": XSS}])
expect.set_options(timeout=60_000)  # an upper bound: a rerun on a busy machine can take several seconds
# A text each page shows once it has run on the default sample (besides its title).
KNOWN_TEXT = {"Strategy Lab": "Tokens after", "Compare": "Verdict", "Token counts": "Prompt tokens",
              "Answers": "No model configured.",
              "Tune": "Run the sweep",
              "Failure Modes": "Mitigation"}  # the app runs with no model here: the page says so and stops


def nav_pages() -> list[tuple[str, str]]:
    """(title, URL path) of each page app.py puts in the navigation, read from its PAGES list."""
    tree = ast.parse((ROOT / "app.py").read_text(encoding="utf-8"))

    class Unmark(ast.NodeTransformer):  # N_("Title") marks a title for the catalogs: read its text
        def visit_Call(self, node: ast.Call) -> ast.AST:
            return node.args[0] if getattr(node.func, "id", "") == "N_" else node

    pages = next(ast.literal_eval(Unmark().visit(n.value)) for n in tree.body
                 if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "PAGES")
    present = [(path, title) for path, title, _icon in pages if (ROOT / path).exists()]
    return [(title, "/" if k == 0 else "/" + Path(path).stem) for k, (path, title) in enumerate(present)]


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    """The app served by `streamlit run` on a free local port; stopped whatever happens. Its data
    (session store, tool index) goes to a temporary directory, never the developer's home."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with pytest.MonkeyPatch.context() as env:  # no developer's model: the Answers page shows its no-model state
        for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CTXLAB_LLM_MODEL", "CTXLAB_SESSIONS_URL"):
            env.delenv(name, raising=False)
        env.setenv("CTXLAB_DATA_DIR", str(tmp_path_factory.mktemp("ctxlab-data")))
        with served_app(ROOT, ARTIFACTS / "streamlit.log") as url:
            yield url


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = launch(p)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def context(browser):
    """One browser profile for the module (its HTTP cache saves reloading the app's scripts); each
    test still opens its own page, so its own Streamlit session."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture
def dialogs() -> list[str]:
    """Messages of the JavaScript dialogs (alert, confirm, prompt) the page opened."""
    return []


@pytest.fixture
def page(context, app_url, dialogs):
    """A new page (a new Streamlit session) on the app's default page."""
    pg = context.new_page()
    pg.set_default_timeout(30_000)

    def on_dialog(d):
        dialogs.append(d.message)
        d.dismiss()

    pg.on("dialog", on_dialog)
    pg.goto(app_url + "/")
    wait_for_heading(pg, "Strategy Lab")
    try:
        yield pg
    finally:
        pg.close()


def metric(page, label: str) -> str:
    """The value shown by the metric labelled exactly `label`."""
    box = page.locator('[data-testid="stMetric"]').filter(
        has=page.locator('[data-testid="stMetricLabel"]').get_by_text(label, exact=True))
    return box.locator('[data-testid="stMetricValue"]').inner_text().strip()


def pinned(page) -> list[str]:
    """The tags of the Strategy Lab's "Pinned messages" box."""
    box = widget(page, "stMultiSelect", "Pinned messages")
    return [tag.get_attribute("aria-label") for tag in box.locator("[data-tag]").all()]


def open_a_message(page, ending: str) -> str:
    """Open, in the Strategy Lab's viewer, the first message whose label ends with `ending`."""
    label = next(t for t in options_of(page, "Open a message") if t.endswith(ending))
    choose(page, "Open a message", label)
    return label


def options_of(page, label: str) -> list[str]:
    """The options of the selectbox labelled `label` (opens its list, then closes it)."""
    box = widget(page, "stSelectbox", label).get_by_role("combobox")
    box.scroll_into_view_if_needed()
    box.click()
    options = page.get_by_role("option")
    expect(options.first).to_be_visible()
    texts = [t.strip() for t in options.all_inner_texts()]
    page.keyboard.press("Escape")
    return texts


def sidebar_values(page) -> dict[str, str]:
    """The model and budget the sidebar shows."""
    return {"model": widget(page, "stSelectbox", "Model").get_by_role("combobox").input_value(),
            "limit": widget(page, "stNumberInput", "Context limit (tokens)").locator("input").input_value()}


def injected(page) -> dict[str, int]:
    """What the pasted HTML would have created had it been rendered as HTML."""
    return page.evaluate("""() => ({
        img: document.querySelectorAll('img[src="x"]').length,
        onerror: document.querySelectorAll('[onerror]').length,
        script: [...document.querySelectorAll('script')].filter(s => s.textContent.includes('alert(2)')).length,
    })""")


def test_every_page_of_the_navigation_renders_without_an_error(page, app_url):
    expected = nav_pages()
    links = page.locator('[data-testid="stSidebarNav"] a')
    shown = [t.split("\n")[-1].strip() for t in links.all_inner_texts()]
    assert shown == [title for title, _ in expected]
    for k, (title, path) in enumerate(expected):
        open_page(page, title)
        assert urlparse(page.url).path == path, f"{title} is at {page.url}"
        assert error_texts(page) == [], f"{title} shows an error"
        if title in KNOWN_TEXT:
            expect(page.locator('[data-testid="stMain"]').get_by_text(KNOWN_TEXT[title], exact=True).first).to_be_visible()
        full_screenshot(page, ARTIFACTS / f"{k}_{path.strip('/') or 'strategy_lab'}.png")


def test_the_tune_page_runs_the_default_sweep_and_draws_the_pareto_front(page):
    open_page(page, "Tune")
    page.get_by_role("button", name="Run the sweep").click()
    settle(page, 60)
    assert error_texts(page) == []
    main = page.locator('[data-testid="stMain"]')
    expect(main.get_by_text("Recommendation", exact=True)).to_be_visible()
    expect(main.locator(".js-plotly-plot").first).to_be_visible()
    legend = [t.text_content() for t in main.locator(".js-plotly-plot").first.locator(".legendtext").all()]
    assert legend[:2] == ["sliding_window", "clear_tool_results"] and "recommended" in legend
    full_screenshot(page, ARTIFACTS / "tune_after_sweep.png")


def test_the_tour_reopens_and_leads_to_a_lesson_whose_mitigation_applies(page):
    tour = page.get_by_text("New here? Three places to look first:")
    expect(tour).to_be_visible()
    page.get_by_role("button", name="Dismiss").click()
    settle(page)
    expect(tour).to_have_count(0)
    page.get_by_role("button", name="Show the tour").click()
    settle(page)
    expect(tour).to_be_visible()
    page.locator('[data-testid="stMain"]').get_by_role("link", name="Failure Modes").click()
    wait_for_heading(page, "Failure Modes")
    page.locator('[data-testid="stRadio"]').get_by_text("Context clash", exact=True).click()
    settle(page)
    expect(page.locator('[data-testid="stMain"]').get_by_text("conflicting_values: HT-40812", exact=False)).to_be_visible()
    page.get_by_role("button", name="Apply: Clear the older result, keep the newest 2").click()
    settle(page)
    assert metric(page, "Clash findings") == "0"
    assert error_texts(page) == []
    full_screenshot(page, ARTIFACTS / "failure_modes_clash_applied.png")


def test_a_strategy_change_reruns_and_changes_the_numbers(page):
    before, after = metric(page, "Tokens before"), metric(page, "Tokens after")
    assert after != before  # the default strategy has work to do on the default sample and budget
    opened = open_a_message(page, ": dropped")  # a message this strategy drops, opened in the viewer
    choose(page, "Strategy", "None (send everything)")
    expect(page.locator('[data-testid="stMain"]').get_by_text("None (send everything)", exact=True)).to_be_visible()
    assert metric(page, "Tokens after") == before
    assert metric(page, "Messages removed") == "0"
    # The viewer's box names the message's new fate, not the one it had when it was opened.
    expect(widget(page, "stSelectbox", "Open a message").get_by_role("combobox")).to_have_value(
        opened.replace(": dropped", ": kept"))
    assert error_texts(page) == []


def test_choices_and_pins_survive_a_visit_to_another_page(page):
    choose(page, "Model", "gpt-4.1")
    sidebar = sidebar_values(page)
    assert sidebar["model"] == "gpt-4.1" and sidebar["limit"] != "16000"  # the limit follows the model
    choose(page, "Strategy", "Middle out")
    preserve = widget(page, "stNumberInput", "preserve_start")
    start = int(preserve.locator("input").input_value())
    preserve.locator('[data-testid="stNumberInputStepUp"]').click()
    settle(page)
    expect(preserve.locator("input")).to_have_value(str(start + 1))
    page.get_by_role("button", name="Pin this message").click()
    settle(page)
    expect(page.get_by_role("button", name="Unpin this message")).to_be_visible()
    pins = pinned(page)
    assert len(pins) == 1 and pins[0].startswith("#0")

    open_page(page, "Compare")
    assert error_texts(page) == []
    assert sidebar_values(page) == sidebar  # the other page uses the same model and budget
    open_page(page, "Strategy Lab")

    assert sidebar_values(page) == sidebar
    expect(widget(page, "stSelectbox", "Strategy").get_by_role("combobox")).to_have_value("Middle out")
    expect(widget(page, "stNumberInput", "preserve_start").locator("input")).to_have_value(str(start + 1))
    assert pinned(page) == pins
    expect(page.get_by_role("button", name="Unpin this message")).to_be_visible()
    assert error_texts(page) == []


def test_pasted_html_shows_as_text_and_never_runs(page, dialogs):
    page.locator('[data-testid="stSidebar"] [data-testid="stRadio"]').get_by_text("Paste", exact=True).click()
    settle(page)
    box = widget(page, "stTextArea", "Paste JSON or JSONL").locator("textarea")
    box.fill(XSS_PASTE)
    box.press("Control+Enter")  # commits the text area's value, as a user's click elsewhere would
    settle(page)
    page.get_by_role("button", name="Use pasted text").click()
    settle(page)
    main = page.locator('[data-testid="stMain"]')
    expect(main.get_by_text("pasted text (1 messages", exact=False)).to_be_visible()
    assert error_texts(page) == []
    # The message viewer opens message #0, the pasted one: its content is there, as text.
    expect(main.locator('[data-testid="stCode"]').filter(has_text=XSS).first).to_be_visible()
    assert injected(page) == {"img": 0, "onerror": 0, "script": 0}
    full_screenshot(page, ARTIFACTS / "xss_strategy_lab.png")

    for title, _path in nav_pages()[1:]:
        open_page(page, title)
        assert error_texts(page) == [], f"{title} shows an error for the pasted conversation"
        assert injected(page) == {"img": 0, "onerror": 0, "script": 0}, title
        # Still the pasted conversation: a page switch must not fall back to the sample.
        expect(page.locator('[data-testid="stSidebar"]').get_by_role("radio", name="Paste")).to_be_checked()
        if title == "Token counts":
            assert metric(page, "Messages") == "1"
            # The table draws on a canvas; its cells' text is in the grid's accessible copy.
            expect(main.locator('[data-testid^="glide-cell"]').filter(has_text=XSS).first).to_be_attached()
            full_screenshot(page, ARTIFACTS / "xss_token_counts.png")
    page.wait_for_timeout(500)  # an injected image's onerror would fire by now
    assert dialogs == []


# ---------------------------------------------------------------- legibility at both size ends

EMOJI = r"[\u{1F000}-\u{1FAFF}\u{2600}-\u{27BF}\u{2B1B}-\u{2B1C}]"
MAX_FIGURE_HEIGHT = 640  # ctxlab.figures.MAX_HEIGHT
GEOMETRY = """sel => {
    const gd = document.querySelector(sel + ' .js-plotly-plot');
    if (!gd || !gd._fullLayout) return null;
    const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const one = q => { const e = gd.querySelector(q); return e ? box(e) : null; };
    const L = gd._fullLayout;
    return {
        height: L.height, xrange: L.xaxis.range, yrange: L.yaxis.range,
        xticks: [...gd.querySelectorAll('.xtick text')].map(t => t.textContent),
        yticks: [...gd.querySelectorAll('.ytick text')].map(t => t.textContent),
        legend: one('g.legend'), xtitle: one('.g-xtitle text'), colorbar: !!gd.querySelector('.colorbar'),
        figure: box(gd),
        bars: [...gd.querySelectorAll('.barlayer .point path')].map(box).filter(b => b[2] - b[0] > 0.5 && b[3] - b[1] > 0.5),
        annotations: [...gd.querySelectorAll('g.annotation')].map(g => ({
            name: (L.annotations[+g.getAttribute('data-index')] || {}).name, text: g.textContent, box: box(g)})),
    };
}"""
CUT = """() => [...document.querySelectorAll('[data-testid="stMetric"] *')]
    .filter(e => e.children.length === 0 && e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)"""


def _overlap(a, b) -> bool:
    return a[0] < b[2] - 1 and b[0] < a[2] - 1 and a[1] < b[3] - 1 and b[1] < a[3] - 1


def _size_case(name: str, tmp_path: Path) -> tuple[Path, int]:
    """The conversation file a user uploads: 3 messages of about 500 tokens, or 10,001 messages of
    about 2M tokens (a ~7 MB file)."""
    import ctxlab
    from ctxlab.generate import generate
    if name == "tiny":
        conv = ctxlab.Conversation(messages=(
            ctxlab.Message("system", "You are the support assistant of a bike shop. " * 45),
            ctxlab.Message("user", "Where is order KC-1?"), ctxlab.Message("assistant", "It shipped yesterday.")))
    else:
        conv = generate("ecommerce", turns=500, rounds_per_turn=9, result_tokens=300, seed=0)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(ctxlab.export(conv, "openai").data), encoding="utf-8")
    return path, len(conv)


def _upload(page, path: Path, n: int) -> None:
    page.locator('[data-testid="stSidebar"] [data-testid="stRadio"]').get_by_text("Upload", exact=True).click()
    settle(page)
    page.locator('[data-testid="stSidebar"] input[type=file]').set_input_files(str(path))
    expect(page.locator('[data-testid="stMain"]').get_by_text(f"upload {path.name} ({n:,} messages", exact=False)
           ).to_be_visible(timeout=180_000)
    settle(page, 180)


def _chart(page, key: str) -> dict:
    page.locator(f".st-key-{key} .js-plotly-plot").first.wait_for(state="attached", timeout=60_000)
    page.wait_for_timeout(300)
    geometry = page.evaluate(GEOMETRY, f".st-key-{key}")
    assert geometry is not None, f"chart {key} is not drawn"
    return geometry


def _assert_legible(g: dict, key: str) -> None:
    assert g["height"] <= MAX_FIGURE_HEIGHT, f"{key} is {g['height']} px tall"
    if g["legend"] and g["xtitle"]:
        assert not _overlap(g["legend"], g["xtitle"]), f"{key}: the legend covers the axis title"
    left, top, right, bottom = g["figure"]
    for a in g["annotations"]:
        x0, y0, x1, y1 = a["box"]
        assert left - 1 <= x0 and x1 <= right + 1 and top - 1 <= y0 and y1 <= bottom + 1, \
            f"{key}: {a['text']!r} runs out of the figure"
        for bar in g["bars"]:
            assert not _overlap(a["box"], bar), f"{key}: {a['text']!r} is drawn on a bar"


def _assert_page_text_is_clean(page) -> None:
    assert page.evaluate(f"() => document.body.innerText.match(/{EMOJI}/u)") is None, "emoji in the page"
    assert page.evaluate(CUT) == [], "a metric's label or value is cut"
    assert error_texts(page) == []


@pytest.mark.parametrize("size", ["tiny", "huge"])
def test_every_figure_stays_legible_at_both_size_ends(page, size, tmp_path):
    path, n = _size_case(size, tmp_path)
    _upload(page, path, n)
    _assert_page_text_is_clean(page)
    bars = _chart(page, "lab_token_bars")
    _assert_legible(bars, "token bars")
    assert bars["xrange"][0] == 0  # the 5 MB upload drew an axis from -1M
    totals = [a for a in bars["annotations"] if a["name"] == "total"]
    assert len(totals) == 2 and all(a["box"][2] - a["box"][0] > 10 for a in totals)  # the after bar's size reads
    limits = [a for a in bars["annotations"] if a["name"] == "limit"]
    assert len(limits) == 2 and not _overlap(limits[0]["box"], limits[1]["box"])
    timeline = _chart(page, "lab_timeline")
    _assert_legible(timeline, "timeline")
    assert all(t.replace(",", "").isdigit() for t in timeline["xticks"]), timeline["xticks"]
    full_screenshot(page, ARTIFACTS / f"size_{size}_strategy_lab.png")

    page.get_by_role("tab", name="Replay call by call").click()
    settle(page, 180)
    heat = _chart(page, "lab_replay_heatmap")
    _assert_legible(heat, "replay heatmap")
    assert heat["colorbar"], "the replay heatmap has no colour legend"
    for ticks in (heat["xticks"], heat["yticks"]):
        assert ticks and all(t.replace(",", "").isdigit() for t in ticks), ticks  # no -0.5 / 0.5 / 1.5
    full_screenshot(page, ARTIFACTS / f"size_{size}_replay.png")

    open_page(page, "Token counts")
    _assert_page_text_is_clean(page)
    category = _chart(page, "category_bar")
    _assert_legible(category, "token counts bar")
    assert category["xrange"][0] == 0
    share = metric(page, "Of the prompt limit")
    if size == "huge":
        assert share.endswith("%") and "," in share  # "15,233%", not "15233.0%"
        expect(page.locator('[data-testid="stAlertContentWarning"]').filter(has_text="Over the limit")).to_be_visible()
    full_screenshot(page, ARTIFACTS / f"size_{size}_token_counts.png")

    open_page(page, "Compare", "Compare strategies")
    _assert_page_text_is_clean(page)
    _assert_legible(_chart(page, "cmp_bars"), "compare bars")
    full_screenshot(page, ARTIFACTS / f"size_{size}_compare.png")
