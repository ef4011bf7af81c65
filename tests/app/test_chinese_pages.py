"""The Chinese interface: each page shown in Chinese leaves no English visible, the
same page in English shows no Chinese, and the language chosen stays across a page change."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from ..conftest import ROOT
from .helpers import APP_TIMEOUT
from ctxlab import i18n

from .english_left import chinese_left, english_left, report

PAGES = ["token_counts.py", "strategy_lab.py", "compare.py", "tune.py", "tool_retrieval.py"]
PROVIDER_IDS = ("auto", "local", "use", "multilingual", "hash", "openai")  # embedding providers, as the CLI names them
# What the export notes name: frameworks, products and their classes (names, not words to translate).
FRAMEWORKS = ("OpenHands", "Codex", "Code", "SWE-agent", "ADK", "SDK", "HumanMessage", "SystemMessage",
              "ClearToolUsesEdit", "SessionSettings", "START", "Responses", "RunConfig", "deepagents", "Deep")
# The placeholder texts a model receives in place of a cleared tool result, quoted by the export notes as data.
PLACEHOLDER_TEXTS = frozenset({"[tool result cleared by ctxlab: N tokens]", "[cleared]"})


def _open(page: str, lang: str, monkeypatch) -> AppTest:
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=APP_TIMEOUT)
    at.query_params["lang"] = lang
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("page", PAGES)
def test_the_page_in_chinese_leaves_no_english(page, monkeypatch, data_dir):
    at = _open(page, "zh", monkeypatch)
    from ctxlab.pricing import load_prices
    known = {load_prices().get("gpt-4o").source}  # the price table's citation of its source, as data
    left = english_left(at, allow=PROVIDER_IDS, engine_text=known)
    assert not left, report(left)


@pytest.mark.parametrize("page", PAGES)
def test_the_page_in_english_shows_no_chinese(page, monkeypatch, data_dir):
    at = _open(page, "en", monkeypatch)
    assert at.session_state["lang"] == "en"
    assert not chinese_left(at), chinese_left(at)[:10]


def test_chinese_starts_on_a_chinese_sample(monkeypatch, data_dir):
    at = _open("token_counts.py", "zh", monkeypatch)
    assert at.session_state["sample_name"] == "zh_support_agent.json"
    assert _open("token_counts.py", "en", monkeypatch).session_state["sample_name"] == "ecommerce_refund.json"


@pytest.fixture
def test_thread_language():
    """AppTest calls the widgets' format functions in the test's own thread (to find a selectbox's
    index): that thread must speak the language the last run drew the widgets in. English after."""
    yield i18n.use
    i18n.use("en")


def test_the_switch_works_both_ways_and_stays_across_a_page_change(monkeypatch, data_dir, test_thread_language):
    test_thread_language("zh")
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)
    at.query_params["lang"] = "zh"
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["lang"] == "zh" and at.title[0].value == "策略实验室"
    at.switch_page("pages/token_counts.py").run()
    assert at.session_state["lang"] == "zh" and not english_left(at), report(english_left(at))
    at.session_state["lang"] = "en"  # what the sidebar's switch does (its callback also sets ?lang=)
    at.run()  # the widgets were drawn in Chinese: the test thread still speaks it for this run
    test_thread_language("en")
    assert at.session_state["lang"] == "en" and not chinese_left(at), chinese_left(at)[:10]
    at.switch_page("pages/strategy_lab.py").run()
    assert at.session_state["lang"] == "en" and at.title[0].value == "Strategy Lab"


def _check_zh(at: AppTest, known: set[str] = frozenset(), allow: tuple[str, ...] = ()) -> None:
    from ctxlab.pricing import load_prices
    left = english_left(at, allow=(*PROVIDER_IDS, *allow),
                        engine_text={load_prices().get("gpt-4o").source, *known})
    assert not left, report(left)


@pytest.mark.parametrize("tab", ["逐次回放", "导出"])
def test_the_labs_replay_and_export_tabs_in_chinese(tab, monkeypatch, data_dir, test_thread_language):
    test_thread_language("zh")
    at = _open("strategy_lab.py", "zh", monkeypatch)
    at.session_state["lab_tab"] = tab  # the tab's label, as the browser sends it
    at.run()
    assert not at.exception, at.exception
    _check_zh(at, PLACEHOLDER_TEXTS, allow=FRAMEWORKS)


def test_the_tune_results_in_chinese(monkeypatch, data_dir, test_thread_language):
    from .helpers import run_tune_sweep
    test_thread_language("zh")
    at = _open("tune.py", "zh", monkeypatch)
    run_tune_sweep(at, timeout=300)
    assert at.get("plotly_chart"), "the sweep drew no figure"
    from ctxlab.sweep import COLUMNS  # the measures' headers are their identifiers, as the CLI prints them
    _check_zh(at, PLACEHOLDER_TEXTS, allow=(*COLUMNS, *FRAMEWORKS))


def test_tool_retrievals_recall_sweep_in_chinese(monkeypatch, data_dir, test_thread_language):
    test_thread_language("zh")
    at = _open("tool_retrieval.py", "zh", monkeypatch)
    at.radio(key="tr_provider").set_value("hash").run()  # instant embeddings: the sweep's text is what is checked
    at.button(key="tr_sweep").click().run()
    assert not at.exception, at.exception
    assert len(at.get("plotly_chart")) >= 2, "the recall sweep drew no figures"
    _check_zh(at)


@pytest.mark.parametrize("strategy,max_tokens,expected", [
    ("none", 16_000, "none 原样发送每一条消息"),                      # why the strategy did not act (Plan.idle)
    ("clear_tool_results", 16_000, "clear_tool_results 在消息超过"),  # idle below its trigger, with figures
    ("sliding_window", 600, "光是系统提示词和最新的用户消息就需要"),       # a plan's warning
    ("hybrid", 3_000, "hybrid 选择了"),                                # a message's reason, nested in another
])
def test_what_the_strategy_writes_reads_in_chinese(strategy, max_tokens, expected, monkeypatch, data_dir,
                                                   test_thread_language):
    """The engine's own sentences (idle, warnings, reasons; ctxlab.i18n.Text rendered by the page) are
    on the page in Chinese, and nothing around them is English: nothing of the engine is cut out."""
    from .english_left import visible_text
    test_thread_language("zh")
    at = _open("strategy_lab.py", "zh", monkeypatch)
    at.session_state["max_tokens"] = max_tokens
    at.selectbox(key="lab_strategy").set_value(strategy).run()
    assert not at.exception, at.exception
    shown = " ".join(visible_text(at)).replace("\\", "")
    assert expected in shown, f"{expected!r} not on the page"
    _check_zh(at)
