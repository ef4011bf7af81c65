"""The Strategy Lab's Replay tab on a Claude Code main session with a sub-agent: the sub-agent run in its
own context against the same work inline, figures as ``ctxlab.subagents.isolation``
gives them, a cap on the returned result the user sets, in English and in Chinese."""
from __future__ import annotations

import ast

from streamlit.testing.v1 import AppTest

from ctxlab import i18n
from ctxlab.subagents import isolation

from ..conftest import ROOT
from .helpers import open_pasted
from .english_left import english_left_in, marked_english, report

PARENT = ROOT / "tests" / "data" / "coding" / "claude_code_task_parent.jsonl"


def _open_replay(monkeypatch, lang: str = "en") -> AppTest:
    at = open_pasted("strategy_lab.py", PARENT.read_text(encoding="utf-8"), monkeypatch, lang)
    at.session_state["lab_tab"] = "Replay call by call" if lang == "en" else "逐次回放"
    at.run()
    assert not at.exception, at.exception
    return at


def _table(at: AppTest) -> dict[str, tuple[int, int]]:
    frame = next(d.value for d in at.dataframe if list(d.value.columns) == ["figure", "isolated", "inline"])
    return {row.figure: (row.isolated, row.inline) for row in frame.itertuples()}


def _each(at: AppTest) -> dict[str, tuple[int, int, int]]:
    frame = next(d.value for d in at.dataframe if "tokens back" in d.value.columns)
    return {row[0]: tuple(row[1:]) for row in frame.itertuples(index=False)}


def test_the_replay_tab_sets_the_sub_agent_isolated_beside_inline_and_caps_its_result(monkeypatch):
    at = _open_replay(monkeypatch)
    text, model = PARENT.read_text(encoding="utf-8"), at.session_state["model"]
    r = isolation(text, model=model)
    table = _table(at)
    assert table["prompt tokens of the parent, all calls"] == (r["isolated"]["parent_prompt_tokens"],
                                                                r["inline"]["parent_prompt_tokens"])
    assert table["prompt tokens in all (parent and sub-agents)"] == (r["isolated"]["total_prompt_tokens"],
                                                                      r["inline"]["total_prompt_tokens"])
    assert table["largest parent prompt"][0] < table["largest parent prompt"][1]
    assert table["prompt tokens of the parent, all calls"][0] < table["prompt tokens of the parent, all calls"][1]
    assert any(c.value.startswith("Facts the parent used that first appeared inside a sub-agent: ") for c in at.caption)
    assert _each(at) == {"aac57f5": (1, r["subagents"][0]["prompt_tokens"], r["subagents"][0]["tokens_back"])}
    at.number_input(key="lab_subagent_cap").set_value(200).run()
    assert not at.exception, at.exception
    capped = isolation(text, model=model, return_cap=200)
    back = _each(at)["aac57f5"][2]
    assert back == capped["subagents"][0]["tokens_back"] < r["subagents"][0]["tokens_back"]
    assert _table(at)["prompt tokens of the parent, all calls"][0] == capped["isolated"]["parent_prompt_tokens"]


def test_a_sub_agents_own_conversation_has_no_such_section(monkeypatch):
    at = _open_replay(monkeypatch)
    at.selectbox(key="subagent_pick").set_value("aac57f5").run()
    assert not at.exception, at.exception
    assert not [n for n in at.number_input if n.key == "lab_subagent_cap"]


def _section_english() -> list[str]:
    """The English of the section's sentences and headers, as the page marks them (``_``/``N_``), each up to
    its first placeholder: the page's own lines, not the conversation's."""
    marked = marked_english(ROOT / "pages" / "strategy_lab.py", lambda n: isinstance(n, ast.FunctionDef) and n.name ==
                            "_subagents_section" or isinstance(n, ast.Assign) and any(
                                getattr(t, "id", "").startswith(("SUBAGENT", "PER_SUBAGENT")) for t in n.targets))
    assert len(marked) > 10
    return marked


def test_the_section_in_chinese_leaves_no_english(monkeypatch):
    i18n.use("zh")
    try:
        at = _open_replay(monkeypatch, "zh")
        (cap,) = [n for n in at.number_input if n.key == "lab_subagent_cap"]
        assert cap.label.startswith("每个返回结果的上限")
        left = english_left_in(at, _section_english())
        assert not left, report(left)
    finally:
        i18n.use("en")
