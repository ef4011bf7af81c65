"""The Failure Modes lessons, Where it runs, Agents, Chat and Answers in Chinese: each
page's own text leaves no English in Chinese and no Chinese in English, and the Chinese lessons run
on Chinese conversations whose lesson text the detectors bear out on the page.

"Own text" is the main area: the sidebar (playground.input_panel), the strategy picker
(playground.widgets.strategy_picker), strategy titles and the per-call figure (ctxlab.figures) are the
other half of the interface's translation and are checked by tests/app/test_chinese_pages.py."""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any, Iterator

import pytest
from streamlit.testing.v1 import AppTest

from ctxlab import i18n
from ctxlab.diagnostics import MODES, lesson_path
from ctxlab.strategies import STRATEGIES

from ..conftest import ROOT
from .helpers import APP_TIMEOUT
from ..openai_fake import FakeOpenAI
from .english_left import _names, _own_text, chinese_left, english_runs, report

LESSONS = ("poisoning", "distraction", "confusion", "clash", "quarantine", "tool_loadout")
PRODUCT_NAMES = ("Chroma", "PostgreSQL", "Code", "Studio", "Kestrel", "Cycles", "Ridgeline")
"""Names kept as they are (Chroma, PostgreSQL, Claude Code, LM Studio; the sample agents' shops are data)."""
SHARED_CHARTS = ("loop_chart", "loop_coding_chart")
DATA_WIDGETS = ("chat_profile", "chat_session_pick")
"""Pickers whose options are the user's data: agent names and session titles."""
"""Charts drawn by ctxlab.figures.prompt_per_call (its labels belong to the figures' catalog)."""
CJK = re.compile(r"[\u4e00-\u9fff]")


def _literals(*paths: Path) -> set[str]:
    """Every string constant of some source files (their text is the other half's to translate)."""
    out: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) > 3:
                out.add(node.value)
    return out


def _shared_texts() -> frozenset[str]:
    """Strategy titles, summaries and parameter help, and the strategy picker's own text (playground/widgets.py)."""
    out: set[str] = _literals(ROOT / "playground" / "widgets.py")
    for name, cls in STRATEGIES.items():
        out.update(t for t in (cls.title, cls.summary) if t)
        out.update(spec.get("help") or "" for spec in cls.schema())
    return frozenset(t for t in out if t)


def _picker(key: str | None, prefixes: tuple[str, ...]) -> bool:
    if not key:
        return False
    names = "|".join(map(re.escape, STRATEGIES))
    return any(re.match(rf"^{re.escape(p)}_(strategy|defaults|(?:{names})_)", key) for p in prefixes)


def _main_nodes(at: AppTest, prefixes: tuple[str, ...]) -> Iterator[Any]:
    def walk(node: Any) -> Iterator[Any]:
        if _picker(getattr(node, "key", None), prefixes) or getattr(node, "key", None) in SHARED_CHARTS + DATA_WIDGETS:
            return
        yield node
        if getattr(node, "type", "") == "chat_message":
            return
        for child in (getattr(node, "children", None) or {}).values():
            yield from walk(child)
    yield from walk(at.main)


def english_in_main(at: AppTest, prefixes: tuple[str, ...] = (), data_after: str = "") -> dict[str, list[str]]:
    """The English left in the page's own text (main area; shared parts left out, see the module).
    ``data_after``: where a text's own words end and the conversation it quotes begins."""
    names, extra, shared = _names(), frozenset(n.lower() for n in PRODUCT_NAMES), _shared_texts()
    found: dict[str, list[str]] = {}
    for node in _main_nodes(at, prefixes):
        for text in _own_text(node):
            text = text.split(data_after, 1)[0] if data_after else text
            if text and text.strip() and text.strip() not in shared:
                runs = english_runs(text, names, extra)
                if runs:
                    found[text] = runs
    return found


@pytest.fixture
def zh():
    """The test's own thread speaks Chinese too: AppTest formats radio options here on a rerun."""
    i18n.use("zh")
    yield
    i18n.use("en")


