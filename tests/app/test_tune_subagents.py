"""Tune on a Claude Code main session with a sub-agent: the sweep measures the parent as
logged; on request, the recommended point on the same session isolated (parent and sub-agent, each in its own
context) and inline, figures as ``ctxlab.subagents.isolation`` gives them, in English and in Chinese."""
from __future__ import annotations


from streamlit.testing.v1 import AppTest

from ctxlab import i18n
from ctxlab.strategies import Budget, get_strategy
from ctxlab.subagents import isolation

from ..conftest import ROOT
from .english_left import english_left_in, report, subagent_section_english
from .helpers import open_page, run_tune_sweep

PARENT = ROOT / "tests" / "data" / "coding" / "claude_code_task_parent.jsonl"
TEXT = PARENT.read_text(encoding="utf-8")


def _swept(monkeypatch, lang: str = "en") -> AppTest:
    i18n.use(lang)
    at = open_page("tune.py", monkeypatch, timeout=180, state={
        "lang": lang, "tune_set": "current", "source": "paste", "paste_text": TEXT, "conversation_text": TEXT,
        "conversation_label": "task_parent.jsonl", "tune_budgets": "60000, 120000", "tune_min_recall": 0.5})
    at.query_params["lang"] = lang
    return run_tune_sweep(at, timeout=240)


def _rows(at: AppTest) -> dict[str, dict]:
    frame = next(d.value for d in at.dataframe if "form" in d.value.columns)
    return {r["form"]: r for r in frame.to_dict("records")}


def test_the_recommended_point_on_the_sub_agent_work_isolated_and_inline(monkeypatch):
    at = _swept(monkeypatch)
    assert at.success or at.warning  # a recommendation
    assert not [d for d in at.dataframe if "form" in d.value.columns]  # off until asked for
    at.checkbox(key="tune_subagents").check().run()
    assert not at.exception, at.exception
    rows = _rows(at)
    result = at.session_state["tune_result"]
    point = result.points[result.recommendation]
    model = at.session_state["model"]
    budget = Budget.for_model(model, reserve=float(at.session_state["reserve"]), max_tokens=point["max_tokens"])
    want = isolation(TEXT, model=model, strategy=get_strategy(point["strategy"], **point["params"]),
                     budget=budget)["measured"]
    for form in ("isolated", "inline"):
        assert rows[form]["session"] == "task_parent.jsonl"
        assert rows[form]["parent prompt tokens"] == want[form]["parent"]["prompt_tokens"]
        assert rows[form]["prompt tokens, all contexts"] == want[form]["total"]["prompt_tokens"]
        assert rows[form]["calls over limit"] == want[form]["total"]["calls_over_limit"]
        assert rows[form]["parent needed recall"] == want[form]["parent"]["needed_recall"]
    assert rows["isolated"]["parent prompt tokens"] < rows["inline"]["parent prompt tokens"]
    assert any("a model of the alternative" in c.value for c in at.caption)


def test_a_set_without_sub_agents_offers_no_such_table(monkeypatch):
    at = run_tune_sweep(open_page("tune.py", monkeypatch))
    assert not [c for c in at.checkbox if c.key == "tune_subagents"]


def _section_english() -> list[str]:
    return subagent_section_english(ROOT / "pages" / "tune.py", "_subagents_inline")


def test_the_table_in_chinese_leaves_no_english(monkeypatch):
    try:
        at = _swept(monkeypatch, "zh")
        at.checkbox(key="tune_subagents").check().run()
        assert not at.exception, at.exception
        assert [d for d in at.dataframe if "form" in d.value.columns]
        left = english_left_in(at, _section_english())
        assert not left, report(left)
    finally:
        i18n.use("en")