def _open(page: str, lang: str, monkeypatch, state: dict | None = None, timeout: int = 300) -> AppTest:
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=APP_TIMEOUT)
    at.query_params["lang"] = lang
    for k, v in (state or {}).items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def _click(at: AppTest, key: str) -> None:
    at.button(key=key).click().run()
    assert not at.exception, at.exception


# ---------------------------------------------------------------- Failure Modes

@pytest.mark.parametrize("lesson", LESSONS)
def test_each_lesson_in_chinese_leaves_no_english_before_and_after_its_fix(lesson, zh, monkeypatch, data_dir):
    at = _open("failure_modes.py", "zh", monkeypatch, state={"fm_lesson": lesson})
    assert at.title[0].value == "失效模式"
    left = english_in_main(at)
    assert not left, report(left)
    _click(at, "fm_apply")
    left = english_in_main(at)
    assert not left, report(left)


@pytest.mark.parametrize("lesson", ["poisoning", "confusion"])
def test_each_lesson_in_english_shows_no_chinese(lesson, monkeypatch, data_dir):
    at = _open("failure_modes.py", "en", monkeypatch, state={"fm_lesson": lesson})
    _click(at, "fm_apply")
    assert not chinese_left(at), chinese_left(at)[:10]
    assert not CJK.search(_timeline(at))  # the English story, not the Chinese one


def _plain(element: Any) -> str:
    """An element's text without Markdown escapes."""
    return element.value.replace("\\", "")


def _timeline(at: AppTest) -> str:
    """The text of the lesson's messages, as its timeline table shows them."""
    table = next(t for t in at.dataframe if t.key == "fm_table" or "content" in t.value.columns)
    return " ".join(map(str, table.value["content"]))


def _findings(at: AppTest) -> list[str]:
    return list(at.selectbox(key="fm_finding").options)


def test_the_chinese_poisoning_lesson_runs_on_the_taobao_story_and_its_fixes_reach_zero(zh, monkeypatch, data_dir):
    at = _open("failure_modes.py", "zh", monkeypatch, state={"fm_lesson": "poisoning"})
    assert "TB20261108-4417" in _timeline(at) and "林女士" in _timeline(at)
    # the lesson text (find the poisoned messages and remove them) and the findings it names
    assert any("找出被污染的消息并删掉它们" in m.value for m in at.markdown)
    assert [o.split(" ", 1)[1] for o in _findings(at)] == [
        "错误： mistyped_id （消息 2, 3, 4, 13）", "错误： contradicted_claim （消息 4, 12）",
        "错误： summary_carries_claim （消息 4, 5, 12）", "错误： repeated_failing_call （消息 7, 8, 9, 10）"]
    assert any("TB20261108-4471" in _plain(w) for w in at.warning)
    # the finding's heading reads as Chinese, not "错误, mistyped_id:"
    assert _plain(at.warning[0]).replace("*", "").split("：", 1)[0] == "错误（mistyped_id）", _plain(at.warning[0])
    for _step in range(6):
        _click(at, "fm_apply")
        if next(m for m in at.metric if m.label == "中毒问题").value == "0":
            break
        _click(at, "fm_continue")
    assert next(m for m in at.metric if m.label == "中毒问题").value == "0"


def test_the_chinese_confusion_lesson_says_retrieval_removes_the_lookalikes_and_it_does(zh, monkeypatch, data_dir):
    at = _open("failure_modes.py", "zh", monkeypatch, state={"fm_lesson": "confusion"})
    assert any("既去掉了噪声，也去掉了相似工具" in m.value for m in at.markdown)
    assert "get_order_info(" in _timeline(at)  # the look-alike the agent called first
    _click(at, "fm_apply")
    assert next(m for m in at.metric if m.label == "混乱问题").value == "0"
    assert not [w for w in at.warning if w.value.startswith("仍然存在")]


def test_the_chinese_clash_lesson_names_the_train_and_keeping_the_newest_resolves_it(zh, monkeypatch, data_dir):
    at = _open("failure_modes.py", "zh", monkeypatch, state={"fm_lesson": "clash"})
    assert any("每个事实只保留最新的一次观测，冲突就解决了" in m.value for m in at.markdown)
    assert any("G7" in _plain(w) and "候补" in _plain(w) for w in at.warning)
    _click(at, "fm_apply")
    assert next(m for m in at.metric if m.label == "冲突问题").value == "0"


def test_the_chinese_distraction_lesson_shrinks_the_context_and_its_findings(zh, monkeypatch, data_dir):
    at = _open("failure_modes.py", "zh", monkeypatch, state={"fm_lesson": "distraction"})
    assert any("search_trains" in _plain(c) for c in at.caption)  # the three timetables' tool
    _click(at, "fm_apply")
    findings = next(m for m in at.metric if m.label == "分心问题")
    assert int(findings.value) < int(findings.help.split("：")[1])


# ---------------------------------------------------------------- the other pages

def test_where_it_runs_in_chinese(zh, monkeypatch, data_dir):
    at = _open("agent_loop.py", "zh", monkeypatch)
    assert at.title[0].value.startswith("在哪里运行")
    left = english_in_main(at, prefixes=())
    assert not left, report(left)
    en = _open("agent_loop.py", "en", monkeypatch)
    assert not chinese_left(en), chinese_left(en)[:10]


def test_agents_in_chinese(zh, monkeypatch, data_dir):
    at = _open("agents.py", "zh", monkeypatch)
    assert at.title[0].value == "智能体"
    assert at.selectbox(key="agents_pick").options[0] == "+ 新建智能体"
    left = english_in_main(at, prefixes=("agents",))
    assert not left, report(left)
    en = _open("agents.py", "en", monkeypatch)
    assert en.selectbox(key="agents_pick").options[0] == "+ New agent" and not chinese_left(en)


def test_chat_in_chinese_from_the_sample_agents_to_a_scripted_turn(zh, monkeypatch, data_dir):
    at = _open("chat.py", "zh", monkeypatch)
    left = english_in_main(at)
    assert not left, report(left)
    _click(at, "chat_make_sample")
    _click(at, "chat_new")
    _click(at, "chat_send_scripted")
    assert at.subheader[0].value == "滚动摘要"
    assert "与 Kestrel support (sample) 的对话" in at.selectbox(key="chat_session_pick").options[1]
    left = english_in_main(at, data_after="下一条脚本消息：")  # the script's next message is the sample's
    assert not left, report(left)


def test_chat_in_english_shows_no_chinese(monkeypatch, data_dir):
    at = _open("chat.py", "en", monkeypatch)
    _click(at, "chat_make_sample")
    _click(at, "chat_new")
    assert not chinese_left(at), chinese_left(at)[:10]


def test_answers_in_chinese_without_a_model_and_with_one(zh, monkeypatch, data_dir):
    at = _open("answers.py", "zh", monkeypatch)
    assert any("没有配置模型" in i.value for i in at.info)
    left = english_in_main(at)
    assert not left, report(left)
    with FakeOpenAI() as api:
        at = _open("answers.py", "zh", monkeypatch, state={"llm_base_url": api.base_url, "llm_model": "fake-model"})
        at.text_area(key="ans_question").input("我们商定的退款金额是多少？")
        _click(at, "ans_ask")
        assert [m.label for m in at.metric][:4] == ["Prompt token 数", "缓存命中的 token", "延迟", "上下文（ctxlab 计数）"]
        left = english_in_main(at, prefixes=("ans1", "ans2", "ans3", "ans4"))
        assert not left, report(left)
        en = _open("answers.py", "en", monkeypatch, state={"llm_base_url": api.base_url, "llm_model": "fake-model"})
        assert not chinese_left(en), chinese_left(en)[:10]


def test_every_failure_mode_has_its_chinese_lesson_and_the_structural_ones_keep_english():
    assert all(lesson_path(m, "zh").parent.name == "zh" for m in MODES)
    assert lesson_path("quarantine", "zh").parent.name == "lessons"
